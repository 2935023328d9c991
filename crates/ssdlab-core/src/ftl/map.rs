//! The logical-to-physical map and its reverse, with memory that follows what was written.
//!
//! Preconditioning places logical units by rule, so their places are computed rather than
//! stored: a [`Layout`] says where a sequential fill (striped over the planes) or replica aging
//! (a keyed permutation over the valid slots of each block) put every unit. Only what the run
//! writes afterwards is stored:
//! - [`L2p`], logical page → physical slot, is a directory of leaves of 1024 units, made on the
//!   first write into their range. On a map of up to [`DENSE_UNITS`] units a leaf is a dense
//!   array of 8 KiB from the start (256 MiB at most). On a larger one a leaf starts as a sorted
//!   list of the entries written (8 B each: the offset packed above the slot) and becomes dense
//!   once it holds an eighth of its units. An entry holds the slot, "unmapped", or (in a dense
//!   leaf; in a list, by its absence) "where the layout put it". Random writes and GC moves
//!   over an aged 1 TiB drive touch nearly every leaf but few units of each, so they cost bytes
//!   per unit written, not 8 KiB per leaf touched. A 16 TiB drive costs 12 B of directory per
//!   4 MiB of logical space (at 4 KiB units).
//! - [`P2l`], physical slot → logical page, keeps one chunk of entries per block written during
//!   the run, recycled when the block is erased. A block the layout filled keeps only a bit per
//!   slot (still valid or not) until it is written again or erased.

use std::ops::Range;
use std::sync::Arc;

use super::Geometry;
use crate::sim::stream_seed;

/// A slot value meaning "not mapped".
pub const UNMAPPED: u64 = u64::MAX;
/// A leaf entry meaning "where the layout put it".
const BASE: u64 = u64::MAX - 1;

const LEAF_BITS: u32 = 10;
const LEAF: usize = 1 << LEAF_BITS;

/// A leaf of entries that all defer to the layout, built on the heap (8 KiB is a lot for
/// the stack).
fn new_leaf() -> Box<[u64; LEAF]> {
    vec![BASE; LEAF].into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!("the vector has LEAF entries"))
}

/// One pool's share of a sequential fill: units `lpns` striped page by page over the planes in
/// striping order, into the pool's blocks of each plane (in-plane indices `span`), lowest first.
#[derive(Clone, Debug)]
pub struct Segment {
    pub lpns: Range<u64>,
    pub span: Range<u32>,
}

/// Where preconditioning put the logical units, computed on demand.
pub struct Layout {
    spp: u64,
    ppb: u64,
    spb: u64,
    bpp: u64,
    kind: Kind,
    /// The blocks the layout filled (in whole or part); a block's position here is its index
    /// in the reverse map's bitmaps.
    blocks: Vec<u32>,
    placed: u64,
}

enum Kind {
    /// A sequential fill, striped page by page over the planes (as the FTL's host stream
    /// writes a fresh drive).
    Striped { order: Vec<u32>, pos: Vec<u32>, segments: Vec<Segment> },
    /// Replica aging: the k-th placed slot, in the order of `blocks` and by offset within a
    /// block, holds unit `perm(k)`. Block `i`'s placed slots are the bits of
    /// `placed[i * words..]`, and its first one is the `kstart[i]`-th.
    Scattered { perm: Permutation, kstart: Vec<u64>, placed: Vec<u64>, words: usize },
}

impl Layout {
    /// A sequential fill of each segment, striped in `order` (a permutation of the planes).
    pub fn striped(g: &Geometry, order: &[u32], segments: Vec<Segment>) -> Self {
        let mut pos = vec![0u32; order.len()];
        for (j, &p) in order.iter().enumerate() {
            pos[p as usize] = j as u32;
        }
        let (spp, planes) = (u64::from(g.slots_per_page), order.len() as u64);
        let spb = u64::from(g.slots_per_block());
        let mut blocks = Vec::new();
        for s in &segments {
            let pages = (s.lpns.end - s.lpns.start).div_ceil(spp);
            for (j, &plane) in order.iter().enumerate() {
                let on_plane = pages / planes + u64::from((j as u64) < pages % planes);
                let used = (on_plane * spp).div_ceil(spb);
                blocks.extend((0..used as u32).map(|b| plane * g.blocks_per_plane + s.span.start + b));
            }
        }
        let placed = segments.iter().map(|s| s.lpns.end - s.lpns.start).sum();
        Layout { spp, ppb: u64::from(g.pages_per_block), spb, bpp: u64::from(g.blocks_per_plane), kind: Kind::Striped { order: order.to_vec(), pos, segments }, blocks, placed }
    }

    /// Replica aging's placement: `blocks` in order, block `i` holding its placed slots at the
    /// set bits of `placed[i * words..(i + 1) * words]`, the k-th placed slot holding unit
    /// `perm(k)` of a permutation of `[0, units)` keyed by `seed`.
    pub fn scattered(g: &Geometry, blocks: Vec<u32>, placed: Vec<u64>, units: u64, seed: u64) -> Self {
        let spb = u64::from(g.slots_per_block());
        let words = spb.div_ceil(64) as usize;
        let mut kstart = Vec::with_capacity(blocks.len() + 1);
        let mut k = 0u64;
        for i in 0..blocks.len() {
            kstart.push(k);
            k += placed[i * words..(i + 1) * words].iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
        }
        kstart.push(k);
        Layout {
            spp: u64::from(g.slots_per_page),
            ppb: u64::from(g.pages_per_block),
            spb,
            bpp: u64::from(g.blocks_per_plane),
            kind: Kind::Scattered { perm: Permutation::new(units, seed), kstart, placed, words },
            blocks,
            placed: k,
        }
    }

    /// Units the layout places.
    pub fn placed(&self) -> u64 {
        self.placed
    }

    /// The blocks it fills, in bitmap order.
    pub fn blocks(&self) -> &[u32] {
        &self.blocks
    }

    /// The slot the layout gave `lpn` (`UNMAPPED` if none).
    #[inline]
    pub fn slot_of(&self, lpn: u64) -> u64 {
        match &self.kind {
            Kind::Striped { order, segments, .. } => {
                let Some(s) = segments.iter().find(|s| s.lpns.contains(&lpn)) else { return UNMAPPED };
                let i = lpn - s.lpns.start;
                let (page, unit) = (i / self.spp, i % self.spp);
                let planes = order.len() as u64;
                let (j, row) = ((page % planes) as usize, page / planes);
                let block = u64::from(order[j]) * self.bpp + u64::from(s.span.start) + row / self.ppb;
                block * self.spb + (row % self.ppb) * self.spp + unit
            }
            Kind::Scattered { perm, kstart, placed, words } => {
                if lpn >= perm.n {
                    return UNMAPPED;
                }
                let k = perm.invert(lpn);
                let i = block_of_rank(kstart, k);
                let offset = select(&placed[i * words..(i + 1) * words], k - kstart[i]);
                u64::from(self.blocks[i]) * self.spb + offset
            }
        }
    }

    /// The unit the layout put at `offset` of `block`, the `index`-th of its blocks
    /// (`UNMAPPED` if none).
    #[inline]
    fn unit_at(&self, index: usize, block: u32, offset: u32) -> u64 {
        match &self.kind {
            Kind::Striped { pos, segments, .. } => {
                let (plane, inplane) = (u64::from(block) / self.bpp, (u64::from(block) % self.bpp) as u32);
                let Some(s) = segments.iter().find(|s| s.span.contains(&inplane)) else { return UNMAPPED };
                let (page, unit) = (u64::from(offset) / self.spp, u64::from(offset) % self.spp);
                let row = u64::from(inplane - s.span.start) * self.ppb + page;
                let i = (row * pos.len() as u64 + u64::from(pos[plane as usize])) * self.spp + unit;
                if i < s.lpns.end - s.lpns.start {
                    s.lpns.start + i
                } else {
                    UNMAPPED
                }
            }
            Kind::Scattered { perm, kstart, placed, words } => {
                let bits = &placed[index * words..(index + 1) * words];
                let o = offset as usize;
                if bits[o / 64] >> (o % 64) & 1 == 0 {
                    return UNMAPPED;
                }
                perm.apply(kstart[index] + rank(bits, offset))
            }
        }
    }

    /// Writes the `index`-th block's placed slots as bits into `bits`.
    fn placed_bits(&self, index: usize, bits: &mut [u64]) {
        match &self.kind {
            Kind::Scattered { placed, words, .. } => bits.copy_from_slice(&placed[index * words..(index + 1) * words]),
            Kind::Striped { .. } => {
                let block = self.blocks[index];
                // A striped block is placed up to some slot: all of it but the last one filled.
                let end = if self.unit_at(index, block, (self.spb - 1) as u32) == UNMAPPED {
                    (0..self.spb as u32).find(|&o| self.unit_at(index, block, o) == UNMAPPED).unwrap_or(0)
                } else {
                    self.spb as u32
                };
                let end = end as usize;
                bits.fill(0);
                bits[..end / 64].fill(u64::MAX);
                if !end.is_multiple_of(64) {
                    bits[end / 64] = (1u64 << (end % 64)) - 1;
                }
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        self.blocks.len() * 4
            + match &self.kind {
                Kind::Striped { order, .. } => order.len() * 8,
                Kind::Scattered { kstart, placed, .. } => kstart.len() * 8 + placed.len() * 8,
            }
    }
}

/// The block `i` with `kstart[i] <= k < kstart[i + 1]` (`kstart` ascending, from 0 to the
/// total). Blocks hold about as many placed units each, so the search starts where `k` would
/// fall if they held exactly as many, and gallops from there: a few probes near one place
/// instead of a binary search's cache misses across the whole array.
#[inline]
fn block_of_rank(kstart: &[u64], k: u64) -> usize {
    let n = kstart.len() - 1;
    let total = kstart[n].max(1);
    let guess = ((u128::from(k) * n as u128) / u128::from(total)) as usize;
    let guess = guess.min(n - 1);
    let (lo, hi) = if kstart[guess] <= k {
        let mut step = 1;
        let mut lo = guess;
        while lo + step < n && kstart[lo + step] <= k {
            lo += step;
            step *= 2;
        }
        (lo, (lo + step).min(n))
    } else {
        let mut step = 1;
        let mut hi = guess;
        while hi >= step && kstart[hi - step] > k {
            hi -= step;
            step *= 2;
        }
        (hi.saturating_sub(step), hi)
    };
    lo + kstart[lo..hi].partition_point(|&s| s <= k) - 1
}

/// Set bits of `bits` below bit `offset`.
#[inline]
fn rank(bits: &[u64], offset: u32) -> u64 {
    let (w, b) = ((offset / 64) as usize, offset % 64);
    let below = bits[..w].iter().map(|x| u64::from(x.count_ones())).sum::<u64>();
    below + if b == 0 { 0 } else { u64::from((bits[w] & ((1u64 << b) - 1)).count_ones()) }
}

/// The position of the `r`-th set bit of `bits` (there must be more than `r`).
#[inline]
fn select(bits: &[u64], mut r: u64) -> u64 {
    for (w, &x) in bits.iter().enumerate() {
        let n = u64::from(x.count_ones());
        if r < n {
            let mut x = x;
            for _ in 0..r {
                x &= x - 1;
            }
            return w as u64 * 64 + u64::from(x.trailing_zeros());
        }
        r -= n;
    }
    unreachable!("select past the last set bit")
}

/// Logical page → physical slot.
pub struct L2p {
    /// Per leaf: its dense array, if it has one.
    dense: Vec<Option<Box<[u64; LEAF]>>>,
    /// Per leaf of a map over [`DENSE_UNITS`] (empty otherwise): [`NO_LIST`] or the number of
    /// its sparse list in `lists`.
    sparse: Vec<u32>,
    /// Sparse leaves: entries `offset << VALUE_BITS | value`, sorted (so by offset).
    lists: Vec<Vec<u64>>,
    /// Lists emptied by their leaf becoming dense, for reuse.
    spare_lists: Vec<u32>,
    units: u64,
    mapped: u64,
    layout: Option<Arc<Layout>>,
}

/// Maps of up to this many units (128 GiB at 4 KiB) make every leaf dense: their leaves fill
/// quickly under random writes, and a list's searches and inserts would cost time for no
/// memory saved.
pub const DENSE_UNITS: u64 = 1 << 25;
const NO_LIST: u32 = u32::MAX;
/// Bits of a sparse entry's value; the offset in its leaf sits above them.
const VALUE_BITS: u32 = 64 - LEAF_BITS;
const VALUE_MASK: u64 = (1 << VALUE_BITS) - 1;
/// A sparse leaf becomes dense past this many entries (then 8 B each either way, give or take
/// the list's slack).
const SPARSE_MAX: usize = LEAF / 8;

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
    /// A map for `units` logical pages, all unmapped.
    pub fn new(units: u64) -> Self {
        let n = units.div_ceil(LEAF as u64) as usize;
        let mut dense = Vec::with_capacity(n);
        dense.resize_with(n, || None);
        let sparse = if units > DENSE_UNITS { vec![NO_LIST; n] } else { Vec::new() };
        L2p { dense, sparse, lists: Vec::new(), spare_lists: Vec::new(), units, mapped: 0, layout: None }
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

    /// The entry of `lpn` in a sparse list (BASE when absent or the leaf has none).
    #[inline(never)]
    fn listed(&self, leaf: usize, off: usize) -> u64 {
        match self.sparse.get(leaf) {
            None | Some(&NO_LIST) => BASE,
            Some(&i) => {
                let list = &self.lists[i as usize];
                list.binary_search_by_key(&(off as u64), |e| e >> VALUE_BITS).map_or(BASE, |at| unpack(list[at]))
            }
        }
    }

    #[inline]
    pub fn get(&self, lpn: u64) -> u64 {
        let (leaf, off) = ((lpn >> LEAF_BITS) as usize, (lpn as usize) & (LEAF - 1));
        let s = match &self.dense[leaf] {
            Some(l) => l[off],
            None => self.listed(leaf, off),
        };
        if s == BASE {
            self.base(lpn)
        } else {
            s
        }
    }

    /// The entry of `lpn` as a dense leaf stores it (a slot or a marker; 0 without a dense
    /// leaf), to bring its cache line in ahead of use: no branch depends on what it loads, so
    /// the loads of a run of calls overlap.
    #[inline]
    pub fn peek(&self, lpn: u64) -> u64 {
        let (leaf, off) = ((lpn >> LEAF_BITS) as usize, (lpn as usize) & (LEAF - 1));
        self.dense.get(leaf).and_then(Option::as_ref).map_or(0, |l| l[off])
    }

    /// Sets the slot of `lpn` and returns the previous one.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn set(&mut self, lpn: u64, slot: u64) -> u64 {
        debug_assert!(slot == UNMAPPED || slot < VALUE_MASK, "slot {slot} beyond a sparse entry");
        let (leaf, off) = ((lpn >> LEAF_BITS) as usize, (lpn as usize) & (LEAF - 1));
        let mut old = match &mut self.dense[leaf] {
            Some(l) => std::mem::replace(&mut l[off], slot),
            None if self.sparse.is_empty() => std::mem::replace(&mut self.dense[leaf].insert(new_leaf())[off], slot),
            None => self.set_listed(leaf, off, slot),
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

    /// Sets an entry of a leaf without a dense array: in its list (made if need be), which
    /// turns into a dense array once it holds more than [`SPARSE_MAX`] entries. Returns the
    /// previous entry (BASE if none).
    #[inline(never)]
    fn set_listed(&mut self, leaf: usize, off: usize, slot: u64) -> u64 {
        if self.sparse[leaf] == NO_LIST {
            self.sparse[leaf] = self.spare_lists.pop().unwrap_or_else(|| {
                self.lists.push(Vec::new());
                (self.lists.len() - 1) as u32
            });
        }
        let i = self.sparse[leaf] as usize;
        let list = &mut self.lists[i];
        match list.binary_search_by_key(&(off as u64), |e| e >> VALUE_BITS) {
            Ok(at) => unpack(std::mem::replace(&mut list[at], pack(off, slot))),
            Err(at) => {
                if list.len() == list.capacity() {
                    // Grow by half: a list's slack stays small.
                    list.reserve_exact((list.len() / 2).max(4));
                }
                list.insert(at, pack(off, slot));
                if list.len() > SPARSE_MAX {
                    let mut dense = new_leaf();
                    for &e in list.iter() {
                        dense[(e >> VALUE_BITS) as usize] = unpack(e);
                    }
                    self.lists[i] = Vec::new();
                    self.spare_lists.push(i as u32);
                    self.sparse[leaf] = NO_LIST;
                    self.dense[leaf] = Some(dense);
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
        self.dense.len() * 8
            + self.sparse.len() * 4
            + self.dense.iter().filter(|l| l.is_some()).count() * LEAF * 8
            + self.lists.iter().map(|l| l.capacity() * 8 + 24).sum::<usize>()
            + self.layout.as_ref().map_or(0, |l| l.heap_bytes())
    }

    /// Every mapped `(lpn, slot)` (for integrity checks).
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..self.units).filter_map(|lpn| {
            let s = self.get(lpn);
            (s != UNMAPPED).then_some((lpn, s))
        })
    }
}

/// Physical slot → logical page: a chunk of `slots_per_block` entries for each block written
/// during the run (recycled when it is erased), and for each block the layout filled a bit per
/// slot that says whether the unit placed there is still valid. Above [`EAGER_BITMAPS`] bytes
/// of bits, a block gets its bits only once its units start to be overwritten (until then the
/// layout answers: a filled 16 TiB drive would need 512 MiB of bits at 4 KiB units).
pub struct P2l {
    chunk: usize,
    index: Vec<u32>,
    pool: Vec<u64>,
    spare: Vec<u32>,
    layout: Option<Arc<Layout>>,
    /// Every layout block has its bitmap, the `i`-th in `valid`.
    eager: bool,
    /// Otherwise, per layout block: the number of its bitmap in `valid`, or [`NO_BITMAP`] while
    /// every unit placed in it is still valid.
    bitmap_of: Vec<u32>,
    /// Bitmaps of valid placed slots, `words` words each.
    valid: Vec<u64>,
    /// Bitmaps of erased blocks, for reuse.
    spare_bitmaps: Vec<u32>,
    words: usize,
}

const NO_BITMAP: u32 = u32::MAX;
/// Layouts whose valid bits take at most this many bytes (a 1 TiB drive's 32 MiB) hold them all
/// from the start: a lookup then needs no indirection.
pub const EAGER_BITMAPS: usize = 64 << 20;

const NO_CHUNK: u32 = u32::MAX;
/// Marks an index entry as a layout block's (its bitmap number in the low bits).
const LAID: u32 = 1 << 31;

impl P2l {
    pub fn new(blocks: usize, slots_per_block: usize) -> Self {
        P2l {
            chunk: slots_per_block,
            index: vec![NO_CHUNK; blocks],
            pool: Vec::new(),
            spare: Vec::new(),
            layout: None,
            eager: false,
            bitmap_of: Vec::new(),
            valid: Vec::new(),
            spare_bitmaps: Vec::new(),
            words: slots_per_block.div_ceil(64),
        }
    }

    /// Takes the layout's blocks as filled as it says (they must hold nothing yet).
    pub fn install(&mut self, layout: Arc<Layout>) {
        let n = layout.blocks().len();
        self.eager = n * self.words * 8 <= EAGER_BITMAPS;
        if self.eager {
            self.valid = vec![0; n * self.words];
        } else {
            self.bitmap_of = vec![NO_BITMAP; n];
        }
        for (i, &b) in layout.blocks().iter().enumerate() {
            debug_assert_eq!(self.index[b as usize], NO_CHUNK);
            if self.eager {
                layout.placed_bits(i, &mut self.valid[i * self.words..(i + 1) * self.words]);
            }
            self.index[b as usize] = LAID | i as u32;
        }
        self.layout = Some(layout);
    }

    fn new_chunk(&mut self) -> u32 {
        if let Some(c) = self.spare.pop() {
            let s = c as usize * self.chunk;
            self.pool[s..s + self.chunk].fill(UNMAPPED);
            c
        } else {
            self.pool.resize(self.pool.len() + self.chunk, UNMAPPED);
            (self.pool.len() / self.chunk - 1) as u32
        }
    }

    /// Gives `block` an all-invalid chunk (when it is opened for writing).
    pub fn open(&mut self, block: u32) {
        debug_assert_eq!(self.index[block as usize], NO_CHUNK);
        self.index[block as usize] = self.new_chunk();
    }

    /// Releases the chunk (or bitmap) of an erased block.
    pub fn close(&mut self, block: u32) {
        let c = std::mem::replace(&mut self.index[block as usize], NO_CHUNK);
        if c != NO_CHUNK && c & LAID == 0 {
            self.spare.push(c);
        } else if c != NO_CHUNK && !self.eager {
            let b = std::mem::replace(&mut self.bitmap_of[(c & !LAID) as usize], NO_BITMAP);
            if b != NO_BITMAP {
                self.spare_bitmaps.push(b);
            }
        }
    }

    #[inline]
    fn laid(&self, i: usize, block: u32, offset: u32) -> u64 {
        let (o, b) = (offset as usize, if self.eager { i as u32 } else { self.bitmap_of[i] });
        if b != NO_BITMAP && self.valid[b as usize * self.words + o / 64] >> (o % 64) & 1 == 0 {
            return UNMAPPED;
        }
        self.layout.as_ref().map_or(UNMAPPED, |l| l.unit_at(i, block, offset))
    }

    #[inline]
    pub fn get(&self, block: u32, offset: u32) -> u64 {
        let c = self.index[block as usize];
        if c == NO_CHUNK {
            UNMAPPED
        } else if c & LAID != 0 {
            self.laid((c & !LAID) as usize, block, offset)
        } else {
            self.pool[c as usize * self.chunk + offset as usize]
        }
    }

    /// Appends `(offset, unit)` for every valid slot of `block` among its first `slots`, in
    /// slot order: what [`P2l::get`] answers slot by slot, read from the block's chunk in one
    /// pass when it has one.
    pub fn valid_into(&self, block: u32, slots: u32, out: &mut Vec<(u32, u64)>) {
        let c = self.index[block as usize];
        if c == NO_CHUNK || c & LAID != 0 {
            out.extend((0..slots).map(|o| (o, self.get(block, o))).filter(|&(_, u)| u != UNMAPPED));
            return;
        }
        let start = c as usize * self.chunk;
        let units = &self.pool[start..start + self.chunk.min(slots as usize)];
        out.extend(units.iter().enumerate().filter(|&(_, &u)| u != UNMAPPED).map(|(o, &u)| (o as u32, u)));
    }

    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn set(&mut self, block: u32, offset: u32, lpn: u64) {
        let mut c = self.index[block as usize];
        if c & LAID != 0 && c != NO_CHUNK {
            let i = (c & !LAID) as usize;
            if lpn == UNMAPPED {
                let b = self.bitmap(i) as usize;
                let o = offset as usize;
                self.valid[b * self.words + o / 64] &= !(1 << (o % 64));
                return;
            }
            // A layout block written again (the open block a fill left): give it a chunk.
            let chunk = self.new_chunk();
            for o in 0..self.chunk as u32 {
                self.pool[chunk as usize * self.chunk + o as usize] = self.laid(i, block, o);
            }
            self.index[block as usize] = chunk;
            c = chunk;
        }
        self.pool[c as usize * self.chunk + offset as usize] = lpn;
    }

    /// What the reverse map stores for a slot of a block written during the run (0 for other
    /// blocks), to bring its cache line in ahead of use without computing a layout's answer:
    /// no branch depends on what it loads.
    #[inline]
    pub fn peek(&self, block: u32, offset: u32) -> u64 {
        let c = self.index.get(block as usize).copied().unwrap_or(NO_CHUNK);
        let at = if c & LAID == 0 { c as usize * self.chunk + offset as usize } else { usize::MAX };
        self.pool.get(at).copied().unwrap_or(0)
    }

    /// The bitmap of layout block `i`, made from the layout the first time one of its units
    /// is overwritten.
    fn bitmap(&mut self, i: usize) -> u32 {
        if self.eager {
            return i as u32;
        }
        if self.bitmap_of[i] != NO_BITMAP {
            return self.bitmap_of[i];
        }
        let w = self.words;
        let b = self.spare_bitmaps.pop().unwrap_or_else(|| {
            self.valid.resize(self.valid.len() + w, 0);
            (self.valid.len() / w - 1) as u32
        });
        if let Some(l) = &self.layout {
            l.placed_bits(i, &mut self.valid[b as usize * w..(b as usize + 1) * w]);
        }
        self.bitmap_of[i] = b;
        b
    }

    pub fn heap_bytes(&self) -> usize {
        self.index.len() * 4 + self.pool.capacity() * 8 + self.spare.capacity() * 4 + self.bitmap_of.capacity() * 4 + self.valid.capacity() * 8 + self.spare_bitmaps.capacity() * 4
    }
}

/// A keyed pseudo-random bijection of `[0, n)`: a four-round Feistel network on the smallest
/// even number of bits that covers `n`, walking cycles until the value falls below `n`.
pub struct Permutation {
    n: u64,
    half: u32,
    keys: [u64; 4],
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Self {
        let bits = 64 - n.max(2).saturating_sub(1).leading_zeros();
        let half = bits.div_ceil(2).max(1);
        let keys = [0, 1, 2, 3].map(|i| stream_seed(seed, 0xFE15_0000 + i) as u64);
        Permutation { n, half, keys }
    }

    #[inline]
    fn round(x: u64, key: u64) -> u64 {
        let mut z = x ^ key;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[inline]
    fn once(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half) - 1;
        let (mut l, mut r) = (x >> self.half, x & mask);
        for key in self.keys {
            let t = l ^ (Self::round(r, key) & mask);
            l = r;
            r = t;
        }
        (l << self.half) | r
    }

    #[inline]
    fn once_inverse(&self, y: u64) -> u64 {
        let mask = (1u64 << self.half) - 1;
        let (mut l, mut r) = (y >> self.half, y & mask);
        for key in self.keys.into_iter().rev() {
            let t = r ^ (Self::round(l, key) & mask);
            r = l;
            l = t;
        }
        (l << self.half) | r
    }

    pub fn apply(&self, mut x: u64) -> u64 {
        loop {
            x = self.once(x);
            if x < self.n {
                return x;
            }
        }
    }

    /// The `x` with `apply(x) == y`.
    pub fn invert(&self, mut y: u64) -> u64 {
        loop {
            y = self.once_inverse(y);
            if y < self.n {
                return y;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_map_allocates_only_touched_leaves() {
        let mut m = L2p::new(1 << 32); // 16 TiB of 4 KiB pages
        assert!(m.heap_bytes() <= 48 << 20, "12 B of directory per 1024 units");
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
    /// a plain map, and scattered writes cost bytes per entry rather than a leaf each.
    #[test]
    fn sparse_and_dense_leaves_agree_with_a_plain_map() {
        let mut m = L2p::new(1 << 30);
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
            let dense = m.dense[(lpn >> LEAF_BITS) as usize].is_some();
            assert_eq!(m.peek(lpn), if dense { slot } else { 0 });
        }
        assert_eq!(m.mapped(), want.values().filter(|&&s| s != UNMAPPED).count() as u64);
        let dense = m.dense.iter().filter(|l| l.is_some()).count();
        assert!(dense > 0 && dense < 40, "{dense} dense leaves");
        // A small map makes every leaf dense at once.
        let mut small = L2p::new(DENSE_UNITS);
        small.set(5, 1);
        assert!(small.lists.is_empty() && small.dense[0].is_some() && small.get(5) == 1 && small.get(6) == UNMAPPED);
        // ~200k scattered entries in ~200k leaves: tens of bytes each, not 8 KiB.
        let entries_bytes = m.heap_bytes() - m.dense.len() * 12;
        assert!(entries_bytes < 200_000 * 80 + 40 * 8200, "{entries_bytes} B");
    }

    #[test]
    fn permutation_inverts() {
        for n in [1u64, 2, 3, 1000, 4097] {
            let p = Permutation::new(n, 9);
            let mut seen = vec![false; n as usize];
            for k in 0..n {
                let v = p.apply(k);
                assert!(v < n && !seen[v as usize], "n {n}: {k} -> {v}");
                seen[v as usize] = true;
                assert_eq!(p.invert(v), k);
            }
        }
    }

    #[test]
    fn the_block_of_a_rank_is_found_from_any_guess() {
        // Uneven blocks, empty ones included.
        let sizes = [5u64, 0, 0, 9, 1, 30, 0, 2, 7, 7];
        let mut kstart = vec![0u64];
        for s in sizes {
            kstart.push(kstart.last().unwrap() + s);
        }
        for k in 0..*kstart.last().unwrap() {
            let want = kstart.partition_point(|&s| s <= k) - 1;
            assert_eq!(block_of_rank(&kstart, k), want, "k {k}");
        }
    }

    #[test]
    fn rank_and_select_agree() {
        let bits = [0b1011u64, 0, 1 << 63 | 1];
        let set: Vec<u64> = (0..192).filter(|&o| bits[o / 64] >> (o % 64) & 1 == 1).map(|o| o as u64).collect();
        for (r, &o) in set.iter().enumerate() {
            assert_eq!(select(&bits, r as u64), o);
            assert_eq!(rank(&bits, o as u32), r as u64);
        }
    }

    #[test]
    fn p2l_chunks_are_recycled() {
        let mut p = P2l::new(4, 8);
        p.open(2);
        p.set(2, 3, 99);
        assert_eq!(p.get(2, 3), 99);
        assert_eq!((p.peek(2, 3), p.peek(1, 3), p.peek(9, 0)), (99, 0, 0), "a peek reads written blocks only");
        p.close(2);
        p.open(1);
        assert_eq!(p.get(1, 3), UNMAPPED, "a recycled chunk starts invalid");
        assert_eq!(p.pool.len(), 8);
    }
}
