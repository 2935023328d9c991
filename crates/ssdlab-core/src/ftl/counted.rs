//! Ageing by valid counts alone, for the replica that [`Ftl::age_by_replica`] ages and then
//! reads only counts from (free blocks, each block's valid and erase counts).
//!
//! Ageing overwrites units drawn uniformly from the exported range, and every exported unit is
//! mapped: the unit a write replaces is uniform over the valid units of the drive, so the
//! block that loses it is drawn with probability proportional to its valid count. Which unit
//! it is matters to nothing the replica hands on. So the replica keeps, beside the FTL's own
//! blocks, streams, free lists, victim buckets, thresholds and erases, nothing more: a write
//! draws the block its old copy leaves by rejection (a block uniformly, kept with probability
//! its valid count over a block's slots: a draw is kept with probability exported / raw slots,
//! so a write takes about 1 / (1 - spare) tries, 1.1 at 10 % spare), and GC moves a victim's
//! count, a destination page at a time, with no map to update. The drive reaches the state of
//! ageing by units in distribution, not unit for unit; the maps are left as the fill placed the
//! units, so a drive aged this way is only to be read for its counts.

use super::{bulk, Ftl, Result, GC, HOST};
use crate::sim::Rng;
use rand::RngExt;

impl Ftl {
    /// A host write in ageing by counts: the host stream's next slot, the unit it replaces
    /// taken from a block drawn in proportion to its valid count, then GC as for any write.
    pub(super) fn write_counted(&mut self, rng: &mut Rng) -> Result<()> {
        let sink = &mut |_| {};
        self.pools[0].counters.host_writes += 1;
        let slot = self.allocate(0, HOST, sink)?;
        // The old copy is drawn before the new unit counts, as the write by units finds it.
        let old = self.draw_valid_unit(rng);
        self.count_valid(old, false);
        self.count_valid(slot.block, true);
        if self.pools[0].free_count < self.pools[0].trigger {
            // Whole victims until the reclaim threshold, as untimed GC by units.
            self.pools[0].counters.gc_runs += 1;
            while self.pools[0].free_count < self.pools[0].reclaim {
                let Some(victim) = self.pick_victim(0) else { break };
                self.reclaim_counted(victim)?;
            }
        }
        Ok(())
    }

    /// The block of a valid unit drawn uniformly from all of them: a block drawn uniformly is
    /// kept with probability its valid count over a block's slots, else drawn again. (Some
    /// unit is valid: the drive is filled before it ages.)
    #[inline]
    fn draw_valid_unit(&self, rng: &mut Rng) -> u32 {
        let (n, spb) = (self.blocks.len() as u32, self.g.slots_per_block());
        loop {
            let b = rng.random_range(0..n);
            if rng.random_range(0..spb) < self.blocks[b as usize].valid {
                return b;
            }
        }
    }

    /// [`Ftl::reclaim_block`] by counts: the victim's valid count moves to the GC stream a
    /// destination page at a time (the slot that fills a block the general way), and the
    /// victim is erased.
    fn reclaim_counted(&mut self, victim: u32) -> Result<()> {
        let sink = &mut |_| {};
        let valid = self.blocks[victim as usize].valid;
        self.pools[0].victims.unlist(&mut self.links, victim, valid);
        self.pools[0].counters.gc_victims += 1;
        let mut left = valid as usize;
        while left > 0 {
            let Ftl { pools, order, p2l, blocks, g, .. } = self;
            left -= bulk::take_pages(left, &mut pools[0], order, blocks, p2l, g, sink, |_, _, _, _, _, _| {});
            if left > 0 {
                let slot = self.allocate(0, GC, sink)?;
                self.count_valid(slot.block, true);
                left -= 1;
            }
        }
        self.pools[0].counters.gc_writes += u64::from(valid);
        self.blocks[victim as usize].valid = 0;
        self.erase_victim(victim, 0, sink);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::FtlConfig;
    use crate::media::NandConfig;
    use crate::units::Bytes;

    #[test]
    fn ageing_by_counts_reaches_the_state_ageing_by_units_reaches() {
        // 8 planes x 128 blocks of 32 pages of 4 units, 10 % spare: the same drive aged by
        // units and by counts over three seeds each. The draws differ, so the states agree in
        // distribution: settled WAF, the valid counts of full blocks, erases per drive write.
        let nand = NandConfig { channels: 2, ways: 2, dies_per_chip: 1, planes: 2, blocks_per_plane: 128, pages_per_block: 32, page_size: Bytes(16_384), ..NandConfig::default() };
        let cfg = FtlConfig { op_ratio: 0.1, ..FtlConfig::default() };
        let mut sums = [[0.0; 6]; 2];
        for (mode, by_counts) in [false, true].into_iter().enumerate() {
            for seed in 1..=3 {
                let mut f = Ftl::new(&nand, &cfg, seed).unwrap();
                let (dw, waf) = if by_counts {
                    let exported = f.exported_units();
                    f.fill_sequential().unwrap();
                    f.bulk_gc = true;
                    let aged = f.age_writes(exported, 0.0, seed, true).unwrap();
                    f.bulk_gc = false;
                    let valid: u64 = f.blocks.iter().map(|b| u64::from(b.valid)).sum();
                    assert_eq!(valid, exported, "every exported unit is valid once");
                    aged
                } else {
                    f.age(0.0, seed).unwrap()
                };
                assert!(f.counters().gc_victims > 100, "ageing collected victims");
                let q = [0.1, 0.5, 0.9].map(|q| f.valid_quantile(q));
                let erases = (0..f.blocks.len() as u32).map(|b| f64::from(f.erases(crate::ids::BlockId(b)))).sum::<f64>() / f.blocks.len() as f64;
                for (s, x) in sums[mode].iter_mut().zip([dw, waf, f64::from(q[0]), f64::from(q[1]), f64::from(q[2]), erases]) {
                    *s += x / 3.0;
                }
            }
        }
        let [units, counts] = sums;
        eprintln!("by units {units:?}\nby counts {counts:?}");
        assert!((counts[1] / units[1] - 1.0).abs() < 0.03, "settled WAF {} by counts, {} by units", counts[1], units[1]);
        for (i, what) in [(2, "10 %"), (3, "median"), (4, "90 %")] {
            assert!((counts[i] - units[i]).abs() <= 2.0, "{what} of the full blocks' valid counts: {} by counts, {} by units", counts[i], units[i]);
        }
        // Ageing stops when WAF settles, after a number of drive writes that varies from run
        // to run: erases are compared per drive write.
        let (e_counts, e_units) = (counts[5] / counts[0], units[5] / units[0]);
        assert!((e_counts / e_units - 1.0).abs() < 0.03, "mean erases per drive write {e_counts} by counts, {e_units} by units");
        assert!((counts[0] / units[0] - 1.0).abs() < 0.15, "drive writes to settle {} by counts, {} by units", counts[0], units[0]);
    }
}
