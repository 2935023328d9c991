//! Replayed traces for the runner: `workload.replay` feeds every job, or each tenant with a
//! trace of its own feeds its jobs. A timed replay issues each record at its own time (a
//! record that finds its job's slots full waits); closed-loop replay keeps each job's
//! `iodepth` filled from the trace.

use super::{Ctx, Event, Out, Runner, MAX_BACKLOG};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::sim::SimTime;
use crate::workload::replay::Replay;
use crate::workload::Io;

/// The trace replays of a run and the replay each job takes its I/Os from: `workload.replay`
/// feeds every job; otherwise each tenant with a trace of its own feeds its jobs.
pub(super) fn open(config: &Config, n: usize) -> Result<(Vec<Source>, Vec<Option<usize>>)> {
    let w = &config.workload;
    let mut sources = Vec::new();
    let mut job_source = vec![None; n];
    if let Some(r) = Replay::open(&w.replay, n, w.offset.0, config.region_size_of(w), w.number_ios, w.runtime)? {
        job_source.fill(Some(0));
        sources.push(Source { replay: Box::new(r), first: 0, jobs: n, next: None });
    } else {
        // A tenant's own trace feeds its jobs, over its namespace.
        let all = config.jobs();
        let mut j = 0;
        while j < all.len() {
            let (_, path, jw, tenant) = &all[j];
            let count = all[j..].iter().take_while(|x| x.3 == *tenant).count();
            let idx = config.tenants.iter().enumerate().find(|(i, t)| crate::tenant::tenant_name(t, *i) == *tenant).map(|(i, _)| i);
            if let Some(rc) = idx.and_then(|i| config.tenants[i].workload.replay.as_ref()) {
                let r = Replay::open(rc, count, jw.offset.0, config.region_size_of(jw), jw.number_ios, jw.runtime).map_err(|e| e.rebased("workload", path))?;
                if let Some(r) = r {
                    for slot in &mut job_source[j..j + count] {
                        *slot = Some(sources.len());
                    }
                    sources.push(Source { replay: Box::new(r), first: j, jobs: count, next: None });
                }
            }
            j += count;
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
