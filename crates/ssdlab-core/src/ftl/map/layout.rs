//! Where preconditioning put the logical units: a sequential fill striped over the planes, or
//! replica aging's keyed permutation over the valid slots of each block, computed on demand.

use std::ops::Range;

use super::UNMAPPED;
use crate::ftl::Geometry;
use crate::sim::{div_rem, stream_seed};

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
    /// `placed[i * words..]`, and its first one is the `kstart[i]`-th. `per_rank` is the
    /// blocks per rank as a 64-bit fraction, from which [`rank_guess`] finds where a search of
    /// `kstart` starts.
    Scattered { perm: Permutation, kstart: Vec<u64>, per_rank: u64, placed: Vec<u64>, words: usize },
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
            kind: Kind::Scattered { perm: Permutation::new(units, seed), per_rank: per_rank(&kstart), kstart, placed, words },
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
                let (page, unit) = div_rem(i, self.spp);
                let (row, j) = div_rem(page, order.len() as u64);
                let (row_block, row_page) = div_rem(row, self.ppb);
                let block = u64::from(order[j as usize]) * self.bpp + u64::from(s.span.start) + row_block;
                block * self.spb + row_page * self.spp + unit
            }
            Kind::Scattered { perm, kstart, per_rank, placed, words } => {
                if lpn >= perm.n {
                    return UNMAPPED;
                }
                let k = perm.invert(lpn);
                let i = block_of_rank(kstart, *per_rank, k);
                let offset = select(&placed[i * words..(i + 1) * words], k - kstart[i]);
                u64::from(self.blocks[i]) * self.spb + offset
            }
        }
    }

    /// Brings toward the cache what [`Self::slot_of`] reads for `lpn` under replica aging's
    /// placement (a hint, in two stages, the second some time after the first): first the
    /// block ranks where its search starts, then the placed bits and number of the block it
    /// finds. Each stage works out the permutation again; a sequential fill's places are
    /// arithmetic, and take no hint.
    #[inline]
    pub(super) fn prefetch_slot(&self, lpn: u64, second: bool) {
        let Kind::Scattered { perm, kstart, per_rank, placed, words } = &self.kind else { return };
        if lpn >= perm.n {
            return;
        }
        let k = perm.invert(lpn);
        if second {
            let i = block_of_rank(kstart, *per_rank, k);
            super::prefetch_lines(&placed[i * words..(i + 1) * words]);
            mem_prefetch::prefetch_read_data::<_, 3>(&self.blocks[i]);
        } else {
            mem_prefetch::prefetch_read_data::<_, 3>(&kstart[rank_guess(kstart, *per_rank, k)]);
        }
    }

    /// The unit the layout put at `offset` of `block`, the `index`-th of its blocks
    /// (`UNMAPPED` if none).
    #[inline]
    pub(super) fn unit_at(&self, index: usize, block: u32, offset: u32) -> u64 {
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
            Kind::Scattered { perm, kstart, placed, words, .. } => {
                let bits = &placed[index * words..(index + 1) * words];
                let o = offset as usize;
                if bits[o / 64] >> (o % 64) & 1 == 0 {
                    return UNMAPPED;
                }
                perm.apply(kstart[index] + rank(bits, offset))
            }
        }
    }

    /// Appends `(offset, unit)` for each slot of `block` (the `index`-th of its blocks) among
    /// its first `slots` that the layout filled and whose bit in `valid` is set (every filled
    /// slot, without `valid`), in slot order: what [`Self::unit_at`] answers slot by slot, with
    /// the rank of each placed slot counted on from the one before rather than afresh.
    pub(super) fn valid_units_into(&self, index: usize, block: u32, slots: u32, valid: Option<&[u64]>, out: &mut Vec<(u32, u64)>) {
        let Kind::Scattered { perm, kstart, placed, words, .. } = &self.kind else {
            let valid_at = |o: u32| valid.is_none_or(|v| v[o as usize / 64] >> (o % 64) & 1 != 0);
            out.extend((0..slots).filter(|&o| valid_at(o)).map(|o| (o, self.unit_at(index, block, o))).filter(|&(_, u)| u != UNMAPPED));
            return;
        };
        let bits = &placed[index * words..(index + 1) * words];
        let mut k = kstart[index];
        for (w, &word) in bits.iter().enumerate() {
            let keep = valid.map_or(word, |v| word & v[w]);
            let mut x = word;
            while x != 0 {
                let b = x.trailing_zeros();
                let o = w as u32 * 64 + b;
                if o >= slots {
                    return;
                }
                if keep >> b & 1 != 0 {
                    out.push((o, perm.apply(k)));
                }
                k += 1;
                x &= x - 1;
            }
        }
    }

    /// Writes the `index`-th block's placed slots as bits into `bits`.
    pub(super) fn placed_bits(&self, index: usize, bits: &mut [u64]) {
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

    pub(super) fn heap_bytes(&self) -> usize {
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
fn block_of_rank(kstart: &[u64], per_rank: u64, k: u64) -> usize {
    let n = kstart.len() - 1;
    let guess = rank_guess(kstart, per_rank, k);
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

/// Where [`block_of_rank`] starts its search for `k`: `k` times the blocks per rank, a
/// multiplication by [`per_rank`]'s fraction rather than a 128-bit division on the way to the
/// first load (any start gives the same block; a close one, fewer probes).
#[inline]
fn rank_guess(kstart: &[u64], per_rank: u64, k: u64) -> usize {
    (((u128::from(k) * u128::from(per_rank)) >> 64) as usize).min(kstart.len().saturating_sub(2))
}

/// The blocks of `kstart` per placed rank, as a fraction of 2^64. It saturates just under 1
/// where there are as many blocks as ranks or more: the guess is then low, and the search
/// gallops up from it.
fn per_rank(kstart: &[u64]) -> u64 {
    let n = kstart.len().saturating_sub(1) as u128;
    let total = u128::from(kstart.last().copied().unwrap_or(0).max(1));
    u64::try_from((n << 64) / total).unwrap_or(u64::MAX)
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
        assert_eq!(per_rank(&kstart), (10u128 << 64).div_euclid(61) as u64, "10 blocks, 61 ranks");
        assert_eq!(per_rank(&[0]), 0, "no block");
        assert_eq!(per_rank(&[0, 0]), u64::MAX, "a block and no rank: saturated");
        assert_eq!(per_rank(&[0, 1, 1, 1, 2]), u64::MAX, "more blocks than ranks: saturated");
        assert_eq!(per_rank(&[0, 5]), u64::MAX / 5, "one block of five ranks");
        for k in 0..5 {
            assert_eq!(block_of_rank(&[0, 5], per_rank(&[0, 5]), k), 0, "one block, k {k}");
        }
        for (k, want) in [(0, 0), (1, 3)] {
            assert_eq!(block_of_rank(&[0, 1, 1, 1, 2], u64::MAX, k), want, "more blocks than ranks, k {k}");
        }
        for per_rank in [per_rank(&kstart), 0, 1 << 62, u64::MAX] {
            for k in 0..*kstart.last().unwrap() {
                let want = kstart.partition_point(|&s| s <= k) - 1;
                assert_eq!(block_of_rank(&kstart, per_rank, k), want, "k {k}, {per_rank} blocks a rank in 2^64");
            }
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
}
