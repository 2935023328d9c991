//! The host: application threads and the software path of an I/O, as costs on CPUs.
//!
//! Each job is one thread pinned to its own CPU and belongs to a tenant. Linux nvme-pci gives
//! each CPU a queue pair while the drive has enough (`nvme.io_queues`); with more jobs than
//! queues, blk-mq maps consecutive CPUs onto each queue ([`queue_map`]), and a queue's interrupt
//! is handled on the first CPU mapped to it (its effective affinity). The CPU is a FIFO timeline:
//! submitting an I/O, and finishing one after its interrupt or poll, each take a software cost
//! on that CPU, so a busy thread delays its own interrupt handling and vice versa.
//!
//! Submission may pass a tag lock shared by all threads (the thread spins while it waits) and a
//! hand-off to one I/O scheduler thread (two context switches) through a request queue whose
//! lock is taken to insert, dispatch and end each request. Both locks are ticket spinlocks whose
//! lines move between CPUs ([`lock`]), so they cost little to one thread and collapse under
//! many. Write data may be copied into a kernel buffer and read data out of one. With tenants,
//! a cgroup I/O controller ([`share`]: `io.weight` or `io.max`) may hold a request back after
//! the submitting thread's own work, before the block layer's locks and the doorbell.
//!
//! Completion is by interrupt and wake-up, by spin-polling, or hybrid (spin below a size). An
//! interrupt's handler runs when its CPU is free and finishes every CQE signalled by then,
//! paying the interrupt and the wake-up once. Jobs draw I/Os from their generators (closed loop
//! at `iodepth`, or open loop at a rate, with a backlog), or from a replayed trace. Host memory
//! answers device reads after a fixed latency; [`dma::HostMemory`] gives each DMA its address.
//!
//! Jobs with `direct = false` go through the page cache ([`page_cache`]): the application's
//! read or write is served from memory when it can be, and the cache's own device requests
//! (reads, readahead, writeback by a flusher thread on a CPU of its own) take the path above.
//! An fsync (`fsync`, `end_fsync`) waits for the dirty pages to reach the device.
//!
//! Leaves out: interrupt steering to other CPUs, NUMA, DRAM contention, batched submission
//! (one system call per I/O), and the completion IPI to the submitting CPU of a shared queue
//! (the handler's CPU waits, each request's completion work runs on its own job's CPU).

mod config;
pub mod dma;
pub mod lock;
pub mod page_cache;
pub mod share;

use std::collections::VecDeque;

pub use config::{Completion, DmaLayout, HostConfig, Scheduler, ShareMode, Tags};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::ids::{JobId, TenantId};
use crate::ids::{CmdId, QueueId};
use crate::sim::{Grant, SimDuration, SimTime, Timeline};
use crate::cmd::Command;
use crate::stats::{Component, IoRecord, Metrics, Observer};
use crate::workload::control::{Control, Limits, Pace, Verdict};
use crate::workload::replay::Replay;
use crate::workload::zbd::{Place, ZbdJob, ZoneView};
use crate::io::Op;
use crate::workload::{ExitScope, Io, JobGen, WorkloadConfig};
use lock::SpinLock;
use page_cache::{PageCache, Run, Throttle, PAGE};
use rustc_hash::FxHashMap;

/// Open-loop arrivals a job may hold back before the run fails as unsustainable.
const MAX_BACKLOG: usize = 1 << 22;

/// Host events.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// An open-loop arrival for a job (or a closed-loop job done thinking).
    Arrival { job: JobId },
    /// A closed-loop job starts (after its `startdelay`), or may go on after a rate wait: it
    /// fills its free slots.
    Wake { job: JobId },
    /// The next record of timed trace replay `source` arrives.
    TraceArrival { source: u16 },
    /// An MSI-X interrupt reaches the host, covering `count` CQEs of `queue`.
    Interrupt { queue: QueueId, count: u32 },
    /// The interrupt handler of `queue` runs (when its CPU is free): it finishes every CQE
    /// signalled on the queue so far.
    Handler { queue: QueueId },
    /// A polling thread finds the CQE of `cmd`.
    CqeSeen { cmd: CmdId },
    /// The request reaches the tag lock.
    TagLock { cmd: CmdId },
    /// The submitting CPU inserts the request into the request queue (under its lock).
    Insert { cmd: CmdId },
    /// The request reaches the I/O scheduler thread.
    Schedule { cmd: CmdId },
    /// The scheduler thread dispatches the request (under the queue lock).
    Dispatch { cmd: CmdId },
    /// The scheduler thread has dispatched a request and takes the next.
    SchedulerFree,
    /// The completing CPU ends the request in the request queue (under its lock).
    EndRequest { cmd: CmdId, ring_cq: bool },
    /// The host has finished `cmd`: the application sees it complete.
    Complete { cmd: CmdId, ring_cq: bool },
    /// The drive has reset zone `zone` for `job`.
    ZoneResetDone { job: JobId, zone: u32 },
    /// The request reaches the cgroup I/O controller (`host.share`).
    ShareOffer { cmd: CmdId },
    /// A tenant's requests held by the controller may go.
    ShareWake { tenant: crate::ids::TenantId },
    /// The controller's QoS period ends.
    QosTick,
    /// A buffered I/O's system call reaches the page cache.
    CacheAccess { cmd: CmdId },
    /// A paced buffered write's pause ends: it returns.
    CacheResume { cmd: CmdId },
}

/// What the host hands the router, with the instant it takes effect.
#[derive(Clone, Copy, Debug)]
pub enum Out {
    /// One of the host's own events.
    Host(Event),
    /// The driver rings `cmd`'s SQ tail doorbell: it goes down the link.
    Ring { cmd: CmdId },
    /// The driver writes the CQ head doorbell (nothing waits for it; it uses the link).
    CqDoorbell,
    /// fio's zbd mode resets zone `zone` for job `job`.
    ResetZone { zone: u32, job: u32 },
}

/// The host's view of the simulation while it handles an input.
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

/// Where a request is on its way out of the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SubmitStage {
    Cpu,
    Share,
    Insert,
    Scheduler,
    Lock,
}

/// The host's shared locks.
#[derive(Clone, Copy)]
enum LockKind {
    Tag,
    Queue,
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

/// The trace replays of a run and the replay each job takes its I/Os from: `workload.replay`
/// feeds every job; otherwise each tenant with a trace of its own feeds its jobs.
fn replay_sources(config: &Config, n: usize) -> Result<(Vec<Source>, Vec<Option<usize>>)> {
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
struct Source {
    replay: Box<Replay>,
    first: usize,
    jobs: usize,
    next: Option<(usize, Io)>,
}

/// The block device's statistics as Linux keeps them (/proc/diskstats, what fio's `disk_util`
/// reads): requests and their time from the doorbell to the completion, time with at least one
/// request at the device, and the time-weighted number of requests there.
#[derive(Clone, Debug, Default)]
pub struct DiskStats {
    outstanding: u32,
    since: SimTime,
    pub busy: SimDuration,
    /// Sum over time of the requests at the device (ps x requests).
    pub in_queue: u128,
    pub ios: [u64; 2],
    pub ticks: [SimDuration; 2],
}

impl DiskStats {
    fn advance(&mut self, now: SimTime) {
        let dt = now.since(self.since);
        if self.outstanding > 0 {
            self.busy += dt;
            self.in_queue += u128::from(dt.as_ps()) * u128::from(self.outstanding);
        }
        self.since = now;
    }

    /// A request reaches the device.
    pub fn start(&mut self, now: SimTime) {
        self.advance(now);
        self.outstanding += 1;
    }

    /// A request completes after `took` (a discard counts in neither direction: fio's disk
    /// statistics read the read and write fields of `/sys/block/*/stat`).
    pub fn end(&mut self, now: SimTime, op: Op, took: SimDuration) {
        self.advance(now);
        self.outstanding = self.outstanding.saturating_sub(1);
        if op != Op::Trim {
            self.ios[op as usize] += 1;
            self.ticks[op as usize] += took;
        }
    }
}

/// fio's buckets: the index of a count among the buckets starting at `starts` (stat.c:
/// `io_u_mark_depth` starts 1, 2, 4, 8, 16, 32, 64; `io_u_mark_complete` 0, 1, 5, 9, 17, 33,
/// 65).
fn fio_bucket(n: u64, starts: &[u64; 6]) -> usize {
    starts.iter().take_while(|&&b| n >= b).count()
}

const DEPTH_STARTS: [u64; 6] = [2, 4, 8, 16, 32, 64];
const REAP_STARTS: [u64; 6] = [1, 5, 9, 17, 33, 65];

/// The host block.
pub struct Host {
    /// The block device's statistics.
    pub disk: DiskStats,
    /// Per job: I/Os by the job's queue depth when each was issued (fio's `iodepth_level`),
    /// and by how many completions were reaped with each (fio's `iodepth_complete`).
    depth_level: Vec<[u64; 7]>,
    reap_level: Vec<[u64; 7]>,
    cpus: Vec<Timeline>,
    /// Per job: its `NVMe` queue pair; per queue: the CPU (job) its interrupt is handled on.
    queue_of: Vec<u16>,
    irq_cpu: Vec<usize>,
    /// The tag lock (`tags = "lock"`).
    tag_lock: Option<SpinLock>,
    /// The request queue's lock (`scheduler = "thread"`).
    queue_lock: Option<SpinLock>,
    /// The I/O scheduler thread (`scheduler = "thread"`).
    scheduler: Option<Timeline>,
    scheduler_service: SimDuration,
    /// Requests waiting for the scheduler thread, and whether it is at work on one.
    sched_waiting: VecDeque<CmdId>,
    sched_busy: bool,
    context_switch: SimDuration,
    /// CPU time spent spinning (on the lock, or polling for completions).
    spin: SimDuration,
    /// Per job: until when its polling thread's spinning is already counted.
    spun_until: Vec<SimTime>,
    submit_cost: SimDuration,
    complete_cost: SimDuration,
    batch_complete_cost: SimDuration,
    poll_cost: SimDuration,
    completion: Completion,
    hybrid_threshold: u64,
    copy_ps_per_byte: Option<f64>,
    /// memcpy time per byte (buffered I/O copies whatever `copy` says).
    memcpy_ps_per_byte: f64,
    /// The page cache, when a job does buffered I/O.
    cache: Option<Box<PageCache>>,
    /// The cache's device reads in flight, with their pages.
    reads: FxHashMap<CmdId, Run>,
    /// Application reads waiting on each device read, and how many reads each still waits on.
    waiters: FxHashMap<CmdId, Vec<CmdId>>,
    waiting: FxHashMap<CmdId, u32>,
    /// The cache's writeback requests in flight, with their pages and sequence numbers.
    writebacks: FxHashMap<CmdId, (Run, u64)>,
    /// Buffered writes stopped at the dirty limit.
    stopped: VecDeque<CmdId>,
    /// The flusher thread's CPU, and the queue its next request goes to (round robin).
    flusher: Timeline,
    flusher_rr: usize,
    /// I/Os issued by each flow group's jobs.
    flow_issued: Vec<u64>,
    /// The memory page size of PRPs (`nvme.page_size`).
    page_size: u64,
    jobs: Vec<Job>,
    tenants: Vec<String>,
    rate_iops: u64,
    /// The cgroup I/O controller among tenants (`host.share`).
    share: Option<Box<share::Share>>,
    /// Scratch: requests the controller releases.
    released: Vec<CmdId>,
    /// Trace replays (`workload.replay.trace` for every job, or a tenant's for its jobs).
    sources: Vec<Source>,
    /// Per job: the replay it takes its I/Os from, if any.
    job_source: Vec<Option<usize>>,
    /// DMA addresses of rings and buffers, when something looks at them (ATS, a DMA log).
    pub memory: Option<Box<dma::HostMemory>>,
    /// The device presents virtio-blk virtqueues (no PRPs).
    virtio: bool,
    /// An LBA format with metadata: the host's block (data, and the metadata when
    /// interleaved), the block's data, and its metadata, in bytes.
    metadata: Option<(u64, u64, u64)>,
    /// The LBA format interleaves metadata with the data (the host addresses both).
    extended_lba: bool,
    /// The zoned drive as fio's zbd jobs see it, and per zone the writes held for its write
    /// lock (job, I/O, arrival), oldest first.
    zones: Option<Box<ZoneView>>,
    zone_waits: FxHashMap<usize, VecDeque<(usize, Io, SimTime)>>,
}

impl Host {
    pub fn new(config: &Config) -> Result<Self> {
        let h = &config.host;
        let w = &config.workload;
        let mut tenants: Vec<String> = Vec::new();
        let jobs = config
            .jobs()
            .into_iter()
            .enumerate()
            .map(|(j, (name, _, jw, tenant))| {
                let region = config.region_size_of(&jw);
                let t = tenants.iter().position(|n| *n == tenant).unwrap_or_else(|| {
                    tenants.push(tenant);
                    tenants.len() - 1
                });
                Ok(Job {
                    gen: JobGen::new(&jw, region, j as u32)?,
                    name,
                    tenant: TenantId(t as u16),
                    inflight: 0,
                    iodepth: jw.iodepth,
                    thinktime: jw.thinktime,
                    ctl: Control::new(&limits(&jw, w.ramp_time), SimTime::ZERO + jw.startdelay, jw.iodepth),
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
                    zbd: jw.zbd.then(|| {
                        let (start, len) = (jw.offset.0, region);
                        let freq = jw.zone_reset_frequency;
                        ZbdJob {
                            start,
                            len,
                            min_bs: jw.min_bs().max(512),
                            random: jw.rw.is_random(),
                            read_beyond_wp: jw.read_beyond_wp,
                            reset_threshold: jw.zone_reset_threshold,
                            reset_frequency: freq,
                            writes_left: if freq > 0.0 { ((1.0 / freq) as u64).max(1) } else { 0 },
                        }
                    }),
                    pending: None,
                    backlog: VecDeque::new(),
                    buffered: !jw.direct,
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
        let mut jobs = jobs;
        for (j, (_, _, jw, _)) in config.jobs().into_iter().enumerate() {
            if let Some(name) = &jw.wait_for {
                let dotted = format!("{name}.");
                jobs[j].waits_for = (0..n).filter(|&k| k != j && (jobs[k].name == *name || jobs[k].name.starts_with(&dotted))).collect();
            }
        }
        // Flow groups: each job's weight becomes its share of its group's total weight.
        let mut flow_ids: Vec<usize> = jobs.iter().filter_map(|j| j.flow.map(|f| f.0)).collect();
        flow_ids.sort_unstable();
        flow_ids.dedup();
        let totals: Vec<f64> = flow_ids.iter().map(|&id| jobs.iter().filter_map(|j| j.flow.filter(|f| f.0 == id).map(|f| f.1)).sum()).collect();
        for j in &mut jobs {
            if let Some((id, w)) = j.flow {
                let g = flow_ids.iter().position(|&x| x == id).unwrap_or(0);
                j.flow = Some((g, w / totals[g]));
            }
        }
        let (sources, job_source) = replay_sources(config, n)?;
        let dirtiers = jobs.iter().filter(|j| j.buffered && j.gen.writes()).count() as u32;
        let files = jobs
            .iter()
            .map(|j| {
                let (start, len) = j.gen.extent();
                (start / PAGE, (start + len).div_ceil(PAGE))
            })
            .collect();
        let cache = jobs.iter().any(|j| j.buffered).then(|| Box::new(PageCache::new(&h.page_cache, files, dirtiers)));
        let map = queue_map(n, config.nvme.io_queues as usize);
        let zones = zone_view(config, &jobs);
        Ok(Host {
            disk: DiskStats::default(),
            depth_level: vec![[0; 7]; n],
            reap_level: vec![[0; 7]; n],
            cpus: vec![Timeline::default(); n],
            irq_cpu: (0..queues(n, config.nvme.io_queues as usize)).map(|q| map.iter().position(|&x| x == q).unwrap_or(0)).collect(),
            queue_of: map.into_iter().map(|q| q as u16).collect(),
            tag_lock: (h.tags == Tags::Lock).then(|| SpinLock::new(h.lock_hold, h.lock_transfer, h.tag_lock_lines)),
            queue_lock: (h.scheduler == Scheduler::Thread).then(|| SpinLock::new(h.queue_lock_hold, h.lock_transfer, h.queue_lock_lines)),
            scheduler: (h.scheduler == Scheduler::Thread).then(Timeline::default),
            scheduler_service: h.context_switch + h.scheduler_cost,
            sched_waiting: VecDeque::new(),
            sched_busy: false,
            context_switch: h.context_switch,
            spin: SimDuration::ZERO,
            spun_until: vec![SimTime::ZERO; n],
            submit_cost: h.submit_cost,
            complete_cost: h.complete_cost,
            batch_complete_cost: h.batch_complete_cost,
            poll_cost: h.poll_complete_cost,
            completion: h.completion,
            hybrid_threshold: h.hybrid_threshold.0,
            copy_ps_per_byte: h.copy.then(|| 1e12 / h.copy_bandwidth.0),
            memcpy_ps_per_byte: 1e12 / h.copy_bandwidth.0,
            cache,
            reads: FxHashMap::default(),
            waiters: FxHashMap::default(),
            waiting: FxHashMap::default(),
            writebacks: FxHashMap::default(),
            stopped: VecDeque::new(),
            flusher: Timeline::default(),
            flusher_rr: 0,
            flow_issued: vec![0; flow_ids.len()],
            page_size: config.nvme.page_size.0,
            share: share::Share::new(h, &config.tenants).map(Box::new),
            released: Vec::new(),
            jobs,
            tenants,
            rate_iops: w.rate_iops,
            sources,
            job_source,
            memory: None,
            zones,
            zone_waits: FxHashMap::default(),
            virtio: config.nvme.interface == crate::nvme::Interface::VirtioBlk,
            extended_lba: config.nvme.extended_lba,
            metadata: (config.nvme.metadata_size.0 > 0).then(|| {
                let (lba, ms) = (config.nvme.lba_size.0, config.nvme.metadata_size.0);
                (if config.nvme.extended_lba { lba + ms } else { lba }, lba, ms)
            }),
        })
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

    /// The NVMe arbitration class of every job's queue pair (its tenant's).
    pub fn queue_classes(&self, config: &Config) -> Vec<crate::tenant::WrrClass> {
        // Jobs of one queue belong to one tenant (validation).
        self.irq_cpu.iter().map(|&j| config.tenants.get(self.jobs[j].tenant.index()).map_or(crate::tenant::WrrClass::Medium, |t| t.class)).collect()
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

    /// Whether the host reaps `c`'s completion by polling its CQ (`host.completion`: always,
    /// never, or below a size) rather than by interrupt. The page cache's requests complete by
    /// interrupt (polling is for O_DIRECT).
    #[inline]
    pub fn reaps_by_polling(&self, c: &Command) -> bool {
        let polls = match self.completion {
            Completion::Poll => true,
            Completion::Interrupt => false,
            Completion::Hybrid => c.len <= self.hybrid_threshold,
        };
        polls && !c.cache
    }

    /// Host CPU time spent, and the CPUs it is spread over, for statistics.
    pub fn publish(&self, m: &mut Metrics) {
        let cpu = self.cpus.iter().fold(SimDuration::ZERO, |a, c| a + c.busy());
        m.count("host.cpu.busy", "ps", "CPU time the jobs' CPUs spent on I/O (submission and completion paths)", cpu.as_ps());
        m.count("host.scheduler.busy", "ps", "CPU time of the I/O scheduler thread", self.scheduler.as_ref().map_or(0, |s| s.busy().as_ps()));
        m.count("host.spin", "ps", "CPU time spent spinning on the tag or queue lock or polling for completions", self.spin.as_ps());
        for (name, lock) in [("tag_lock", &self.tag_lock), ("queue_lock", &self.queue_lock)] {
            let Some(l) = lock else { continue };
            m.count(&format!("host.{name}.busy"), "ps", "time the lock was held (warm hold, lines moved in, handovers behind spinners)", l.busy.as_ps());
            m.count(&format!("host.{name}.acquisitions"), "acquisitions", "times the lock was taken", l.acquisitions);
            m.count(&format!("host.{name}.migrations"), "acquisitions", "acquisitions that found the lock's lines on another CPU", l.migrations);
        }
        m.gauge("host.cpus", "CPUs", "host CPUs running jobs (one per job)", self.cpus.len() as f64);
        let flat = |v: &[[u64; 7]]| v.iter().flatten().copied().collect::<Vec<u64>>();
        m.counts("host.iodepth_level", "I/Os", "per job (7 each): I/Os by the job's depth when issued, in fio's buckets 1, 2, 4, 8, 16, 32, >=64", &flat(&self.depth_level));
        m.counts("host.iodepth_complete", "I/Os", "per job (7 each): I/Os by how many completions were reaped with them, in fio's buckets 0, 4, 8, 16, 32, 64, >64", &flat(&self.reap_level));
        let d = &self.disk;
        m.count("host.disk.read_ios", "requests", "reads that reached the device", d.ios[0]);
        m.count("host.disk.write_ios", "requests", "writes that reached the device", d.ios[1]);
        m.count("host.disk.read_ticks", "ps", "time reads spent at the device (doorbell to completion), summed", d.ticks[0].as_ps());
        m.count("host.disk.write_ticks", "ps", "time writes spent at the device, summed", d.ticks[1].as_ps());
        m.count("host.disk.busy", "ps", "time with at least one request at the device (iostat's %util)", d.busy.as_ps());
        m.count("host.disk.in_queue", "ps", "time-weighted requests at the device (diskstats' weighted time in queue)", u64::try_from(d.in_queue).unwrap_or(u64::MAX));
        if let Some(c) = &self.cache {
            let st = &c.stats;
            let (_, limit) = c.thresholds();
            m.count("host.page_cache.read_pages", "pages", "4 KiB pages buffered reads asked for", st.read_pages);
            m.count("host.page_cache.hit_pages", "pages", "pages buffered reads found in the page cache", st.hit_pages);
            m.gauge(
                "host.page_cache.hit_ratio",
                "ratio",
                "share of the pages buffered reads asked for that were cached",
                if st.read_pages > 0 { st.hit_pages as f64 / st.read_pages as f64 } else { 0.0 },
            );
            m.count("host.page_cache.readahead_pages", "pages", "pages read ahead of the reader (asynchronous part of readahead windows)", st.readahead_pages);
            m.count("host.page_cache.largest_window", "B", "largest readahead window", st.largest_window);
            m.count("host.page_cache.device_reads", "requests", "device reads the page cache sent", st.device_reads);
            m.count("host.page_cache.device_read_bytes", "B", "bytes the page cache read from the device", st.device_read_bytes);
            m.count("host.page_cache.device_writes", "requests", "writeback requests the flusher sent", st.device_writes);
            m.count("host.page_cache.device_write_bytes", "B", "bytes written back to the device", st.device_write_bytes);
            m.count("host.page_cache.dirtied_pages", "pages", "pages buffered writes dirtied", st.written_pages);
            m.count("host.page_cache.evicted_pages", "pages", "clean pages evicted (least recently used first)", st.evicted);
            m.count("host.page_cache.dirty_max", "B", "most memory dirty or under writeback at once", st.dirty_max * PAGE);
            m.count("host.page_cache.dirty_limit", "B", "the dirty limit (dirty_ratio of the cache)", limit * PAGE);
            m.count("host.page_cache.dirty_at_end", "B", "memory still dirty or under writeback when the run ended", c.dirty_pages() * PAGE);
            m.count("host.page_cache.paused", "writes", "buffered writes paced by balance_dirty_pages", st.paused);
            m.count("host.page_cache.pause_time", "ps", "time buffered writes spent paced", st.pause_time.as_ps());
            m.count("host.page_cache.stopped", "writes", "buffered writes stopped at the dirty limit", st.stopped);
            m.count("host.page_cache.fsyncs", "calls", "fsync calls", st.fsyncs);
            m.count("host.page_cache.fsync_time", "ps", "time jobs spent in fsync", st.fsync_time.as_ps());
            m.count("host.flusher.busy", "ps", "CPU time of the flusher thread building writeback requests", self.flusher.busy().as_ps());
        }
        if let Some(sh) = &self.share {
            m.count("host.share.held", "I/Os", "I/Os the cgroup controller held back for their tenant's share or limit", sh.held);
            m.count("host.share.held_time", "ps", "time I/Os spent held back by the cgroup controller", sh.held_time.as_ps());
            m.gauge("host.share.vrate", "ratio", "io.cost vrate: the device speed the controller allows, relative to its model", sh.vrate());
        }
    }

    /// Starts every job: closed-loop jobs fill their queue depth, open-loop jobs arm arrivals.
    pub fn start(&mut self, ctx: &mut Ctx) {
        if let Some(sh) = self.share.as_ref().filter(|s| s.has_qos()) {
            ctx.at(SimTime::ZERO + sh.qos_period, Out::Host(Event::QosTick));
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
            ctx.at(start, Out::Host(Event::Arrival { job: JobId(job as u32) }));
        } else if start > ctx.now {
            ctx.at(start, Out::Host(Event::Wake { job: JobId(job as u32) }));
        } else {
            j.started = true;
            self.fill(ctx, job);
            self.check_end(ctx, job);
        }
    }

    /// The host's own events (interrupts and completions are routed by the simulation, which
    /// brings what other blocks contribute).
    pub fn handle(&mut self, ctx: &mut Ctx, ev: Event) {
        match ev {
            Event::Arrival { job } => self.on_arrival(ctx, job.index()),
            Event::ZoneResetDone { job, zone } => {
                let j = job.index();
                if let Some(v) = self.zones.as_mut() {
                    v.reset(zone as usize);
                }
                self.jobs[j].hold = Hold::None;
                // The write that waited for the reset goes first, at the zone's start.
                if let Some((io, true)) = self.jobs[j].pending {
                    self.jobs[j].pending = None;
                    self.issue_zoned(ctx, j, io, ctx.now);
                }
                self.fill(ctx, j);
                self.check_end(ctx, j);
                self.wake_zone_waiters(ctx);
            }
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
            Event::CqeSeen { cmd } => {
                // The thread spun from its submission until now (counted once per job).
                let c = &ctx.cmds[cmd];
                let job = c.job.index();
                let from = c.submitted.max(self.spun_until[job]);
                self.spin += ctx.now.since(from);
                self.spun_until[job] = ctx.now;
                self.reap_level[job][1] += 1;
                self.finish(ctx, cmd, self.poll_cost, true);
            }
            Event::TagLock { cmd } => self.on_tag_lock(ctx, cmd),
            Event::Insert { cmd } => self.on_insert(ctx, cmd),
            Event::Schedule { cmd } => self.on_schedule(ctx, cmd),
            Event::Dispatch { cmd } => self.on_dispatch(ctx, cmd),
            Event::SchedulerFree => self.sched_next(ctx),
            Event::EndRequest { cmd, ring_cq } => self.on_end_request(ctx, cmd, ring_cq),
            Event::ShareOffer { cmd } => self.on_share_offer(ctx, cmd),
            Event::ShareWake { tenant } => self.on_share_wake(ctx, tenant),
            Event::QosTick => self.on_qos_tick(ctx),
            Event::CacheAccess { cmd } => self.on_cache_access(ctx, cmd),
            Event::CacheResume { cmd } => {
                ctx.cmds[cmd].account(Component::PageCache, ctx.now);
                ctx.at(ctx.now, Out::Host(Event::Complete { cmd, ring_cq: false }));
            }
            Event::Complete { cmd, ring_cq } => self.on_complete(ctx, cmd, ring_cq),
            Event::Interrupt { .. } | Event::Handler { .. } => unreachable!("routed by the simulation (the NVMe queues meet the host)"),
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
            ctx.at(next, Out::Host(Event::Arrival { job: JobId(job as u32) }));
        }
    }

    /// The next record of replay `source` (`None` at its end or on an error, which stops the
    /// run), with the host's job that issues it.
    fn replay_record(&mut self, ctx: &mut Ctx, source: usize) -> Option<(usize, Io, SimTime)> {
        let s = self.sources.get_mut(source)?;
        match s.replay.next(ctx.now) {
            Ok(r) => r.map(|(job, io, at)| (s.first + job, io, at)),
            Err(e) => {
                ctx.fail(e);
                None
            }
        }
    }

    fn start_replay(&mut self, ctx: &mut Ctx, source: usize) {
        if self.sources[source].replay.timed() {
            if let Some((job, io, at)) = self.replay_record(ctx, source) {
                self.sources[source].next = Some((job, io));
                ctx.at(at, Out::Host(Event::TraceArrival { source: source as u16 }));
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
    fn on_trace_arrival(&mut self, ctx: &mut Ctx, source: usize) {
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
            ctx.at(at.max(now), Out::Host(Event::TraceArrival { source: source as u16 }));
        }
    }

    /// Starts a new I/O of `job` that arrived at `arrival`. An I/O that waited in the backlog
    /// was counted against the job's limit when it arrived (`reserved`).
    fn issue(&mut self, ctx: &mut Ctx, job: usize, arrival: SimTime, reserved: bool) {
        if let Some((g, share)) = self.jobs[job].flow {
            // fio's flow_threshold_exceeded: held back while ahead of its share.
            let total = self.flow_issued[g].max(1) as f64;
            if self.jobs[job].flow_issued as f64 / total > share {
                self.jobs[job].flow_held = true;
                return;
            }
            self.jobs[job].flow_issued += 1;
            self.flow_issued[g] += 1;
            self.release_flow(ctx, g, job);
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
                        ctx.at(t, Out::Host(Event::Wake { job: JobId(job as u32) }));
                    }
                }
            }
            return;
        }
        let gen = &mut j.gen;
        let io = if reserved { gen.next_reserved_io() } else { gen.next_io() };
        self.place(ctx, job, io, arrival);
    }

    /// fio's zbd mode moves `io` to where the zones take it (or resets a zone first, or waits
    /// for a zone's write lock); other jobs issue it as it is.
    fn place(&mut self, ctx: &mut Ctx, job: usize, io: Io, arrival: SimTime) {
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
    fn issue_zoned(&mut self, ctx: &mut Ctx, job: usize, io: Io, arrival: SimTime) {
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

    fn send_reset(&mut self, ctx: &mut Ctx, job: usize, zone: usize) {
        self.jobs[job].hold = Hold::Resetting;
        ctx.at(ctx.now, Out::ResetZone { zone: zone as u32, job: job as u32 });
    }

    /// Jobs waiting for a zone's write lock look again.
    fn wake_zone_waiters(&mut self, ctx: &mut Ctx) {
        for k in 0..self.jobs.len() {
            if self.jobs[k].hold == Hold::ZoneBusy {
                self.jobs[k].hold = Hold::None;
                self.fill(ctx, k);
                self.check_end(ctx, k);
            }
        }
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

    /// Jobs of flow group `g` held back that are no longer ahead of their share look again
    /// (after their `flow_sleep`).
    fn release_flow(&mut self, ctx: &mut Ctx, g: usize, by: usize) {
        let total = self.flow_issued[g].max(1) as f64;
        for j in 0..self.jobs.len() {
            let s = &mut self.jobs[j];
            if j != by && s.flow_held && s.flow.is_some_and(|(fg, share)| fg == g && s.flow_issued as f64 / total <= share) {
                s.flow_held = false;
                ctx.at(ctx.now + s.flow_sleep, Out::Host(Event::Arrival { job: JobId(j as u32) }));
            }
        }
    }

    /// Starts `io` for `job`, arrived at `arrival`: the submitting thread's own work (the path
    /// to the driver, a copy of write data into a kernel buffer, its side of a hand-off to the
    /// scheduler thread), then the rest of submission.
    fn issue_io(&mut self, ctx: &mut Ctx, job: usize, io: Io, arrival: SimTime) {
        let state = &mut self.jobs[job];
        state.inflight += 1;
        self.depth_level[job][fio_bucket(u64::from(state.inflight), &DEPTH_STARTS)] += 1;
        if io.op == Op::Write && state.fsync_every > 0 {
            // fio's fsync=N: after the N-th write is issued, an fsync once the writes are done.
            state.writes_since_sync += 1;
            state.sync_due |= state.writes_since_sync >= state.fsync_every;
        }
        let mut c = Command::new(state.tenant, JobId(job as u32), QueueId(self.queue_of[job]), io.op, io.offset, io.len, arrival);
        match io.op {
            Op::Write => {
                if let Some(pid) = state.gen.placement_id() {
                    c.pid = pid;
                }
                c.kind = state.gen.write_kind();
            }
            // fio's zbd mode trims by resetting the zone (Zone Management Send).
            Op::Trim if state.zbd.is_some() => c.kind = crate::io::Kind::ZoneReset,
            Op::Trim => {
                c.kind = crate::io::Kind::Deallocate;
                c.ranges = state.gen.trim_ranges(io);
                if let Some(r) = &c.ranges {
                    c.len = r.iter().map(|x| x.1).sum();
                }
            }
            Op::Read | Op::Flush => {}
        }
        if let Some((block, lba, ms)) = self.metadata {
            // The host addresses blocks of `block` bytes (data and, interleaved, metadata); the
            // drive's blocks hold `lba` bytes of data, the metadata moves beside it (a trim
            // moves none).
            let to_drive = |(o, l): (u64, u64)| (o / block * lba, l / block * lba);
            (c.offset, c.len) = to_drive((c.offset, c.len));
            c.md = if io.op == Op::Trim { 0 } else { c.len / lba * ms };
            if let Some(r) = c.ranges.as_mut() {
                r.iter_mut().for_each(|x| *x = to_drive(*x));
            }
        }
        if io.op == Op::Trim {
            // A discard drops its ranges from the page cache, then goes to the device as it is.
            if let Some(cache) = self.cache.as_mut() {
                // (A namespace with metadata takes no buffered jobs: these are host bytes.)
                for (o, l) in c.extents() {
                    cache.discard(o / PAGE, (o + l).div_ceil(PAGE) - o / PAGE);
                }
            }
        } else if state.buffered {
            if let Some(cache) = &self.cache {
                // A buffered read or write: the system call and the page look-ups (and a
                // write's copy into the cache), then the cache decides.
                let cfg = cache.config();
                let pages = (io.offset + io.len).div_ceil(PAGE) - io.offset / PAGE;
                let mut cost = cfg.syscall_cost + SimDuration::from_ps(cfg.page_cost.as_ps() * pages);
                if io.op == Op::Write {
                    cost += self.memcpy(io.len);
                }
                let id = ctx.cmds.insert(c);
                let g = self.cpus[job].reserve(ctx.now, cost);
                Self::account(ctx, id, g);
                ctx.at(g.end, Out::Host(Event::CacheAccess { cmd: id }));
                return;
            }
        }
        // A trim's data is its one range descriptor.
        let pages = if io.op == Op::Trim { 1 } else { io.len.div_ceil(self.page_size) };
        // virtio-blk describes the buffer with a descriptor; NVMe needs a PRP list past two pages.
        c.prp_entries = if pages > 2 && !self.virtio { pages - 1 } else { 0 };
        if let Some(m) = &mut self.memory {
            m.assign(job, &mut c);
        }
        let id = ctx.cmds.insert(c);
        let mut cost = self.submit_cost;
        if io.op == Op::Write {
            cost += self.copy_time(io.len);
        }
        if self.scheduler.is_some() {
            cost += self.context_switch;
        }
        let g = self.cpus[job].reserve(ctx.now, cost);
        Self::account(ctx, id, g);
        self.after_submit(ctx, id, g.end, SubmitStage::Cpu);
    }

    fn account(ctx: &mut Ctx, id: CmdId, g: Grant) {
        let c = &mut ctx.cmds[id];
        c.account(Component::HostQueueing, g.start);
        c.account(Component::HostSoftware, g.end);
    }

    fn copy_time(&self, len: u64) -> SimDuration {
        self.copy_ps_per_byte.map_or(SimDuration::ZERO, |p| SimDuration::from_ps((len as f64 * p).round() as u64))
    }

    /// A memcpy of `len` bytes on one CPU.
    fn memcpy(&self, len: u64) -> SimDuration {
        SimDuration::from_ps((len as f64 * self.memcpy_ps_per_byte).round() as u64)
    }

    /// A buffered I/O reaches the page cache: a read takes what is cached and waits for what
    /// is not (and starts readahead); a write dirties its pages and passes
    /// `balance_dirty_pages`.
    fn on_cache_access(&mut self, ctx: &mut Ctx, id: CmdId) {
        let Some(cache) = self.cache.as_mut() else { return };
        let now = ctx.now;
        let c = &mut ctx.cmds[id];
        c.submitted = now;
        let (job, op, first) = (c.job.index(), c.op, c.offset / PAGE);
        let n = (c.offset + c.len).div_ceil(PAGE) - first;
        let len = c.len;
        cache.wake(now);
        if op == Op::Write {
            cache.write(first, n, now);
            let t = cache.throttle(len);
            self.pump_writeback(ctx);
            match t {
                Throttle::Free => ctx.at(now, Out::Host(Event::Complete { cmd: id, ring_cq: false })),
                Throttle::Pause(d) => ctx.at(now + d, Out::Host(Event::CacheResume { cmd: id })),
                Throttle::Wait => self.stopped.push_back(id),
            }
            return;
        }
        let plan = cache.read(job, first, n);
        let mut wait = 0u32;
        for w in plan.wait_on {
            self.waiters.entry(w).or_default().push(id);
            wait += 1;
        }
        for run in plan.sync {
            let d = self.cache_request(ctx, job, Op::Read, run, false);
            self.waiters.entry(d).or_default().push(id);
            wait += 1;
        }
        for run in plan.ahead {
            self.cache_request(ctx, job, Op::Read, run, false);
        }
        if wait == 0 {
            self.copy_out(ctx, id);
        } else {
            self.waiting.insert(id, wait);
        }
    }

    /// A buffered read has all its pages: the copy to the application, then it returns.
    fn copy_out(&mut self, ctx: &mut Ctx, id: CmdId) {
        let (job, len) = (ctx.cmds[id].job.index(), ctx.cmds[id].len);
        let copy = self.memcpy(len);
        let g = self.cpus[job].reserve(ctx.now, copy);
        Self::account(ctx, id, g);
        ctx.at(g.end, Out::Host(Event::Complete { cmd: id, ring_cq: false }));
    }

    /// Sends one of the page cache's requests for `run` on `job`'s queue: built on the job's
    /// CPU (a read) or the flusher's (writeback), then the usual submission path.
    fn cache_request(&mut self, ctx: &mut Ctx, job: usize, op: Op, run: Run, flusher: bool) -> CmdId {
        let now = ctx.now;
        let mut c = Command::new(self.jobs[job].tenant, JobId(job as u32), QueueId(self.queue_of[job]), op, run.first * PAGE, run.pages * PAGE, now);
        c.cache = true;
        let pages = c.len.div_ceil(self.page_size);
        // virtio-blk describes the buffer with a descriptor; NVMe needs a PRP list past two pages.
        c.prp_entries = if pages > 2 && !self.virtio { pages - 1 } else { 0 };
        if let Some(m) = &mut self.memory {
            m.assign(job, &mut c);
        }
        let id = ctx.cmds.insert(c);
        let cost = self.cache.as_ref().map_or(SimDuration::ZERO, |c| c.config().request_cost);
        let g = if flusher { self.flusher.reserve(now, cost) } else { self.cpus[job].reserve(now, cost) };
        Self::account(ctx, id, g);
        if let Some(cache) = self.cache.as_mut() {
            match op {
                Op::Read => {
                    cache.reading(run, id);
                    self.reads.insert(id, run);
                }
                Op::Write => cache.writing(run),
                Op::Trim | Op::Flush => {}
            }
        }
        self.after_submit(ctx, id, g.end, SubmitStage::Cpu);
        id
    }

    /// The flusher sends the writeback blk-wbt has room for, round robin over the queues.
    fn pump_writeback(&mut self, ctx: &mut Ctx) {
        while let Some((run, seq)) = self.cache.as_mut().and_then(|c| c.next_writeback()) {
            let job = self.flusher_rr % self.jobs.len();
            self.flusher_rr += 1;
            let id = self.cache_request(ctx, job, Op::Write, run, true);
            self.writebacks.insert(id, (run, seq));
        }
    }

    /// One of the page cache's requests completed: a read's pages are cached and its waiting
    /// readers go on; a writeback's pages are clean, and fsyncs and stopped writers may go on.
    fn cache_done(&mut self, ctx: &mut Ctx, id: CmdId) {
        let now = ctx.now;
        if let Some(run) = self.reads.remove(&id) {
            if let Some(c) = self.cache.as_mut() {
                c.read_done(run);
            }
            for app in self.waiters.remove(&id).unwrap_or_default() {
                let Some(left) = self.waiting.get_mut(&app) else { continue };
                *left -= 1;
                if *left > 0 {
                    continue;
                }
                self.waiting.remove(&app);
                // A reader that sent this read when it began waiting spent exactly the read's
                // time, component by component; one that found the read under way waited on
                // the page cache.
                let d = &ctx.cmds[id];
                if d.issued == ctx.cmds[app].mark {
                    let b = d.breakdown;
                    let a = &mut ctx.cmds[app];
                    for (x, y) in a.breakdown.0.iter_mut().zip(b.0) {
                        *x += y;
                    }
                    a.mark = now;
                } else {
                    ctx.cmds[app].account(Component::PageCache, now);
                }
                self.copy_out(ctx, app);
            }
        }
        if let Some((run, seq)) = self.writebacks.remove(&id) {
            let mut synced = Vec::new();
            if let Some(c) = self.cache.as_mut() {
                c.write_done(run, seq, now, &mut synced);
            }
            for (job, since) in synced {
                self.fsync_done(ctx, job, since);
            }
            while self.cache.as_ref().is_some_and(|c| c.under_limit()) {
                let Some(w) = self.stopped.pop_front() else { break };
                ctx.cmds[w].account(Component::PageCache, now);
                ctx.at(now, Out::Host(Event::Complete { cmd: w, ring_cq: false }));
            }
            self.pump_writeback(ctx);
        }
    }

    /// `job` calls fsync: it issues nothing until the dirty pages are on the device.
    fn start_fsync(&mut self, ctx: &mut Ctx, job: usize) {
        self.jobs[job].syncing = true;
        let now = ctx.now;
        let done = self.cache.as_mut().is_none_or(|c| c.fsync(job, now));
        if done {
            self.fsync_done(ctx, job, now);
        } else {
            self.pump_writeback(ctx);
        }
    }

    /// `job`'s fsync returned: it goes on with its I/O.
    fn fsync_done(&mut self, ctx: &mut Ctx, job: usize, since: SimTime) {
        if let Some(c) = self.cache.as_mut() {
            c.stats.fsync_time += ctx.now.since(since);
        }
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

    /// The rest of submission after `done`: with the scheduler, the insert into the request
    /// queue and the scheduler thread's dispatch; the tag lock; then the driver's SQ write and
    /// doorbell.
    fn after_submit(&mut self, ctx: &mut Ctx, id: CmdId, at: SimTime, done: SubmitStage) {
        let next = match done {
            SubmitStage::Cpu if self.share.is_some() => Some(Event::ShareOffer { cmd: id }),
            SubmitStage::Cpu | SubmitStage::Share if self.queue_lock.is_some() => Some(Event::Insert { cmd: id }),
            SubmitStage::Insert => Some(Event::Schedule { cmd: id }),
            SubmitStage::Cpu | SubmitStage::Share | SubmitStage::Scheduler if self.tag_lock.is_some() => Some(Event::TagLock { cmd: id }),
            _ => None,
        };
        if let Some(ev) = next {
            ctx.at(at, Out::Host(ev));
            return;
        }
        ctx.cmds[id].submitted = at;
        ctx.at(at, Out::Ring { cmd: id });
    }

    /// The request reaches the cgroup controller: it goes on, or waits for its tenant's share.
    fn on_share_offer(&mut self, ctx: &mut Ctx, id: CmdId) {
        let Some(sh) = self.share.as_mut() else { return };
        let c = &ctx.cmds[id];
        match sh.offer(c.tenant, id, ctx.now, (c.op, c.offset, c.len)) {
            share::Admit::Go => self.after_submit(ctx, id, ctx.now, SubmitStage::Share),
            share::Admit::Wait(at) => {
                if let Some(at) = at {
                    ctx.at(at, Out::Host(Event::ShareWake { tenant: c.tenant }));
                }
            }
        }
    }

    /// A tenant's wake-up: the requests its share now allows go on (their wait is host queueing).
    fn on_share_wake(&mut self, ctx: &mut Ctx, tenant: TenantId) {
        let Some(sh) = self.share.as_mut() else { return };
        let mut out = std::mem::take(&mut self.released);
        let cmds = &ctx.cmds;
        if let Some(at) = sh.wake(tenant, ctx.now, |id| (cmds[id].op, cmds[id].offset, cmds[id].len), &mut out) {
            ctx.at(at, Out::Host(Event::ShareWake { tenant }));
        }
        self.go_released(ctx, &mut out);
        self.released = out;
    }

    /// Requests the controller released now: they go on, after their wait.
    fn go_released(&mut self, ctx: &mut Ctx, out: &mut Vec<CmdId>) {
        let now = ctx.now;
        for id in out.drain(..) {
            if let Some(sh) = self.share.as_mut() {
                sh.held += 1;
                sh.held_time += now.since(ctx.cmds[id].mark);
            }
            ctx.cmds[id].account(Component::HostQueueing, now);
            self.after_submit(ctx, id, now, SubmitStage::Share);
        }
    }

    fn on_qos_tick(&mut self, ctx: &mut Ctx) {
        let Some(sh) = self.share.as_mut() else { return };
        sh.qos_tick(ctx.now);
        let period = sh.qos_period;
        // Requests held under the old vrate are looked at again under the new one.
        self.revisit_share(ctx);
        let now = ctx.now;
        let active = (0..self.jobs.len()).any(|j| {
            self.jobs[j].inflight > 0
                || match self.job_source[j] {
                    Some(s) => self.sources[s].replay.may_issue(now),
                    None => self.jobs[j].gen.may_issue(now),
                }
        });
        if active {
            ctx.at(ctx.now + period, Out::Host(Event::QosTick));
        }
    }

    fn revisit_share(&mut self, ctx: &mut Ctx) {
        let Some(sh) = self.share.as_mut() else { return };
        let mut out = std::mem::take(&mut self.released);
        let mut arms = Vec::new();
        let cmds = &ctx.cmds;
        sh.revisit(ctx.now, |id| (cmds[id].op, cmds[id].offset, cmds[id].len), &mut out, &mut arms);
        for (tenant, at) in arms {
            ctx.at(at, Out::Host(Event::ShareWake { tenant }));
        }
        self.go_released(ctx, &mut out);
        self.released = out;
    }

    /// The thread of `id`'s job (or the scheduler thread, `by_scheduler`) takes a lock for it:
    /// it spins until the grant and holds the lock. Returns the grant.
    fn take(&mut self, ctx: &mut Ctx, id: CmdId, which: LockKind, by_scheduler: bool) -> Grant {
        // The scheduler thread runs where the request's submitter woke it (wake-affine), so
        // the lock's lines stay on that CPU when one thread submits alone.
        let cpu = ctx.cmds[id].job.index();
        let lock = match which {
            LockKind::Tag => self.tag_lock.as_mut(),
            LockKind::Queue => self.queue_lock.as_mut(),
        };
        let Some(lock) = lock else { return Grant { start: ctx.now, end: ctx.now, wait: SimDuration::ZERO } };
        let mut g = lock.acquire(ctx.now, cpu as u32);
        let hold = g.end.since(g.start);
        if !by_scheduler {
            // The critical section runs on the thread's CPU: if the CPU is still busy (a
            // handler run finishing other completions), the request goes on when both are done.
            self.spin += g.wait;
            g.end = g.end.max(self.cpus[cpu].reserve(g.start, hold).end);
        } else if let Some(s) = &mut self.scheduler {
            // The scheduler thread spins on its own CPU: it does nothing else meanwhile.
            s.reserve(ctx.now, g.wait + hold);
        }
        Self::account(ctx, id, g);
        g
    }

    /// The tag lock: shared by every job; the thread spins while it waits.
    fn on_tag_lock(&mut self, ctx: &mut Ctx, id: CmdId) {
        let g = self.take(ctx, id, LockKind::Tag, false);
        self.after_submit(ctx, id, g.end, SubmitStage::Lock);
    }

    /// The submitting CPU inserts the request into the queue, under the queue lock.
    fn on_insert(&mut self, ctx: &mut Ctx, id: CmdId) {
        let g = self.take(ctx, id, LockKind::Queue, false);
        self.after_submit(ctx, id, g.end, SubmitStage::Insert);
    }

    /// The scheduler thread: wakes (a context switch) and does its work, then dispatches.
    /// One request at a time: the others wait in its queue.
    fn on_schedule(&mut self, ctx: &mut Ctx, id: CmdId) {
        self.sched_waiting.push_back(id);
        if !self.sched_busy {
            self.sched_next(ctx);
        }
    }

    /// The scheduler thread takes its next request: wakes, does its work, then dispatches.
    fn sched_next(&mut self, ctx: &mut Ctx) {
        let (Some(s), Some(id)) = (&mut self.scheduler, self.sched_waiting.pop_front()) else {
            self.sched_busy = false;
            return;
        };
        self.sched_busy = true;
        let g = s.reserve(ctx.now, self.scheduler_service);
        Self::account(ctx, id, g);
        ctx.at(g.end, Out::Host(Event::Dispatch { cmd: id }));
    }

    /// The scheduler thread takes the queue lock to dispatch the request to the driver, then
    /// turns to its next request.
    fn on_dispatch(&mut self, ctx: &mut Ctx, id: CmdId) {
        let g = self.take(ctx, id, LockKind::Queue, true);
        self.after_submit(ctx, id, g.end, SubmitStage::Scheduler);
        ctx.at(g.end, Out::Host(Event::SchedulerFree));
    }

    /// The completing CPU ends the request under the queue lock; then the application sees it.
    fn on_end_request(&mut self, ctx: &mut Ctx, id: CmdId, ring_cq: bool) {
        let g = self.take(ctx, id, LockKind::Queue, false);
        ctx.at(g.end, Out::Host(Event::Complete { cmd: id, ring_cq }));
    }

    /// When the interrupt handler of `queue` can run: its CPU is free (a busy thread finishes
    /// what it is doing first, and the CQEs posted meanwhile wait for the same run).
    pub fn handler_at(&self, queue: QueueId, now: SimTime) -> SimTime {
        self.irq_cpu.get(usize::from(queue.0)).and_then(|&j| self.cpus.get(j)).map_or(now, |c| c.free_at().max(now))
    }

    /// The interrupt handler found `batch` completed: the first pays the interrupt, wake-up
    /// and return (`complete_cost`), each further one its own completion
    /// (`batch_complete_cost`); the last rings the CQ head doorbell.
    pub fn interrupt(&mut self, ctx: &mut Ctx, batch: &[CmdId]) {
        let last = batch.len().saturating_sub(1);
        for &cmd in batch {
            let c = &ctx.cmds[cmd];
            if !c.cache {
                self.reap_level[c.job.index()][fio_bucket(batch.len() as u64, &REAP_STARTS)] += 1;
            }
        }
        for (i, &cmd) in batch.iter().enumerate() {
            let now = ctx.now;
            ctx.cmds[cmd].account(Component::HostQueueing, now);
            let cost = if i == 0 { self.complete_cost } else { self.batch_complete_cost };
            self.finish(ctx, cmd, cost, i == last);
        }
    }

    /// Runs the host's completion work for `cmd` (and a copy of read data to the application);
    /// it completes when that is done.
    fn finish(&mut self, ctx: &mut Ctx, cmd: CmdId, cost: SimDuration, ring_cq: bool) {
        let c = &ctx.cmds[cmd];
        let (job, op, len) = (c.job.index(), c.op, c.len);
        let cost = if op == Op::Read && !c.cache { cost + self.copy_time(len) } else { cost };
        let g = self.cpus[job].reserve(ctx.now, cost);
        Self::account(ctx, cmd, g);
        let ev = if self.queue_lock.is_some() { Event::EndRequest { cmd, ring_cq } } else { Event::Complete { cmd, ring_cq } };
        ctx.at(g.end, Out::Host(ev));
    }

    /// The host has finished `cmd` (the last rings the CQ head doorbell): the request leaves
    /// the device's statistics, the application's I/O is recorded, and it completes.
    fn on_complete(&mut self, ctx: &mut Ctx, cmd: CmdId, ring_cq: bool) {
        if ring_cq {
            ctx.at(ctx.now, Out::CqDoorbell);
        }
        let c = &ctx.cmds[cmd];
        if c.device {
            self.disk.end(ctx.now, c.op, ctx.now.since(c.submitted));
        }
        if !c.cache {
            // The host counts what it addressed: with an extended LBA, each block's metadata too.
            let len = if self.extended_lba { c.len + c.md } else { c.len };
            ctx.probe.io_completed(&IoRecord { tenant: c.tenant, job: c.job, op: c.op, offset: c.offset, len, issued: c.issued, submitted: c.submitted, completed: ctx.now, breakdown: &c.breakdown });
        }
        self.complete(ctx, cmd);
    }

    /// The application has seen `id` complete (its statistics are recorded): the slot frees,
    /// and the job issues its next I/O.
    fn complete(&mut self, ctx: &mut Ctx, id: CmdId) {
        let now = ctx.now;
        let c = &ctx.cmds[id];
        debug_assert_eq!(c.breakdown.total(), now.since(c.issued).as_ps());
        let job = c.job.index();
        // A buffered job's trim went to the drive as it is: it completes as direct I/O does.
        let buffered_app = self.jobs[job].buffered && !c.cache && self.cache.is_some() && c.op != Op::Trim;
        if buffered_app {
            self.reap_level[job][1] += 1;
        }
        if !buffered_app {
            if let Some(m) = &mut self.memory {
                m.release(c);
            }
        }
        let idle = !buffered_app && self.share.as_mut().is_some_and(|sh| sh.completed(c.tenant, now.since(c.submitted)));
        let cache_request = c.cache;
        if cache_request {
            self.cache_done(ctx, id);
            ctx.cmds.remove(id);
            if idle {
                self.revisit_share(ctx);
            }
            return;
        }
        let (op, len, latency, offset) = (c.op, c.len, now.since(c.issued), c.offset);
        ctx.cmds.remove(id);
        if idle {
            // A tenant went idle: the others' shares grow.
            self.revisit_share(ctx);
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
                Hold::Pace(t) => ctx.at(t.max(now), Out::Host(Event::Wake { job: JobId(job as u32) })),
                Hold::Reset(zone) if !self.zones.as_ref().is_some_and(|v| v.write_locked(zone)) => self.send_reset(ctx, job, zone),
                Hold::None | Hold::Reset(_) | Hold::Resetting | Hold::ZoneBusy => {}
            }
        }
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
                    ctx.at(now + think, Out::Host(Event::Arrival { job: JobId(job as u32) }));
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

    /// A job of a flow group is done (fio's `flow_exit_job`): its weight leaves the group, the
    /// others' shares grow, and those held back look again.
    fn flow_exit(&mut self, ctx: &mut Ctx, job: usize) {
        let Some((g, _)) = self.jobs[job].flow.take() else { return };
        let total: f64 = self.jobs.iter().filter(|j| j.flow.is_some_and(|f| f.0 == g)).map(|j| j.flow_weight).sum();
        for j in &mut self.jobs {
            if let Some((fg, share)) = j.flow.as_mut() {
                if *fg == g && total > 0.0 {
                    *share = j.flow_weight / total;
                }
            }
        }
        self.release_flow(ctx, g, job);
    }
}

/// The zones of a zoned drive as fio's zbd jobs find them when they start (a zone report):
/// every zone full after a sequential fill, else empty.
fn zone_view(config: &Config, jobs: &[Job]) -> Option<Box<ZoneView>> {
    let zone = config.ftl.zone_size?.0;
    let first = jobs.iter().position(|j| j.zbd.is_some())?;
    let zones = (config.exported_capacity() / zone.max(1)) as usize;
    let full = config.ftl.precondition == crate::ftl::Precondition::Sequential;
    let limit = config.ftl.max_active_zones;
    let asked = config.jobs().get(first).map_or(0, |j| j.2.max_open_zones);
    let max_open = if asked == 0 { limit } else { asked.min(limit) };
    Some(Box::new(ZoneView::new(zone, vec![if full { zone } else { 0 }; zones], max_open as usize)))
}

/// The control limits a job's workload sets.
fn limits(w: &WorkloadConfig, ramp_time: SimDuration) -> Limits {
    let pair = |r: Option<crate::workload::Rates>| r.map_or([0; 2], |r| [r.read, r.write]);
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

/// `NVMe` I/O queue pairs the driver creates for `jobs` CPUs when the drive offers `io_queues`.
pub fn queues(jobs: usize, io_queues: usize) -> usize {
    jobs.min(io_queues).max(1)
}

/// Each job's (CPU's) queue pair: its own while there are enough, else consecutive CPUs share
/// one, in groups as even as they can be (blk-mq's `blk_mq_map_queues` over
/// `group_cpus_evenly`, on one NUMA node without SMT siblings).
pub fn queue_map(jobs: usize, io_queues: usize) -> Vec<usize> {
    let q = queues(jobs, io_queues);
    // The first `jobs % q` groups take one CPU more.
    let (per, extra) = (jobs / q, jobs % q);
    (0..q).flat_map(|g| std::iter::repeat_n(g, per + usize::from(g < extra))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_share_queues_in_even_consecutive_groups() {
        assert_eq!(queue_map(4, 8), [0, 1, 2, 3]);
        let m = queue_map(30, 8);
        let sizes: Vec<usize> = (0..8).map(|q| m.iter().filter(|&&x| x == q).count()).collect();
        assert_eq!(sizes, [4, 4, 4, 4, 4, 4, 3, 3]);
        assert!(m.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn fio_buckets_split_where_fio_splits() {
        let depth: Vec<usize> = [1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 1000].iter().map(|&n| fio_bucket(n, &DEPTH_STARTS)).collect();
        assert_eq!(depth, [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]);
        let reap: Vec<usize> = [0, 1, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65].iter().map(|&n| fio_bucket(n, &REAP_STARTS)).collect();
        assert_eq!(reap, [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6]);
    }
}
