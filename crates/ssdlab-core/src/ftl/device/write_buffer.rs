//! The controller's DRAM write buffer: a write enters when it has room (oldest first; a write
//! larger than the buffer alone when it is empty), the FTL places its units at once (running
//! foreground GC as it needs), and it completes from DRAM while the NAND array programs its
//! pages in the background, freeing buffer space as programs finish. With `ftl.buffer_split`
//! each isolated pool has a part of its own; with the write cache off a write completes only
//! when its pages are programmed.
//!
//! A write that covers part of a mapping unit holding data on the flash is a read-modify-write:
//! the unit is read first (a host-priority page read), then the merged unit is written whole. A
//! unit in the write buffer merges in DRAM and an unwritten one is padded with zeroes, so
//! neither is read. Leaves out: the map lookup of that read when the map is cached.

use rustc_hash::FxHashMap;

use super::{Ctx, FlashDevice, PageRead};
use crate::cmd::{PerCmd, NO_PID};
use crate::ftl::UNMAPPED;
use crate::ids::{CmdId, Lpn};
use crate::io::Kind;
use crate::media::Out;
use crate::sim::{div_rem, SimDuration};
use crate::stats::{Component, Record};

/// A write waiting for write-buffer space, with the dies' busy and GC time when it came.
#[derive(Clone, Copy)]
pub(super) struct Waiting {
    pub(super) id: CmdId,
    pub(super) busy: SimDuration,
    pub(super) gc: SimDuration,
    /// Where the hints found its first unit's old copy a write before it is admitted
    /// (`UNMAPPED` until then): read only by the hint of the stage after.
    pub(super) old: u64,
}

/// Writes that complete only when programmed (`ftl.write_cache = false`).
#[derive(Default)]
pub(super) struct Uncached {
    pub(super) by_page: FxHashMap<(u32, u32), Vec<CmdId>>,
    pub(super) pending: PerCmd<u32>,
}

impl FlashDevice {
    /// Queues write `id` for write-buffer space.
    pub(super) fn enqueue_write(&mut self, ctx: &mut Ctx, id: CmdId) {
        let part = self.part_of(ctx.cmds[id].offset);
        let (busy, gc) = self.array.busy_totals();
        self.waiting[part].push_back(Waiting { id, busy, gc, old: UNMAPPED });
    }

    /// Starts the flash reads of write `id`'s read-modify-write: its first and last units when
    /// it covers them in part and they hold data on the flash. True if it waits for them.
    pub(super) fn read_modify_write(&mut self, ctx: &mut Ctx, id: CmdId) -> bool {
        let c = &ctx.cmds[id];
        let (start, end, unit) = (c.offset, c.offset + c.len, self.unit);
        if c.kind == Kind::ZoneAppend || c.len == 0 || (div_rem(start, unit).1 == 0 && div_rem(end, unit).1 == 0) {
            return false;
        }
        let (first, last) = (start / unit, (end - 1) / unit);
        let head = (start % unit != 0 || end < (first + 1) * unit).then_some(first);
        let tail = (last != first && end % unit != 0).then_some(last);
        let mut reads: Vec<PageRead> = Vec::new();
        for lpn in head.into_iter().chain(tail) {
            let Some(slot) = self.ftl.lookup(Lpn(lpn)) else { continue };
            let (block, page) = self.ftl.locate(slot);
            if !self.array.is_programmed(block, page) {
                continue;
            }
            self.rmw_reads += 1;
            if let Some(r) = reads.last_mut().filter(|r| r.block == block && r.page == page) {
                r.bytes += unit as u32;
            } else {
                reads.push(PageRead { block, page, bytes: unit as u32, at: 0 });
            }
        }
        if reads.is_empty() {
            return false;
        }
        self.rmw.insert(id, reads.len() as u32);
        self.array.submit_reads(id, reads.iter().map(|r| (r.block, r.page, r.bytes, r.at)), ctx.now, &mut self.out);
        self.apply(ctx);
        true
    }

    /// A page read of write `cmd`'s read-modify-write landed: once all have, the write (its
    /// reads' time its media time) waits for buffer space. True when it does.
    pub(super) fn merged(&mut self, ctx: &mut Ctx, cmd: CmdId) -> bool {
        let Some(left) = self.rmw.get_mut(cmd) else { return false };
        *left -= 1;
        if *left > 0 {
            return false;
        }
        self.rmw.remove(cmd);
        ctx.cmds[cmd].account(Component::Media, ctx.now);
        self.enqueue_write(ctx, cmd);
        true
    }

    /// Moves waiting writes into the write buffer, oldest first, while they fit (a write
    /// larger than the whole buffer goes in alone when the buffer is empty). The FTL places
    /// each unit (running foreground GC as it needs), and the write completes from DRAM.
    pub(super) fn admit_writes(&mut self, ctx: &mut Ctx) {
        for part in 0..self.waiting.len() {
            self.admit_part(ctx, part);
        }
    }

    /// The buffer part of a write at `offset` (its pool's, with a split buffer).
    pub(super) fn part_of(&self, offset: u64) -> usize {
        if self.waiting.len() == 1 {
            0
        } else {
            self.ftl.pool_of_lpn(Lpn(offset / self.unit))
        }
    }

    pub(super) fn admit_part(&mut self, ctx: &mut Ctx, part: usize) {
        let now = ctx.now;
        while let Some(&Waiting { id, busy, gc, .. }) = self.waiting[part].front() {
            if ctx.cmds[id].kind == Kind::ZoneAppend {
                // A Zone Append goes to its zone's write pointer as the drive finds it.
                if let Some(lpn) = self.ftl.zone_pointer(ctx.cmds[id].offset / self.unit) {
                    ctx.cmds[id].offset = lpn * self.unit;
                }
            }
            let c = &ctx.cmds[id];
            let (units, tenant, pid) = (c.pieces, c.tenant.index(), (c.pid != NO_PID).then_some(c.pid));
            if self.buffer_used[part] > 0 && self.buffer_used[part] + units > self.buffer_units[part] {
                return;
            }
            self.waiting[part].pop_front();
            // The writes queued behind this one come in soon: bring toward the cache, a stage
            // a write, what each will read, each stage reading what the one before brought
            // in: the pointer to the map leaf of the fourth, the map entry of the third, the
            // metadata of the second's old copy (its block, index entry and victim-list links),
            // and for the next one's old copy the word of the reverse map its write clears and
            // the links of its block's bucket neighbours. On a map with sparse leaves (a drive
            // over 128 GiB) most units still sit where ageing or the fill put them, and what
            // the layout reads to say where comes in over the two stages before the old copy's.
            let sparse = self.ftl.map_has_sparse();
            let (cmds, unit) = (&ctx.cmds, self.unit);
            let lpn_of = |n: &Waiting| Lpn(div_rem(cmds[n.id].offset, unit).0);
            if let Some(n) = self.waiting[part].front() {
                self.ftl.prefetch_old_slot(n.old);
            }
            if let Some(n) = self.waiting[part].get_mut(1) {
                n.old = self.ftl.prefetch_old(lpn_of(n));
            }
            if let Some(lpn) = self.waiting[part].get(2).map(lpn_of) {
                self.ftl.prefetch_entry(lpn);
                if sparse {
                    self.ftl.prefetch_base(lpn, true);
                }
            }
            if let Some(lpn) = self.waiting[part].get(3).map(lpn_of) {
                self.ftl.prefetch_leaf(lpn);
                if sparse {
                    self.ftl.prefetch_base(lpn, false);
                }
            }
            self.buffer_used[part] += units;
            let first = div_rem(c.offset, self.unit).0;
            let mut ops = std::mem::take(&mut self.ops);
            ops.clear();
            for lpn in (first..first + units).map(Lpn) {
                self.ahead.written(lpn);
                let slot = match self.ftl.write_placed_by(lpn, pid, &mut |op| ops.push(op)) {
                    Ok(slot) => slot,
                    Err(e) => {
                        ctx.fail(e);
                        break;
                    }
                };
                if let Some(u) = self.uncached.as_mut() {
                    // The host page it went to (GC may have moved it on since; that page is
                    // programmed all the same).
                    let (block, page) = self.ftl.locate(slot);
                    u.by_page.entry((block.0, page)).or_default().push(id);
                    *u.pending.get_or_insert_with(id, || 0) += 1;
                }
            }
            if let Some(n) = self.tenant_ios.get_mut(tenant) {
                *n += 1;
            }
            let dropped = self.ftl.take_dropped_units();
            self.buffer_used[part] = self.buffer_used[part].saturating_sub(dropped);
            self.ops = ops;
            self.submit_ops(now);
            let erases = self.ftl.counters().erases;
            if erases != self.last_erases {
                self.last_erases = erases;
                ctx.probe.record(now, Record::Reclaimed { erases, free_blocks: self.ftl.free_blocks() });
            }
            let latency = self.buffer_latency;
            let c = &mut ctx.cmds[id];
            // The wait for buffer space: the buffer drains as fast as the dies program, so GC
            // caused the share of it that GC took of the dies' time meanwhile.
            let (busy_now, gc_now) = self.array.busy_totals();
            let (busy, gc) = ((busy_now - busy).as_ps(), (gc_now - gc).as_ps());
            if busy > 0 && gc > 0 && now > c.mark {
                let wait = now.since(c.mark).as_ps();
                let share = (u128::from(wait) * u128::from(gc.min(busy)) / u128::from(busy)) as u64;
                c.account(Component::Gc, c.mark + SimDuration::from_ps(share));
            }
            c.account(Component::Queueing, now);
            if self.uncached.is_none() {
                c.account(Component::Media, now + latency);
                ctx.at(now + latency, Out::Done { cmd: id });
            }
            self.apply(ctx);
        }
    }
}
