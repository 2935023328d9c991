//! Interning of translation keys, (PASID, STU page), into dense ids.
//!
//! DMA buffers cluster: a host's I/O buffers, rings and page cache sit in a few regions of its
//! memory, so the pages one address space touches fill most of a span not much wider than
//! themselves. Each address space therefore keeps a window, a direct table of ids over a span
//! of pages, grown (by doubling) while it stays at least 1/[`DENSITY`] full; a lookup in it is
//! one array read, and the hot region of a trace stays in a few cache lines instead of being
//! scattered over a hash table. Pages outside every window, and address spaces beyond the first
//! [`MAX_WINDOWS`], go to a hash map. Ids are handed out in order of first sight whichever
//! structure holds the key, so the numbering does not depend on the layout.

use rustc_hash::FxHashMap;

const EMPTY: u32 = u32::MAX;
/// Pages a window starts with, and its alignment (16 KiB of table).
const INITIAL: u64 = 1 << 12;
/// A window may always span this many pages (256 KiB of table)...
const FREE_SPAN: u64 = 1 << 16;
/// ...and beyond that at most this many pages per key it holds.
const DENSITY: u64 = 16;
/// The widest window: 2^28 pages, 1 GiB of table.
const MAX_SPAN: u64 = 1 << 28;
/// Address spaces with a window of their own.
const MAX_WINDOWS: usize = 64;

/// A direct table of ids over pages `[lo, lo + ids.len())` of one address space.
struct Window {
    pasid: u32,
    lo: u64,
    ids: Vec<u32>,
    /// Ids stored in the table.
    count: u64,
}

/// The keys of one STU: dense ids, which of them are pinned, and the pinned keys themselves.
pub(crate) struct Keys {
    /// Address bits below the page number: 12 + STU.
    pub(crate) shift: u32,
    windows: Vec<Window>,
    /// The window used last (the fast path looks there first).
    last: usize,
    spill: FxHashMap<(u32, u64), u32>,
    /// Per id: pinned.
    pinned: Vec<bool>,
    pinned_list: Vec<(u32, u64)>,
}

impl Keys {
    pub(crate) fn new(stu: u32) -> Self {
        Keys { shift: 12 + stu, windows: Vec::new(), last: 0, spill: FxHashMap::default(), pinned: Vec::new(), pinned_list: Vec::new() }
    }

    /// The dense id of `(pasid, page)`, a new one the first time it is seen.
    #[inline]
    pub(crate) fn id(&mut self, pasid: u32, page: u64) -> u32 {
        if let Some(w) = self.windows.get(self.last) {
            if w.pasid == pasid {
                let off = page.wrapping_sub(w.lo);
                if off < w.ids.len() as u64 {
                    let id = w.ids[off as usize];
                    if id != EMPTY {
                        return id;
                    }
                }
            }
        }
        self.id_slow(pasid, page)
    }

    /// Appends the ids of `keys` (address space, page) to `out`. The window's ids are gathered
    /// first in a tight loop, so that their cache misses overlap; keys that loop does not find
    /// take the slow path after.
    pub(crate) fn ids_into(&mut self, keys: &[(u32, u64)], out: &mut Vec<u32>) {
        let start = out.len();
        match self.windows.get(self.last) {
            Some(w) => {
                let (pasid, lo, ids) = (w.pasid, w.lo, &w.ids[..]);
                out.extend(keys.iter().map(|&(p, page)| if p == pasid { ids.get(page.wrapping_sub(lo) as usize).copied().unwrap_or(EMPTY) } else { EMPTY }));
            }
            None => out.resize(start + keys.len(), EMPTY),
        }
        for (id, &(pasid, page)) in out[start..].iter_mut().zip(keys) {
            if *id == EMPTY {
                *id = self.id_slow(pasid, page);
            }
        }
    }

    /// Appends the ids of `pages` of address space `pasid` to `out`, as [`Keys::ids_into`]
    /// does for keys of any address space.
    pub(crate) fn ids_of_pages(&mut self, pasid: u32, pages: &[u64], out: &mut Vec<u32>) {
        let start = out.len();
        match self.windows.get(self.last).filter(|w| w.pasid == pasid) {
            Some(w) => {
                let (lo, ids) = (w.lo, &w.ids[..]);
                out.extend(pages.iter().map(|&page| ids.get(page.wrapping_sub(lo) as usize).copied().unwrap_or(EMPTY)));
            }
            None => out.resize(start + pages.len(), EMPTY),
        }
        for (id, &page) in out[start..].iter_mut().zip(pages) {
            if *id == EMPTY {
                *id = self.id_slow(pasid, page);
            }
        }
    }

    /// Keys seen so far.
    pub(crate) fn len(&self) -> usize {
        self.pinned.len()
    }

    /// Marks `(pasid, page)` pinned; true if it was not already.
    pub(crate) fn pin(&mut self, pasid: u32, page: u64) -> bool {
        let id = self.id(pasid, page) as usize;
        let fresh = !self.pinned[id];
        if fresh {
            self.pinned[id] = true;
            self.pinned_list.push((pasid, page));
        }
        fresh
    }

    #[inline]
    pub(crate) fn is_pinned(&self, id: u32) -> bool {
        self.pinned.get(id as usize).copied().unwrap_or(false)
    }

    /// Pinned flags by id.
    pub(crate) fn pinned_flags(&self) -> &[bool] {
        &self.pinned
    }

    /// The pinned keys, sorted.
    pub(crate) fn pinned_keys(&self) -> Vec<(u32, u64)> {
        let mut keys = self.pinned_list.clone();
        keys.sort_unstable();
        keys
    }

    fn fresh(&mut self) -> u32 {
        self.pinned.push(false);
        (self.pinned.len() - 1) as u32
    }

    #[inline(never)]
    fn id_slow(&mut self, pasid: u32, page: u64) -> u32 {
        let w = match self.windows.iter().position(|w| w.pasid == pasid) {
            Some(w) => w,
            None if self.windows.len() < MAX_WINDOWS => {
                self.windows.push(Window { pasid, lo: page & !(INITIAL - 1), ids: vec![EMPTY; INITIAL as usize], count: 0 });
                self.windows.len() - 1
            }
            None => return self.spilled(pasid, page),
        };
        self.last = w;
        if !self.windows[w].covers(page) && !self.windows[w].grow_to(page) {
            return self.spilled(pasid, page);
        }
        let off = (page - self.windows[w].lo) as usize;
        let id = self.windows[w].ids[off];
        if id != EMPTY {
            return id;
        }
        // New to the table: the key may have spilled before the window reached it.
        let id = match self.spill.get(&(pasid, page)) {
            Some(&id) => id,
            None => self.fresh(),
        };
        let win = &mut self.windows[w];
        win.ids[off] = id;
        win.count += 1;
        id
    }

    fn spilled(&mut self, pasid: u32, page: u64) -> u32 {
        if let Some(&id) = self.spill.get(&(pasid, page)) {
            return id;
        }
        let id = self.fresh();
        self.spill.insert((pasid, page), id);
        id
    }
}

impl Window {
    fn covers(&self, page: u64) -> bool {
        page.wrapping_sub(self.lo) < self.ids.len() as u64
    }

    /// Widens the window to cover `page` (at least doubling it) if it stays dense enough;
    /// false if it may not.
    fn grow_to(&mut self, page: u64) -> bool {
        let len = self.ids.len() as u64;
        let hi = self.lo + len;
        let (lo, new_hi) = if page >= hi {
            let end = (page | (INITIAL - 1)).saturating_add(1);
            (self.lo, end.max(self.lo.saturating_add(2 * len)))
        } else {
            let start = page & !(INITIAL - 1);
            (start.min(hi.saturating_sub(2 * len)), hi)
        };
        let span = new_hi - lo;
        if span > MAX_SPAN || span > FREE_SPAN.max(DENSITY * (self.count + 1)) {
            return false;
        }
        let mut ids = vec![EMPTY; span as usize];
        let at = (self.lo - lo) as usize;
        ids[at..at + len as usize].copy_from_slice(&self.ids);
        self.ids = ids;
        self.lo = lo;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids follow first sight, each key keeps its id whether its page sits in a window or
    /// spilled first and was reached by a window later, and address spaces never share ids.
    #[test]
    fn ids_are_dense_stable_and_in_order_of_first_sight() {
        let mut k = Keys::new(0);
        let mut seen: FxHashMap<(u32, u64), u32> = FxHashMap::default();
        let mut rng = 0x1234_5678_9abc_def0u64;
        for i in 0..400_000u64 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            // A dense region, a far region that the window reaches once it has grown, a
            // scattered spill, and several address spaces (more than get windows).
            let pasid = (rng % 97) as u32 % if i < 200_000 { 1 } else { 80 };
            let page = match rng % 4 {
                0 | 1 => (rng >> 8) % 50_000,
                2 => 1_000_000 + (rng >> 8) % 1000,
                _ => rng >> 20,
            };
            let next = seen.len() as u32;
            let want = *seen.entry((pasid, page)).or_insert(next);
            assert_eq!(k.id(pasid, page), want, "key ({pasid}, {page}) at step {i}");
        }
        assert_eq!(k.len(), seen.len());
        assert!(k.windows.len() == MAX_WINDOWS && !k.spill.is_empty());
        // The dense windows stayed within their bound.
        for w in &k.windows {
            assert!(w.ids.len() as u64 <= FREE_SPAN.max(DENSITY * (w.count + 1)));
        }
    }

    #[test]
    fn pins_are_recorded_once_and_sorted() {
        let mut k = Keys::new(9);
        assert!(k.pin(2, 7));
        assert!(k.pin(0, 9));
        assert!(!k.pin(2, 7));
        let id = k.id(2, 7);
        let other = k.id(1, 1);
        assert!(k.is_pinned(id) && !k.is_pinned(other) && !k.is_pinned(99));
        assert_eq!(k.pinned_keys(), vec![(0, 9), (2, 7)]);
        assert_eq!(k.pinned_flags().len(), 3);
    }
}
