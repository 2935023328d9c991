//! Preconditioning the drive without timing: a sequential fill (a computed layout, no map
//! memory per unit), and ageing by random overwrites until WAF settles, on the drive itself or,
//! for a large drive, on a small replica (aged by valid counts alone: [`counted`](super::counted))
//! whose state is then scaled up.

use rand::{RngExt, SeedableRng};

use super::{stream_seed, Aging, Error, Ftl, Layout, Lpn, Rng, Segment, State, BATCH, HOST};
use crate::error::Result;

impl Ftl {
    /// Fills every exported unit once, in order (no timing), as host writes to a fresh drive
    /// would: each pool's units striped page by page over the planes in striping order. The
    /// placement is computed ([`Layout::striped`]), not stored, so a filled drive costs no map
    /// memory per unit until units are written again. The drive must be fresh.
    pub fn fill_sequential(&mut self) -> Result<()> {
        self.fill_sequential_part(1.0)
    }

    /// Fills the first `fraction` of each pool's units, in order, as [`Ftl::fill_sequential`]
    /// does all of them (`ftl.precondition_fill`).
    pub fn fill_sequential_part(&mut self, fraction: f64) -> Result<()> {
        if self.l2p.mapped() > 0
            || self.pools.iter().any(|p| p.free_count != p.blocks || p.listed_free() != p.fresh.iter().map(|&f| (p.span.end - f) as usize).sum::<usize>() || p.fresh.iter().any(|&f| f != p.span.start))
        {
            return Err(Error::Invariant { component: "ftl", detail: "a sequential fill needs a fresh drive".into() });
        }
        let part = |lpns: &std::ops::Range<u64>| lpns.start + ((lpns.end - lpns.start) as f64 * fraction.clamp(0.0, 1.0)).floor() as u64;
        let segments: Vec<Segment> = self.pools.iter().map(|p| Segment { lpns: p.lpns.start..part(&p.lpns), span: p.span.clone() }).collect();
        let layout = std::sync::Arc::new(Layout::striped(&self.g, &self.order, segments.clone()));
        let (spp, spb, bpp) = (u64::from(self.g.slots_per_page), u64::from(self.g.slots_per_block()), self.g.blocks_per_plane);
        let planes = self.order.len() as u64;
        for (p, seg) in segments.iter().enumerate() {
            let units = seg.lpns.end - seg.lpns.start;
            self.pools[p].counters.host_writes += units;
            let pages = units.div_ceil(spp);
            // Per plane (in striping order): its full blocks and the slots of its open one.
            let filled: Vec<(u64, u32)> = (0..self.order.len())
                .map(|j| {
                    let on_plane = pages / planes + u64::from((j as u64) < pages % planes);
                    // Slots written on this plane: whole pages, less what the last page of all lacks.
                    let last = j as u64 == (pages + planes - 1) % planes && pages > 0;
                    let slots = on_plane * spp - if last { pages * spp - units } else { 0 };
                    (slots / spb, (slots % spb) as u32)
                })
                .collect();
            // Blocks close in the order writes would close them: the n-th block of every plane
            // (in striping order) before the next of any.
            let rows = filled.iter().map(|&(full, rest)| full + u64::from(rest > 0)).max().unwrap_or(0);
            for n in 0..rows {
                for (j, &(full, rest)) in filled.iter().enumerate() {
                    if n >= full + u64::from(rest > 0) {
                        continue;
                    }
                    let plane = self.order[j] as usize;
                    let b = self.pools[p].take_free(plane, bpp).ok_or_else(|| Error::Invariant { component: "ftl", detail: "a sequential fill ran out of blocks".into() })?;
                    let blk = &mut self.blocks[b as usize];
                    blk.state = State::Open;
                    if n < full {
                        blk.valid = spb as u32;
                        self.close(b);
                    } else {
                        blk.valid = rest;
                        let s = &mut self.pools[p].streams[HOST];
                        s.active[plane] = b;
                        s.written[plane] = rest;
                    }
                }
            }
            // The host stream goes on where the fill stopped: at the plane of a partly filled
            // last page, else at the next plane.
            self.pools[p].streams[HOST].cursor = if units.is_multiple_of(spp) { pages % planes } else { (pages - 1) % planes } as usize;
        }
        if let Some(sh) = &mut self.shadow {
            for lpn in segments.iter().flat_map(|s| s.lpns.clone()) {
                sh.next += 1;
                sh.version.insert(lpn, sh.next);
                sh.slot_version.insert(layout.slot_of(lpn), sh.next);
            }
        }
        self.l2p.install(layout.clone());
        self.p2l.install(layout);
        Ok(())
    }

    /// Random overwrites until WAF settles (or `drive_writes` drive writes), after a
    /// sequential fill. Settled means: at least one drive write done since GC reclaimed its
    /// first victim, and the WAF of the last half drive write within 2 % of the half before
    /// (WAF over shorter windows swings by a few per cent with GC bursts, and overshoots right
    /// after a sequential fill). Returns the
    /// drive writes of overwrites done and the WAF of the last half drive write.
    pub fn age(&mut self, drive_writes: f64, seed: u64) -> Result<(f64, f64)> {
        self.age_with(drive_writes, seed, false)
    }

    /// [`Ftl::age`], by units or (`by_counts`, for a replica: see [`counted`](super::counted))
    /// by valid counts alone.
    pub(super) fn age_with(&mut self, drive_writes: f64, seed: u64, by_counts: bool) -> Result<(f64, f64)> {
        let exported = self.exported_units();
        if self.l2p.mapped() < exported {
            self.fill_sequential()?;
        }
        if by_counts {
            // Ageing by counts writes no reverse-map entry: blocks it opens need no chunk.
            self.p2l.stop_keeping();
        }
        self.bulk_gc = self.pools.iter().all(|p| p.collecting.is_none());
        let aged = self.age_writes(exported, drive_writes, seed, by_counts);
        self.bulk_gc = false;
        self.steady_gc();
        aged
    }

    /// Leaves an aged drive in the regime of steady random writes: foreground GC under way in
    /// every pool whose free blocks are not above the band where it rests (untimed ageing
    /// stops GC at the reclaim threshold, a state that steady writes never leave).
    pub(super) fn steady_gc(&mut self) {
        for pool in &mut self.pools {
            if pool.free_count < pool.rest_level() {
                pool.gc_active = true;
            }
        }
    }

    pub(super) fn age_writes(&mut self, exported: u64, drive_writes: f64, seed: u64, by_counts: bool) -> Result<(f64, f64)> {
        let mut rng = Rng::from_seed(stream_seed(seed, 0xA6E).to_le_bytes());
        let step = (exported / 8).max(1);
        let limit = if drive_writes > 0.0 { (drive_writes * exported as f64) as u64 } else { 30 * exported };
        let mut done = 0u64;
        let mut windows: Vec<(u64, u64)> = Vec::new();
        let half_waf = |w: &[(u64, u64)]| {
            let (h, g) = w.iter().fold((0, 0), |a, x| (a.0 + x.0, a.1 + x.1));
            (h + g) as f64 / h.max(1) as f64
        };
        // How far, after `written` writes: of the drive writes asked for; ageing until WAF
        // settles is paced against 1.2 drive writes (tlc-aged and mqsim settle after about
        // 1.1; the loop stops at 30), and waits at 99 % if a drive takes longer.
        let progress = |written: u64| {
            let written = written as f64;
            if drive_writes > 0.0 {
                written / limit as f64
            } else {
                (written / (1.2 * exported as f64)).min(0.99)
            }
        };
        let mut batch: Vec<u64> = Vec::with_capacity(BATCH);
        let mut entries: Vec<u64> = Vec::with_capacity(BATCH);
        while done < limit {
            let before = self.counters();
            let n = step.min(limit - done);
            let mut left = n;
            while left > 0 {
                let k = left.min(BATCH as u64);
                if by_counts {
                    // By counts, each write draws the block of the valid unit it replaces.
                    for _ in 0..k {
                        self.write_counted(&mut rng)?;
                    }
                    left -= k;
                    crate::cancel::checkpoint_at(progress(done + n - left))?;
                    continue;
                }
                // Draw a batch, touch the map entries it will read, then the old slots' blocks
                // and reverse-map entries: independent loads whose misses overlap.
                batch.clear();
                batch.extend((0..k).map(|_| rng.random_range(0..exported)));
                // No branch depends on a loaded value (a slot still where the layout put it, or
                // none, touches block 0), so the misses of the batch overlap. The map entries
                // are all loaded before any old slot is touched: an old slot's loads wait for
                // its map entry, and in one pass that chain would hold back the next.
                let spb = u64::from(self.g.slots_per_block());
                let slots = self.blocks.len() as u64 * spb;
                entries.clear();
                entries.extend(batch.iter().map(|&lpn| self.l2p.peek(lpn)));
                let touched = entries.iter().fold(0u64, |a, &entry| {
                    let slot = if entry < slots { entry } else { 0 };
                    let (block, offset) = crate::sim::div_rem(slot, spb);
                    a ^ u64::from(self.blocks[block as usize].valid) ^ self.p2l.peek(block as u32, offset as u32)
                });
                std::hint::black_box(touched);
                for &lpn in &batch {
                    self.write(Lpn(lpn), &mut |_| {})?;
                }
                left -= batch.len() as u64;
                crate::cancel::checkpoint_at(progress(done + n - left))?;
            }
            done += n;
            let after = self.counters();
            // Windows before GC's first victim show the spare being used up, not GC's steady
            // state: a drive with much spare would otherwise look settled at WAF 1.
            if before.gc_victims > 0 {
                windows.push((after.host_writes - before.host_writes, after.gc_writes - before.gc_writes));
            }
            if drive_writes == 0.0 && windows.len() >= 8 {
                let k = windows.len();
                let (last, prev) = (half_waf(&windows[k - 4..]), half_waf(&windows[k - 8..k - 4]));
                if (last - prev).abs() < 0.02 * prev {
                    break;
                }
            }
        }
        let k = windows.len();
        let waf = if k == 0 { 1.0 } else { half_waf(&windows[k.saturating_sub(4)..]) };
        Ok((done as f64 / exported as f64, waf))
    }
}

impl Ftl {
    /// Ages the drive as `ftl.aging` says; returns drive writes and the settled WAF (those of
    /// the replica when one is used). A drive of several pools ages by simulation.
    pub fn precondition_aged(&mut self, drive_writes: f64, seed: u64) -> Result<(f64, f64)> {
        let use_replica = match self.cfg.aging {
            Aging::Simulate => false,
            Aging::Replica => true,
            Aging::Auto => self.pg.blocks() > self.cfg.aging_replica_blocks,
        };
        // The replica's size counts the array's blocks, grouped or not.
        let planes = self.pg.all_planes();
        let rep_bpp = self.cfg.aging_replica_blocks / planes;
        if !use_replica || rep_bpp >= self.g.blocks_per_plane || rep_bpp < 8 || self.pools.len() != 1 {
            return self.age(drive_writes, seed);
        }
        self.age_by_replica(rep_bpp, drive_writes, seed)
    }

    /// Valid counts of the `full` blocks, drawn from the replica's histogram (`cdf`, its
    /// running sums), then nudged to hold exactly `target` logical pages.
    fn draw_valid(&mut self, full: &[u32], cdf: &[u64], spb: u32, target: u64, rng: &mut Rng) {
        let total = *cdf.last().unwrap_or(&0);
        let mut sum = 0u64;
        for &b in full {
            // One draw per block, then the bucket it falls in.
            let v = if total == 0 {
                spb
            } else {
                let r = rng.random_range(0..total);
                cdf.partition_point(|&c| c <= r) as u32
            };
            self.blocks[b as usize].valid = v.min(spb);
            sum += u64::from(v.min(spb));
        }
        while sum != target {
            let b = full[rng.random_range(0..full.len())] as usize;
            let v = &mut self.blocks[b].valid;
            if sum < target && *v < spb {
                *v += 1;
                sum += 1;
            } else if sum > target && *v > 0 {
                *v -= 1;
                sum -= 1;
            }
        }
    }

    /// Opens each `(block, plane, slots written)` as its plane's host block, its written slots
    /// all valid (their bits set in `placed`, one bitmap per block in order), its erase count
    /// drawn from `erases`.
    fn open_host_blocks(&mut self, open: &[(u32, u32, u32)], placed: &mut [u64], erases: &[u32], rng: &mut Rng) {
        let words = (self.g.slots_per_block() as usize).div_ceil(64);
        for (i, &(b, plane, written)) in open.iter().enumerate() {
            let bits = &mut placed[i * words..(i + 1) * words];
            for offset in 0..written {
                bits[offset as usize / 64] |= 1 << (offset % 64);
            }
            let e = erases[rng.random_range(0..erases.len())];
            let blk = &mut self.blocks[b as usize];
            blk.erases = e;
            blk.state = State::Open;
            blk.valid = written;
            let pool = &mut self.pools[0];
            pool.max_erases = pool.max_erases.max(e);
            pool.streams[HOST].active[plane as usize] = b;
            pool.streams[HOST].written[plane as usize] = written;
        }
    }

    /// Ages a large drive by ageing a replica of `rep_bpp` blocks per plane (the same spare
    /// fraction) and drawing this drive's state from it: free blocks, erase counts, valid
    /// counts, and a computed placement of every logical page. Each plane's host stream gets
    /// an open block written part way (whole pages, uniform over the block, all of it valid),
    /// as steady writes leave it: a drive with none would have every plane ask for a free
    /// block at its first write, and a large drive has fewer free blocks than planes.
    pub(super) fn age_by_replica(&mut self, rep_bpp: u32, drive_writes: f64, seed: u64) -> Result<(f64, f64)> {
        if self.l2p.mapped() > 0 {
            return Err(Error::Invariant { component: "ftl", detail: "replica aging needs a clean drive".into() });
        }
        let g = self.g.clone();
        let (b_big, planes) = (f64::from(g.blocks()), f64::from(g.all_planes()));
        let mut rg = g.clone();
        rg.blocks_per_plane = rep_bpp;
        let b_rep = f64::from(rg.blocks());
        // Open blocks hold about one block of unwritten space per plane; give the replica the
        // same usable spare fraction as this drive.
        let mut rcfg = self.cfg.clone();
        rcfg.op_ratio = (self.cfg.op_ratio + planes / b_rep - planes / b_big).min(0.95);
        let mut rep = Ftl::with_geometry(rg, &rcfg, seed)?;
        // Only counts are read from the replica: it ages by counts where it can.
        let (dw, waf) = rep.age_with(drive_writes, seed, rep.short_ways())?;

        let spb = g.slots_per_block();
        let mut rng = Rng::from_seed(stream_seed(seed, 0x5E9A).to_le_bytes());
        // Free blocks: the replica's fraction, within this drive's GC thresholds, spread over
        // the planes as never-used blocks at the end of each plane.
        let pool = &mut self.pools[0];
        let free = ((f64::from(rep.free_blocks()) / b_rep * b_big).round() as u32).clamp(pool.trigger, pool.reclaim);
        let per_plane = free / g.all_planes();
        let extra = free % g.all_planes();
        let hist = rep.valid_histogram();
        let cdf: Vec<u64> = hist
            .iter()
            .scan(0u64, |a, &h| {
                *a += h;
                Some(*a)
            })
            .collect();
        // Erase counts: each block draws from the replica's blocks in the same state (full
        // blocks from full ones, free from free), so that both follow the aged distribution.
        let of_state = |free: bool| -> Vec<u32> {
            let v: Vec<u32> = rep.blocks.iter().filter(|b| (b.state == State::Free) == free).map(|b| b.erases).collect();
            if v.is_empty() {
                rep.blocks.iter().map(|b| b.erases).collect()
            } else {
                v
            }
        };
        let (erases, free_erases) = (of_state(false), of_state(true));
        let mut full: Vec<u32> = Vec::with_capacity(g.blocks() as usize);
        // (block, plane, slots written) of each plane's open host block.
        let mut open: Vec<(u32, u32, u32)> = Vec::with_capacity(g.all_planes() as usize);
        let spp = g.slots_per_page;
        for plane in 0..g.all_planes() {
            let keep_free = per_plane + u32::from(plane < extra);
            let used = g.blocks_per_plane - keep_free;
            pool.fresh[plane as usize] = used;
            for i in 0..used {
                full.push(plane * g.blocks_per_plane + i);
            }
            if used > 1 {
                if let Some(b) = full.pop() {
                    open.push((b, plane, rng.random_range(1..g.pages_per_block) * spp));
                }
            }
            for i in used..g.blocks_per_plane {
                let e = free_erases[rng.random_range(0..free_erases.len())];
                self.blocks[(plane * g.blocks_per_plane + i) as usize].erases = e;
                pool.max_erases = pool.max_erases.max(e);
            }
        }
        pool.free_count = free;
        let target = self.exported_units();
        let mut in_open: u64 = open.iter().map(|&(_, _, w)| u64::from(w)).sum();
        if in_open * 2 > target {
            // A drive too small for its planes' open blocks to hold part of the data: none.
            full.extend(open.drain(..).map(|(b, _, _)| b));
            in_open = 0;
        }
        self.draw_valid(&full, &cdf, spb, target.saturating_sub(in_open), &mut rng);
        // Place the logical pages: the k-th valid slot in block order holds page perm(k), a
        // placement computed on demand (`Layout::scattered`) rather than stored.
        let words = (spb as usize).div_ceil(64);
        let mut placed = vec![0u64; (full.len() + open.len()) * words];
        for (i, &b) in full.iter().enumerate() {
            scatter(&mut placed[i * words..(i + 1) * words], spb, self.blocks[b as usize].valid, &mut rng);
            let e = erases[rng.random_range(0..erases.len())];
            let blk = &mut self.blocks[b as usize];
            blk.erases = e;
            blk.state = State::Open;
            self.pools[0].max_erases = self.pools[0].max_erases.max(e);
            self.close(b);
        }
        let at = full.len();
        self.open_host_blocks(&open, &mut placed[at * words..], &erases, &mut rng);
        full.extend(open.iter().map(|&(b, _, _)| b));
        let layout = std::sync::Arc::new(Layout::scattered(&g, full, placed, target, seed));
        if let Some(sh) = &mut self.shadow {
            for lpn in 0..target {
                sh.next += 1;
                sh.version.insert(lpn, sh.next);
                sh.slot_version.insert(layout.slot_of(lpn), sh.next);
            }
        }
        self.l2p.install(layout.clone());
        self.p2l.install(layout);
        self.steady_gc();
        Ok((dw, waf))
    }
}

/// Sets `k` of the first `n` bits of `bits` (all clear, `k <= n`): a subset drawn uniformly,
/// by Floyd's algorithm on the fewer of the bits to set and the bits to leave clear, so an
/// aged block (most of its slots valid) costs a draw per invalid slot, not one per slot.
fn scatter(bits: &mut [u64], n: u32, k: u32, rng: &mut Rng) {
    // Flipped, every bit is set first and the `n - k` drawn are cleared.
    let flip = k > n / 2;
    if flip {
        let (whole, rest) = (n as usize / 64, n % 64);
        bits[..whole].fill(u64::MAX);
        if rest > 0 {
            bits[whole] |= (1 << rest) - 1;
        }
    }
    let m = if flip { n - k } else { k };
    // Floyd: for each `j` of the last `m` positions, a draw from `0..=j`; the drawn position if
    // not yet chosen, else `j` (never chosen before this step). Choosing toggles the bit.
    let chosen = |bits: &[u64], i: u32| (bits[i as usize / 64] >> (i % 64) & 1 == 1) != flip;
    for j in n - m..n {
        let t = rng.random_range(0..=j);
        let pick = if chosen(bits, t) { j } else { t };
        bits[pick as usize / 64] ^= 1 << (pick % 64);
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::{scatter, Rng};

    #[test]
    fn scatter_sets_k_bits_each_equally_likely() {
        let mut rng = Rng::seed_from_u64(5);
        // Few to set, few to leave clear, half, none, all, over one word and over several.
        for (n, k) in [(10u32, 3u32), (10, 8), (10, 5), (10, 0), (10, 10), (200, 20), (200, 190), (64, 63)] {
            let words = (n as usize).div_ceil(64);
            let mut hits = vec![0u32; n as usize];
            let trials = 4000;
            for _ in 0..trials {
                let mut bits = vec![0u64; words];
                scatter(&mut bits, n, k, &mut rng);
                assert_eq!(bits.iter().map(|w| w.count_ones()).sum::<u32>(), k, "n {n}, k {k}");
                for (i, h) in hits.iter_mut().enumerate() {
                    *h += (bits[i / 64] >> (i % 64) & 1) as u32;
                }
            }
            // Each position is set with probability k / n: within 5 standard deviations.
            let p = f64::from(k) / f64::from(n);
            let sd = (f64::from(trials) * p * (1.0 - p)).sqrt();
            for (i, &h) in hits.iter().enumerate() {
                assert!((f64::from(h) - f64::from(trials) * p).abs() <= 5.0 * sd + 1e-9, "n {n}, k {k}: position {i} set {h} times of {trials}");
            }
        }
    }
}
