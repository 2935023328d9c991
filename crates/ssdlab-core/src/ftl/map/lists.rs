//! The sparse leaves' lists, kept in pages of one arena rather than each in an allocation of
//! its own, and each named by its span: where its entries start, how many there are, and its
//! capacity, packed in one word that the map's directory holds (so that reaching a list's
//! entries takes the directory's word alone, not a list header too). A list grows by about half
//! each time it fills (through the capacities of [`CAPS`]); the span it leaves, or the span of
//! a list whose leaf turned dense, is kept for the next list of that capacity. Random writes
//! and GC moves over a large drive grow hundreds of thousands of small lists: as vectors, each
//! growth was a `malloc` and a `free` of a few dozen bytes (the last, past glibc's small bins,
//! also a consolidation of its fast bins). Here a growth takes a free span or the arena's
//! next, and no span crosses a page, so the arena grows a page at a time and never moves.

/// The capacities a list takes, in entries: 4, then each about half again the last (as a
/// vector grown by half would), up to the last, which holds the most a list holds before its
/// leaf turns dense (`SPARSE_MAX + 1`).
const CAPS: [usize; 10] = [4, 6, 9, 13, 19, 28, 42, 63, 94, 141];

const _: () = assert!(CAPS[CAPS.len() - 1] > super::SPARSE_MAX, "the last capacity holds a list about to turn dense");

/// Entries in a page of the arena (64 KiB): a span never crosses a page.
const PAGE_BITS: u32 = 13;
const PAGE: usize = 1 << PAGE_BITS;

const _: () = assert!(CAPS[CAPS.len() - 1] <= PAGE, "the largest span fits a page");

/// A span, packed: the arena position of its first entry in the low [`AT_BITS`] bits, its
/// length in the 8 above them, its capacity class above those. No span is all ones.
pub(super) type Span = u64;

/// Not a span: no list.
pub(super) const NO_SPAN: Span = u64::MAX;

const AT_BITS: u32 = 40;
const AT_MASK: u64 = (1 << AT_BITS) - 1;
const LEN_SHIFT: u32 = AT_BITS;
const CLASS_SHIFT: u32 = AT_BITS + 8;

const _: () = assert!(CAPS[CAPS.len() - 1] < 256, "a length fits 8 bits");
const _: () = assert!((CAPS.len() as u64) << CLASS_SHIFT < NO_SPAN - 1, "no span is one of the two top values, which the map's directory uses as markers");

#[inline]
fn span(at: u64, len: usize, class: usize) -> Span {
    at | (len as u64) << LEN_SHIFT | (class as u64) << CLASS_SHIFT
}

/// A span's arena position, length and capacity class.
#[inline]
fn parts(s: Span) -> (u64, usize, usize) {
    (s & AT_MASK, (s >> LEN_SHIFT) as usize & 0xff, (s >> CLASS_SHIFT) as usize)
}

/// A page of the arena and the place in it of arena position `at`.
#[inline]
fn place(at: u64) -> (usize, usize) {
    ((at >> PAGE_BITS) as usize, (at as usize) & (PAGE - 1))
}

/// The arena that holds the lists, each a sorted run of entries in a span.
#[derive(Default)]
pub(super) struct Lists {
    /// Full pages, and the last, filled up to `next`.
    pages: Vec<Box<[u64]>>,
    /// Entries used in the last page.
    next: usize,
    /// Per capacity class: the arena positions of the spans free for reuse.
    free: [Vec<u64>; CAPS.len()],
}

impl Lists {
    /// Whether no list was ever made.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// A new, empty list.
    pub(super) fn make(&mut self) -> Span {
        span(self.take(0), 0, 0)
    }

    /// Frees list `s`: its span is reused.
    pub(super) fn free(&mut self, s: Span) {
        let (at, _, class) = parts(s);
        self.free[class].push(at);
    }

    /// The entries of list `s` (none for [`NO_SPAN`]).
    #[inline]
    pub(super) fn get(&self, s: Span) -> Option<&[u64]> {
        let (at, len, _) = parts(s);
        let (page, off) = place(at);
        self.pages.get(page)?.get(off..off + len)
    }

    /// The entries of list `s`, to change in place.
    #[inline]
    pub(super) fn get_mut(&mut self, s: Span) -> &mut [u64] {
        let (at, len, _) = parts(s);
        let (page, off) = place(at);
        &mut self.pages[page][off..off + len]
    }

    /// Puts `entry` at place `pos` of list `s` (at most its length), the entries from there on
    /// moved up one, a full list first moved to a span of the next capacity; returns the
    /// list's span now.
    pub(super) fn insert(&mut self, s: Span, pos: usize, entry: u64) -> Span {
        let (at, len, class) = parts(s);
        debug_assert!(pos <= len);
        let (page, off) = place(at);
        if len < CAPS[class] {
            let p = &mut self.pages[page];
            p.copy_within(off + pos..off + len, off + pos + 1);
            p[off + pos] = entry;
            return span(at, len + 1, class);
        }
        let to_at = self.take(class + 1);
        let (to_page, to) = place(to_at);
        if to_page == page {
            let p = &mut self.pages[page];
            p.copy_within(off..off + pos, to);
            p[to + pos] = entry;
            p.copy_within(off + pos..off + len, to + pos + 1);
        } else {
            let (src, dst) = two_pages(&mut self.pages, page, to_page);
            dst[to..to + pos].copy_from_slice(&src[off..off + pos]);
            dst[to + pos] = entry;
            dst[to + pos + 1..=to + len].copy_from_slice(&src[off + pos..off + len]);
        }
        self.free[class].push(at);
        span(to_at, len + 1, class + 1)
    }

    /// A span of capacity class `class`: a free one, or the arena's next (on a new page when
    /// the last has too little left).
    fn take(&mut self, class: usize) -> u64 {
        if let Some(at) = self.free[class].pop() {
            return at;
        }
        let cap = CAPS[class];
        if self.pages.is_empty() || self.next + cap > PAGE {
            self.pages.push(vec![0; PAGE].into_boxed_slice());
            self.next = 0;
        }
        let at = ((self.pages.len() - 1) << PAGE_BITS | self.next) as u64;
        self.next += cap;
        at
    }

    /// Bytes held: the arena's pages and the free spans' lists.
    pub(super) fn heap_bytes(&self) -> usize {
        self.pages.capacity() * 16 + self.pages.len() * PAGE * 8 + self.free.iter().map(|f| f.capacity() * 8).sum::<usize>()
    }
}

/// Pages `a` and `b` (not the same) of `pages`, the first to read and the second to write.
fn two_pages(pages: &mut [Box<[u64]>], a: usize, b: usize) -> (&[u64], &mut [u64]) {
    if a < b {
        let (lo, hi) = pages.split_at_mut(b);
        (&lo[a], &mut hi[0])
    } else {
        let (lo, hi) = pages.split_at_mut(a);
        (&hi[0], &mut lo[b])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lists made, grown, changed and freed at random hold what plain vectors hold, no two
    /// live lists share an entry, and freed spans are reused: the arena holds little more than
    /// the live lists' capacities.
    #[test]
    fn lists_agree_with_vectors() {
        let mut lists = Lists::default();
        let mut live: Vec<(Span, Vec<u64>)> = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut grown = 0;
        for step in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let pick = (x >> 8) as usize % live.len().max(1);
            match x % 16 {
                0 if live.len() < 3_000 => live.push((lists.make(), Vec::new())),
                1 if !live.is_empty() => {
                    let (s, _) = live.swap_remove(pick);
                    lists.free(s);
                }
                2 if !live.is_empty() => {
                    let (s, w) = &mut live[pick];
                    if let Some(e) = w.first_mut() {
                        *e = step;
                        lists.get_mut(*s)[0] = step;
                    }
                }
                _ if !live.is_empty() => {
                    let (s, w) = &mut live[pick];
                    if w.len() < CAPS[CAPS.len() - 1] {
                        let pos = (x >> 40) as usize % (w.len() + 1);
                        w.insert(pos, step);
                        let before = *s;
                        *s = lists.insert(*s, pos, step);
                        grown += usize::from(parts(*s).0 != parts(before).0);
                    }
                }
                _ => {}
            }
        }
        let mut seen = std::collections::HashSet::new();
        for (s, w) in &live {
            assert_eq!(lists.get(*s), Some(w.as_slice()));
            assert_eq!(parts(*s).1, w.len());
            // Each entry was written once, at its step: a shared span would show one twice.
            for &e in w {
                assert!(seen.insert(e), "entry {e} in two lists");
            }
        }
        assert!(live.len() > 100 && grown > 10_000, "{} lists live, {grown} growths", live.len());
        assert_eq!(lists.get(NO_SPAN), None);
        // Without reuse, every growth's span would stay taken.
        let capacity: usize = live.iter().map(|(s, _)| CAPS[parts(*s).2]).sum();
        let arena = lists.pages.len() * PAGE;
        assert!(arena < 3 * capacity + PAGE, "{arena} entries in the arena for {capacity} in live lists");
    }

    #[test]
    fn spans_stay_within_a_page() {
        let mut lists = Lists::default();
        let mut spans = Vec::new();
        for _ in 0..5_000 {
            let mut s = lists.make();
            for k in 0..100 {
                s = lists.insert(s, k, k as u64);
            }
            spans.push(s);
        }
        for &s in &spans {
            let (at, len, class) = parts(s);
            assert!(place(at).1 + CAPS[class] <= PAGE && len == 100, "{s:x}");
        }
        assert_eq!(lists.get(spans[4_999]).map(<[u64]>::len), Some(100));
    }
}
