//! The simulation: the event loop, the command table, and the routing of what one block's
//! handler leaves for another. Every model lives in its block (`host`, `pcie`, `nvme`, `ctrl`,
//! `media`, `ftl`, `ats`); statistics are an observer (`stats`).
//!
//! A 4 KiB read is a sequence of block calls, one per event:
//! `Host::start`/`issue` → `Link::transmit(SqDoorbell)` → `Nvme::doorbell` + fetch
//! (`Ctrl::run_steps(Fetch)`) → `Link::transmit(SqeRead, SqeData)` → `Ctrl::run_steps(Parse..
//! Translate)` → `Medium::read` (its own events) → `Link::transmit(DataOut)` →
//! `Ctrl::run_steps(Completion)` → `Link::transmit(Cqe)` → `Nvme::post_cqe` + MSI-X →
//! `Host::interrupt` → `Host::complete`.
//!
//! Every command carries a breakdown and a `mark` (the instant up to which its time has been
//! attributed). Each step attributes `[mark, t)` to one component and moves the mark, so the
//! components of every I/O add up to its latency exactly.

mod ctx;

use std::time::Instant;

pub use ctx::{Command, Commands, Ctx, Event, NO_PID};

use crate::ats::{Access, Atc};
use crate::config::Config;
use crate::ctrl::{self, Ctrl, Step};
use crate::error::{Error, Result};
use crate::host::dma::HostMemory;
use crate::host::{self, Host};
use crate::media::{self, Medium};
use crate::nvme::{self, CmdId, Nvme, QueueId};
use crate::pcie::{self, Link, Sent, Tlp};
use crate::sim::{time, EventQueue, SimDuration, SimTime};
use crate::stats::series::{Series, DEFAULT_TRACKED, IO_COLUMNS, MAX_INTERVALS};
use crate::stats::steady;
use crate::stats::summary::{derived, Inputs};
use crate::stats::{Component, IoLog, IoRecord, Kind, MetricInfo, Metrics, Observer, Stats, Summary};

pub use crate::ftl::{FlashSummary, PreconditionReport};

/// A block's context over the simulation's shared parts.
macro_rules! ctx {
    ($s:ident) => {
        Ctx { now: $s.now, queue: &mut $s.queue, cmds: &mut $s.cmds, probe: &mut $s.stats, failure: &mut $s.failure }
    };
}

/// A simulated host + link + `NVMe` SSD, ready to run.
pub struct Simulation {
    config: Config,
    now: SimTime,
    queue: EventQueue<Event>,
    cmds: Commands,
    stats: Stats,
    metrics: Metrics,
    host: Host,
    link: Link,
    nvme: Nvme,
    ctrl: Ctrl,
    medium: media::Device,
    /// The device's ATC (`ats.enabled`), and what a miss costs.
    atc: Option<Atc>,
    round_trip: SimDuration,
    /// Every device-initiated DMA, when asked for.
    dma_log: Option<Vec<Access>>,
    /// When the observer looks next: the end of the ramp, or the next time-series boundary.
    observe_at: SimTime,
    reset_pending: bool,
    /// The steady state `stats.steady_stop` waited for is reached: the run is over.
    halted: bool,
    events: u64,
    started: bool,
    wall: f64,
    /// The first error that stopped the run.
    failure: Option<Error>,
    scratch: Vec<CmdId>,
    accesses: Vec<Access>,
}

impl Simulation {
    /// Builds every block from a validated config, refusing one whose estimated memory exceeds
    /// half the machine's ([`crate::config::memory::default_limit`]).
    pub fn new(config: Config) -> Result<Self> {
        Self::with_memory_limit(config, crate::config::memory::default_limit(), false)
    }

    /// [`Simulation::new`] with a memory limit of `max_memory` bytes, for a run that keeps an
    /// I/O log (`io_log`: counted in the estimate; call [`Simulation::keep_io_log`] too).
    pub fn with_memory_limit(config: Config, max_memory: u64, io_log: bool) -> Result<Self> {
        let mut issues = crate::schema::Issues::default();
        config.validate(&mut issues);
        if issues.is_empty() {
            let need = config.memory_estimate(io_log);
            if need.total() > max_memory {
                let size = crate::config::memory::approx;
                let total = if need.total() == u64::MAX { "unbounded".to_string() } else { size(need.total()) };
                issues.push(
                    "memory",
                    format!("{total} estimated ({})", need.largest()),
                    format!("exceeds the limit of {} (--max-memory; default half the machine's memory); a smaller drive or fewer I/Os need less", size(max_memory)),
                );
            }
        }
        if !issues.is_empty() {
            return Err(Error::Config(issues.0));
        }
        let mut host = Host::new(&config)?;
        let mut link = Link::new(&config.pcie, config.host.memory_latency);
        if config.nvme.interface == nvme::Interface::VirtioBlk {
            link.set_virtio();
        }
        let round_trip = link.translation_round_trip();
        let atc = if config.ats.enabled {
            let memory = HostMemory::new(&config, host.job_count());
            let atc = Atc::new(&config.ats, &memory.rings(), round_trip, config.workload.randseed);
            host.memory = Some(Box::new(memory));
            Some(atc)
        } else {
            None
        };
        let medium = media::build(&config)?;
        let mut ctrl = Ctrl::new(&config.ctrl);
        if !medium.uses_transfer_engine() {
            ctrl.transfer.disable();
        }
        let from = SimTime::ZERO + config.workload.ramp_time;
        let mut sim = Simulation {
            now: SimTime::ZERO,
            queue: EventQueue::new(),
            cmds: Commands::default(),
            stats: Stats::new(&config.stats, from),
            metrics: Metrics::default(),
            nvme: Nvme::new(&config.nvme, &host.queue_classes(&config)),
            host,
            link,
            ctrl,
            medium,
            atc,
            round_trip,
            dma_log: None,
            observe_at: SimTime(u64::MAX),
            reset_pending: from > SimTime::ZERO,
            halted: false,
            events: 0,
            started: false,
            wall: 0.0,
            failure: None,
            scratch: Vec::new(),
            accesses: Vec::new(),
            config,
        };
        sim.publish();
        if sim.config.stats.interval > SimDuration::ZERO {
            let s = &sim.config.stats;
            let tracked: Vec<String> = if s.interval_metrics.is_empty() {
                DEFAULT_TRACKED.iter().filter(|n| sim.metrics.has(n)).map(|n| (*n).to_string()).collect()
            } else {
                let known = |n: &String| sim.metrics.has(n);
                let bad: Vec<_> = s
                    .interval_metrics
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| !known(n))
                    .map(|(i, n)| crate::ConfigIssue {
                        path: format!("stats.interval_metrics[{i}]"),
                        value: format!("{n:?}"),
                        rule: "no such metric on this device (`ssdlab run --metrics` lists them)".into(),
                    })
                    .collect();
                if !bad.is_empty() {
                    return Err(Error::Config(bad));
                }
                s.interval_metrics.clone()
            };
            let m = &s.steady_metric;
            let derived_waf = m == "ftl.waf" && tracked.iter().any(|t| t == "ftl.host_writes") && tracked.iter().any(|t| t == "ftl.gc.units_moved");
            if !m.is_empty() && !IO_COLUMNS.contains(&m.as_str()) && !tracked.contains(m) && !derived_waf {
                return Err(Error::config(
                    "stats.steady_metric",
                    format!("{m:?}"),
                    format!("must be one of {} or a tracked metric ({})", IO_COLUMNS.join(", "), if tracked.is_empty() { "none here".to_string() } else { tracked.join(", ") }),
                ));
            }
            let slo: Vec<Option<f64>> =
                (0..sim.host.tenant_names().len()).map(|t| sim.config.tenants.get(t).filter(|c| c.slo_latency > crate::sim::SimDuration::ZERO).map(|c| c.slo_percentile)).collect();
            let series = Series::new(s.interval, from, sim.host.tenant_names(), tracked).with_slo_percentiles(slo);
            sim.stats.set_series(series);
        }
        sim.schedule_observer();
        Ok(sim)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Records every device-initiated DMA (SQE and PRP-list fetches, data, CQEs) in device
    /// order, with the host memory layout of `host.dma_layout` (see [`Simulation::dma_log`]).
    pub fn keep_dma_log(&mut self) -> Result<()> {
        if self.host.memory.is_none() {
            self.host.memory = Some(Box::new(HostMemory::new(&self.config, self.host.job_count())));
        }
        self.dma_log = Some(Vec::new());
        Ok(())
    }

    /// The recorded DMA accesses (ring accesses are marked pinned).
    pub fn dma_log(&self) -> Option<&[Access]> {
        self.dma_log.as_deref()
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
            self.host.start(&mut ctx!(self));
            self.medium.start(&mut ctx!(self));
        }
        let mut left = budget;
        while left > 0 && self.failure.is_none() && !self.halted {
            let Some((t, ev)) = self.queue.pop() else { break };
            if t >= time::LIMIT {
                return Err(Error::TimeOverflow {
                    detail: format!(
                        "an event falls past {:.0} days of simulated time, after {:.6} s: a time, cycle count or rate of the config is too large for this run",
                        time::LIMIT.as_secs_f64() / 86_400.0,
                        self.now.as_secs_f64()
                    ),
                });
            }
            if t >= self.observe_at {
                self.observe(t);
            }
            self.now = t;
            self.events += 1;
            self.handle(ev);
            left -= 1;
        }
        self.wall += t0.elapsed().as_secs_f64();
        match self.failure.take() {
            Some(e) => Err(e),
            None => Ok(self.halted || self.queue.is_empty()),
        }
    }

    /// Fraction of the work done, 0 to 1.
    pub fn progress(&self) -> f64 {
        self.host.progress(self.now)
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Host(host::Event::Interrupt { queue, .. }) => {
                // The CQEs it covers have reached the host: their completion step ends here,
                // and what follows until the handler runs is waiting for the CPU.
                // (Only those whose CQE has landed: a later one is still on the link.)
                for cmd in self.nvme.signalled(queue) {
                    let c = &mut self.cmds[cmd];
                    if c.mark > self.now {
                        break;
                    }
                    c.account(Component::Completion, self.now);
                }
                // A free CPU runs the handler at once; a busy one when it is done.
                let at = self.host.handler_at(queue, self.now);
                if at == self.now {
                    self.run_handler(queue);
                } else {
                    self.queue.push(at, Event::Host(host::Event::Handler { queue }));
                }
            }
            Event::Host(host::Event::Handler { queue }) => self.run_handler(queue),
            Event::Host(host::Event::Complete { cmd, ring_cq }) => {
                if ring_cq {
                    self.link.cq_doorbell(self.now);
                }
                let ctx = &mut ctx!(self);
                let c = &ctx.cmds[cmd];
                if c.device {
                    self.host.disk.end(ctx.now, c.op, ctx.now.since(c.submitted));
                }
                if !c.cache {
                    // The host counts what it addressed: with an extended LBA, each block's metadata too.
                    let len = if self.config.nvme.extended_lba { c.len + c.md } else { c.len };
                    ctx.probe.io_completed(&IoRecord {
                        tenant: c.tenant,
                        job: c.job,
                        op: c.op,
                        offset: c.offset,
                        len,
                        issued: c.issued,
                        submitted: c.submitted,
                        completed: ctx.now,
                        breakdown: &c.breakdown,
                    });
                }
                self.host.complete(ctx, cmd);
            }
            Event::Host(e) => self.host.handle(&mut ctx!(self), e),
            Event::Pcie(pcie::Event::Send { cmd, tlp }) => self.send(cmd, tlp),
            Event::Pcie(pcie::Event::Translated { cmd, tlp, wait_ps }) => self.transmit(cmd, tlp, SimDuration::from_ps(u64::from(wait_ps))),
            Event::Nvme(nvme::Event::Doorbell { queue, cmd }) => {
                self.nvme.doorbell(queue, cmd);
                self.try_fetch();
            }
            Event::Nvme(nvme::Event::IrqTimer { queue, gen }) => {
                if self.nvme.timer_fires(queue, gen) {
                    self.send_interrupt(queue);
                }
            }
            Event::Ctrl(ctrl::Event::Step { cmd, step }) => self.ctrl.run_steps(&mut ctx!(self), cmd, step),
            Event::Ctrl(ctrl::Event::FetchDone) => {
                // The freed engine takes the next waiting fetch.
                if let Some((cmd, tlp)) = self.ctrl.fetch.done() {
                    self.translate_and_transmit(cmd, tlp);
                }
            }
            Event::Ctrl(ctrl::Event::EngineFree) => {
                self.ctrl.transfer.freed();
                self.medium.pump(&mut ctx!(self), &mut self.ctrl.transfer);
            }
            Event::Media(media::Event::ReadStart { cmd }) => self.medium.read(&mut ctx!(self), cmd, &mut self.ctrl.transfer),
            Event::Media(media::Event::WriteStart { cmd }) => self.medium.write(&mut ctx!(self), cmd),
            Event::Media(e) => self.medium.handle(&mut ctx!(self), e, &mut self.ctrl.transfer),
        }
    }

    /// The interrupt handler of `queue` finishes every CQE that has reached host memory.
    fn run_handler(&mut self, queue: QueueId) {
        let mut batch = std::mem::take(&mut self.scratch);
        batch.clear();
        let (cmds, now) = (&self.cmds, self.now);
        self.nvme.take_landed(queue, |cmd| cmds[cmd].mark <= now, &mut batch);
        if !batch.is_empty() {
            self.host.interrupt(&mut ctx!(self), &batch);
        }
        self.scratch = batch;
    }

    /// A command's TLPs are ready: the device's DMAs first look up their translations (and
    /// are logged, when asked).
    fn send(&mut self, id: CmdId, tlp: Tlp) {
        if matches!(tlp, Tlp::DataOut { .. }) && self.cmds[id].op == crate::workload::Op::Write {
            // A Verify's or Compare's read: the data stays in the drive.
            self.piece_checked(id);
            return;
        }
        if tlp == Tlp::SqDoorbell {
            // The request reaches the device (the disk statistics' view of a request).
            self.host.disk.start(self.now);
            self.cmds[id].device = true;
        }
        // A read of host memory first needs a fetch engine (when they are limited).
        if self.ctrl.fetch.gated(tlp) && !self.ctrl.fetch.start(id, tlp) {
            return;
        }
        self.translate_and_transmit(id, tlp);
    }

    /// A piece a Verify or Compare read is checked in the controller (on flash, whose reads
    /// take no transfer engine); after the last, the command completes (its critical piece's
    /// media time and GC wait split as a read's).
    fn piece_checked(&mut self, id: CmdId) {
        let now = self.now;
        let c = &mut self.cmds[id];
        c.pieces_left = c.pieces_left.saturating_sub(1);
        if c.pieces_left > 0 {
            return;
        }
        let waited = now.since(c.mark);
        let media = c.crit_media.min(waited);
        let gc = c.crit_gc.min(waited - media);
        c.add(Component::Media, media);
        c.add(Component::Gc, gc);
        c.add(Component::Queueing, waited - media - gc);
        c.mark = now;
        self.queue.push(now, Event::Ctrl(ctrl::Event::Step { cmd: id, step: Step::Completion }));
    }

    fn translate_and_transmit(&mut self, id: CmdId, tlp: Tlp) {
        let mut wait = SimDuration::ZERO;
        if let Some(memory) = &self.host.memory {
            let mut list = std::mem::take(&mut self.accesses);
            list.clear();
            memory.accesses(&self.cmds[id], tlp, &mut list);
            for a in &list {
                if let Some(log) = &mut self.dma_log {
                    log.push(*a);
                }
                if let Some(atc) = &mut self.atc {
                    wait = wait.max(atc.lookup(a.pasid, a.addr, a.size));
                }
            }
            self.accesses = list;
        }
        if wait > SimDuration::ZERO {
            // Waits fit in u32 picoseconds: a round trip plus a walk of at most 1 ms (validated).
            let wait_ps = u32::try_from(wait.as_ps()).unwrap_or(u32::MAX);
            self.queue.push(self.now + SimDuration::from_ps(u64::from(wait_ps)), Event::Pcie(pcie::Event::Translated { cmd: id, tlp, wait_ps }));
        } else {
            self.transmit(id, tlp, SimDuration::ZERO);
        }
    }

    /// The link carries the TLPs; a finished read piece frees the transfer engine, a last one
    /// and a sent CQE move the command on.
    fn transmit(&mut self, id: CmdId, tlp: Tlp, translated: SimDuration) {
        let ctx = &mut ctx!(self);
        match self.link.transmit(ctx, id, tlp, translated, self.ctrl.dma.engine(tlp)) {
            Sent::Scheduled => {}
            Sent::Fetched { end } => {
                if self.ctrl.fetch.limited() {
                    ctx.at(end, Event::Ctrl(ctrl::Event::FetchDone));
                }
            }
            Sent::DataOut { end, last } => {
                if self.ctrl.transfer.enabled() {
                    ctx.at(end, Event::Ctrl(ctrl::Event::EngineFree));
                }
                if last {
                    ctx.at(end, Event::Ctrl(ctrl::Event::Step { cmd: id, step: Step::Completion }));
                }
            }
            Sent::Cqe { end } => {
                self.ctrl.release();
                let (queue, len) = (ctx.cmds[id].queue, ctx.cmds[id].len);
                // The page cache's requests complete by interrupt (polling is for O_DIRECT).
                if self.host.polls(len) && !ctx.cmds[id].cache {
                    let seen = end + self.link.params.propagation;
                    ctx.cmds[id].account(Component::Completion, seen);
                    ctx.at(seen, Event::Host(host::Event::CqeSeen { cmd: id }));
                } else {
                    let (fire, timer) = self.nvme.post_cqe(queue, id);
                    if fire {
                        self.send_interrupt(queue);
                    }
                    if let Some(gen) = timer {
                        self.queue.push(self.now + self.config.nvme.irq_coalesce_time, Event::Nvme(nvme::Event::IrqTimer { queue, gen }));
                    }
                }
                self.try_fetch();
            }
        }
    }

    /// An MSI-X for every CQE waiting on `queue` goes up the link.
    fn send_interrupt(&mut self, queue: QueueId) {
        let count = self.nvme.signal(queue);
        let arrival = self.link.interrupt(self.now);
        self.queue.push(arrival, Event::Host(host::Event::Interrupt { queue, count: count as u32 }));
    }

    /// Fetches SQEs while tags are free, in arbitration order; the controller cuts each
    /// command into the medium's pieces.
    fn try_fetch(&mut self) {
        while self.ctrl.has_free_tag() {
            let Some((_, id)) = self.nvme.arbitrate() else { break };
            self.ctrl.admit();
            let c = &mut self.cmds[id];
            // A zone reset is one state change, whatever the zone's size.
            c.pieces = if c.kind == crate::workload::Kind::ZoneReset { 1 } else { self.medium.pieces(c.offset, c.len) };
            self.ctrl.run_steps(&mut ctx!(self), id, Step::Fetch);
        }
    }

    // ---- the observer ----------------------------------------------------------------------

    /// Every block publishes its counters into `m`.
    fn publish_into(&self, m: &mut Metrics) {
        self.host.publish(m);
        self.link.publish(m);
        self.ctrl.publish(m);
        self.medium.publish(m);
        if let Some(a) = &self.atc {
            a.publish(m);
        }
    }

    fn publish(&mut self) {
        let mut m = std::mem::take(&mut self.metrics);
        self.publish_into(&mut m);
        self.metrics = m;
    }

    /// The next instant the observer must look at the device.
    fn schedule_observer(&mut self) {
        let ramp = if self.reset_pending { self.stats.from() } else { SimTime(u64::MAX) };
        let boundary = self.stats.series().map_or(SimTime(u64::MAX), Series::boundary);
        self.observe_at = ramp.min(boundary);
    }

    /// The first event at or after `t` is due: the device is as it was at every instant in
    /// `[now, t)`. The ramp ends (every metric restarts) and time-series intervals close.
    fn observe(&mut self, t: SimTime) {
        let from = self.stats.from();
        if self.reset_pending && t >= from {
            self.publish();
            self.metrics.reset();
            self.reset_pending = false;
        }
        while let Some(b) = self.stats.series().map(Series::boundary).filter(|&b| b <= t) {
            if self.stats.series().is_some_and(|s| s.intervals() >= MAX_INTERVALS) {
                let interval = self.config.stats.interval;
                self.failure.get_or_insert_with(|| Error::config("stats.interval", interval.to_string(), format!("the run needs more than {MAX_INTERVALS} intervals of it: raise it")));
                break;
            }
            self.publish();
            if let Some(s) = self.stats.series_mut() {
                s.close(b, &self.metrics);
            }
            self.halted |= self.steady_now();
        }
        self.schedule_observer();
    }

    /// Whether `stats.steady_stop` waits for a steady state that the last rounds reach.
    fn steady_now(&self) -> bool {
        let c = &self.config.stats;
        if !c.steady_stop {
            return false;
        }
        let criteria = c.steady_criteria();
        let Some(series) = self.stats.series() else { return false };
        // Only rounds after `steady_ramp` count.
        if series.intervals() < c.steady_skip() + criteria.window {
            return false;
        }
        let last = series.last_column(&c.steady_metric, criteria.window);
        last.len() == criteria.window && steady::detect(&c.steady_metric, &last, criteria).reached
    }

    /// The results so far.
    pub fn summary(&self) -> Summary {
        let mut m = self.metrics.clone();
        self.publish_into(&mut m);
        self.stats.summary(&Inputs {
            config: &self.config,
            now: self.now,
            wall_s: self.wall,
            events: self.events,
            metrics: &m,
            window_start: if self.reset_pending { SimTime::ZERO } else { self.stats.from() },
            job_names: self.host.job_names(),
            job_outcomes: self.host.job_outcomes(),
            tenants: self.host.tenant_names(),
            job_tenants: self.host.job_tenants(),
            medium: &self.medium,
            replay: self.host.replay_summary(),
            ats_round_trip: self.atc.as_ref().map(|_| self.round_trip),
        })
    }

    /// Every metric this run reports: name, unit, kind and description, by name.
    pub fn metric_list(&self) -> Vec<MetricInfo> {
        let mut m = self.metrics.clone();
        self.publish_into(&mut m);
        let mut all = m.infos();
        all.extend(derived(&self.summary()).into_iter().map(|(name, unit, description, _)| MetricInfo { name, unit, kind: Kind::Gauge, description }));
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all.dedup_by(|a, b| a.name == b.name);
        all
    }
}

/// Builds and runs a simulation.
pub fn run(config: Config) -> Result<Summary> {
    Simulation::new(config)?.run()
}
