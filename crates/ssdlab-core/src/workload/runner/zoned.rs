//! fio's zone mode (`zonemode=zbd`) for the runner: each write goes to its zone's write
//! pointer under the zone's write lock (a write to a busy zone waits in the host), full zones
//! are reset (after the job's queue drains, waiting for the zone's last write) when the job
//! needs room, and a trim is a reset of its zone ([`super::super::zbd`] places the I/Os).

use std::collections::VecDeque;

use super::{Ctx, Hold, Job, Out, Runner, ZonePlan};
use crate::cmd::{Command, Origin};
use crate::ids::JobId;
use crate::io::Kind;
use crate::io::Op;
use crate::sim::SimTime;
use crate::workload::zbd::{Place, ZbdJob, ZoneView};
use crate::workload::{Io, WorkloadConfig};

/// A zbd job's options and state (`None` for a job outside zone mode).
pub(super) fn zbd_job(jw: &WorkloadConfig, region: u64) -> Option<ZbdJob> {
    jw.zbd.then(|| {
        let freq = jw.zone_reset_frequency;
        ZbdJob {
            start: jw.offset.0,
            len: region,
            min_bs: jw.min_bs().max(512),
            random: jw.rw.is_random(),
            read_beyond_wp: jw.read_beyond_wp,
            reset_threshold: jw.zone_reset_threshold,
            reset_frequency: freq,
            writes_left: if freq > 0.0 { ((1.0 / freq) as u64).max(1) } else { 0 },
        }
    })
}

/// The zones as fio's zbd jobs find them when they start (none without a zbd job).
pub(super) fn zone_view(plan: Option<&ZonePlan>, jobs: &[Job]) -> Option<Box<ZoneView>> {
    let p = plan?;
    jobs.iter().any(|j| j.zbd.is_some()).then(|| Box::new(ZoneView::new(p.zone_bytes, vec![if p.full { p.zone_bytes } else { 0 }; p.zones], p.max_open)))
}

impl Runner {
    /// fio's zbd mode moves `io` to where the zones take it (or resets a zone first, or waits
    /// for a zone's write lock); other jobs issue it as it is.
    pub(super) fn place(&mut self, ctx: &mut Ctx, job: usize, io: Io, arrival: SimTime) {
        let j = &mut self.jobs[job];
        let (Some(view), Some(zj)) = (self.zones.as_mut(), j.zbd.as_mut()) else {
            self.issue_io(ctx, job, io, arrival);
            return;
        };
        let placed = if io.op == Op::Trim { view.place_trim(zj, io.offset) } else { view.place(zj, io.op, io.offset, io.len) };
        match placed {
            Place::Io { offset, len } => self.issue_zoned(ctx, job, Io { op: io.op, offset, len }, arrival),
            Place::Reset { zone, len } => {
                // fio's io_u_quiesce, then __zbd_reset_zone; then the write at the zone's start.
                view.lock(zone);
                j.pending = Some((Io { op: Op::Write, offset: zone as u64 * view.zone_bytes(), len }, true));
                j.hold = Hold::Reset(zone);
                if j.inflight == 0 && !view.write_locked(zone) {
                    self.send_reset(ctx, job, zone);
                }
            }
            Place::Busy { .. } => {
                j.pending = Some((io, false));
                j.hold = Hold::ZoneBusy;
            }
            Place::Eof => j.gen.stop(),
        }
    }

    /// Issues an I/O that zbd placed: a write moves its zone's write pointer and takes the
    /// zone's write lock, or waits in the host for the write holding it (counted in flight, as
    /// the application has submitted it).
    pub(super) fn issue_zoned(&mut self, ctx: &mut Ctx, job: usize, io: Io, arrival: SimTime) {
        self.jobs[job].gen.continue_at(io.offset + io.len);
        let appends = self.jobs[job].gen.appends();
        if io.op == Op::Write {
            if let Some(v) = self.zones.as_mut() {
                // A Zone Append needs no lock: the drive writes it at the pointer it finds.
                if !v.issued(io.offset, io.len, appends) {
                    self.jobs[job].inflight += 1;
                    self.zone_waits.entry(v.zone_of(io.offset)).or_default().push_back((job, io, arrival));
                    return;
                }
            }
        }
        self.issue_io(ctx, job, io, arrival);
    }

    /// `job` resets `zone`: as fio does (the kernel's BLKRESETZONE), a Zone Management Send
    /// that takes the host's path and the link like any command, and that the job waits for.
    pub(super) fn send_reset(&mut self, ctx: &mut Ctx, job: usize, zone: usize) {
        self.jobs[job].hold = Hold::Resetting;
        let Some(v) = self.zones.as_ref() else { return };
        let bytes = v.zone_bytes();
        let mut c = Command::new(self.jobs[job].tenant, JobId(job as u32), Op::Trim, zone as u64 * bytes, bytes, ctx.now);
        c.kind = Kind::ZoneReset;
        c.origin = Origin::ZoneMgmt;
        let cmd = ctx.cmds.insert(c);
        ctx.at(ctx.now, Out::Submit { cmd });
    }

    /// Jobs waiting for a zone's write lock look again.
    pub(super) fn wake_zone_waiters(&mut self, ctx: &mut Ctx) {
        for k in 0..self.jobs.len() {
            if self.jobs[k].hold == Hold::ZoneBusy {
                self.jobs[k].hold = Hold::None;
                self.fill(ctx, k);
                self.check_end(ctx, k);
            }
        }
    }

    /// The drive has reset the zone at `offset` for `job`: the write that waited for the reset
    /// goes first, at the zone's start, then the job fills its slots, and jobs held for the
    /// zone look again.
    pub(super) fn zone_reset_done(&mut self, ctx: &mut Ctx, j: usize, offset: u64) {
        if let Some(v) = self.zones.as_mut() {
            v.reset(v.zone_of(offset));
        }
        self.jobs[j].hold = Hold::None;
        if let Some((io, true)) = self.jobs[j].pending {
            self.jobs[j].pending = None;
            self.issue_zoned(ctx, j, io, ctx.now);
        }
        self.fill(ctx, j);
        self.check_end(ctx, j);
        self.wake_zone_waiters(ctx);
    }

    /// A zoned I/O of `job` completed: a zbd trim (a reset) frees its zone's held writes; a
    /// write passes its zone's write lock on, or lets a reset that waited for it go.
    pub(super) fn zone_io_done(&mut self, ctx: &mut Ctx, job: usize, op: Op, offset: u64) {
        if op == Op::Trim && self.jobs[job].zbd.is_some() {
            if let Some(v) = self.zones.as_mut() {
                // A zbd trim was a zone reset: writes held for the zone may go.
                v.reset(v.zone_of(offset));
            }
            self.wake_zone_waiters(ctx);
        }
        if op == Op::Write {
            if let Some(v) = self.zones.as_mut() {
                // The zone's write lock passes to the next write held for it, if any.
                let z = v.zone_of(offset);
                if let Some((j, io, arrival)) = self.zone_waits.get_mut(&z).and_then(VecDeque::pop_front) {
                    self.jobs[j].inflight -= 1;
                    self.issue_io(ctx, j, io, arrival);
                } else {
                    v.unlock(z);
                    // A reset of this zone waited for its last write.
                    let idle = !v.write_locked(z);
                    if let Some(j) = (0..self.jobs.len()).find(|&j| idle && self.jobs[j].hold == Hold::Reset(z) && self.jobs[j].inflight == 0) {
                        self.send_reset(ctx, j, z);
                    } else if idle {
                        // A zbd trim (a reset) may have waited for this write.
                        self.wake_zone_waiters(ctx);
                    }
                }
            }
        }
    }

    /// A job whose queue drained goes on with the reset it was held for, once the zone has no
    /// write in flight.
    pub(super) fn reset_when_idle(&mut self, ctx: &mut Ctx, job: usize, zone: usize) {
        if !self.zones.as_ref().is_some_and(|v| v.write_locked(zone)) {
            self.send_reset(ctx, job, zone);
        }
    }
}
