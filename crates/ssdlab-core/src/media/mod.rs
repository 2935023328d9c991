//! The media behind the controller, as one trait over every kind.
//!
//! A [`Medium`] receives a command when the controller has translated it (a read) or when
//! its data has arrived from the host (a write), handles its own events, and hands each read
//! piece to the link and each finished write to the controller's completion step. Two kinds
//! exist:
//! - [`nvm`]: byte-addressable NVM (PCM, MRAM, 3D XPoint, DRAM) as memory controllers with
//!   banks on an interconnect;
//! - flash: the FTL (`ftl::FlashDevice`: mapping, write buffer, GC) over the NAND
//!   array of [`nand`].
//!
//! A new medium is one module that implements [`Medium`] (with its own event type), plus its
//! registration in the simulation (`simulation::drive`): a variant of its `Device` and of its
//! `Event`, and a line in its `build`. Static dispatch, so the compiler inlines each medium's
//! hot path into the event loop.

mod config;
pub mod ecc;
pub mod metrics;
pub mod nand;
pub mod nvm;

pub use config::{DieScheduler, Interconnect, MediaConfig, MediaKind, NandConfig, NvmConfig};

use crate::ctrl::transfer::Transfer;
use crate::ids::CmdId;
use crate::sim::SimDuration;
use crate::stats::Metrics;

pub use nvm::{NvmArray, Piece};

/// The two entry points every medium has: the controller hands it a command.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// Translation is done: the read goes to the medium.
    ReadStart { cmd: CmdId },
    /// Write data arrived from the host (or the command moves none).
    WriteStart { cmd: CmdId },
}

/// What a medium hands the router, with the instant it takes effect; `E` is the medium's own
/// event type.
#[derive(Clone, Copy, Debug)]
pub enum Out<E> {
    /// One of the medium's own events.
    Wake(E),
    /// `len` bytes of `cmd`'s read data, from byte `at` of the I/O, are ready for the link.
    Data { cmd: CmdId, len: u32, at: u32 },
    /// The medium is done with `cmd`: its completion step.
    Done { cmd: CmdId },
    /// Background firmware work: `units` moved by garbage collection (reported only when the
    /// controller charges it, [`Medium::charge_gc`]).
    Firmware { units: u64 },
}

/// A medium's view of the simulation while it handles an input.
pub type Ctx<'a, E> = crate::cmd::Ctx<'a, Out<E>>;

/// A storage medium behind the controller (`Send + Sync`, so simulations can run in threads).
pub trait Medium: Send + Sync {
    /// The medium's own events.
    type Event: Copy;

    /// Media accesses an I/O of `len` bytes at `offset` is cut into (the controller translates
    /// each one).
    fn pieces(&self, offset: u64, len: u64) -> u64;

    /// The run starts (a medium may report its initial state to `ctx.probe`).
    fn start(&mut self, _ctx: &mut Ctx<Self::Event>) {}

    /// The host's workload has ended (every job done, nothing in flight): background work
    /// that would only go on for its own sake stops, so that the run ends.
    fn host_done(&mut self) {}

    /// The controller charges firmware time for GC's moves: report them as [`Out::Firmware`].
    fn charge_gc(&mut self) {}

    /// Whether reads go piece by piece through the controller's transfer engine.
    fn uses_transfer_engine(&self) -> bool {
        false
    }

    /// A read's translation is done (`ctx.cmds[id].pieces` is set): serve it. Each piece goes
    /// to the link as [`Out::Data`] with the command's `crit_media` set.
    fn read(&mut self, ctx: &mut Ctx<Self::Event>, id: CmdId, xfer: &mut Transfer);

    /// A write's data has arrived: store it, then send the command to its completion step.
    fn write(&mut self, ctx: &mut Ctx<Self::Event>, id: CmdId);

    /// One of the medium's own events.
    fn handle(&mut self, ctx: &mut Ctx<Self::Event>, ev: Self::Event, xfer: &mut Transfer);

    /// The transfer engine has room again (media that use it take more pieces).
    fn pump(&mut self, _ctx: &mut Ctx<Self::Event>, _xfer: &mut Transfer) {}

    /// Publishes the medium's counters and gauges, cumulative since the run started. Every
    /// medium publishes `media.units.busy`, `media.units`, `media.bus.busy`, `media.bus.units`.
    fn publish(&self, m: &mut Metrics);

    /// Busy fraction of the media units and of the internal bus over `window`, from the
    /// metrics it published (already reset to the measurement window).
    fn utilisation(&self, m: &Metrics, window: SimDuration) -> (f64, f64);
}
