//! The `NVMe` controller's command path, in firmware or in hardware.
//!
//! Firmware mode: `cores` embedded cores at `clock` share every step of every command
//! (doorbell handling and SQE fetch, decode, PRP walk, address translation, completion), each
//! step costing its configured cycles; a step waits for the earliest-free core (FCFS).
//! Hardware mode: each step has its own pipelined engine (OpenExpress-style automation) with
//! a latency in cycles and an issue interval, so different commands overlap in different
//! engines. Both modes hold at most `max_inflight` commands (tags); further SQEs stay in
//! their submission queues until a tag frees.
//!
//! Large reads are cut into media pieces that the transfer engine feeds into the datapath,
//! and data crosses the DMA engines ([`transfer`]).
//!
//! In firmware mode the same cores also do a write's flash bookkeeping (buffer slot and map
//! update, `write_cycles` per unit; a power-loss journal record, `extent_cycles`, unless the
//! write extends one of the most recent runs, so sequential streams pay it once; on the write's
//! path, or after it with `defer_write_work`) and garbage
//! collection's per-unit work (`gc_move_cycles`, charged as the medium reports units moved).
//! The journal keeps the ends of the last `journal_extents` runs; it leaves out the
//! journal's flush to flash (its pages are not programmed).
//!
//! Leaves out: the controller's DRAM/SRAM contention, firmware interrupt and polling loops,
//! and per-core affinity of queues (any core serves any step).

mod config;
pub mod metrics;
pub mod overlap;
pub mod transfer;

pub use config::{CtrlConfig, DmaQueues, FirmwareConfig, HardwareConfig, Mode, Split};

use crate::cmd::{Command, Commands};
use crate::ids::CmdId;
use crate::io::Op;
use crate::pcie::Tlp;
use crate::sim::{Clock, ServerPool, SimDuration, SimTime, Timeline};
use crate::stats::{Component, Metrics};
use metrics::{CTRL_BUSY, CTRL_FETCH_WAITS, CTRL_OVERLAP_WAITS, CTRL_UNITS};

/// A step of the command path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Doorbell handling and SQE fetch issue.
    Fetch = 0,
    /// SQE decode.
    Parse = 1,
    /// PRP handling (PRP1/PRP2).
    Prp = 2,
    /// Walking a fetched PRP list, per entry.
    PrpList = 3,
    /// Address translation, per media access.
    Translate = 4,
    /// CQE build and post, interrupt.
    Completion = 5,
}

const STEPS: usize = 6;

/// The outcome of running one or more consecutive steps of one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Service {
    /// When the first step started (after waiting for a core or engine).
    pub start: SimTime,
    /// When the last step's result is available.
    pub end: SimTime,
}

/// The controller's processing resources.
pub struct Ctrl {
    mode: Mode,
    cores: ServerPool,
    engines: [Timeline; STEPS],
    /// Per-step (base cycles, cycles per item).
    cycles: [(u64, u64); STEPS],
    clock: Clock,
    issue_interval: u64,
    max_inflight: u32,
    inflight: u32,
    /// The transfer engine of piecewise reads.
    pub transfer: transfer::Transfer,
    /// The DMA engines.
    pub dma: transfer::Dma,
    /// The fetch engines (reads of host memory).
    pub fetch: transfer::Fetch,
    /// Firmware cycles per unit a write writes and per unit GC moves (0 in hardware mode).
    write_cycles: u64,
    gc_move_cycles: u64,
    /// Firmware cycles per journal record a write opens, and the open records.
    extent_cycles: u64,
    /// Write work runs after the write's path rather than on it (`defer_write_work`).
    defer_write_work: bool,
    journal: Journal,
    /// Commands that share a unit of their data ranges go one at a time (`ctrl.overlap`).
    pub overlap: overlap::Overlap,
}

/// The power-loss journal's open records: the byte each of the most recent runs of written
/// blocks ends at, so that a write starting there extends the run rather than opening one.
struct Journal {
    ends: Vec<u64>,
    /// The record the next new run replaces (the oldest).
    next: usize,
}

impl Journal {
    fn new(records: u32) -> Self {
        Journal { ends: vec![u64::MAX; records.max(1) as usize], next: 0 }
    }

    /// Logs a write of `len` bytes at `offset`; true when it opens a record.
    fn log(&mut self, offset: u64, len: u64) -> bool {
        let end = offset.saturating_add(len);
        if let Some(e) = self.ends.iter_mut().find(|e| **e == offset) {
            *e = end;
            return false;
        }
        self.ends[self.next] = end;
        self.next = (self.next + 1) % self.ends.len();
        true
    }
}

impl Ctrl {
    pub fn new(c: &CtrlConfig) -> Self {
        let (cycles, clock) = match c.mode {
            Mode::Firmware => {
                let f = &c.firmware;
                ([(f.fetch_cycles, 0), (f.parse_cycles, 0), (f.prp_cycles, 0), (0, f.prp_entry_cycles), (0, f.translate_cycles), (f.completion_cycles, 0)], f.clock.0)
            }
            Mode::Hardware => {
                let h = &c.hardware;
                ([(h.fetch_cycles, 0), (h.parse_cycles, 0), (h.prp_cycles, 0), (0, h.prp_entry_cycles), (0, h.translate_cycles), (h.completion_cycles, 0)], h.clock.0)
            }
        };
        Ctrl {
            mode: c.mode,
            cores: ServerPool::new(c.firmware.cores as usize),
            engines: Default::default(),
            cycles,
            clock: Clock::new(clock),
            issue_interval: c.hardware.issue_interval,
            max_inflight: c.max_inflight,
            inflight: 0,
            transfer: transfer::Transfer::new(c),
            dma: transfer::Dma::new(c),
            fetch: transfer::Fetch::new(c),
            write_cycles: if c.mode == Mode::Firmware { c.firmware.write_cycles } else { 0 },
            gc_move_cycles: if c.mode == Mode::Firmware { c.firmware.gc_move_cycles } else { 0 },
            extent_cycles: if c.mode == Mode::Firmware { c.firmware.extent_cycles } else { 0 },
            defer_write_work: c.firmware.defer_write_work,
            journal: Journal::new(c.firmware.journal_extents),
            overlap: overlap::Overlap::new(c.overlap.0),
        }
    }

    /// Runs `first` and, in firmware mode, every step that follows it without an external
    /// wait, on one core; in hardware mode `first` only, in its engine. Attributes the
    /// command's time; returns what comes next, and when.
    // Inlined into its three callers: called, it returned its (time, output) through memory,
    // where the caller's 16-byte load of the output waited on its narrower stores.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn run_steps(&mut self, now: SimTime, cmds: &mut Commands, id: CmdId, first: Step) -> (SimTime, Out) {
        let mut steps = [(first, 0u64); 4];
        let mut n = 1;
        let c = &cmds[id];
        steps[0].1 = items(c, first);
        let mut last = first;
        if self.mode == Mode::Firmware {
            while let Some(s) = next_internal(c, last) {
                steps[n] = (s, items(c, s));
                n += 1;
                last = s;
            }
        }
        // A write's firmware work runs with its translation (0 in hardware mode), or, deferred,
        // once its completion has been built: the core does it after the acknowledgement.
        let at = if self.defer_write_work { Step::Completion } else { Step::Translate };
        let write_work = if last == at { self.write_work(c) } else { SimDuration::ZERO };
        let svc = if write_work == SimDuration::ZERO {
            self.serve(now, &steps[..n])
        } else if self.defer_write_work {
            let svc = self.serve(now, &steps[..n]);
            self.cores.reserve(svc.end, write_work);
            svc
        } else {
            self.serve_more(now, &steps[..n], write_work)
        };
        let mut t = svc.start;
        let c = &mut cmds[id];
        c.account(Component::Queueing, svc.start);
        for &(s, k) in &steps[..n] {
            t += self.cost(s, k);
            c.account(component(s), t.min(svc.end));
        }
        c.account(component(last), svc.end);
        let next = match next_internal(c, last) {
            Some(s) => Out::Step { cmd: id, step: s },
            None => match last {
                Step::Fetch => Out::Send { cmd: id, tlp: Tlp::SqeRead },
                Step::Prp => Out::Send { cmd: id, tlp: Tlp::PrpRead },
                Step::Translate if c.op == Op::Read || (c.kind.reads_media() && !c.kind.data_in()) => Out::Read { cmd: id },
                // Write Zeroes and Write Uncorrectable move no data: the drive acts on its map.
                Step::Translate if !c.kind.data_in() => Out::Write { cmd: id },
                Step::Translate => Out::Send { cmd: id, tlp: Tlp::DataRead },
                Step::Completion => Out::Send { cmd: id, tlp: Tlp::Cqe },
                Step::Parse | Step::PrpList => unreachable!("always followed by an internal step"),
            },
        };
        (svc.end, next)
    }

    /// A piece a Verify or Compare read has been checked in the controller (on flash, whose
    /// reads take no transfer engine): the data stays in the drive. After the last piece the
    /// command goes to its completion step, its critical piece's media time and GC wait split
    /// as a read's.
    pub fn piece_checked(now: SimTime, cmds: &mut Commands, id: CmdId) -> Option<(SimTime, Out)> {
        let c = &mut cmds[id];
        c.pieces_left = c.pieces_left.saturating_sub(1);
        if c.pieces_left > 0 {
            return None;
        }
        let waited = now.since(c.mark);
        let media = c.crit_media.min(waited);
        let map = c.crit_map.min(waited - media);
        let gc = c.crit_gc.min(waited - media - map);
        c.add(Component::Media, media);
        c.add(Component::Map, map);
        c.add(Component::Gc, gc);
        c.add(Component::Queueing, waited - media - map - gc);
        c.mark = now;
        Some((now, Out::Step { cmd: id, step: Step::Completion }))
    }

    /// A write's firmware work (`write_cycles` per unit, `extent_cycles` if it opens a journal
    /// record), for the run of steps that ends with its translation, or with its completion
    /// when deferred (firmware mode).
    fn write_work(&mut self, c: &Command) -> SimDuration {
        if (self.write_cycles == 0 && self.extent_cycles == 0) || c.op != Op::Write || !c.kind.data_in() {
            return SimDuration::ZERO;
        }
        let opens = self.extent_cycles > 0 && self.journal.log(c.offset, c.len);
        let cycles = self.write_cycles.saturating_mul(c.pieces).saturating_add(if opens { self.extent_cycles } else { 0 });
        self.clock.cycles(cycles)
    }

    /// Firmware work beside the command path (`units` moved by GC), on the same cores, from
    /// `now`.
    pub fn background(&mut self, now: SimTime, units: u64) {
        if self.gc_move_cycles > 0 {
            self.cores.reserve(now, self.clock.cycles(self.gc_move_cycles.saturating_mul(units)));
        }
    }

    /// Whether GC's moves cost firmware time (the medium then reports them).
    pub fn charges_gc(&self) -> bool {
        self.gc_move_cycles > 0
    }

    /// Busy time of the processing units, for statistics.
    pub fn publish(&self, m: &mut Metrics) {
        m.count(&CTRL_BUSY, self.busy().as_ps());
        m.count(&CTRL_OVERLAP_WAITS, self.overlap.waits);
        m.gauge(&CTRL_UNITS, self.units() as f64);
        m.count(&CTRL_FETCH_WAITS, self.fetch.waits);
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Time step `step` takes for a command with `items` items (PRP entries, media accesses).
    pub fn cost(&self, step: Step, items: u64) -> SimDuration {
        let (base, per) = self.cycles[step as usize];
        // Saturating: an overflow shows as a time past `time::LIMIT`, which stops the run.
        self.clock.cycles(base.saturating_add(per.saturating_mul(items)))
    }

    /// Runs consecutive steps of one command, arriving at `now`. In firmware mode they run
    /// back to back on one core; in hardware mode each passes through its own engine, so
    /// callers give hardware mode one step per call (the next engine is reached later).
    pub fn serve(&mut self, now: SimTime, steps: &[(Step, u64)]) -> Service {
        self.serve_more(now, steps, SimDuration::ZERO)
    }

    /// As [`Ctrl::serve`], with `extra` firmware work after the steps, on the same core.
    fn serve_more(&mut self, now: SimTime, steps: &[(Step, u64)], extra: SimDuration) -> Service {
        match self.mode {
            Mode::Firmware => {
                let total = steps.iter().fold(extra, |a, &(s, n)| a + self.cost(s, n));
                let g = self.cores.reserve(now, total);
                Service { start: g.start, end: g.end }
            }
            Mode::Hardware => {
                debug_assert_eq!(steps.len(), 1, "hardware engines are reached one step at a time");
                let (step, items) = steps[0];
                let latency = self.cost(step, items);
                // A pipelined engine accepts one item every `issue_interval` cycles.
                let occupancy = self.clock.cycles(self.issue_interval.saturating_mul(items.max(1)));
                let g = self.engines[step as usize].reserve(now, occupancy);
                Service { start: g.start, end: g.start + latency.max(occupancy) }
            }
        }
    }

    /// Whether a tag is free for another command.
    #[inline]
    pub fn has_free_tag(&self) -> bool {
        self.inflight < self.max_inflight
    }

    /// Takes a tag (check [`Ctrl::has_free_tag`] first).
    #[inline]
    pub fn admit(&mut self) {
        debug_assert!(self.has_free_tag());
        self.inflight += 1;
    }

    /// Returns a tag.
    #[inline]
    pub fn release(&mut self) {
        self.inflight = self.inflight.saturating_sub(1);
    }

    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    /// Busy time of the cores (firmware) or the sum over engines (hardware).
    pub fn busy(&self) -> SimDuration {
        match self.mode {
            Mode::Firmware => self.cores.busy(),
            Mode::Hardware => self.engines.iter().fold(SimDuration::ZERO, |a, e| a + e.busy()),
        }
    }

    /// Processing units: cores in firmware mode, engines in hardware mode.
    pub fn units(&self) -> usize {
        match self.mode {
            Mode::Firmware => self.cores.len(),
            Mode::Hardware => STEPS,
        }
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

/// Where a step's time goes in the breakdown.
fn component(step: Step) -> Component {
    match step {
        // Taking the doorbell and dispatching the queue, up to issuing the SQE read.
        Step::Fetch => Component::Doorbell,
        Step::Parse | Step::Translate => Component::Controller,
        Step::Prp | Step::PrpList => Component::Prp,
        Step::Completion => Component::Completion,
    }
}

/// Items a step works through: PRP entries, or media accesses.
fn items(c: &Command, step: Step) -> u64 {
    match step {
        Step::PrpList => c.prp_entries,
        Step::Translate => c.pieces,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn the_journal_extends_the_open_runs_and_replaces_the_oldest() {
        let mut j = Journal::new(2);
        assert!(j.log(0, 4096)); // opens a run
        assert!(!j.log(4096, 4096)); // extends it
        assert!(j.log(1 << 20, 4096)); // a second stream opens a second
        assert!(!j.log(8192, 4096) && !j.log((1 << 20) + 4096, 4096)); // both extend
        assert!(j.log(1 << 30, 4096)); // a third replaces the oldest (the first stream's)
        assert!(j.log(12288, 4096), "the first stream's run was closed");
        assert!(!j.log((1 << 30) + 4096, 4096));
    }

    #[test]
    fn firmware_steps_share_cores_and_run_back_to_back() {
        let c = CtrlConfig { firmware: FirmwareConfig { cores: 1, ..FirmwareConfig::default() }, ..CtrlConfig::default() };
        let mut ctrl = Ctrl::new(&c);
        let a = ctrl.serve(SimTime(0), &[(Step::Parse, 0), (Step::Translate, 2)]);
        // 400 + 2 x 500 cycles at 1 GHz.
        assert_eq!(a.end, SimTime(1_400_000));
        let b = ctrl.serve(SimTime(0), &[(Step::Fetch, 0)]);
        assert_eq!(b.start, a.end, "one core: the second command waits");
    }

    #[test]
    fn hardware_engines_pipeline() {
        let c = CtrlConfig { mode: Mode::Hardware, ..CtrlConfig::default() };
        let mut ctrl = Ctrl::new(&c);
        let a = ctrl.serve(SimTime(0), &[(Step::Parse, 0)]);
        let b = ctrl.serve(SimTime(0), &[(Step::Parse, 0)]);
        // 4 cycles at 250 MHz = 16 ns latency; the next command enters one cycle (4 ns) later.
        assert_eq!(a.end, SimTime(16_000));
        assert_eq!(b.start, SimTime(4_000));
        assert_eq!(b.end, SimTime(20_000));
        let other = ctrl.serve(SimTime(0), &[(Step::Fetch, 0)]);
        assert_eq!(other.start, SimTime(0), "engines are independent");
    }

    #[test]
    fn tags_limit_inflight() {
        let mut ctrl = Ctrl::new(&CtrlConfig { max_inflight: 2, ..CtrlConfig::default() });
        ctrl.admit();
        ctrl.admit();
        assert!(!ctrl.has_free_tag());
        ctrl.release();
        assert!(ctrl.has_free_tag());
    }
}

/// What the controller hands the router (each step returns its one output, with the instant it
/// takes effect).
#[derive(Clone, Copy, Debug)]
pub enum Out {
    /// `cmd` arrives at `step` (the controller's own event).
    Step { cmd: CmdId, step: Step },
    /// `cmd`'s TLPs `tlp` are ready for the link.
    Send { cmd: CmdId, tlp: Tlp },
    /// The medium reads for `cmd` (a read, or a Verify's or Compare's media read).
    Read { cmd: CmdId },
    /// The medium takes `cmd`'s write (its data has arrived, or it moves none).
    Write { cmd: CmdId },
}

/// Controller events.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A command arrives at a step.
    Step { cmd: CmdId, step: Step },
    /// A piece left the transfer engine: it may take the next.
    EngineFree,
    /// The last piece of `cmd` left the transfer engine, and `cmd` goes on to its completion
    /// step: the two events of the same instant, scheduled one after the other, as one.
    EngineFreeLast { cmd: CmdId },
    /// A fetch's data has arrived: its fetch engine may take the next.
    FetchDone,
}
