//! Cache hints for the FTL's random accesses. A host write updates the map entry of a random
//! logical unit and the metadata of the block its old copy sits in (its valid count, the old
//! copy's reverse-map word, the links of its victim bucket); a GC move updates the map entry
//! of each of a victim's units, as random. On a large drive each is a miss to DRAM, and
//! taken in turn they would hold up the work behind them. These bring the lines toward the
//! cache a few writes or moves ahead, as software prefetches (no load waits for them), so that
//! the misses overlap with other work. They read what is there and change nothing: results are
//! the same with or without them.

use super::pool::Collecting;
use super::{Ftl, Lpn, UNMAPPED};

impl Ftl {
    /// Brings the pointer to `lpn`'s map leaf toward the cache, for a host write soon (a hint),
    /// and on a map with sparse leaves the number of its list.
    #[inline]
    pub(crate) fn prefetch_leaf(&self, lpn: Lpn) {
        self.l2p.prefetch_far(lpn.0);
    }

    /// Whether the map has sparse leaves, whose entries take a stage more of hints.
    #[inline]
    pub(crate) fn map_has_sparse(&self) -> bool {
        self.l2p.has_sparse()
    }

    /// Brings toward the cache what the layout reads to say where it put `lpn`, in two stages
    /// (`second`), for a host write soon whose unit may not have moved since ageing (a hint).
    #[inline]
    pub(crate) fn prefetch_base(&self, lpn: Lpn, second: bool) {
        self.l2p.prefetch_base(lpn.0, second);
    }

    /// Brings `lpn`'s map entry toward the cache, for a host write soon (a hint).
    #[inline]
    pub(crate) fn prefetch_entry(&self, lpn: Lpn) {
        self.l2p.prefetch(lpn.0);
    }

    /// Brings the metadata of the block that holds `lpn`'s copy toward the cache (its valid
    /// count, reverse-map index entry and victim-list links), for a host write soon, whose map
    /// entry [`Self::prefetch_entry`] brought in earlier (a hint). Returns the slot it found
    /// (`UNMAPPED` for none), for [`Self::prefetch_old_slot`] a write later.
    #[inline]
    pub(crate) fn prefetch_old(&self, lpn: Lpn) -> u64 {
        let slot = self.l2p.find(lpn.0);
        if slot != UNMAPPED {
            let (block, _) = self.place_of_slot(slot);
            if let Some(b) = self.blocks.get(block as usize) {
                mem_prefetch::prefetch_read_data::<_, 3>(b);
                self.p2l.prefetch(block);
                self.links.prefetch(block);
            }
        }
        slot
    }

    /// Brings toward the cache the reverse-map word that a host write clears for the old copy
    /// in `slot`, and the victim-list links its block's move to another bucket changes (a
    /// hint, the stage after [`Self::prefetch_old`], which found the slot and brought in the
    /// block's index entry and links, which say where those are).
    #[inline]
    pub(crate) fn prefetch_old_slot(&self, slot: u64) {
        if slot != UNMAPPED {
            let (block, offset) = self.place_of_slot(slot);
            self.p2l.prefetch_slot(block, offset);
            self.links.prefetch_neighbours(block);
        }
    }

    /// Brings toward the cache the map entries of the victim's units up to `AHEAD` slots
    /// past `upto`: the moves of the next host writes then find them there, and their misses
    /// overlap with other work. A hint: it changes only the cursors of `c`, how far the hints
    /// have gone.
    ///
    /// On a map with sparse leaves an entry is two loads deep (the leaf's list span, then the
    /// list's entries), the second waiting on the first: the hints go in two stages, the first
    /// `AHEAD` slots ahead of the second, so that each load finds its line.
    pub(super) fn prefetch_moves(&self, p: usize, c: &mut Collecting, upto: u32) {
        const AHEAD: u32 = 32;
        let units = &self.pools[p].victim_units;
        let within = |ahead: u32| move |u: &&(u32, u64)| u.0 < upto.saturating_add(ahead);
        if self.l2p.has_sparse() {
            while let Some(&(_, lpn)) = units.get(c.far as usize).filter(within(2 * AHEAD)) {
                self.l2p.prefetch_far(lpn);
                c.far += 1;
            }
        }
        while let Some(&(_, lpn)) = units.get(c.ahead as usize).filter(within(AHEAD)) {
            self.l2p.prefetch(lpn);
            c.ahead += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};

    use super::*;
    use crate::ftl::{FtlConfig, NIL};
    use crate::ids::BlockId;
    use crate::media::NandConfig;
    use crate::units::Bytes;

    /// Each unit's slot, each block's erases and valid count, and the counters.
    fn state(f: &Ftl) -> (Vec<Option<u64>>, Vec<(u32, u32)>, String) {
        let map = (0..f.exported_units()).map(|l| f.lookup(Lpn(l))).collect();
        let blocks = (0..f.blocks.len() as u32).map(|b| (f.erases(BlockId(b)), f.blocks[b as usize].valid)).collect();
        (map, blocks, format!("{:?}", f.counters()))
    }

    #[test]
    fn hints_take_any_unit_and_change_nothing() {
        // An aged drive under random writes (GC collecting a victim, whose moves the hints
        // run ahead of): every hint, for every unit, unmapped ones, trimmed ones and ones
        // beyond the drive, leaves the map, the blocks and the counters as they were.
        let nand = NandConfig { channels: 2, ways: 2, dies_per_chip: 1, planes: 2, blocks_per_plane: 40, pages_per_block: 16, page_size: Bytes(16_384), ..NandConfig::default() };
        let mut f = Ftl::new(&nand, &FtlConfig { op_ratio: 0.2, ..FtlConfig::default() }, 7).unwrap();
        f.age(1.5, 9).unwrap();
        let units = f.exported_units();
        let mut rng = crate::sim::Rng::seed_from_u64(11);
        for _ in 0..5_000 {
            f.write_placed(Lpn(rng.random_range(0..units)), &mut |_| {}).unwrap();
        }
        f.trim(Lpn(3));
        assert!(f.pools[0].collecting.is_some() && !f.pools[0].victim_units.is_empty(), "GC is collecting a victim");
        let before = state(&f);
        for l in (0..units + 64).chain([u64::MAX / 2, u64::MAX]) {
            f.prefetch_leaf(Lpn(l));
            f.prefetch_entry(Lpn(l));
            let slot = f.prefetch_old(Lpn(l));
            assert_eq!(slot, if l < units { f.lookup(Lpn(l)).unwrap_or(UNMAPPED) } else { UNMAPPED }, "the old copy of {l}");
            f.prefetch_old_slot(slot);
            f.prefetch_old_slot(l);
            f.prefetch_base(Lpn(l), false);
            f.prefetch_base(Lpn(l), true);
        }
        let spb = f.g.slots_per_block();
        let mut c = Collecting { block: NIL, next: 0, page_read: NIL, pace: 1.0, ahead: 0, far: 0 };
        f.prefetch_moves(0, &mut c, spb);
        assert_eq!(c.ahead as usize, f.pools[0].victim_units.len(), "every unit of the victim was hinted");
        assert_eq!(state(&f), before);
    }
}
