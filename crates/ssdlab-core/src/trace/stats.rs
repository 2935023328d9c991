//! One streaming pass over a trace: what `ssdlab trace stats` prints.
//!
//! Memory is bounded by the trace's footprint and its number of devices, never by its length
//! or its request sizes: touched 4 KiB pages are a bitmap per device, in 8 KiB chunks covering
//! 256 MiB of address space each, allocated on first touch for chunks a request covers in
//! part (at most 32 MiB per TiB of address space touched), and runs of whole chunks kept as
//! intervals (a 1 PiB request costs at most two bitmaps and one interval).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::{Op, ReadCounts, Record};

/// Footprint granule.
pub const PAGE: u64 = 4096;

/// Pages per chunk of a [`PageSet`].
const CHUNK_PAGES: u64 = 1 << 16;

type Chunk = Box<[u64; (CHUNK_PAGES / 64) as usize]>;

/// Chunks below this index (16 TiB of address space) are found by direct indexing; above it,
/// through an ordered map.
const DIRECT_CHUNKS: u64 = 1 << 16;

/// A set of page numbers: a bitmap in chunks allocated on first touch for chunks covered in
/// part, and runs of whole chunks as intervals. A chunk is in one of the two, never both.
#[derive(Default)]
pub struct PageSet {
    direct: Vec<Option<Chunk>>,
    far: BTreeMap<u64, Chunk>,
    /// Runs of whole chunks: first chunk to one past the last; disjoint and not adjacent.
    full: BTreeMap<u64, u64>,
    len: u64,
}

impl PageSet {
    fn chunk(&mut self, id: u64) -> &mut Chunk {
        let new = || Box::new([0; (CHUNK_PAGES / 64) as usize]);
        if id < DIRECT_CHUNKS {
            let i = id as usize;
            if i >= self.direct.len() {
                self.direct.resize_with(i + 1, || None);
            }
            self.direct[i].get_or_insert_with(new)
        } else {
            self.far.entry(id).or_insert_with(new)
        }
    }

    fn is_full(&self, chunk: u64) -> bool {
        self.full.range(..=chunk).next_back().is_some_and(|(_, &end)| chunk < end)
    }

    /// Adds pages `first..=last`.
    pub fn insert_range(&mut self, first: u64, last: u64) {
        // Whole chunks `lo..hi` become an interval; the parts of chunks at either end, bits.
        let (lo, hi) = (first.div_ceil(CHUNK_PAGES), last / CHUNK_PAGES + u64::from(last % CHUNK_PAGES == CHUNK_PAGES - 1));
        if lo >= hi {
            self.insert_bits(first, last);
            return;
        }
        self.insert_chunks(lo, hi);
        if first < lo * CHUNK_PAGES {
            self.insert_bits(first, lo * CHUNK_PAGES - 1);
        }
        if hi * CHUNK_PAGES <= last {
            self.insert_bits(hi * CHUNK_PAGES, last);
        }
    }

    /// Adds whole chunks `lo..hi`: merges the runs they meet and drops the bitmaps they cover.
    fn insert_chunks(&mut self, lo: u64, hi: u64) {
        let (mut start, mut end, mut had) = (lo, hi, 0u64);
        let met: Vec<(u64, u64)> = self.full.range(..=hi).rev().take_while(|(_, &e)| e >= lo).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in met {
            self.full.remove(&s);
            had += (e.min(hi).saturating_sub(s.max(lo))) * CHUNK_PAGES;
            (start, end) = (start.min(s), end.max(e));
        }
        let count = |c: &Chunk| c.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
        for slot in self.direct.iter_mut().take(usize::try_from(hi).unwrap_or(usize::MAX)).skip(usize::try_from(lo).unwrap_or(usize::MAX)) {
            had += slot.take().map_or(0, |c| count(&c));
        }
        let far: Vec<u64> = self.far.range(lo..hi).map(|(&id, _)| id).collect();
        for id in far {
            had += self.far.remove(&id).map_or(0, |c| count(&c));
        }
        self.len += (hi - lo) * CHUNK_PAGES - had;
        self.full.insert(start, end);
    }

    /// Adds pages `first..=last` to the bitmaps of chunks not already whole.
    fn insert_bits(&mut self, first: u64, last: u64) {
        let mut page = first;
        while page <= last {
            let end = last.min((page / CHUNK_PAGES + 1).saturating_mul(CHUNK_PAGES) - 1);
            if self.is_full(page / CHUNK_PAGES) {
                let Some(next) = end.checked_add(1) else { return };
                page = next;
                continue;
            }
            let chunk = self.chunk(page / CHUNK_PAGES);
            let mut added = 0u64;
            while page <= end {
                let bit = page % CHUNK_PAGES;
                let (word, shift) = ((bit / 64) as usize, bit % 64);
                // A whole word at once where the range covers it.
                let count = (64 - shift).min(end - page + 1);
                let mask = if count == 64 { u64::MAX } else { ((1u64 << count) - 1) << shift };
                added += u64::from((mask & !chunk[word]).count_ones());
                chunk[word] |= mask;
                let Some(next) = page.checked_add(count) else {
                    self.len += added;
                    return;
                };
                page = next;
            }
            self.len += added;
        }
    }

    /// The bitmap word holding page `page`, if its chunk has a bitmap (0 otherwise): a read
    /// with no effect, to bring the word into the cache ahead of [`PageSet::insert_range`].
    #[inline]
    fn peek(&self, page: u64) -> u64 {
        let (id, bit) = (page / CHUNK_PAGES, page % CHUNK_PAGES);
        let chunk = if id < DIRECT_CHUNKS { self.direct.get(id as usize).and_then(Option::as_ref) } else { None };
        chunk.map_or(0, |c| c[(bit / 64) as usize])
    }

    /// Distinct pages.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[derive(Default)]
struct Device {
    ios: u64,
    reads: u64,
    bytes: u64,
    /// End offset of the previous request (sequentiality).
    last_end: u64,
    pages: PageSet,
    max_end: u64,
}

/// Records whose bitmap words [`TraceStats::add_all`] reads ahead at a time.
const TOUCH: usize = 64;

/// The accumulating pass.
pub struct TraceStats {
    ops: [u64; 4],
    bytes: [u64; 4],
    /// Requests by size: bucket `k` holds sizes in (2^(k-1), 2^k] bytes.
    sizes: [u64; 65],
    sequential: u64,
    first_ns: Option<u64>,
    last_ns: u64,
    min_ns: u64,
    max_ns: u64,
    out_of_order: u64,
    gaps: Histogram<u64>,
    devices: FxHashMap<u32, Device>,
}

impl Default for TraceStats {
    fn default() -> Self {
        TraceStats {
            ops: [0; 4],
            bytes: [0; 4],
            sizes: [0; 65],
            sequential: 0,
            first_ns: None,
            last_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            out_of_order: 0,
            gaps: Histogram::new_with_bounds(1, 1 << 50, 3).expect("valid HDR bounds"),
            devices: FxHashMap::default(),
        }
    }
}

impl TraceStats {
    pub fn add(&mut self, r: &Record) {
        let k = r.op as usize;
        self.ops[k] += 1;
        self.bytes[k] = self.bytes[k].saturating_add(r.len);
        if r.op == Op::Flush {
            return;
        }
        self.sizes[(64 - r.len.saturating_sub(1).leading_zeros()) as usize] += 1;
        match self.first_ns {
            None => self.first_ns = Some(r.time_ns),
            Some(_) if r.time_ns < self.last_ns => self.out_of_order += 1,
            Some(_) => {
                // Gaps are recorded in ns (0 counts as 1 ns: the histogram starts at 1).
                self.gaps.saturating_record((r.time_ns - self.last_ns).max(1));
            }
        }
        self.last_ns = r.time_ns;
        self.min_ns = self.min_ns.min(r.time_ns);
        self.max_ns = self.max_ns.max(r.time_ns);
        let d = self.devices.entry(r.dev).or_default();
        if d.ios > 0 && r.offset == d.last_end {
            self.sequential += 1;
        }
        d.ios += 1;
        d.bytes = d.bytes.saturating_add(r.len);
        if r.op == Op::Read {
            d.reads += 1;
        }
        let end = r.offset.saturating_add(r.len);
        d.last_end = end;
        d.max_end = d.max_end.max(end);
        d.pages.insert_range(r.offset / PAGE, (end - 1) / PAGE);
    }

    /// Adds `records` in order, as [`TraceStats::add`] one by one. Each group's bitmap words
    /// are read first: independent loads whose cache misses overlap, where the updates one by
    /// one would take them in turn (a trace over a TiB has megabytes of bitmaps).
    pub fn add_all(&mut self, records: &[Record]) {
        for group in records.chunks(TOUCH) {
            let touched = group.iter().fold(0u64, |a, r| a ^ self.devices.get(&r.dev).map_or(0, |d| d.pages.peek(r.offset / PAGE)));
            std::hint::black_box(touched);
            for r in group {
                self.add(r);
            }
        }
    }

    pub fn summary(&self, counts: &ReadCounts, devices_shown: usize) -> StatsSummary {
        let data_ios = self.ops[0] + self.ops[1] + self.ops[2];
        let q = |p: f64| if self.gaps.is_empty() { 0.0 } else { self.gaps.value_at_quantile(p) as f64 / 1e3 };
        let mut devs: Vec<(&u32, &Device)> = self.devices.iter().collect();
        devs.sort_by(|a, b| b.1.ios.cmp(&a.1.ios).then(a.0.cmp(b.0)));
        let footprint = self.devices.values().fold(0u64, |a, d| a.saturating_add(d.pages.len().saturating_mul(PAGE)));
        let span_s = if self.first_ns.is_some() { (self.max_ns - self.min_ns) as f64 / 1e9 } else { 0.0 };
        let sizes = self.sizes.iter().enumerate().filter(|(_, n)| **n > 0).map(|(k, &n)| SizeBucket { le_bytes: 1u64 << k.min(63), count: n }).collect();
        StatsSummary {
            lines: counts.lines,
            bad_lines: counts.bad_lines,
            first_bad: counts.first_bad.clone(),
            zero_length: counts.zero_length,
            ios: data_ios,
            reads: self.ops[0],
            writes: self.ops[1],
            trims: self.ops[2],
            flushes: self.ops[3],
            read_ratio: if data_ios > 0 { self.ops[0] as f64 / data_ios as f64 } else { 0.0 },
            bytes_read: self.bytes[0],
            bytes_written: self.bytes[1],
            bytes_trimmed: self.bytes[2],
            mean_size: if data_ios > 0 { self.bytes[..3].iter().map(|&b| b as f64).sum::<f64>() / data_ios as f64 } else { 0.0 },
            size_histogram: sizes,
            footprint_bytes: footprint,
            sequential_ratio: if data_ios > 0 { self.sequential as f64 / data_ios as f64 } else { 0.0 },
            duration_s: span_s,
            iops: if span_s > 0.0 { data_ios as f64 / span_s } else { 0.0 },
            out_of_order: self.out_of_order,
            interarrival_us: Interarrival { mean: if self.gaps.is_empty() { 0.0 } else { self.gaps.mean() / 1e3 }, p50: q(0.5), p90: q(0.9), p99: q(0.99), max: q(1.0) },
            devices: self.devices.len(),
            per_device: devs
                .iter()
                .take(devices_shown)
                .map(|(&id, d)| DeviceSummary {
                    id,
                    name: None,
                    ios: d.ios,
                    read_ratio: d.reads as f64 / d.ios.max(1) as f64,
                    bytes: d.bytes,
                    footprint_bytes: d.pages.len().saturating_mul(PAGE),
                    max_offset: d.max_end,
                })
                .collect(),
        }
    }
}

/// Requests of more than half `le_bytes` and at most `le_bytes`.
#[derive(Clone, Debug, Serialize)]
pub struct SizeBucket {
    pub le_bytes: u64,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Interarrival {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct DeviceSummary {
    pub id: u32,
    /// The device's name in the trace, where the format names devices.
    pub name: Option<String>,
    pub ios: u64,
    pub read_ratio: f64,
    pub bytes: u64,
    pub footprint_bytes: u64,
    /// The highest byte any request reached (the address space a replay must hold).
    pub max_offset: u64,
}

/// What `ssdlab trace stats` reports.
#[derive(Clone, Debug, Serialize)]
pub struct StatsSummary {
    pub lines: u64,
    pub bad_lines: u64,
    pub first_bad: Option<String>,
    pub zero_length: u64,
    /// Reads, writes and trims (flushes apart).
    pub ios: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub flushes: u64,
    pub read_ratio: f64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub bytes_trimmed: u64,
    pub mean_size: f64,
    /// Requests per size bucket, each up to a power of two.
    pub size_histogram: Vec<SizeBucket>,
    /// Distinct 4 KiB pages touched, over all devices.
    pub footprint_bytes: u64,
    /// Requests that start where the previous request of the same device ended.
    pub sequential_ratio: f64,
    pub duration_s: f64,
    pub iops: f64,
    /// Records whose time is before the previous record's.
    pub out_of_order: u64,
    pub interarrival_us: Interarrival,
    pub devices: usize,
    /// The busiest devices.
    pub per_device: Vec<DeviceSummary>,
}

/// Records handed from the reading thread to the counting thread at a time.
pub const BATCH: usize = 8192;

/// Clears `batch` and fills it with up to [`BATCH`] records; returns whether the trace has more
/// (the batch is full).
#[inline]
pub fn read_batch(reader: &mut super::TraceReader, batch: &mut Vec<Record>) -> crate::error::Result<bool> {
    batch.clear();
    while batch.len() < BATCH {
        match reader.next_record()? {
            Some(r) => batch.push(r),
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// One pass over a trace file: one thread reads and parses, the calling thread counts.
/// `progress` is called with the lines read so far, now and then; it returns `false` to stop.
pub fn stats_file(path: &std::path::Path, opts: &super::ReadOptions, devices_shown: usize, mut progress: impl FnMut(u64) -> bool) -> crate::error::Result<(super::Format, StatsSummary)> {
    let mut reader = super::TraceReader::open(path, opts)?;
    let format = reader.format;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Record>>(4);
    let handle = std::thread::spawn(move || -> crate::error::Result<super::TraceReader> {
        loop {
            let mut batch = Vec::with_capacity(BATCH);
            let more = read_batch(&mut reader, &mut batch)?;
            if tx.send(batch).is_err() || !more {
                return Ok(reader);
            }
        }
    });
    let mut stats = TraceStats::default();
    let mut seen = 0u64;
    let mut stopped = false;
    for batch in &rx {
        stats.add_all(&batch);
        seen += batch.len() as u64;
        if !progress(seen) {
            stopped = true;
            break;
        }
    }
    drop(rx);
    let reader = handle.join().map_err(|_| crate::error::Error::Invariant { component: "trace", detail: "the reading thread panicked".into() })??;
    if stopped {
        return Err(crate::error::Error::Cancelled);
    }
    let mut summary = stats.summary(&reader.counts, devices_shown);
    let names = reader.device_names();
    for d in &mut summary.per_device {
        d.name = names.get(d.id as usize).cloned();
    }
    Ok((format, summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_set_counts_like_a_plain_set() {
        // Ranges from one page to several chunks, over 8 chunks: against a flag per page.
        let space = 8 * CHUNK_PAGES;
        let mut plain = vec![false; space as usize];
        let mut set = PageSet::default();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..400 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let first = (x >> 20) % space;
            let len = if i % 5 == 0 { (x >> 7) % (3 * CHUNK_PAGES) } else { (x >> 9) % 200 };
            let last = (first + len).min(space - 1);
            set.insert_range(first, last);
            plain[first as usize..=last as usize].iter_mut().for_each(|p| *p = true);
            assert_eq!(set.len(), plain.iter().filter(|&&p| p).count() as u64, "after {first}..={last}");
        }
    }

    #[test]
    fn add_all_counts_as_add_one_by_one() {
        // Three devices, sizes from a page to two chunks, some beyond 16 TiB, some whole
        // chunks, out-of-order times and flushes: the batched pass reports what the plain one
        // does.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let records: Vec<Record> = (0..5000u64)
            .map(|i| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let op = [Op::Read, Op::Write, Op::Trim, Op::Flush][(x >> 60) as usize % 4];
                let len = if op == Op::Flush {
                    0
                } else if i % 97 == 0 {
                    2 * CHUNK_PAGES * PAGE
                } else {
                    PAGE << ((x >> 40) % 6)
                };
                let far = if i % 13 == 0 { 1 << 46 } else { 0 };
                Record { time_ns: (i * 1000).saturating_sub((x >> 58) * 1000), op, offset: far + ((x >> 8) % (1 << 36)) / PAGE * PAGE, len, dev: (x >> 33) as u32 % 3 }
            })
            .collect();
        let (mut one, mut all) = (TraceStats::default(), TraceStats::default());
        for r in &records {
            one.add(r);
        }
        all.add_all(&records);
        let counts = ReadCounts::default();
        let json = |s: &TraceStats| serde_json::to_string(&s.summary(&counts, 3)).unwrap_or_default();
        assert_eq!(json(&one), json(&all));
        assert!(json(&one).len() > 100);
    }

    #[test]
    fn huge_ranges_take_no_memory_per_chunk() {
        let mut set = PageSet::default();
        set.insert_range(1, u64::MAX / PAGE);
        set.insert_range(0, 5);
        assert_eq!(set.len(), u64::MAX / PAGE + 1);
        assert!(set.far.len() + set.direct.iter().flatten().count() <= 2);
    }
}
