//! The fio job runner: what each job (one thread) issues and when, as fio decides it.
//!
//! Each job draws I/Os from its generator (closed loop at `iodepth`, pausing `thinktime`
//! after a completion, or open loop at a rate with a backlog of arrivals), or from a replayed
//! trace (`sources`). fio's control loops decide when it may issue: bandwidth and IOPS caps,
//! minimum rates and the latency-target search ([`super::control`]), flow groups
//! (`flow`), fsync after N writes and at the end, and in zone mode the zones' write locks and
//! resets (`zoned`). Jobs start after `startdelay` or the jobs they `wait_for`; one that ends
//! may stop others (`exitall` and its scopes).
//!
//! Each I/O it decides on enters the host as a system call ([`Out::Submit`]); the host tells it
//! when the application sees the I/O complete ([`Runner::completed`]).
//!
//! Leaves out: fio's verify phase, and I/O engines other than a block device's (the job file
//! reader refuses them).

mod flow;
pub mod metrics;
mod sources;
mod zoned;

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::control::{Control, Limits, Pace, Verdict};
use super::zbd::{ZbdJob, ZoneView};
use super::{ExitScope, Io, JobGen, ReplayConfig, WorkloadConfig};
use crate::cmd::{Command, Origin};
use crate::error::{Error, Result};
use crate::host::Thread;
use crate::ids::{CmdId, JobId, TenantId};
use crate::io::{Kind, Op};
use crate::sim::{SimDuration, SimTime};
use crate::stats::{fio_bucket, Metrics, DEPTH_STARTS};
use metrics::HOST_IODEPTH_LEVEL;
use sources::Source;

/// Open-loop arrivals a job may hold back before the run fails as unsustainable.
const MAX_BACKLOG: usize = 1 << 22;

/// The runner's own events.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// An open-loop arrival for a job (or a closed-loop job done thinking).
    Arrival { job: JobId },
    /// A closed-loop job starts (after its `startdelay`), or may go on after a rate wait: it
    /// fills its free slots.
    Wake { job: JobId },
    /// The next record of timed trace replay `source` arrives.
    TraceArrival { source: u16 },
}

/// What the runner hands the router, with the instant it takes effect.
#[derive(Clone, Copy, Debug)]
pub enum Out {
    /// One of the runner's own events.
    Wake(Event),
    /// A job's I/O (`cmd`, in the command table) enters the host: its system call.
    Submit { cmd: CmdId },
    /// A job calls fsync: it issues nothing until the host says its dirty pages are written.
    Fsync { job: JobId },
}

/// The runner's view of the simulation while it handles an input.
pub type Ctx<'a> = crate::cmd::Ctx<'a, Out>;

/// What a job waits for before it issues again: nothing, or its queue to drain and then its
/// rate schedule (a capped job ahead of it), a new latency window, or the latency search's
/// last window (which restarts the job's statistics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hold {
    None,
    Pace(SimTime),
    /// zbd: the queue drains, then the job resets this zone (and waits for the reset).
    Reset(usize),
    Resetting,
    /// zbd: the zone of the job's next write has a write in flight.
    ZoneBusy,
}

/// The latency-target search waits for the job's queue to drain: before a new window, or
/// before its last one (which restarts the job's statistics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LatWait {
    None,
    Search,
    Final,
}

/// One thread: its generator, tenant, and I/Os in flight or held back.
struct Job {
    gen: JobGen,
    name: String,
    tenant: TenantId,
    inflight: u32,
    iodepth: u32,
    thinktime: SimDuration,
    /// fio's control loops: bandwidth caps, minimum rates, the latency-target search.
    ctl: Control,
    /// When the job starts (fio's `startdelay`).
    start: SimTime,
    /// What the job waits for before it issues more, and whether its latency search waits
    /// for the queue to drain.
    hold: Hold,
    lat_wait: LatWait,
    /// The job is running (its start delay over, the jobs it waits for ended).
    started: bool,
    /// Why the job ended early, in fio's words.
    error: Option<String>,
    /// fio's reporting group, which jobs stop when this one ends (and only on an error), and
    /// whether it has ended (issued all it will and seen it complete).
    group: u32,
    exit_scope: ExitScope,
    exit_on_error: bool,
    finished: bool,
    /// fio's zbd mode: the job's options and state, and an I/O it holds back (already placed
    /// by zbd, or not yet).
    zbd: Option<ZbdJob>,
    pending: Option<(Io, bool)>,
    /// fio's `wait_for`: the jobs this one starts after, and its runtime (counted from then).
    waits_for: Vec<usize>,
    runtime: Option<SimDuration>,
    /// Open loop: arrivals waiting for a free slot (a replayed record carries its I/O).
    backlog: VecDeque<(SimTime, Option<Io>)>,
    /// Through the page cache (`direct = false`).
    buffered: bool,
    /// Its I/O engine (unset: the host's) and I/Os per submitting system call.
    engine: Option<crate::host::Engine>,
    batch: u32,
    /// fsync after this many writes (0: never), and at the end.
    fsync_every: u32,
    end_fsync: bool,
    writes_since_sync: u32,
    /// An fsync is under way (the job issues nothing meanwhile).
    syncing: bool,
    /// An fsync is due once the I/Os in flight finish.
    sync_due: bool,
    /// The end-of-job fsync has been issued.
    ended: bool,
    /// fio's flow control: the job's group and its share of the group's weight, the I/Os it
    /// issued under it, how long it waits when held back, and whether it is held back.
    flow: Option<(usize, f64)>,
    flow_weight: f64,
    flow_issued: u64,
    flow_sleep: SimDuration,
    flow_held: bool,
}

/// One job as the runner starts it.
#[derive(Clone, Debug)]
pub struct JobPlan {
    pub name: String,
    /// The config path its keys come from (`workload`, `workload.jobs[1]`, `tenants[0].workload`).
    pub path: String,
    pub workload: WorkloadConfig,
    pub tenant: String,
    /// Bytes of the region it addresses, from its `offset`.
    pub region: u64,
}

/// A replayed trace and the jobs it feeds: jobs `first..first + jobs`, over `region` bytes
/// from `offset`, for at most `number_ios` I/Os and `runtime`.
#[derive(Clone, Debug)]
pub struct ReplayPlan {
    pub replay: ReplayConfig,
    /// The config path of the workload that names it (problems are reported under it), or
    /// empty for `workload.replay`.
    pub path: String,
    pub first: usize,
    pub jobs: usize,
    pub offset: u64,
    pub region: u64,
    pub number_ios: Option<u64>,
    pub runtime: Option<SimDuration>,
}

/// The zones of a zoned drive as fio's zbd jobs find them when they start (a zone report).
#[derive(Clone, Copy, Debug)]
pub struct ZonePlan {
    pub zone_bytes: u64,
    pub zones: usize,
    /// Every zone full (after a sequential fill), else every zone empty.
    pub full: bool,
    /// Zones a job may keep open (fio's `max_open_zones`, within the drive's limit).
    pub max_open: usize,
}

/// What the runner is built from (the config assembles it).
#[derive(Clone, Debug)]
pub struct Plan {
    pub jobs: Vec<JobPlan>,
    pub replays: Vec<ReplayPlan>,
    pub zones: Option<ZonePlan>,
    /// `workload.ramp_time`: the control loops' statistics start after it.
    pub ramp_time: SimDuration,
    /// `workload.rate_iops` (named when a job cannot keep up with it).
    pub rate_iops: u64,
}

/// The jobs of a run and fio's rules for them.
pub struct Runner {
    jobs: Vec<Job>,
    /// Per job: I/Os by the job's queue depth when each was issued (fio's `iodepth_level`).
    depth_level: Vec<[u64; 7]>,
    tenants: Vec<String>,
    rate_iops: u64,
    /// I/Os issued by each flow group's jobs.
    flow_issued: Vec<u64>,
    /// Trace replays (`workload.replay.trace` for every job, or a tenant's for its jobs).
    sources: Vec<Source>,
    /// Per job: the replay it takes its I/Os from, if any.
    job_source: Vec<Option<usize>>,
    /// The zoned drive as fio's zbd jobs see it, and per zone the writes held for its write
    /// lock (job, I/O, arrival), oldest first.
    zones: Option<Box<ZoneView>>,
    zone_waits: FxHashMap<usize, VecDeque<(usize, Io, SimTime)>>,
    /// Emulation (`ssdlab serve`): the jobs issue nothing of their own; each I/O comes from
    /// outside ([`Runner::inject`]), and each that completes is kept for the caller
    /// ([`Runner::take_done`]) with the instant the application sees it complete.
    external: Option<Vec<(CmdId, SimTime)>>,
}

impl Runner {
    pub fn new(plan: &Plan) -> Result<Self> {
        let mut tenants: Vec<String> = Vec::new();
        let mut jobs = plan
            .jobs
            .iter()
            .enumerate()
            .map(|(j, p)| {
                let (name, jw, tenant, region) = (p.name.clone(), &p.workload, p.tenant.clone(), p.region);
                let t = tenants.iter().position(|n| *n == tenant).unwrap_or_else(|| {
                    tenants.push(tenant);
                    tenants.len() - 1
                });
                Ok(Job {
                    gen: JobGen::new(jw, region, j as u32)?,
                    name,
                    tenant: TenantId(t as u16),
                    inflight: 0,
                    iodepth: jw.iodepth,
                    thinktime: jw.thinktime,
                    ctl: Control::new(&limits(jw, plan.ramp_time), SimTime::ZERO + jw.startdelay, jw.iodepth),
                    start: SimTime::ZERO + jw.startdelay,
                    hold: Hold::None,
                    lat_wait: LatWait::None,
                    started: false,
                    error: None,
                    group: jw.group,
                    exit_scope: jw.exit_scope,
                    exit_on_error: jw.exit_on_error,
                    finished: false,
                    waits_for: Vec::new(),
                    runtime: jw.runtime,
                    zbd: zoned::zbd_job(jw, region),
                    pending: None,
                    backlog: VecDeque::new(),
                    buffered: !jw.direct,
                    engine: jw.ioengine,
                    batch: jw.iodepth_batch,
                    fsync_every: jw.fsync,
                    end_fsync: jw.end_fsync,
                    writes_since_sync: 0,
                    syncing: false,
                    sync_due: false,
                    ended: false,
                    flow: (jw.flow > 0).then_some((jw.flow_id as usize, f64::from(jw.flow))),
                    flow_weight: f64::from(jw.flow),
                    flow_issued: 0,
                    flow_sleep: jw.flow_sleep,
                    flow_held: false,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let n = jobs.len();
        for (j, p) in plan.jobs.iter().enumerate() {
            if let Some(name) = &p.workload.wait_for {
                let dotted = format!("{name}.");
                jobs[j].waits_for = (0..n).filter(|&k| k != j && (jobs[k].name == *name || jobs[k].name.starts_with(&dotted))).collect();
            }
        }
        let groups = flow::shares(&mut jobs);
        let (sources, job_source) = sources::open(&plan.replays, n)?;
        let zones = zoned::zone_view(plan.zones.as_ref(), &jobs);
        Ok(Runner {
            depth_level: vec![[0; 7]; n],
            jobs,
            tenants,
            rate_iops: plan.rate_iops,
            flow_issued: vec![0; groups],
            sources,
            job_source,
            zones,
            zone_waits: FxHashMap::default(),
            external: None,
        })
    }

    /// What the host needs to know of each job's thread.
    pub fn threads(&self) -> Vec<Thread> {
        self.jobs.iter().map(|j| Thread { tenant: j.tenant, buffered: j.buffered, writes: j.gen.writes(), extent: j.gen.extent(), engine: j.engine, batch: j.batch }).collect()
    }

    /// Jobs (threads, queue pairs).
    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }

    pub fn job_names(&self) -> Vec<String> {
        self.jobs.iter().map(|j| j.name.clone()).collect()
    }

    /// Per job: why it ended early (fio's error message), if it did, and the depth its
    /// latency-target search settled on, if it has one.
    pub fn job_outcomes(&self) -> Vec<(Option<String>, Option<u32>)> {
        self.jobs.iter().map(|j| (j.error.clone(), j.ctl.latency_depth())).collect()
    }

    /// The tenant of every job.
    pub fn job_tenants(&self) -> Vec<TenantId> {
        self.jobs.iter().map(|j| j.tenant).collect()
    }

    /// Tenant names, by [`TenantId`].
    pub fn tenant_names(&self) -> &[String] {
        &self.tenants
    }

    /// What the replays did, added up (`None` without a trace).
    pub fn replay_summary(&self) -> Option<crate::workload::replay::ReplaySummary> {
        let mut it = self.sources.iter().map(|s| s.replay.summary());
        let mut sum = it.next()?;
        for x in it {
            sum += x;
        }
        Some(sum)
    }

    /// Fraction of the work done, 0 to 1.
    pub fn progress(&self, now: SimTime) -> f64 {
        let n = self.jobs.len().max(1) as f64;
        (0..self.jobs.len())
            .map(|j| match self.job_source[j] {
                Some(s) => self.sources[s].replay.progress(),
                None => self.jobs[j].gen.progress(now),
            })
            .sum::<f64>()
            / n
    }

    /// Whether any job still has I/O in flight or to issue (the cgroup controller's QoS
    /// period goes on while one has).
    pub fn active(&self, now: SimTime) -> bool {
        // An emulated drive's host may always send more.
        self.external.is_some()
            || (0..self.jobs.len()).any(|j| {
                self.jobs[j].inflight > 0
                    || match self.job_source[j] {
                        Some(s) => self.sources[s].replay.may_issue(now),
                        None => self.jobs[j].gen.may_issue(now),
                    }
            })
    }

    /// fio's `iodepth_level`, for statistics.
    pub fn publish(&self, m: &mut Metrics) {
        let flat: Vec<u64> = self.depth_level.iter().flatten().copied().collect();
        m.counts(&HOST_IODEPTH_LEVEL, &flat);
    }

    /// Starts every job: closed-loop jobs fill their queue depth, open-loop jobs arm arrivals
    /// (jobs that replay a trace take its records; jobs that wait for others, later).
    pub fn start(&mut self, ctx: &mut Ctx) {
        if self.external.is_some() {
            return;
        }
        for source in 0..self.sources.len() {
            self.start_replay(ctx, source);
        }
        for job in 0..self.jobs.len() {
            if self.job_source[job].is_some() || !self.jobs[job].waits_for.is_empty() {
                continue;
            }
            self.begin(ctx, job);
        }
    }

    /// `job` begins: at once, or after its start delay.
    fn begin(&mut self, ctx: &mut Ctx, job: usize) {
        let j = &mut self.jobs[job];
        let start = j.start.max(ctx.now);
        if !j.waits_for.is_empty() {
            // After the jobs it waited for: schedules and runtime count from here.
            j.gen.begin(start, j.runtime);
            j.ctl.begin(start);
        }
        if j.gen.open_loop() {
            ctx.at(start, Out::Wake(Event::Arrival { job: JobId(job as u32) }));
        } else if start > ctx.now {
            ctx.at(start, Out::Wake(Event::Wake { job: JobId(job as u32) }));
        } else {
            j.started = true;
            self.fill(ctx, job);
            self.check_end(ctx, job);
        }
    }

    /// The runner's own events.
    #[inline]
    pub fn handle(&mut self, ctx: &mut Ctx, ev: Event) {
        match ev {
            Event::Arrival { job } => self.on_arrival(ctx, job.index()),
            Event::Wake { job } => {
                let j = &mut self.jobs[job.index()];
                j.started = true;
                if matches!(j.hold, Hold::Pace(_)) {
                    j.hold = Hold::None;
                }
                self.fill(ctx, job.index());
                self.check_end(ctx, job.index());
            }
            Event::TraceArrival { source } => self.on_trace_arrival(ctx, usize::from(source)),
        }
    }

    fn on_arrival(&mut self, ctx: &mut Ctx, job: usize) {
        let now = ctx.now;
        self.jobs[job].started = true;
        if !self.jobs[job].gen.may_issue(now) {
            self.check_end(ctx, job);
            return;
        }
        let j = &self.jobs[job];
        let free = j.hold == Hold::None && j.lat_wait == LatWait::None && j.inflight < j.ctl.depth(j.iodepth);
        if !free && !j.gen.open_loop() {
            // A thinking thread held back (a drain, a reset, its search's depth): it goes on
            // when the hold clears.
            return;
        }
        if free {
            self.issue(ctx, job, now, false);
        } else if self.jobs[job].backlog.len() >= MAX_BACKLOG {
            ctx.fail(Error::workload(
                "workload.rate_iops",
                self.rate_iops.to_string(),
                format!("job {job}: more than {MAX_BACKLOG} arrivals wait for a free iodepth slot: the device cannot sustain this rate"),
            ));
        } else {
            self.jobs[job].backlog.push_back((now, None));
            self.jobs[job].gen.reserve_one();
        }
        if let Some(next) = self.jobs[job].gen.next_arrival(now) {
            ctx.at(next, Out::Wake(Event::Arrival { job: JobId(job as u32) }));
        }
    }

    /// Starts a new I/O of `job` that arrived at `arrival`. An I/O that waited in the backlog
    /// was counted against the job's limit when it arrived (`reserved`).
    fn issue(&mut self, ctx: &mut Ctx, job: usize, arrival: SimTime, reserved: bool) {
        if self.flow_holds(ctx, job) {
            return;
        }
        if let Some((io, placed)) = self.jobs[job].pending.take() {
            if placed {
                self.issue_zoned(ctx, job, io, arrival);
            } else {
                self.place(ctx, job, io, arrival);
            }
            return;
        }
        let j = &mut self.jobs[job];
        if j.ctl.paced() && !reserved {
            let drawn = j.gen.draw_op();
            match j.ctl.pace(ctx.now, drawn, j.gen.mixed()) {
                Pace::Now(op) => {
                    let io = j.gen.io_for(op);
                    j.ctl.issued(op, io.len);
                    self.place(ctx, job, io, arrival);
                }
                Pace::Wait(t) => {
                    // Ahead of schedule: fio lets the queue drain, then sleeps until it is due.
                    j.hold = Hold::Pace(t);
                    if j.inflight == 0 {
                        ctx.at(t, Out::Wake(Event::Wake { job: JobId(job as u32) }));
                    }
                }
            }
            return;
        }
        let gen = &mut j.gen;
        let io = if reserved { gen.next_reserved_io() } else { gen.next_io() };
        self.place(ctx, job, io, arrival);
    }

    /// Issues closed-loop I/Os while `job` has free slots at its current depth, work left, and
    /// nothing to wait for.
    fn fill(&mut self, ctx: &mut Ctx, job: usize) {
        let now = ctx.now;
        loop {
            let j = &self.jobs[job];
            if j.hold != Hold::None
                || j.lat_wait != LatWait::None
                || j.syncing
                || j.ended
                || j.inflight >= j.ctl.depth(j.iodepth)
                || j.gen.open_loop()
                || !j.gen.may_issue(now)
                || self.job_source[job].is_some()
                || self.external.is_some()
            {
                return;
            }
            let before = (j.inflight, j.hold);
            self.issue(ctx, job, now, false);
            let j = &self.jobs[job];
            if (j.inflight, j.hold) == before {
                return; // held back by its flow
            }
        }
    }

    /// Starts `io` for `job`, arrived at `arrival`: the job counts it in flight, and it enters
    /// the host as a system call (a write with its placement identifier and NVMe command, a
    /// trim with its ranges).
    fn issue_io(&mut self, ctx: &mut Ctx, job: usize, io: Io, arrival: SimTime) {
        self.count_in_flight(job);
        let state = &mut self.jobs[job];
        if io.op == Op::Write && state.fsync_every > 0 {
            // fio's fsync=N: after the N-th write is issued, an fsync once the writes are done.
            state.writes_since_sync += 1;
            state.sync_due |= state.writes_since_sync >= state.fsync_every;
        }
        let mut c = Command::new(state.tenant, JobId(job as u32), io.op, io.offset, io.len, arrival);
        match io.op {
            Op::Write => {
                if let Some(pid) = state.gen.placement_id() {
                    c.pid = pid;
                }
                c.kind = state.gen.write_kind();
            }
            // fio's zbd mode trims by resetting the zone (Zone Management Send).
            Op::Trim if state.zbd.is_some() => c.kind = Kind::ZoneReset,
            Op::Trim => {
                c.kind = Kind::Deallocate;
                c.ranges = state.gen.trim_ranges(io);
                if let Some(r) = &c.ranges {
                    c.len = r.iter().map(|x| x.1).sum();
                }
            }
            Op::Read | Op::Flush => {}
        }
        let cmd = ctx.cmds.insert(c);
        ctx.at(ctx.now, Out::Submit { cmd });
    }

    /// One more I/O of `job` is in flight (fio's `iodepth_level` counts the depth it found).
    #[inline]
    fn count_in_flight(&mut self, job: usize) {
        let state = &mut self.jobs[job];
        state.inflight += 1;
        self.depth_level[job][fio_bucket(u64::from(state.inflight), &DEPTH_STARTS)] += 1;
    }

    /// `job` calls fsync: it issues nothing until the dirty pages are on the device.
    fn start_fsync(&mut self, ctx: &mut Ctx, job: usize) {
        self.jobs[job].syncing = true;
        ctx.at(ctx.now, Out::Fsync { job: JobId(job as u32) });
    }

    /// `job`'s fsync returned: it goes on with its I/O.
    pub fn fsync_done(&mut self, ctx: &mut Ctx, job: JobId) {
        let job = job.index();
        let state = &mut self.jobs[job];
        state.syncing = false;
        state.writes_since_sync = 0;
        if state.ended {
            return;
        }
        self.fill(ctx, job);
        self.maybe_end_fsync(ctx, job);
    }

    /// A job with nothing left to issue calls its end-of-job fsync (`end_fsync`).
    fn maybe_end_fsync(&mut self, ctx: &mut Ctx, job: usize) {
        let state = &self.jobs[job];
        if state.end_fsync && !state.ended && !state.syncing && state.inflight == 0 && state.backlog.is_empty() && self.job_source[job].is_none() && !state.gen.may_issue(ctx.now) {
            self.jobs[job].ended = true;
            self.start_fsync(ctx, job);
        }
    }

    /// A command of the job has completed (`op` of `len` bytes at `offset`, `latency` after it
    /// was issued). An I/O: the job's slot frees, its control loops look at it, and the job
    /// issues its next I/O; a zone reset: the job goes on with the zone.
    #[inline]
    pub fn completed(&mut self, ctx: &mut Ctx, cmd: CmdId) {
        let now = ctx.now;
        let c = &ctx.cmds[cmd];
        let (job, origin, op, len, offset, latency) = (c.job.index(), c.origin, c.op, c.len, c.offset, now.since(c.issued));
        ctx.cmds.remove(cmd);
        if let Some(done) = &mut self.external {
            done.push((cmd, now));
        }
        if origin == Origin::ZoneMgmt {
            // A zone reset the job sent for itself: no I/O of the job.
            self.zone_reset_done(ctx, job, offset);
            return;
        }
        let state = &mut self.jobs[job];
        state.inflight -= 1;
        match state.ctl.completed(op, len, latency, now) {
            Verdict::Go => {}
            Verdict::Drain => state.lat_wait = LatWait::Search,
            Verdict::FinalRun => state.lat_wait = LatWait::Final,
            Verdict::Done => {
                state.gen.stop();
                state.backlog.clear();
            }
            Verdict::Error(e) => {
                state.error = Some(format!("{}: {e}", state.name));
                state.gen.stop();
                state.backlog.clear();
            }
        }
        if state.inflight == 0 {
            match std::mem::replace(&mut state.lat_wait, LatWait::None) {
                LatWait::None => {}
                LatWait::Search => state.ctl.drained(now),
                LatWait::Final => {
                    // fio's reset_all_stats: the job's statistics start again at the depth found.
                    state.ctl.drained(now);
                    ctx.probe.reset_job(job, now);
                }
            }
            match state.hold {
                Hold::Pace(t) => ctx.at(t.max(now), Out::Wake(Event::Wake { job: JobId(job as u32) })),
                Hold::Reset(zone) => self.reset_when_idle(ctx, job, zone),
                Hold::None | Hold::Resetting | Hold::ZoneBusy => {}
            }
        }
        if self.zones.is_some() {
            self.zone_io_done(ctx, job, op, offset);
        }
        let state = &mut self.jobs[job];
        if state.sync_due {
            // fsync once the I/Os in flight are done; the job issues nothing meanwhile.
            if state.inflight == 0 {
                state.sync_due = false;
                self.start_fsync(ctx, job);
            }
            return;
        }
        match state.backlog.pop_front() {
            Some((arrival, Some(io))) => self.issue_io(ctx, job, io, arrival),
            Some((arrival, None)) => self.issue(ctx, job, arrival, true),
            // Closed-loop replay: the job takes the trace's next record (timed replay waits
            // for the record's own arrival).
            None if self.job_source[job].is_some() => {
                let source = self.job_source[job].unwrap_or_default();
                let closed = !self.sources[source].replay.timed();
                if let Some((_, io, _)) = closed.then(|| self.replay_record(ctx, source)).flatten() {
                    self.issue_io(ctx, job, io, now);
                }
            }
            None if !state.gen.open_loop() && state.gen.may_issue(now) => {
                let think = state.thinktime;
                if think > SimDuration::ZERO {
                    // The thread thinks, then issues (through the arrival path, which checks limits).
                    ctx.at(now + think, Out::Wake(Event::Arrival { job: JobId(job as u32) }));
                } else {
                    self.fill(ctx, job);
                }
            }
            None => {
                self.maybe_end_fsync(ctx, job);
                let s = &self.jobs[job];
                if s.flow.is_some() && s.inflight == 0 && !s.gen.may_issue(now) {
                    self.flow_exit(ctx, job);
                }
            }
        }
        self.check_end(ctx, job);
    }

    /// Emulation: from now on the jobs issue only what [`Runner::inject`] hands them.
    pub fn serve_externally(&mut self) {
        self.external.get_or_insert_with(Vec::new);
    }

    /// Emulation: `job` issues `io` now, as NVMe command `kind` (a write's, a trim's (which
    /// deallocates the I/O's one range) or a Flush, sent as a write of nothing). The command enters the host like any of the job's.
    pub fn inject(&mut self, ctx: &mut Ctx, job: usize, io: Io, kind: Kind) -> CmdId {
        self.count_in_flight(job);
        let state = &self.jobs[job];
        let mut c = Command::new(state.tenant, JobId(job as u32), io.op, io.offset, io.len, ctx.now);
        c.kind = kind;
        if kind == Kind::Flush {
            c.origin = Origin::Flush;
        }
        let cmd = ctx.cmds.insert(c);
        ctx.at(ctx.now, Out::Submit { cmd });
        cmd
    }

    /// Emulation: the injected commands that completed since the last call, each with the
    /// instant the host saw it complete, in that order.
    pub fn take_done(&mut self, into: &mut Vec<(CmdId, SimTime)>) {
        if let Some(done) = &mut self.external {
            into.append(done);
        }
    }

    /// If `job` has ended (nothing in flight, nothing more to issue), fio's `exitall` stops the
    /// jobs of its `exit_scope`: they issue nothing more and finish what they have in flight.
    /// Jobs waiting for it (`wait_for`) whose other waitees have ended begin.
    fn check_end(&mut self, ctx: &mut Ctx, job: usize) {
        let j = &self.jobs[job];
        let started = j.waits_for.iter().all(|&w| self.jobs[w].finished);
        if j.finished || !started || j.inflight > 0 || j.syncing || !j.backlog.is_empty() || j.gen.may_issue(ctx.now) {
            return;
        }
        self.jobs[job].finished = true;
        let j = &self.jobs[job];
        let mut stopped = Vec::new();
        if j.exit_scope != ExitScope::None && !(j.exit_on_error && j.error.is_none()) {
            let (scope, group) = (j.exit_scope, j.group);
            for (k, other) in self.jobs.iter_mut().enumerate() {
                // fio's TERMINATE_STONEWALL stops the jobs running; `all` also those waiting.
                let hit = match scope {
                    ExitScope::Group => other.group == group,
                    ExitScope::Stonewall => other.started,
                    ExitScope::All => true,
                    ExitScope::None => false,
                };
                if k != job && hit {
                    other.gen.stop();
                    other.backlog.clear();
                    stopped.push(k);
                }
            }
        }
        for k in stopped {
            self.check_end(ctx, k);
        }
        for k in 0..self.jobs.len() {
            let w = &self.jobs[k].waits_for;
            if w.contains(&job) && w.iter().all(|&x| self.jobs[x].finished) {
                self.begin(ctx, k);
                // A job stopped before it began ends at once.
                self.check_end(ctx, k);
            }
        }
    }
}

/// The control limits a job's workload sets.
fn limits(w: &WorkloadConfig, ramp_time: SimDuration) -> Limits {
    let pair = |r: Option<super::Rates>| r.map_or([0; 2], |r| [r.read, r.write]);
    Limits {
        rate: pair(w.rate),
        rate_min: pair(w.rate_min),
        rate_iops_min: w.rate_iops_min.map_or([0; 2], |r| [r.read, r.write]),
        rate_cycle: w.rate_cycle,
        latency_target: w.latency_target,
        latency_window: w.latency_window,
        latency_percentile: w.latency_percentile,
        latency_run: w.latency_run,
        ramp_time,
    }
}
