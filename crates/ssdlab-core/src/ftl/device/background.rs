//! The flash device's background work on a cadence: garbage collection when the host has
//! been idle for `ftl.bg_gc_idle` (toward `ftl.bg_gc_target` free blocks; with
//! `ftl.bg_gc_defer = "writes"`, when it has not written for that long, reads or not), and the
//! dynamic OPS controller's steps among isolated pools (`ftl.ops_interval`). Background GC
//! stops when the host's workload has ended: the run ends with the host's work.

use super::{Ctx, Event, FlashDevice};
use crate::media::Out;
use crate::sim::{SimDuration, SimTime};

impl FlashDevice {
    /// Notes host activity; returns when to schedule a background-GC check, if one is due.
    pub(super) fn note_activity(&mut self, now: SimTime) -> Option<SimTime> {
        self.last_activity = now;
        if self.bg_idle == SimDuration::ZERO || self.bg_armed {
            return None;
        }
        self.bg_armed = true;
        Some(now + self.bg_idle)
    }

    pub(super) fn arm_background_gc(ctx: &mut Ctx, at: Option<SimTime>) {
        if let Some(t) = at {
            ctx.at(t, Out::Wake(Event::BackgroundGc));
        }
    }

    /// Background GC check: if the drive has been idle long enough, reclaim one victim and
    /// look again after the same idle time; if not, look again when it would be.
    pub(super) fn background_gc(&mut self, ctx: &mut Ctx) {
        let now = ctx.now;
        self.bg_armed = false;
        if self.bg_stopped {
            return;
        }
        let due = self.last_activity + self.bg_idle;
        if now < due {
            self.bg_armed = true;
            ctx.at(due, Out::Wake(Event::BackgroundGc));
            return;
        }
        let mut ops = std::mem::take(&mut self.ops);
        ops.clear();
        let more = match self.ftl.collect_background(self.bg_target, &mut |op| ops.push(op)) {
            Ok(more) => more,
            Err(e) => {
                ctx.fail(e);
                false
            }
        };
        self.ops = ops;
        self.submit_ops(now);
        if more {
            self.bg_armed = true;
            ctx.at(now + self.bg_idle, Out::Wake(Event::BackgroundGc));
        }
        self.apply(ctx);
    }

    /// The dynamic OPS controller's step: blocks change pools (and owners at the dies); the
    /// next step is armed while the host is still at work.
    pub(super) fn resize_ops(&mut self, ctx: &mut Ctx) {
        self.ops_armed = false;
        let Some(s) = self.sizer.as_mut() else { return };
        for (block, pool) in s.step(&mut self.ftl, ctx.now, &self.tenant_ios) {
            self.array.set_owner(block, pool);
        }
        if self.last_activity + s.interval > ctx.now {
            self.arm_ops(ctx);
        }
    }

    /// Arms the dynamic OPS controller's next step, unless it is armed (host activity re-arms
    /// it after an idle spell).
    pub(super) fn arm_ops(&mut self, ctx: &mut Ctx) {
        if let Some(s) = self.sizer.as_ref().filter(|_| !self.ops_armed) {
            self.ops_armed = true;
            ctx.at(ctx.now + s.interval, Out::Wake(Event::OpsResize));
        }
    }
}
