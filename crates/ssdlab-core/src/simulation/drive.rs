//! The drive's medium as the simulation holds it: one variant per kind of medium, so that
//! every call is statically dispatched and each medium's hot path inlines into the event loop.

use crate::config::Config;
use crate::error::Result;
use crate::ftl::{FlashDevice, FlashSummary};
use crate::media::{MediaKind, Medium, NvmArray};
use crate::sim::SimDuration;
use crate::stats::Metrics;

/// The medium of a run.
pub enum Device {
    Nvm(NvmArray),
    Flash(Box<FlashDevice>),
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

impl Device {
    /// Builds the medium a config describes (flash media precondition here, without timing).
    pub fn build(config: &Config) -> Result<Device> {
        Ok(match config.media.kind {
            MediaKind::Nvm => Device::Nvm(NvmArray::new(&config.media, config.workload.randseed)),
            MediaKind::Nand => Device::Flash(Box::new(FlashDevice::new(&config.media, &config.ftl, config.tenancy()?, config.workload.randseed)?)),
        })
    }

    /// The controller charges firmware time for GC's moves: the medium reports them.
    pub fn charge_gc(&mut self) {
        each!(self, m => m.charge_gc());
    }

    /// Media accesses an I/O of `len` bytes at `offset` is cut into.
    #[inline]
    pub fn pieces(&self, offset: u64, len: u64) -> u64 {
        each!(self, m => m.pieces(offset, len))
    }

    /// Whether reads go piece by piece through the controller's transfer engine.
    pub fn uses_transfer_engine(&self) -> bool {
        each!(self, m => m.uses_transfer_engine())
    }

    pub fn publish(&self, m: &mut Metrics) {
        each!(self, d => d.publish(m));
    }

    /// Busy fraction of the media units and of the internal bus over `window`.
    pub fn utilisation(&self, m: &Metrics, window: SimDuration) -> (f64, f64) {
        each!(self, d => d.utilisation(m, window))
    }

    /// Host units of padding that flushes wrote to close partly filled pages (flash only).
    pub fn flush_padding(&self) -> u64 {
        match self {
            Device::Nvm(_) => 0,
            Device::Flash(f) => f.flush_padding(),
        }
    }

    /// The flash section of the results (flash media only).
    pub fn flash_summary(&self, m: &Metrics, window: SimDuration) -> Option<FlashSummary> {
        match self {
            Device::Nvm(_) => None,
            Device::Flash(f) => Some(f.flash_summary(m, window)),
        }
    }
}
