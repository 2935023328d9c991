//! The controller's cached mapping table (DFTL-style; Gupta et al., ASPLOS 2009): the full map
//! lives in flash as translation pages, and a DRAM cache holds part of it.
//!
//! Models two caches (`ftl.map_cache_unit`):
//! - **pages**: translation pages of `page size / ftl.map_entry` entries, cached whole (a miss
//!   loads the page with one flash read), least recently used out first; a cached page that a
//!   write or a GC move changed is dirty, and evicting it writes it back with one flash program;
//! - **entries** (DFTL's CMT as MQSim models it): single entries, least recently used out first.
//!   A miss loads its entry (one flash read of its translation page), except a GC move's,
//!   which sets its entry without a load; evicting a changed entry writes its translation page
//!   back, with every other changed entry of that page cached at the time (which are then
//!   clean), reading the page's unchanged entries first (one read, one program).
//!
//! Leaves out: batching write-backs of several pages, translation blocks' own space and garbage
//! collection (translation pages sit at fixed places on the dies), the global translation
//! directory (kept in DRAM, as in DFTL), and map updates by TRIM.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use super::config::{FtlConfig, MapCacheUnit};

const NIL: u32 = u32::MAX;

/// The most entries (or pages) a cache holds, so that each has a 4-byte place below [`NIL`]: a
/// larger `ftl.map_cache` would need over 64 GiB of host memory for the entries alone.
const MAX_CAPACITY: usize = (u32::MAX - 1) as usize;

/// How much `cfg`'s cached map holds, in its own units (translation pages of `page_size`
/// bytes, or entries): what `ftl.map_cache` has room for, but no more than the map of `units`
/// mapped units has; 0 without a cache.
pub fn capacity(cfg: &FtlConfig, page_size: u64, units: u64) -> u64 {
    if cfg.map_cache.0 == 0 {
        return 0;
    }
    match cfg.map_cache_unit {
        MapCacheUnit::Page => (cfg.map_cache.0 / page_size.max(1)).min(units.div_ceil((page_size / cfg.map_entry.0.max(1)).max(1))),
        MapCacheUnit::Entry => (cfg.map_cache.0 / cfg.map_cache_entry.0.max(1)).min(units),
    }
}

/// The top bit of an entry's `key`: it is dirty (keys, units or translation pages, are far
/// below 2^63).
const DIRTY: u64 = 1 << 63;

/// A cached entry, 16 bytes: its key (with [`DIRTY`]) and its neighbours in recency order.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// A translation page, or a unit (single entries), with [`DIRTY`] when changed.
    key: u64,
    prev: u32,
    next: u32,
}

impl Entry {
    #[inline]
    fn new(key: u64, dirty: bool) -> Self {
        Entry { key: key | if dirty { DIRTY } else { 0 }, prev: NIL, next: NIL }
    }

    #[inline]
    fn key(self) -> u64 {
        self.key & !DIRTY
    }

    #[inline]
    fn dirty(self) -> bool {
        self.key & DIRTY != 0
    }
}

/// What one access to the cache did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The entry (or its translation page) was cached.
    pub hit: bool,
    /// The access must wait for its translation page to be read.
    pub load: bool,
    /// The translation page a dirty victim evicted to make room belongs to, to be written back.
    pub writeback: Option<u64>,
}

/// Cache counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapCacheCounters {
    pub hits: u64,
    pub misses: u64,
    pub writebacks: u64,
}

/// An LRU cache of translation pages or of single entries.
pub struct MapCache {
    entries_per_page: u64,
    /// Single entries (keys are units) rather than pages (keys are translation pages).
    per_entry: bool,
    capacity: usize,
    entries: Vec<Entry>,
    /// Each entry's place in `entries`, found by its key: a table of 4-byte places (the key is
    /// read from the entry), so that the index of a large cache stays small in the CPU's caches.
    index: HashTable<u32>,
    /// Most and least recently used.
    head: u32,
    tail: u32,
    pub counters: MapCacheCounters,
}

impl MapCache {
    /// A cache of `capacity` translation pages, each mapping `entries_per_page` units.
    pub fn new(capacity: usize, entries_per_page: u64) -> Self {
        Self::with_unit(capacity, entries_per_page, false)
    }

    /// A cache of `capacity` single entries of translation pages of `entries_per_page`.
    pub fn of_entries(capacity: usize, entries_per_page: u64) -> Self {
        Self::with_unit(capacity, entries_per_page, true)
    }

    fn with_unit(capacity: usize, entries_per_page: u64, per_entry: bool) -> Self {
        MapCache {
            entries_per_page: entries_per_page.max(1),
            per_entry,
            capacity: capacity.clamp(1, MAX_CAPACITY),
            entries: Vec::new(),
            index: HashTable::new(),
            head: NIL,
            tail: NIL,
            counters: MapCacheCounters::default(),
        }
    }

    /// Bytes a cache that comes to hold `n` entries (or pages) takes at most: its entries, 16
    /// bytes each in a vector that doubles as it grows, and its index's table (4-byte places
    /// and a control byte a bucket, at most 7 of 8 buckets full, a power of two, and 16
    /// control bytes more); each with the half-size one it grew from while it grows.
    pub fn bytes_at_most(n: u64) -> u64 {
        let entries = n.max(1).next_power_of_two().saturating_mul(std::mem::size_of::<Entry>() as u64);
        let buckets = if n < 8 { 16 } else { n.saturating_mul(8).div_ceil(7).next_power_of_two() };
        let table = buckets.saturating_add(16).saturating_add(buckets.saturating_mul(4));
        let both = entries.saturating_add(table);
        both.saturating_add(both / 2)
    }

    /// It caches single entries.
    pub fn per_entry(&self) -> bool {
        self.per_entry
    }

    /// The translation page that maps `lpn`.
    #[inline]
    pub fn tpage(&self, lpn: u64) -> u64 {
        lpn / self.entries_per_page
    }

    #[inline]
    fn key(&self, lpn: u64) -> u64 {
        if self.per_entry {
            lpn
        } else {
            self.tpage(lpn)
        }
    }

    #[inline]
    fn hash(key: u64) -> u64 {
        FxBuildHasher.hash_one(key)
    }

    /// The place of the entry of `key` (whose hash is `hash`), if cached.
    #[inline]
    fn find(&self, key: u64, hash: u64) -> Option<u32> {
        let entries = &self.entries;
        self.index.find(hash, |&i| entries[i as usize].key() == key).copied()
    }

    /// Indexes the entry at place `i`, whose key (not indexed yet) has `hash`.
    #[inline]
    fn index_insert(&mut self, i: u32, hash: u64) {
        let entries = &self.entries;
        self.index.insert_unique(hash, i, |&j| Self::hash(entries[j as usize].key()));
    }

    /// Fills the free room with clean entries of `lpns` (in order, uncounted): a cache warm
    /// from preconditioning.
    pub fn warm(&mut self, lpns: impl Iterator<Item = u64>) {
        // The index takes its final size at once rather than by doubling (the same entries).
        let room = self.capacity.saturating_sub(self.entries.len());
        let coming = lpns.size_hint().1.unwrap_or(room).min(room);
        let entries = &self.entries;
        self.index.reserve(coming, |&j| Self::hash(entries[j as usize].key()));
        self.entries.reserve(coming);
        for lpn in lpns {
            if self.entries.len() >= self.capacity {
                break;
            }
            let key = self.key(lpn);
            let hash = Self::hash(key);
            if self.find(key, hash).is_some() {
                continue;
            }
            self.entries.push(Entry::new(key, false));
            let i = (self.entries.len() - 1) as u32;
            self.index_insert(i, hash);
            self.push_front(i);
        }
    }

    /// Looks the entry of `lpn` up (and changes it, if `dirty`): a hit, or a miss that caches
    /// it, evicting the least recently used one when the cache is full. A miss loads its
    /// translation page, except for a single entry that is only `set` (GC's move: nothing of
    /// the page is needed).
    pub fn access(&mut self, lpn: u64, dirty: bool, set: bool) -> Access {
        let key = self.key(lpn);
        let hash = Self::hash(key);
        if let Some(i) = self.find(key, hash) {
            self.counters.hits += 1;
            if dirty {
                self.entries[i as usize].key |= DIRTY;
            }
            self.unlink(i);
            self.push_front(i);
            return Access { hit: true, load: false, writeback: None };
        }
        self.counters.misses += 1;
        let mut writeback = None;
        let i = if self.entries.len() < self.capacity {
            self.entries.push(Entry::new(key, dirty));
            (self.entries.len() - 1) as u32
        } else {
            let i = self.tail;
            self.unlink(i);
            let old = self.entries[i as usize];
            let old_key = old.key();
            if let Ok(e) = self.index.find_entry(Self::hash(old_key), |&j| j == i) {
                e.remove();
            }
            if old.dirty() {
                self.counters.writebacks += 1;
                let tpage = if self.per_entry { self.tpage(old_key) } else { old_key };
                writeback = Some(tpage);
                if self.per_entry {
                    self.clean_page(tpage);
                }
            }
            self.entries[i as usize] = Entry::new(key, dirty);
            i
        };
        self.index_insert(i, hash);
        self.push_front(i);
        Access { hit: false, load: !(self.per_entry && set), writeback }
    }

    /// Entries: the cached entries of translation page `tpage` are written back with it.
    fn clean_page(&mut self, tpage: u64) {
        let first = tpage * self.entries_per_page;
        for lpn in first..first + self.entries_per_page {
            if let Some(i) = self.find(lpn, Self::hash(lpn)) {
                self.entries[i as usize].key &= !DIRTY;
            }
        }
    }

    fn unlink(&mut self, i: u32) {
        let Entry { prev, next, .. } = self.entries[i as usize];
        if prev == NIL {
            self.head = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.entries[next as usize].prev = prev;
        }
    }

    fn push_front(&mut self, i: u32) {
        let e = &mut self.entries[i as usize];
        e.prev = NIL;
        e.next = self.head;
        if self.head != NIL {
            self.entries[self.head as usize].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_page_goes_and_dirty_ones_are_written_back() {
        let mut c = MapCache::new(2, 100);
        assert!(!c.access(5, false, false).hit); // page 0
        assert!(!c.access(150, true, false).hit); // page 1, dirty
        assert!(c.access(99, false, false).hit); // page 0 again: page 1 is now the LRU
        assert_eq!(c.access(250, false, false), Access { hit: false, load: true, writeback: Some(1) });
        assert_eq!(c.access(120, false, false), Access { hit: false, load: true, writeback: None }, "page 0 was clean");
        assert_eq!(c.counters, MapCacheCounters { hits: 1, misses: 4, writebacks: 1 });
    }

    #[test]
    fn entries_are_cached_alone_gc_moves_load_nothing_and_a_write_back_cleans_its_page() {
        let mut c = MapCache::of_entries(4, 100);
        assert_eq!(c.access(5, false, false), Access { hit: false, load: true, writeback: None });
        assert!(!c.access(6, false, false).hit, "a neighbour in the same translation page is its own entry");
        assert_eq!(c.access(7, true, true), Access { hit: false, load: false, writeback: None }, "a GC move sets its entry");
        assert!(c.access(8, true, false).load, "a host write loads its entry's page");
        assert!(c.access(8, false, false).hit && c.access(5, true, false).hit);
        // Evicting the LRU (6, clean) writes nothing; then 7 (dirty) goes: page 0 is written
        // back with 5 and 8, which are clean afterwards and go without another write-back.
        assert_eq!(c.access(300, false, false).writeback, None);
        assert_eq!(c.access(301, false, false).writeback, Some(0));
        assert_eq!(c.access(302, false, false).writeback, None, "8 was written back with 7");
        assert_eq!(c.access(303, false, false).writeback, None, "5 was written back with 7");
        assert_eq!(c.counters, MapCacheCounters { hits: 2, misses: 8, writebacks: 1 });
    }

    /// The same cache as a list in recency order (most recent first), searched from the front.
    struct Naive {
        per_entry: bool,
        entries_per_page: u64,
        capacity: usize,
        list: Vec<(u64, bool)>,
        counters: MapCacheCounters,
    }

    impl Naive {
        fn access(&mut self, lpn: u64, dirty: bool, set: bool) -> Access {
            let key = if self.per_entry { lpn } else { lpn / self.entries_per_page };
            if let Some(at) = self.list.iter().position(|e| e.0 == key) {
                let (k, d) = self.list.remove(at);
                self.list.insert(0, (k, d || dirty));
                self.counters.hits += 1;
                return Access { hit: true, load: false, writeback: None };
            }
            self.counters.misses += 1;
            let mut writeback = None;
            if self.list.len() == self.capacity {
                let (old, was_dirty) = self.list.pop().expect("full");
                if was_dirty {
                    self.counters.writebacks += 1;
                    let tpage = if self.per_entry { old / self.entries_per_page } else { old };
                    writeback = Some(tpage);
                    if self.per_entry {
                        for e in self.list.iter_mut().filter(|e| e.0 / self.entries_per_page == tpage) {
                            e.1 = false;
                        }
                    }
                }
            }
            self.list.insert(0, (key, dirty));
            Access { hit: false, load: !(self.per_entry && set), writeback }
        }
    }

    #[test]
    fn every_access_does_what_a_plain_lru_list_does() {
        use rand::{RngExt, SeedableRng};
        // Keys clustered enough to hit, spread enough to evict, with dirty entries (write-backs
        // that clean their page's other entries) and GC's sets: each access's outcome and the
        // counters must be the list's.
        for (per_entry, capacity, span) in [(true, 64, 400), (true, 7, 30), (false, 16, 600), (false, 2, 40)] {
            let mut rng = rand_pcg::Pcg64::seed_from_u64(capacity as u64);
            let mut c = if per_entry { MapCache::of_entries(capacity, 10) } else { MapCache::new(capacity, 10) };
            let mut n = Naive { per_entry, entries_per_page: 10, capacity, list: Vec::new(), counters: MapCacheCounters::default() };
            for step in 0..20_000 {
                let lpn = rng.random_range(0..span);
                let (dirty, set) = (rng.random_bool(0.3), rng.random_bool(0.1));
                assert_eq!(c.access(lpn, dirty, set), n.access(lpn, dirty, set), "access {step} (lpn {lpn}, entries {per_entry}, capacity {capacity})");
            }
            assert_eq!(c.counters, n.counters);
            assert!(n.counters.hits > 1000 && n.counters.writebacks > 100, "the sequence exercises hits and write-backs: {:?}", n.counters);
        }
    }

    #[test]
    fn a_cache_holds_what_its_size_has_room_for_up_to_the_whole_map() {
        use crate::units::Bytes;
        let cfg = |cache: u64, unit: MapCacheUnit| FtlConfig { map_cache: Bytes(cache), map_cache_unit: unit, map_cache_entry: Bytes(8), map_entry: Bytes(4), ..FtlConfig::default() };
        // 16 KiB translation pages of 4096 entries; 10,000 units need 3 of them.
        assert_eq!(capacity(&cfg(0, MapCacheUnit::Page), 16384, 10_000), 0, "no cache");
        assert_eq!(capacity(&cfg(32768, MapCacheUnit::Page), 16384, 10_000), 2);
        assert_eq!(capacity(&cfg(1 << 30, MapCacheUnit::Page), 16384, 10_000), 3, "all the map's pages");
        assert_eq!(capacity(&cfg(8000, MapCacheUnit::Entry), 16384, 10_000), 1000);
        assert_eq!(capacity(&cfg(1 << 30, MapCacheUnit::Entry), 16384, 10_000), 10_000, "an entry an unit");
    }

    #[test]
    fn what_a_cache_holds_stays_within_its_estimate() {
        // Grown an insert at a time (each doubling of the index) and warmed in one go.
        for n in [1usize, 7, 8, 100, 233_016, 300_000] {
            let mut grown = MapCache::of_entries(n, 10);
            for k in 0..n as u64 {
                grown.access(k * 3, k % 2 == 0, false);
            }
            let mut warm = MapCache::of_entries(n, 10);
            warm.warm((0..n as u64).map(|k| k * 3));
            for c in [&grown, &warm] {
                assert_eq!(c.entries.len(), n);
                let held = (c.entries.capacity() * std::mem::size_of::<Entry>() + c.index.allocation_size()) as u64;
                let bound = MapCache::bytes_at_most(n as u64);
                assert!(held <= bound && bound <= held * 3, "{n} entries: {held} B held, {bound} B estimated");
            }
        }
    }

    #[test]
    fn a_warm_cache_starts_full_of_clean_entries() {
        let mut c = MapCache::of_entries(4, 100);
        c.warm((0..10).map(|k| k * 50));
        assert!(c.access(150, false, false).hit && c.access(0, false, false).hit);
        assert!(!c.access(200, false, false).hit, "only the first four were cached");
        assert_eq!(c.counters.writebacks, 0);
    }
}
