//! The sparse leaves' lists, kept in pages of one arena rather than each in an allocation of
//! its own, and each named by its span: where its entries start, how many there are, and its
//! capacity, packed in one word that the map's directory holds (so that reaching a list's
//! entries takes the directory's word alone, not a list header too).
//!
//! A list grows by about half each time it fills (through the capacities of [`CAPS`]); the
//! span it leaves, or the span of a list whose leaf turned dense, is kept for the next list of
//! that capacity. Random writes and GC moves over a large drive grow hundreds of thousands of
//! small lists: as vectors, each growth was a `malloc` and a `free` of a few dozen bytes (the
//! last, past glibc's small bins, also a consolidation of its fast bins). Here a growth takes
//! a free span or cuts one from the current page, and no span crosses a page, so the arena
//! grows a page at a time and never moves.
//!
//! Lists grow through the capacities together, so the spans of the capacities they have all
//! outgrown would stay free for good: a page whose spans are all free again is taken back
//! whole, for spans of any capacity. What stays free is the spans of pages that a few slower
//! lists still hold. An allocator merges free neighbours of any size; this arena does not,
//! and holds more: 10^7 random updates over 2^28 units (about what 10^6 writes do to the aged
//! 1 TiB drive's map) leave 145 MB of pages for 90 MB of live lists (176 MB without taking
//! pages back).

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
    /// The arena's pages.
    pages: Vec<Box<[u64]>>,
    /// Per page: the capacity (in entries) of the live spans in it.
    held: Vec<u32>,
    /// Per page: how many times it was emptied and taken back for new spans. A free span is
    /// listed with its page's count then, so that a span of a page reused since is known
    /// stale when it comes up.
    reuses: Vec<u32>,
    /// The page new spans are cut from, and the entries of it cut so far.
    cur: usize,
    next: usize,
    /// Pages with no live span, to cut new spans from.
    empty: Vec<usize>,
    /// Per capacity class: the spans free for reuse, as arena positions with their page's
    /// count of reuses when they were freed.
    free: [Vec<(u64, u32)>; CAPS.len()],
    /// Per page: its spans listed in `free` (and not stale).
    listed: Vec<u32>,
    /// Entries of `free` that are stale (their page was taken back since). A class no list
    /// takes any more never pops them: once they are more than the rest, they are swept out.
    stale: usize,
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
        self.release(at, class);
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
        self.release(at, class);
        span(to_at, len + 1, class + 1)
    }

    /// A span of capacity class `class`: a free one, or one cut from the current page (from
    /// an empty page, or a new one, when it has too little left).
    fn take(&mut self, class: usize) -> u64 {
        let cap = CAPS[class];
        while let Some((at, reuses)) = self.free[class].pop() {
            let page = place(at).0;
            if self.reuses[page] == reuses {
                self.held[page] += cap as u32;
                self.listed[page] -= 1;
                return at;
            }
            self.stale -= 1;
        }
        if self.pages.is_empty() || self.next + cap > PAGE {
            self.cur = self.empty.pop().unwrap_or_else(|| {
                self.pages.push(vec![0; PAGE].into_boxed_slice());
                self.held.push(0);
                self.reuses.push(0);
                self.listed.push(0);
                self.pages.len() - 1
            });
            self.next = 0;
        }
        let at = (self.cur << PAGE_BITS | self.next) as u64;
        self.next += cap;
        self.held[self.cur] += cap as u32;
        at
    }

    /// Gives back the span at `at` of capacity class `class`: listed free for its class, or,
    /// where it was its page's last live span, the whole page taken back for new spans (the
    /// page's free spans are then stale). Lists grow through the classes, so without this the
    /// spans of the classes they have all outgrown would stay free for good.
    fn release(&mut self, at: u64, class: usize) {
        let page = place(at).0;
        self.held[page] -= CAPS[class] as u32;
        if self.held[page] == 0 && page != self.cur {
            self.reuses[page] = self.reuses[page].wrapping_add(1);
            self.empty.push(page);
            self.stale += self.listed[page] as usize;
            self.listed[page] = 0;
            let listed: usize = self.free.iter().map(Vec::len).sum();
            if self.stale > PAGE && 2 * self.stale > listed {
                self.sweep();
            }
        } else {
            self.free[class].push((at, self.reuses[page]));
            self.listed[page] += 1;
        }
    }

    /// Drops the stale entries of the free lists (and the room they took).
    fn sweep(&mut self) {
        let reuses = &self.reuses;
        for f in &mut self.free {
            f.retain(|&(at, r)| reuses[place(at).0] == r);
            if f.capacity() > 4 * f.len() {
                f.shrink_to(2 * f.len());
            }
        }
        self.stale = 0;
    }

    /// Bytes held: the arena's pages, their counts and the free lists.
    pub(super) fn heap_bytes(&self) -> usize {
        self.pages.capacity() * 16
            + self.pages.len() * PAGE * 8
            + (self.held.capacity() + self.reuses.capacity() + self.listed.capacity()) * 4
            + self.empty.capacity() * 8
            + self.free.iter().map(|f| f.capacity() * 16).sum::<usize>()
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
        check_free_lists(&lists);
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

    /// Lists that grow together through the capacities leave the spans of the classes they
    /// have all outgrown free, where no list takes them again: whole pages of them are taken
    /// back for new spans, so the arena stays within twice what the live lists hold.
    #[test]
    fn emptied_pages_are_reused() {
        let mut lists = Lists::default();
        let mut spans: Vec<Span> = (0..20_000).map(|_| lists.make()).collect();
        for k in 0..60 {
            for s in &mut spans {
                *s = lists.insert(*s, k, k as u64);
            }
        }
        let capacity: usize = spans.iter().map(|&s| CAPS[parts(s).2]).sum();
        let outgrown: usize = CAPS[..parts(spans[0]).2].iter().sum::<usize>() * spans.len();
        let arena = lists.pages.len() * PAGE;
        assert!(arena < 2 * capacity, "{arena} entries in the arena for {capacity} in live lists ({outgrown} outgrown)");
        assert!(lists.reuses.iter().any(|&r| r > 0), "no page was reused");
        check_free_lists(&lists);
        for (i, &s) in spans.iter().enumerate().step_by(997) {
            assert_eq!(lists.get(s).map(<[u64]>::to_vec), Some((0..60).collect::<Vec<u64>>()), "list {i}");
        }
    }

    /// The free lists' books: each page's count of listed spans and the count of stale entries
    /// are what the lists hold, and stale entries are at most a page's worth or half of them.
    fn check_free_lists(lists: &Lists) {
        let fresh = |&(at, r): &(u64, u32)| lists.reuses[place(at).0] == r;
        let stale = lists.free.iter().flatten().filter(|e| !fresh(e)).count();
        let listed: usize = lists.free.iter().map(Vec::len).sum();
        assert_eq!(lists.stale, stale);
        assert!(stale <= PAGE || 2 * stale <= listed, "{stale} stale of {listed}");
        let mut per_page = vec![0u32; lists.pages.len()];
        for e in lists.free.iter().flatten().filter(|e| fresh(e)) {
            per_page[place(e.0).0] += 1;
        }
        assert_eq!(per_page, lists.listed);
    }

    /// Lists that grow through every capacity in turn, many times over (each round's lists
    /// freed when they reach the last), leave the free lists of the small capacities full of
    /// spans of pages taken back since: they are swept, not kept for good.
    #[test]
    fn stale_free_spans_are_swept() {
        let mut lists = Lists::default();
        let mut most = 0;
        for _ in 0..30 {
            let mut spans: Vec<Span> = (0..3_000).map(|_| lists.make()).collect();
            for k in 0..CAPS[CAPS.len() - 1] {
                for s in &mut spans {
                    *s = lists.insert(*s, k, k as u64);
                }
            }
            for s in spans {
                lists.free(s);
            }
            check_free_lists(&lists);
            most = most.max(lists.free.iter().map(Vec::len).sum::<usize>());
        }
        assert!(lists.reuses.iter().any(|&r| r > 1), "pages were taken back more than once");
        assert!(most < 3 * 3_000 * CAPS.len(), "{most} free-list entries at most");
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
