//! The short ways of a host write and of GC's moves, for a drive without a shadow map,
//! tenants, a cached map, zones, block groups or more than one pool: what untimed ageing and
//! whole-victim GC run hundreds of millions of times on a large drive.
//!
//! Each is a free function over the FTL's fields, borrowed apart and passed as arguments, so
//! that the compiler knows they do not overlap and keeps what they point at in registers
//! (through `&mut self`, it loads every field again after each store). Each takes the general
//! way's steps in the general way's order, with the same results and the same flash
//! operations reported; the cases it leaves out (a slot that fills its block, a stream with
//! no block to open) go back to the general way, which the caller then takes for that unit.

use super::pool::Links;
use super::slots::open_next;
use super::{Block, BlockId, FlashOp, Ftl, Geometry, L2p, P2l, Pool, State, GC, HOST, NIL, UNMAPPED};
use crate::sim::{div_rem, divides};

impl Ftl {
    /// Whether writes and moves may take the short ways: no shadow map, tenants, cached map,
    /// zones, FDP handles or block groups, and one pool.
    #[inline]
    pub(super) fn short_ways(&self) -> bool {
        self.shadow.is_none() && self.attribution.is_none() && self.map_cache.is_none() && self.zones.is_none() && self.handles <= 1 && self.group == 1 && self.pools.len() == 1
    }

    /// A host write of `lpn` the short way, up to GC (which the caller runs as for any
    /// write): the slot it took, or none, with nothing done, where it must take the general
    /// way.
    #[inline]
    pub(super) fn write_short(&mut self, lpn: u64, sink: &mut impl FnMut(FlashOp)) -> Option<u64> {
        let Ftl { pools, links, order, l2p, p2l, blocks, g, .. } = self;
        write(lpn, &mut pools[0], links, order, l2p, p2l, blocks, g, sink)
    }
}

/// Takes the next slot of `pool`'s host stream as [`Ftl::allocate`] does (a block opened where
/// the cursor's plane has none, a program reported when the slot fills a page): its block and
/// offset. None, with no slot taken, where the slot would fill its block (closing it is the
/// general way's) or no plane has a block to open. (GC's moves take theirs a page at a time:
/// [`take_pages`].)
// Inlined into the host write: its common case is a few loads and stores.
#[allow(clippy::inline_always)]
#[inline(always)]
fn take(pool: &mut Pool, order: &[u32], blocks: &mut [Block], p2l: &mut P2l, g: &Geometry, sink: &mut impl FnMut(FlashOp)) -> Option<(u32, u32)> {
    let (spp, spb) = (g.slots_per_page, g.slots_per_block());
    let s = &pool.streams[HOST];
    let mut plane = order[s.cursor] as usize;
    let mut block = s.active[plane];
    if block == NIL {
        (plane, block) = open_next(pool, HOST, order, blocks, p2l, g.blocks_per_plane)?;
    }
    let s = &mut pool.streams[HOST];
    let written = s.written[plane];
    if written + 1 == spb {
        return None;
    }
    s.written[plane] = written + 1;
    if divides(spp, written + 1) {
        s.cursor = if s.cursor + 1 == order.len() { 0 } else { s.cursor + 1 };
        sink(FlashOp::Program { block: BlockId(block), page: div_rem(u64::from(written), u64::from(spp)).0 as u32, gc: false });
    }
    Some((block, written))
}

/// Moves the first units of `run` (offset, lpn: valid units of `victim`) to `pool`'s GC
/// stream, as [`Ftl::relocate`] does without unsetting the victim's copies, until a unit must
/// take the general way; returns how many it moved. A move is the victim's page read (once
/// per page: `page_read` is the last page read), the stream's next slot, and the two maps.
/// The flash operations come in the general way's order: each unit's read, then the program
/// of the page its last unit fills. Kept out of line: the loop then has the registers to itself.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
pub(super) fn move_run(
    run: &[(u32, u64)],
    victim: u32,
    pool: &mut Pool,
    order: &[u32],
    l2p: &mut L2p,
    p2l: &mut P2l,
    blocks: &mut [Block],
    g: &Geometry,
    page_read: &mut u32,
    sink: &mut impl FnMut(FlashOp),
) -> usize {
    let (spp, spb) = (g.slots_per_page, g.slots_per_block());
    let moved = take_pages(run.len(), pool, order, blocks, p2l, g, sink, |sink, p2l, block, written, i, k| {
        let units = &run[i..i + k];
        let base = u64::from(block) * u64::from(spb) + u64::from(written);
        for (&(offset, lpn), at) in units.iter().zip(base..) {
            // GC reads each of the victim's pages once for all its valid units (if the next
            // unit takes the general way, the general way reads its page).
            let page = div_rem(u64::from(offset), u64::from(spp)).0 as u32;
            if page != *page_read {
                sink(FlashOp::Read { block: BlockId(victim), page });
                *page_read = page;
            }
            l2p.remap(lpn, at);
        }
        p2l.set_run(block, written, units.iter().map(|&(_, lpn)| lpn));
    });
    pool.counters.gc_writes += moved as u64;
    moved
}

/// Takes up to `n` slots of `pool`'s GC stream as [`Ftl::allocate`] would one by one, a destination
/// page at a time: while a page fills, the stream stays on one plane's block, so the cursor,
/// the block and its written and valid counts are read and written once per page, not once
/// per unit. For each run of `k` slots from `written` of `block`, given to units `i..i + k`,
/// it calls `each(sink, p2l, block, written, i, k)` before the program the run's last slot
/// may report, and counts the `k` units valid in `block` (which is open: no victim bucket
/// moves). Stops where a slot would fill its block (closing it is the general way's) or no
/// plane has a block to open; returns how many slots it took.
#[allow(clippy::too_many_arguments, clippy::inline_always)]
#[inline(always)]
pub(super) fn take_pages<S: FnMut(FlashOp)>(
    n: usize,
    pool: &mut Pool,
    order: &[u32],
    blocks: &mut [Block],
    p2l: &mut P2l,
    g: &Geometry,
    sink: &mut S,
    mut each: impl FnMut(&mut S, &mut P2l, u32, u32, usize, usize),
) -> usize {
    let (spp, spb) = (g.slots_per_page, g.slots_per_block());
    let mut taken = 0;
    while taken < n {
        let s = &pool.streams[GC];
        let mut plane = order[s.cursor] as usize;
        let mut block = s.active[plane];
        if block == NIL {
            let Some(opened) = open_next(pool, GC, order, blocks, p2l, g.blocks_per_plane) else { break };
            (plane, block) = opened;
        }
        let written = pool.streams[GC].written[plane];
        // The slots this page has left, short of the block's last.
        let page_end = (div_rem(u64::from(written), u64::from(spp)).0 as u32 + 1) * spp;
        let room = page_end.min(spb - 1).saturating_sub(written) as usize;
        if room == 0 {
            break;
        }
        let k = room.min(n - taken);
        each(sink, p2l, block, written, taken, k);
        let k32 = k as u32;
        blocks[block as usize].valid += k32;
        let s = &mut pool.streams[GC];
        s.written[plane] = written + k32;
        if divides(spp, written + k32) {
            s.cursor = if s.cursor + 1 == order.len() { 0 } else { s.cursor + 1 };
            sink(FlashOp::Program { block: BlockId(block), page: div_rem(u64::from(written), u64::from(spp)).0 as u32, gc: true });
        }
        taken += k;
    }
    taken
}

/// A host write of `lpn` to the pool's host stream, as [`Ftl::write_placed_by`] does up to GC:
/// the slot taken, the map set, the old copy invalidated (its full block moved to the bucket
/// of its new count), the new one counted. Returns the slot, or none, with nothing done, where
/// the slot must be taken the general way.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn write(lpn: u64, pool: &mut Pool, links: &mut Links, order: &[u32], l2p: &mut L2p, p2l: &mut P2l, blocks: &mut [Block], g: &Geometry, sink: &mut impl FnMut(FlashOp)) -> Option<u64> {
    let spb = g.slots_per_block();
    let (block, at) = take(pool, order, blocks, p2l, g, sink)?;
    pool.counters.host_writes += 1;
    let slot = u64::from(block) * u64::from(spb) + u64::from(at);
    let old = l2p.set(lpn, slot);
    if old != UNMAPPED {
        let (ob, offset) = div_rem(old, u64::from(spb));
        p2l.set(ob as u32, offset as u32, UNMAPPED);
        let b = &mut blocks[ob as usize];
        b.valid -= 1;
        if b.state == State::Full {
            pool.victims.rebucket(links, ob as u32, b.valid + 1, b.valid);
        }
    }
    p2l.set(block, at, lpn);
    // The stream's block is open, so its count moves no victim bucket.
    blocks[block as usize].valid += 1;
    Some(slot)
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};

    use super::*;
    use crate::ftl::{FtlConfig, FtlCounters, Striping};
    use crate::ids::Lpn;
    use crate::media::NandConfig;
    use crate::units::Bytes;

    /// Counters, free blocks, each block's (erases, valid units), each unit's slot.
    type State = (FtlCounters, u32, Vec<(u32, u32)>, Vec<Option<u64>>);

    /// What a drive's state answers: its counters and free blocks, each block's erases and
    /// valid count, and where each logical unit is.
    fn state(f: &Ftl) -> State {
        let blocks = (0..f.blocks.len() as u32).map(|b| (f.erases(BlockId(b)), f.blocks[b as usize].valid)).collect();
        let map = (0..f.exported_units()).map(|l| f.lookup(Lpn(l))).collect();
        (f.counters(), f.free_blocks(), blocks, map)
    }

    /// Two drives of 2x2 dies of 2 planes, 40 blocks of 16 pages of `page` B, 20 % spare, aged
    /// alike by `seed`: one the short ways serve, one kept on the general way by the integrity
    /// shadow (which only checks).
    fn aged_pair(page: u64, striping: Striping, seed: u64) -> (Ftl, Ftl) {
        let nand = NandConfig { channels: 2, ways: 2, dies_per_chip: 1, planes: 2, blocks_per_plane: 40, pages_per_block: 16, page_size: Bytes(page), ..NandConfig::default() };
        let cfg = FtlConfig { op_ratio: 0.2, striping, ..FtlConfig::default() };
        let mut short = Ftl::new(&nand, &cfg, seed).unwrap();
        let mut general = Ftl::new(&nand, &cfg, seed).unwrap();
        general.enable_integrity();
        assert!(short.short_ways() && !general.short_ways());
        assert_eq!(short.age(1.5, 9).unwrap(), general.age(1.5, 9).unwrap());
        (short, general)
    }

    /// `n` random writes (drawn by `seed`) to both drives, which must place each alike; their
    /// flash operations go to `a` and `b`.
    fn write_both(short: &mut Ftl, general: &mut Ftl, n: usize, seed: u64, a: &mut Vec<FlashOp>, b: &mut Vec<FlashOp>) {
        let mut rng = crate::sim::Rng::seed_from_u64(seed);
        let units = short.exported_units();
        for _ in 0..n {
            let lpn = Lpn(rng.random_range(0..units));
            assert_eq!(short.write_placed(lpn, &mut |op| a.push(op)).unwrap(), general.write_placed(lpn, &mut |op| b.push(op)).unwrap());
        }
    }

    #[test]
    fn the_short_ways_take_the_general_ways_steps() {
        // The integrity shadow keeps every write and move of a drive on the general way (and
        // only checks): a drive with it and one without must age alike, then report the same
        // flash operations, in the same order, under paced and background GC. Pages of 3
        // units (divisions, not shifts) and of 4, in two striping orders.
        for (page, striping) in [(12_288u64, Striping::ChannelFirst), (16_384, Striping::PlaneFirst)] {
            let (mut short, mut general) = aged_pair(page, striping, 3);
            assert!(short.counters().gc_writes > 10_000, "ageing moved units");
            assert_eq!(state(&short), state(&general), "after ageing ({page} B pages)");
            let (mut a, mut b) = (Vec::new(), Vec::new());
            write_both(&mut short, &mut general, 20_000, 5, &mut a, &mut b);
            let mut reclaimed = 0;
            while short.collect_background(0.5, &mut |op| a.push(op)).unwrap() {
                assert!(general.collect_background(0.5, &mut |op| b.push(op)).unwrap());
                reclaimed += 1;
            }
            assert!(reclaimed > 0 && !general.collect_background(0.5, &mut |op| b.push(op)).unwrap());
            assert!(a.len() > 20_000 && a == b, "the same flash operations ({page} B pages)");
            assert_eq!(state(&short), state(&general), "after timed writes ({page} B pages)");
            general.verify().unwrap();
        }
    }

    #[test]
    fn paced_moves_at_the_floor_take_the_general_ways_steps() {
        // At half the trigger or below, paced GC moves without waiting for credit, and the
        // short way takes the rest of a victim together. Raising both drives' thresholds after
        // ageing puts them there at once; they must then report the same flash operations, in
        // the same order, and end in the same state.
        let (mut short, mut general) = aged_pair(16_384, FtlConfig::default().striping, 4);
        for f in [&mut short, &mut general] {
            let pool = &mut f.pools[0];
            pool.trigger = 2 * pool.free_count + 4;
            pool.reclaim = pool.trigger + 8;
            assert!(pool.free_count <= pool.trigger / 2, "at the floor");
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        write_both(&mut short, &mut general, 5_000, 6, &mut a, &mut b);
        assert!(short.counters().gc_victims > 10 && a.len() > 5_000 && a == b, "the same flash operations");
        assert_eq!(state(&short), state(&general));
        general.verify().unwrap();
    }
}
