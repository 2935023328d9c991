//! The router: every event goes to its block here, and every block's output is turned into
//! the next event or block call here, so one command's path reads in this one file.
//!
//! A 4 KiB read, hop by hop:
//! 1. fio's runner decides on the I/O ([`runner::Out::Submit`]); `host` runs the submission
//!    path on the job's CPU and rings the SQ tail doorbell ([`host::Out::Ring`]): the
//!    doorbell goes down the link ([`Simulation::send`]).
//! 2. The link delivers it ([`pcie::Sent::Doorbell`]): the entry is visible in its submission
//!    queue, and arbitration hands it to the controller when a tag is free
//!    ([`Simulation::try_fetch`]), which runs its fetch step.
//! 3. The controller sends the SQE read up ([`ctrl::Out::Send`]); host memory answers
//!    ([`pcie::Sent::Requested`]) and the SQE comes down ([`pcie::Sent::Fetched`]).
//! 4. The controller decodes it, handles its PRPs (a PRP list is fetched like the SQE) and
//!    translates the address; the read goes to the medium ([`ctrl::Out::Read`]).
//! 5. The medium serves each piece and hands it to the link ([`media::Out::Data`]); each
//!    piece goes up as memory writes, and the last one sends the command to the controller's
//!    completion step.
//! 6. The CQE goes up ([`pcie::Sent::Cqe`]); the host polls for it, or the queue's MSI-X
//!    goes up ([`Simulation::send_interrupt`]) and the handler runs when its CPU is free.
//! 7. `host` finishes the I/O on the job's CPU; the CQ head doorbell goes down
//!    ([`host::Out::CqDoorbell`]); the application sees it complete ([`host::Host::complete`]),
//!    and the runner decides what the job does next.
//!
//! A write differs at 4: the controller reads the data from host memory first (read requests
//! up, completions down), then the medium takes it ([`media::Event::WriteStart`]) and sends
//! the command to its completion step when done ([`media::Out::Done`]).
//!
//! Every device-initiated DMA first waits for its address translations ([`Translator`](crate::ats::Translator), when
//! the drive has an ATC) and may need one of the controller's fetch engines.
//!
//! Outputs are carried on in the order the block wrote them, after its call returns: a block
//! never sees the effect of its own outputs within one call.

use super::{Device, Event, Outboxes, Simulation};
use crate::cmd::Ctx;
use crate::ctrl::overlap::Entry;
use crate::ctrl::{self, Ctrl, Step};
use crate::ids::{CmdId, QueueId};
use crate::io::Kind;
use crate::media::{self, Medium};
use crate::pcie::{self, Sent, Tlp};
use crate::sim::{SimDuration, SimTime};
use crate::stats::Component;
use crate::workload::runner;
use crate::{host, nvme};

/// A medium's outbox: its outputs, each with the instant it takes effect.
type MediaOutbox<E> = Vec<(SimTime, media::Out<E>)>;

/// Outputs of one call of a medium that are scheduled together rather than one by one: fewer
/// are mostly an append or two at the ring's ends, cheaper one by one.
const RUN: usize = 4;

/// Calls a block with a context over its outbox, then carries on what it wrote.
macro_rules! call {
    ($s:ident, $block:ident, $outbox:ident, $route:ident, |$b:ident, $ctx:ident| $body:expr) => {{
        let start = $s.outs.$outbox.len();
        let r = {
            let $ctx = &mut Ctx::new($s.now, &mut $s.cmds, &mut $s.stats, &mut $s.failure, &mut $s.outs.$outbox);
            let $b = &mut $s.$block;
            $body
        };
        let end = $s.outs.$outbox.len();
        for i in start..end {
            let (t, o) = $s.outs.$outbox[i];
            $s.$route(t, o);
        }
        $s.outs.$outbox.truncate(start);
        r
    }};
}

/// Calls the medium (whichever it is) with a context over its outbox and the controller's
/// transfer engine, then carries on what it wrote.
macro_rules! medium {
    ($s:ident, |$m:ident, $ctx:ident, $x:ident| $body:expr) => {{
        let (nvm, flash) = ($s.outs.nvm.len(), $s.outs.flash.len());
        {
            let $x = &mut $s.ctrl.transfer;
            match &mut $s.medium {
                Device::Nvm($m) => {
                    let $ctx = &mut Ctx::new($s.now, &mut $s.cmds, &mut $s.stats, &mut $s.failure, &mut $s.outs.nvm);
                    $body
                }
                Device::Flash($m) => {
                    let $ctx = &mut Ctx::new($s.now, &mut $s.cmds, &mut $s.stats, &mut $s.failure, &mut $s.outs.flash);
                    $body
                }
            }
        }
        $s.drain_nvm(nvm);
        $s.drain_flash(flash);
        $s.wake_engine();
    }};
}

impl Simulation {
    /// The run begins: jobs start, and the medium reports its initial state.
    pub(super) fn start(&mut self) {
        call!(self, host, host, route_host, |h, ctx| h.start(ctx));
        call!(self, runner, runner, route_runner, |r, ctx| r.start(ctx));
        medium!(self, |m, ctx, _x| m.start(ctx));
    }

    /// Emulation: `job` issues `io` now (see [`Simulation::inject`]).
    pub(super) fn inject_io(&mut self, job: usize, io: crate::workload::Io, kind: Kind) -> crate::ids::CmdId {
        call!(self, runner, runner, route_runner, |r, ctx| r.inject(ctx, job, io, kind))
    }

    /// Delivers one event to its block.
    pub(super) fn handle(&mut self, ev: Event) {
        match ev {
            Event::Host(host::Event::Interrupt { queue, .. }) => self.interrupt(queue),
            Event::Host(host::Event::Handler { queue }) => self.run_handler(queue),
            Event::Host(host::Event::Complete { cmd, ring_cq }) => {
                // The host finishes the command; a job's: the application sees it complete, and
                // the runner decides what the job does next.
                if let Some(cmd) = call!(self, host, host, route_host, |h, ctx| h.complete(ctx, cmd, ring_cq)) {
                    call!(self, runner, runner, route_runner, |r, ctx| r.completed(ctx, cmd));
                    if !self.runner.active(self.now) {
                        medium!(self, |m, _ctx, _x| m.host_done());
                    }
                }
            }
            Event::Host(host::Event::QosTick) => {
                let active = self.runner.active(self.now);
                call!(self, host, host, route_host, |h, ctx| h.qos_tick(ctx, active));
            }
            Event::Runner(e) => call!(self, runner, runner, route_runner, |r, ctx| r.handle(ctx, e)),
            Event::Host(e) => call!(self, host, host, route_host, |h, ctx| h.handle(ctx, e)),
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
            Event::Ctrl(ctrl::Event::Step { cmd, step }) => {
                let (t, o) = self.ctrl.run_steps(self.now, &mut self.cmds, cmd, step);
                self.route_ctrl(t, o);
            }
            Event::Ctrl(ctrl::Event::FetchDone) => {
                // The freed engine takes the next waiting fetch.
                if let Some((cmd, tlp)) = self.ctrl.fetch.done() {
                    self.translate_and_transmit(cmd, tlp);
                }
            }
            Event::Ctrl(ctrl::Event::EngineFree) => self.engine_free(),
            Event::Ctrl(ctrl::Event::EngineFreeLast { cmd }) => {
                self.engine_free();
                let (t, o) = self.ctrl.run_steps(self.now, &mut self.cmds, cmd, Step::Completion);
                self.route_ctrl(t, o);
            }
            Event::Media(media::Event::ReadStart { cmd }) => {
                if self.may_enter(cmd, Entry::Read) {
                    medium!(self, |m, ctx, x| m.read(ctx, cmd, x));
                }
            }
            Event::Media(media::Event::WriteStart { cmd }) => {
                if self.may_enter(cmd, Entry::Write) {
                    medium!(self, |m, ctx, _x| m.write(ctx, cmd));
                }
            }
            Event::Nvm(e) => {
                let start = self.outs.nvm.len();
                if let Device::Nvm(m) = &mut self.medium {
                    m.handle(&mut Ctx::new(self.now, &mut self.cmds, &mut self.stats, &mut self.failure, &mut self.outs.nvm), e, &mut self.ctrl.transfer);
                }
                self.drain_nvm(start);
            }
            Event::DataRun { run } => {
                let pieces = self.data_runs.take(run);
                for &(cmd, len, at) in &pieces {
                    self.send(cmd, Tlp::DataOut { len, at });
                }
                self.data_runs.put_back(run, pieces);
            }
            Event::Flash(e) => {
                let start = self.outs.flash.len();
                if let Device::Flash(m) = &mut self.medium {
                    m.handle(&mut Ctx::new(self.now, &mut self.cmds, &mut self.stats, &mut self.failure, &mut self.outs.flash), e, &mut self.ctrl.transfer);
                }
                self.drain_flash(start);
            }
        }
    }

    #[inline]
    fn at(&mut self, t: SimTime, ev: Event) {
        #[cfg(feature = "census")]
        if let Some(c) = &mut self.census {
            c.pushed(&self.queue, &[(t, ev)], false);
        }
        self.queue.push(t, ev);
    }

    // ---- each block's outputs ---------------------------------------------------------------

    #[inline]
    fn route_runner(&mut self, t: SimTime, o: runner::Out) {
        match o {
            runner::Out::Wake(e) => self.at(t, Event::Runner(e)),
            runner::Out::Submit { cmd } => call!(self, host, host, route_host, |h, ctx| h.submit(ctx, cmd)),
            runner::Out::Fsync { job } => call!(self, host, host, route_host, |h, ctx| h.fsync(ctx, job)),
        }
    }

    #[inline]
    fn route_host(&mut self, t: SimTime, o: host::Out) {
        match o {
            host::Out::Host(e) => self.at(t, Event::Host(e)),
            host::Out::Ring { cmd } => self.at(t, Event::Pcie(pcie::Event::Send { cmd, tlp: Tlp::SqDoorbell })),
            host::Out::CqDoorbell => self.link.cq_doorbell(t),
            host::Out::FsyncDone { job } => call!(self, runner, runner, route_runner, |r, ctx| r.fsync_done(ctx, job)),
        }
    }

    #[inline]
    fn route_ctrl(&mut self, t: SimTime, o: ctrl::Out) {
        let ev = match o {
            ctrl::Out::Step { cmd, step } => Event::Ctrl(ctrl::Event::Step { cmd, step }),
            ctrl::Out::Send { cmd, tlp } => Event::Pcie(pcie::Event::Send { cmd, tlp }),
            ctrl::Out::Read { cmd } => Event::Media(media::Event::ReadStart { cmd }),
            ctrl::Out::Write { cmd } => Event::Media(media::Event::WriteStart { cmd }),
        };
        self.at(t, ev);
    }

    /// With the controller's overlap check: whether `cmd` may take the media now (else it
    /// waits for the command whose range it shares).
    #[inline]
    fn may_enter(&mut self, cmd: CmdId, entry: Entry) -> bool {
        if !self.ctrl.overlap.enabled() {
            return true;
        }
        let c = &self.cmds[cmd];
        self.ctrl.overlap.enter(cmd, c.offset, c.len, entry)
    }

    /// `id` has posted its completion: the commands its range held back take the media.
    fn leave_overlap(&mut self, id: CmdId) {
        let mut ready = Vec::new();
        let c = &self.cmds[id];
        self.ctrl.overlap.leave(id, c.offset, c.len, &mut ready);
        for (cmd, entry) in ready {
            match entry {
                Entry::Read => medium!(self, |m, ctx, x| m.read(ctx, cmd, x)),
                Entry::Write => medium!(self, |m, ctx, _x| m.write(ctx, cmd)),
            }
        }
    }

    /// A medium's output as the event it schedules: its own event, read data for the link, or
    /// a command done (to its completion step). None for the firmware time GC's moves take,
    /// which is charged to the controller at once.
    #[inline]
    fn media_event<E>(&mut self, t: SimTime, o: media::Out<E>, own: fn(E) -> Event) -> Option<Event> {
        Some(match o {
            media::Out::Wake(e) => own(e),
            media::Out::Data { cmd, len, at } => Event::Pcie(pcie::Event::Send { cmd, tlp: Tlp::DataOut { len, at } }),
            media::Out::Done { cmd } => Event::Ctrl(ctrl::Event::Step { cmd, step: Step::Completion }),
            media::Out::Firmware { units } => {
                self.ctrl.background(t, units);
                return None;
            }
        })
    }

    /// The run of read data that starts at output `first` of a medium's outbox (up to `end`),
    /// as one [`Event::DataRun`] at its instant, and the index of the output after it. The
    /// pieces' `Send` events would have been scheduled one after another for that instant, so
    /// nothing could run between them, and whatever the first schedules for it runs after the
    /// last.
    #[inline(never)]
    fn data_run<E: Copy>(&mut self, first: usize, end: usize, outbox: fn(&mut Outboxes) -> &mut MediaOutbox<E>) -> (usize, SimTime, Event) {
        let outs = &outbox(&mut self.outs)[first..end];
        let when = outs[0].0;
        let n = outs.iter().take_while(|&&(w, o)| w == when && matches!(o, media::Out::Data { .. })).count();
        let run = self.data_runs.start(outs[..n].iter().filter_map(|&(_, o)| match o {
            media::Out::Data { cmd, len, at } => Some((cmd, len, at)),
            _ => None,
        }));
        (first + n, when, Event::DataRun { run })
    }

    /// Carries on a medium's outputs from `start` of its outbox (`outbox` picks it); `own`
    /// makes its own events the simulation's. Several events are scheduled together (a
    /// chunk's codewords, a die's pieces), in the order the medium wrote them; read data for
    /// one instant, written piece after piece, goes as one run ([`Self::data_run`]).
    #[inline]
    fn drain_media<E: Copy>(&mut self, start: usize, outbox: fn(&mut Outboxes) -> &mut MediaOutbox<E>, own: fn(E) -> Event) {
        let end = outbox(&mut self.outs).len();
        let fold = self.fold_data;
        let mut i = start;
        if end - start < RUN {
            while i < end {
                let (t, o) = outbox(&mut self.outs)[i];
                if fold && starts_data_run(outbox(&mut self.outs), i, end) {
                    let (next, t, ev) = self.data_run(i, end, outbox);
                    self.at(t, ev);
                    i = next;
                    continue;
                }
                if let Some(ev) = self.media_event(t, o, own) {
                    self.at(t, ev);
                }
                i += 1;
            }
        } else {
            let mut run = std::mem::take(&mut self.outs.run);
            while i < end {
                let (t, o) = outbox(&mut self.outs)[i];
                if fold && starts_data_run(outbox(&mut self.outs), i, end) {
                    let (next, t, ev) = self.data_run(i, end, outbox);
                    run.push((t, ev));
                    i = next;
                    continue;
                }
                if let Some(ev) = self.media_event(t, o, own) {
                    run.push((t, ev));
                }
                i += 1;
            }
            #[cfg(feature = "census")]
            if let Some(c) = &mut self.census {
                c.pushed(&self.queue, &run, true);
            }
            self.queue.push_all(&run);
            run.clear();
            self.outs.run = run;
        }
        outbox(&mut self.outs).truncate(start);
    }

    #[inline]
    fn drain_nvm(&mut self, start: usize) {
        self.drain_media(start, |o| &mut o.nvm, Event::Nvm);
    }

    #[inline]
    fn drain_flash(&mut self, start: usize) {
        self.drain_media(start, |o| &mut o.flash, Event::Flash);
    }

    // ---- the link -----------------------------------------------------------------------------

    /// A piece left the transfer engine: the engine takes the next waiting piece, if any
    /// (with none waiting, the medium's pump would take nothing).
    #[inline]
    fn engine_free(&mut self) {
        self.ctrl.transfer.freed();
        if self.ctrl.transfer.waiting() {
            medium!(self, |m, ctx, x| m.pump(ctx, x));
        }
    }

    /// Commands wait for the transfer engine: each deferred free still to come wakes it at
    /// its time (see [`crate::ctrl::transfer::Transfer::defer`]).
    #[inline]
    fn wake_engine(&mut self) {
        while let Some(t) = self.ctrl.transfer.next_wakeup() {
            self.at(t, Event::Ctrl(ctrl::Event::EngineFree));
        }
    }

    /// A command's TLPs are ready: a Verify's or Compare's read data stays in the controller;
    /// a doorbell makes the request the device's; a read of host memory may wait for a fetch
    /// engine; then the DMA addresses are translated.
    #[inline]
    fn send(&mut self, id: CmdId, tlp: Tlp) {
        if matches!(tlp, Tlp::DataOut { .. }) && self.cmds[id].op == crate::io::Op::Write {
            if let Some((t, o)) = Ctrl::piece_checked(self.now, &mut self.cmds, id) {
                self.route_ctrl(t, o);
            }
            return;
        }
        if tlp == Tlp::SqDoorbell {
            // The request reaches the device (the disk statistics' view of a request).
            self.host.disk.start(self.now);
            self.cmds[id].device = true;
        }
        if self.ctrl.fetch.gated(tlp) && !self.ctrl.fetch.start(id, tlp) {
            return;
        }
        self.translate_and_transmit(id, tlp);
    }

    /// The TLPs' DMA addresses are looked up in the ATC (and logged, when asked): they go
    /// after the slowest translation.
    #[inline]
    fn translate_and_transmit(&mut self, id: CmdId, tlp: Tlp) {
        let wait = match &self.host.memory {
            Some(memory) if self.dma.active() => {
                let c = &self.cmds[id];
                self.dma.translate(|out| memory.accesses(c, tlp, out))
            }
            _ => SimDuration::ZERO,
        };
        if wait > SimDuration::ZERO {
            // Waits fit in u32 picoseconds: a round trip plus a walk of at most 1 ms (validated).
            let wait_ps = u32::try_from(wait.as_ps()).unwrap_or(u32::MAX);
            self.at(self.now + SimDuration::from_ps(u64::from(wait_ps)), Event::Pcie(pcie::Event::Translated { cmd: id, tlp, wait_ps }));
        } else {
            self.transmit(id, tlp, SimDuration::ZERO);
        }
    }

    /// The link carries the TLPs; what they deliver moves the command on.
    #[inline]
    fn transmit(&mut self, id: CmdId, tlp: Tlp, translated: SimDuration) {
        let sent = self.link.transmit(self.now, &mut self.cmds[id], tlp, translated, self.ctrl.dma.engine(tlp));
        match sent {
            Sent::Doorbell { at } => {
                let queue = self.cmds[id].queue;
                self.at(at, Event::Nvme(nvme::Event::Doorbell { queue, cmd: id }));
            }
            Sent::Requested { at, answer } => self.at(at, Event::Pcie(pcie::Event::Send { cmd: id, tlp: answer })),
            Sent::NextFetch { at } => self.at(at, Event::Pcie(pcie::Event::Send { cmd: id, tlp: Tlp::SqeRead })),
            Sent::Fetched { at, tlp } => {
                let next = match tlp {
                    Tlp::SqeData => Event::Ctrl(ctrl::Event::Step { cmd: id, step: Step::Parse }),
                    Tlp::PrpData => Event::Ctrl(ctrl::Event::Step { cmd: id, step: Step::PrpList }),
                    // A Compare's data meets the blocks the drive reads; a Write's goes to the media.
                    _ if self.cmds[id].kind.reads_media() => Event::Media(media::Event::ReadStart { cmd: id }),
                    _ => Event::Media(media::Event::WriteStart { cmd: id }),
                };
                self.at(at, next);
                if self.ctrl.fetch.limited() {
                    self.at(at, Event::Ctrl(ctrl::Event::FetchDone));
                }
            }
            Sent::DataOut { end, last } => {
                let engine = self.ctrl.transfer.enabled();
                // With nothing waiting for the engine's place, its free needs no event yet.
                let wake = engine && self.ctrl.transfer.waiting();
                if engine && !wake {
                    self.ctrl.transfer.defer(end);
                }
                // The engine's free and the completion step fall at the same instant, one
                // scheduled right after the other: as one event, they run in the same order.
                match (wake, last) {
                    (true, true) => self.at(end, Event::Ctrl(ctrl::Event::EngineFreeLast { cmd: id })),
                    (true, false) => self.at(end, Event::Ctrl(ctrl::Event::EngineFree)),
                    (false, true) => self.at(end, Event::Ctrl(ctrl::Event::Step { cmd: id, step: Step::Completion })),
                    (false, false) => {}
                }
            }
            Sent::Cqe { end } => {
                self.ctrl.release();
                if self.ctrl.overlap.enabled() {
                    self.leave_overlap(id);
                }
                let queue = self.cmds[id].queue;
                if self.host.reaps_by_polling(&self.cmds[id]) {
                    // The polling thread sees the CQE once it has landed.
                    let seen = end + self.link.params.propagation;
                    self.cmds[id].account(Component::Completion, seen);
                    self.at(seen, Event::Host(host::Event::CqeSeen { cmd: id }));
                } else {
                    let (fire, timer) = self.nvme.post_cqe(queue, id);
                    if fire {
                        self.send_interrupt(queue);
                    }
                    if let Some(gen) = timer {
                        self.at(self.now + self.config.nvme.irq_coalesce_time, Event::Nvme(nvme::Event::IrqTimer { queue, gen }));
                    }
                }
                self.try_fetch();
            }
        }
    }

    // ---- the queues ---------------------------------------------------------------------------

    /// Fetches SQEs while tags are free, in arbitration order; the controller cuts each
    /// command into the medium's pieces.
    #[inline]
    fn try_fetch(&mut self) {
        while self.ctrl.has_free_tag() {
            let Some((_, id)) = self.nvme.arbitrate() else { break };
            self.ctrl.admit();
            let c = &mut self.cmds[id];
            // A zone reset is one state change, whatever the zone's size; a flush is one too.
            c.pieces = if matches!(c.kind, Kind::ZoneReset | Kind::Flush) { 1 } else { self.medium.pieces(c.offset, c.len) };
            let (t, o) = self.ctrl.run_steps(self.now, &mut self.cmds, id, Step::Fetch);
            self.route_ctrl(t, o);
        }
    }

    /// An MSI-X for every CQE waiting on `queue` goes up the link.
    #[inline]
    fn send_interrupt(&mut self, queue: QueueId) {
        let count = self.nvme.signal(queue);
        let arrival = self.link.interrupt(self.now);
        self.at(arrival, Event::Host(host::Event::Interrupt { queue, count: count as u32 }));
    }

    /// An MSI-X reaches the host: the CQEs it covers have landed (their completion step ends
    /// here; what follows until the handler runs is waiting for the CPU), and the handler runs
    /// at once on a free CPU, or when its CPU is done.
    #[inline]
    fn interrupt(&mut self, queue: QueueId) {
        // Only those whose CQE has landed: a later one is still on the link.
        for cmd in self.nvme.signalled(queue) {
            let c = &mut self.cmds[cmd];
            if c.mark > self.now {
                break;
            }
            c.account(Component::Completion, self.now);
        }
        let at = self.host.handler_at(queue, self.now);
        if at == self.now {
            self.run_handler(queue);
        } else {
            self.at(at, Event::Host(host::Event::Handler { queue }));
        }
    }

    /// The interrupt handler of `queue` finishes every CQE that has reached host memory.
    #[inline]
    fn run_handler(&mut self, queue: QueueId) {
        let mut batch = std::mem::take(&mut self.scratch);
        batch.clear();
        let (cmds, now) = (&self.cmds, self.now);
        self.nvme.take_landed(queue, |cmd| cmds[cmd].mark <= now, &mut batch);
        if !batch.is_empty() {
            call!(self, host, host, route_host, |h, ctx| h.interrupt(ctx, &batch));
        }
        self.scratch = batch;
    }
}

/// Whether output `i` of a medium's outbox (before `end`) starts a run of read data: it and
/// the next are read data for the same instant.
#[inline]
fn starts_data_run<E: Copy>(outs: &MediaOutbox<E>, i: usize, end: usize) -> bool {
    i + 1 < end && matches!((outs[i], outs[i + 1]), ((t, media::Out::Data { .. }), (u, media::Out::Data { .. })) if t == u)
}
