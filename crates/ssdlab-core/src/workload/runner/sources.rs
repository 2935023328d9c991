//! Replayed traces for the runner: `workload.replay` feeds every job, or each tenant with a
//! trace of its own feeds its jobs. A timed replay issues each record at its own time (a
//! record that finds its job's slots full waits); closed-loop replay keeps each job's
//! `iodepth` filled from the trace.

use super::{Ctx, Event, Out, ReplayPlan, Runner, MAX_BACKLOG};
use crate::error::{Error, Result};
use crate::sim::SimTime;
use crate::workload::replay::Replay;
use crate::workload::Io;

/// Opens the trace replays of `plans` for a run of `n` jobs: the replays, and the one each
/// job takes its I/Os from.
pub(super) fn open(plans: &[ReplayPlan], n: usize) -> Result<(Vec<Source>, Vec<Option<usize>>)> {
    let mut sources = Vec::new();
    let mut job_source = vec![None; n];
    for p in plans {
        let r = Replay::open(&p.replay, p.jobs, p.offset, p.region, p.number_ios, p.runtime).map_err(|e| if p.path.is_empty() { e } else { e.rebased("workload", &p.path) })?;
        if let Some(r) = r {
            for slot in &mut job_source[p.first..p.first + p.jobs] {
                *slot = Some(sources.len());
            }
            sources.push(Source { replay: Box::new(r), first: p.first, jobs: p.jobs, next: None });
        }
    }
    Ok((sources, job_source))
}

/// A trace replay and the jobs it feeds (its job `k` is the host's job `first + k`), with its
/// next record (timed replay).
pub(super) struct Source {
    pub(super) replay: Box<Replay>,
    first: usize,
    jobs: usize,
    next: Option<(usize, Io)>,
}

impl Runner {
    /// The next record of replay `source` (`None` at its end or on an error, which stops the
    /// run), with the host's job that issues it.
    pub(super) fn replay_record(&mut self, ctx: &mut Ctx, source: usize) -> Option<(usize, Io, SimTime)> {
        let s = self.sources.get_mut(source)?;
        match s.replay.next(ctx.now) {
            Ok(r) => r.map(|(job, io, at)| (s.first + job, io, at)),
            Err(e) => {
                ctx.fail(e);
                None
            }
        }
    }

    pub(super) fn start_replay(&mut self, ctx: &mut Ctx, source: usize) {
        if self.sources[source].replay.timed() {
            if let Some((job, io, at)) = self.replay_record(ctx, source) {
                self.sources[source].next = Some((job, io));
                ctx.at(at, Out::Wake(Event::TraceArrival { source: source as u16 }));
            }
            return;
        }
        let (first, jobs) = (self.sources[source].first, self.sources[source].jobs);
        for job in first..first + jobs {
            for _ in 0..self.jobs[job].iodepth {
                let Some((_, io, _)) = self.replay_record(ctx, source) else { return };
                self.issue_io(ctx, job, io, SimTime::ZERO);
            }
        }
    }

    /// A timed replay's record arrives: issued if its job has a free slot, else it waits.
    pub(super) fn on_trace_arrival(&mut self, ctx: &mut Ctx, source: usize) {
        let now = ctx.now;
        let Some((job, io)) = self.sources.get_mut(source).and_then(|s| s.next.take()) else { return };
        if self.jobs[job].inflight < self.jobs[job].iodepth {
            self.issue_io(ctx, job, io, now);
        } else if self.jobs[job].backlog.len() >= MAX_BACKLOG {
            ctx.fail(Error::workload(
                "workload.replay.trace",
                String::new(),
                format!("job {job}: more than {MAX_BACKLOG} trace records wait for a free iodepth slot: the device cannot keep up with the trace (raise workload.replay.time_scale or iodepth)"),
            ));
        } else {
            self.jobs[job].backlog.push_back((now, Some(io)));
        }
        if let Some((job, io, at)) = self.replay_record(ctx, source) {
            self.sources[source].next = Some((job, io));
            ctx.at(at.max(now), Out::Wake(Event::TraceArrival { source: source as u16 }));
        }
    }
}
