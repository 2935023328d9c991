//! A pool: a set of blocks that the FTL manages on its own. A pool owns the same range of
//! in-plane block indices in every plane, and has its own free lists, write streams (host and
//! GC), victim index, GC thresholds, exported logical range and counters. Logical units are
//! routed to a pool by LPN range, and GC moves a victim's units within its pool, so pools never
//! share a block. The FTL holds what they share: the geometry, the maps, the per-block state
//! (each block records its pool), the victim lists' per-block links, the random source and the
//! shadow map.

use std::ops::Range;

use super::FtlCounters;
use crate::error::ConfigIssue;

pub(super) const NIL: u32 = u32::MAX;
pub(super) const HOST: usize = 0;
pub(super) const GC: usize = 1;

/// The index of a pool (as the per-block state records it).
pub(super) type PoolId = u16;

/// One pool of [`super::Ftl::with_pools`]: its share of every plane, its spare fraction and its
/// GC thresholds (fractions of the pool's blocks, as `ftl.op_ratio`, `ftl.gc_trigger` and
/// `ftl.gc_reclaim` are of the whole drive's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoolSpec {
    /// Blocks of each plane that belong to the pool (consecutive in-plane indices, the pools
    /// in order).
    pub blocks_per_plane: u32,
    pub op_ratio: f64,
    pub gc_trigger: f64,
    pub gc_reclaim: f64,
    /// Logical units the pool exports, when set (else the raw slots less `op_ratio`).
    pub exported: Option<u64>,
}

impl PoolSpec {
    /// A pool of `blocks_per_plane` blocks per plane with the config's spare fraction and
    /// thresholds.
    pub fn from_config(blocks_per_plane: u32, cfg: &super::FtlConfig) -> Self {
        PoolSpec { blocks_per_plane, op_ratio: cfg.op_ratio, gc_trigger: cfg.gc_trigger, gc_reclaim: cfg.gc_reclaim, exported: None }
    }
}

/// Spare blocks a pool's GC needs: its reclaim threshold, an open block per write stream in
/// every plane, and one more.
pub fn spare_need(reclaim: u32, streams: usize, planes: u32) -> u64 {
    u64::from(reclaim) + streams as u64 * u64::from(planes) + 1
}

/// Logical units exported by `raw_slots` physical slots less a spare fraction.
pub(super) fn units_of(raw_slots: u64, op_ratio: f64) -> u64 {
    ((raw_slots as f64) * (1.0 - op_ratio)).floor() as u64
}

/// What a pool's size and spec make of it: the units it exports, its GC thresholds in free
/// blocks, and its spare blocks against the spare GC needs.
pub(super) struct Sizing {
    pub exported: u64,
    pub trigger: u32,
    pub reclaim: u32,
    spare: u64,
    need: u64,
}

impl Sizing {
    /// A pool of `blocks` blocks spread over `planes` planes, `slots_per_block` units a block,
    /// GC starting below at least `min_trigger` free blocks.
    pub fn new(blocks: u32, planes: u32, slots_per_block: u32, spec: &PoolSpec, min_trigger: u32) -> Self {
        let exported = spec.exported.unwrap_or_else(|| units_of(u64::from(blocks) * u64::from(slots_per_block), spec.op_ratio));
        let trigger = ((f64::from(blocks) * spec.gc_trigger).ceil() as u32).max(min_trigger);
        let reclaim = ((f64::from(blocks) * spec.gc_reclaim).ceil() as u32).max(trigger);
        let spare = u64::from(blocks).saturating_sub(exported.div_ceil(u64::from(slots_per_block.max(1))));
        // A new pool writes a host and a GC stream.
        let need = spare_need(reclaim, 2, planes);
        Sizing { exported, trigger, reclaim, spare, need }
    }

    /// The spare-space rule: GC keeps `reclaim` blocks free and each plane has an open block per
    /// stream, so the spare blocks must cover them (and one more). `None` when they do.
    pub fn spare_issue(&self, op_ratio: f64) -> Option<ConfigIssue> {
        (self.spare < self.need).then(|| ConfigIssue {
            path: "ftl.op_ratio".into(),
            value: op_ratio.to_string(),
            rule: format!("leaves {} spare blocks; GC needs at least {} here (ftl.gc_reclaim plus two open blocks per plane): raise it or add blocks", self.spare, self.need),
        })
    }
}

/// Where one stream writes next: a cursor into the striping order, and per plane the open
/// block and how many of its slots are written.
pub(super) struct Stream {
    pub cursor: usize,
    pub active: Vec<u32>,
    pub written: Vec<u32>,
}

impl Stream {
    fn new(planes: usize) -> Self {
        Stream { cursor: 0, active: vec![NIL; planes], written: vec![0; planes] }
    }
}

/// The per-block links of the victim lists, indexed by block. A block is listed by its own
/// pool only, so the pools share one set.
pub(super) struct Links {
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Position in the pool's list of full blocks.
    full_pos: Vec<u32>,
}

impl Links {
    pub fn new(blocks: usize) -> Self {
        Links { next: vec![NIL; blocks], prev: vec![NIL; blocks], full_pos: vec![NIL; blocks] }
    }

    /// Bytes per block (for the heap estimate).
    pub const PER_BLOCK: usize = 12;

    /// Brings `block`'s links toward the cache (a hint).
    #[inline]
    pub fn prefetch(&self, block: u32) {
        let b = block as usize;
        if let (Some(n), Some(p)) = (self.next.get(b), self.prev.get(b)) {
            mem_prefetch::prefetch_read_data::<_, 3>(n);
            mem_prefetch::prefetch_read_data::<_, 3>(p);
        }
    }

    /// Brings toward the cache the links of `block`'s neighbours in its victim bucket, which
    /// moving it to another bucket changes (a hint, the stage after [`Self::prefetch`]: it
    /// reads `block`'s own links).
    #[inline]
    pub fn prefetch_neighbours(&self, block: u32) {
        let b = block as usize;
        if let Some(x) = self.next.get(b).and_then(|&n| self.prev.get(n as usize)) {
            mem_prefetch::prefetch_read_data::<_, 3>(x);
        }
        if let Some(x) = self.prev.get(b).and_then(|&p| self.next.get(p as usize)) {
            mem_prefetch::prefetch_read_data::<_, 3>(x);
        }
    }
}

/// A pool's full blocks, as GC chooses among them: in intrusive lists by valid count (greedy),
/// and in one list for a uniform choice (random, cost-benefit, wear levelling).
pub(super) struct Victims {
    bucket_head: Vec<u32>,
    min_bucket: u32,
    full: Vec<u32>,
}

impl Victims {
    fn new(slots_per_block: u32) -> Self {
        Victims { bucket_head: vec![NIL; slots_per_block as usize + 1], min_bucket: 0, full: Vec::new() }
    }

    /// The full blocks, in no particular order.
    #[inline]
    pub fn full(&self) -> &[u32] {
        &self.full
    }

    /// Lists a block that has just become full, holding `valid` units.
    pub fn list(&mut self, l: &mut Links, block: u32, valid: u32) {
        l.full_pos[block as usize] = self.full.len() as u32;
        self.full.push(block);
        self.bucket(l, block, valid);
    }

    /// Takes a full block holding `valid` units off the lists (it is being reclaimed).
    pub fn unlist(&mut self, l: &mut Links, block: u32, valid: u32) {
        self.unbucket(l, block, valid);
        let pos = l.full_pos[block as usize] as usize;
        let last = self.full.pop().unwrap_or(block);
        if last != block {
            self.full[pos] = last;
            l.full_pos[last as usize] = pos as u32;
        }
        l.full_pos[block as usize] = NIL;
    }

    /// Moves a full block from the bucket of `old` valid units to that of `new`.
    #[inline]
    pub fn rebucket(&mut self, l: &mut Links, block: u32, old: u32, new: u32) {
        self.unbucket(l, block, old);
        self.bucket(l, block, new);
    }

    /// A full block with the fewest valid units (there must be one).
    pub fn fewest_valid(&mut self) -> u32 {
        while self.bucket_head[self.min_bucket as usize] == NIL {
            self.min_bucket += 1;
        }
        self.bucket_head[self.min_bucket as usize]
    }

    fn bucket(&mut self, l: &mut Links, block: u32, v: u32) {
        let head = self.bucket_head[v as usize];
        l.next[block as usize] = head;
        l.prev[block as usize] = NIL;
        if head != NIL {
            l.prev[head as usize] = block;
        }
        self.bucket_head[v as usize] = block;
        self.min_bucket = self.min_bucket.min(v);
    }

    fn unbucket(&mut self, l: &mut Links, block: u32, v: u32) {
        let (n, p) = (l.next[block as usize], l.prev[block as usize]);
        if p == NIL {
            self.bucket_head[v as usize] = n;
        } else {
            l.next[p as usize] = n;
        }
        if n != NIL {
            l.prev[n as usize] = p;
        }
    }
}

/// A pool of blocks with its own allocation, GC and accounting.
pub(super) struct Pool {
    /// The in-plane block indices the pool owns in every plane.
    pub span: Range<u32>,
    /// Blocks in the pool (over all planes).
    pub blocks: u32,
    /// The logical units routed to the pool.
    pub lpns: Range<u64>,
    /// GC starts below this many free blocks...
    pub trigger: u32,
    /// ...and stops once this many are free.
    pub reclaim: u32,
    /// Per plane: erased blocks ready for reuse.
    pub free: Vec<Vec<u32>>,
    /// Per plane: the pool's blocks never used yet are those from this in-plane index to the
    /// end of the span (no list for them, so a fresh 16 TiB drive costs nothing here).
    pub fresh: Vec<u32>,
    pub free_count: u32,
    /// The host and GC streams.
    /// The write streams: host (0), GC (1), then with FDP the other reclaim unit handles'
    /// host streams and, persistently isolated, a GC stream per handle.
    pub streams: Vec<Stream>,
    pub victims: Victims,
    /// The most erases of any of the pool's blocks (for wear levelling).
    pub max_erases: u32,
    /// Victims picked since wear levelling last looked.
    pub wl_check: u32,
    pub counters: FtlCounters,
    /// Foreground GC is under way (free blocks fell below `trigger`, not yet back to `reclaim`).
    pub gc_active: bool,
    /// The victim being collected, unit by unit.
    pub collecting: Option<Collecting>,
    /// The victim's valid units (offset, lpn) when its collection started, for bringing
    /// their map entries toward the cache ahead of the moves (a hint: some may have been
    /// written since).
    pub victim_units: Vec<(u32, u64)>,
    /// Unit moves GC owes the host writes so far (see `Ftl::collect_if_needed`).
    pub credit: f64,
}

/// A victim block under collection.
#[derive(Clone, Copy, Debug)]
pub(super) struct Collecting {
    pub block: u32,
    /// The next slot to look at.
    pub next: u32,
    /// The page last read (GC reads a page once for all its valid units).
    pub page_read: u32,
    /// Unit moves per host write that keep free blocks level while this victim is collected:
    /// valid / (slots per block - valid).
    pub pace: f64,
    /// Of `Pool::victim_units`, the first whose map entry has not been brought toward the
    /// cache.
    pub ahead: u32,
    /// On a map with sparse leaves, the first whose leaf's directory entries have not been
    /// brought toward the cache.
    pub far: u32,
}

impl Pool {
    /// A pool owning in-plane blocks `span` of each of `planes` planes, exporting `lpns`.
    pub fn new(span: Range<u32>, planes: u32, slots_per_block: u32, sizing: &Sizing, lpns: Range<u64>) -> Self {
        let n = planes as usize;
        Pool {
            blocks: (span.end - span.start) * planes,
            fresh: vec![span.start; n],
            free_count: (span.end - span.start) * planes,
            span,
            lpns,
            trigger: sizing.trigger,
            reclaim: sizing.reclaim,
            free: vec![Vec::new(); n],
            streams: vec![Stream::new(n), Stream::new(n)],
            victims: Victims::new(slots_per_block),
            max_erases: 0,
            wl_check: 0,
            counters: FtlCounters::default(),
            gc_active: false,
            collecting: None,
            victim_units: Vec::new(),
            credit: 0.0,
        }
    }

    /// Whether GC has work here: a paced run under way, or fewer free blocks than the trigger.
    /// A write calls GC only then (the call costs more than the test).
    #[inline]
    pub fn gc_due(&self) -> bool {
        self.gc_active || self.free_count < self.trigger
    }

    /// Free blocks at which foreground GC rests: half the trigger-reclaim band above the
    /// reclaim threshold (see `Ftl::collect_if_needed`).
    pub fn rest_level(&self) -> u32 {
        self.reclaim + self.reclaim.saturating_sub(self.trigger) / 2
    }

    /// Takes a free block of `plane`: a recycled one, else a never-used one.
    #[inline]
    pub fn take_free(&mut self, plane: usize, blocks_per_plane: u32) -> Option<u32> {
        let b = match self.free[plane].pop() {
            Some(b) => b,
            None if self.fresh[plane] < self.span.end => {
                self.fresh[plane] += 1;
                plane as u32 * blocks_per_plane + self.fresh[plane] - 1
            }
            None => return None,
        };
        self.free_count -= 1;
        Some(b)
    }

    /// Free blocks its lists hold (recycled plus never used).
    pub fn listed_free(&self) -> usize {
        self.free.iter().map(Vec::len).sum::<usize>() + self.fresh.iter().map(|&f| (self.span.end - f) as usize).sum::<usize>()
    }

    /// Adds `k` write streams.
    pub fn add_streams(&mut self, k: usize) {
        let n = self.free.len();
        self.streams.extend((0..k).map(|_| Stream::new(n)));
    }

    /// The stream that writes `block` (open in `plane`), if any.
    #[inline]
    pub fn writer(&self, plane: usize, block: u32) -> Option<&Stream> {
        self.streams.iter().find(|s| s.active[plane] == block)
    }
}

/// Splits `total` into parts proportional to `weights`, each the floor of its share, the
/// remainder going to the largest fractional parts (ties to the first).
pub fn apportion(total: u64, weights: &[f64]) -> Vec<u64> {
    let sum: f64 = weights.iter().sum();
    if weights.is_empty() || sum <= 0.0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<f64> = weights.iter().map(|w| total as f64 * w / sum).collect();
    let mut parts: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
    let mut left = total.saturating_sub(parts.iter().sum());
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())).then(a.cmp(&b)));
    for &i in order.iter().cycle().take(weights.len() * 2) {
        if left == 0 {
            break;
        }
        parts[i] += 1;
        left -= 1;
    }
    parts
}
