//! What a request asks of the drive: its direction ([`Op`]) and the NVMe command it is
//! ([`Kind`]). Shared by the workload, the host, the controller and the media, and by traces;
//! nothing here models hardware.

use serde::Serialize;

/// What a request asks: a direction of data, a trim, or a flush (a trace's sync; no data).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read = 0,
    Write = 1,
    /// A trim: an NVMe Dataset Management command with the deallocate attribute.
    Trim = 2,
    /// A flush of the drive's volatile write cache (traces record them; workloads issue none).
    Flush = 3,
}

/// The directions I/O statistics count, in the order of their indices (`op as usize`): a
/// flush moves no data and is never counted.
pub const OPS: [Op; 3] = [Op::Read, Op::Write, Op::Trim];

/// The NVMe command a write is (fio counts them all as writes, with their length).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Kind {
    /// Write: data from the host, to the media.
    #[default]
    Write,
    /// Write Zeroes: no data moves; the drive deallocates the blocks (reads return zeroes).
    Zeroes,
    /// Write Uncorrectable: no data moves; the drive marks the blocks (here: deallocates them).
    Uncorrectable,
    /// Verify: the drive reads the blocks from the media and checks them; no data moves.
    Verify,
    /// Compare: data from the host, compared with the blocks read from the media.
    Compare,
    /// SCSI VERIFY with BYTCHK = 11b: one 512 B block from the host, compared with every block
    /// read from the media.
    CompareBlock,
    /// Zone Append: data to a zone, written wherever the zone's write pointer is when the
    /// drive takes it (so several may be in flight to one zone).
    ZoneAppend,
    /// Dataset Management with the deallocate attribute (a trim): the host sends its range
    /// list (16 B a range), and the drive unmaps the whole mapping units inside the ranges.
    Deallocate,
    /// Zone Management Send, Reset Zone (fio's zbd trims): no data moves; the drive unmaps
    /// the zone and moves its write pointer back to its start.
    ZoneReset,
    /// Flush: no data moves; the drive completes it once what its volatile write cache held
    /// when the flush arrived is on the media.
    Flush,
}

impl Kind {
    /// Each command with its name in `workload.write_mode` (fio's `write_mode` words).
    pub const NAMES: [(Kind, &'static str); 7] = [
        (Kind::Write, "write"),
        (Kind::Zeroes, "zeroes"),
        (Kind::Uncorrectable, "uncor"),
        (Kind::Verify, "verify"),
        (Kind::Compare, "compare"),
        (Kind::CompareBlock, "compare-block"),
        (Kind::ZoneAppend, "zone_append"),
    ];

    /// Its name in `workload.write_mode` (a trim's, `dsm` or `zone-reset`, is not a write mode).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Deallocate => return "dsm",
            Kind::ZoneReset => return "zone-reset",
            Kind::Flush => return "flush",
            _ => {}
        }
        Self::NAMES.iter().find(|(k, _)| *k == self).map_or("write", |(_, n)| n)
    }

    /// Whether the host's data crosses the link (to the drive).
    pub fn data_in(self) -> bool {
        matches!(self, Kind::Write | Kind::Compare | Kind::CompareBlock | Kind::ZoneAppend | Kind::Deallocate)
    }

    /// Bytes of host data a command of `len` bytes moves to the drive.
    pub fn data_len(self, len: u64) -> u64 {
        match self {
            Kind::CompareBlock => 512,
            // One range descriptor: context attributes, length in blocks, starting LBA.
            Kind::Deallocate => DSM_RANGE_BYTES,
            k if k.data_in() => len,
            _ => 0,
        }
    }

    /// Whether the drive reads the media (and sends nothing back).
    pub fn reads_media(self) -> bool {
        matches!(self, Kind::Verify | Kind::Compare | Kind::CompareBlock)
    }

    /// Whether the drive deallocates the blocks.
    pub fn deallocates(self) -> bool {
        matches!(self, Kind::Zeroes | Kind::Uncorrectable | Kind::Deallocate)
    }
}

/// Bytes of a Dataset Management range descriptor (NVMe base specification, Figure
/// "Dataset Management – Range Definition": 4 B attributes, 4 B length, 8 B starting LBA).
pub const DSM_RANGE_BYTES: u64 = 16;

impl Op {
    /// Every kind of request, in the order of their indices.
    pub const ALL: [Op; 4] = [Op::Read, Op::Write, Op::Trim, Op::Flush];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Trim => "trim",
            Op::Flush => "flush",
        }
    }

    /// The data direction as Linux's block layer counts it (0 read, 1 write): a discard is a
    /// write op there (`op_is_write`), so throttling and cost models charge trims as writes.
    pub fn data_dir(self) -> usize {
        usize::from(self != Op::Read)
    }
}
