//! The first media backend: byte-addressable non-volatile memory (PCM, MRAM, 3D `XPoint`, DRAM)
//! as `units` independent memory units behind one internal bus.
//!
//! An access is cut at `chunk` boundaries; chunk `i` of the device lives on unit
//! `i mod units`. Each piece occupies its unit for the read or write latency (FIFO per unit)
//! and the internal bus for `bytes / bus_bandwidth` (FIFO, shared). Reads go unit → bus →
//! `PCIe`; writes arrive from `PCIe` and go bus → unit.
//!
//! Leaves out (for the NVM-array issue): banks within a unit, row buffers, read-modify-write
//! for partial chunks, a ring/crossbar interconnect with per-hop latency, and wear levelling.

mod config;
pub mod nand;

pub use config::{DieScheduler, MediaConfig, MediaKind, NandConfig, NvmConfig};

use crate::sim::{Grant, SimDuration, SimTime, Timeline};

/// A piece of an access that falls within one chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub unit: u32,
    pub len: u32,
}

/// The NVM array.
pub struct Media {
    units: Vec<Timeline>,
    bus: Timeline,
    chunk: u64,
    read_latency: SimDuration,
    write_latency: SimDuration,
    ps_per_byte: f64,
}

impl Media {
    pub fn new(c: &MediaConfig) -> Self {
        let n = &c.nvm;
        Media {
            units: vec![Timeline::default(); n.units as usize],
            bus: Timeline::default(),
            chunk: n.chunk.0,
            read_latency: n.read_latency,
            write_latency: n.write_latency,
            ps_per_byte: 1e12 / n.bus_bandwidth.0,
        }
    }

    /// Cuts `[offset, offset + len)` into per-chunk pieces, in address order.
    pub fn pieces(&self, offset: u64, len: u64) -> impl Iterator<Item = Piece> + '_ {
        let end = offset + len;
        let mut at = offset;
        let units = self.units.len() as u64;
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let chunk_idx = at / self.chunk;
            let next = ((chunk_idx + 1) * self.chunk).min(end);
            let piece = Piece { unit: (chunk_idx % units) as u32, len: (next - at) as u32 };
            at = next;
            Some(piece)
        })
    }

    /// Number of pieces an access is cut into.
    pub fn piece_count(&self, offset: u64, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        (offset + len - 1) / self.chunk - offset / self.chunk + 1
    }

    /// Occupies `unit` for a read (`write = false`) or write.
    #[inline]
    pub fn access(&mut self, unit: u32, now: SimTime, write: bool) -> Grant {
        let t = if write { self.write_latency } else { self.read_latency };
        self.units[unit as usize].reserve(now, t)
    }

    /// Time a unit is busy for one access.
    pub fn access_time(&self, write: bool) -> SimDuration {
        if write {
            self.write_latency
        } else {
            self.read_latency
        }
    }

    /// Time `len` bytes take on the internal bus.
    pub fn bus_time(&self, len: u64) -> SimDuration {
        SimDuration::from_ps((len as f64 * self.ps_per_byte).round() as u64)
    }

    /// Moves `len` bytes over the internal bus.
    #[inline]
    pub fn transfer(&mut self, now: SimTime, len: u64) -> Grant {
        let t = self.bus_time(len);
        self.bus.reserve(now, t)
    }

    /// Busy time summed over units, and of the bus.
    pub fn busy(&self) -> (SimDuration, SimDuration) {
        (self.units.iter().fold(SimDuration::ZERO, |a, u| a + u.busy()), self.bus.busy())
    }

    pub fn unit_count(&self) -> usize {
        self.units.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::units::Bytes;

    #[test]
    fn pieces_split_at_chunks_and_interleave_over_units() {
        let c = MediaConfig { nvm: NvmConfig { units: 4, chunk: Bytes(4096), ..NvmConfig::default() }, ..MediaConfig::default() };
        let m = Media::new(&c);
        let p: Vec<Piece> = m.pieces(4096 * 3 + 512, 8192).collect();
        assert_eq!(p, vec![Piece { unit: 3, len: 3584 }, Piece { unit: 0, len: 4096 }, Piece { unit: 1, len: 512 }]);
        assert_eq!(m.piece_count(4096 * 3 + 512, 8192), 3);
        assert_eq!(m.piece_count(0, 4096), 1);
    }

    #[test]
    fn units_are_fifo_and_independent() {
        let mut m = Media::new(&MediaConfig::default());
        let a = m.access(0, SimTime(0), false);
        let b = m.access(0, SimTime(0), false);
        let c = m.access(1, SimTime(0), true);
        assert_eq!(a.end, SimTime(48_000));
        assert_eq!(b.start, a.end);
        assert_eq!(c.end, SimTime(150_000));
        // 4 KiB over a 16 GB/s bus: 256 ns.
        assert_eq!(m.bus_time(4096), SimDuration::from_ns(256));
    }
}

/// Media events.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// Translation is done: the read pieces go to their units.
    ReadStart { cmd: crate::nvme::CmdId },
    /// A read piece leaves its unit for the internal bus.
    ReadBus { cmd: crate::nvme::CmdId, len: u32, at: u32 },
    /// Write data arrived from the host: the pieces go over the bus.
    WriteStart { cmd: crate::nvme::CmdId },
    /// A write piece reaches its unit.
    WriteUnit { cmd: crate::nvme::CmdId, unit: u32, len: u32 },
    /// NAND: a read served from the write buffer is ready.
    Buffered { cmd: crate::nvme::CmdId, len: u32, at: u32 },
    /// NAND: check whether background GC should run.
    BackgroundGc,
    /// NAND array events.
    Nand(nand::Event),
}
