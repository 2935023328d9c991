//! The simulation: it owns every block, the event queue and the observer, and walks each
//! command through the path. Blocks hold state and do arithmetic; this module decides what
//! happens next. Each handler runs at the moment a command *arrives* at a resource and
//! reserves it then, which keeps the FIFO timelines exact.
//!
//! Every command carries a [`Breakdown`] and a `mark` (the instant up to which its time has
//! been attributed). Each step attributes `[mark, t)` to one component and moves the mark, so
//! the components of every I/O add up to its latency exactly.

use std::time::Instant;

use crate::config::Config;
use crate::ctrl::{self, Ctrl, Mode, Step};
use crate::error::{Error, Result};
use crate::host::{self, Completion, Host};
use crate::ats::synth::Layout;
use crate::ats::{Access, Atc};
use crate::ftl::{FlashOp, Ftl, FtlCounters, Precondition};
use crate::media::nand::{self, NandArray, NandCounters};
use crate::media::{self, Media, MediaKind};
use crate::nvme::{self, CmdId, Nvme, QueueId, CQE_BYTES, DOORBELL_BYTES, MSI_BYTES, PRP_ENTRY_BYTES, SQE_BYTES};
use crate::pcie::{self, Dir, Link, Tlp};
use crate::sim::{EventQueue, SimDuration, SimTime};
use crate::stats::{AtsSummary, HostSummary, Breakdown, Component, IoLog, IoRecord, LinkTraffic, Observer, Stats, Summary, Utilisation};
use crate::workload::replay::Replay;
use crate::workload::{Io, JobGen, Op};

/// Every event of the simulation, by the block that handles it.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    Host(host::Event),
    Pcie(pcie::Event),
    Nvme(nvme::Event),
    Ctrl(ctrl::Event),
    Media(media::Event),
}

/// A command in flight.
#[derive(Clone, Debug)]
struct Command {
    job: u32,
    queue: QueueId,
    op: Op,
    offset: u64,
    len: u64,
    issued: SimTime,
    /// Time up to which the breakdown is filled in.
    mark: SimTime,
    breakdown: Breakdown,
    /// PRP-list entries (0 when PRP1/PRP2 suffice).
    prp_entries: u64,
    pieces: u64,
    pieces_left: u64,
    /// Write: the latest unit completion among pieces, and that piece's length.
    crit_end: SimTime,
    crit_len: u64,
    /// Read: media time (without waits) of the piece that became ready last.
    crit_media: SimDuration,
    /// DMA addresses: the SQ/CQ slot, and the data buffer (a base address, or for buffered
    /// I/O the number that picks its page-cache pages).
    slot: u64,
    buf: u64,
    /// When the host finished submitting (a polling thread spins from here).
    submitted: SimTime,
    /// Transfer engine: the next piece to issue, and the byte it starts at in the I/O.
    next_piece: u32,
    next_at: u32,
}

impl Command {
    /// Attributes `[mark, until)` to `c`.
    #[inline]
    fn account(&mut self, c: Component, until: SimTime) {
        self.breakdown.0[c as usize] += until.since(self.mark).as_ps();
        self.mark = self.mark.max(until);
    }
}

/// Where a request is on its way out of the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SubmitStage {
    Cpu,
    Lock,
    Scheduler,
}

/// Open-loop arrivals a job may hold back before the run fails as unsustainable.
const MAX_BACKLOG: usize = 1 << 22;

/// The media behind the controller.
enum Backend {
    Nvm(Media),
    Nand(Box<Flash>),
}

/// NAND flash: the FTL, the array and the write buffer.
struct Flash {
    ftl: Ftl,
    array: NandArray,
    unit: u64,
    buffer_units: u64,
    buffer_used: u64,
    buffer_latency: SimDuration,
    /// Writes waiting for buffer space, oldest first.
    waiting: std::collections::VecDeque<CmdId>,
    ops: Vec<FlashOp>,
    out: Vec<nand::Output>,
    precondition: PreconditionReport,
    /// Background GC: idle time that starts it (zero = off), its target, the last host
    /// activity, and whether a check is pending.
    bg_idle: SimDuration,
    bg_target: f64,
    last_activity: SimTime,
    bg_armed: bool,
    /// Free blocks after each foreground GC activation: (seconds, blocks), thinned to at most
    /// `SERIES_MAX` points.
    free_series: Vec<(f64, u32)>,
    series_step: u64,
    last_gc_runs: u64,
}

/// Points kept in a time series before it is thinned by half.
const SERIES_MAX: usize = 4096;

/// The state preconditioning left the drive in.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PreconditionReport {
    pub state: String,
    /// Drive writes of random overwrites done by `aged`.
    pub drive_writes: f64,
    /// WAF of the last stretch of preconditioning writes.
    pub waf: f64,
    pub free_blocks: u32,
    /// Mean valid fraction of full blocks.
    pub valid_fraction: f64,
    pub wall_s: f64,
}

/// Flash results: FTL and array counters over the measured run.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FlashSummary {
    pub waf: f64,
    pub ftl: FtlCounters,
    pub nand: NandCounters,
    pub free_blocks: u32,
    pub erase_count_min: u32,
    pub erase_count_max: u32,
    pub erase_count_mean: f64,
    pub buffer_hits: u64,
    pub unmapped_reads: u64,
    pub mapping_heap_bytes: u64,
    pub precondition: PreconditionReport,
    /// Busy fraction of each die.
    pub die_utilisation: Vec<f64>,
    /// Free blocks over time: `[seconds, blocks]` at the start and after GC activations.
    pub free_blocks_over_time: Vec<(f64, u32)>,
}

/// Where the host keeps what the device DMAs to, and what the device does with the addresses:
/// record them, look them up in its ATC, or both.
struct Dma {
    /// One layout per VM; job `j` is queue `j / vms` of VM `j mod vms`.
    layouts: Vec<Layout>,
    vms: usize,
    tails: Vec<u64>,
    rng: crate::sim::Rng,
    seq: u64,
    log: Option<Vec<Access>>,
    atc: Option<Atc>,
    round_trip: SimDuration,
    scratch: Vec<(u64, u32, bool)>,
}

impl Dma {
    fn new(config: &Config, jobs: usize, round_trip: SimDuration) -> Result<Self> {
        use rand::SeedableRng;
        let h = &config.host;
        let vms = (h.vms as usize).clamp(1, jobs.max(1));
        let layouts: Vec<Layout> = (0..vms)
            .map(|vm| {
                let queues = jobs.div_ceil(vms) as u32;
                Layout::new(h.dma_layout.into(), queues.max(1), h.memory.0, h.buffer_pool.0, 2 << 20, config.workload.max_bs().max(4096), config.workload.randseed, vm as u32)
            })
            .collect();
        let atc = if config.ats.enabled {
            let pins: Vec<(u32, u64, u64)> = layouts.iter().enumerate().flat_map(|(vm, l)| l.rings().into_iter().map(move |(s, e)| (vm as u32, s, e))).collect();
            if config.ats.pin_rings {
                let shift = 12 + config.ats.stu_exponent();
                let mut pages: Vec<(u32, u64)> = pins.iter().flat_map(|&(vm, s, e)| ((s >> shift)..=((e - 1) >> shift)).map(move |p| (vm, p))).collect();
                pages.sort_unstable();
                pages.dedup();
                let most = if config.ats.ways == 0 { config.ats.lines } else { config.ats.ways };
                if pages.len() as u32 > most {
                    return Err(Error::config(
                        "ats.lines",
                        config.ats.lines.to_string(),
                        format!("the pinned SQ/CQ translations need {} lines at this STU (one ring pair per job): raise ats.lines or set ats.pin_rings = false", pages.len()),
                    ));
                }
            }
            Some(Atc::new(&config.ats, &pins, round_trip, config.workload.randseed))
        } else {
            None
        };
        Ok(Dma {
            tails: vec![0; jobs],
            rng: crate::sim::Rng::from_seed(crate::sim::stream_seed(config.workload.randseed, 0xD4A).to_le_bytes()),
            seq: 0,
            log: None,
            atc,
            round_trip,
            scratch: Vec::new(),
            layouts,
            vms,
        })
    }
}

/// Per-job state besides its generator.
struct JobState {
    gen: JobGen,
    name: String,
    inflight: u32,
    iodepth: u32,
    thinktime: SimDuration,
    /// Open loop: arrivals waiting for a free slot (a replayed record carries its I/O).
    backlog: std::collections::VecDeque<(SimTime, Option<Io>)>,
}

/// A simulated host + link + `NVMe` SSD, ready to run.
pub struct Simulation {
    config: Config,
    now: SimTime,
    queue: EventQueue<Event>,
    host: Host,
    link: Link,
    nvme: Nvme,
    ctrl: Ctrl,
    backend: Backend,
    jobs: Vec<JobState>,
    cmds: Vec<Command>,
    free: Vec<u32>,
    stats: Stats,
    submit_cost: SimDuration,
    complete_cost: SimDuration,
    poll_cost: SimDuration,
    completion: Completion,
    hybrid_threshold: u64,
    scheduler: bool,
    scheduler_service: SimDuration,
    context_switch: SimDuration,
    tag_lock: Option<SimDuration>,
    copy_ps_per_byte: Option<f64>,
    /// Per job: until when its polling thread's spinning is already counted.
    spun_until: Vec<SimTime>,
    /// The controller's DMA engines (`ctrl.dma_queues`): none, one shared, or read and write.
    dma_engines: Vec<crate::sim::Timeline>,
    /// The transfer engine for NVM reads: window (0 = none), order, commands with pieces left.
    engine_window: u32,
    engine_rr: bool,
    engine_queue: std::collections::VecDeque<CmdId>,
    engine_inflight: u32,
    memory_latency: SimDuration,
    page_size: u64,
    coalesce_time: SimDuration,
    events: u64,
    started: bool,
    wall: f64,
    /// The first error that stopped the run.
    failure: Option<Error>,
    scratch: Vec<CmdId>,
    pieces: Vec<media::Piece>,
    buffer_hits: u64,
    unmapped_reads: u64,
    dma: Option<Box<Dma>>,
    /// Trace replay (`workload.replay.trace`), and its next record (timed replay).
    replay: Option<Box<Replay>>,
    replay_next: Option<(usize, Io)>,
}

impl Simulation {
    /// Builds every block from a validated config.
    pub fn new(config: Config) -> Result<Self> {
        let mut issues = crate::config::load::Issues::default();
        config.validate(&mut issues);
        if !issues.is_empty() {
            return Err(Error::Config(issues.0));
        }
        let w = &config.workload;
        let jobs = w
            .job_configs()
            .into_iter()
            .enumerate()
            .map(|(j, (name, _, jw))| {
                let region = config.region_size_of(&jw);
                Ok(JobState { gen: JobGen::new(&jw, region, j as u32)?, inflight: 0, iodepth: jw.iodepth, thinktime: jw.thinktime, name, backlog: std::collections::VecDeque::default() })
            })
            .collect::<Result<Vec<_>>>()?;
        let region = config.region_size_of(w);
        let replay = Replay::open(&w.replay, jobs.len(), w.offset.0, region, w.number_ios, w.runtime)?.map(Box::new);
        let h = &config.host;
        let link = Link::new(&config.pcie);
        // An ATS translation request: a read request up, the translation agent (host memory
        // latency), an 8-byte completion down.
        let p = &link.params;
        let round_trip = p.serialise(p.read_requests(8).wire_bytes as f64) + p.propagation + h.memory_latency + p.serialise(p.completions(8).wire_bytes as f64) + p.propagation;
        let dma = if config.ats.enabled { Some(Box::new(Dma::new(&config, jobs.len(), round_trip)?)) } else { None };
        Ok(Simulation {
            now: SimTime::ZERO,
            queue: EventQueue::new(),
            host: Host::new(jobs.len()),
            link,
            nvme: Nvme::new(&config.nvme, jobs.len()),
            ctrl: Ctrl::new(&config.ctrl),
            backend: match config.media.kind {
                MediaKind::Nvm => Backend::Nvm(Media::new(&config.media)),
                MediaKind::Nand => Backend::Nand(Box::new(Flash::new(&config)?)),
            },
            stats: Stats::new(&config.stats, SimTime::ZERO + w.ramp_time),
            submit_cost: h.submit_cost,
            complete_cost: h.complete_cost,
            poll_cost: h.poll_complete_cost,
            completion: h.completion,
            hybrid_threshold: h.hybrid_threshold.0,
            scheduler: h.scheduler == host::Scheduler::Thread,
            scheduler_service: h.context_switch + h.scheduler_cost,
            context_switch: h.context_switch,
            tag_lock: (h.tags == host::Tags::Lock).then_some(h.lock_hold),
            copy_ps_per_byte: h.copy.then(|| 1e12 / h.copy_bandwidth.0),
            spun_until: vec![SimTime::ZERO; jobs.len()],
            engine_window: config.ctrl.transfer_window,
            engine_rr: config.ctrl.split == ctrl::Split::RoundRobin,
            engine_queue: std::collections::VecDeque::new(),
            engine_inflight: 0,
            dma_engines: vec![crate::sim::Timeline::default(); match config.ctrl.dma_queues { ctrl::DmaQueues::None => 0, ctrl::DmaQueues::Shared => 1, ctrl::DmaQueues::Split => 2 }],
            memory_latency: h.memory_latency,
            page_size: config.nvme.page_size.0,
            coalesce_time: config.nvme.irq_coalesce_time,
            jobs,
            cmds: Vec::new(),
            free: Vec::new(),
            events: 0,
            started: false,
            wall: 0.0,
            failure: None,
            scratch: Vec::new(),
            pieces: Vec::new(),
            buffer_hits: 0,
            unmapped_reads: 0,
            dma,
            replay,
            replay_next: None,
            config,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Records every device-initiated DMA (SQE and PRP-list fetches, data, CQEs) in device
    /// order, with the host memory layout of `host.dma_layout` (see [`Simulation::dma_log`]).
    pub fn keep_dma_log(&mut self) -> Result<()> {
        if self.dma.is_none() {
            let jobs = self.jobs.len();
            self.dma = Some(Box::new(Dma::new(&self.config, jobs, SimDuration::ZERO)?));
        }
        if let Some(d) = &mut self.dma {
            d.log = Some(Vec::new());
        }
        Ok(())
    }

    /// The recorded DMA accesses (ring accesses are marked pinned).
    pub fn dma_log(&self) -> Option<&[Access]> {
        self.dma.as_ref().and_then(|d| d.log.as_deref())
    }

    /// Keeps one row per counted I/O (see [`Simulation::io_log`]).
    pub fn keep_io_log(&mut self) {
        self.stats.keep_log();
    }

    pub fn io_log(&self) -> Option<&IoLog> {
        self.stats.log()
    }

    /// Runs to the end.
    pub fn run(&mut self) -> Result<Summary> {
        while !self.run_events(1 << 20)? {}
        Ok(self.summary())
    }

    /// Processes up to `budget` events; returns whether the run has finished.
    pub fn run_events(&mut self, budget: u64) -> Result<bool> {
        let t0 = Instant::now();
        if !self.started {
            self.started = true;
            self.start();
        }
        let mut left = budget;
        while left > 0 && self.failure.is_none() {
            let Some((t, ev)) = self.queue.pop() else { break };
            self.now = t;
            self.events += 1;
            self.handle(ev);
            left -= 1;
        }
        self.wall += t0.elapsed().as_secs_f64();
        match self.failure.take() {
            Some(e) => Err(e),
            None => Ok(self.queue.is_empty()),
        }
    }

    /// Fraction of the work done, 0 to 1.
    pub fn progress(&self) -> f64 {
        if let Some(r) = &self.replay {
            return r.progress();
        }
        let n = self.jobs.len().max(1) as f64;
        self.jobs.iter().map(|j| j.gen.progress(self.now)).sum::<f64>() / n
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    fn start(&mut self) {
        if self.replay.is_some() {
            self.start_replay();
            return;
        }
        for job in 0..self.jobs.len() {
            if self.jobs[job].gen.open_loop() {
                self.queue.push(SimTime::ZERO, Event::Host(host::Event::Arrival { job: job as u32 }));
            } else {
                for _ in 0..self.jobs[job].iodepth {
                    if !self.jobs[job].gen.may_issue(self.now) {
                        break;
                    }
                    self.issue(job, SimTime::ZERO, false);
                }
            }
        }
    }

    #[inline]
    fn push(&mut self, t: SimTime, ev: Event) {
        self.queue.push(t, ev);
    }

    #[inline]
    fn cmd(&mut self, id: CmdId) -> &mut Command {
        &mut self.cmds[id.0 as usize]
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Host(e) => match e {
                host::Event::Arrival { job } => self.on_arrival(job as usize),
                host::Event::TraceArrival => self.on_trace_arrival(),
                host::Event::Interrupt { queue, count } => self.on_interrupt(queue, count as usize),
                host::Event::CqeSeen { cmd } => {
                    // The thread spun from its submission until now (counted once per job).
                    let c = &self.cmds[cmd.0 as usize];
                    let job = c.job as usize;
                    let from = c.submitted.max(self.spun_until[job]);
                    self.host.spin += self.now.since(from);
                    self.spun_until[job] = self.now;
                    self.finish_on_host(cmd, self.poll_cost, true);
                }
                host::Event::TagLock { cmd } => self.on_tag_lock(cmd),
                host::Event::Schedule { cmd } => self.on_schedule(cmd),
                host::Event::Complete { cmd, ring_cq } => self.on_complete(cmd, ring_cq),
            },
            Event::Pcie(pcie::Event::Send { cmd, tlp }) => self.on_send(cmd, tlp),
            Event::Pcie(pcie::Event::Translated { cmd, tlp, wait_ps }) => self.transmit(cmd, tlp, SimDuration::from_ps(u64::from(wait_ps))),
            Event::Nvme(e) => match e {
                nvme::Event::Doorbell { queue } => {
                    self.nvme.doorbell(queue);
                    self.try_fetch();
                }
                nvme::Event::IrqTimer { queue, gen } => {
                    if self.nvme.timer_fires(queue, gen) {
                        self.send_interrupt(queue);
                    }
                }
            },
            Event::Ctrl(ctrl::Event::Step { cmd, step }) => self.run_steps(cmd, step),
            Event::Media(e) => match e {
                media::Event::ReadStart { cmd } => {
                    if matches!(self.backend, Backend::Nand(_)) {
                        self.on_nand_read(cmd);
                    } else {
                        self.on_read_start(cmd);
                    }
                }
                media::Event::ReadBus { cmd, unit, len, at } => {
                    if let Backend::Nvm(m) = &mut self.backend {
                        let g = m.transfer(unit, self.now, u64::from(len));
                        self.cmds[cmd.0 as usize].crit_media = m.access_time(false, false) + g.end.since(g.start);
                        self.push(g.end, Event::Pcie(pcie::Event::Send { cmd, tlp: Tlp::DataOut { len, at } }));
                    }
                }
                media::Event::WriteStart { cmd } => {
                    if matches!(self.backend, Backend::Nand(_)) {
                        self.on_nand_write(cmd);
                    } else {
                        self.on_write_start(cmd);
                    }
                }
                media::Event::WriteUnit { cmd, unit, len } => self.on_write_unit(cmd, unit, len),
                media::Event::Buffered { cmd, len, at } => {
                    if let Backend::Nand(f) = &self.backend {
                        self.cmds[cmd.0 as usize].crit_media = f.buffer_latency;
                    }
                    self.push(self.now, Event::Pcie(pcie::Event::Send { cmd, tlp: Tlp::DataOut { len, at } }));
                }
                media::Event::BackgroundGc => self.on_background_gc(),
                media::Event::EngineFree => {
                    self.engine_inflight -= 1;
                    self.pump_engine();
                }
                media::Event::Nand(e) => {
                    if let Backend::Nand(f) = &mut self.backend {
                        let mut out = std::mem::take(&mut f.out);
                        f.array.handle(e, self.now, &mut out);
                        self.apply_nand(&mut out);
                        if let Backend::Nand(f) = &mut self.backend {
                            f.out = out;
                        }
                    }
                }
            },
        }
    }

    // ---- host -------------------------------------------------------------------------------

    fn on_arrival(&mut self, job: usize) {
        let now = self.now;
        if !self.jobs[job].gen.may_issue(now) {
            return;
        }
        if self.jobs[job].inflight < self.jobs[job].iodepth {
            self.issue(job, now, false);
        } else if self.jobs[job].backlog.len() >= MAX_BACKLOG {
            self.failure.get_or_insert_with(|| {
                Error::Workload(format!(
                    "job {job}: more than {MAX_BACKLOG} arrivals wait for a free iodepth slot; the device cannot sustain workload.rate_iops = {}",
                    self.config.workload.rate_iops
                ))
            });
        } else {
            self.jobs[job].backlog.push_back((now, None));
            self.jobs[job].gen.reserve_one();
        }
        if let Some(next) = self.jobs[job].gen.next_arrival(now) {
            self.push(next, Event::Host(host::Event::Arrival { job: job as u32 }));
        }
    }

    /// The next record of the replayed trace (`None` at its end or on an error, which stops the run).
    fn replay_record(&mut self) -> Option<(usize, Io, SimTime)> {
        let now = self.now;
        match self.replay.as_mut()?.next(now) {
            Ok(r) => r,
            Err(e) => {
                self.failure.get_or_insert(e);
                None
            }
        }
    }

    fn start_replay(&mut self) {
        if self.replay.as_ref().is_some_and(|r| r.timed()) {
            if let Some((job, io, at)) = self.replay_record() {
                self.replay_next = Some((job, io));
                self.push(at, Event::Host(host::Event::TraceArrival));
            }
            return;
        }
        for job in 0..self.jobs.len() {
            for _ in 0..self.jobs[job].iodepth {
                let Some((_, io, _)) = self.replay_record() else { return };
                self.issue_io(job, io, SimTime::ZERO);
            }
        }
    }

    /// A timed replay's record arrives: issued if its job has a free slot, else it waits.
    fn on_trace_arrival(&mut self) {
        let now = self.now;
        let Some((job, io)) = self.replay_next.take() else { return };
        if self.jobs[job].inflight < self.jobs[job].iodepth {
            self.issue_io(job, io, now);
        } else if self.jobs[job].backlog.len() >= MAX_BACKLOG {
            self.failure.get_or_insert_with(|| {
                Error::Workload(format!("job {job}: more than {MAX_BACKLOG} trace records wait for a free iodepth slot; the device cannot keep up with the trace (raise workload.replay.time_scale or iodepth)"))
            });
        } else {
            self.jobs[job].backlog.push_back((now, Some(io)));
        }
        if let Some((job, io, at)) = self.replay_record() {
            self.replay_next = Some((job, io));
            self.push(at.max(now), Event::Host(host::Event::TraceArrival));
        }
    }

    /// Starts a new I/O of `job` that arrived at `arrival`. An I/O that waited in the backlog
    /// was counted against the job's limit when it arrived (`reserved`).
    fn issue(&mut self, job: usize, arrival: SimTime, reserved: bool) {
        let state = &mut self.jobs[job];
        let io = if reserved { state.gen.next_reserved_io() } else { state.gen.next_io() };
        self.issue_io(job, io, arrival);
    }

    /// Starts `io` for `job`, arrived at `arrival`.
    fn issue_io(&mut self, job: usize, io: Io, arrival: SimTime) {
        let state = &mut self.jobs[job];
        state.inflight += 1;
        let pages = io.len.div_ceil(self.page_size);
        let pieces = match &self.backend {
            Backend::Nvm(m) => m.piece_count(io.offset, io.len),
            Backend::Nand(f) => (io.offset + io.len - 1) / f.unit - io.offset / f.unit + 1,
        };
        let command = Command {
            job: job as u32,
            queue: QueueId(job as u16),
            op: io.op,
            offset: io.offset,
            len: io.len,
            issued: arrival,
            mark: arrival,
            breakdown: Breakdown::default(),
            prp_entries: if pages > 2 { pages - 1 } else { 0 },
            pieces,
            pieces_left: 0,
            crit_end: SimTime::ZERO,
            crit_len: 0,
            crit_media: SimDuration::ZERO,
            slot: 0,
            buf: 0,
            submitted: SimTime::ZERO,
            next_piece: 0,
            next_at: 0,
        };
        let id = if let Some(i) = self.free.pop() {
            self.cmds[i as usize] = command;
            CmdId(i)
        } else {
            self.cmds.push(command);
            CmdId((self.cmds.len() - 1) as u32)
        };
        if let Some(d) = &mut self.dma {
            use rand::RngExt;
            let (vm, q) = (job % d.vms, job / d.vms);
            let lay = &mut d.layouts[vm];
            let slot = d.tails[job] % lay.depth;
            d.tails[job] += 1;
            d.seq += 1;
            let len = self.cmds[id.0 as usize].len;
            let buf = match lay.stack {
                crate::ats::synth::Stack::LinuxBuffered => d.seq,
                crate::ats::synth::Stack::LinuxIommu => lay.map_iova(q, len),
                _ => lay.buffers[d.rng.random_range(0..lay.buffers.len())],
            };
            let c = &mut self.cmds[id.0 as usize];
            c.slot = slot;
            c.buf = buf;
        }
        // The submitting thread's own work: the path to the driver, a copy of write data into a
        // kernel buffer, and its side of a hand-off to the scheduler thread.
        let mut cost = self.submit_cost;
        if io.op == Op::Write {
            cost += self.copy_time(io.len);
        }
        if self.scheduler {
            cost += self.context_switch;
        }
        let g = self.host.run(job, self.now, cost);
        let c = self.cmd(id);
        c.account(Component::HostQueueing, g.start);
        c.account(Component::HostSoftware, g.end);
        self.after_submit(id, g.end, SubmitStage::Cpu);
    }

    fn copy_time(&self, len: u64) -> SimDuration {
        self.copy_ps_per_byte.map_or(SimDuration::ZERO, |p| SimDuration::from_ps((len as f64 * p).round() as u64))
    }

    /// The rest of submission after `done`: the tag lock, the scheduler thread, the driver's
    /// SQ write and doorbell.
    fn after_submit(&mut self, id: CmdId, at: SimTime, done: SubmitStage) {
        if done == SubmitStage::Cpu && self.tag_lock.is_some() {
            self.push(at, Event::Host(host::Event::TagLock { cmd: id }));
            return;
        }
        if done != SubmitStage::Scheduler && self.scheduler {
            self.push(at, Event::Host(host::Event::Schedule { cmd: id }));
            return;
        }
        let c = &mut self.cmds[id.0 as usize];
        c.submitted = at;
        let queue = c.queue;
        self.nvme.enqueue(queue, id);
        self.push(at, Event::Pcie(pcie::Event::Send { cmd: id, tlp: Tlp::SqDoorbell }));
    }

    /// The tag lock: shared by every job, held `lock_hold`; the thread spins while it waits.
    fn on_tag_lock(&mut self, id: CmdId) {
        let hold = self.tag_lock.unwrap_or(SimDuration::ZERO);
        let now = self.now;
        let g = self.host.lock.reserve(now, hold);
        let job = self.cmds[id.0 as usize].job as usize;
        self.host.spin += g.wait;
        self.host.run(job, now, hold);
        let c = &mut self.cmds[id.0 as usize];
        c.account(Component::HostQueueing, g.start);
        c.account(Component::HostSoftware, g.end);
        self.after_submit(id, g.end, SubmitStage::Lock);
    }

    /// The scheduler thread: wakes (a context switch), does its work, issues the request.
    fn on_schedule(&mut self, id: CmdId) {
        let g = self.host.scheduler.reserve(self.now, self.scheduler_service);
        let c = &mut self.cmds[id.0 as usize];
        c.account(Component::HostQueueing, g.start);
        c.account(Component::HostSoftware, g.end);
        self.after_submit(id, g.end, SubmitStage::Scheduler);
    }

    /// Whether the host polls for this command's completion.
    fn polls(&self, len: u64) -> bool {
        match self.completion {
            Completion::Poll => true,
            Completion::Interrupt => false,
            Completion::Hybrid => len <= self.hybrid_threshold,
        }
    }

    fn on_interrupt(&mut self, queue: QueueId, count: usize) {
        let mut batch = std::mem::take(&mut self.scratch);
        batch.clear();
        batch.extend(self.nvme.take_signalled(queue, count));
        let last = batch.len().saturating_sub(1);
        for (i, &cmd) in batch.iter().enumerate() {
            let now = self.now;
            self.cmd(cmd).account(Component::Completion, now);
            self.finish_on_host(cmd, self.complete_cost, i == last);
        }
        self.scratch = batch;
    }

    /// Runs the host's completion work for `cmd` (and a copy of read data to the application);
    /// it completes when that is done.
    fn finish_on_host(&mut self, cmd: CmdId, cost: SimDuration, ring_cq: bool) {
        let c = self.cmd(cmd);
        let (job, op, len) = (c.job as usize, c.op, c.len);
        let cost = if op == Op::Read { cost + self.copy_time(len) } else { cost };
        let g = self.host.run(job, self.now, cost);
        let c = self.cmd(cmd);
        c.account(Component::HostQueueing, g.start);
        c.account(Component::HostSoftware, g.end);
        self.push(g.end, Event::Host(host::Event::Complete { cmd, ring_cq }));
    }

    fn on_complete(&mut self, id: CmdId, ring_cq: bool) {
        let now = self.now;
        if ring_cq {
            // The CQ head doorbell frees CQ slots; nothing waits for it but it uses the link.
            let t = self.link.params.writes(DOORBELL_BYTES);
            self.link.send(Dir::Down, now, t);
        }
        let c = &self.cmds[id.0 as usize];
        debug_assert_eq!(c.breakdown.total(), now.since(c.issued).as_ps());
        if let Some(d) = &mut self.dma {
            let job = c.job as usize;
            let (vm, q) = (job % d.vms, job / d.vms);
            if d.layouts[vm].stack == crate::ats::synth::Stack::LinuxIommu {
                // The driver unmaps the buffer as the I/O completes.
                d.layouts[vm].unmap_iova(q, c.buf, c.len);
            }
        }
        self.stats.io_completed(&IoRecord { job: c.job, op: c.op, offset: c.offset, len: c.len, issued: c.issued, submitted: c.submitted, completed: now, breakdown: &c.breakdown });
        let job = c.job as usize;
        self.free.push(id.0);
        let state = &mut self.jobs[job];
        state.inflight -= 1;
        match state.backlog.pop_front() {
            Some((arrival, Some(io))) => self.issue_io(job, io, arrival),
            Some((arrival, None)) => self.issue(job, arrival, true),
            // Closed-loop replay: the job takes the trace's next record (timed replay waits
            // for the record's own arrival).
            None if self.replay.is_some() => {
                let closed = !self.replay.as_ref().is_some_and(|r| r.timed());
                if let Some((_, io, _)) = closed.then(|| self.replay_record()).flatten() {
                    self.issue_io(job, io, now);
                }
            }
            None if !state.gen.open_loop() && state.gen.may_issue(now) => {
                let think = state.thinktime;
                if think > SimDuration::ZERO {
                    // The thread thinks, then issues (through the arrival path, which checks limits).
                    self.push(now + think, Event::Host(host::Event::Arrival { job: job as u32 }));
                } else {
                    self.issue(job, now, false);
                }
            }
            None => {}
        }
    }

    // ---- link -------------------------------------------------------------------------------

    /// A command's TLPs are ready: the device's DMAs first look up their translations.
    fn on_send(&mut self, id: CmdId, tlp: Tlp) {
        let wait = if self.dma.is_some() { self.dma_lookup(id, tlp) } else { SimDuration::ZERO };
        if wait > SimDuration::ZERO {
            // Waits fit in u32 picoseconds: a round trip plus a walk of at most 1 ms (validated).
            let wait_ps = u32::try_from(wait.as_ps()).unwrap_or(u32::MAX);
            self.push(self.now + SimDuration::from_ps(u64::from(wait_ps)), Event::Pcie(pcie::Event::Translated { cmd: id, tlp, wait_ps }));
        } else {
            self.transmit(id, tlp, SimDuration::ZERO);
        }
    }

    /// Records the DMA accesses of `tlp` and looks them up in the ATC; returns the wait.
    fn dma_lookup(&mut self, id: CmdId, tlp: Tlp) -> SimDuration {
        const PAGE: u64 = 4096;
        let Some(d) = self.dma.as_deref_mut() else { return SimDuration::ZERO };
        let c = &self.cmds[id.0 as usize];
        let job = c.job as usize;
        let (vm, q) = (job % d.vms, job / d.vms);
        let pasid = vm as u32;
        let lay = &d.layouts[vm];
        let mut list = std::mem::take(&mut d.scratch);
        list.clear();
        let data = |from: u64, len: u64, list: &mut Vec<(u64, u32, bool)>| {
            let mut at = from;
            while at < from + len {
                let page_end = (at / PAGE + 1) * PAGE;
                let n = page_end.min(from + len) - at;
                list.push((lay.data_page(c.buf, at / PAGE) + at % PAGE, n as u32, false));
                at += n;
            }
        };
        match tlp {
            Tlp::SqeRead => list.push((lay.sq[q] + (c.slot % lay.depth) * SQE_BYTES, SQE_BYTES as u32, true)),
            Tlp::Cqe => list.push((lay.cq[q] + (c.slot % lay.depth) * CQE_BYTES, CQE_BYTES as u32, true)),
            Tlp::PrpRead => list.push((lay.prp_pool[(c.slot as usize) % lay.prp_pool.len()], (c.prp_entries * PRP_ENTRY_BYTES) as u32, false)),
            Tlp::DataRead => data(0, c.len, &mut list),
            Tlp::DataOut { len, at } => data(u64::from(at), u64::from(len), &mut list),
            Tlp::SqDoorbell | Tlp::SqeData | Tlp::PrpData | Tlp::DataIn => {}
        }
        let mut wait = SimDuration::ZERO;
        for &(addr, size, ring) in &list {
            if let Some(log) = &mut d.log {
                log.push(Access { addr, size, pasid, pinned: ring });
            }
            if let Some(atc) = &mut d.atc {
                wait = wait.max(atc.lookup(pasid, addr, size));
            }
        }
        d.scratch = list;
        wait
    }

    fn transmit(&mut self, id: CmdId, tlp: Tlp, translated: SimDuration) {
        let now = self.now;
        if translated > SimDuration::ZERO && !matches!(tlp, Tlp::DataOut { .. }) {
            self.cmds[id.0 as usize].account(Component::Translation, now);
        }
        let p = &self.link.params;
        let prop = p.propagation;
        let (dir, tlps) = match tlp {
            Tlp::SqDoorbell => (Dir::Down, p.writes(DOORBELL_BYTES)),
            Tlp::SqeRead => (Dir::Up, p.read_requests(SQE_BYTES)),
            Tlp::SqeData => (Dir::Down, p.completions(SQE_BYTES)),
            Tlp::PrpRead => (Dir::Up, p.read_requests(self.cmds[id.0 as usize].prp_entries * PRP_ENTRY_BYTES)),
            Tlp::PrpData => (Dir::Down, p.completions(self.cmds[id.0 as usize].prp_entries * PRP_ENTRY_BYTES)),
            Tlp::DataRead => (Dir::Up, p.read_requests(self.cmds[id.0 as usize].len)),
            Tlp::DataIn => (Dir::Down, p.completions(self.cmds[id.0 as usize].len)),
            Tlp::DataOut { len, .. } => (Dir::Up, p.writes(u64::from(len))),
            Tlp::Cqe => (Dir::Up, p.writes(CQE_BYTES)),
        };
        // The first request of a batch leaves one request's time after the batch starts.
        let one_request = p.serialise((tlps.wire_bytes / tlps.count.max(1)) as f64);
        // Data goes through the controller's DMA engine when it has one: the transfer starts
        // when both the engine and the link direction are free, and holds the engine until
        // its last byte has left. (The link is reserved when the engine frees, slightly
        // ahead of other traffic arriving meanwhile: an approximation.)
        let engine = match (tlp, self.dma_engines.len()) {
            (Tlp::DataOut { .. } | Tlp::DataIn, 1) | (Tlp::DataOut { .. }, 2) => Some(0),
            (Tlp::DataIn, 2) => Some(1),
            _ => None,
        };
        let g = match engine {
            Some(e) => {
                let start = now.max(self.dma_engines[e].free_at());
                let g = self.link.send(dir, start, tlps);
                self.dma_engines[e].occupy(g.start, g.end);
                crate::sim::Grant { start: g.start, end: g.end, wait: g.start.since(now) }
            }
            None => self.link.send(dir, now, tlps),
        };
        let mem = self.memory_latency;
        let c = &mut self.cmds[id.0 as usize];
        match tlp {
            Tlp::SqDoorbell => {
                c.account(Component::Queueing, g.start);
                c.account(Component::DoorbellFetch, g.end + prop);
                let queue = c.queue;
                self.push(g.end + prop, Event::Nvme(nvme::Event::Doorbell { queue }));
            }
            Tlp::SqeRead | Tlp::PrpRead => {
                let (cat, next) = if tlp == Tlp::SqeRead { (Component::DoorbellFetch, Tlp::SqeData) } else { (Component::Prp, Tlp::PrpData) };
                c.account(Component::Queueing, g.start);
                let back = g.end + prop + mem;
                c.account(cat, back);
                self.push(back, Event::Pcie(pcie::Event::Send { cmd: id, tlp: next }));
            }
            Tlp::SqeData | Tlp::PrpData => {
                let (cat, step) = if tlp == Tlp::SqeData { (Component::DoorbellFetch, Step::Parse) } else { (Component::Prp, Step::PrpList) };
                c.account(Component::Queueing, g.start);
                c.account(cat, g.end + prop);
                self.push(g.end + prop, Event::Ctrl(ctrl::Event::Step { cmd: id, step }));
            }
            Tlp::DataRead => {
                c.account(Component::Queueing, g.start);
                // Completions start once the first request has reached host memory; the rest
                // of the requests are smaller than their data and keep the stream busy.
                let back = g.start + one_request + prop + mem;
                c.account(Component::Transfer, back);
                self.push(back, Event::Pcie(pcie::Event::Send { cmd: id, tlp: Tlp::DataIn }));
            }
            Tlp::DataIn => {
                c.account(Component::Queueing, g.start);
                c.account(Component::Transfer, g.end + prop);
                self.push(g.end + prop, Event::Media(media::Event::WriteStart { cmd: id }));
            }
            Tlp::DataOut { len, .. } => {
                if self.engine_window > 0 && matches!(self.backend, Backend::Nvm(_)) {
                    self.queue.push(g.end, Event::Media(media::Event::EngineFree));
                }
                let c = &mut self.cmds[id.0 as usize];
                c.pieces_left -= 1;
                if c.pieces_left == 0 {
                    // The link is FIFO, so the last piece sent is the last to finish: its path
                    // from translation to here is the command's critical path.
                    let _ = len;
                    let media = c.crit_media;
                    let transfer = g.end.since(g.start);
                    let elapsed = g.end.since(c.mark);
                    c.breakdown.0[Component::Media as usize] += media.as_ps();
                    c.breakdown.0[Component::Transfer as usize] += transfer.as_ps();
                    c.breakdown.0[Component::Translation as usize] += translated.as_ps();
                    c.breakdown.0[Component::Queueing as usize] += (elapsed - media - transfer - translated).as_ps();
                    c.mark = g.end;
                    self.push(g.end, Event::Ctrl(ctrl::Event::Step { cmd: id, step: Step::Completion }));
                }
            }
            Tlp::Cqe => {
                c.account(Component::Queueing, g.start);
                c.account(Component::Completion, g.end);
                let queue = c.queue;
                let len = c.len;
                self.ctrl.release();
                if self.polls(len) {
                    self.cmds[id.0 as usize].account(Component::Completion, g.end + prop);
                    self.push(g.end + prop, Event::Host(host::Event::CqeSeen { cmd: id }));
                } else {
                    let (fire, timer) = self.nvme.post_cqe(queue, id);
                    if fire {
                        self.send_interrupt(queue);
                    }
                    if let Some(gen) = timer {
                        self.push(now + self.coalesce_time, Event::Nvme(nvme::Event::IrqTimer { queue, gen }));
                    }
                }
                self.try_fetch();
            }
        }
    }

    fn send_interrupt(&mut self, queue: QueueId) {
        let count = self.nvme.signal(queue);
        let t = self.link.params.writes(MSI_BYTES);
        let g = self.link.send(Dir::Up, self.now, t);
        let arrival = g.end + self.link.params.propagation;
        self.push(arrival, Event::Host(host::Event::Interrupt { queue, count: count as u32 }));
    }

    // ---- controller -------------------------------------------------------------------------

    /// Fetches SQEs while tags are free, in arbitration order.
    fn try_fetch(&mut self) {
        while self.ctrl.has_free_tag() {
            let Some((_, id)) = self.nvme.arbitrate() else { break };
            self.ctrl.admit();
            self.run_steps(id, Step::Fetch);
        }
    }

    /// The step that follows `step` inside the controller, if there is no external wait.
    fn next_internal(c: &Command, step: Step) -> Option<Step> {
        match step {
            Step::Parse => Some(Step::Prp),
            Step::Prp if c.prp_entries == 0 => Some(Step::Translate),
            Step::PrpList => Some(Step::Translate),
            _ => None,
        }
    }

    fn component(step: Step) -> Component {
        match step {
            Step::Fetch => Component::DoorbellFetch,
            Step::Parse | Step::Translate => Component::Controller,
            Step::Prp | Step::PrpList => Component::Prp,
            Step::Completion => Component::Completion,
        }
    }

    fn items(c: &Command, step: Step) -> u64 {
        match step {
            Step::PrpList => c.prp_entries,
            Step::Translate => c.pieces,
            _ => 0,
        }
    }

    /// Runs `first` and, in firmware mode, every step that follows it without an external
    /// wait, on one core; in hardware mode `first` only, in its engine.
    fn run_steps(&mut self, id: CmdId, first: Step) {
        let now = self.now;
        let mut steps = [(first, 0u64); 4];
        let mut n = 1;
        let c = &self.cmds[id.0 as usize];
        steps[0].1 = Self::items(c, first);
        let mut last = first;
        if self.ctrl.mode() == Mode::Firmware {
            while let Some(s) = Self::next_internal(c, last) {
                steps[n] = (s, Self::items(c, s));
                n += 1;
                last = s;
            }
        }
        let svc = self.ctrl.serve(now, &steps[..n]);
        let mut costs = [(Component::Queueing, SimDuration::ZERO); 4];
        for (slot, &(s, k)) in costs.iter_mut().zip(&steps[..n]) {
            *slot = (Self::component(s), self.ctrl.cost(s, k));
        }
        let mut t = svc.start;
        let c = &mut self.cmds[id.0 as usize];
        c.account(Component::Queueing, svc.start);
        for &(comp, cost) in &costs[..n] {
            t += cost;
            c.account(comp, t.min(svc.end));
        }
        c.account(Self::component(last), svc.end);
        let next = match Self::next_internal(c, last) {
            Some(s) => Event::Ctrl(ctrl::Event::Step { cmd: id, step: s }),
            None => match last {
                Step::Fetch => Event::Pcie(pcie::Event::Send { cmd: id, tlp: Tlp::SqeRead }),
                Step::Prp => Event::Pcie(pcie::Event::Send { cmd: id, tlp: Tlp::PrpRead }),
                Step::Translate if c.op == Op::Read => Event::Media(media::Event::ReadStart { cmd: id }),
                Step::Translate => Event::Pcie(pcie::Event::Send { cmd: id, tlp: Tlp::DataRead }),
                Step::Completion => Event::Pcie(pcie::Event::Send { cmd: id, tlp: Tlp::Cqe }),
                Step::Parse | Step::PrpList => unreachable!("always followed by an internal step"),
            },
        };
        self.push(svc.end, next);
    }

    // ---- media: NVM ------------------------------------------------------------------------

    fn nvm(&mut self) -> &mut Media {
        match &mut self.backend {
            Backend::Nvm(m) => m,
            Backend::Nand(_) => unreachable!("NVM events are only scheduled with the NVM backend"),
        }
    }

    fn on_read_start(&mut self, id: CmdId) {
        let now = self.now;
        let (offset, len) = {
            let c = &mut self.cmds[id.0 as usize];
            c.pieces_left = c.pieces;
            (c.offset, c.len)
        };
        if self.engine_window > 0 {
            let c = &mut self.cmds[id.0 as usize];
            c.next_piece = 0;
            c.next_at = 0;
            self.engine_queue.push_back(id);
            self.pump_engine();
            return;
        }
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        pieces.extend(self.nvm().pieces(offset, len));
        let mut at = 0u32;
        for piece in &pieces {
            let g = self.nvm().access(piece.unit, now, false, piece.partial);
            self.push(g.end, Event::Media(media::Event::ReadBus { cmd: id, unit: piece.unit, len: piece.len, at }));
            at += piece.len;
        }
        self.pieces = pieces;
    }

    /// The transfer engine takes pieces while it has room: the oldest command's next piece
    /// (FIFO), or each command's next piece in turn (round robin).
    fn pump_engine(&mut self) {
        let now = self.now;
        while self.engine_inflight < self.engine_window {
            let Some(&id) = self.engine_queue.front() else { break };
            let (offset, len, k, at) = {
                let c = &self.cmds[id.0 as usize];
                (c.offset, c.len, c.next_piece, c.next_at)
            };
            let Some(piece) = self.nvm().pieces(offset + u64::from(at), len - u64::from(at)).next() else {
                self.engine_queue.pop_front();
                continue;
            };
            let c = &mut self.cmds[id.0 as usize];
            c.next_piece = k + 1;
            c.next_at = at + piece.len;
            let more = u64::from(c.next_at) < len;
            if self.engine_rr || !more {
                self.engine_queue.pop_front();
                if more {
                    self.engine_queue.push_back(id);
                }
            }
            self.engine_inflight += 1;
            let g = self.nvm().access(piece.unit, now, false, piece.partial);
            self.push(g.end, Event::Media(media::Event::ReadBus { cmd: id, unit: piece.unit, len: piece.len, at }));
        }
    }

    fn on_write_start(&mut self, id: CmdId) {
        let now = self.now;
        let (offset, len) = {
            let c = &mut self.cmds[id.0 as usize];
            c.pieces_left = c.pieces;
            c.crit_end = SimTime::ZERO;
            (c.offset, c.len)
        };
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        pieces.extend(self.nvm().pieces(offset, len));
        for piece in &pieces {
            let g = self.nvm().transfer(piece.unit, now, u64::from(piece.len));
            self.push(g.end, Event::Media(media::Event::WriteUnit { cmd: id, unit: piece.unit, len: piece.len }));
        }
        self.pieces = pieces;
    }

    fn on_write_unit(&mut self, id: CmdId, unit: u32, len: u32) {
        let now = self.now;
        let chunk = self.config.media.nvm.chunk.0;
        let m = self.nvm();
        let g = m.access(unit, now, true, u64::from(len) < chunk);
        // Bus (with the ring's hops), then the bank: read-modify-write for a partial chunk.
        let media_time = |m: &Media, l: u64| m.bus_time(l) + m.hops(unit) + m.access_time(true, l < chunk);
        let this_media = media_time(m, u64::from(len));
        let c = &mut self.cmds[id.0 as usize];
        if g.end >= c.crit_end {
            c.crit_end = g.end;
            c.crit_len = u64::from(len);
        }
        c.pieces_left -= 1;
        if c.pieces_left == 0 {
            let crit_len = c.crit_len;
            let crit_media = if crit_len == u64::from(len) {
                this_media
            } else if let Backend::Nvm(m) = &self.backend {
                media_time(m, crit_len)
            } else {
                this_media
            };
            let c = &mut self.cmds[id.0 as usize];
            let end = c.crit_end;
            let elapsed = end.since(c.mark);
            c.breakdown.0[Component::Media as usize] += crit_media.as_ps();
            c.breakdown.0[Component::Queueing as usize] += (elapsed - crit_media).as_ps();
            c.mark = end;
            self.push(end, Event::Ctrl(ctrl::Event::Step { cmd: id, step: Step::Completion }));
        }
    }

    // ---- media: NAND -----------------------------------------------------------------------

    /// Sends each unit of a read to the flash, the write buffer, or (unmapped) straight back.
    fn on_nand_read(&mut self, id: CmdId) {
        let now = self.now;
        let (offset, len) = {
            let c = &mut self.cmds[id.0 as usize];
            c.pieces_left = c.pieces;
            (c.offset, c.len)
        };
        let Backend::Nand(f) = &mut self.backend else { return };
        let bg = f.note_activity(now);
        let mut out = std::mem::take(&mut f.out);
        let unit = f.unit;
        let end = offset + len;
        let mut at = offset;
        let mut immediate: Vec<(u32, u32, bool)> = Vec::new();
        while at < end {
            let lpn = at / unit;
            let next = ((lpn + 1) * unit).min(end);
            let bytes = (next - at) as u32;
            let within = (at - offset) as u32;
            match f.ftl.lookup(lpn) {
                None => immediate.push((bytes, within, false)),
                Some(slot) => {
                    let (block, page) = f.ftl.locate(slot);
                    if f.array.is_programmed(block, page) {
                        f.array.submit_read(id, block, page, bytes, within, now, &mut out);
                    } else {
                        immediate.push((bytes, within, true));
                    }
                }
            }
            at = next;
        }
        let latency = f.buffer_latency;
        for (bytes, within, buffered) in immediate {
            if buffered {
                self.buffer_hits += 1;
                self.push(now + latency, Event::Media(media::Event::Buffered { cmd: id, len: bytes, at: within }));
            } else {
                // Never written: the controller returns zeroes without touching the flash.
                self.unmapped_reads += 1;
                self.cmds[id.0 as usize].crit_media = SimDuration::ZERO;
                self.push(now, Event::Pcie(pcie::Event::Send { cmd: id, tlp: Tlp::DataOut { len: bytes, at: within } }));
            }
        }
        self.apply_nand(&mut out);
        if let Backend::Nand(f) = &mut self.backend {
            f.out = out;
        }
        if let Some(t) = bg {
            self.push(t, Event::Media(media::Event::BackgroundGc));
        }
    }

    /// Write data has arrived: into the write buffer if there is room, else wait for it.
    fn on_nand_write(&mut self, id: CmdId) {
        let now = self.now;
        let Backend::Nand(f) = &mut self.backend else { return };
        let bg = f.note_activity(now);
        f.waiting.push_back(id);
        if let Some(t) = bg {
            self.push(t, Event::Media(media::Event::BackgroundGc));
        }
        self.admit_writes();
    }

    /// Background GC check: if the drive has been idle long enough, reclaim one victim and
    /// look again after the same idle time; if not, look again when it would be.
    fn on_background_gc(&mut self) {
        let now = self.now;
        let Backend::Nand(f) = &mut self.backend else { return };
        f.bg_armed = false;
        let due = f.last_activity + f.bg_idle;
        if now < due {
            f.bg_armed = true;
            self.push(due, Event::Media(media::Event::BackgroundGc));
            return;
        }
        let mut ops = std::mem::take(&mut f.ops);
        ops.clear();
        let target = f.bg_target;
        let more = match f.ftl.collect_background(target, &mut |op| ops.push(op)) {
            Ok(more) => more,
            Err(e) => {
                self.failure.get_or_insert(e);
                false
            }
        };
        let mut out = std::mem::take(&mut f.out);
        for &op in &ops {
            f.array.submit_flash(op, now, &mut out);
        }
        f.ops = ops;
        if more {
            f.bg_armed = true;
            let next = now + f.bg_idle;
            self.push(next, Event::Media(media::Event::BackgroundGc));
        }
        self.apply_nand(&mut out);
        if let Backend::Nand(f) = &mut self.backend {
            f.out = out;
        }
    }

    /// Moves waiting writes into the write buffer, oldest first, while they fit (a write
    /// larger than the whole buffer goes in alone when the buffer is empty).
    fn admit_writes(&mut self) {
        let now = self.now;
        loop {
            let Backend::Nand(f) = &mut self.backend else { return };
            let Some(&id) = f.waiting.front() else { return };
            let c = &self.cmds[id.0 as usize];
            let units = c.pieces;
            if f.buffer_used > 0 && f.buffer_used + units > f.buffer_units {
                return;
            }
            f.waiting.pop_front();
            f.buffer_used += units;
            let first = c.offset / f.unit;
            let mut ops = std::mem::take(&mut f.ops);
            ops.clear();
            let mut failed = None;
            for lpn in first..first + units {
                if let Err(e) = f.ftl.write(lpn, &mut |op| ops.push(op)) {
                    failed = Some(e);
                    break;
                }
            }
            let mut out = std::mem::take(&mut f.out);
            for &op in &ops {
                f.array.submit_flash(op, now, &mut out);
            }
            f.ops = ops;
            f.sample_free_blocks(now);
            let latency = f.buffer_latency;
            if let Some(e) = failed {
                self.failure.get_or_insert(e);
            }
            let c = &mut self.cmds[id.0 as usize];
            c.account(Component::Queueing, now);
            c.account(Component::Media, now + latency);
            self.push(now + latency, Event::Ctrl(ctrl::Event::Step { cmd: id, step: Step::Completion }));
            self.apply_nand(&mut out);
            if let Backend::Nand(f) = &mut self.backend {
                f.out = out;
            }
        }
    }

    /// Acts on what the NAND array reported.
    fn apply_nand(&mut self, out: &mut Vec<nand::Output>) {
        let mut freed = false;
        for o in out.drain(..) {
            match o {
                nand::Output::At(t, e) => self.queue.push(t, Event::Media(media::Event::Nand(e))),
                nand::Output::ReadReady { cmd, bytes, at, service } => {
                    self.cmds[cmd.0 as usize].crit_media = service;
                    self.queue.push(self.now, Event::Pcie(pcie::Event::Send { cmd, tlp: Tlp::DataOut { len: bytes, at } }));
                }
                nand::Output::Programmed { units } => {
                    if let Backend::Nand(f) = &mut self.backend {
                        f.buffer_used = f.buffer_used.saturating_sub(u64::from(units));
                        freed = true;
                    }
                }
            }
        }
        if freed {
            self.admit_writes();
        }
    }

    // ---- results ----------------------------------------------------------------------------

    /// The results so far.
    pub fn summary(&self) -> Summary {
        let read = self.stats.op_summary(Op::Read);
        let write = self.stats.op_summary(Op::Write);
        let bytes = read.bytes + write.bytes;
        let sim = self.now.as_secs_f64();
        let frac = |busy: SimDuration, n: usize| if sim > 0.0 { busy.as_secs_f64() / sim / n.max(1) as f64 } else { 0.0 };
        let up = self.link.stats(Dir::Up);
        let down = self.link.stats(Dir::Down);
        let (media_units, media_bus, flash) = match &self.backend {
            Backend::Nvm(m) => {
                let (units_busy, bus_busy) = m.busy();
                (frac(units_busy, m.unit_count()), frac(bus_busy, m.link_count()), None)
            }
            Backend::Nand(f) => {
                let (dies, channels) = f.array.utilisation(self.now.since(SimTime::ZERO));
                let c = f.ftl.counters();
                let (emin, emax, emean) = f.ftl.erase_spread();
                let summary = FlashSummary {
                    waf: c.waf(),
                    ftl: c,
                    nand: f.array.counters(),
                    free_blocks: f.ftl.free_blocks(),
                    erase_count_min: emin,
                    erase_count_max: emax,
                    erase_count_mean: emean,
                    buffer_hits: self.buffer_hits,
                    unmapped_reads: self.unmapped_reads,
                    mapping_heap_bytes: f.ftl.heap_bytes() as u64,
                    precondition: f.precondition.clone(),
                    die_utilisation: f.array.die_utilisation(self.now.since(SimTime::ZERO)),
                    free_blocks_over_time: f.free_series.clone(),
                };
                (dies, channels, Some(summary))
            }
        };
        let ios = self.stats.ios();
        let window = self.stats.window().as_secs_f64();
        Summary {
            version: crate::VERSION.to_string(),
            config_hash: self.config.hash(),
            seed: self.config.workload.randseed,
            ios,
            sim_time_s: sim,
            window_s: window,
            wall_time_s: self.wall,
            events: self.events,
            iops: if window > 0.0 { ios as f64 / window } else { 0.0 },
            bandwidth_mib_s: read.bandwidth_mib_s + write.bandwidth_mib_s,
            breakdown_us: self.stats.breakdown_all(),
            jobs: self.stats.job_summaries(&self.jobs.iter().map(|j| j.name.clone()).collect::<Vec<_>>()),
            read,
            write,
            utilisation: Utilisation {
                host_cpu: frac(self.host.busy(), self.jobs.len()),
                pcie_down: frac(down.busy, 1),
                pcie_up: frac(up.busy, 1),
                ctrl: frac(self.ctrl.busy(), self.ctrl.units()),
                media_units,
                media_bus,
            },
            pcie: LinkTraffic { down_tlps: down.tlps, down_wire_bytes: down.wire_bytes, up_tlps: up.tlps, up_wire_bytes: up.wire_bytes },
            host: {
                let cpu = self.host.cpu_time().as_secs_f64();
                let gb = bytes as f64 / 1e9;
                HostSummary {
                    cpu_seconds: cpu,
                    cpu_us_per_io: if ios > 0 { cpu * 1e6 / ios as f64 } else { 0.0 },
                    cpus_per_gb_s: if gb > 0.0 { cpu / gb } else { 0.0 },
                }
            },
            flash,
            replay: self.replay.as_ref().map(|r| r.summary()),
            ats: self.dma.as_ref().and_then(|d| d.atc.as_ref().map(|a| (a, d.round_trip))).map(|(a, rtt)| AtsSummary {
                stu_bytes: self.config.ats.stu.0,
                lines: self.config.ats.lines,
                ways: if self.config.ats.ways == 0 { self.config.ats.lines } else { self.config.ats.ways },
                lookups: a.lookups,
                hits: a.hits,
                hit_rate: if a.lookups > 0 { a.hits as f64 / a.lookups as f64 } else { 0.0 },
                pinned_hits: a.pinned_hits,
                misses: a.lookups - a.hits,
                misses_per_io: if ios > 0 { (a.lookups - a.hits) as f64 / ios as f64 } else { 0.0 },
                iotlb_misses: a.iotlb_misses,
                miss_round_trip_us: rtt.as_us_f64(),
            }),
        }
    }
}

impl Flash {
    /// Notes host activity; returns when to schedule a background-GC check, if one is due.
    fn note_activity(&mut self, now: SimTime) -> Option<SimTime> {
        self.last_activity = now;
        if self.bg_idle == SimDuration::ZERO || self.bg_armed {
            return None;
        }
        self.bg_armed = true;
        Some(now + self.bg_idle)
    }

    /// Records the free-block count after each new foreground GC activation.
    fn sample_free_blocks(&mut self, now: SimTime) {
        let runs = self.ftl.counters().gc_runs;
        if runs == self.last_gc_runs {
            return;
        }
        self.last_gc_runs = runs;
        if !runs.is_multiple_of(self.series_step) {
            return;
        }
        self.free_series.push((now.as_secs_f64(), self.ftl.free_blocks()));
        if self.free_series.len() >= SERIES_MAX {
            // Keep every other point (the first stays) and sample half as often from now on.
            let mut i = 0;
            self.free_series.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.series_step *= 2;
        }
    }

    /// The FTL and array of a NAND config, preconditioned as it asks (without timing).
    fn new(config: &Config) -> Result<Self> {
        let seed = config.workload.randseed;
        let mut ftl = Ftl::new(&config.media.nand, &config.ftl, seed)?;
        let t0 = Instant::now();
        let mut report = PreconditionReport { state: config.ftl.precondition.as_str().to_string(), waf: 1.0, ..PreconditionReport::default() };
        match config.ftl.precondition {
            Precondition::Clean => {}
            Precondition::Sequential => ftl.fill_sequential()?,
            Precondition::Aged => {
                let (dw, waf) = ftl.precondition_aged(config.ftl.precondition_drive_writes, seed)?;
                report.drive_writes = dw;
                report.waf = waf;
            }
        }
        report.wall_s = t0.elapsed().as_secs_f64();
        report.free_blocks = ftl.free_blocks();
        report.valid_fraction = ftl.full_valid_fraction();
        ftl.reset_counters();
        let g = ftl.geometry().clone();
        let mut array = NandArray::new(&config.media.nand, g.clone());
        for b in 0..g.blocks() {
            array.set_programmed(b, ftl.written_pages(b));
        }
        let unit = config.ftl.mapping_unit.0;
        Ok(Flash {
            ftl,
            array,
            unit,
            buffer_units: (config.ftl.write_buffer.0 / unit).max(1),
            buffer_used: 0,
            buffer_latency: config.ftl.buffer_latency,
            waiting: std::collections::VecDeque::new(),
            ops: Vec::new(),
            out: Vec::new(),
            bg_idle: config.ftl.bg_gc_idle,
            bg_target: config.ftl.bg_gc_target,
            last_activity: SimTime::ZERO,
            bg_armed: false,
            free_series: vec![(0.0, report.free_blocks)],
            series_step: 1,
            last_gc_runs: 0,
            precondition: report,
        })
    }
}

/// Builds and runs a simulation.
pub fn run(config: Config) -> Result<Summary> {
    Simulation::new(config)?.run()
}
