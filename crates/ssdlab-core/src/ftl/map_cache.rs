//! The controller's cached mapping table (DFTL-style; Gupta et al., ASPLOS 2009): the full map
//! lives in flash as translation pages, and a DRAM cache holds a few of them.
//!
//! Models: translation pages of `page size / ftl.map_entry` entries, cached whole (a miss loads
//! the page with one flash read), least recently used out first; a cached page that a write or
//! a GC move changed is dirty, and evicting it writes it back with one flash program.
//!
//! Leaves out: caching single entries (DFTL's CMT) rather than pages, batching several dirty
//! pages into one write-back, translation blocks' own space and garbage collection (translation
//! pages sit at fixed places on the dies), the global translation directory (kept in DRAM, as
//! in DFTL), and map updates by TRIM.

use rustc_hash::FxHashMap;

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    tpage: u64,
    dirty: bool,
    prev: u32,
    next: u32,
}

/// What one access to the cache did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The translation page was cached.
    pub hit: bool,
    /// A dirty page evicted to make room, to be written back.
    pub writeback: Option<u64>,
}

/// Cache counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapCacheCounters {
    pub hits: u64,
    pub misses: u64,
    pub writebacks: u64,
}

/// An LRU cache of translation pages.
pub struct MapCache {
    entries_per_page: u64,
    capacity: usize,
    entries: Vec<Entry>,
    index: FxHashMap<u64, u32>,
    /// Most and least recently used.
    head: u32,
    tail: u32,
    pub counters: MapCacheCounters,
}

impl MapCache {
    /// A cache of `capacity` translation pages, each mapping `entries_per_page` units.
    pub fn new(capacity: usize, entries_per_page: u64) -> Self {
        MapCache { entries_per_page: entries_per_page.max(1), capacity: capacity.max(1), entries: Vec::new(), index: FxHashMap::default(), head: NIL, tail: NIL, counters: MapCacheCounters::default() }
    }

    /// The translation page that maps `lpn`.
    #[inline]
    pub fn tpage(&self, lpn: u64) -> u64 {
        lpn / self.entries_per_page
    }

    /// Looks the entry of `lpn` up (and changes it, if `dirty`): a hit, or a miss that loads
    /// its translation page, evicting the least recently used one when the cache is full.
    pub fn access(&mut self, lpn: u64, dirty: bool) -> Access {
        let tpage = self.tpage(lpn);
        if let Some(&i) = self.index.get(&tpage) {
            self.counters.hits += 1;
            self.entries[i as usize].dirty |= dirty;
            self.unlink(i);
            self.push_front(i);
            return Access { hit: true, writeback: None };
        }
        self.counters.misses += 1;
        let mut writeback = None;
        let i = if self.entries.len() < self.capacity {
            self.entries.push(Entry { tpage, dirty, prev: NIL, next: NIL });
            (self.entries.len() - 1) as u32
        } else {
            let i = self.tail;
            self.unlink(i);
            let old = self.entries[i as usize];
            self.index.remove(&old.tpage);
            if old.dirty {
                self.counters.writebacks += 1;
                writeback = Some(old.tpage);
            }
            self.entries[i as usize] = Entry { tpage, dirty, prev: NIL, next: NIL };
            i
        };
        self.index.insert(tpage, i);
        self.push_front(i);
        Access { hit: false, writeback }
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
        assert!(!c.access(5, false).hit); // page 0
        assert!(!c.access(150, true).hit); // page 1, dirty
        assert!(c.access(99, false).hit); // page 0 again: page 1 is now the LRU
        assert_eq!(c.access(250, false), Access { hit: false, writeback: Some(1) });
        assert_eq!(c.access(120, false), Access { hit: false, writeback: None }, "page 0 was clean");
        assert_eq!(c.counters, MapCacheCounters { hits: 1, misses: 4, writebacks: 1 });
    }
}
