//! The host memory a run needs, estimated from its config before anything is allocated, and
//! the limit it must stay under.
//!
//! Counted: the FTL's per-block state (block records, victim-list links, the array's program
//! and wear counters, the reverse map's index and validity bits, the aged layout), the forward
//! and reverse maps as the run fills them (at most the whole map; less when the workload's
//! writes are bounded by `number_ios`), the ageing replica, the cached map (`ftl.map_cache`,
//! as full as its size allows), integrity mode's shadow map, an I/O log, every job's latency
//! histograms (at the size they reach at the longest latency they keep) and every job's
//! in-flight I/Os (its queue depth of requests and their page lists).
//! Left out: what does not grow with the drive, the jobs or the run (the write buffer's
//! bookkeeping, the event queue's base), a few MiB at most; the time series' rows.
//!
//! The limit is the smallest of half the machine's memory, the address space the process may
//! still map (`RLIMIT_AS`, less what it maps now) and the memory its cgroup may still charge
//! (`memory.max` less `memory.current`, up the cgroup tree), each with a quarter kept back for
//! what the estimate leaves out (allocator arenas, thread stacks).

use super::Config;
use crate::media::MediaKind;

/// Bytes of per-block state: a block record (16), its victim-list links (12), the array's
/// programmed-page count, generation and wear (12), the reverse map's index (4), the name of
/// a filled block's valid bitmap (4) and the aged layout's start (8).
const PER_BLOCK: u64 = 56;
/// Bytes of a reverse-map entry (a slot of a block the run writes) and of a dense forward-map
/// entry.
const PER_ENTRY: u64 = 8;
/// Bytes a forward-map update may bring at most: a sparse leaf of its own (its list of four
/// entries, header and allocation), or an eighth of a dense leaf.
const PER_MAP_UPDATE: u64 = 72;
/// Integrity mode: two hash-map entries (unit → version, slot → version) per mapped unit,
/// with the table's overhead.
const PER_SHADOW_UNIT: u64 = 80;
/// An I/O log row: job, tenant, op, offset, length, issue time, latency and the breakdown.
const PER_LOG_ROW: u64 = 40 + 13 * 8;

/// Bytes an in-flight I/O holds whatever its size (its request, completion and tracking
/// records), and per 4 KiB page of it up to 256 KiB (its page list and per-page flash or media
/// operations). Measured on this build (peak resident memory, 8 jobs at iodepth 1023 against
/// iodepth 1): about 0.6 KiB per in-flight 4 KiB read and 2.1 KiB per 2 MiB one; the test
/// `test_the_memory_estimate_bounds_what_runs_take` holds the estimate above what runs take.
const PER_INFLIGHT: u64 = 640;
const PER_INFLIGHT_PAGE: u64 = 32;
const INFLIGHT_PAGES_MAX: u64 = 64;
/// Bytes per page the page cache holds (buffered jobs): its LRU node and hash-map slot, the
/// page's state and its place in the dirty and writeback sets (measured as above: 64 buffered
/// jobs reading 2 MiB at random fill a 4 GiB cache's million pages with about 120 MiB).
const PER_CACHED_PAGE: u64 = 144;

/// Bytes of an auto-resizing HDR histogram's counts from 1 to `max` at `digits` significant
/// digits (hdrhistogram's layout: `(buckets + 1) × sub-buckets / 2` counters of 8 bytes).
pub fn histogram_bytes(digits: u8, max: u64) -> u64 {
    let sub = (2 * 10u64.pow(u32::from(digits.clamp(1, 5)))).next_power_of_two();
    let (mut smallest, mut buckets) = (sub, 1u64);
    while smallest <= max && smallest < u64::MAX / 2 {
        smallest <<= 1;
        buckets += 1;
    }
    (buckets + 1) * (sub / 2) * 8
}

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
            // Map updates: each unit written, and the GC moves it may cost on a full drive (greedy
            // GC's write amplification under uniform random writes, (1 + op) / (2 op), bounds
            // them). Each update costs the forward map a sparse entry (or a leaf of its own) and
            // the reverse map an entry of the block written: the whole map, dense, once every
            // unit has been written during the run or by simulated ageing.
            let op = self.ftl.op_ratio.max(0.01);
            let updates = (written as f64 * (1.0 + (1.0 + op) / (2.0 * op))).min(u64::MAX as f64) as u64;
            let entries = slots.saturating_mul(PER_ENTRY);
            let maps = if aged && !replica { entries.saturating_mul(2) } else { updates.saturating_mul(PER_MAP_UPDATE).min(entries).saturating_add(updates.saturating_mul(PER_ENTRY).min(entries)) };
            parts.push(("maps", maps));
            if aged && replica {
                let rep = u64::from(self.ftl.aging_replica_blocks).saturating_mul(slots_per_block);
                parts.push(("ageing replica", rep.saturating_mul(2 * PER_ENTRY).saturating_add(blocks.saturating_mul(slots_per_block) / 8)));
            }
            if self.ftl.map_cache.0 > 0 {
                // The cached map, as full as its size or the map allows.
                let held = crate::ftl::map_cache::capacity(&self.ftl, n.page_size.0, self.exported_capacity() / unit);
                parts.push(("map cache", crate::ftl::map_cache::MapCache::bytes_at_most(held)));
            }
            if self.ftl.integrity {
                let units = slots.min(if self.ftl.precondition == crate::ftl::Precondition::Clean { written } else { u64::MAX });
                parts.push(("integrity shadow map", units.saturating_mul(PER_SHADOW_UNIT)));
            }
        }
        if let Some(n) = ios.filter(|_| io_log) {
            parts.push(("I/O log", n.saturating_mul(PER_LOG_ROW)));
        }
        // Per job: total, submission and completion latency per direction; those of a direction
        // the job issues grow up to the histograms' range, the others keep their first size.
        let digits = self.stats.histogram_digits;
        let (full, small) = (histogram_bytes(digits, crate::stats::HIST_MAX_NS), histogram_bytes(digits, 2048));
        let (mut stats, mut inflight) = (0u64, 0u64);
        for (_, _, j, _) in &jobs {
            let reads = j.rw.read_percent(j.rwmixread);
            let used = u64::from(reads > 0) + u64::from(reads < 100) + u64::from(j.rw.trims());
            stats = stats.saturating_add(3 * (used * full + (3 - used.min(3)) * small));
            let pages = j.max_bs().div_ceil(4096).clamp(1, INFLIGHT_PAGES_MAX);
            inflight = inflight.saturating_add(u64::from(j.iodepth).saturating_mul(PER_INFLIGHT + pages * PER_INFLIGHT_PAGE));
        }
        parts.push(("latency histograms", stats));
        if jobs.iter().any(|(_, _, j, _)| !j.direct) {
            let pages = self.host.page_cache.size.0.min(self.exported_capacity()) / crate::host::page_cache::PAGE;
            parts.push(("page cache", pages.saturating_mul(PER_CACHED_PAGE)));
        }
        parts.push(("in-flight I/Os", inflight));
        MemoryEstimate { parts }
    }
}

/// The default limit (see the module's notes), or 8 GiB where the machine's memory cannot be read.
pub fn default_limit() -> u64 {
    let ram = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| field_kib(&s, "MemTotal:")).map_or(8 << 30, |kib| kib.saturating_mul(1024) / 2);
    let headroom = |left: u64| left - left / 4;
    let mut limit = ram;
    if let Some(left) = address_space_left() {
        limit = limit.min(headroom(left));
    }
    if let Some(left) = cgroup_left() {
        limit = limit.min(headroom(left));
    }
    limit
}

/// A `/proc` field in KiB (`MemTotal:   24576 kB`).
fn field_kib(text: &str, key: &str) -> Option<u64> {
    text.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok())
}

/// Address space the process may still map: its soft `RLIMIT_AS` (`ulimit -v`) less its
/// `VmSize`; None when unlimited or unreadable.
fn address_space_left() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max address space"))?;
    let soft: u64 = line["Max address space".len()..].split_whitespace().next()?.parse().ok()?;
    let used = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| field_kib(&s, "VmSize:")).unwrap_or(0).saturating_mul(1024);
    Some(soft.saturating_sub(used))
}

/// Memory the process's cgroup (v2) and its ancestors may still charge: the least
/// `memory.max - memory.current` up the tree; None without a limit.
fn cgroup_left() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim().to_string();
    let mut dir = std::path::PathBuf::from("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    let mut least: Option<u64> = None;
    loop {
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok().and_then(|s| s.trim().parse::<u64>().ok());
        if let (Some(max), Some(current)) = (read("memory.max"), read("memory.current")) {
            let left = max.saturating_sub(current);
            least = Some(least.map_or(left, |l: u64| l.min(left)));
        }
        if dir == std::path::Path::new("/sys/fs/cgroup") || !dir.pop() {
            return least;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_bytes_follow_hdrhistograms_layout() {
        for (digits, max) in [(3u8, 2048u64), (3, 1_000_000), (3, crate::stats::HIST_MAX_NS), (2, 50_000), (5, 1 << 40)] {
            let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 2048, digits).unwrap();
            h.auto(true);
            h.record(max).unwrap();
            let counts = h.distinct_values();
            assert_eq!(histogram_bytes(digits, max), counts as u64 * 8, "digits {digits}, max {max}");
        }
    }

    #[test]
    fn the_limit_is_at_most_half_the_machine() {
        let ram = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| field_kib(&s, "MemTotal:"));
        if let Some(kib) = ram {
            assert!(default_limit() <= kib * 1024 / 2);
        }
    }
}
