//! One-pass hit-rate curves for LRU, which is a stack algorithm: a cache of `c` lines hits
//! exactly the accesses whose stack distance (distinct keys since the key's last access) is
//! below `c`, so one histogram of distances gives the hit count of every size at once.

/// Fully associative LRU: stack distances by a Fenwick tree over access times.
///
/// Every access takes the next time slot. When a key is accessed again, its previous slot
/// becomes a *hole*; the stack distance is the number of slots strictly between the previous
/// access and now, less the holes among them. The tree counts holes, so an access costs one
/// prefix query and one update. Holes are bits of a bitmap and the tree counts them per 64-bit
/// word (a popcount finishes a query), so the tree is 64 times smaller than the slot range and
/// stays in the first-level cache. When the slots run out, the live slots (each key's latest
/// access) are renumbered in order with no holes, and the range grows if it is more than half
/// live. Keys are dense ids, so the last-slot table is a plain array.
pub struct FaLruCurve {
    limit: usize,
    /// Slots available before the next compaction.
    slots: usize,
    bits: Vec<u64>,
    tree: Vec<u32>,
    holes: u32,
    now: u32,
    last: Vec<u32>,
    /// `hist[d]` = accesses at distance d (< limit); beyond the limit counts as a miss.
    hist: Vec<u64>,
    accesses: u64,
}

/// No access yet: a key's last slot before its first access, and a simulator's line not yet
/// filled.
pub(crate) const NEVER: u32 = u32::MAX;

/// A set-associative curve's way not yet filled: no key (a dense id, or a page number, which
/// is at most 2^52) equals it.
const UNFILLED: u64 = u64::MAX;

impl FaLruCurve {
    /// Curves up to `limit` lines.
    pub fn new(limit: usize) -> Self {
        let slots = 1 << 16;
        FaLruCurve { limit, slots, bits: vec![0; slots / 64], tree: vec![0; slots / 64], holes: 0, now: 0, last: Vec::new(), hist: vec![0; limit], accesses: 0 }
    }

    #[inline]
    fn add_hole(&mut self, i: usize) {
        self.bits[i >> 6] |= 1 << (i & 63);
        let mut w = i >> 6;
        let n = self.tree.len();
        while w < n {
            self.tree[w] += 1;
            w |= w + 1;
        }
    }

    /// Holes at positions `<= i`.
    #[inline]
    fn prefix(&self, i: usize) -> u32 {
        let word = i >> 6;
        let mask = u64::MAX >> (63 - (i & 63));
        let mut s = (self.bits[word] & mask).count_ones();
        // Fenwick prefix over words 0..word (exclusive): node e - 1 covers (e - 1) & e ..= e - 1.
        let mut e = word;
        while e > 0 {
            s += self.tree[e - 1];
            e &= e - 1;
        }
        s
    }

    /// Renumbers the live slots `0..live` in time order (no holes left), growing the tree if
    /// more than half of it would be live. A slot is the latest access of at most one key, so
    /// placing each key at its slot puts them in time order: no comparison sort (which took
    /// nearly half of a 64 Ki-line curve's time).
    fn compact(&mut self) {
        let mut by_slot = vec![NEVER; self.now as usize];
        let mut live = 0usize;
        for (key, &t) in self.last.iter().enumerate() {
            if let Some(slot) = by_slot.get_mut(t as usize) {
                *slot = key as u32;
                live += 1;
            }
        }
        while live * 2 > self.slots {
            self.slots *= 2;
        }
        self.bits = vec![0; self.slots / 64];
        self.tree = vec![0; self.slots / 64];
        self.holes = 0;
        let mut pos = 0;
        for &key in by_slot.iter().filter(|&&k| k != NEVER) {
            self.last[key as usize] = pos;
            pos += 1;
        }
        self.now = pos;
    }

    /// Records an access to dense key `key`; returns its stack distance (None if first).
    #[inline]
    pub fn access(&mut self, key: u32) -> Option<u32> {
        self.accesses += 1;
        let k = key as usize;
        if k >= self.last.len() {
            self.last.resize(k + 1, NEVER);
        }
        if self.now as usize >= self.slots {
            self.compact();
        }
        let prev = self.last[k];
        let dist = if prev == NEVER {
            None
        } else {
            // Slots after prev, less the holes after prev (every hole is before now).
            let d = self.now - prev - 1 - (self.holes - self.prefix(prev as usize));
            self.add_hole(prev as usize);
            self.holes += 1;
            if (d as usize) < self.limit {
                self.hist[d as usize] += 1;
            }
            Some(d)
        };
        self.last[k] = self.now;
        self.now += 1;
        dist
    }

    pub fn accesses(&self) -> u64 {
        self.accesses
    }

    /// Hits of a fully associative LRU cache of `lines` lines.
    pub fn hits(&self, lines: usize) -> u64 {
        self.hist[..lines.min(self.limit)].iter().sum()
    }

    /// Hits for every size `1..=limit` (index `c - 1`).
    pub fn all_hits(&self) -> Vec<u64> {
        self.hist
            .iter()
            .scan(0u64, |a, &h| {
                *a += h;
                Some(*a)
            })
            .collect()
    }
}

/// Moves `key` to the front of a set kept most recent first (a way not yet filled holds a
/// value no key equals): the depth it was found at, or None when it missed and the
/// last way (the least recently used, or an unfilled one) was dropped. The walk shifts the
/// keys above it down in the same pass (a set holds a handful of ways: a loop beats a call to
/// memmove); a slice of constant length is unrolled where the call is inlined.
#[inline]
pub(crate) fn to_front<K: Copy + PartialEq>(stack: &mut [K], key: K) -> Option<usize> {
    let mut carried = key;
    for (d, slot) in stack.iter_mut().enumerate() {
        let k = std::mem::replace(slot, carried);
        if k == key {
            return Some(d);
        }
        carried = k;
    }
    None
}

/// [`to_front`] for a set of `W` ways, `W` a constant: every way is compared with the key in
/// one pass without branches, and on a miss all the keys move down one way in a single copy;
/// a hit takes the walk. Most lookups of a small cache miss, and for them the walk's compare,
/// branch and store at each way cost more (callgrind: 42 to 27 instructions per lookup of a
/// 16-set, 4-way curve, with the changes to [`SetLruCurve::feed`]).
#[inline]
pub(crate) fn to_front_ways<const W: usize>(stack: &mut [u64; W], key: u64) -> Option<usize> {
    let hits: [u32; W] = std::array::from_fn(|i| u32::from(stack[i] == key));
    if hits.iter().fold(0, |a, &h| a | h) == 0 {
        let mut moved = [key; W];
        moved[1..].copy_from_slice(&stack[..W - 1]);
        *stack = moved;
        return None;
    }
    to_front(stack, key)
}

/// Set-associative LRU at a fixed set count, for every associativity up to `max_ways` at once:
/// each set keeps its keys in recency order, and an access found at depth `d` of its set hits
/// every cache of more than `d` ways. Pinned ways in a set push the other keys deeper.
///
/// A key only has to tell translations apart, so the curve takes dense ids or, where a study
/// has no use for ids (bare pages of one address space), the page numbers themselves.
pub struct SetLruCurve {
    sets: usize,
    max_ways: usize,
    /// Each set's keys, most recent first; a way not yet filled holds [`UNFILLED`].
    stacks: Vec<u64>,
    /// Ways taken by pinned keys, per set.
    pinned: Vec<u16>,
    hist: Vec<u64>,
    accesses: u64,
}

impl SetLruCurve {
    /// `sets` must be a power of two; keys map to set `key mod sets`.
    pub fn new(sets: usize, max_ways: usize, pinned: Vec<u16>) -> Self {
        SetLruCurve { sets, max_ways, stacks: vec![UNFILLED; sets * max_ways], pinned, hist: vec![0; max_ways + 1], accesses: 0 }
    }

    /// Feeds a run of lookups: `keys[i]` in set `set_keys[i] mod sets`. Common way counts get
    /// a loop the compiler unrolls (the associativity is then a constant). A curve must be fed
    /// keys of one kind throughout (ids, or pages).
    pub fn feed<K: Copy + Into<u64>>(&mut self, keys: &[K], set_keys: &[u64], skip: impl Fn(K) -> bool) {
        let pins = self.pinned.iter().any(|&p| p > 0);
        match (self.max_ways, pins) {
            (2, false) => self.feed_ways::<2, false, K>(keys, set_keys, skip),
            (4, false) => self.feed_ways::<4, false, K>(keys, set_keys, skip),
            (8, false) => self.feed_ways::<8, false, K>(keys, set_keys, skip),
            (16, false) => self.feed_ways::<16, false, K>(keys, set_keys, skip),
            (2, true) => self.feed_ways::<2, true, K>(keys, set_keys, skip),
            (4, true) => self.feed_ways::<4, true, K>(keys, set_keys, skip),
            (8, true) => self.feed_ways::<8, true, K>(keys, set_keys, skip),
            (16, true) => self.feed_ways::<16, true, K>(keys, set_keys, skip),
            _ => {
                for (&key, &set_key) in keys.iter().zip(set_keys) {
                    if !skip(key) {
                        self.access(key.into(), set_key);
                    }
                }
            }
        }
    }

    /// [`Self::access`] over a run, with the associativity a constant (the walk is unrolled)
    /// and the sets' pinned ways looked up only where some set has any. The run's depths and
    /// accesses are counted in locals and added to the curve once.
    fn feed_ways<const W: usize, const PINS: bool, K: Copy + Into<u64>>(&mut self, keys: &[K], set_keys: &[u64], skip: impl Fn(K) -> bool) {
        let mask = self.sets - 1;
        let pinned = &self.pinned[..];
        // One stack per set, the sets a power of two: a masked set's stack is in bounds.
        let Some(stacks) = self.stacks.as_chunks_mut::<W>().0.get_mut(..=mask) else { return };
        let mut depths = [0u64; W];
        let mut fed = 0u64;
        for (&key, &set_key) in keys.iter().zip(set_keys) {
            if skip(key) {
                continue;
            }
            fed += 1;
            let set = (set_key as usize) & mask;
            let Some(depth) = to_front_ways(&mut stacks[set], key.into()) else { continue };
            // With p ways pinned in this set, depth d needs d + p + 1 ways.
            let need = if PINS { depth + usize::from(pinned.get(set).copied().unwrap_or(0)) } else { depth };
            if let Some(d) = depths.get_mut(need) {
                *d += 1;
            }
        }
        self.accesses += fed;
        for (h, d) in self.hist.iter_mut().zip(depths) {
            *h += d;
        }
    }

    #[inline]
    pub fn access(&mut self, key: u64, set_key: u64) {
        self.accesses += 1;
        let set = (set_key as usize) & (self.sets - 1);
        let base = set * self.max_ways;
        let depth = to_front(&mut self.stacks[base..base + self.max_ways], key).unwrap_or(self.max_ways);
        // With p ways pinned in this set, depth d needs d + p + 1 ways.
        let need = depth + usize::from(self.pinned.get(set).copied().unwrap_or(0));
        if depth < self.max_ways && need < self.max_ways {
            self.hist[need] += 1;
        }
    }

    pub fn accesses(&self) -> u64 {
        self.accesses
    }

    /// Hits of a cache with this set count and `ways` ways.
    pub fn hits(&self, ways: usize) -> u64 {
        self.hist[..ways.min(self.max_ways)].iter().sum()
    }
}
