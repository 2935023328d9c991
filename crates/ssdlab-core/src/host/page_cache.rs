//! The page cache: buffered I/O (fio's `direct=0`) between the application and the device.
//!
//! Linux's page cache of one block device, in 4 KiB pages:
//! - **Reads** copy cached pages; missing pages are read from the device by the reading thread
//!   and it waits for them. On-demand readahead (`mm/readahead.c`) keeps a window per job (one
//!   open file each): a sequential miss starts a window sized from the request (×4 or ×2, up
//!   to `read_ahead`), and reaching the window's marker page (`PG_readahead`) reads the next
//!   window asynchronously, doubling it (×4 while small) up to `read_ahead`. Random misses read
//!   only the pages asked for.
//! - **Writes** copy into pages and mark them dirty; the write returns without the device.
//!   A flusher thread writes dirty pages back in offset order from a cyclic cursor, merging
//!   contiguous pages up to `max_io`: in the background above `dirty_background_ratio`, every
//!   `writeback_interval` once the oldest dirty data is `dirty_expire` old, and for `fsync`.
//!   blk-wbt limits writeback in flight (`writeback_depth`, `sync_writeback_depth`).
//!   `balance_dirty_pages` paces writers above the freerun point (half-way between the two
//!   thresholds) at the measured writeback bandwidth scaled down towards the limit, and stops
//!   them at `dirty_ratio` until writeback brings the dirty pages back under it.
//! - **Eviction** takes the least recently used clean page; dirty pages and pages under I/O
//!   stay until written back.
//!
//! Leaves out: the active/inactive split of the LRU and refault detection, memory demand from
//! outside the cache, read-modify-write of partial pages, per-cgroup writeback, and the device
//! Flush command that follows an fsync.

use std::collections::{BTreeSet, VecDeque};

use lru::LruCache;
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use crate::config_struct;
use crate::ids::CmdId;
use crate::schema::Issues;
use crate::sim::{SimDuration, SimTime};
use crate::units::Bytes;

/// The memory page size.
pub const PAGE: u64 = 4096;

config_struct! {
    /// The page cache of buffered I/O (jobs with `direct = false`); defaults are Linux's.
    pub struct PageCacheConfig {
        /// Memory the page cache may hold. Default: `4GiB`.
        size: Bytes = Bytes(4 << 30),
        /// Largest readahead window (`/sys/block/*/queue/read_ahead_kb`; Linux's default,
        /// `VM_READAHEAD_PAGES` in include/linux/mm.h). Default: `128KiB`.
        read_ahead: Bytes = Bytes(128 << 10),
        /// Largest device request the cache builds (`max_sectors_kb`; Linux caps it at the
        /// drive's MDTS, commonly 128 KiB). Default: `128KiB`.
        max_io: Bytes = Bytes(128 << 10),
        /// Dirty pages, as a share of `size`, above which the flusher writes back in the
        /// background (`vm.dirty_background_ratio`, Linux default 10). Default: `0.1`.
        dirty_background_ratio: f64 = 0.1,
        /// Dirty pages, as a share of `size`, at which writers stop until writeback catches
        /// up (`vm.dirty_ratio`, Linux default 20). Default: `0.2`.
        dirty_ratio: f64 = 0.2,
        /// Age at which dirty data is written back whatever the thresholds
        /// (`vm.dirty_expire_centisecs`, Linux default 3000). Default: `30s`.
        dirty_expire: SimDuration = SimDuration::from_ms(30_000),
        /// How often the flusher wakes to look for expired dirty data
        /// (`vm.dirty_writeback_centisecs`, Linux default 500). Default: `5s`.
        writeback_interval: SimDuration = SimDuration::from_ms(5_000),
        /// Background writeback requests in flight (blk-wbt's background limit: a quarter of
        /// its default depth `RWB_DEF_DEPTH` = 16, block/blk-wbt.c). Default: `4`.
        writeback_depth: u32 = 4,
        /// Writeback requests in flight for fsync (blk-wbt's full default depth). Default: `16`.
        sync_writeback_depth: u32 = 16,
        /// A buffered read's or write's system call, VFS and file-system entry and exit (no
        /// block layer). Assumed, not measured. Default: `0.5us`.
        syscall_cost: SimDuration = SimDuration::from_ns(500),
        /// Per page: look-up or insertion, LRU and dirty accounting. Assumed. Default: `0.1us`.
        page_cost: SimDuration = SimDuration::from_ns(100),
        /// Building one device request from the cache and passing it down the block layer
        /// and driver (no system call). Assumed. Default: `1.1us`.
        request_cost: SimDuration = SimDuration::from_ns(1_100),
    }
}

impl PageCacheConfig {
    pub fn validate(&self, issues: &mut Issues) {
        let k = |s: &str| format!("host.page_cache.{s}");
        issues.check(self.size.0 >= 1 << 20 && self.size.0.is_multiple_of(PAGE), &k("size"), self.size, "must be at least 1MiB and a multiple of 4KiB");
        issues.check(self.read_ahead.0.is_multiple_of(PAGE) && self.read_ahead.0 <= 64 << 20, &k("read_ahead"), self.read_ahead, "must be a multiple of 4KiB, at most 64MiB (0 turns readahead off)");
        issues.check(self.max_io.0 >= PAGE && self.max_io.0.is_multiple_of(PAGE) && self.max_io.0 <= 64 << 20, &k("max_io"), self.max_io, "must be a multiple of 4KiB between 4KiB and 64MiB");
        issues.check(self.dirty_background_ratio > 0.0 && self.dirty_background_ratio < 1.0, &k("dirty_background_ratio"), self.dirty_background_ratio, "must be in (0, 1)");
        issues.check(self.dirty_ratio > 0.0 && self.dirty_ratio < 1.0, &k("dirty_ratio"), self.dirty_ratio, "must be in (0, 1)");
        issues.check(
            self.dirty_background_ratio < self.dirty_ratio,
            &k("dirty_ratio"),
            self.dirty_ratio,
            format!("must be above host.page_cache.dirty_background_ratio = {}", self.dirty_background_ratio),
        );
        issues.check(self.writeback_interval > SimDuration::ZERO, &k("writeback_interval"), self.writeback_interval, "must be greater than zero");
        issues.check((1..=4096).contains(&self.writeback_depth), &k("writeback_depth"), self.writeback_depth, "must be between 1 and 4096");
        issues.check((1..=4096).contains(&self.sync_writeback_depth), &k("sync_writeback_depth"), self.sync_writeback_depth, "must be between 1 and 4096");
    }
}

/// One open file's readahead state (`struct file_ra_state`), in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ra {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    /// The page after the last one read (`prev_pos`), if any.
    pub prev: Option<u64>,
}

/// `get_init_ra_size`: the first window of a sequential stream, from the request size.
pub fn init_ra_size(req: u64, max: u64) -> u64 {
    let n = req.max(1).next_power_of_two();
    let n = if n <= max / 32 {
        n * 4
    } else if n <= max / 4 {
        n * 2
    } else {
        max
    };
    n.min(max)
}

/// `get_next_ra_size`: the window after `cur`.
pub fn next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        (4 * cur).min(max)
    } else if cur <= max / 2 {
        (2 * cur).min(max)
    } else {
        max
    }
}

/// Device I/O the cache asks for: `pages` pages from page `first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub first: u64,
    pub pages: u64,
}

/// What a buffered read needs from the device.
#[derive(Debug, Default)]
pub struct ReadPlan {
    /// Reads already in flight that bring pages it needs.
    pub wait_on: Vec<CmdId>,
    /// New reads it waits for (the pages asked for and the synchronous part of a window).
    pub sync: Vec<Run>,
    /// New readahead it does not wait for.
    pub ahead: Vec<Run>,
}

/// How a buffered write leaves `balance_dirty_pages`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Throttle {
    /// Under the freerun point: return at once.
    Free,
    /// Paced: sleep this long.
    Pause(SimDuration),
    /// At the dirty limit: wait until writeback brings the dirty pages under it.
    Wait,
}

/// Why writeback runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason {
    Background,
    Expired,
}

/// blk-wbt's window for the writeback bandwidth estimate (`BANDWIDTH_INTERVAL`, 200 ms), and
/// the period it averages over (mm/page-writeback.c, `wb_update_write_bandwidth`: 3 s).
const BW_INTERVAL: SimDuration = SimDuration::from_ms(200);
const BW_PERIOD_S: f64 = 3.0;
/// Linux's first guess of a device's write bandwidth (`INIT_BW`: 100 MB/s).
const INIT_BW: f64 = 100e6;
/// The longest pause of a paced writer (`MAX_PAUSE`, 200 ms).
const MAX_PAUSE: SimDuration = SimDuration::from_ms(200);

/// Counters for the results.
#[derive(Clone, Debug, Default)]
pub struct CacheStats {
    pub read_pages: u64,
    pub hit_pages: u64,
    pub readahead_pages: u64,
    pub device_reads: u64,
    pub device_read_bytes: u64,
    pub device_writes: u64,
    pub device_write_bytes: u64,
    pub written_pages: u64,
    pub evicted: u64,
    pub dirty_max: u64,
    pub paused: u64,
    pub pause_time: SimDuration,
    pub stopped: u64,
    pub fsyncs: u64,
    pub fsync_time: SimDuration,
    pub largest_window: u64,
}

/// The cache's state.
pub struct PageCache {
    cfg: PageCacheConfig,
    capacity: u64,
    ra_max: u64,
    io_pages: u64,
    bg_thresh: u64,
    limit: u64,
    /// Clean, up-to-date pages, least recently used first.
    clean: LruCache<u64, (), FxBuildHasher>,
    dirty: BTreeSet<u64>,
    /// When the cache went from clean to dirty (the block device inode's `dirtied_when`).
    dirtied_when: Option<SimTime>,
    /// Pages under writeback: how many writes in flight or queued cover each.
    writeback: FxHashMap<u64, u32>,
    /// Pages being read, by the device read bringing them.
    reading: FxHashMap<u64, CmdId>,
    /// Pages carrying `PG_readahead`.
    marks: FxHashSet<u64>,
    ra: Vec<Ra>,
    /// Each job's file, in pages: readahead stops at its end.
    files: Vec<(u64, u64)>,
    cursor: u64,
    /// The flusher's next periodic wake-up.
    next_wake: SimTime,
    /// Background or expiry writeback under way.
    reason: Option<Reason>,
    /// Expiry writeback: pages still to write in this round.
    expired_left: u64,
    /// fsync writeback queued (runs with their sequence numbers).
    sync_queue: VecDeque<(Run, u64)>,
    inflight: u32,
    next_seq: u64,
    /// Writeback requests not yet complete, by sequence number.
    outstanding: BTreeSet<u64>,
    /// fsyncs waiting, with the last sequence number each waits for.
    fsyncs: Vec<(usize, u64, SimTime)>,
    bw: f64,
    bw_start: SimTime,
    bw_bytes: u64,
    /// Jobs that write through the cache (`balance_dirty_pages` shares the bandwidth).
    dirtiers: u32,
    pub stats: CacheStats,
}

impl PageCache {
    /// The cache for jobs whose files are `files` (each a region of pages: first, end).
    pub fn new(cfg: &PageCacheConfig, files: Vec<(u64, u64)>, dirtiers: u32) -> Self {
        let capacity = cfg.size.0 / PAGE;
        PageCache {
            capacity,
            ra_max: cfg.read_ahead.0 / PAGE,
            io_pages: cfg.max_io.0 / PAGE,
            bg_thresh: ((capacity as f64 * cfg.dirty_background_ratio) as u64).max(1),
            limit: ((capacity as f64 * cfg.dirty_ratio) as u64).max(2),
            clean: LruCache::unbounded_with_hasher(FxBuildHasher),
            dirty: BTreeSet::new(),
            dirtied_when: None,
            writeback: FxHashMap::default(),
            reading: FxHashMap::default(),
            marks: FxHashSet::default(),
            ra: vec![Ra::default(); files.len()],
            files,
            cursor: 0,
            next_wake: SimTime::ZERO + cfg.writeback_interval,
            reason: None,
            expired_left: 0,
            sync_queue: VecDeque::new(),
            inflight: 0,
            next_seq: 0,
            outstanding: BTreeSet::new(),
            fsyncs: Vec::new(),
            bw: INIT_BW,
            bw_start: SimTime::ZERO,
            bw_bytes: 0,
            dirtiers: dirtiers.max(1),
            stats: CacheStats::default(),
            cfg: cfg.clone(),
        }
    }

    pub fn config(&self) -> &PageCacheConfig {
        &self.cfg
    }

    /// Dirty pages and pages under writeback (what the dirty thresholds count).
    pub fn dirty_pages(&self) -> u64 {
        (self.dirty.len() + self.writeback.len()) as u64
    }

    /// Pages the dirty thresholds allow: the background threshold and the limit.
    pub fn thresholds(&self) -> (u64, u64) {
        (self.bg_thresh, self.limit)
    }

    /// Evicts least recently used clean pages while the cache is over its size.
    fn shrink(&mut self) {
        let over = (self.clean.len() + self.dirty.len() + self.reading.len() + self.writeback.len()) as u64;
        let mut over = over.saturating_sub(self.capacity);
        while over > 0 {
            let Some((p, ())) = self.clean.pop_lru() else { break };
            self.marks.remove(&p);
            self.stats.evicted += 1;
            over -= 1;
        }
    }

    /// Whether page `p` holds data (clean, dirty or under writeback).
    fn present(&self, p: u64) -> bool {
        self.clean.contains(&p) || self.dirty.contains(&p) || self.writeback.contains_key(&p)
    }

    /// The runs of pages in `[first, first + n)` that are neither present nor being read, cut
    /// at `io_pages`.
    fn missing(&self, first: u64, n: u64, out: &mut Vec<Run>) {
        let mut run: Option<Run> = None;
        for p in first..first + n {
            let absent = !self.present(p) && !self.reading.contains_key(&p);
            match (&mut run, absent) {
                (Some(r), true) if r.pages < self.io_pages => r.pages += 1,
                (r, true) => {
                    if let Some(done) = r.take() {
                        out.push(done);
                    }
                    *r = Some(Run { first: p, pages: 1 });
                }
                (r, false) => {
                    if let Some(done) = r.take() {
                        out.push(done);
                    }
                }
            }
        }
        out.extend(run);
    }

    /// A buffered read of `n` pages from page `first` by `job`: the cache looks the pages up
    /// (a hit moves a page to the LRU's head), decides readahead, and says what to read.
    /// `last_page` is the page after the request's last byte (for `prev_pos`).
    pub fn read(&mut self, job: usize, first: u64, n: u64) -> ReadPlan {
        let mut plan = ReadPlan::default();
        self.stats.read_pages += n;
        let mut hit_mark = None;
        let mut all_present = true;
        for p in first..first + n {
            if self.marks.remove(&p) {
                hit_mark = Some(p);
            }
            if self.clean.get(&p).is_some() || self.dirty.contains(&p) || self.writeback.contains_key(&p) {
                self.stats.hit_pages += 1;
            } else {
                all_present = false;
                if let Some(&c) = self.reading.get(&p) {
                    if !plan.wait_on.contains(&c) {
                        plan.wait_on.push(c);
                    }
                }
            }
        }
        let ra = self.ra[job];
        let max = self.ra_max;
        // ondemand_readahead: sequential when this read starts at the page after the last
        // one read, or on it; page 0 starts a stream.
        let sequential = ra.prev.is_some_and(|prev| first == prev || first + 1 == prev) || first == self.files[job].0;
        let mut next = ra;
        let window = match hit_mark {
            Some(m) if max > 0 && ra.size > 0 && m == ra.start + ra.size - ra.async_size => {
                // Our own marker: the next window goes ahead, without waiting.
                next.start = ra.start + ra.size;
                next.size = next_ra_size(ra.size, max);
                next.async_size = next.size;
                true
            }
            Some(m) if max > 0 => {
                // Someone else's marker: a window from the next page not cached.
                let mut start = m + 1;
                while start < m + 1 + max && (self.present(start) || self.reading.contains_key(&start)) {
                    start += 1;
                }
                next.start = start;
                next.size = next_ra_size(start - first, max);
                next.async_size = next.size;
                true
            }
            _ if max > 0 && !all_present && (sequential || n > max) => {
                // A sequential miss (or a request larger than the window): a new window.
                next.start = first;
                next.size = init_ra_size(n, max).max(n);
                next.async_size = next.size - n;
                true
            }
            _ => false,
        };
        // The pages the request needs (read synchronously), then the rest of a new window
        // (up to the end of the file).
        self.missing(first, n, &mut plan.sync);
        if window {
            let (ws, we) = (next.start, (next.start + next.size).min(self.files[job].1.max(first + n)));
            let from = ws.max(first + n);
            if we > from {
                self.missing(from, we - from, &mut plan.ahead);
            }
            let mark = we - next.async_size;
            if next.async_size > 0 && mark >= first + n {
                self.marks.insert(mark);
            }
            self.stats.largest_window = self.stats.largest_window.max(next.size * PAGE);
        }
        next.prev = Some(first + n);
        self.ra[job] = next;
        self.stats.readahead_pages += plan.ahead.iter().map(|r| r.pages).sum::<u64>();
        plan
    }

    /// A device read of `run` starts (command `cmd`): its pages are being read.
    pub fn reading(&mut self, run: Run, cmd: CmdId) {
        for p in run.first..run.first + run.pages {
            self.reading.insert(p, cmd);
        }
        self.stats.device_reads += 1;
        self.stats.device_read_bytes += run.pages * PAGE;
    }

    /// A device read of `run` is done: its pages are clean and up to date.
    pub fn read_done(&mut self, run: Run) {
        for p in run.first..run.first + run.pages {
            self.reading.remove(&p);
            if !self.present(p) {
                self.clean.put(p, ());
            }
        }
        self.shrink();
    }

    /// A buffered write of `n` pages from page `first` at `now`: the pages are dirty.
    pub fn write(&mut self, first: u64, n: u64, now: SimTime) {
        for p in first..first + n {
            self.clean.pop(&p);
            self.dirty.insert(p);
        }
        if self.dirtied_when.is_none() {
            self.dirtied_when = Some(now);
        }
        self.stats.written_pages += n;
        self.stats.dirty_max = self.stats.dirty_max.max(self.dirty_pages());
        self.shrink();
        if self.dirty_pages() > self.bg_thresh && self.reason.is_none() {
            self.reason = Some(Reason::Background);
        }
    }

    /// A discard of `n` pages from page `first`: the kernel truncates the range from the cache
    /// first (`blkdev_issue_discard` after `truncate_inode_pages_range`), so its clean and
    /// dirty pages are dropped, the dirty ones unwritten.
    pub fn discard(&mut self, first: u64, n: u64) {
        let range = first..first.saturating_add(n);
        // Walk the cached pages or the range, whichever is shorter (a discard of a whole disk
        // against a cache of a few pages).
        let clean: Vec<u64> = if n > self.clean.len() as u64 { self.clean.iter().map(|(p, ())| *p).filter(|p| range.contains(p)).collect() } else { range.clone().collect() };
        for p in clean {
            self.clean.pop(&p);
        }
        let dirty: Vec<u64> = self.dirty.range(range).copied().collect();
        for p in dirty {
            self.dirty.remove(&p);
        }
        if self.dirty.is_empty() {
            self.dirtied_when = None;
        }
    }

    /// `balance_dirty_pages` after a write of `bytes`: free below the freerun point, paced
    /// between it and the limit (each dirtier gets its share of the writeback bandwidth, scaled
    /// by the distance to the limit), stopped at the limit.
    pub fn throttle(&mut self, bytes: u64) -> Throttle {
        let nr = self.dirty_pages();
        let freerun = u64::midpoint(self.bg_thresh, self.limit);
        if nr <= freerun {
            return Throttle::Free;
        }
        if nr >= self.limit {
            self.stats.stopped += 1;
            return Throttle::Wait;
        }
        let pos = (self.limit - nr) as f64 / (self.limit - freerun).max(1) as f64;
        let rate = self.bw / f64::from(self.dirtiers) * pos;
        let pause = if rate > 0.0 { SimDuration::from_ps((bytes as f64 / rate * 1e12) as u64).min(MAX_PAUSE) } else { MAX_PAUSE };
        self.stats.paused += 1;
        self.stats.pause_time += pause;
        Throttle::Pause(pause)
    }

    /// Whether a writer stopped at the limit may go on.
    pub fn under_limit(&self) -> bool {
        self.dirty_pages() < self.limit
    }

    /// The flusher's periodic wake-up, every `writeback_interval`: dirty data older than
    /// `dirty_expire` is written back. It is looked at when the cache is used (a timer would
    /// keep an idle host's run going).
    pub fn wake(&mut self, now: SimTime) {
        if now < self.next_wake {
            return;
        }
        self.next_wake = now + self.cfg.writeback_interval;
        if let Some(t) = self.dirtied_when {
            if now.since(t) >= self.cfg.dirty_expire && self.reason.is_none() {
                self.reason = Some(Reason::Expired);
                self.expired_left = self.dirty.len() as u64;
            }
        }
    }

    /// The next dirty run from the cursor (wrapping), skipping pages already under writeback.
    fn next_run(&mut self) -> Option<Run> {
        let start = self.dirty.range(self.cursor..).find(|p| !self.writeback.contains_key(p)).or_else(|| self.dirty.iter().find(|p| !self.writeback.contains_key(p))).copied()?;
        let mut n = 1;
        while n < self.io_pages && self.dirty.contains(&(start + n)) && !self.writeback.contains_key(&(start + n)) {
            n += 1;
        }
        Some(Run { first: start, pages: n })
    }

    /// Moves `run`'s pages from dirty to writeback; returns its sequence number.
    fn start_writeback(&mut self, run: Run) -> u64 {
        for p in run.first..run.first + run.pages {
            self.dirty.remove(&p);
            *self.writeback.entry(p).or_insert(0) += 1;
        }
        if self.dirty.is_empty() {
            self.dirtied_when = None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.outstanding.insert(seq);
        seq
    }

    /// The next writeback request to send, if blk-wbt has room: fsync's first, then the
    /// background or expiry round's. Returns the run and its sequence number.
    pub fn next_writeback(&mut self) -> Option<(Run, u64)> {
        let depth = if self.sync_queue.is_empty() { self.cfg.writeback_depth } else { self.cfg.sync_writeback_depth };
        if self.inflight >= depth {
            return None;
        }
        if let Some(x) = self.sync_queue.pop_front() {
            self.inflight += 1;
            return Some(x);
        }
        let go = match self.reason {
            Some(Reason::Background) => self.dirty_pages() > self.bg_thresh,
            Some(Reason::Expired) => self.expired_left > 0,
            None => false,
        };
        if !go {
            self.reason = None;
            return None;
        }
        let Some(run) = self.next_run() else {
            self.reason = None;
            return None;
        };
        self.cursor = run.first + run.pages;
        self.expired_left = self.expired_left.saturating_sub(run.pages);
        let seq = self.start_writeback(run);
        self.inflight += 1;
        Some((run, seq))
    }

    /// A writeback request is on its way to the device.
    pub fn writing(&mut self, run: Run) {
        self.stats.device_writes += 1;
        self.stats.device_write_bytes += run.pages * PAGE;
    }

    /// Writeback request `seq` of `run` completed at `now`: its pages are clean unless written
    /// again meanwhile. Returns the jobs whose fsync is complete, with when each began.
    pub fn write_done(&mut self, run: Run, seq: u64, now: SimTime, done: &mut Vec<(usize, SimTime)>) {
        self.inflight = self.inflight.saturating_sub(1);
        for p in run.first..run.first + run.pages {
            if let Some(c) = self.writeback.get_mut(&p) {
                *c -= 1;
                if *c == 0 {
                    self.writeback.remove(&p);
                    if !self.dirty.contains(&p) {
                        self.clean.put(p, ());
                    }
                }
            }
        }
        self.outstanding.remove(&seq);
        // The writeback bandwidth estimate (wb_update_write_bandwidth).
        self.bw_bytes += run.pages * PAGE;
        let elapsed = now.since(self.bw_start);
        if elapsed >= BW_INTERVAL {
            let e = elapsed.as_secs_f64().min(BW_PERIOD_S);
            self.bw = (self.bw * (BW_PERIOD_S - e) + self.bw_bytes as f64 * (e / elapsed.as_secs_f64())) / BW_PERIOD_S;
            self.bw_start = now;
            self.bw_bytes = 0;
        }
        let first_left = self.outstanding.first().copied();
        self.fsyncs.retain(|&(job, upto, since)| {
            let complete = first_left.is_none_or(|f| f > upto);
            if complete {
                done.push((job, since));
            }
            !complete
        });
        self.shrink();
    }

    /// `job` calls fsync at `now`: every dirty page is queued for writeback, and the call
    /// returns once those and the writeback already in flight complete. Returns whether it is
    /// complete at once (nothing to write).
    pub fn fsync(&mut self, job: usize, now: SimTime) -> bool {
        self.stats.fsyncs += 1;
        let mut p = self.dirty.first().copied();
        while let Some(start) = p {
            let mut n = 1;
            while n < self.io_pages && self.dirty.contains(&(start + n)) {
                n += 1;
            }
            let run = Run { first: start, pages: n };
            let seq = self.start_writeback(run);
            self.sync_queue.push_back((run, seq));
            p = self.dirty.range(start + n..).next().copied();
        }
        match self.outstanding.last() {
            None => true,
            Some(&upto) => {
                self.fsyncs.push((job, upto, now));
                false
            }
        }
    }

    /// Readahead state of `job` (tests).
    pub fn ra(&self, job: usize) -> Ra {
        self.ra[job]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(size: u64) -> PageCache {
        PageCache::new(&PageCacheConfig { size: Bytes(size), ..PageCacheConfig::default() }, vec![(0, u64::MAX)], 1)
    }

    #[test]
    fn window_sizes_follow_linux() {
        // 128 KiB = 32 pages: a 1-page request starts at 4 pages, then 8, 16, 32, 32.
        assert_eq!(init_ra_size(1, 32), 4);
        assert_eq!(init_ra_size(4, 32), 8);
        assert_eq!(init_ra_size(16, 32), 32);
        let mut s = 4;
        let mut seen = vec![s];
        for _ in 0..4 {
            s = next_ra_size(s, 32);
            seen.push(s);
        }
        assert_eq!(seen, [4, 8, 16, 32, 32]);
    }

    #[test]
    fn sequential_reads_grow_the_window_and_random_reads_do_not() {
        let mut c = cache(64 << 20);
        // First read at page 0: reads page 0 now, pages 1..3 ahead, marker at page 1.
        let p = c.read(0, 0, 1);
        assert_eq!(p.sync, [Run { first: 0, pages: 1 }]);
        assert_eq!(p.ahead, [Run { first: 1, pages: 3 }]);
        c.read_done(Run { first: 0, pages: 4 });
        // Page 1 carries the marker: the next window (8 pages from 4) goes ahead.
        let p = c.read(0, 1, 1);
        assert!(p.sync.is_empty());
        assert_eq!(p.ahead, [Run { first: 4, pages: 8 }]);
        assert_eq!(c.ra(0).size, 8);
        c.read_done(Run { first: 4, pages: 8 });
        for page in 2..4 {
            assert!(c.read(0, page, 1).ahead.is_empty());
        }
        let p = c.read(0, 4, 1);
        assert_eq!(p.ahead, [Run { first: 12, pages: 16 }]);
        // A random read elsewhere reads just its page, with no window.
        let mut r = cache(64 << 20);
        r.read(0, 0, 1);
        let p = r.read(0, 1000, 1);
        assert_eq!(p.sync, [Run { first: 1000, pages: 1 }]);
        assert!(p.ahead.is_empty());
    }

    #[test]
    fn writeback_merges_contiguous_dirty_pages_and_fsync_waits_for_them() {
        let mut c = cache(64 << 20);
        c.write(10, 3, SimTime::ZERO);
        c.write(13, 2, SimTime::ZERO);
        c.write(40, 1, SimTime::ZERO);
        assert!(!c.fsync(7, SimTime::ZERO));
        let a = c.next_writeback().expect("first run");
        let b = c.next_writeback().expect("second run");
        assert_eq!((a.0, b.0), (Run { first: 10, pages: 5 }, Run { first: 40, pages: 1 }));
        let mut done = Vec::new();
        c.write_done(a.0, a.1, SimTime::ZERO, &mut done);
        assert!(done.is_empty());
        c.write_done(b.0, b.1, SimTime::ZERO, &mut done);
        assert_eq!(done, [(7, SimTime::ZERO)]);
        assert_eq!(c.dirty_pages(), 0);
    }

    #[test]
    fn writers_are_free_then_paced_then_stopped() {
        // 100 MiB: background at 2560 pages, limit at 5120, freerun at 3840.
        let mut c = cache(100 << 20);
        assert_eq!(c.thresholds(), (2560, 5120));
        c.write(0, 3000, SimTime::ZERO);
        assert_eq!(c.throttle(4096), Throttle::Free);
        c.write(3000, 1000, SimTime::ZERO);
        assert!(matches!(c.throttle(4096), Throttle::Pause(d) if d > SimDuration::ZERO));
        c.write(4000, 2000, SimTime::ZERO);
        assert_eq!(c.throttle(4096), Throttle::Wait);
    }

    #[test]
    fn clean_pages_are_evicted_least_recently_used_first() {
        let mut c = cache(1 << 20); // 256 pages
        c.read_done(Run { first: 0, pages: 256 });
        c.read(0, 0, 1); // page 0 becomes the most recently used
        c.read_done(Run { first: 1000, pages: 1 });
        assert!(c.present(0));
        assert!(!c.present(1));
        assert_eq!(c.stats.evicted, 1);
    }
}
