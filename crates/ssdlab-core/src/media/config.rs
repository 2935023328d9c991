use crate::config::load::Issues;
use crate::config::units::{Bandwidth, Bytes};
use crate::sim::SimDuration;
use crate::{config_enum, config_struct};

config_enum! {
    /// The storage medium behind the controller.
    pub enum MediaKind {
        /// Byte-addressable non-volatile memory units (PCM, MRAM, 3D XPoint, DRAM).
        Nvm = "nvm",
    }
}

config_struct! {
    /// Byte-addressable NVM: independent units behind one internal bus, interleaved by chunk.
    pub struct NvmConfig {
        /// Independent memory units (controllers/banks that work in parallel). Default: `16`.
        units: u32 = 16,
        /// Interleaving chunk: consecutive chunks go to consecutive units. A multiple of 512 B.
        /// Default: `4KiB`.
        chunk: Bytes = Bytes(4096),
        /// Time a unit is busy reading one chunk (or part of one). Default: `48ns` (PCM, Moneta).
        read_latency: SimDuration = SimDuration::from_ns(48),
        /// Time a unit is busy writing one chunk (or part of one). Default: `150ns` (PCM, Moneta).
        write_latency: SimDuration = SimDuration::from_ns(150),
        /// Bandwidth of the internal bus shared by all units. Default: `16GB/s`.
        bus_bandwidth: Bandwidth = Bandwidth(16e9),
    }
}

config_struct! {
    /// The media backend.
    pub struct MediaConfig {
        /// `"nvm"`. Default: `"nvm"`.
        kind: MediaKind = MediaKind::Nvm,
        /// Capacity exported to the host, a multiple of 512 B. Default: `256GiB`.
        capacity: Bytes = Bytes(256 << 30),
        /// NVM array parameters (used when `kind = "nvm"`).
        nvm: NvmConfig = NvmConfig::default(),
    }
}

impl MediaConfig {
    pub fn validate(&self, issues: &mut Issues) {
        issues.check(self.capacity.0 > 0 && self.capacity.0.is_multiple_of(512), "media.capacity", self.capacity, "must be a positive multiple of 512B");
        let n = &self.nvm;
        issues.check((1..=1 << 20).contains(&n.units), "media.nvm.units", n.units, "must be between 1 and 1048576");
        issues.check(n.chunk.0 > 0 && n.chunk.0.is_multiple_of(512), "media.nvm.chunk", n.chunk, "must be a positive multiple of 512B");
        issues.check(n.bus_bandwidth.0 > 0.0, "media.nvm.bus_bandwidth", n.bus_bandwidth, "must be greater than zero");
    }
}
