//! The reverse map: physical slot → logical page.

use std::sync::Arc;

use super::width::Entries;
use super::{Layout, UNMAPPED};

/// Physical slot → logical page: a chunk of `slots_per_block` entries for each block written
/// during the run (recycled when it is erased), with a bit per entry that says whether it is
/// valid, and for each block the layout filled a bit per slot that says whether the unit
/// placed there is still valid. An overwrite clears only the bit: a 32 GiB drive's bits take
/// 1 MiB where its entries take 32 MiB, so the random write that each host overwrite makes
/// lands in a line that is far likelier to be cached. Above `EAGER_BITMAPS` bytes
/// of bits, a block gets its bits only once its units start to be overwritten (until then the
/// layout answers: a filled 16 TiB drive would need 512 MiB of bits at 4 KiB units).
pub struct P2l {
    chunk: usize,
    index: Vec<u32>,
    /// The chunks (4 B entries where every unit fits, else 8 B). An entry whose bit in `live`
    /// is clear holds whatever it last held: nothing reads it but [`Self::peek`], a hint.
    pool: Entries,
    /// Per chunk, `words` words: a bit per entry, set while the entry is valid.
    live: Vec<u64>,
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
    /// Blocks opened for writing get a chunk; off while a replica ages by valid counts, which
    /// writes no entry and reads none.
    keeping: bool,
}

const NO_BITMAP: u32 = u32::MAX;
/// Layouts whose valid bits take at most this many bytes (a 1 TiB drive's 32 MiB) hold them all
/// from the start: a lookup then needs no indirection.
pub const EAGER_BITMAPS: usize = 64 << 20;

const NO_CHUNK: u32 = u32::MAX;
/// Marks an index entry as a layout block's (its bitmap number in the low bits).
const LAID: u32 = 1 << 31;

impl P2l {
    /// A reverse map of `blocks` blocks of `slots_per_block` slots, for units below `units`.
    pub fn new(blocks: usize, slots_per_block: usize, units: u64) -> Self {
        P2l {
            chunk: slots_per_block,
            index: vec![NO_CHUNK; blocks],
            pool: Entries::new(units),
            live: Vec::new(),
            spare: Vec::new(),
            layout: None,
            eager: false,
            bitmap_of: Vec::new(),
            valid: Vec::new(),
            spare_bitmaps: Vec::new(),
            words: slots_per_block.div_ceil(64),
            keeping: true,
        }
    }

    /// Takes the layout's blocks as filled as it says (they must hold nothing yet).
    pub fn install(&mut self, layout: Arc<Layout>) {
        let eager = layout.blocks().len() * self.words * 8 <= EAGER_BITMAPS;
        self.install_with(layout, eager);
    }

    /// [`Self::install`], with every layout block's bitmap made now (`eager`) or on its first
    /// overwrite.
    fn install_with(&mut self, layout: Arc<Layout>, eager: bool) {
        let n = layout.blocks().len();
        self.eager = eager;
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

    /// A chunk with no valid entry.
    fn new_chunk(&mut self) -> u32 {
        if let Some(c) = self.spare.pop() {
            let w = c as usize * self.words;
            self.live[w..w + self.words].fill(0);
            c
        } else {
            self.pool.grow(self.chunk);
            self.live.resize(self.live.len() + self.words, 0);
            (self.pool.len() / self.chunk - 1) as u32
        }
    }

    /// Whether entry `offset` of chunk `c` is valid.
    #[inline]
    fn is_live(&self, c: u32, offset: u32) -> bool {
        let o = offset as usize;
        self.live[c as usize * self.words + o / 64] >> (o % 64) & 1 != 0
    }

    /// Sets entry `offset` of chunk `c` to `lpn` ([`UNMAPPED`]: clears only its bit).
    #[inline]
    fn put(&mut self, c: u32, offset: u32, lpn: u64) {
        let o = offset as usize;
        let w = &mut self.live[c as usize * self.words + o / 64];
        if lpn == UNMAPPED {
            *w &= !(1 << (o % 64));
        } else {
            *w |= 1 << (o % 64);
            self.pool.set(c as usize * self.chunk + o, lpn);
        }
    }

    /// Gives `block` an all-invalid chunk (when it is opened for writing).
    pub fn open(&mut self, block: u32) {
        debug_assert_eq!(self.index[block as usize], NO_CHUNK);
        if self.keeping {
            self.index[block as usize] = self.new_chunk();
        }
    }

    /// Blocks opened from now on get no chunk: for a drive that will only be read for its
    /// counts (a replica ageing by valid counts), whose entries nothing writes or reads.
    pub fn stop_keeping(&mut self) {
        self.keeping = false;
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

    /// The number of the `i`-th layout block's bitmap in `valid` ([`NO_BITMAP`] while every
    /// unit placed in it is still valid).
    #[inline]
    fn bitmap_number(&self, i: usize) -> u32 {
        if self.eager {
            i as u32
        } else {
            self.bitmap_of[i]
        }
    }

    #[inline]
    fn laid(&self, i: usize, block: u32, offset: u32) -> u64 {
        if !self.laid_valid(i, offset) {
            return UNMAPPED;
        }
        self.layout.as_ref().map_or(UNMAPPED, |l| l.unit_at(i, block, offset))
    }

    /// Whether slot `offset` of the `i`-th laid block is still valid, if the layout placed a
    /// unit there (every slot is until its block's first invalidation makes it a bitmap).
    #[inline]
    fn laid_valid(&self, i: usize, offset: u32) -> bool {
        let (o, b) = (offset as usize, self.bitmap_number(i));
        b == NO_BITMAP || self.valid[b as usize * self.words + o / 64] >> (o % 64) & 1 != 0
    }

    /// Brings `block`'s chunk index toward the cache (a hint).
    #[inline]
    pub fn prefetch(&self, block: u32) {
        if let Some(c) = self.index.get(block as usize) {
            mem_prefetch::prefetch_read_data::<_, 3>(c);
        }
    }

    /// Brings toward the cache the word that overwriting the unit at `offset` of `block`
    /// changes: its bit in the block's chunk, or in a layout block's bitmap (a hint, the stage
    /// after [`Self::prefetch`]: it reads the block's index entry).
    #[inline]
    pub fn prefetch_slot(&self, block: u32, offset: u32) {
        let Some(&c) = self.index.get(block as usize) else { return };
        if c == NO_CHUNK {
            return;
        }
        let o = offset as usize;
        if c & LAID == 0 {
            if let Some(w) = self.live.get(c as usize * self.words + o / 64) {
                mem_prefetch::prefetch_read_data::<_, 3>(w);
            }
            return;
        }
        let b = self.bitmap_number((c & !LAID) as usize);
        if b != NO_BITMAP {
            if let Some(w) = self.valid.get(b as usize * self.words + o / 64) {
                mem_prefetch::prefetch_read_data::<_, 3>(w);
            }
        }
    }

    // Inlined where GC scans a victim slot by slot: left to its own judgement, the compiler
    // calls it out of line there.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn get(&self, block: u32, offset: u32) -> u64 {
        let c = self.index[block as usize];
        if c == NO_CHUNK {
            UNMAPPED
        } else if c & LAID != 0 {
            self.laid((c & !LAID) as usize, block, offset)
        } else if self.is_live(c, offset) {
            self.pool.get(c as usize * self.chunk + offset as usize)
        } else {
            UNMAPPED
        }
    }

    /// Appends `(offset, unit)` for every valid slot of `block` among its first `slots`, in
    /// slot order: what [`P2l::get`] answers slot by slot, read from the block's chunk in one
    /// pass when it has one.
    pub fn valid_into(&self, block: u32, slots: u32, out: &mut Vec<(u32, u64)>) {
        let c = self.index[block as usize];
        if c == NO_CHUNK {
            return;
        }
        if c & LAID != 0 {
            let i = (c & !LAID) as usize;
            let b = self.bitmap_number(i);
            let valid = (b != NO_BITMAP).then(|| &self.valid[b as usize * self.words..(b as usize + 1) * self.words]);
            if let Some(layout) = &self.layout {
                layout.valid_units_into(i, block, slots, valid, out);
            }
            return;
        }
        let (start, w) = (c as usize * self.chunk, c as usize * self.words);
        self.pool.live_into(start, self.chunk.min(slots as usize), &self.live[w..w + self.words], out);
    }

    /// Appends `(offset, unit)` for the valid slots of `block` from slot `from` on, before
    /// slot `end`, until `out` holds `n` entries; returns the slot after the last one looked
    /// at (`end` if it holds fewer), where a next call goes on. What [`P2l::get`] answers slot by
    /// slot, found in a chunk's bits a word at a time.
    #[inline]
    pub fn valid_from(&self, block: u32, from: u32, end: u32, n: usize, out: &mut Vec<(u32, u64)>) -> u32 {
        let c = self.index[block as usize];
        let mut at = from;
        if c == NO_CHUNK || c & LAID != 0 {
            while out.len() < n && at < end {
                let lpn = self.get(block, at);
                if lpn != UNMAPPED {
                    out.push((at, lpn));
                }
                at += 1;
            }
            return at;
        }
        while out.len() < n {
            at = self.next_live(c, at, end);
            if at >= end {
                return end;
            }
            out.push((at, self.pool.get(c as usize * self.chunk + at as usize)));
            at += 1;
        }
        at
    }

    /// [`Self::valid_from`] for a block the layout filled, answered from `listed`: the
    /// block's valid units as [`Self::valid_into`] listed them earlier, in slot order. Until it
    /// is erased nothing is written into a block GC has chosen, so its units only lose their
    /// validity, and those of `listed` whose bit is still set are exactly what `valid_from`
    /// finds, with the same slot returned, without working each unit out from the layout
    /// again (a keyed permutation and a rank a unit on a replica-aged drive). `None` for a
    /// block the layout did not fill (its chunk answers `valid_from` cheaply).
    #[inline]
    pub fn valid_from_listed(&self, block: u32, from: u32, end: u32, n: usize, listed: &[(u32, u64)], out: &mut Vec<(u32, u64)>) -> Option<u32> {
        let chunk = *self.index.get(block as usize)?;
        if chunk == NO_CHUNK || chunk & LAID == 0 {
            return None;
        }
        let i = (chunk & !LAID) as usize;
        let mut next = listed.partition_point(|&(offset, _)| offset < from);
        let mut at = from;
        while out.len() < n {
            let Some(&(offset, lpn)) = listed.get(next).filter(|&&(offset, _)| offset < end) else { return Some(end.max(at)) };
            if self.laid_valid(i, offset) {
                out.push((offset, lpn));
            }
            at = offset + 1;
            next += 1;
        }
        Some(at)
    }

    /// The first valid slot of `block` from slot `from` on, before slot `end`, and its unit.
    #[inline]
    pub fn first_valid(&self, block: u32, from: u32, end: u32) -> Option<(u32, u64)> {
        let c = self.index[block as usize];
        if c == NO_CHUNK || c & LAID != 0 {
            return (from..end).map(|o| (o, self.get(block, o))).find(|&(_, lpn)| lpn != UNMAPPED);
        }
        let at = self.next_live(c, from, end);
        (at < end).then(|| (at, self.pool.get(c as usize * self.chunk + at as usize)))
    }

    /// The first entry of chunk `c` from `from` on whose bit is set, or a place at or past
    /// `end` if none before it is.
    #[inline]
    fn next_live(&self, c: u32, from: u32, end: u32) -> u32 {
        let words = &self.live[c as usize * self.words..(c as usize + 1) * self.words];
        let mut at = from;
        while at < end {
            let bits = words[at as usize / 64] >> (at % 64);
            if bits != 0 {
                return at + bits.trailing_zeros();
            }
            at = (at | 63) + 1;
        }
        at
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
                let unit = self.laid(i, block, o);
                self.put(chunk, o, unit);
            }
            self.index[block as usize] = chunk;
            c = chunk;
        }
        self.put(c, offset, lpn);
    }

    /// Sets the entries of `block` from slot `at` on to `lpns`, in order, as [`P2l::set`] would
    /// slot by slot: in one pass over the block's chunk when it has one (GC's moves into its
    /// open block).
    #[inline]
    pub fn set_run(&mut self, block: u32, at: u32, lpns: impl ExactSizeIterator<Item = u64>) {
        let c = self.index[block as usize];
        if c & LAID != 0 {
            for (o, lpn) in (at..).zip(lpns) {
                self.set(block, o, lpn);
            }
            return;
        }
        debug_assert!(at as usize + lpns.len() <= self.chunk, "a run past the block's end");
        let w = c as usize * self.words;
        self.pool.set_run(c as usize * self.chunk, at as usize, lpns, &mut self.live[w..w + self.words]);
    }

    /// The word that overwriting a slot of a block written during the run changes, its bits'
    /// word (0 for other blocks), to bring its cache line in ahead of use without computing a
    /// layout's answer: no branch depends on what it loads.
    #[inline]
    pub fn peek(&self, block: u32, offset: u32) -> u64 {
        let c = self.index.get(block as usize).copied().unwrap_or(NO_CHUNK);
        let at = if c & LAID == 0 { c as usize * self.words + offset as usize / 64 } else { usize::MAX };
        self.live.get(at).copied().unwrap_or(0)
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
        self.index.len() * 4
            + self.pool.heap_bytes()
            + self.live.capacity() * 8
            + self.spare.capacity() * 4
            + self.bitmap_of.capacity() * 4
            + self.valid.capacity() * 8
            + self.spare_bitmaps.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p2l_chunks_are_recycled() {
        let mut p = P2l::new(4, 8, 1000);
        p.open(2);
        p.set(2, 3, 99);
        assert_eq!(p.get(2, 3), 99);
        assert_eq!((p.peek(2, 3), p.peek(1, 3), p.peek(9, 0)), (1 << 3, 0, 0), "a peek reads written blocks' bits only");
        p.close(2);
        p.open(1);
        assert_eq!(p.get(1, 3), UNMAPPED, "a recycled chunk starts invalid");
        assert_eq!(p.pool.len(), 8);
    }

    /// `valid_into` lists what `get` answers slot by slot: over replica ageing's scattered
    /// layout and a striped fill, with the layout's bitmaps made at once or on the first
    /// overwrite, after units are invalidated and a layout block is written again, over whole
    /// blocks and their first slots. The layouts' hints, and the overwrite's, take any unit.
    #[test]
    fn valid_into_lists_what_get_answers() {
        use rand::{RngExt, SeedableRng};

        use crate::ftl::Geometry;

        let g = Geometry { channels: 2, dies_per_channel: 1, planes: 2, blocks_per_plane: 6, pages_per_block: 40, page_size: 16_384, unit: 4096, slots_per_page: 4 };
        let spb = g.slots_per_block();
        let (blocks, words) = (24u32, (spb as usize).div_ceil(64));
        let mut rng = crate::sim::Rng::seed_from_u64(3);
        let laid: Vec<u32> = (0..20).map(|i| i + i / 5).collect();
        let mut placed = vec![0u64; laid.len() * words];
        for i in 0..laid.len() {
            for o in 0..spb as usize {
                if rng.random_range(0..10) < 8 {
                    placed[i * words + o / 64] |= 1 << (o % 64);
                }
            }
        }
        let units: u64 = placed.iter().map(|w| u64::from(w.count_ones())).sum();
        let striped_units = 4 * 5 * u64::from(spb) - 37;
        let layouts = [(Layout::scattered(&g, laid, placed, units, 7), units), (Layout::striped(&g, &[2, 0, 3, 1], vec![super::super::Segment { lpns: 0..striped_units, span: 0..5 }]), striped_units)];
        for (layout, units) in layouts {
            // The layout's hints take any unit, beyond the drive too, and change nothing.
            let slots: Vec<u64> = (0..units).map(|l| layout.slot_of(l)).collect();
            for l in (0..units + 64).chain([u64::MAX / 2, u64::MAX]) {
                layout.prefetch_slot(l, false);
                layout.prefetch_slot(l, true);
            }
            assert!((0..units).all(|l| layout.slot_of(l) == slots[l as usize]));
            let layout = Arc::new(layout);
            for eager in [true, false] {
                let mut p = P2l::new(blocks as usize, spb as usize, units);
                p.install_with(layout.clone(), eager);
                let filled = layout.blocks();
                // What GC lists when it chooses a block, before units are invalidated.
                let listed: Vec<Vec<(u32, u64)>> = (0..blocks)
                    .map(|b| {
                        let mut out = Vec::new();
                        p.valid_into(b, spb, &mut out);
                        out
                    })
                    .collect();
                for _ in 0..300 {
                    p.set(filled[rng.random_range(0..filled.len())], rng.random_range(0..spb), UNMAPPED);
                }
                let again = filled[3];
                p.set(again, 5, 42);
                // A laid block answers `valid_from` from its earlier listing as from the layout,
                // from every slot; any other block leaves it to `valid_from`.
                let mut answered = 0;
                for b in 0..blocks {
                    for from in 0..=spb + 1 {
                        let n = rng.random_range(0..6);
                        let (mut want, mut got) = (Vec::new(), Vec::new());
                        let next = p.valid_from(b, from, spb, n, &mut want);
                        match p.valid_from_listed(b, from, spb, n, &listed[b as usize], &mut got) {
                            Some(at) => {
                                assert_eq!((got, at), (want, next), "block {b}, from {from}, n {n}, eager {eager}");
                                answered += 1;
                            }
                            None => assert!(b == again || !filled.contains(&b), "block {b} is laid"),
                        }
                    }
                }
                assert!(answered > (filled.len() - 1) * spb as usize, "every laid block but one answered");
                assert_eq!(p.valid_from_listed(blocks + 5, 0, spb, 3, &[], &mut Vec::new()), None, "beyond the blocks");
                // The overwrite's hint takes any slot (beyond the blocks too: laid blocks with
                // their bits and without, a chunk, blocks never written) and changes nothing.
                let all = |p: &P2l| (0..blocks).flat_map(|b| (0..spb).map(move |o| (b, o))).map(|(b, o)| p.get(b, o)).collect::<Vec<_>>();
                let before = all(&p);
                for b in (0..blocks + 2).chain([u32::MAX]) {
                    for o in (0..spb + 70).chain([u32::MAX]) {
                        p.prefetch_slot(b, o);
                    }
                }
                assert_eq!(all(&p), before);
                for b in 0..blocks {
                    for slots in [spb, 100, 1] {
                        let mut out = Vec::new();
                        p.valid_into(b, slots, &mut out);
                        let want: Vec<(u32, u64)> = (0..slots).map(|o| (o, p.get(b, o))).filter(|&(_, u)| u != UNMAPPED).collect();
                        assert_eq!(out, want, "block {b}, first {slots} slots, eager {eager}");
                    }
                }
            }
        }
    }

    /// Over random writes, runs, overwrites and recycled chunks (blocks of 100 slots: their bits
    /// end inside a word), every reading of a written block answers as a plain slot → unit
    /// table does: `get`, `valid_into`, `valid_from` and `first_valid`, from every slot.
    #[test]
    fn written_blocks_answer_as_a_table() {
        use rand::{RngExt, SeedableRng};

        let (blocks, spb) = (6u32, 100u32);
        let mut rng = crate::sim::Rng::seed_from_u64(11);
        for units in [1000, 1 << 40] {
            let mut map = P2l::new(blocks as usize, spb as usize, units);
            let mut table = vec![vec![UNMAPPED; spb as usize]; blocks as usize];
            let mut open = vec![false; blocks as usize];
            for step in 0..4000 {
                let b = rng.random_range(0..blocks);
                let o = rng.random_range(0..spb);
                match rng.random_range(0..10) {
                    0 if open[b as usize] => {
                        map.close(b);
                        open[b as usize] = false;
                        table[b as usize].fill(UNMAPPED);
                    }
                    _ if !open[b as usize] => {
                        map.open(b);
                        open[b as usize] = true;
                    }
                    1 | 2 => {
                        let lpns: Vec<u64> = (o..spb.min(o + 7)).map(|_| if rng.random_range(0..4) == 0 { UNMAPPED } else { rng.random_range(0..units.min(1 << 20)) }).collect();
                        map.set_run(b, o, lpns.iter().copied());
                        table[b as usize][o as usize..o as usize + lpns.len()].copy_from_slice(&lpns);
                    }
                    3..=5 => {
                        map.set(b, o, UNMAPPED);
                        table[b as usize][o as usize] = UNMAPPED;
                    }
                    _ => {
                        let l = rng.random_range(0..units.min(1 << 20));
                        map.set(b, o, l);
                        table[b as usize][o as usize] = l;
                    }
                }
                if step % 97 != 0 {
                    continue;
                }
                for b in 0..blocks {
                    let row = &table[b as usize];
                    assert!((0..spb).all(|o| map.get(b, o) == row[o as usize]), "step {step}, block {b}");
                    let want = |from: u32| (from..spb).filter(|&o| row[o as usize] != UNMAPPED).map(|o| (o, row[o as usize])).collect::<Vec<_>>();
                    let mut all = Vec::new();
                    map.valid_into(b, spb, &mut all);
                    assert_eq!(all, want(0));
                    for from in 0..=spb {
                        assert_eq!(map.first_valid(b, from, spb), want(from).first().copied());
                        let n = rng.random_range(1..6);
                        let mut got = Vec::new();
                        let next = map.valid_from(b, from, spb, n, &mut got);
                        let w: Vec<_> = want(from).into_iter().take(n).collect();
                        let after = if w.len() == n { w[n - 1].0 + 1 } else { spb };
                        assert_eq!((got, next), (w, after), "step {step}, block {b}, from {from}, n {n}");
                    }
                }
            }
        }
    }

    #[test]
    fn blocks_opened_after_keeping_stops_get_no_chunk() {
        let mut p = P2l::new(4, 8, 1000);
        p.open(0);
        p.stop_keeping();
        p.open(1);
        p.open(2);
        assert_eq!(p.pool.len(), 8, "one chunk, the block opened before");
        assert_eq!((p.get(1, 3), p.peek(2, 0)), (UNMAPPED, 0), "a block without a chunk holds nothing");
        p.close(1);
        p.close(0);
        assert_eq!(p.spare, vec![0], "closing a block without a chunk releases none");
    }
}
