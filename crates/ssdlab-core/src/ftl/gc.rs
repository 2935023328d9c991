//! Garbage collection: the victim a pool picks (greedy, cost-benefit, random, or static wear
//! levelling's), foreground collection paced by host writes between the trigger and reclaim
//! thresholds (or whole victims at once when untimed), background collection toward a target,
//! and erasing victims once their valid units have moved.

use rand::RngExt;

use super::{bulk, BlockId, Collecting, FlashOp, Ftl, State, Victim, NIL, UNMAPPED};
use crate::error::Result;

impl Ftl {
    pub(super) fn pick_victim(&mut self, p: usize) -> Option<u32> {
        let pool = &mut self.pools[p];
        let full = pool.victims.full();
        if full.is_empty() {
            return None;
        }
        if self.cfg.wl_threshold > 0 {
            pool.wl_check += 1;
            if pool.wl_check >= 8 {
                pool.wl_check = 0;
                let coldest = pool.victims.full().iter().copied().min_by_key(|&b| (self.blocks[b as usize].erases, b))?;
                if pool.max_erases - self.blocks[coldest as usize].erases > self.cfg.wl_threshold {
                    pool.counters.wl_moves += 1;
                    return Some(coldest);
                }
            }
        }
        let full = pool.victims.full();
        Some(match self.cfg.gc_policy {
            Victim::Greedy => pool.victims.fewest_valid(),
            Victim::Random => full[self.rng.random_range(0..full.len())],
            Victim::CostBenefit => {
                let spb = f64::from(self.g.slots_per_block());
                let mut best = (f64::NEG_INFINITY, 0u32);
                for _ in 0..self.cfg.gc_window {
                    let b = full[self.rng.random_range(0..full.len())];
                    let blk = &self.blocks[b as usize];
                    let u = f64::from(blk.valid) / spb;
                    let age = f64::from(self.closed_seq.wrapping_sub(blk.closed)) + 1.0;
                    let score = if u == 0.0 { f64::INFINITY } else { (1.0 - u) * age / (2.0 * u) };
                    if score > best.0 {
                        best = (score, b);
                    }
                }
                best.1
            }
        })
    }

    /// Foreground GC, paced by host writes. Once free blocks fall below the trigger, GC
    /// collects victims unit by unit: each host write earns the moves that keep free blocks
    /// level while the current victim is collected (valid / (slots - valid) of it), scaled by
    /// how far free blocks are from the middle of the trigger-reclaim band (1.5x at the
    /// trigger, 1x in the middle, 0.5x at the reclaim threshold, nothing half a band above
    /// it: a proportional controller), so that under steady writes free blocks settle in the
    /// band and GC runs at the rate writes need, not in cycles of catching up and resting. GC
    /// rests once free blocks are half a band above the reclaim threshold (after TRIMs or
    /// idle-time GC), and starts again below the trigger. Erasing a collected victim costs
    /// no credit. Only when free blocks fall to half the trigger does GC collect without
    /// waiting for credit. So GC work reaches the dies spread over host writes, as real FTLs
    /// interleave it, rather than in bursts of whole victims.
    pub(super) fn collect_if_needed(&mut self, p: usize, sink: &mut impl FnMut(FlashOp)) -> Result<()> {
        if !self.pools[p].gc_due() {
            return Ok(());
        }
        if self.bulk_gc {
            if self.pools[p].free_count < self.pools[p].trigger {
                self.pools[p].counters.gc_runs += 1;
                while self.pools[p].free_count < self.pools[p].reclaim {
                    let Some(victim) = self.pick_victim(p) else { break };
                    self.reclaim_block(victim, sink)?;
                }
            }
            return Ok(());
        }
        let pool = &mut self.pools[p];
        if !pool.gc_active {
            pool.gc_active = true;
            pool.counters.gc_runs += 1;
        }
        let floor = (pool.trigger / 2).max(1);
        let band = f64::from(pool.reclaim.saturating_sub(pool.trigger).max(1));
        let level = (f64::from(pool.free_count) - f64::from(pool.trigger)) / band;
        let boost = (1.5 - level).clamp(0.0, 2.0);
        pool.credit += pool.collecting.map_or(1.0, |c| c.pace) * boost;
        let short = self.short_ways();
        loop {
            let pool = &mut self.pools[p];
            if pool.collecting.is_none() {
                if pool.free_count >= pool.rest_level() {
                    pool.gc_active = false;
                    pool.credit = 0.0;
                    return Ok(());
                }
                if !self.start_victim(p) {
                    return Ok(());
                }
                continue;
            }
            // A victim with nothing valid left is erased at once: erasing costs no credit.
            if let Some(c) = pool.collecting {
                if self.blocks[c.block as usize].valid == 0 {
                    self.pools[p].collecting = None;
                    self.erase_victim(c.block, p, sink);
                    continue;
                }
            }
            let pool = &mut self.pools[p];
            if pool.free_count > floor && pool.credit < 1.0 {
                return Ok(());
            }
            if short {
                // As many moves as the credit pays for (all that are left while free blocks
                // are at the floor), taken together: the loop above then sees what the moves
                // one by one would have seen after the last of them.
                let n = if pool.free_count > floor { pool.credit as usize } else { usize::MAX };
                let moved = self.move_some(p, n, sink)?;
                let credit = &mut self.pools[p].credit;
                // One by one, as the moves one by one subtract (bit for bit the same credit).
                for _ in 0..moved {
                    *credit -= 1.0;
                }
            } else if self.move_one(p, sink)? {
                self.pools[p].credit -= 1.0;
            }
        }
    }

    /// Moves up to `n` of the next valid units of the victim under collection the short way
    /// ([`bulk::move_run`]), each as [`Ftl::move_one`] would in turn: the same flash operations
    /// in the same order, the victim's copies invalidated. A unit the short way leaves out
    /// takes the general way. Returns how many it moved (at most what the victim holds).
    fn move_some(&mut self, p: usize, n: usize, sink: &mut impl FnMut(FlashOp)) -> Result<usize> {
        let Some(mut c) = self.pools[p].collecting else { return Ok(0) };
        let (victim, spb) = (c.block, self.g.slots_per_block());
        let n = n.min(self.blocks[victim as usize].valid as usize);
        let mut moving = std::mem::take(&mut self.moving);
        moving.clear();
        // A block the layout filled answers from the units `start_victim` listed for it.
        c.next = match self.p2l.valid_from_listed(victim, c.next, spb, n, &self.pools[p].victim_units, &mut moving) {
            Some(next) => next,
            None => self.p2l.valid_from(victim, c.next, spb, n, &mut moving),
        };
        if moving.is_empty() {
            // Nothing valid was left after all (as `move_one` finds it): the victim is erased.
            self.moving = moving;
            self.pools[p].collecting = None;
            self.erase_victim(victim, p, sink);
            return Ok(0);
        }
        let upto = c.next;
        self.prefetch_moves(p, &mut c, upto);
        self.move_listed(victim, p, &moving, true, &mut c.page_read, sink)?;
        for &(offset, _) in &moving {
            self.p2l.set(victim, offset, UNMAPPED);
        }
        self.blocks[victim as usize].valid -= moving.len() as u32;
        let moved = moving.len();
        self.moving = moving;
        self.pools[p].collecting = Some(c);
        Ok(moved)
    }

    /// Picks the pool's next victim and starts collecting it; false if there is none.
    pub(super) fn start_victim(&mut self, p: usize) -> bool {
        let Some(victim) = self.pick_victim(p) else { return false };
        let valid = self.blocks[victim as usize].valid;
        self.pools[p].victims.unlist(&mut self.links, victim, valid);
        self.blocks[victim as usize].state = State::Victim;
        self.pools[p].counters.gc_victims += 1;
        let spb = self.g.slots_per_block();
        // The victim's valid units, whose map entries the moves will update: brought toward
        // the cache a few moves ahead of each (`prefetch_moves`).
        let mut units = std::mem::take(&mut self.pools[p].victim_units);
        units.clear();
        self.p2l.valid_into(victim, spb, &mut units);
        self.pools[p].victim_units = units;
        let pace = f64::from(valid) / f64::from(spb.saturating_sub(valid).max(1));
        let mut c = Collecting { block: victim, next: 0, page_read: NIL, pace, ahead: 0, far: 0 };
        self.prefetch_moves(p, &mut c, 0);
        self.pools[p].collecting = Some(c);
        true
    }

    /// Moves the next valid unit of the victim under collection; erases the victim when none
    /// is left. Returns whether it moved a unit.
    pub(super) fn move_one(&mut self, p: usize, sink: &mut impl FnMut(FlashOp)) -> Result<bool> {
        let Some(mut c) = self.pools[p].collecting else { return Ok(false) };
        let spb = self.g.slots_per_block();
        let victim = c.block;
        let Some((offset, lpn)) = self.p2l.first_valid(victim, c.next, spb) else {
            self.pools[p].collecting = None;
            self.erase_victim(victim, p, sink);
            return Ok(false);
        };
        c.next = offset;
        // GC reads each of the array's pages once for all its valid units.
        let page = crate::sim::div_rem(u64::from(offset), u64::from(self.pg.slots_per_page)).0 as u32;
        if page != c.page_read {
            self.gc_read(victim, offset, sink);
            c.page_read = page;
        }
        c.next += 1;
        let upto = c.next;
        self.prefetch_moves(p, &mut c, upto);
        self.pools[p].collecting = Some(c);
        self.relocate(victim, offset, lpn, p, true, sink)?;
        Ok(true)
    }

    /// Moves unit `lpn` from slot `offset` of `victim` (no longer listed) to its pool's GC
    /// stream. With `unset`, the victim's copy is invalidated (its reverse-map entry and its
    /// valid count); without, the caller moves every valid unit of the victim in one go and
    /// then erases it, which drops its reverse map and valid count whole: nothing reads them
    /// in between.
    // Inlined into its callers (`move_listed`, `move_one`): the
    // call's saving and restoring of registers was about a tenth of a move's instructions.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub(super) fn relocate(&mut self, victim: u32, offset: u32, lpn: u64, p: usize, unset: bool, sink: &mut impl FnMut(FlashOp)) -> Result<()> {
        let version = self.shadow.as_mut().and_then(|s| s.slot_version.remove(&(u64::from(victim) * u64::from(self.g.slots_per_block()) + u64::from(offset))));
        if unset {
            // The victim is no longer listed, so invalidating its copy needs no bucket moves.
            self.p2l.set(victim, offset, UNMAPPED);
            self.blocks[victim as usize].valid -= 1;
        }
        let stream = self.gc_stream(lpn);
        let slot = self.allocate(p, stream, sink)?;
        self.l2p.remap(lpn, slot.at);
        self.record(lpn, slot, version);
        self.touch_map(lpn, true, true, sink);
        self.pools[p].counters.gc_writes += 1;
        if let Some(a) = &mut self.attribution {
            let (n, owner) = (a.tenants(), a.owner(lpn));
            a.moved[a.payer * n + owner] += 1;
        }
        Ok(())
    }

    /// Background GC: reclaims one victim in the first pool (in order) that has fewer than
    /// `target` of its blocks free. Returns whether it did (and so whether more may be wanted).
    pub fn collect_background(&mut self, target: f64, sink: &mut impl FnMut(FlashOp)) -> Result<bool> {
        if let Some(a) = &mut self.attribution {
            a.payer = a.tenants();
        }
        for p in 0..self.pools.len() {
            let want = (f64::from(self.pools[p].blocks) * target).ceil() as u32;
            if self.pools[p].free_count >= want {
                continue;
            }
            let Some(victim) = self.pick_victim(p) else { continue };
            // Reclaiming a nearly full block frees almost nothing: leave it to foreground GC.
            if self.blocks[victim as usize].valid >= self.g.slots_per_block() - self.g.slots_per_page {
                continue;
            }
            self.pools[p].counters.bg_victims += 1;
            self.reclaim_block(victim, sink)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Moves the valid units of `victim` to its pool's GC stream and erases it.
    pub(super) fn reclaim_block(&mut self, victim: u32, sink: &mut impl FnMut(FlashOp)) -> Result<()> {
        let (valid, p) = (self.blocks[victim as usize].valid, usize::from(self.blocks[victim as usize].pool));
        self.pools[p].victims.unlist(&mut self.links, victim, valid);
        self.pools[p].counters.gc_victims += 1;
        let spb = self.g.slots_per_block();
        let mut moving = std::mem::take(&mut self.moving);
        moving.clear();
        self.p2l.valid_into(victim, spb, &mut moving);
        // Touch every map entry to be rewritten before rewriting any: the loads are independent,
        // so their cache misses overlap instead of queueing one by one.
        std::hint::black_box(moving.iter().fold(0u64, |a, &(_, lpn)| a ^ self.l2p.peek(lpn)));
        let mut page_read = NIL;
        // Runs of moves take the short way where the drive allows it (`bulk.rs`).
        let short = self.short_ways();
        self.move_listed(victim, p, &moving, short, &mut page_read, sink)?;
        self.moving = moving;
        self.blocks[victim as usize].valid = 0;
        self.erase_victim(victim, p, sink);
        Ok(())
    }

    /// Moves `moving` (offset, unit: valid units of `victim`, no longer listed, in slot order)
    /// to the pool's GC stream, leaving the victim's copies for the caller to drop: in runs the
    /// short way where `short` allows ([`bulk::move_run`]), each unit a run leaves out the
    /// general way. GC reads each of the victim's pages once (`page_read`: the page last read).
    // Inlined into its two callers, as `relocate` is.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn move_listed(&mut self, victim: u32, p: usize, moving: &[(u32, u64)], short: bool, page_read: &mut u32, sink: &mut impl FnMut(FlashOp)) -> Result<()> {
        let spp = self.pg.slots_per_page;
        let mut i = 0;
        while i < moving.len() {
            if short {
                let Ftl { pools, order, l2p, p2l, blocks, g, .. } = self;
                i += bulk::move_run(&moving[i..], victim, &mut pools[p], order, l2p, p2l, blocks, g, page_read, sink);
                if i == moving.len() {
                    break;
                }
            }
            let (offset, lpn) = moving[i];
            let page = crate::sim::div_rem(u64::from(offset), u64::from(spp)).0 as u32;
            if page != *page_read {
                self.gc_read(victim, offset, sink);
                *page_read = page;
            }
            self.relocate(victim, offset, lpn, p, false, sink)?;
            i += 1;
        }
        Ok(())
    }

    /// Erases `block` now if it is full and holds nothing valid (a zone reset's blocks); a
    /// block that GC is collecting is left to GC.
    pub(super) fn erase_if_empty(&mut self, block: u32, sink: &mut impl FnMut(FlashOp)) {
        let b = &self.blocks[block as usize];
        if b.state != State::Full || b.valid != 0 {
            return;
        }
        let p = usize::from(b.pool);
        self.pools[p].victims.unlist(&mut self.links, block, 0);
        self.erase_victim(block, p, sink);
    }

    /// GC reads the array's page that holds slot `offset` of `victim`.
    #[inline]
    fn gc_read(&self, victim: u32, offset: u32, sink: &mut impl FnMut(FlashOp)) {
        let slot = u64::from(victim) * u64::from(self.g.slots_per_block()) + u64::from(offset);
        let (block, page) = self.locate(slot);
        sink(FlashOp::Read { block, page });
    }

    /// Erases a victim with nothing valid left: a free block of its pool again.
    pub(super) fn erase_victim(&mut self, victim: u32, p: usize, sink: &mut impl FnMut(FlashOp)) {
        self.erase_planes(victim, sink);
        let b = &mut self.blocks[victim as usize];
        debug_assert_eq!(b.valid, 0);
        b.erases += 1;
        b.state = State::Free;
        let erases = b.erases;
        self.p2l.close(victim);
        let plane = self.g.plane_of(BlockId(victim)) as usize;
        let pool = &mut self.pools[p];
        pool.counters.erases += 1;
        pool.max_erases = pool.max_erases.max(erases);
        pool.free[plane].push(victim);
        pool.free_count += 1;
    }
}
