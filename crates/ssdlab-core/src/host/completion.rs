//! The host's completion path: the interrupt handler's run over the CQEs it finds, the
//! polling thread's finds, the completion work on each job's CPU, and the request leaving the
//! host. Costs come from the job's engine (`engine`) or, for `kernel`, from `host.complete_cost`
//! and its siblings.

use super::{Ctx, Engine, Event, Host, Out};
use crate::cmd::Origin;
use crate::ids::{CmdId, QueueId};
use crate::io::Op;
use crate::sim::{SimDuration, SimTime};
use crate::stats::{fio_bucket, Component, IoRecord, Observer, REAP_STARTS};

impl Host {
    /// When the interrupt handler of `queue` can run: its CPU is free (a busy thread finishes
    /// what it is doing first, and the CQEs posted meanwhile wait for the same run).
    /// Notes which of the queue's threads were idle (waiting) as the interrupt arrived.
    pub fn handler_at(&mut self, queue: QueueId, now: SimTime) -> SimTime {
        if let Some(jobs) = self.jobs_of_queue.get(usize::from(queue.0)) {
            for &j in jobs {
                self.asleep[j] = self.cpus[j].free_at() <= now;
            }
        }
        self.irq_cpu.get(usize::from(queue.0)).and_then(|&j| self.cpus.get(j)).map_or(now, |c| c.free_at().max(now))
    }

    /// The interrupt handler found `batch` completed: the first pays the interrupt, wake-up
    /// and return (`complete_cost`), each further one its own completion
    /// (`batch_complete_cost`); the last rings the CQ head doorbell.
    #[inline]
    pub fn interrupt(&mut self, ctx: &mut Ctx, batch: &[CmdId]) {
        let last = batch.len().saturating_sub(1);
        for &cmd in batch {
            let c = &ctx.cmds[cmd];
            if c.origin == Origin::App {
                self.reap_level[c.job.index()][fio_bucket(batch.len() as u64, &REAP_STARTS)] += 1;
            }
        }
        self.engines.handler_run();
        for (i, &cmd) in batch.iter().enumerate() {
            let now = ctx.now;
            ctx.cmds[cmd].account(Component::HostQueueing, now);
            let c = &ctx.cmds[cmd];
            let job = c.job.index();
            let cost = match self.engines.of(job) {
                Engine::Kernel => {
                    if i == 0 {
                        self.complete_cost
                    } else {
                        self.batch_complete_cost
                    }
                }
                // The page cache's own requests wake nobody: the flusher or a reader's wait
                // is the cache's business.
                _ => self.engines.interrupt_cost(job, i == 0, c.origin == Origin::App, self.asleep[job]),
            };
            self.finish(ctx, cmd, cost, i == last);
        }
    }

    /// Runs the host's completion work for `cmd` (and a copy of read data to the application);
    /// it completes when that is done.
    pub(super) fn finish(&mut self, ctx: &mut Ctx, cmd: CmdId, cost: SimDuration, ring_cq: bool) {
        let c = &ctx.cmds[cmd];
        let (job, op, len) = (c.job.index(), c.op, c.len);
        let cost = if op == Op::Read && c.origin == Origin::App { cost + self.copy_time(len) } else { cost };
        let g = self.cpus[job].reserve(ctx.now, cost);
        Self::account(ctx, cmd, g);
        let ev = if self.queue_lock.is_some() { Event::EndRequest { cmd, ring_cq } } else { Event::Complete { cmd, ring_cq } };
        ctx.at(g.end, Out::Host(ev));
    }

    /// The host has finished `cmd` (the last rings the CQ head doorbell): the request leaves
    /// the device's statistics, the application's I/O is recorded, and it completes.
    /// Returns the command if it is a job's (the job takes it out of the command table).
    pub fn complete(&mut self, ctx: &mut Ctx, cmd: CmdId, ring_cq: bool) -> Option<CmdId> {
        if ring_cq {
            ctx.at(ctx.now, Out::CqDoorbell);
        }
        let c = &ctx.cmds[cmd];
        if c.device {
            self.disk.end(ctx.now, c.op, ctx.now.since(c.submitted));
        }
        if c.origin == Origin::App {
            // The host counts what it addressed: with an extended LBA, each block's metadata too.
            let len = if self.extended_lba { c.len + c.md } else { c.len };
            ctx.probe.io_completed(&IoRecord { tenant: c.tenant, job: c.job, op: c.op, offset: c.offset, len, issued: c.issued, submitted: c.submitted, completed: ctx.now, breakdown: &c.breakdown });
        }
        self.release(ctx, cmd)
    }

    /// The host lets go of `id`: its buffer, its cgroup's share; a page cache request leaves
    /// the table here, a job's command is returned for the job.
    pub(super) fn release(&mut self, ctx: &mut Ctx, id: CmdId) -> Option<CmdId> {
        let now = ctx.now;
        let c = &ctx.cmds[id];
        debug_assert_eq!(c.breakdown.total(), now.since(c.issued).as_ps());
        let job = c.job.index();
        // A buffered job's trim went to the drive as it is: it completes as direct I/O does.
        let buffered_app = self.threads[job].buffered && c.origin == Origin::App && self.cache.is_some() && c.op != Op::Trim;
        if buffered_app {
            self.reap_level[job][1] += 1;
        }
        if !buffered_app {
            if let Some(m) = &mut self.memory {
                m.release(c);
            }
        }
        let idle = !buffered_app && self.share.as_mut().is_some_and(|sh| sh.completed(c.tenant, now.since(c.submitted)));
        let origin = c.origin;
        if origin == Origin::PageCache {
            self.cache_done(ctx, id);
            ctx.cmds.remove(id);
            if idle {
                self.revisit_share(ctx);
            }
            return None;
        }
        if idle {
            // A tenant went idle: the others' shares grow.
            self.revisit_share(ctx);
        }
        Some(id)
    }
}
