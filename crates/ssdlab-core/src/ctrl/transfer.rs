//! The controller's data movers: the transfer engine that feeds media pieces of reads into
//! the datapath a window at a time (FIFO or round robin over commands), the DMA engines
//! that data crosses on its way to and from the link (none, one shared, or one for reads and
//! one for writes), each moving no faster than the internal data path (`datapath_bytes` per
//! cycle, `write_datapath_bytes` for write data if slower; alone it is one channel each way),
//! and the fetch engines that read host memory (SQEs, PRP lists, write data),
//! each busy for a whole round trip.
//!
//! Leaves out: the engines' own internal pipelines (each is one FIFO server), and write data,
//! which is fetched whole and does not pass the transfer engine.

use std::collections::VecDeque;

use crate::cmd::{Commands, Ctx};
use crate::ids::CmdId;
use crate::pcie::{Mover, Tlp};
use crate::sim::{SimTime, Timeline};

use super::{CtrlConfig, DmaQueues, Mode, Split};

/// The transfer engine for reads split into pieces.
pub struct Transfer {
    /// Pieces in flight at most (0 = no engine: every piece goes at once).
    window: u32,
    round_robin: bool,
    /// Commands with pieces left, in service order.
    queue: VecDeque<CmdId>,
    inflight: u32,
    /// When pieces that left while no command waited free their places, in time order, not
    /// yet taken off `inflight`. With nothing waiting such a free would move no piece, so it
    /// is no event of its own: the next pump takes off those due by then, and if commands are
    /// left waiting, the rest become events ([`Transfer::next_wakeup`]). Those before `due`
    /// are taken off or handed over already (a vector and an index: cheaper than a ring for a
    /// push and a pop).
    ///
    /// This gives the results of one event per free except where a free and another event
    /// fall on the same picosecond: a free due at a pump's instant counts before it, and a
    /// free made an event late runs after the events of its instant already scheduled.
    deferred: Vec<SimTime>,
    due: usize,
}

impl Transfer {
    pub fn new(c: &CtrlConfig) -> Self {
        Transfer { window: c.transfer_window, round_robin: c.split == Split::RoundRobin, queue: VecDeque::new(), inflight: 0, deferred: Vec::new(), due: 0 }
    }

    /// Turns the engine off (for media whose reads do not go piece by piece).
    pub fn disable(&mut self) {
        self.window = 0;
    }

    /// Whether reads go through the engine.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.window > 0
    }

    /// A read's pieces wait for the engine.
    pub fn enqueue(&mut self, cmds: &mut Commands, id: CmdId) {
        let c = &mut cmds[id];
        c.next_at = 0;
        self.queue.push_back(id);
    }

    /// A piece in flight now leaves in `more` parts more than one (cut-through codewords):
    /// each part frees a place as it leaves, and the engine takes no new piece until all have.
    #[inline]
    pub fn split(&mut self, more: u32) {
        if self.enabled() {
            self.inflight += more;
        }
    }

    /// A piece left the engine.
    #[inline]
    pub fn freed(&mut self) {
        self.inflight -= 1;
    }

    /// Whether commands wait with pieces left (a pump with none waiting takes nothing).
    #[inline]
    pub fn waiting(&self) -> bool {
        !self.queue.is_empty()
    }

    /// A piece in flight frees its place at `at`, and no command waits now: the free is
    /// counted when a pump next needs it, or becomes an event if commands come to wait
    /// before `at`.
    #[inline]
    pub fn defer(&mut self, at: SimTime) {
        match self.deferred.last() {
            // (The link and the movers are FIFO, so a later piece leaves no sooner: kept
            // sorted all the same.)
            Some(&last) if last > at => {
                let i = self.due + self.deferred[self.due..].partition_point(|&t| t <= at);
                self.deferred.insert(i, at);
            }
            _ => self.deferred.push(at),
        }
    }

    /// With commands waiting, the next deferred free still to come, handed over to become an
    /// event (each must wake the engine at its time, as a free does whenever commands wait).
    /// `None` otherwise.
    #[inline]
    pub fn next_wakeup(&mut self) -> Option<SimTime> {
        if self.queue.is_empty() {
            return None;
        }
        let &t = self.deferred.get(self.due)?;
        self.due += 1;
        if self.due == self.deferred.len() {
            self.deferred.clear();
            self.due = 0;
        }
        Some(t)
    }

    /// Takes off `inflight` the deferred frees due by `now`.
    #[inline]
    fn retire(&mut self, now: SimTime) {
        let (mut due, times) = (self.due, &self.deferred);
        while due < times.len() && times[due] <= now {
            due += 1;
        }
        self.inflight -= (due - self.due) as u32;
        if due == times.len() {
            self.deferred.clear();
            self.due = 0;
        } else if due >= 64 && due * 2 >= times.len() {
            self.deferred.drain(..due);
            self.due = 0;
        } else {
            self.due = due;
        }
    }

    /// Takes pieces while there is room: the oldest command's next piece (FIFO), or each
    /// command's next piece in turn (round robin). `issue(ctx, cmd, at)` starts the piece of
    /// `cmd` that begins at byte `at` and returns its length, or `None` if none is left.
    pub fn pump<O>(&mut self, ctx: &mut Ctx<O>, mut issue: impl FnMut(&mut Ctx<O>, CmdId, u32) -> Option<u32>) {
        self.retire(ctx.now);
        while self.inflight < self.window {
            let Some(&id) = self.queue.front() else { break };
            let at = ctx.cmds[id].next_at;
            let Some(len) = issue(ctx, id, at) else {
                self.queue.pop_front();
                continue;
            };
            let c = &mut ctx.cmds[id];
            c.next_at = at + len;
            let more = u64::from(c.next_at) < c.len;
            if self.round_robin || !more {
                self.queue.pop_front();
                if more {
                    self.queue.push_back(id);
                }
            }
            self.inflight += 1;
        }
    }
}

/// The DMA engines between the datapath and the link.
pub struct Dma {
    engines: Vec<Timeline>,
    /// The internal data path's time per byte (`ctrl.datapath_bytes` per cycle of the
    /// controller's clock); 0 when it is not modelled.
    ps_per_byte: f64,
    /// The same for write data (`ctrl.write_datapath_bytes`, else `ps_per_byte`).
    ps_per_byte_in: f64,
}

impl Dma {
    pub fn new(c: &CtrlConfig) -> Self {
        let clock = match c.mode {
            Mode::Firmware => c.firmware.clock.0,
            Mode::Hardware => c.hardware.clock.0,
        };
        let ps_per_byte = if c.datapath_bytes > 0.0 { 1e12 / (c.datapath_bytes * clock as f64) } else { 0.0 };
        let n = match c.dma_queues {
            // The data path alone: one channel each way (as AXI's read and write channels).
            DmaQueues::None if ps_per_byte > 0.0 => 2,
            DmaQueues::None => 0,
            DmaQueues::Shared => 1,
            DmaQueues::Split => 2,
        };
        let ps_per_byte_in = if c.write_datapath_bytes > 0.0 { 1e12 / (c.write_datapath_bytes * clock as f64) } else { ps_per_byte };
        Dma { engines: vec![Timeline::default(); n], ps_per_byte, ps_per_byte_in }
    }

    /// The mover data of `tlp` crosses, if any: read data (out) on the first, write data (in)
    /// on the second when they are split.
    #[inline]
    pub fn engine(&mut self, tlp: Tlp) -> Option<Mover<'_>> {
        let e = match (tlp, self.engines.len()) {
            (Tlp::DataOut { .. } | Tlp::DataIn, 1) | (Tlp::DataOut { .. }, 2) => 0,
            (Tlp::DataIn, 2) => 1,
            _ => return None,
        };
        let ps_per_byte = if tlp == Tlp::DataIn { self.ps_per_byte_in } else { self.ps_per_byte };
        Some(Mover { line: &mut self.engines[e], ps_per_byte })
    }
}

/// The fetch engines: reads of host memory in flight at once (`ctrl.fetch_engines`; none =
/// unlimited). A fetch that finds every engine busy waits, in order.
pub struct Fetch {
    limit: u32,
    busy: u32,
    waiting: VecDeque<(CmdId, Tlp)>,
    /// Fetches that had to wait for an engine.
    pub waits: u64,
}

impl Fetch {
    pub fn new(c: &CtrlConfig) -> Self {
        Fetch { limit: c.fetch_engines, busy: 0, waiting: VecDeque::new(), waits: 0 }
    }

    /// Whether fetch engines are limited at all.
    #[inline]
    pub fn limited(&self) -> bool {
        self.limit > 0
    }

    /// Whether `tlp` is a read of host memory that needs an engine.
    #[inline]
    pub fn gated(&self, tlp: Tlp) -> bool {
        self.limited() && matches!(tlp, Tlp::SqeRead | Tlp::PrpRead | Tlp::DataRead)
    }

    /// Takes an engine for the fetch `(id, tlp)`, or queues it: true if it may go now.
    pub fn start(&mut self, id: CmdId, tlp: Tlp) -> bool {
        if self.busy < self.limit {
            self.busy += 1;
            true
        } else {
            self.waits += 1;
            self.waiting.push_back((id, tlp));
            false
        }
    }

    /// A fetch's data has arrived: its engine takes the next waiting fetch, if any (returned,
    /// to be sent now).
    pub fn done(&mut self) -> Option<(CmdId, Tlp)> {
        let next = self.waiting.pop_front();
        if next.is_none() {
            self.busy = self.busy.saturating_sub(1);
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::Command;
    use crate::ids::{JobId, TenantId};
    use crate::io::Op;
    use crate::stats::{Stats, StatsConfig};

    /// A pump at `now` that takes 4 KiB pieces: the pieces it took, as (command, offset).
    fn pump(x: &mut Transfer, cmds: &mut Commands, now: u64) -> Vec<(CmdId, u32)> {
        let mut stats = Stats::new(&StatsConfig::default(), SimTime::ZERO);
        let (mut failure, mut out) = (None, Vec::<(SimTime, ())>::new());
        let mut taken = Vec::new();
        let ctx = &mut Ctx::new(SimTime(now), cmds, &mut stats, &mut failure, &mut out);
        x.pump(ctx, |ctx, id, at| {
            (u64::from(at) < ctx.cmds[id].len).then(|| {
                taken.push((id, at));
                4096
            })
        });
        taken
    }

    #[test]
    fn deferred_frees_count_once_due_and_wake_the_engine_once_commands_wait() {
        let mut x = Transfer::new(&CtrlConfig { transfer_window: 2, ..CtrlConfig::default() });
        let mut cmds = Commands::default();
        let read = |len| Command::new(TenantId(0), JobId(0), Op::Read, 0, len, SimTime::ZERO);
        let (a, b) = (cmds.insert(read(8192)), cmds.insert(read(8192)));
        x.enqueue(&mut cmds, a);
        assert_eq!(pump(&mut x, &mut cmds, 0), vec![(a, 0), (a, 4096)], "a's two pieces fill the window");
        // Both leave with nothing waiting: their frees (at 200 and 100, kept in time order)
        // are no events, and nothing needs waking.
        x.defer(SimTime(200));
        x.defer(SimTime(100));
        assert!(!x.waiting());
        assert_eq!(x.next_wakeup(), None);
        // b arrives at 100: the free due then counts, and one of b's pieces goes; b waits for
        // the other place, so the free still to come must wake the engine at 200.
        x.enqueue(&mut cmds, b);
        assert_eq!(pump(&mut x, &mut cmds, 100), vec![(b, 0)]);
        assert!(x.waiting());
        assert_eq!(x.next_wakeup(), Some(SimTime(200)));
        assert_eq!(x.next_wakeup(), None);
        // That wake (an `EngineFree` event at 200) frees the place, and b's last piece goes.
        x.freed();
        assert_eq!(pump(&mut x, &mut cmds, 200), vec![(b, 4096)]);
        assert!(!x.waiting());
        assert_eq!(x.inflight, 2);
    }
}
