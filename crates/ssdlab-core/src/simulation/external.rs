//! The simulation driven from outside (emulation, `ssdlab serve`): the caller hands it each
//! I/O at the simulated instant it arrives, moves simulated time forward to an instant of its
//! choosing, and collects what completed. The runner's jobs issue nothing of their own; each
//! injected I/O enters its job's host path, so the rest of its path is the same as in a run.

use super::{overflow, Simulation};
use crate::error::{Error, Result};
use crate::ids::CmdId;
use crate::io::{Kind, Op};
use crate::sim::{time, SimTime};
use crate::workload::Io;

impl Simulation {
    /// From now on every I/O comes from [`Simulation::inject`]: the jobs' own workloads are
    /// off. Call before the first event.
    pub fn serve_externally(&mut self) {
        self.runner.serve_externally();
    }

    /// Each tenant's name and its jobs (the queues its I/Os may be sent on), by tenant.
    pub fn tenant_jobs(&self) -> Vec<(String, Vec<usize>)> {
        let names = self.runner.tenant_names();
        let of = self.runner.job_tenants();
        names.iter().enumerate().map(|(t, n)| (n.clone(), (0..of.len()).filter(|&j| of[j].index() == t).collect())).collect()
    }

    /// Host units of padding that flushes wrote to close partly filled flash pages.
    pub fn flush_padding(&self) -> u64 {
        self.medium.flush_padding()
    }

    /// The instant of the next pending event, if any.
    pub fn next_event(&self) -> Option<SimTime> {
        self.queue.peek_time()
    }

    /// Processes every event due at or before `until`, and moves the clock to `until`.
    pub fn advance_to(&mut self, until: SimTime) -> Result<()> {
        if !self.started {
            self.started = true;
            self.start();
        }
        self.run_loop(Some(until), u64::MAX)?;
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        if until > self.now {
            if until >= time::LIMIT {
                return Err(overflow(self.now));
            }
            if until >= self.observe_at {
                self.observe(until);
            }
            self.now = until;
        }
        Ok(())
    }

    /// Job `job` issues `op` (`kind`) of `len` bytes at byte `offset`, at the simulated instant
    /// `at` (the clock first moves there; an instant already past counts as now).
    pub fn inject(&mut self, at: SimTime, job: usize, op: Op, kind: Kind, offset: u64, len: u64) -> Result<CmdId> {
        if job >= self.runner.job_count() {
            return Err(Error::workload("emulate.queue", job.to_string(), format!("must be below the number of jobs ({})", self.runner.job_count())));
        }
        self.advance_to(at)?;
        let io = Io { op, offset, len };
        let cmd = self.inject_io(job, io, kind);
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        Ok(cmd)
    }

    /// The injected commands that completed since the last call, each with the instant the
    /// host saw it complete.
    pub fn take_done(&mut self, into: &mut Vec<(CmdId, SimTime)>) {
        self.runner.take_done(into);
    }
}
