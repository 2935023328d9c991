//! The media behind the controller, as one trait over every kind.
//!
//! A [`Medium`] receives a command when the controller has translated it (a read) or when
//! its data has arrived from the host (a write), handles its own events, and hands each read
//! piece to the link and each finished write to the controller's completion step. Two kinds
//! exist:
//! - [`nvm`]: byte-addressable NVM (PCM, MRAM, 3D XPoint, DRAM) as memory controllers with
//!   banks on an interconnect;
//! - flash: the FTL ([`crate::ftl::FlashDevice`]: mapping, write buffer, GC) over the NAND
//!   array of [`nand`].
//!
//! A new medium is one module that implements [`Medium`] (with its own event type), plus its
//! registration here: a line in [`Event`], a variant of [`Device`] (with its arm in `each!`),
//! and a line in [`build`]. The simulation holds a [`Device`]: static dispatch, so the
//! compiler inlines each medium's hot path into the event loop.

mod config;
pub mod ecc;
pub mod nand;
pub mod nvm;

pub use config::{DieScheduler, Interconnect, MediaConfig, MediaKind, NandConfig, NvmConfig};

use crate::config::Config;
use crate::ctrl::transfer::Transfer;
use crate::error::Result;
use crate::nvme::CmdId;
use crate::sim::SimDuration;
use crate::simulation::Ctx;
use crate::stats::Metrics;

pub use nvm::{NvmArray, Piece};

/// Media events: the two entry points every medium has, then each medium's own.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// Translation is done: the read goes to the medium.
    ReadStart {
        cmd: CmdId,
    },
    /// Write data arrived from the host.
    WriteStart {
        cmd: CmdId,
    },
    Nvm(nvm::Event),
    Flash(crate::ftl::Event),
}

/// A storage medium behind the controller (`Send + Sync`, so simulations can run in threads).
pub trait Medium: Send + Sync {
    /// Media accesses an I/O of `len` bytes at `offset` is cut into (the controller translates
    /// each one).
    fn pieces(&self, offset: u64, len: u64) -> u64;

    /// The run starts (a medium may report its initial state to `ctx.probe`).
    fn start(&mut self, _ctx: &mut Ctx) {}

    /// Whether reads go piece by piece through the controller's transfer engine.
    fn uses_transfer_engine(&self) -> bool {
        false
    }

    /// A read's translation is done (`ctx.cmds[id].pieces` is set): serve it. Each piece goes
    /// to the link as `Tlp::DataOut` with the command's `crit_media` set.
    fn read(&mut self, ctx: &mut Ctx, id: CmdId, xfer: &mut Transfer);

    /// A write's data has arrived: store it, then send the command to its completion step.
    fn write(&mut self, ctx: &mut Ctx, id: CmdId);

    /// One of the medium's own events (`Event::Nvm`, `Event::Flash`, ...).
    fn handle(&mut self, ctx: &mut Ctx, ev: Event, xfer: &mut Transfer);

    /// The transfer engine has room again (media that use it take more pieces).
    fn pump(&mut self, _ctx: &mut Ctx, _xfer: &mut Transfer) {}

    /// Publishes the medium's counters and gauges, cumulative since the run started. Every
    /// medium publishes `media.units.busy`, `media.units`, `media.bus.busy`, `media.bus.units`.
    fn publish(&self, m: &mut Metrics);

    /// Busy fraction of the media units and of the internal bus over `window`, from the
    /// metrics it published (already reset to the measurement window).
    fn utilisation(&self, m: &Metrics, window: SimDuration) -> (f64, f64);

    /// The flash section of the results (flash media only).
    fn flash_summary(&self, _m: &Metrics, _window: SimDuration) -> Option<crate::ftl::FlashSummary> {
        None
    }
}

/// The medium of a run: one variant per kind.
pub enum Device {
    Nvm(NvmArray),
    Flash(Box<crate::ftl::FlashDevice>),
}

/// Runs `$e` on whichever medium `$d` holds, bound to `$m`.
macro_rules! each {
    ($d:expr, $m:ident => $e:expr) => {
        match $d {
            Device::Nvm($m) => $e,
            Device::Flash($m) => $e,
        }
    };
}

impl Medium for Device {
    #[inline]
    fn pieces(&self, offset: u64, len: u64) -> u64 {
        each!(self, m => m.pieces(offset, len))
    }

    fn start(&mut self, ctx: &mut Ctx) {
        each!(self, m => m.start(ctx));
    }

    fn uses_transfer_engine(&self) -> bool {
        each!(self, m => m.uses_transfer_engine())
    }

    #[inline]
    fn read(&mut self, ctx: &mut Ctx, id: CmdId, xfer: &mut Transfer) {
        each!(self, m => m.read(ctx, id, xfer));
    }

    #[inline]
    fn write(&mut self, ctx: &mut Ctx, id: CmdId) {
        each!(self, m => m.write(ctx, id));
    }

    #[inline]
    fn handle(&mut self, ctx: &mut Ctx, ev: Event, xfer: &mut Transfer) {
        each!(self, m => m.handle(ctx, ev, xfer));
    }

    #[inline]
    fn pump(&mut self, ctx: &mut Ctx, xfer: &mut Transfer) {
        each!(self, m => m.pump(ctx, xfer));
    }

    fn publish(&self, m: &mut Metrics) {
        each!(self, d => d.publish(m));
    }

    fn utilisation(&self, m: &Metrics, window: SimDuration) -> (f64, f64) {
        each!(self, d => d.utilisation(m, window))
    }

    fn flash_summary(&self, m: &Metrics, window: SimDuration) -> Option<crate::ftl::FlashSummary> {
        each!(self, d => d.flash_summary(m, window))
    }
}

/// Builds the medium a config describes (flash media precondition here, without timing).
pub fn build(config: &Config) -> Result<Device> {
    Ok(match config.media.kind {
        MediaKind::Nvm => Device::Nvm(NvmArray::new(&config.media, config.workload.randseed)),
        MediaKind::Nand => Device::Flash(Box::new(crate::ftl::FlashDevice::new(config)?)),
    })
}
