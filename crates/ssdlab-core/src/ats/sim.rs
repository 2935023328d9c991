//! Per-size cache simulation, for the policies that are not stack algorithms (and as the
//! reference the one-pass curves are tested against). Keys are dense ids.
//!
//! A set-associative cache keeps each set's tags in a small array and scans it; a fully
//! associative one (`sets = 1`) with many lines keeps an id → line table instead, so every
//! policy is O(1) per access except tree-PLRU (O(log lines)) and OPT (a heap).

use std::collections::BinaryHeap;

use rand::{RngExt, SeedableRng};

use super::curve::{to_front, NEVER};
use crate::sim::{stream_seed, Rng};

crate::config_enum! {
    /// An eviction policy, of the device's ATC (`ats.policy`) and of the ATC studies.
    #[derive(PartialOrd, Ord)]
    pub enum Policy {
        /// Least recently used.
        Lru = "lru",
        /// First in, first out (round robin over each set's ways).
        Fifo = "fifo" | "rr" | "round-robin",
        /// A random line of the set (seeded).
        Random = "random" | "rand",
        /// Tree pseudo-LRU.
        Plru = "plru",
        /// Belady's optimum: evict the line used furthest in the future (studies only: it
        /// needs the whole stream ahead).
        Opt = "opt" | "belady",
    }
}

/// An unfilled line; the same value as the curves' unfilled way, which [`to_front`] relies on.
const EMPTY: u32 = NEVER;

/// One cache of `sets` × `ways` lines under one policy.
pub struct CacheSim {
    policy: Policy,
    sets: usize,
    ways: usize,
    /// Usable ways per set (ways less pinned lines), or per cache when fully associative.
    usable: Vec<u16>,
    tags: Vec<u32>,
    /// FIFO: per-set next victim in `meta[set * ways]`.
    meta: Vec<u64>,
    /// PLRU: `ways - 1` tree bits per set (ways a power of two).
    tree: Vec<bool>,
    /// OPT: next use of the key in each line.
    next_use: Vec<u64>,
    /// Fully associative with many lines: key → line.
    index: Vec<u32>,
    /// Fully associative LRU: doubly linked recency list over lines.
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    heap: BinaryHeap<(u64, u32)>,
    filled: usize,
    /// Fully associative with more than `SCAN_LIMIT` lines: id-indexed structures.
    indexed: bool,
    rng: Rng,
    pub hits: u64,
    pub accesses: u64,
}

/// Above this many lines a fully associative cache uses the indexed structures.
const SCAN_LIMIT: usize = 32;

impl CacheSim {
    /// A cache of `sets` (a power of two) × `ways` lines; `pinned[s]` lines of set `s` are
    /// taken by pinned translations (fully associative: `pinned[0]`).
    pub fn new(policy: Policy, sets: usize, ways: usize, pinned: &[u16], seed: u64) -> Self {
        let lines = sets * ways;
        let usable = (0..sets).map(|s| (ways as u16).saturating_sub(pinned.get(s).copied().unwrap_or(0))).collect();
        let indexed = sets == 1 && ways > SCAN_LIMIT;
        CacheSim {
            policy,
            sets,
            ways,
            usable,
            tags: vec![EMPTY; lines],
            meta: vec![0; lines],
            tree: if policy == Policy::Plru { vec![false; sets * ways.next_power_of_two()] } else { Vec::new() },
            next_use: vec![0; if policy == Policy::Opt { lines } else { 0 }],
            index: Vec::new(),
            prev: if indexed && policy == Policy::Lru { vec![EMPTY; lines] } else { Vec::new() },
            next: if indexed && policy == Policy::Lru { vec![EMPTY; lines] } else { Vec::new() },
            head: EMPTY,
            tail: EMPTY,
            heap: BinaryHeap::new(),
            filled: 0,
            indexed,
            rng: Rng::from_seed(stream_seed(seed, 0xA7C).to_le_bytes()),
            hits: 0,
            accesses: 0,
        }
    }

    /// Counts an access that a pinned translation serves.
    #[inline]
    pub fn pinned_hit(&mut self) {
        self.accesses += 1;
        self.hits += 1;
    }

    /// An access to `key` in set `set_key mod sets`; `next` is the time of the key's next use
    /// (OPT only; `u64::MAX` if never).
    #[inline]
    pub fn access(&mut self, key: u32, set_key: u64, next: u64) -> bool {
        self.accesses += 1;
        let hit = if self.indexed { self.access_indexed(key, next) } else { self.access_set(key, set_key, next) };
        self.hits += u64::from(hit);
        hit
    }

    fn access_set(&mut self, key: u32, set_key: u64, next: u64) -> bool {
        let set = (set_key as usize) & (self.sets - 1);
        let usable = self.usable[set] as usize;
        if usable == 0 {
            return false;
        }
        let base = set * self.ways;
        if self.policy == Policy::Lru {
            // A set in recency order: a hit moves its key to the front, a miss drops the last
            // way. The hits are any LRU's; only which way holds a key differs. Common way
            // counts pass a slice of constant length, whose walk is unrolled.
            let tags = &mut self.tags[base..base + usable];
            let depth = match usable {
                2 => to_front(&mut tags[..2], key),
                4 => to_front(&mut tags[..4], key),
                8 => to_front(&mut tags[..8], key),
                16 => to_front(&mut tags[..16], key),
                _ => to_front(tags, key),
            };
            return depth.is_some();
        }
        // Every other policy: the LRU arms below are never reached.
        let lines = base..base + usable;
        if let Some(i) = self.tags[lines.clone()].iter().position(|&t| t == key) {
            let line = base + i;
            match self.policy {
                Policy::Plru => self.plru_touch(set, i, usable),
                Policy::Opt => self.next_use[line] = next,
                Policy::Lru | Policy::Fifo | Policy::Random => {}
            }
            return true;
        }
        // Miss: an empty line, else the policy's victim.
        let way = match self.tags[lines.clone()].iter().position(|&t| t == EMPTY) {
            Some(w) => {
                if self.policy == Policy::Fifo && w == 0 {
                    self.meta[base] = 0;
                }
                w
            }
            None => match self.policy {
                Policy::Lru | Policy::Fifo => {
                    let w = self.meta[base] as usize % usable;
                    self.meta[base] = (w + 1) as u64;
                    w
                }
                Policy::Random => self.rng.random_range(0..usable),
                Policy::Plru => self.plru_victim(set, usable),
                Policy::Opt => (0..usable).max_by_key(|&w| (self.next_use[base + w], w)).unwrap_or(0),
            },
        };
        let line = base + way;
        self.tags[line] = key;
        match self.policy {
            Policy::Plru => self.plru_touch(set, way, usable),
            Policy::Opt => self.next_use[line] = next,
            Policy::Lru | Policy::Fifo | Policy::Random => {}
        }
        false
    }

    /// Tree-PLRU over `usable` ways (rounded up to a power of two; ways beyond `usable` are
    /// never chosen). Bit `n` points to the colder half below node `n`.
    fn plru_touch(&mut self, set: usize, way: usize, usable: usize) {
        let leaves = usable.next_power_of_two();
        let base = set * self.ways.next_power_of_two();
        let (mut node, mut lo, mut hi) = (1usize, 0usize, leaves);
        while hi - lo > 1 {
            let mid = usize::midpoint(lo, hi);
            let right = way >= mid;
            // Point away from the touched half.
            self.tree[base + node] = !right;
            node = node * 2 + usize::from(right);
            if right {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }

    fn plru_victim(&self, set: usize, usable: usize) -> usize {
        let leaves = usable.next_power_of_two();
        let base = set * self.ways.next_power_of_two();
        let (mut node, mut lo, mut hi) = (1usize, 0usize, leaves);
        while hi - lo > 1 {
            let mid = usize::midpoint(lo, hi);
            let mut right = self.tree[base + node];
            if right && mid >= usable {
                right = false;
            }
            node = node * 2 + usize::from(right);
            if right {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo.min(usable - 1)
    }

    fn access_indexed(&mut self, key: u32, next: u64) -> bool {
        let k = key as usize;
        if k >= self.index.len() {
            self.index.resize(k + 1, EMPTY);
        }
        let usable = self.usable[0] as usize;
        if usable == 0 {
            return false;
        }
        let line = self.index[k];
        if line != EMPTY {
            match self.policy {
                Policy::Lru => self.lru_to_front(line),
                Policy::Plru => self.plru_touch(0, line as usize, usable),
                Policy::Opt => self.opt_set_next(line, next, usable),
                Policy::Fifo | Policy::Random => {}
            }
            return true;
        }
        let line = if self.filled < usable {
            self.filled += 1;
            (self.filled - 1) as u32
        } else {
            match self.policy {
                Policy::Lru => self.tail,
                Policy::Fifo => {
                    let w = self.meta[0] as usize % usable;
                    self.meta[0] = (w + 1) as u64;
                    w as u32
                }
                Policy::Random => self.rng.random_range(0..usable) as u32,
                Policy::Plru => self.plru_victim(0, usable) as u32,
                Policy::Opt => loop {
                    // Lazy deletion: skip heap entries that no longer describe their line.
                    let (n, l) = self.heap.pop().unwrap_or((0, 0));
                    if self.next_use[l as usize] == n {
                        break l;
                    }
                },
            }
        };
        let old = self.tags[line as usize];
        if old != EMPTY {
            self.index[old as usize] = EMPTY;
        }
        self.tags[line as usize] = key;
        self.index[k] = line;
        match self.policy {
            Policy::Lru => {
                if old == EMPTY {
                    self.lru_push_front(line);
                } else {
                    self.lru_to_front(line);
                }
            }
            Policy::Plru => self.plru_touch(0, line as usize, usable),
            Policy::Opt => self.opt_set_next(line, next, usable),
            Policy::Fifo | Policy::Random => {}
        }
        false
    }

    /// OPT: records `line`'s next use; the heap keeps stale entries (skipped lazily) until it
    /// outgrows the cache, then is rebuilt from the live ones.
    fn opt_set_next(&mut self, line: u32, next: u64, usable: usize) {
        self.next_use[line as usize] = next;
        self.heap.push((next, line));
        if self.heap.len() > 4 * usable + 64 {
            self.heap = (0..self.filled as u32).map(|l| (self.next_use[l as usize], l)).collect();
        }
    }

    fn lru_push_front(&mut self, line: u32) {
        self.prev[line as usize] = EMPTY;
        self.next[line as usize] = self.head;
        if self.head != EMPTY {
            self.prev[self.head as usize] = line;
        }
        self.head = line;
        if self.tail == EMPTY {
            self.tail = line;
        }
    }

    fn lru_to_front(&mut self, line: u32) {
        if self.head == line {
            return;
        }
        let (p, n) = (self.prev[line as usize], self.next[line as usize]);
        if p != EMPTY {
            self.next[p as usize] = n;
        }
        if n == EMPTY {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.lru_push_front(line);
    }

    pub fn policy(&self) -> Policy {
        self.policy
    }

    pub fn lines(&self) -> usize {
        self.sets * self.ways
    }
}
