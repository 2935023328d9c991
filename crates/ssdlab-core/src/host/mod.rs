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
//! paying the interrupt and the wake-up once. Host memory answers device reads after a fixed
//! latency; [`dma::HostMemory`] gives each DMA its address.
//!
//! What each job issues and when is fio's business (`workload::runner`): its I/Os arrive here
//! as system calls ([`Host::submit`]), and the host says when the application sees each one
//! complete ([`Host::complete`]).
//!
//! Jobs with `direct = false` go through the page cache ([`page_cache`]): the application's
//! read or write is served from memory when it can be, and the cache's own device requests
//! (reads, readahead, writeback by a flusher thread on a CPU of its own) take the path above.
//! An fsync (`fsync`, `end_fsync`) waits for the dirty pages to reach the device.
//!
//! What submitting and completing cost comes from the job's I/O engine ([`engine`]: psync,
//! libaio, io_uring with interrupts, polling or an SQ thread, SPDK, each built from named
//! parts such as the system call, the block layer, the interrupt and the wake-up), or, for the
//! `kernel` engine, from the fixed `submit_cost` and `complete_cost`.
//!
//! Leaves out: interrupt steering to other CPUs, NUMA, DRAM contention, and the completion
//! IPI to the submitting CPU of a shared queue (the handler's CPU waits, each request's
//! completion work runs on its own job's CPU).

mod completion;
mod config;
pub mod dma;
pub mod engine;
pub mod lock;
pub mod metrics;
pub mod page_cache;
pub mod share;

pub use share::Cgroup;

use std::collections::VecDeque;

pub use config::{Completion, HostConfig, Scheduler, ShareMode, Tags};
use engine::Engines;
pub use engine::{Engine, EngineCosts};

use crate::cmd::{Command, Origin};
use crate::ids::{CmdId, JobId, QueueId, TenantId};
use crate::io::Op;
use crate::nvme::{Interface, NvmeConfig, WrrClass};
use crate::sim::{div_ceil, ByteRate, Grant, SimDuration, SimTime, Timeline};
use crate::stats::{Component, Metrics};
use lock::SpinLock;
use metrics::{
    HOST_CPUS, HOST_CPU_BUSY, HOST_DISK_BUSY, HOST_DISK_IN_QUEUE, HOST_DISK_READ_IOS, HOST_DISK_READ_TICKS, HOST_DISK_WRITE_IOS, HOST_DISK_WRITE_TICKS, HOST_FLUSHER_BUSY, HOST_IODEPTH_COMPLETE,
    HOST_LOCK_ACQUISITIONS, HOST_LOCK_BUSY, HOST_LOCK_MIGRATIONS, HOST_PAGE_CACHE_DEVICE_READS, HOST_PAGE_CACHE_DEVICE_READ_BYTES, HOST_PAGE_CACHE_DEVICE_WRITES, HOST_PAGE_CACHE_DEVICE_WRITE_BYTES,
    HOST_PAGE_CACHE_DIRTIED_PAGES, HOST_PAGE_CACHE_DIRTY_AT_END, HOST_PAGE_CACHE_DIRTY_LIMIT, HOST_PAGE_CACHE_DIRTY_MAX, HOST_PAGE_CACHE_EVICTED_PAGES, HOST_PAGE_CACHE_FSYNCS,
    HOST_PAGE_CACHE_FSYNC_TIME, HOST_PAGE_CACHE_HIT_PAGES, HOST_PAGE_CACHE_HIT_RATIO, HOST_PAGE_CACHE_LARGEST_WINDOW, HOST_PAGE_CACHE_PAUSED, HOST_PAGE_CACHE_PAUSE_TIME,
    HOST_PAGE_CACHE_READAHEAD_PAGES, HOST_PAGE_CACHE_READ_PAGES, HOST_PAGE_CACHE_STOPPED, HOST_SCHEDULER_BUSY, HOST_SHARE_HELD, HOST_SHARE_HELD_TIME, HOST_SHARE_VRATE, HOST_SPIN, HOST_SQ_THREAD_BUSY,
    HOST_SYSCALLS, HOST_WAKEUPS,
};
use page_cache::{PageCache, Run, Throttle, PAGE};
use rustc_hash::FxHashMap;

/// Host events.
#[derive(Clone, Copy, Debug)]
pub enum Event {
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
    /// `job`'s fsync has returned.
    FsyncDone { job: JobId },
}

/// The host's view of the simulation while it handles an input.
pub type Ctx<'a> = crate::cmd::Ctx<'a, Out>;

/// A job's thread, as the host knows it.
#[derive(Clone, Copy, Debug)]
pub struct Thread {
    pub tenant: TenantId,
    /// Through the page cache (`direct = false`), and whether it writes.
    pub buffered: bool,
    pub writes: bool,
    /// The byte range of the file it works in: first byte, length.
    pub extent: (u64, u64),
    /// Its I/O engine (unset: `host.engine`) and I/Os per submitting system call.
    pub engine: Option<Engine>,
    pub batch: u32,
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

/// The host block.
pub struct Host {
    /// The block device's statistics.
    pub disk: DiskStats,
    /// Per job: I/Os by how many completions were reaped with each (fio's `iodepth_complete`).
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
    /// Each job's I/O engine (`host::engine`) and, for `io_uring-sqpoll`, its SQ thread's CPU.
    engines: Engines,
    sq_threads: Vec<Timeline>,
    /// Per job: whether its thread was idle (waiting) when its queue's last interrupt arrived,
    /// and the jobs of each queue (kept only when an engine asks).
    asleep: Vec<bool>,
    jobs_of_queue: Vec<Vec<usize>>,
    completion: Completion,
    hybrid_threshold: u64,
    copy_rate: Option<ByteRate>,
    /// memcpy time per byte (buffered I/O copies whatever `copy` says).
    memcpy_rate: ByteRate,
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
    /// The memory page size of PRPs (`nvme.page_size`).
    page_size: u64,
    /// The jobs' threads: each one's tenant, and whether it does buffered I/O.
    threads: Vec<Thread>,
    /// The tenants' cgroups (none without tenants).
    cgroups: Vec<Cgroup>,
    /// The cgroup I/O controller among tenants (`host.share`).
    share: Option<Box<share::Share>>,
    /// Scratch: requests the controller releases.
    released: Vec<CmdId>,
    /// DMA addresses of rings and buffers, when something looks at them (ATS, a DMA log).
    pub memory: Option<Box<dma::HostMemory>>,
    /// The device presents virtio-blk virtqueues (no PRPs).
    virtio: bool,
    /// An LBA format with metadata: the host's block (data, and the metadata when
    /// interleaved), the block's data, and its metadata, in bytes.
    metadata: Option<(u64, u64, u64)>,
    /// The LBA format interleaves metadata with the data (the host addresses both).
    extended_lba: bool,
}

impl Host {
    /// The host `h` over the drive's queues (`nvme`), running `threads` (one per job, on a CPU
    /// of its own) for the tenants' `cgroups`.
    pub fn new(h: &HostConfig, nvme: &NvmeConfig, threads: Vec<Thread>, cgroups: Vec<Cgroup>) -> Self {
        let n = threads.len();
        let dirtiers = threads.iter().filter(|t| t.buffered && t.writes).count() as u32;
        let files = threads.iter().map(|t| (t.extent.0 / PAGE, (t.extent.0 + t.extent.1).div_ceil(PAGE))).collect();
        let cache = threads.iter().any(|t| t.buffered).then(|| Box::new(PageCache::new(&h.page_cache, files, dirtiers)));
        let map = queue_map(n, nvme.io_queues as usize);
        let engines: Vec<(Engine, u32)> = threads.iter().map(|t| (t.engine.unwrap_or(h.engine), t.batch)).collect();
        let uses = |e: Engine| engines.iter().any(|j| j.0 == e);
        let jobs_of_queue =
            if engines.iter().any(|j| j.0 != Engine::Kernel) { (0..queues(n, nvme.io_queues as usize)).map(|q| (0..n).filter(|&j| map[j] == q).collect()).collect() } else { Vec::new() };
        Host {
            sq_threads: vec![Timeline::default(); if uses(Engine::IoUringSqpoll) { n } else { 0 }],
            engines: Engines::new(&h.costs, &engines),
            asleep: vec![false; n],
            jobs_of_queue,
            disk: DiskStats::default(),
            reap_level: vec![[0; 7]; n],
            cpus: vec![Timeline::default(); n],
            irq_cpu: (0..queues(n, nvme.io_queues as usize)).map(|q| map.iter().position(|&x| x == q).unwrap_or(0)).collect(),
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
            copy_rate: h.copy.then(|| ByteRate::new(1e12 / h.copy_bandwidth.0)),
            memcpy_rate: ByteRate::new(1e12 / h.copy_bandwidth.0),
            cache,
            reads: FxHashMap::default(),
            waiters: FxHashMap::default(),
            waiting: FxHashMap::default(),
            writebacks: FxHashMap::default(),
            stopped: VecDeque::new(),
            flusher: Timeline::default(),
            flusher_rr: 0,
            page_size: nvme.page_size.0,
            share: share::Share::new(h, &cgroups).map(Box::new),
            cgroups,
            released: Vec::new(),
            threads,
            memory: None,
            virtio: nvme.interface == Interface::VirtioBlk,
            extended_lba: nvme.extended_lba,
            metadata: (nvme.metadata_size.0 > 0).then(|| {
                let (lba, ms) = (nvme.lba_size.0, nvme.metadata_size.0);
                (if nvme.extended_lba { lba + ms } else { lba }, lba, ms)
            }),
        }
    }

    /// The NVMe arbitration class of every job's queue pair (its tenant's).
    pub fn queue_classes(&self) -> Vec<WrrClass> {
        // Jobs of one queue belong to one tenant (validation).
        self.irq_cpu.iter().map(|&j| self.cgroups.get(self.threads[j].tenant.index()).map_or(WrrClass::Medium, |t| t.class)).collect()
    }

    /// Whether the host reaps `c`'s completion by polling its CQ (`host.completion`: always,
    /// never, or below a size) rather than by interrupt. The page cache's requests complete by
    /// interrupt (polling is for O_DIRECT).
    #[inline]
    pub fn reaps_by_polling(&self, c: &Command) -> bool {
        let engine = self.engines.of(c.job.index());
        if engine != Engine::Kernel {
            return engine.polls() && c.origin == Origin::App;
        }
        let polls = match self.completion {
            Completion::Poll => true,
            Completion::Interrupt => false,
            Completion::Hybrid => c.len <= self.hybrid_threshold,
        };
        polls && c.origin == Origin::App
    }

    /// Host CPU time spent, and the CPUs it is spread over, for statistics.
    pub fn publish(&self, m: &mut Metrics) {
        let cpu = self.cpus.iter().fold(SimDuration::ZERO, |a, c| a + c.busy());
        m.count(&HOST_CPU_BUSY, cpu.as_ps());
        m.count(&HOST_SCHEDULER_BUSY, self.scheduler.as_ref().map_or(0, |s| s.busy().as_ps()));
        m.count(&HOST_SPIN, self.spin.as_ps());
        if !self.jobs_of_queue.is_empty() {
            m.count(&HOST_SQ_THREAD_BUSY, self.sq_threads.iter().fold(SimDuration::ZERO, |a, c| a + c.busy()).as_ps());
            m.count(&HOST_SYSCALLS, self.engines.syscalls);
            m.count(&HOST_WAKEUPS, self.engines.wakeups);
        }
        for (name, lock) in [("tag_lock", &self.tag_lock), ("queue_lock", &self.queue_lock)] {
            let Some(l) = lock else { continue };
            m.count_of(&HOST_LOCK_BUSY, name, l.busy.as_ps());
            m.count_of(&HOST_LOCK_ACQUISITIONS, name, l.acquisitions);
            m.count_of(&HOST_LOCK_MIGRATIONS, name, l.migrations);
        }
        m.gauge(&HOST_CPUS, self.cpus.len() as f64);
        let flat = |v: &[[u64; 7]]| v.iter().flatten().copied().collect::<Vec<u64>>();
        m.counts(&HOST_IODEPTH_COMPLETE, &flat(&self.reap_level));
        let d = &self.disk;
        m.count(&HOST_DISK_READ_IOS, d.ios[0]);
        m.count(&HOST_DISK_WRITE_IOS, d.ios[1]);
        m.count(&HOST_DISK_READ_TICKS, d.ticks[0].as_ps());
        m.count(&HOST_DISK_WRITE_TICKS, d.ticks[1].as_ps());
        m.count(&HOST_DISK_BUSY, d.busy.as_ps());
        m.count(&HOST_DISK_IN_QUEUE, u64::try_from(d.in_queue).unwrap_or(u64::MAX));
        if let Some(c) = &self.cache {
            let st = &c.stats;
            let (_, limit) = c.thresholds();
            m.count(&HOST_PAGE_CACHE_READ_PAGES, st.read_pages);
            m.count(&HOST_PAGE_CACHE_HIT_PAGES, st.hit_pages);
            m.gauge(&HOST_PAGE_CACHE_HIT_RATIO, if st.read_pages > 0 { st.hit_pages as f64 / st.read_pages as f64 } else { 0.0 });
            m.count(&HOST_PAGE_CACHE_READAHEAD_PAGES, st.readahead_pages);
            m.count(&HOST_PAGE_CACHE_LARGEST_WINDOW, st.largest_window);
            m.count(&HOST_PAGE_CACHE_DEVICE_READS, st.device_reads);
            m.count(&HOST_PAGE_CACHE_DEVICE_READ_BYTES, st.device_read_bytes);
            m.count(&HOST_PAGE_CACHE_DEVICE_WRITES, st.device_writes);
            m.count(&HOST_PAGE_CACHE_DEVICE_WRITE_BYTES, st.device_write_bytes);
            m.count(&HOST_PAGE_CACHE_DIRTIED_PAGES, st.written_pages);
            m.count(&HOST_PAGE_CACHE_EVICTED_PAGES, st.evicted);
            m.count(&HOST_PAGE_CACHE_DIRTY_MAX, st.dirty_max * PAGE);
            m.count(&HOST_PAGE_CACHE_DIRTY_LIMIT, limit * PAGE);
            m.count(&HOST_PAGE_CACHE_DIRTY_AT_END, c.dirty_pages() * PAGE);
            m.count(&HOST_PAGE_CACHE_PAUSED, st.paused);
            m.count(&HOST_PAGE_CACHE_PAUSE_TIME, st.pause_time.as_ps());
            m.count(&HOST_PAGE_CACHE_STOPPED, st.stopped);
            m.count(&HOST_PAGE_CACHE_FSYNCS, st.fsyncs);
            m.count(&HOST_PAGE_CACHE_FSYNC_TIME, st.fsync_time.as_ps());
            m.count(&HOST_FLUSHER_BUSY, self.flusher.busy().as_ps());
        }
        if let Some(sh) = &self.share {
            m.count(&HOST_SHARE_HELD, sh.held);
            m.count(&HOST_SHARE_HELD_TIME, sh.held_time.as_ps());
            m.gauge(&HOST_SHARE_VRATE, sh.vrate());
        }
    }

    /// The run starts: the cgroup controller's QoS period begins.
    pub fn start(&mut self, ctx: &mut Ctx) {
        if let Some(sh) = self.share.as_ref().filter(|s| s.has_qos()) {
            ctx.at(SimTime::ZERO + sh.qos_period, Out::Host(Event::QosTick));
        }
    }

    /// The host's own events (interrupts and the QoS period are routed by the simulation,
    /// which brings what other blocks contribute).
    #[inline]
    pub fn handle(&mut self, ctx: &mut Ctx, ev: Event) {
        match ev {
            Event::CqeSeen { cmd } => {
                // The thread spun from its submission until now (counted once per job).
                let c = &ctx.cmds[cmd];
                let job = c.job.index();
                let from = c.submitted.max(self.spun_until[job]);
                self.spin += ctx.now.since(from);
                self.spun_until[job] = ctx.now;
                self.reap_level[job][1] += 1;
                let cost = if self.engines.of(job) == Engine::Kernel {
                    self.poll_cost
                } else {
                    let idle = self.cpus[job].free_at() <= ctx.now;
                    self.engines.poll_cost(job, idle)
                };
                self.finish(ctx, cmd, cost, true);
            }
            Event::TagLock { cmd } => self.on_tag_lock(ctx, cmd),
            Event::Insert { cmd } => self.on_insert(ctx, cmd),
            Event::Schedule { cmd } => self.on_schedule(ctx, cmd),
            Event::Dispatch { cmd } => self.on_dispatch(ctx, cmd),
            Event::SchedulerFree => self.sched_next(ctx),
            Event::EndRequest { cmd, ring_cq } => self.on_end_request(ctx, cmd, ring_cq),
            Event::ShareOffer { cmd } => self.on_share_offer(ctx, cmd),
            Event::ShareWake { tenant } => self.on_share_wake(ctx, tenant),
            Event::CacheAccess { cmd } => self.on_cache_access(ctx, cmd),
            Event::CacheResume { cmd } => {
                ctx.cmds[cmd].account(Component::PageCache, ctx.now);
                ctx.at(ctx.now, Out::Host(Event::Complete { cmd, ring_cq: false }));
            }
            // The router brings what other blocks contribute to these (the NVMe queues' landed
            // CQEs, whether any job is still active) or takes what they give (a job's command
            // that completed).
            Event::Interrupt { .. } | Event::Handler { .. } | Event::QosTick | Event::Complete { .. } => unreachable!("routed by the simulation"),
        }
    }

    /// A job's I/O `id` enters the host (its system call): the submitting thread's own work
    /// (the path to the driver, a copy of write data into a kernel buffer, its side of a
    /// hand-off to the scheduler thread), then the rest of submission. A buffered read or
    /// write goes to the page cache instead, a trim drops its ranges from it first.
    #[inline]
    pub fn submit(&mut self, ctx: &mut Ctx, id: CmdId) {
        let c = &mut ctx.cmds[id];
        let job = c.job.index();
        c.queue = QueueId(self.queue_of[job]);
        let engine = self.engines.of(job);
        if engine == Engine::Null {
            // fio's null engine: the I/O completes in the engine; no device sees it.
            let g = self.cpus[job].reserve(ctx.now, self.engines.submit(job, ctx.now, false).app);
            Self::account(ctx, id, g);
            ctx.at(g.end, Out::Host(Event::Complete { cmd: id, ring_cq: false }));
            return;
        }
        // What the application asked for, in the host's bytes.
        let io = (c.op, c.offset, c.len);
        let c = &mut ctx.cmds[id];
        if let Some((block, lba, ms)) = self.metadata {
            // The host addresses blocks of `block` bytes (data and, interleaved, metadata); the
            // drive's blocks hold `lba` bytes of data, the metadata moves beside it (a trim
            // moves none).
            let to_drive = |(o, l): (u64, u64)| (o / block * lba, l / block * lba);
            (c.offset, c.len) = to_drive((c.offset, c.len));
            c.md = if c.op == Op::Trim { 0 } else { c.len / lba * ms };
            if let Some(r) = c.ranges.as_mut() {
                r.iter_mut().for_each(|x| *x = to_drive(*x));
            }
        }
        let (op, offset, len) = io;
        if op == Op::Trim {
            // A discard drops its ranges from the page cache, then goes to the device as it is.
            if let Some(cache) = self.cache.as_mut() {
                // (A namespace with metadata takes no buffered jobs: these are host bytes.)
                for (o, l) in c.extents() {
                    cache.discard(o / PAGE, (o + l).div_ceil(PAGE) - o / PAGE);
                }
            }
        } else if self.threads[job].buffered {
            if let Some(cache) = &self.cache {
                // A buffered read or write: the system call and the page look-ups (and a
                // write's copy into the cache), then the cache decides.
                let cfg = cache.config();
                let pages = (offset + len).div_ceil(PAGE) - offset / PAGE;
                let mut cost = cfg.syscall_cost + SimDuration::from_ps(cfg.page_cost.as_ps() * pages);
                if op == Op::Write {
                    cost += self.memcpy(len);
                }
                let g = self.cpus[job].reserve(ctx.now, cost);
                Self::account(ctx, id, g);
                ctx.at(g.end, Out::Host(Event::CacheAccess { cmd: id }));
                return;
            }
        }
        // A trim's data is its one range descriptor.
        let pages = if op == Op::Trim { 1 } else { div_ceil(len, self.page_size) };
        // virtio-blk describes the buffer with a descriptor; NVMe needs a PRP list past two pages.
        c.prp_entries = if pages > 2 && !self.virtio { pages - 1 } else { 0 };
        if let Some(m) = &mut self.memory {
            m.assign(job, c);
        }
        let (mut cost, sq) = if engine == Engine::Kernel {
            (self.submit_cost, SimDuration::ZERO)
        } else {
            let busy = self.cpus[job].free_at() > ctx.now;
            let s = self.engines.submit(job, ctx.now, busy);
            (s.app, s.sq_thread)
        };
        if op == Op::Write {
            cost += self.copy_time(len);
        }
        if self.scheduler.is_some() {
            cost += self.context_switch;
        }
        let mut g = self.cpus[job].reserve(ctx.now, cost);
        Self::account(ctx, id, g);
        if sq > SimDuration::ZERO {
            // The SQ thread finds the entry on its next pass over the ring and submits it.
            g = self.sq_threads[job].reserve(g.end, sq);
            Self::account(ctx, id, g);
        }
        self.after_submit(ctx, id, g.end, SubmitStage::Cpu);
    }

    fn account(ctx: &mut Ctx, id: CmdId, g: Grant) {
        let c = &mut ctx.cmds[id];
        c.account(Component::HostQueueing, g.start);
        c.account(Component::HostSoftware, g.end);
    }

    fn copy_time(&self, len: u64) -> SimDuration {
        self.copy_rate.map_or(SimDuration::ZERO, |p| p.time(len))
    }

    /// A memcpy of `len` bytes on one CPU.
    fn memcpy(&self, len: u64) -> SimDuration {
        self.memcpy_rate.time(len)
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
        let mut c = Command::new(self.threads[job].tenant, JobId(job as u32), op, run.first * PAGE, run.pages * PAGE, now);
        c.queue = QueueId(self.queue_of[job]);
        c.origin = Origin::PageCache;
        let pages = div_ceil(c.len, self.page_size);
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
            // (Below the thread count: the next in turn wraps by a comparison, not a division.)
            let job = self.flusher_rr;
            self.flusher_rr = if job + 1 >= self.threads.len() { 0 } else { job + 1 };
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

    /// `job` calls fsync: it returns when the dirty pages are on the device.
    pub fn fsync(&mut self, ctx: &mut Ctx, job: JobId) {
        let now = ctx.now;
        let done = self.cache.as_mut().is_none_or(|c| c.fsync(job.index(), now));
        if done {
            self.fsync_done(ctx, job.index(), now);
        } else {
            self.pump_writeback(ctx);
        }
    }

    /// `job`'s fsync returns, after waiting since `since`.
    fn fsync_done(&mut self, ctx: &mut Ctx, job: usize, since: SimTime) {
        if let Some(c) = self.cache.as_mut() {
            c.stats.fsync_time += ctx.now.since(since);
        }
        ctx.at(ctx.now, Out::FsyncDone { job: JobId(job as u32) });
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

    /// The cgroup controller's QoS period ends: it sets a new vrate, and requests held under
    /// the old one are looked at again; the next period is armed while a job is `active`.
    pub fn qos_tick(&mut self, ctx: &mut Ctx, active: bool) {
        let Some(sh) = self.share.as_mut() else { return };
        sh.qos_tick(ctx.now);
        let period = sh.qos_period;
        self.revisit_share(ctx);
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
}
