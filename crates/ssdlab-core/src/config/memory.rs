//! The host memory a run needs, estimated from its config before anything is allocated, and
//! the limit it must stay under.
//!
//! Counted: the FTL's per-block state (block records, victim-list links, the array's program
//! and wear counters, the reverse map's index and validity bits, the aged layout), the forward
//! and reverse maps as the run fills them (at most the whole map; less when the workload's
//! writes are bounded by `number_ios`), the ageing replica, integrity mode's shadow map and an
//! I/O log. Left out: what does not grow with the drive or the run (queues, the write buffer's
//! bookkeeping, histograms), a few MiB at most.

use super::Config;
use crate::media::MediaKind;

/// Bytes of per-block state: a block record (16), its victim-list links (12), the array's
/// programmed-page count, generation and wear (12), the reverse map's index (4) and the aged
/// layout's start (8).
const PER_BLOCK: u64 = 52;
/// Bytes of a reverse-map entry (a slot of a block the run writes) and of a forward-map entry
/// (a unit of a written map leaf).
const PER_ENTRY: u64 = 8;
/// Integrity mode: two hash-map entries (unit → version, slot → version) per mapped unit,
/// with the table's overhead.
const PER_SHADOW_UNIT: u64 = 80;
/// An I/O log row: job, tenant, op, offset, length, issue time, latency and the breakdown.
const PER_LOG_ROW: u64 = 40 + 13 * 8;

/// The estimate, by part.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryEstimate {
    pub parts: Vec<(&'static str, u64)>,
}

impl MemoryEstimate {
    pub fn total(&self) -> u64 {
        self.parts.iter().map(|p| p.1).fold(0, u64::saturating_add)
    }

    /// The largest parts, for a message: `"maps 32GiB, per-block state 3GiB"`.
    pub fn largest(&self) -> String {
        let mut p = self.parts.clone();
        p.sort_by_key(|x| std::cmp::Reverse(x.1));
        p.iter().take(3).filter(|x| x.1 > 0).map(|(n, b)| format!("{n} {}", approx(*b))).collect::<Vec<_>>().join(", ")
    }
}

/// Bytes to three significant figures in IEC units: `45.2GiB`.
pub fn approx(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes}B")
    } else {
        format!("{v:.3}").trim_end_matches('0').trim_end_matches('.').to_string() + UNITS[u]
    }
}

impl Config {
    /// The host memory the run may take at its peak (see the module's notes); `io_log`: the
    /// run keeps a row per I/O.
    pub fn memory_estimate(&self, io_log: bool) -> MemoryEstimate {
        let mut parts = Vec::new();
        let jobs = self.jobs();
        // I/Os the run issues, when bounded up front (number_ios per job, else unknown).
        let ios: Option<u64> = jobs.iter().try_fold(0u64, |sum, (_, _, j, _)| j.number_ios.map(|n| sum.saturating_add(n.saturating_mul(u64::from(j.loops.max(1))))));
        if self.media.kind == MediaKind::Nand {
            let n = &self.media.nand;
            let unit = self.ftl.mapping_unit.0.max(1);
            let blocks = [n.channels, n.ways, n.dies_per_chip, n.planes, n.blocks_per_plane].iter().map(|&x| u64::from(x)).fold(1u64, u64::saturating_mul);
            let slots_per_block = u64::from(n.pages_per_block).saturating_mul(n.page_size.0 / unit);
            let slots = blocks.saturating_mul(slots_per_block);
            parts.push(("per-block state", blocks.saturating_mul(PER_BLOCK).saturating_add(slots / 4)));
            // What the run writes or trims, in units: the largest I/O of each such job for all its
            // I/Os, or its size (without a runtime); unbounded otherwise.
            let written = jobs.iter().filter(|(_, _, j, _)| j.rw.read_percent(j.rwmixread) < 100 || j.replay.trace.is_some()).fold(0u64, |sum, (_, _, j, _)| {
                let loops = u64::from(j.loops.max(1));
                let by_ios = j.number_ios.map(|n| n.saturating_mul(loops).saturating_mul(j.max_bs().div_ceil(unit).max(1)));
                let by_size = j.size.filter(|_| j.runtime.is_none() && j.replay.trace.is_none()).map(|s| s.0.div_ceil(unit).saturating_mul(loops));
                sum.saturating_add(by_ios.or(by_size).unwrap_or(u64::MAX))
            });
            let aged = self.ftl.precondition == crate::ftl::Precondition::Aged;
            let replica = match self.ftl.aging {
                crate::ftl::Aging::Simulate => false,
                crate::ftl::Aging::Replica => true,
                crate::ftl::Aging::Auto => blocks > u64::from(self.ftl.aging_replica_blocks),
            };
            // The forward map's leaves (1024 entries each: a random write may bring a leaf of its
            // own) and the reverse map's entries for the blocks written: the whole map once every
            // unit has been written during the run or by simulated ageing.
            let entries = slots.saturating_mul(PER_ENTRY);
            let maps = if aged && !replica { entries.saturating_mul(2) } else { written.saturating_mul(1024 * PER_ENTRY).min(entries).saturating_add(written.saturating_mul(PER_ENTRY).min(entries)) };
            parts.push(("maps", maps));
            if aged && replica {
                let rep = u64::from(self.ftl.aging_replica_blocks).saturating_mul(slots_per_block);
                parts.push(("ageing replica", rep.saturating_mul(2 * PER_ENTRY).saturating_add(blocks.saturating_mul(slots_per_block) / 8)));
            }
            if self.ftl.integrity {
                let units = slots.min(if self.ftl.precondition == crate::ftl::Precondition::Clean { written } else { u64::MAX });
                parts.push(("integrity shadow map", units.saturating_mul(PER_SHADOW_UNIT)));
            }
        }
        if let Some(n) = ios.filter(|_| io_log) {
            parts.push(("I/O log", n.saturating_mul(PER_LOG_ROW)));
        }
        MemoryEstimate { parts }
    }
}

/// The default limit: half the machine's memory (Linux's `MemTotal`), or 8 GiB where it cannot
/// be read.
pub fn default_limit() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("MemTotal:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|kib| kib.parse::<u64>().ok()))
        .map_or(8 << 30, |kib| kib.saturating_mul(1024) / 2)
}
