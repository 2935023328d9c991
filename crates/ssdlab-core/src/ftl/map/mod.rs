//! The logical-to-physical map and its reverse, with memory that follows what was written.
//!
//! Preconditioning places logical units by rule, so their places are computed rather than
//! stored: a [`Layout`] says where a sequential fill (striped over the planes) or replica aging
//! (a keyed permutation over the valid slots of each block) put every unit. Only what the run
//! writes afterwards is stored:
//! - [`L2p`], logical page → physical slot, is a directory of leaves of 1024 units, made on the
//!   first write into their range. On a map of up to [`DENSE_UNITS`] units every leaf is dense,
//!   in one flat array of zeroed memory (128 MiB at most) whose pages the system commits as
//!   leaves are first written. On a larger one a leaf starts as a sorted list of
//!   the entries written (8 B each: the offset packed above the slot) and becomes dense once it
//!   holds an eighth of its units. An entry holds the slot, "unmapped", or (in a dense leaf; in
//!   a list, by its absence) "where the layout put it". Random writes and GC moves over an
//!   aged 1 TiB drive touch nearly every leaf but few units of each, so they cost bytes per
//!   unit written, not a dense leaf (4 or 8 KiB) per leaf touched. On such a map a leaf's
//!   directory holds the pointer to its dense array and its list's span (where the list's
//!   entries are, and how many): 16 B per 4 MiB of logical space (at 4 KiB units). The lists
//!   share one arena (`lists`).
//! - [`P2l`], physical slot → logical page, keeps one chunk of entries per block written during
//!   the run, recycled when the block is erased. A block the layout filled keeps only a bit per
//!   slot (still valid or not) until it is written again or erased.
//!
//! Dense leaves and chunks store 4 B entries where every value fits below 32 bits' two
//! markers (drives of up to 16 TiB at 4 KiB units), else 8 B (`width`): a dense leaf is then
//! 4 KiB, a page.

mod layout;
mod lists;
mod p2l;
mod width;

use std::sync::Arc;

pub use layout::{Layout, Segment};
use lists::{Lists, Span, NO_SPAN};
pub use p2l::P2l;
use width::Leaves;

/// A slot value meaning "not mapped".
pub const UNMAPPED: u64 = u64::MAX;
/// A leaf entry meaning "where the layout put it".
const BASE: u64 = u64::MAX - 1;

const LEAF_BITS: u32 = 10;
const LEAF: usize = 1 << LEAF_BITS;

/// Logical page → physical slot.
pub struct L2p {
    /// Per leaf: its dense array, if it has one (4 B entries where every slot fits, else 8 B).
    dense: Leaves,
    /// Per leaf of a map over [`DENSE_UNITS`] (empty otherwise): the span of its sparse list
    /// in `lists`, `NO_SPAN` for none, or [`DENSE_LEAF`]. Such a map looks here first: a leaf
    /// whose list has turned dense says so, so that the others need not read `dense`'s
    /// directory too.
    sparse: Vec<Span>,
    /// Sparse leaves' lists: entries `offset << VALUE_BITS | value`, sorted (so by offset).
    lists: Lists,
    units: u64,
    mapped: u64,
    layout: Option<Arc<Layout>>,
}

/// Maps of up to this many units (128 GiB at 4 KiB) make every leaf dense: their leaves fill
/// quickly under random writes, and a list's searches and inserts would cost time for no
/// memory saved.
pub const DENSE_UNITS: u64 = 1 << 25;
/// In `L2p::sparse`: the leaf has a dense array (no span is this).
const DENSE_LEAF: Span = NO_SPAN - 1;
/// Bits of a sparse entry's value; the offset in its leaf sits above them.
const VALUE_BITS: u32 = 64 - LEAF_BITS;
const VALUE_MASK: u64 = (1 << VALUE_BITS) - 1;
/// A sparse leaf becomes dense past this many entries (an eighth of the leaf: the list then
/// holds 1 KiB, a dense leaf 4 or 8 KiB).
const SPARSE_MAX: usize = LEAF / 8;

/// Brings every cache line of `words` toward the cache at once (a hint): a sparse list (up
/// to 1 KiB that nothing else has touched lately, since random writes and GC's moves visit a
/// leaf rarely, where a binary search's probes each wait for the one before), or a layout
/// block's placed bits.
#[inline]
fn prefetch_lines(words: &[u64]) {
    for e in words.iter().step_by(8).chain(words.last()) {
        mem_prefetch::prefetch_read_data::<_, 3>(e);
    }
}

/// A slot as a sparse entry's value ("unmapped" as the all-ones value).
#[inline]
fn pack(off: usize, slot: u64) -> u64 {
    ((off as u64) << VALUE_BITS) | (slot & VALUE_MASK)
}

#[inline]
fn unpack(entry: u64) -> u64 {
    match entry & VALUE_MASK {
        VALUE_MASK => UNMAPPED,
        v => v,
    }
}

impl L2p {
    /// A map for `units` logical pages onto slots below `slots`, all unmapped.
    pub fn new(units: u64, slots: u64) -> Self {
        let n = units.div_ceil(LEAF as u64) as usize;
        let dense = Leaves::new(n, slots, units <= DENSE_UNITS);
        let sparse = if units > DENSE_UNITS { vec![NO_SPAN; n] } else { Vec::new() };
        L2p { dense, sparse, lists: Lists::default(), units, mapped: 0, layout: None }
    }

    /// Maps every unit as `layout` places it (on a map with nothing mapped).
    pub fn install(&mut self, layout: Arc<Layout>) {
        debug_assert_eq!(self.mapped, 0);
        self.mapped = layout.placed();
        self.layout = Some(layout);
    }

    #[inline]
    fn base(&self, lpn: u64) -> u64 {
        self.layout.as_ref().map_or(UNMAPPED, |l| l.slot_of(lpn))
    }

    /// The entry at `off` in list `span` (BASE when absent, or for `NO_SPAN`).
    #[inline(never)]
    fn listed(&self, span: Span, off: usize) -> u64 {
        self.lists.get(span).map_or(BASE, |list| list.binary_search_by_key(&(off as u64), |e| e >> VALUE_BITS).map_or(BASE, |at| unpack(list[at])))
    }

    /// The span of `leaf`'s sparse list, or `NO_SPAN`; `None` where the leaf's entries are in
    /// `dense` (made or not).
    #[inline]
    fn span(&self, leaf: usize) -> Option<Span> {
        self.sparse.get(leaf).copied().filter(|&s| s != DENSE_LEAF)
    }

    #[inline]
    pub fn get(&self, lpn: u64) -> u64 {
        let (leaf, off) = ((lpn >> LEAF_BITS) as usize, (lpn as usize) & (LEAF - 1));
        let s = match self.sparse.get(leaf).copied() {
            // A sparse leaf with no list: every unit where the layout put it (or unmapped).
            Some(NO_SPAN) => BASE,
            Some(span) if span != DENSE_LEAF => self.listed(span, off),
            _ => self.dense.get(leaf, off).unwrap_or(BASE),
        };
        if s == BASE {
            self.base(lpn)
        } else {
            s
        }
    }

    /// Where `lpn` is, as [`Self::get`] answers, for a hint: `UNMAPPED` beyond the map. The
    /// lines it reads (the entry, and for a unit where the layout put it the layout's) should
    /// be in the cache already, brought in by the earlier stages of hints.
    #[inline]
    pub fn find(&self, lpn: u64) -> u64 {
        if lpn < self.units {
            self.get(lpn)
        } else {
            UNMAPPED
        }
    }

    /// The entry of `lpn` as a dense leaf stores it (a slot or a marker; 0 without a dense
    /// leaf, "where the layout put it" in a flat map's leaf never written), to bring its cache
    /// line in ahead of use: no branch depends on what it loads, so the loads of a run of
    /// calls overlap.
    #[inline]
    pub fn peek(&self, lpn: u64) -> u64 {
        let (leaf, off) = ((lpn >> LEAF_BITS) as usize, (lpn as usize) & (LEAF - 1));
        self.dense.peek(leaf, off)
    }

    /// Brings the line of `lpn`'s dense entry toward the cache, or, in a sparse leaf, the lines
    /// of its list (a hint; nothing changes). The leaf's directory entries should be in the
    /// cache already ([`Self::prefetch_far`]): this reads them.
    #[inline]
    pub fn prefetch(&self, lpn: u64) {
        let (leaf, off) = ((lpn >> LEAF_BITS) as usize, (lpn as usize) & (LEAF - 1));
        match self.span(leaf) {
            Some(span) => {
                if let Some(list) = self.lists.get(span) {
                    prefetch_lines(list);
                }
            }
            None => {
                self.dense.prefetch(leaf, off);
            }
        }
    }

    /// Whether the map has sparse leaves (it is over [`DENSE_UNITS`] units): only then is an
    /// entry two dependent loads from the directory, whose first [`Self::prefetch_far`]
    /// brings in ahead (a dense map's directory is at most 256 KiB, and stays in the cache).
    #[inline]
    pub fn has_sparse(&self) -> bool {
        !self.sparse.is_empty()
    }

    /// Brings the line of `lpn`'s directory entry toward the cache: its sparse list's span on
    /// a map with sparse leaves, else the pointer to its dense leaf, or on a map dense
    /// throughout the entry itself (a hint, the first of two stages; a sparse leaf turned
    /// dense has its pointer read at the second).
    #[inline]
    pub fn prefetch_far(&self, lpn: u64) {
        let (leaf, off) = ((lpn >> LEAF_BITS) as usize, (lpn as usize) & (LEAF - 1));
        if self.sparse.is_empty() {
            self.dense.prefetch_leaf(leaf, off);
        } else if let Some(s) = self.sparse.get(leaf) {
            mem_prefetch::prefetch_read_data::<_, 3>(s);
        }
    }

    /// Brings toward the cache what the layout reads to say where it put `lpn` (a hint, in
    /// two stages: see `Layout::prefetch_slot`), for a write that will find its entry at
    /// the layout's place.
    #[inline]
    pub fn prefetch_base(&self, lpn: u64, second: bool) {
        if let Some(l) = &self.layout {
            l.prefetch_slot(lpn, second);
        }
    }

    /// Sets the slot of `lpn` and returns the previous one.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn set(&mut self, lpn: u64, slot: u64) -> u64 {
        debug_assert!(slot == UNMAPPED || slot < VALUE_MASK, "slot {slot} beyond a sparse entry");
        let (leaf, off) = ((lpn >> LEAF_BITS) as usize, (lpn as usize) & (LEAF - 1));
        let mut old = match self.span(leaf) {
            Some(span) => self.set_listed(leaf, span, off, slot),
            None => self.dense.replace(leaf, off, slot).unwrap_or_else(|| {
                self.dense.make(leaf, std::iter::once((off, slot)));
                BASE
            }),
        };
        if old == BASE {
            old = self.base(lpn);
        }
        match (old == UNMAPPED, slot == UNMAPPED) {
            (true, false) => self.mapped += 1,
            (false, true) => self.mapped -= 1,
            _ => {}
        }
        old
    }

    /// Sets the slot of `lpn`, which is mapped, to another slot (a GC move): unlike
    /// [`Self::set`], it neither counts mapped units nor works out where the layout put the
    /// unit, since the old slot is not wanted.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn remap(&mut self, lpn: u64, slot: u64) {
        debug_assert!(slot < VALUE_MASK, "slot {slot} beyond a sparse entry");
        let (leaf, off) = ((lpn >> LEAF_BITS) as usize, (lpn as usize) & (LEAF - 1));
        match self.span(leaf) {
            Some(span) => {
                self.set_listed(leaf, span, off, slot);
            }
            None => {
                if self.dense.replace(leaf, off, slot).is_none() {
                    self.dense.make(leaf, std::iter::once((off, slot)));
                }
            }
        }
    }

    /// Sets an entry of a leaf without a dense array: in its list `span` (made if it is
    /// `NO_SPAN`), which turns into a dense array once it holds more than [`SPARSE_MAX`]
    /// entries. Returns the previous entry (BASE if none).
    #[inline(never)]
    fn set_listed(&mut self, leaf: usize, span: Span, off: usize, slot: u64) -> u64 {
        let span = if span == NO_SPAN { self.lists.make() } else { span };
        let list = self.lists.get_mut(span);
        match list.binary_search_by_key(&(off as u64), |e| e >> VALUE_BITS) {
            Ok(at) => unpack(std::mem::replace(&mut list[at], pack(off, slot))),
            Err(at) => {
                let span = self.lists.insert(span, at, pack(off, slot));
                let list = self.lists.get(span).unwrap_or_default();
                if list.len() > SPARSE_MAX {
                    self.dense.make(leaf, list.iter().map(|&e| ((e >> VALUE_BITS) as usize, unpack(e))));
                    self.lists.free(span);
                    self.sparse[leaf] = DENSE_LEAF;
                } else {
                    self.sparse[leaf] = span;
                }
                BASE
            }
        }
    }

    /// Logical pages currently mapped.
    pub fn mapped(&self) -> u64 {
        self.mapped
    }

    /// Bytes held by the directory, the leaves and the layout.
    pub fn heap_bytes(&self) -> usize {
        self.dense.heap_bytes() + self.sparse.len() * std::mem::size_of::<Span>() + self.lists.heap_bytes() + self.layout.as_ref().map_or(0, |l| l.heap_bytes())
    }

    /// Every mapped `(lpn, slot)` (for integrity checks).
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..self.units).filter_map(|lpn| {
            let s = self.get(lpn);
            (s != UNMAPPED).then_some((lpn, s))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_map_allocates_only_touched_leaves() {
        let mut m = L2p::new(1 << 32, 1 << 33); // 16 TiB of 4 KiB pages, on 32 TiB of slots
        assert!(matches!(m.dense, Leaves::Wide(_)), "slots beyond 32 bits need wide entries");
        assert!(m.heap_bytes() <= 64 << 20, "16 B of directory per 1024 units");
        assert_eq!(m.get(123_456_789), UNMAPPED);
        assert_eq!(m.set(123_456_789, 7), UNMAPPED);
        assert_eq!(m.set(123_456_789, 8), 7);
        assert_eq!(m.get(123_456_789), 8);
        assert_eq!(m.mapped(), 1);
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![(123_456_789, 8)]);
        m.set(123_456_789, UNMAPPED);
        assert_eq!(m.mapped(), 0);
    }

    /// Sparse leaves, their promotion to dense ones and the reuse of emptied lists agree with
    /// a plain map, and scattered writes cost bytes per entry rather than a leaf each, with
    /// narrow entries and wide.
    #[test]
    fn sparse_and_dense_leaves_agree_with_a_plain_map() {
        for slots in [1 << 20, 1 << 40] {
            leaves_agree_with_a_plain_map(slots);
        }
    }

    fn leaves_agree_with_a_plain_map(slots: u64) {
        let mut m = L2p::new(1 << 30, slots);
        assert_eq!(matches!(m.dense, Leaves::Narrow(_)), slots < 1 << 32);
        let mut want = std::collections::HashMap::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for step in 0..300_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // A hot range whose leaves fill and turn dense, and scattered units that stay sparse.
            let lpn = if x.is_multiple_of(3) { (x >> 8) % 20_000 } else { (x >> 8) % (1 << 30) };
            let slot = if x.is_multiple_of(17) { UNMAPPED } else { step };
            let old = m.set(lpn, slot);
            assert_eq!(old, want.insert(lpn, slot).unwrap_or(UNMAPPED), "lpn {lpn} at step {step}");
        }
        for (&lpn, &slot) in &want {
            assert_eq!(m.get(lpn), slot);
            // A peek sees what a dense leaf stores, and 0 where the unit has no dense leaf.
            let dense = m.dense.has((lpn >> LEAF_BITS) as usize);
            assert_eq!(m.peek(lpn), if dense { slot } else { 0 });
        }
        assert_eq!(m.mapped(), want.values().filter(|&&s| s != UNMAPPED).count() as u64);
        let dense = (0..m.dense.len()).filter(|&l| m.dense.has(l)).count();
        assert!(dense > 0 && dense < 40, "{dense} dense leaves");
        // The hints, in every stage, take any unit (beyond the map too) and change nothing.
        assert!(m.has_sparse());
        for lpn in want.keys().copied().chain(0..5_000).chain([1 << 30, u64::MAX]) {
            m.prefetch_far(lpn);
            m.prefetch(lpn);
            m.prefetch_base(lpn, false);
            m.prefetch_base(lpn, true);
        }
        for (&lpn, &slot) in &want {
            assert_eq!((m.get(lpn), m.find(lpn)), (slot, slot));
        }
        assert_eq!((m.find(1 << 30), m.find(u64::MAX)), (UNMAPPED, UNMAPPED), "beyond the map");
        // A small map makes every leaf dense at once.
        let mut small = L2p::new(DENSE_UNITS, DENSE_UNITS);
        small.set(5, 1);
        assert!(small.lists.is_empty() && small.dense.has(0) && small.get(5) == 1 && small.get(6) == UNMAPPED);
        assert!(!small.has_sparse());
        // ~200k scattered entries in ~200k leaves: tens of bytes each, not a leaf.
        let entries_bytes = m.heap_bytes() - m.dense.len() * 16;
        assert!(entries_bytes < 200_000 * 80 + 40 * 8200, "{entries_bytes} B");
    }
}
