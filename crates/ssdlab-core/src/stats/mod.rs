//! Statistics as an outside observer.
//!
//! The simulation reports each finished I/O as an [`IoRecord`] (tenant, job, direction, size,
//! when it was issued and completed, and where its time went), and blocks report typed
//! [`Record`]s of what they do; the models themselves keep only cumulative counters, which
//! they publish into the [`Metrics`] registry. [`Stats`] aggregates I/O records into counts,
//! bytes, exact mean and extreme latencies, HDR histograms for percentiles (3 significant
//! digits by default) and mean latency breakdowns, per job and so per tenant; [`series`] cuts
//! them (and the device metrics) into intervals. I/Os completing during `ramp_time` are left
//! out, and the registry is reset when the ramp ends, so every figure covers the same window.
//! `simulation::summary` builds the run's results from all of it.

mod config;
pub mod metrics;
pub mod series;
pub mod steady;

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

pub use config::StatsConfig;
pub use metrics::{Kind, Metric, MetricInfo, Metrics};
pub use series::{Row, Series, Timeseries};

use crate::ids::{JobId, TenantId};
use crate::io::Op;
use crate::sim::{SimDuration, SimTime, PS_PER_NS, PS_PER_US};

/// Where an I/O's time goes. Every picosecond between issue and completion is in exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// Host software: submission path and completion handling on the host CPU.
    HostSoftware = 0,
    /// Waiting on the host: for the job's CPU, or (open loop) for a free `iodepth` slot.
    HostQueueing = 1,
    /// Waiting in the link and device: for a link direction, an SQ slot to be fetched (tags,
    /// arbitration), a core or engine, a media unit, the internal bus.
    Queueing = 2,
    /// Queue and doorbell handling: the SQ doorbell write over the link, and the controller
    /// taking the doorbell and dispatching the queue (seed 001's "Queue/Doorbells").
    Doorbell = 3,
    /// The SQE fetch: read request to host memory and the entry back (seed 001's "Fetching").
    Fetch = 4,
    /// PRP handling and PRP-list fetch.
    Prp = 5,
    /// Controller work: SQE decode and the FTL's logical-to-physical mapping.
    Controller = 6,
    /// Media access and internal bus.
    Media = 7,
    /// Data over `PCIe` (including host memory latency for writes).
    Transfer = 8,
    /// CQE post, interrupt (or its coalescing delay) until the host sees it.
    Completion = 9,
    /// Waiting for address translations (ATS requests on ATC misses).
    Translation = 10,
    /// Buffered I/O waiting on the page cache: for a device read another I/O started
    /// (readahead), or paced or stopped by the dirty-page limits.
    PageCache = 11,
    /// Waiting for garbage collection: a flash read's wait at its die behind GC's page reads,
    /// programs and erases, and a write's wait for write-buffer space in the share of the
    /// dies' time that GC took meanwhile (the buffer drains only as fast as the dies program).
    Gc = 12,
    /// Waiting for the cached map (`ftl.map_cache`): the flash read of a translation page that a
    /// read's map entry was not cached in DRAM for, and any queueing for it.
    Map = 13,
}

/// Number of [`Component`]s.
pub const COMPONENTS: usize = 14;

impl Component {
    pub const ALL: [Component; COMPONENTS] = [
        Component::HostSoftware,
        Component::HostQueueing,
        Component::Queueing,
        Component::Doorbell,
        Component::Fetch,
        Component::Prp,
        Component::Controller,
        Component::Media,
        Component::Transfer,
        Component::Completion,
        Component::Translation,
        Component::PageCache,
        Component::Gc,
        Component::Map,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Component::HostSoftware => "host_software",
            Component::HostQueueing => "host_queueing",
            Component::Queueing => "queueing",
            Component::Doorbell => "doorbell",
            Component::Fetch => "fetch",
            Component::Prp => "prp",
            Component::Controller => "controller",
            Component::Media => "media",
            Component::Transfer => "transfer",
            Component::Completion => "completion",
            Component::Translation => "translation",
            Component::PageCache => "page_cache",
            Component::Gc => "gc",
            Component::Map => "map",
        }
    }
}

/// Time per component, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Breakdown(pub [u64; COMPONENTS]);

impl Breakdown {
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
}

/// fio's buckets: the index of a count among the buckets starting at `starts` (stat.c:
/// `io_u_mark_depth` starts 1, 2, 4, 8, 16, 32, 64; `io_u_mark_complete` 0, 1, 5, 9, 17, 33,
/// 65).
pub fn fio_bucket(n: u64, starts: &[u64; 6]) -> usize {
    starts.iter().take_while(|&&b| n >= b).count()
}

/// Where fio's `iodepth_level` buckets start (after the first, 1).
pub const DEPTH_STARTS: [u64; 6] = [2, 4, 8, 16, 32, 64];
/// Where fio's `iodepth_complete` buckets start (after the first, 0).
pub const REAP_STARTS: [u64; 6] = [1, 5, 9, 17, 33, 65];

/// One finished I/O, as the simulation reports it.
#[derive(Clone, Copy, Debug)]
pub struct IoRecord<'a> {
    /// The tenant and job that issued it.
    pub tenant: TenantId,
    pub job: JobId,
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    pub issued: SimTime,
    /// When the host wrote the SQ tail doorbell (the end of submission).
    pub submitted: SimTime,
    pub completed: SimTime,
    pub breakdown: &'a Breakdown,
}

/// What a block reports as it works (besides the counters it publishes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// The FTL erased a block (its `erases`-th of the run; 0 is the initial state), leaving
    /// `free_blocks` erased blocks.
    Reclaimed { erases: u64, free_blocks: u32 },
}

/// Anything that watches I/Os finish.
pub trait Observer {
    fn io_completed(&mut self, rec: &IoRecord<'_>);
}

/// Points kept in the free-blocks series before it is thinned by half.
const SERIES_MAX: usize = 4096;

/// Per-I/O columns, kept when asked for (Python turns them into a `DataFrame`).
#[derive(Clone, Debug, Default)]
pub struct IoLog {
    /// The job (its index: each job has its own I/O queue pair) and tenant of each I/O.
    pub job: Vec<u32>,
    pub tenant: Vec<u32>,
    pub op: Vec<u8>,
    pub offset: Vec<u64>,
    pub len: Vec<u64>,
    pub issued_ps: Vec<u64>,
    pub latency_ps: Vec<u64>,
    pub breakdown_ps: [Vec<u64>; COMPONENTS],
}

/// The largest latency the histograms resolve, in nanoseconds.
pub(crate) const HIST_MAX_NS: u64 = 10_000_000_000_000;

/// Moments, extremes and a histogram of one latency.
#[derive(Clone)]
struct LatStats {
    sum: u128,
    sq_sum: f64,
    min: u64,
    max: u64,
    hist: Histogram<u64>,
}

impl LatStats {
    fn new(digits: u8) -> Self {
        LatStats {
            sum: 0,
            sq_sum: 0.0,
            min: u64::MAX,
            max: 0,
            // 1 ns to 10^13 ns (2.8 hours); longer latencies saturate at the top bucket. The
            // counts grow with the largest latency recorded (auto-resize) instead of being
            // allocated for 10^13 ns at once: ~270 KB each at 3 digits, a dozen per run. The
            // quantiles depend only on the precision, not on the range, so results are the same.
            hist: Self::histogram(digits),
        }
    }

    fn histogram(digits: u8) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 2048, digits).unwrap_or_else(|_| Histogram::new_with_bounds(1, 2048, 3).expect("3 digits is a valid HDR precision"));
        h.auto(true);
        h
    }

    fn record(&mut self, ps: u64) {
        self.sum += u128::from(ps);
        self.sq_sum += (ps as f64) * (ps as f64);
        self.min = self.min.min(ps);
        self.max = self.max.max(ps);
        // Histograms count nanoseconds; recording grows an auto-resizing histogram (a failed
        // resize, out of memory, would clamp to its range instead).
        let ns = (ps / PS_PER_NS).clamp(1, HIST_MAX_NS);
        if self.hist.record(ns).is_err() {
            self.hist.saturating_record(ns);
        }
    }

    /// The histogram in fio's bins (stat.c's `plat_val_to_idx`: values below 128 ns exact,
    /// then 64 buckets per power of two), as `(bucket value in ns, count)` with fio's
    /// `plat_idx_to_val` value (the bucket's middle), non-empty buckets only.
    fn fio_bins(&self) -> Vec<(u64, u64)> {
        let mut bins: BTreeMap<u64, u64> = BTreeMap::new();
        for v in self.hist.iter_recorded() {
            let ns = self.hist.median_equivalent(v.value_iterated_to());
            *bins.entry(fio_plat::val_to_idx(ns)).or_insert(0) += v.count_at_value();
        }
        bins.into_iter().map(|(idx, n)| (fio_plat::idx_to_val(idx), n)).collect()
    }

    fn add(&mut self, o: &LatStats) {
        self.sum += o.sum;
        self.sq_sum += o.sq_sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        // Same bounds and precision: adding cannot fail.
        let _ = self.hist.add(&o.hist);
    }

    fn summary(&self, n: u64, extra: &[f64]) -> LatencySummary {
        if n == 0 {
            return LatencySummary::default();
        }
        let nf = n as f64;
        let mean_ps = self.sum as f64 / nf;
        let var = (self.sq_sum / nf - mean_ps * mean_ps).max(0.0);
        // A histogram reports its bucket's upper edge, which can lie past the largest (or below
        // the smallest) latency seen: percentiles are held to the exact extremes.
        let q = |p: f64| {
            let ns = self.hist.value_at_quantile(p / 100.0);
            if ns.saturating_mul(PS_PER_NS) > self.max {
                self.max as f64 / PS_PER_US as f64
            } else if ns.saturating_mul(PS_PER_NS) < self.min {
                self.min as f64 / PS_PER_US as f64
            } else {
                ns as f64 / 1e3
            }
        };
        LatencySummary {
            min: self.min as f64 / PS_PER_US as f64,
            mean: mean_ps / PS_PER_US as f64,
            stddev: var.sqrt() / PS_PER_US as f64,
            p50: q(50.0),
            p90: q(90.0),
            p99: q(99.0),
            p999: q(99.9),
            p9999: q(99.99),
            max: self.max as f64 / PS_PER_US as f64,
            percentiles: extra.iter().map(|&p| (format!("{p}"), q(p))).collect(),
            bins: Vec::new(),
        }
    }
}

/// One direction of one job: total latency (`lat`), and its split at the SQ doorbell into
/// submission (`slat`) and completion (`clat`) latency, as fio reports them.
#[derive(Clone)]
struct OpStats {
    ios: u64,
    bytes: u64,
    lat: LatStats,
    slat: LatStats,
    clat: LatStats,
    breakdown: [u128; COMPONENTS],
}

impl OpStats {
    fn new(digits: u8) -> Self {
        let l = LatStats::new(digits);
        OpStats { ios: 0, bytes: 0, lat: l.clone(), slat: l.clone(), clat: l, breakdown: [0; COMPONENTS] }
    }

    /// Fresh statistics for each direction (read, write, trim).
    fn per_op(digits: u8) -> [OpStats; 3] {
        [OpStats::new(digits), OpStats::new(digits), OpStats::new(digits)]
    }

    /// I/Os over the directions, and the bytes they moved (a trim's range moves none).
    fn totals(ops: &[OpStats; 3]) -> (u64, u64) {
        (ops.iter().map(|o| o.ios).sum(), ops[0].bytes + ops[1].bytes)
    }

    fn add(&mut self, o: &OpStats) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.lat.add(&o.lat);
        self.slat.add(&o.slat);
        self.clat.add(&o.clat);
        for (a, b) in self.breakdown.iter_mut().zip(o.breakdown.iter()) {
            *a += b;
        }
    }
}

/// The aggregating observer.
pub struct Stats {
    from: SimTime,
    digits: u8,
    /// Per job, reads, writes and trims; totals are merged from these when asked for.
    per_job: Vec<[OpStats; 3]>,
    /// Per job: when its statistics last restarted (fio's per-job `reset_all_stats`), if later
    /// than `from`.
    job_from: Vec<SimTime>,
    /// Per job: its first counted I/O's issue and its last completion, so that each job's rates
    /// are over its own time (a start delay left out), as fio's.
    job_first: Vec<SimTime>,
    job_last: Vec<SimTime>,
    last_completion: SimTime,
    extra_percentiles: Vec<f64>,
    /// Completion latencies also in fio's bins.
    fio_bins: bool,
    log: Option<IoLog>,
    series: Option<Series>,
    /// Free blocks after erases: `(seconds, blocks)`, every `gc_step`-th erase, thinned to at
    /// most `SERIES_MAX` points.
    free_blocks: Vec<(f64, u32)>,
    gc_step: u64,
}

impl Stats {
    /// Counts I/Os that complete at or after `from` (the end of the ramp).
    pub fn new(c: &StatsConfig, from: SimTime) -> Self {
        Stats {
            from,
            digits: c.histogram_digits,
            per_job: Vec::new(),
            job_from: Vec::new(),
            job_first: Vec::new(),
            job_last: Vec::new(),
            last_completion: SimTime::ZERO,
            extra_percentiles: c.percentiles.clone(),
            fio_bins: c.fio_bins,
            log: None,
            series: None,
            free_blocks: Vec::new(),
            gc_step: 1,
        }
    }

    /// When the measurement window starts (the end of the ramp).
    pub fn from(&self) -> SimTime {
        self.from
    }

    /// Records a time series.
    pub fn set_series(&mut self, s: Series) {
        self.series = Some(s);
    }

    pub fn series(&self) -> Option<&Series> {
        self.series.as_ref()
    }

    pub fn series_mut(&mut self) -> Option<&mut Series> {
        self.series.as_mut()
    }

    /// Takes a block's record.
    pub fn record(&mut self, now: SimTime, r: Record) {
        match r {
            Record::Reclaimed { erases, free_blocks } => {
                if !erases.is_multiple_of(self.gc_step) {
                    return;
                }
                self.free_blocks.push((now.as_secs_f64(), free_blocks));
                if self.free_blocks.len() >= SERIES_MAX {
                    // Keep every other point (the first stays) and sample half as often from now on.
                    let mut i = 0;
                    self.free_blocks.retain(|_| {
                        i += 1;
                        i % 2 == 1
                    });
                    self.gc_step *= 2;
                }
            }
        }
    }

    /// Free blocks at the start and after GC activations, as `(seconds, blocks)`.
    pub fn free_blocks_over_time(&self) -> &[(f64, u32)] {
        &self.free_blocks
    }

    /// Also keep one row per counted I/O.
    pub fn keep_log(&mut self) {
        self.log = Some(IoLog::default());
    }

    pub fn log(&self) -> Option<&IoLog> {
        self.log.as_ref()
    }

    pub fn ios(&self) -> u64 {
        self.per_job.iter().flatten().map(|o| o.ios).sum()
    }

    /// One direction over all jobs.
    fn merged(&self, op: Op) -> OpStats {
        let mut all = OpStats::new(self.digits);
        for j in &self.per_job {
            all.add(&j[op as usize]);
        }
        all
    }

    /// The measurement window: from the end of the ramp to the last completion.
    pub fn window(&self) -> SimDuration {
        // Once every job has restarted its statistics, the window starts at the earliest restart.
        let restarted = !self.per_job.is_empty() && self.job_from.len() >= self.per_job.len();
        let from = if restarted { self.job_from.iter().copied().min().unwrap_or(self.from).max(self.from) } else { self.from };
        self.last_completion.since(from)
    }

    /// Job `j`'s statistics start again at `now` (the ramp's reset, for one job).
    pub fn reset_job(&mut self, j: usize, now: SimTime) {
        if let Some(ops) = self.per_job.get_mut(j) {
            *ops = OpStats::per_op(self.digits);
        }
        if self.job_from.len() <= j {
            self.job_from.resize(j + 1, self.from);
        }
        self.job_from[j] = now.max(self.from);
    }

    pub fn op_summary(&self, op: Op) -> OpSummary {
        self.summarise(&self.merged(op))
    }

    fn summarise(&self, s: &OpStats) -> OpSummary {
        self.summarise_over(s, self.window())
    }

    /// Job `j`'s own window: from its start (`Stats::job_start`) to its last completion, as
    /// fio's per-job runtime.
    pub fn job_window(&self, j: usize) -> SimDuration {
        self.job_last.get(j).map_or(SimDuration::ZERO, |end| end.since(self.job_start(j)))
    }

    /// When job `j`'s measured time starts: the ramp's end, its own restart, or its first I/O
    /// (after a start delay), whichever is latest.
    fn job_start(&self, j: usize) -> SimTime {
        let from = self.job_from.get(j).copied().unwrap_or(self.from).max(self.from);
        self.job_first.get(j).map_or(from, |&f| if f == SimTime(u64::MAX) { from } else { from.max(f) })
    }

    fn summarise_over(&self, s: &OpStats, window: SimDuration) -> OpSummary {
        let window = window.as_secs_f64();
        let per_sec = |x: f64| if window > 0.0 { x / window } else { 0.0 };
        let extra = &self.extra_percentiles;
        OpSummary {
            ios: s.ios,
            bytes: s.bytes,
            iops: per_sec(s.ios as f64),
            bandwidth_mib_s: per_sec(s.bytes as f64) / 1_048_576.0,
            latency_us: s.lat.summary(s.ios, extra),
            slat_us: s.slat.summary(s.ios, extra),
            clat_us: {
                let mut c = s.clat.summary(s.ios, extra);
                if self.fio_bins {
                    c.bins = s.clat.fio_bins();
                }
                c
            },
            breakdown_us: BreakdownUs::mean(&s.breakdown, s.ios),
        }
    }

    /// Per-tenant results: tenant `t` is named `names[t]` and has the jobs `j` with
    /// `job_tenants[j] == t`.
    pub fn tenant_summaries(&self, names: &[String], job_tenants: &[TenantId]) -> Vec<TenantSummary> {
        names
            .iter()
            .enumerate()
            .map(|(t, name)| {
                let mut ops = OpStats::per_op(self.digits);
                // The tenant's own time: from its jobs' first start to their last completion.
                let (mut first, mut last) = (None::<SimTime>, SimTime::ZERO);
                for (j, stats) in self.per_job.iter().enumerate() {
                    if job_tenants.get(j).map(|x| x.index()) == Some(t) {
                        for (a, b) in ops.iter_mut().zip(stats) {
                            a.add(b);
                        }
                        let from = self.job_start(j);
                        first = Some(first.map_or(from, |f| f.min(from)));
                        last = last.max(self.job_last.get(j).copied().unwrap_or(SimTime::ZERO));
                    }
                }
                let window = first.map_or(SimDuration::ZERO, |f| last.since(f));
                let (ios, bytes) = OpStats::totals(&ops);
                let (per_sec, mib_s) = rates(ios, bytes, window.as_secs_f64());
                TenantSummary {
                    name: name.clone(),
                    ios,
                    bytes,
                    iops: per_sec,
                    bandwidth_mib_s: mib_s,
                    runtime_s: window.as_secs_f64(),
                    read: self.summarise_over(&ops[0], window),
                    write: self.summarise_over(&ops[1], window),
                    trim: self.summarise_over(&ops[2], window),
                    ..TenantSummary::default()
                }
            })
            .collect()
    }

    /// Per-job results; `names[j]` names job `j`.
    pub fn job_summaries(&self, names: &[String]) -> Vec<JobSummary> {
        let empty = OpStats::per_op(self.digits);
        names.iter().enumerate().map(|(j, name)| self.job_summary(name, self.per_job.get(j).unwrap_or(&empty), self.job_window(j), Vec::new())).collect()
    }

    /// fio's `group_reporting`: one result per group (`groups[g]` lists its jobs, named by
    /// `names`; the group takes its first job's name), counts and latency histograms merged,
    /// rates over the longest of its jobs' own runtimes (fio's `sum_thread_stats`).
    pub fn group_summaries(&self, names: &[String], groups: &[Vec<usize>]) -> Vec<JobSummary> {
        groups
            .iter()
            .filter(|g| !g.is_empty())
            .map(|g| {
                let mut ops = OpStats::per_op(self.digits);
                let (mut window, mut summed) = (SimDuration::ZERO, 0.0);
                for &j in g {
                    if let Some(stats) = self.per_job.get(j) {
                        for (a, b) in ops.iter_mut().zip(stats) {
                            a.add(b);
                        }
                    }
                    window = window.max(self.job_window(j));
                    summed += self.job_window(j).as_secs_f64();
                }
                let mut s = self.job_summary(names.get(g[0]).map_or("", String::as_str), &ops, window, g.clone());
                s.jobs_runtime_s = Some(summed);
                s
            })
            .collect()
    }

    fn job_summary(&self, name: &str, ops: &[OpStats; 3], window: SimDuration, members: Vec<usize>) -> JobSummary {
        let (ios, bytes) = OpStats::totals(ops);
        let lat: u128 = ops.iter().map(|o| o.lat.sum).sum();
        let (per_sec, mib_s) = rates(ios, bytes, window.as_secs_f64());
        JobSummary {
            name: name.to_string(),
            ios,
            bytes,
            iops: per_sec,
            bandwidth_mib_s: mib_s,
            runtime_s: window.as_secs_f64(),
            mean_latency_us: if ios > 0 { lat as f64 / ios as f64 / PS_PER_US as f64 } else { 0.0 },
            read: self.summarise_over(&ops[0], window),
            write: self.summarise_over(&ops[1], window),
            trim: self.summarise_over(&ops[2], window),
            iodepth_level: Vec::new(),
            iodepth_complete: Vec::new(),
            error: None,
            latency_depth: None,
            members,
            jobs_runtime_s: None,
        }
    }

    /// Mean breakdown over reads and writes together.
    pub fn breakdown_all(&self) -> BreakdownUs {
        let mut sum = [0u128; COMPONENTS];
        for op in self.per_job.iter().flatten() {
            for (a, b) in sum.iter_mut().zip(op.breakdown.iter()) {
                *a += b;
            }
        }
        BreakdownUs::mean(&sum, self.ios())
    }
}

impl Observer for Stats {
    fn io_completed(&mut self, rec: &IoRecord<'_>) {
        if rec.completed < self.from {
            return;
        }
        let lat = rec.completed.since(rec.issued).as_ps();
        let slat = rec.submitted.since(rec.issued).as_ps().min(lat);
        if let Some(series) = &mut self.series {
            series.io(rec, lat);
        }
        let j = rec.job.index();
        if j >= self.per_job.len() {
            let d = self.digits;
            self.per_job.resize_with(j + 1, || OpStats::per_op(d));
            self.job_first.resize(j + 1, SimTime(u64::MAX));
            self.job_last.resize(j + 1, SimTime::ZERO);
        }
        let s = &mut self.per_job[j][rec.op as usize];
        s.ios += 1;
        s.bytes += rec.len;
        s.lat.record(lat);
        s.slat.record(slat);
        s.clat.record(lat - slat);
        for (a, b) in s.breakdown.iter_mut().zip(rec.breakdown.0.iter()) {
            *a += u128::from(*b);
        }
        self.last_completion = self.last_completion.max(rec.completed);
        self.job_last[j] = self.job_last[j].max(rec.completed);
        self.job_first[j] = self.job_first[j].min(rec.issued);
        if let Some(log) = &mut self.log {
            log.job.push(rec.job.index() as u32);
            log.tenant.push(rec.tenant.index() as u32);
            log.op.push(rec.op as u8);
            log.offset.push(rec.offset);
            log.len.push(rec.len);
            log.issued_ps.push(rec.issued.0);
            log.latency_ps.push(lat);
            for (col, v) in log.breakdown_ps.iter_mut().zip(rec.breakdown.0.iter()) {
                col.push(*v);
            }
        }
    }
}

/// I/Os per second and MiB per second of `ios` I/Os moving `bytes` over `window` seconds.
fn rates(ios: u64, bytes: u64, window: f64) -> (f64, f64) {
    if window > 0.0 {
        (ios as f64 / window, bytes as f64 / window / 1_048_576.0)
    } else {
        (0.0, 0.0)
    }
}

/// Mean microseconds per component, serialised in path order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BreakdownUs(pub [f64; COMPONENTS]);

impl BreakdownUs {
    fn mean(sum: &[u128; COMPONENTS], n: u64) -> Self {
        let mut out = [0.0; COMPONENTS];
        if n > 0 {
            for (o, s) in out.iter_mut().zip(sum.iter()) {
                *o = *s as f64 / n as f64 / PS_PER_US as f64;
            }
        }
        BreakdownUs(out)
    }

    pub fn total(&self) -> f64 {
        self.0.iter().sum()
    }
}

impl Serialize for BreakdownUs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(COMPONENTS))?;
        for c in Component::ALL {
            m.serialize_entry(c.name(), &self.0[c as usize])?;
        }
        m.end()
    }
}

/// Latency statistics in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub min: f64,
    pub mean: f64,
    pub stddev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub max: f64,
    /// The extra percentiles of `stats.percentiles`, keyed by their value.
    pub percentiles: BTreeMap<String, f64>,
    /// With `stats.fio_bins`: the histogram in fio's bins, `[ns, count]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bins: Vec<(u64, u64)>,
}

/// fio's latency histogram buckets (stat.h: `FIO_IO_U_PLAT_BITS` = 6, 29 groups).
pub mod fio_plat {
    const BITS: u32 = 6;
    const VAL: u64 = 1 << BITS;
    const NR: u64 = 29 * VAL;

    /// `plat_val_to_idx`.
    pub fn val_to_idx(val: u64) -> u64 {
        let msb = if val == 0 { 0 } else { val.ilog2() };
        if msb <= BITS {
            return val;
        }
        let error_bits = msb - BITS;
        let base = u64::from(error_bits + 1) << BITS;
        let offset = (VAL - 1) & (val >> error_bits);
        (base + offset).min(NR - 1)
    }

    /// `plat_idx_to_val`: the middle of bucket `idx`.
    pub fn idx_to_val(idx: u64) -> u64 {
        if idx < (VAL << 1) {
            return idx;
        }
        let error_bits = (idx >> BITS) - 1;
        let base = 1u64 << (error_bits + u64::from(BITS));
        let k = idx % VAL;
        base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn buckets_match_fio() {
            // Exact below 128 ns; then 64 buckets per power of two, valued at their middle.
            assert_eq!((val_to_idx(5), idx_to_val(5)), (5, 5));
            assert_eq!(val_to_idx(127), 127);
            assert_eq!(val_to_idx(128), 128);
            assert_eq!(idx_to_val(128), 129); // [128, 130): base 128 + 0.5 x 2
                                              // A 100 us latency: msb 16, 10 error bits, group base 11 x 64.
            let i = val_to_idx(100_000);
            assert_eq!(i, 11 * 64 + ((100_000 >> 10) & 63));
            let v = idx_to_val(i);
            assert!(v.abs_diff(100_000) <= 512, "{v}");
            // Every value lands in the bucket whose range holds it.
            for val in [1u64, 200, 4096, 99_999, 1 << 30, 10_000_000_000] {
                let mid = idx_to_val(val_to_idx(val));
                assert!(mid.abs_diff(val) as f64 <= val as f64 / 64.0 + 1.0, "{val} -> {mid}");
            }
        }
    }
}

/// Results for one direction.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OpSummary {
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bandwidth_mib_s: f64,
    /// Issue to completion.
    pub latency_us: LatencySummary,
    /// Submission latency (fio's slat): issue to the SQ doorbell write.
    pub slat_us: LatencySummary,
    /// Completion latency (fio's clat): SQ doorbell write to completion.
    pub clat_us: LatencySummary,
    pub breakdown_us: BreakdownUs,
}

/// One job's results.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct JobSummary {
    pub name: String,
    pub ios: u64,
    pub bytes: u64,
    /// Its rates are over its own time (`runtime_s`: from its start to its last completion).
    pub iops: f64,
    pub bandwidth_mib_s: f64,
    pub runtime_s: f64,
    pub mean_latency_us: f64,
    pub read: OpSummary,
    pub write: OpSummary,
    /// Trims (Dataset Management deallocate); their bytes are the ranges trimmed.
    pub trim: OpSummary,
    /// I/Os by the job's queue depth when each was issued, in fio's buckets 1, 2, 4, 8, 16, 32,
    /// >=64 (fio's `iodepth_level`).
    pub iodepth_level: Vec<u64>,
    /// I/Os by how many completions were reaped with each, in fio's buckets 0, 4, 8, 16, 32,
    /// 64, >64 (fio's `iodepth_complete`).
    pub iodepth_complete: Vec<u64>,
    /// Why the job ended early (a minimum rate not met, a latency target missed at depth 1).
    pub error: Option<String>,
    /// The depth the job's latency-target search settled on (fio's `latency_depth`).
    pub latency_depth: Option<u32>,
    /// With `stats.group_reporting`: the jobs (by index) this entry merges; else empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<usize>,
    /// With `stats.group_reporting`: its jobs' runtimes summed (fio's `job_runtime` of a group).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jobs_runtime_s: Option<f64>,
}

/// One tenant's results (its jobs together).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TenantSummary {
    pub name: String,
    pub ios: u64,
    pub bytes: u64,
    /// Its rates are over its own time (`runtime_s`: from its jobs' first start to their last
    /// completion).
    pub iops: f64,
    pub bandwidth_mib_s: f64,
    pub runtime_s: f64,
    pub read: OpSummary,
    pub write: OpSummary,
    /// Trims (Dataset Management deallocate); their bytes are the ranges trimmed.
    pub trim: OpSummary,
    /// Its I/O weight and NVMe class (`[[tenants]]`; 100 and medium without tenants).
    pub weight: u32,
    pub class: String,
    /// Its weight over the smallest tenant weight, and its bandwidth over that of the tenant
    /// with the smallest weight (the first such): the two agree when bandwidth follows weights.
    pub weight_ratio: f64,
    pub proportionality: f64,
    /// NAND runs with several tenants: what its writes cost the flash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flash: Option<TenantFlash>,
    /// Its SLOs and how often they were met (runs with `stats.interval`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slo: Vec<SloResult>,
}

/// A tenant's share of the FTL's work.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TenantFlash {
    /// Mapping units it wrote.
    pub host_writes: u64,
    /// Units GC moved on behalf of its writes: its own, and other tenants'.
    pub gc_paid_own: u64,
    pub gc_paid_others: u64,
    /// Its units that GC moved, whoever paid.
    pub gc_moved: u64,
    /// (host writes + units moved on its behalf) / host writes.
    pub waf: f64,
    /// The share of the units moved on its behalf that were its own.
    pub own_fraction: f64,
}

/// One SLO of a tenant over the series intervals.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SloResult {
    /// `iops`, `bandwidth` or `latency`.
    pub kind: String,
    /// The target (IOPS, bytes per second, or microseconds at `percentile`).
    pub target: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentile: Option<f64>,
    /// Intervals with I/O of the run, and those in which the target was met.
    pub intervals: u64,
    pub met: u64,
    /// met / intervals.
    pub compliance: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_buckets_split_where_fio_splits() {
        let depth: Vec<usize> = [1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 1000].iter().map(|&n| fio_bucket(n, &DEPTH_STARTS)).collect();
        assert_eq!(depth, [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]);
        let reap: Vec<usize> = [0, 1, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65].iter().map(|&n| fio_bucket(n, &REAP_STARTS)).collect();
        assert_eq!(reap, [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6]);
    }
}
