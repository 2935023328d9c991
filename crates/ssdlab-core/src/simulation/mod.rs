//! The simulation: the event loop, the observer's schedule and the results. Every model
//! lives in its block (`host`, `pcie`, `nvme`, `ctrl`, `media`, `ftl`, `ats`); what one
//! block's output means for the next is decided in one place, the router (`route`);
//! statistics are an observer (`stats`).
//!
//! Every command carries a breakdown and a `mark` (the instant up to which its time has been
//! attributed). Each step attributes `[mark, t)` to one component and moves the mark, so the
//! components of every I/O add up to its latency exactly.

#[cfg(feature = "census")]
mod census;
mod drive;
mod external;
mod route;
mod summary;

use std::time::Instant;

#[cfg(feature = "census")]
pub use census::{Census, PLACES};
pub use drive::Device;

use crate::ats::{Access, Atc, Translator};
use crate::cmd::Commands;
use crate::config::Config;
use crate::ctrl::{self, Ctrl};
use crate::error::{Error, Result};
use crate::host::{self, Host};
use crate::media::{self, nvm};
use crate::nvme::{self, Nvme};
use crate::pcie::{self, Link};
use crate::sim::{time, EventQueue, Runs, SimDuration, SimTime};
use crate::stats::series::{Series, DEFAULT_TRACKED, IO_COLUMNS, MAX_INTERVALS};
use crate::stats::steady;
use crate::stats::{IoLog, Kind, MetricInfo, Metrics, Stats};
use crate::workload::runner::{self, Runner};
use crate::{ftl, ids::CmdId};
use summary::{derived, Inputs};
pub use summary::{AtsSummary, HostSummary, LinkTraffic, Summary, Utilisation};

pub use crate::ftl::{FlashSummary, PreconditionReport};

/// Every event of the simulation, by the block that handles it.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    Runner(runner::Event),
    Host(host::Event),
    Pcie(pcie::Event),
    Nvme(nvme::Event),
    Ctrl(ctrl::Event),
    /// The controller hands a command to the medium.
    Media(media::Event),
    /// The NVM array's own events.
    Nvm(nvm::Event),
    /// The flash device's own events.
    Flash(ftl::Event),
    /// Read data a medium handed to the link for one instant, piece after piece: run `run`
    /// of `(cmd, bytes, byte of the command)`, each piece sent as a `Pcie::Send` event of its
    /// own would be.
    DataRun {
        run: u32,
    },
}

/// The blocks' outboxes: what each wrote during one call, for the router to carry on.
#[derive(Default)]
struct Outboxes {
    runner: Vec<(SimTime, runner::Out)>,
    host: Vec<(SimTime, host::Out)>,
    nvm: Vec<(SimTime, media::Out<nvm::Event>)>,
    flash: Vec<(SimTime, media::Out<ftl::Event>)>,
    /// A medium's outputs as events, to be scheduled together.
    run: Vec<(SimTime, Event)>,
}

/// A simulated host + link + `NVMe` SSD, ready to run.
pub struct Simulation {
    config: Config,
    now: SimTime,
    queue: EventQueue<Event>,
    /// The event loop's census, once asked for (the `census` feature).
    #[cfg(feature = "census")]
    census: Option<Census>,
    cmds: Commands,
    stats: Stats,
    metrics: Metrics,
    /// fio's job runner: what each job issues, and when.
    runner: Runner,
    host: Host,
    link: Link,
    nvme: Nvme,
    ctrl: Ctrl,
    medium: Device,
    /// The device's address translation: its ATC (`ats.enabled`) and a DMA log (when asked).
    dma: Translator,
    /// What an ATC miss costs.
    round_trip: SimDuration,
    outs: Outboxes,
    data_runs: Runs<(CmdId, u32, u32)>,
    /// Read data for one instant sent in one event ([`Event::DataRun`]); off only to check
    /// that this changes no result ([`Simulation::unfold_runs`]).
    fold_data: bool,
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
        check(&config, max_memory, io_log)?;
        let runner = Runner::new(&config.runner_plan())?;
        let mut host = Host::new(&config.host, &config.nvme, runner.threads(), config.cgroups());
        let mut link = Link::new(&config.pcie, config.host.memory_latency);
        if config.nvme.interface == nvme::Interface::VirtioBlk {
            link.set_virtio();
        }
        let round_trip = link.translation_round_trip();
        let atc = if config.ats.enabled {
            let memory = config.host_memory(runner.job_count());
            let atc = Atc::new(&config.ats, &memory.rings(), round_trip, config.workload.randseed);
            host.memory = Some(Box::new(memory));
            Some(atc)
        } else {
            None
        };
        let mut medium = Device::build(&config)?;
        let mut ctrl = Ctrl::new(&config.ctrl);
        if ctrl.charges_gc() {
            medium.charge_gc();
        }
        if !medium.uses_transfer_engine() {
            ctrl.transfer.disable();
        }
        let from = SimTime::ZERO + config.workload.ramp_time;
        let mut sim = Simulation {
            now: SimTime::ZERO,
            queue: EventQueue::new(),
            #[cfg(feature = "census")]
            census: None,
            cmds: Commands::default(),
            stats: Stats::new(&config.stats, from),
            metrics: Metrics::default(),
            nvme: Nvme::new(&config.nvme, &host.queue_classes()),
            runner,
            host,
            link,
            ctrl,
            medium,
            dma: Translator::new(atc),
            round_trip,
            outs: Outboxes::default(),
            data_runs: Runs::default(),
            fold_data: true,
            observe_at: SimTime(u64::MAX),
            reset_pending: from > SimTime::ZERO,
            halted: false,
            events: 0,
            started: false,
            wall: 0.0,
            failure: None,
            scratch: Vec::new(),
            config,
        };
        sim.publish();
        if sim.config.stats.interval > SimDuration::ZERO {
            sim.set_up_series(from)?;
        }
        sim.schedule_observer();
        Ok(sim)
    }

    /// The time series (`stats.interval`): the metrics it tracks (those named, known on this
    /// device, or the default ones), the steady-state metric among them, and each tenant's
    /// SLO percentile.
    fn set_up_series(&mut self, from: SimTime) -> Result<()> {
        let s = &self.config.stats;
        let tracked: Vec<String> = if s.interval_metrics.is_empty() {
            DEFAULT_TRACKED.iter().filter(|n| self.metrics.has(n)).map(|n| (*n).to_string()).collect()
        } else {
            let known = |n: &String| self.metrics.has(n);
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
            (0..self.runner.tenant_names().len()).map(|t| self.config.tenants.get(t).filter(|c| c.slo_latency > crate::sim::SimDuration::ZERO).map(|c| c.slo_percentile)).collect();
        let series = Series::new(s.interval, from, self.runner.tenant_names(), tracked).with_slo_percentiles(slo);
        self.stats.set_series(series);
        Ok(())
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Records every device-initiated DMA (SQE and PRP-list fetches, data, CQEs) in device
    /// order, with the host memory layout of `host.dma_layout` (see [`Simulation::dma_log`]).
    pub fn keep_dma_log(&mut self) -> Result<()> {
        if self.host.memory.is_none() {
            self.host.memory = Some(Box::new(self.config.host_memory(self.runner.job_count())));
        }
        self.dma.log = Some(Vec::new());
        Ok(())
    }

    /// The recorded DMA accesses (ring accesses are marked pinned).
    pub fn dma_log(&self) -> Option<&[Access]> {
        self.dma.log.as_deref()
    }

    /// Keeps one row per counted I/O (see [`Simulation::io_log`]).
    pub fn keep_io_log(&mut self) {
        self.stats.keep_log();
    }

    pub fn io_log(&self) -> Option<&IoLog> {
        self.stats.log()
    }

    /// Schedules every piece of read data, and every piece a flash device serves from DRAM,
    /// as an event of its own instead of one event per run of them: the same results from
    /// more events. For tests that check so; call before the first event.
    #[doc(hidden)]
    pub fn unfold_runs(&mut self) {
        self.fold_data = false;
        if let Device::Flash(f) = &mut self.medium {
            f.unfold_runs();
        }
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
        self.run_loop(None, budget)?;
        self.wall += t0.elapsed().as_secs_f64();
        match self.failure.take() {
            Some(e) => Err(e),
            None => Ok(self.halted || self.queue.is_empty()),
        }
    }

    /// The event loop, the one place events are handled: up to `budget` events, those due at
    /// or before `until` if given; stops early on a failure or when the run halts.
    fn run_loop(&mut self, until: Option<SimTime>, budget: u64) -> Result<()> {
        let mut left = budget;
        while left > 0 && self.failure.is_none() && !self.halted {
            if let Some(u) = until {
                match self.queue.peek_time() {
                    Some(t) if t <= u => {}
                    _ => break,
                }
            }
            let Some((t, ev)) = self.queue.pop() else { break };
            if t >= time::LIMIT {
                return Err(overflow(self.now));
            }
            #[cfg(feature = "census")]
            if let Some(c) = &mut self.census {
                c.popped(t, &ev);
            }
            if t >= self.observe_at {
                self.observe(t);
            }
            self.now = t;
            self.events += 1;
            self.handle(ev);
            left -= 1;
        }
        Ok(())
    }

    /// Starts the event loop's census afresh (the `census` feature).
    #[cfg(feature = "census")]
    pub fn start_census(&mut self) {
        self.census = Some(Census::new(&self.queue));
    }

    /// What the census counted since it started, if it did; it stops.
    #[cfg(feature = "census")]
    pub fn take_census(&mut self) -> Option<Census> {
        self.census.take()
    }

    /// Fraction of the work done, 0 to 1.
    pub fn progress(&self) -> f64 {
        self.runner.progress(self.now)
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    // ---- the observer ----------------------------------------------------------------------

    /// Every block publishes its counters into `m`.
    fn publish_into(&self, m: &mut Metrics) {
        self.host.publish(m);
        self.runner.publish(m);
        self.link.publish(m);
        self.ctrl.publish(m);
        self.medium.publish(m);
        if let Some(a) = &self.dma.atc {
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
        let window_start = if self.reset_pending { SimTime::ZERO } else { self.stats.from() };
        let window = self.now.since(window_start);
        Summary::build(
            &self.stats,
            &Inputs {
                config: &self.config,
                now: self.now,
                wall_s: self.wall,
                events: self.events,
                metrics: &m,
                window_start,
                job_names: self.runner.job_names(),
                job_outcomes: self.runner.job_outcomes(),
                tenants: self.runner.tenant_names(),
                job_tenants: self.runner.job_tenants(),
                media_utilisation: self.medium.utilisation(&m, window),
                flash: self.medium.flash_summary(&m, window),
                replay: self.runner.replay_summary(),
                ats_round_trip: self.dma.atc.as_ref().map(|_| self.round_trip),
            },
        )
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

/// An instant past what the clock can count, reached at `now`.
#[cold]
fn overflow(now: SimTime) -> Error {
    Error::TimeOverflow {
        detail: format!(
            "an event falls past {:.0} days of simulated time, after {:.6} s: a time, cycle count or rate of the config is too large for this run",
            time::LIMIT.as_secs_f64() / 86_400.0,
            now.as_secs_f64()
        ),
    }
}

/// A config that passes every rule and whose estimated memory fits `max_memory` (with an
/// I/O log, `io_log`), or every problem it has.
fn check(config: &Config, max_memory: u64, io_log: bool) -> Result<()> {
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
                format!("exceeds the limit of {} (--max-memory; by default the least of half the machine's memory, ulimit -v and the cgroup's memory.max); a smaller drive, fewer jobs or fewer I/Os need less", size(max_memory)),
            );
        }
    }
    if !issues.is_empty() {
        return Err(Error::Config(issues.0));
    }
    Ok(())
}

/// Builds and runs a simulation.
pub fn run(config: Config) -> Result<Summary> {
    Simulation::new(config)?.run()
}

#[cfg(test)]
mod tests {
    #[test]
    fn events_stay_small() {
        // The event queue moves (time, seq, event) entries around its heap: with events of at
        // most 24 bytes an entry stays at 40.
        assert!(std::mem::size_of::<super::Event>() <= 24, "{}", std::mem::size_of::<super::Event>());
    }
}
