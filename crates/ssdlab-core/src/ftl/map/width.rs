//! How wide the maps store their entries: 32 bits when every value a map will hold (a slot of
//! the drive, or a logical unit) lies below the two markers, else 64. A drive of up to
//! 16 TiB at 4 KiB units keeps its maps at half the memory, so random map traffic touches
//! half as many cache lines and pages. What a map answers is the same at either width.

use super::{BASE, LEAF, UNMAPPED};

/// A stored map entry: a value, "unmapped", or "where the layout put it".
pub(super) trait Word: Copy + PartialEq + Send + Sync + 'static {
    /// "Where the layout put it", as stored.
    const BASE: Self;
    /// "Not mapped", as stored.
    const NONE: Self;
    /// The stored form of a value or marker.
    fn narrow(x: u64) -> Self;
    /// What a stored entry means.
    fn widen(self) -> u64;
    /// `n` entries of zero bits, from zeroed memory (pages the system commits on first write).
    fn zeroed(n: usize) -> Vec<Self>;
    /// The entry XOR [`Word::BASE`]: how [`Flat`] stores it, so that zero bits mean
    /// "where the layout put it".
    fn flip(self) -> Self;
}

impl Word for u64 {
    const BASE: u64 = BASE;
    const NONE: u64 = UNMAPPED;
    #[inline]
    fn narrow(x: u64) -> u64 {
        x
    }
    #[inline]
    fn widen(self) -> u64 {
        self
    }
    fn zeroed(n: usize) -> Vec<u64> {
        vec![0; n]
    }
    #[inline]
    fn flip(self) -> u64 {
        self ^ BASE
    }
}

/// The narrow markers: the two largest 32-bit values.
const BASE32: u32 = u32::MAX - 1;

impl Word for u32 {
    const BASE: u32 = BASE32;
    const NONE: u32 = u32::MAX;
    #[inline]
    fn narrow(x: u64) -> u32 {
        debug_assert!(x >= BASE || x < u64::from(BASE32), "{x} does not fit a narrow entry");
        if x >= BASE {
            (x - BASE) as u32 + BASE32
        } else {
            x as u32
        }
    }
    #[inline]
    fn widen(self) -> u64 {
        if self >= BASE32 {
            u64::from(self - BASE32) + BASE
        } else {
            u64::from(self)
        }
    }
    fn zeroed(n: usize) -> Vec<u32> {
        vec![0; n]
    }
    #[inline]
    fn flip(self) -> u32 {
        self ^ BASE32
    }
}

/// Whether every value below `bound` fits a narrow entry.
pub(super) fn narrow_fits(bound: u64) -> bool {
    bound <= u64::from(BASE32)
}

/// The dense leaves of the logical map, each made on demand, of one width.
pub(super) struct Dense<W>(Vec<Option<Box<[W; LEAF]>>>);

impl<W: Word> Dense<W> {
    fn new(leaves: usize) -> Self {
        let mut v = Vec::with_capacity(leaves);
        v.resize_with(leaves, || None);
        Dense(v)
    }

    #[inline]
    fn get(&self, leaf: usize, off: usize) -> Option<u64> {
        self.0[leaf].as_ref().map(|l| l[off].widen())
    }

    /// Brings the line of `leaf`'s pointer toward the cache.
    #[inline]
    fn prefetch_leaf(&self, leaf: usize) {
        if let Some(p) = self.0.get(leaf) {
            mem_prefetch::prefetch_read_data::<_, 3>(p);
        }
    }

    /// Brings the line of entry `off` of `leaf` toward the cache, if the leaf is made; returns
    /// whether it is.
    #[inline]
    fn prefetch(&self, leaf: usize, off: usize) -> bool {
        let Some(Some(l)) = self.0.get(leaf) else { return false };
        if let Some(e) = l.get(off) {
            mem_prefetch::prefetch_read_data::<_, 3>(e);
        }
        true
    }

    #[inline]
    fn peek(&self, leaf: usize, off: usize) -> u64 {
        self.0.get(leaf).and_then(Option::as_ref).map_or(0, |l| l[off].widen())
    }

    #[inline]
    fn replace(&mut self, leaf: usize, off: usize, value: u64) -> Option<u64> {
        self.0[leaf].as_mut().map(|l| std::mem::replace(&mut l[off], W::narrow(value)).widen())
    }

    /// Gives `leaf` a dense array, every entry "where the layout put it" but `entries`.
    fn make(&mut self, leaf: usize, entries: impl Iterator<Item = (usize, u64)>) {
        // Built on the heap: a leaf is a lot for the stack.
        let mut l: Box<[W; LEAF]> = vec![W::BASE; LEAF].into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!("the vector has LEAF entries"));
        for (off, value) in entries {
            l[off] = W::narrow(value);
        }
        self.0[leaf] = Some(l);
    }

    #[cfg(test)]
    fn has(&self, leaf: usize) -> bool {
        self.0[leaf].is_some()
    }

    fn heap_bytes(&self) -> usize {
        self.0.len() * 8 + self.0.iter().filter(|l| l.is_some()).count() * LEAF * std::mem::size_of::<W>()
    }
}

/// The leaves of a map that is dense throughout (up to `DENSE_UNITS` units), as one flat
/// array: an entry is one load at a computed place, where a [`Dense`] leaf is found through
/// its pointer first (a load that each of GC's random map updates waited on). Entries are
/// stored flipped ([`Word::flip`]), so the zeroed memory the array starts as means "where
/// the layout put it" and the system commits a leaf's pages when it is first written, as
/// [`Dense`] made a leaf on demand. A bit per leaf says which leaves were written, for the
/// heap's account.
pub(super) struct Flat<W> {
    entries: Vec<W>,
    made: Vec<u64>,
}

impl<W: Word> Flat<W> {
    fn new(leaves: usize) -> Self {
        Flat { entries: W::zeroed(leaves * LEAF), made: vec![0; leaves.div_ceil(64)] }
    }

    #[inline]
    fn mark(&mut self, leaf: usize) {
        if let Some(w) = self.made.get_mut(leaf / 64) {
            *w |= 1 << (leaf % 64);
        }
    }

    /// Whether `leaf` was written. A leaf never written is not read either: its pages are
    /// not committed, and reading them would map them (a fault, then a TLB entry each).
    #[inline]
    fn has(&self, leaf: usize) -> bool {
        self.made.get(leaf / 64).is_some_and(|w| w >> (leaf % 64) & 1 == 1)
    }

    #[inline]
    fn get(&self, leaf: usize, off: usize) -> Option<u64> {
        if self.has(leaf) {
            Some(self.entries[leaf * LEAF + off].flip().widen())
        } else {
            None
        }
    }

    /// Brings the line of entry `off` of `leaf` toward the cache, if the leaf was written;
    /// returns whether it was.
    #[inline]
    fn prefetch(&self, leaf: usize, off: usize) -> bool {
        if !self.has(leaf) {
            return false;
        }
        if let Some(e) = self.entries.get(leaf * LEAF + off) {
            mem_prefetch::prefetch_read_data::<_, 3>(e);
        }
        true
    }

    /// The entry: "where the layout put it" in a leaf never written (whose zeroed pages the
    /// read maps; a check of the leaf's bit first took back all that the flat map saves
    /// ageing), 0 beyond the map.
    #[inline]
    fn peek(&self, leaf: usize, off: usize) -> u64 {
        self.entries.get(leaf * LEAF + off).map_or(0, |e| e.flip().widen())
    }

    /// Sets an entry and returns the previous one: every leaf is there to write.
    #[inline]
    fn replace(&mut self, leaf: usize, off: usize, value: u64) -> u64 {
        self.mark(leaf);
        let e = &mut self.entries[leaf * LEAF + off];
        std::mem::replace(e, W::narrow(value).flip()).flip().widen()
    }

    /// Sets every entry of `leaf` to "where the layout put it" but `entries`.
    fn make(&mut self, leaf: usize, entries: impl Iterator<Item = (usize, u64)>) {
        self.mark(leaf);
        let l = &mut self.entries[leaf * LEAF..(leaf + 1) * LEAF];
        l.fill(W::BASE.flip());
        for (off, value) in entries {
            l[off] = W::narrow(value).flip();
        }
    }

    /// The written leaves' entries (the pages the system committed) and the bits.
    fn heap_bytes(&self) -> usize {
        let made: u32 = self.made.iter().map(|w| w.count_ones()).sum();
        self.made.len() * 8 + made as usize * LEAF * std::mem::size_of::<W>()
    }
}

/// [`Dense`] (or, for a map dense throughout, [`Flat`]) at the width the map's values need.
pub(super) enum Leaves {
    Narrow(Dense<u32>),
    Wide(Dense<u64>),
    FlatNarrow(Flat<u32>),
    FlatWide(Flat<u64>),
}

/// Runs `$body` on the leaves whatever their kind and width.
macro_rules! each_leaves {
    ($e:expr, $d:ident => $body:expr) => {
        match $e {
            Leaves::Narrow($d) => $body,
            Leaves::Wide($d) => $body,
            Leaves::FlatNarrow($d) => $body,
            Leaves::FlatWide($d) => $body,
        }
    };
}

/// Runs `$body` on the leaves (or entries) whatever their width.
macro_rules! each {
    ($e:expr, $enum:ident, $d:ident => $body:expr) => {
        match $e {
            $enum::Narrow($d) => $body,
            $enum::Wide($d) => $body,
        }
    };
}

impl Leaves {
    /// `leaves` leaves, none made yet, wide enough for values below `bound`; `flat` for a
    /// map dense throughout.
    pub(super) fn new(leaves: usize, bound: u64, flat: bool) -> Self {
        match (narrow_fits(bound), flat) {
            (true, false) => Leaves::Narrow(Dense::new(leaves)),
            (false, false) => Leaves::Wide(Dense::new(leaves)),
            (true, true) => Leaves::FlatNarrow(Flat::new(leaves)),
            (false, true) => Leaves::FlatWide(Flat::new(leaves)),
        }
    }

    /// The entry at `off` of `leaf`, if the leaf is made.
    #[inline]
    pub(super) fn get(&self, leaf: usize, off: usize) -> Option<u64> {
        each_leaves!(self, d => d.get(leaf, off))
    }

    /// Brings the line of `leaf`'s pointer toward the cache, or where the leaves are flat that
    /// of entry `off` (a hint).
    #[inline]
    pub(super) fn prefetch_leaf(&self, leaf: usize, off: usize) {
        match self {
            Leaves::Narrow(d) => d.prefetch_leaf(leaf),
            Leaves::Wide(d) => d.prefetch_leaf(leaf),
            // No directory: the first stage brings in the entry itself.
            Leaves::FlatNarrow(d) => _ = d.prefetch(leaf, off),
            Leaves::FlatWide(d) => _ = d.prefetch(leaf, off),
        }
    }

    /// Brings the line of entry `off` of `leaf` toward the cache (a hint); returns whether the
    /// leaf is made.
    #[inline]
    pub(super) fn prefetch(&self, leaf: usize, off: usize) -> bool {
        each_leaves!(self, d => d.prefetch(leaf, off))
    }

    /// The entry, or where the leaf is not made 0 (flat leaves: "where the layout put it"),
    /// and 0 beyond the map.
    #[inline]
    pub(super) fn peek(&self, leaf: usize, off: usize) -> u64 {
        each_leaves!(self, d => d.peek(leaf, off))
    }

    /// Sets the entry of a made leaf and returns the previous one (`None`: not made, nothing
    /// set). Flat leaves are all there to write: the entry is set, and one never written
    /// was "where the layout put it".
    #[inline]
    pub(super) fn replace(&mut self, leaf: usize, off: usize, value: u64) -> Option<u64> {
        match self {
            Leaves::Narrow(d) => d.replace(leaf, off, value),
            Leaves::Wide(d) => d.replace(leaf, off, value),
            Leaves::FlatNarrow(d) => Some(d.replace(leaf, off, value)),
            Leaves::FlatWide(d) => Some(d.replace(leaf, off, value)),
        }
    }

    pub(super) fn make(&mut self, leaf: usize, entries: impl Iterator<Item = (usize, u64)>) {
        each_leaves!(self, d => d.make(leaf, entries));
    }

    #[cfg(test)]
    pub(super) fn has(&self, leaf: usize) -> bool {
        each_leaves!(self, d => d.has(leaf))
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        match self {
            Leaves::Narrow(d) => d.0.len(),
            Leaves::Wide(d) => d.0.len(),
            Leaves::FlatNarrow(d) => d.entries.len() / LEAF,
            Leaves::FlatWide(d) => d.entries.len() / LEAF,
        }
    }

    /// Bytes of the directory (flat leaves: a bit per leaf) and the made leaves.
    pub(super) fn heap_bytes(&self) -> usize {
        each_leaves!(self, d => d.heap_bytes())
    }
}

/// A flat array of entries of one width (the reverse map's chunks).
pub(super) enum Entries {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Entries {
    /// An empty array wide enough for values below `bound`.
    pub(super) fn new(bound: u64) -> Self {
        if narrow_fits(bound) {
            Entries::Narrow(Vec::new())
        } else {
            Entries::Wide(Vec::new())
        }
    }

    pub(super) fn len(&self) -> usize {
        each!(self, Entries, v => v.len())
    }

    #[inline]
    pub(super) fn get(&self, i: usize) -> u64 {
        each!(self, Entries, v => v[i].widen())
    }

    #[inline]
    pub(super) fn set(&mut self, i: usize, value: u64) {
        each!(self, Entries, v => v[i] = Word::narrow(value));
    }

    /// Sets the entries of the run at `base` from place `at` on to `values`, in order, and
    /// their bits in `live` (a bit per place of the run): set for a mapped one, clear for an
    /// unmapped one.
    #[inline]
    pub(super) fn set_run(&mut self, base: usize, at: usize, values: impl Iterator<Item = u64>, live: &mut [u64]) {
        each!(self, Entries, v => {
            // Each word of bits is read once and written once, when the run leaves it (changed
            // in memory place by place, each change waited on the store before it).
            let (mut w, mut word) = (at / 64, live.get(at / 64).copied().unwrap_or(0));
            for ((o, e), x) in (at..).zip(v[base + at..].iter_mut()).zip(values) {
                *e = Word::narrow(x);
                if o / 64 != w {
                    live[w] = word;
                    (w, word) = (o / 64, live[o / 64]);
                }
                let bit = 1u64 << (o % 64);
                word = word & !bit | if x == UNMAPPED { 0 } else { bit };
            }
            if let Some(l) = live.get_mut(w) {
                *l = word;
            }
        });
    }

    /// Appends `n` unmapped entries.
    pub(super) fn grow(&mut self, n: usize) {
        each!(self, Entries, v => v.resize(v.len() + n, Word::NONE));
    }

    /// Appends `(offset, value)` for each of the `n` entries from `start` whose bit in `live`
    /// (a bit per entry, from `start`) is set, the offset counted from `start`.
    pub(super) fn live_into(&self, start: usize, n: usize, live: &[u64], out: &mut Vec<(u32, u64)>) {
        each!(self, Entries, v => live_of(&v[start..start + n], live, out));
    }

    pub(super) fn heap_bytes(&self) -> usize {
        each!(self, Entries, v => bytes(v))
    }
}

/// Appends `(offset, value)` for every entry of `v` whose bit in `live` is set. Every entry is
/// written to the next place and the count moves on only past a valid one: no branch depends
/// on the bits, which a victim's chunk holds set and clear in no order.
fn live_of<W: Word>(v: &[W], live: &[u64], out: &mut Vec<(u32, u64)>) {
    let start = out.len();
    out.resize(start + v.len(), (0, 0));
    let mut k = start;
    for (o, &x) in v.iter().enumerate() {
        if let Some(place) = out.get_mut(k) {
            *place = (o as u32, x.widen());
        }
        k += (live[o / 64] >> (o % 64) & 1) as usize;
    }
    out.truncate(k);
}

/// Bytes a vector holds.
fn bytes<W>(v: &Vec<W>) -> usize {
    v.capacity() * std::mem::size_of::<W>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_entries_mean_what_wide_ones_do() {
        for x in [0, 1, 77, u64::from(BASE32) - 1, BASE, UNMAPPED] {
            assert_eq!(<u32 as Word>::narrow(x).widen(), x, "{x}");
            assert_eq!(<u64 as Word>::narrow(x).widen(), x, "{x}");
        }
        assert_eq!(<u32 as Word>::narrow(BASE), <u32 as Word>::BASE);
        assert_eq!(<u32 as Word>::narrow(UNMAPPED), <u32 as Word>::NONE);
        assert!(narrow_fits(u64::from(BASE32)) && !narrow_fits(u64::from(BASE32) + 1));
    }

    #[test]
    fn flat_leaves_answer_as_leaves_made_on_demand_do() {
        use rand::{RngExt, SeedableRng};
        for bound in [1000, 1 << 40] {
            let (mut flat, mut dense) = (Leaves::new(6, bound, true), Leaves::new(6, bound, false));
            assert!(matches!(flat, Leaves::FlatNarrow(_) | Leaves::FlatWide(_)) && flat.len() == 6);
            let mut rng = crate::sim::Rng::seed_from_u64(2);
            for _ in 0..3000 {
                let (leaf, off) = (rng.random_range(0..6), rng.random_range(0..LEAF));
                let value = match rng.random_range(0..4) {
                    0 => UNMAPPED,
                    1 => BASE,
                    _ => rng.random_range(0..999),
                };
                if rng.random_range(0..50) == 0 {
                    let entries = [(off, value), ((off + 1) % LEAF, 5)];
                    flat.make(leaf, entries.into_iter());
                    dense.make(leaf, entries.into_iter());
                } else {
                    // A leaf not made answers none, and is made by its first write.
                    let old = flat.replace(leaf, off, value);
                    assert_eq!(old, dense.replace(leaf, off, value).or(Some(BASE)), "leaf {leaf} entry {off}");
                    if !dense.has(leaf) {
                        dense.make(leaf, std::iter::once((off, value)));
                    }
                }
                assert_eq!(flat.get(leaf, off), dense.get(leaf, off));
                assert_eq!(flat.has(leaf), dense.has(leaf));
                // Hints for any place (beyond the map too) change nothing.
                flat.prefetch_leaf(leaf + 3, off);
                assert_eq!(flat.prefetch(leaf + 3, off), dense.prefetch(leaf + 3, off));
            }
            for leaf in 0..6 {
                for off in [0, 1, LEAF / 2, LEAF - 1] {
                    assert_eq!(flat.get(leaf, off), dense.get(leaf, off));
                    assert_eq!(flat.peek(leaf, off), dense.peek(leaf, off));
                }
            }
            assert_eq!(flat.peek(9, 0), 0, "beyond the map");
            // The account: the written leaves' entries, and a bit per leaf.
            let made = (0..6).filter(|&l| flat.has(l)).count();
            let width = if bound == 1000 { 4 } else { 8 };
            assert_eq!(flat.heap_bytes(), 8 + made * LEAF * width);
        }
    }

    #[test]
    fn both_widths_answer_alike() {
        for bound in [1000, 1 << 40] {
            let mut e = Entries::new(bound);
            assert_eq!(matches!(e, Entries::Narrow(_)), bound == 1000);
            e.grow(8);
            e.set(3, 999);
            e.set(5, UNMAPPED);
            assert_eq!((e.get(3), e.get(4)), (999, UNMAPPED));
            // A run from place 4 of the run at 0 marks its mapped entries valid.
            let mut live = [1u64 << 3 | 1 << 5];
            e.set_run(0, 4, [7, UNMAPPED, 9].into_iter(), &mut live);
            assert_eq!((live[0], e.get(4), e.get(5), e.get(6)), (0b101_1000, 7, UNMAPPED, 9));
            let mut out = vec![(9, 9)];
            e.live_into(2, 6, &[live[0] >> 2], &mut out);
            assert_eq!(out, vec![(9, 9), (1, 999), (2, 7), (4, 9)]);
            // A run over three words of bits sets each place's bit as the place's value says,
            // and leaves the bits around it.
            let mut r = Entries::new(bound);
            r.grow(200);
            let mut live = [u64::MAX, 0, u64::MAX, 0];
            let values: Vec<u64> = (0..90u64).map(|i| if i % 7 == 3 { UNMAPPED } else { i }).collect();
            r.set_run(0, 60, values.iter().copied(), &mut live);
            for o in 0..256usize {
                let bit = live[o / 64] >> (o % 64) & 1 == 1;
                let want = match o {
                    60..150 => values[o - 60] != UNMAPPED,
                    _ => (o / 64) % 2 == 0,
                };
                assert_eq!(bit, want, "bit {o}");
            }
            assert!((60..150).all(|o| r.get(o) == values[o - 60]));
            let mut l = Leaves::new(4, bound, false);
            assert_eq!((l.get(1, 7), l.peek(1, 7), l.replace(1, 7, 5)), (None, 0, None));
            l.make(1, [(7, 42)].into_iter());
            assert_eq!((l.get(1, 7), l.get(1, 8), l.replace(1, 7, UNMAPPED), l.get(1, 7)), (Some(42), Some(BASE), Some(42), Some(UNMAPPED)));
            assert!(l.has(1) && !l.has(0) && l.len() == 4);
        }
    }
}
