//! A die's queue of the operations that are not urgent reads (programs, erases, GC and
//! background reads): served in order, or at a pool's fair share, with the programs indexed by
//! page offset so that a multi-plane program finds its partners on the die's other planes
//! without a scan of the queue.
//!
//! Under GC the queue runs thousands deep (a write buffer's worth of host pages, each dragging
//! its share of GC moves), so the ops stay in one ring, in order, read and written front to
//! back. Each op pushed at the back takes the next serial number, and the op of serial `s`
//! sits at place `s - head` of the ring: the page index holds serials, not copies. So that
//! the places hold, an op taken from the middle (a pool's fair share) leaves a hole that is
//! dropped when it reaches the head, and an op put back at the head takes the serial before
//! it. An op merged into another's multi-plane program stays in the ring, marked taken, and is
//! reported as taken when it comes up (the die skips it). Each entry is packed in 16 bytes
//! (see [`Packed`]).

use std::collections::VecDeque;

use super::ring::Ring;
use super::{Op, Work};
use crate::ids::BlockId;
use crate::sim::{SimDuration, SimTime};

/// The kinds of [`Packed::bits`] (its low three bits).
const GC_READ: u8 = 0;
const PROGRAM: u8 = 1;
const ERASE: u8 = 2;
const MAP_PROGRAM: u8 = 3;
const MAP_LOAD: u8 = 4;
/// A background translation-page load (`MapLoad { token: None }`).
const MAP_LOAD_ANY: u8 = 5;
/// An op with more to it than fits (a host read, with its command, bytes and wait; a
/// read-ahead): kept whole in the spill, at place `word`.
const SPILLED: u8 = 6;
const KIND: u8 = 0b111;
/// A program of GC's.
const GC: u8 = 1 << 3;
/// Merged into a multi-plane program already: reported as taken when it comes up.
const TAKEN: u8 = 1 << 4;
/// Listed in the page index (a program queued at the back while multi-plane is on).
const INDEXED: u8 = 1 << 5;
/// Taken from the middle: a hole until it reaches the head.
const HOLE: u8 = 1 << 6;

/// The page index's entries hold a program's serial shifted past its plane within the die
/// (planes are at most 16, validated), so a gather passes over the programs of a plane it
/// has already without reading their ring entries.
const PLANE_BITS: u32 = 4;
const PLANE_MASK: u64 = (1 << PLANE_BITS) - 1;

/// The page index's entry of the program of serial `serial` on plane `plane`.
#[inline]
fn index_entry(serial: u64, plane: u32) -> u64 {
    serial << PLANE_BITS | u64::from(plane) & PLANE_MASK
}

/// The ring place of the program of index entry `v` with the ring's head at serial `head`,
/// past the ring's length for a program that has left at the head. The serials wrap: the
/// difference is taken in the entries' own width, whose top bits the shift dropped.
#[inline]
fn place(v: u64, head: u64) -> usize {
    (v.wrapping_sub(head << PLANE_BITS) >> PLANE_BITS) as usize
}

/// A queued op in 16 bytes. The ops a die queues under GC (programs, GC reads, erases) need
/// their block, page, pool and a program's generation, and no queueing time (only a host
/// read's wait is accounted, and host reads go to the die's own queue under read-priority):
/// so a die's queue, thousands deep on the aged drive and read long after it was written,
/// takes under a third of the memory, and of the cache misses, that whole 56-byte ops did.
#[derive(Clone, Copy, Default)]
struct Packed {
    block: BlockId,
    page: u32,
    /// A program's generation, a load's token, or a spilled op's place in the spill.
    word: u32,
    pool: u16,
    bits: u8,
    /// An indexed program's plane within its die (0 for other ops).
    plane: u8,
}

/// The queue of one die.
#[derive(Default)]
pub(super) struct OpQueue {
    /// The ops in queue order (a ring that hints the line its back writes next: see [`Ring`]).
    ring: Ring<Packed>,
    /// The serial of the entry at the head of the ring (wrapping).
    head: u64,
    /// Per page offset: the indexed programs of that offset ([`index_entry`]: serial and
    /// plane), in queue order (and some that have left at the head since: dropped when a
    /// gather meets them).
    by_page: Vec<VecDeque<u64>>,
    /// With a fair share among pools: per pool, the serials of its entries that are not holes
    /// (merged ones included), in queue order; empty otherwise.
    by_pool: Vec<VecDeque<u64>>,
    /// Whole ops that do not pack, and the places of the spill free for reuse.
    spill: Vec<Op>,
    free: Vec<u32>,
}

impl OpQueue {
    /// `op` as the queue holds it, with flags `flags`, on plane `plane` of its die.
    fn pack(&mut self, op: Op, flags: u8, plane: u8) -> Packed {
        let (kind, word) = match op.work {
            Work::GcRead => (GC_READ, 0),
            Work::Program { gc, gen } => (PROGRAM | if gc { GC } else { 0 }, u32::from(gen)),
            Work::Erase => (ERASE, 0),
            Work::MapProgram => (MAP_PROGRAM, 0),
            Work::MapLoad { token: Some(t) } => (MAP_LOAD, t),
            Work::MapLoad { token: None } => (MAP_LOAD_ANY, 0),
            Work::HostRead { .. } | Work::Prefetch { .. } => {
                let at = if let Some(at) = self.free.pop() {
                    self.spill[at as usize] = op;
                    at
                } else {
                    self.spill.push(op);
                    (self.spill.len() - 1) as u32
                };
                (SPILLED, at)
            }
        };
        Packed { block: op.block, page: op.page, word, pool: op.pool, bits: kind | flags, plane }
    }

    /// The op `e` holds (a packed one has no queueing time: nothing reads it but a host
    /// read's, which is spilled whole).
    fn unpack(spill: &[Op], e: Packed) -> Op {
        let work = match e.bits & KIND {
            GC_READ => Work::GcRead,
            PROGRAM => Work::Program { gc: e.bits & GC != 0, gen: e.word as u16 },
            ERASE => Work::Erase,
            MAP_PROGRAM => Work::MapProgram,
            MAP_LOAD => Work::MapLoad { token: Some(e.word) },
            MAP_LOAD_ANY => Work::MapLoad { token: None },
            _ => return spill[e.word as usize],
        };
        Op { work, block: e.block, page: e.page, pool: e.pool, queued: SimTime::ZERO, gc: SimDuration::ZERO }
    }

    /// Takes the op `e` holds out of the queue: a spilled op's place is free again.
    fn take_out(&mut self, e: Packed) -> Op {
        let op = Self::unpack(&self.spill, e);
        if e.bits & KIND == SPILLED {
            self.free.push(e.word);
        }
        op
    }

    /// Keeps, from now on, where each of `pools` pools' first entry is (for a fair share).
    pub(super) fn track_pools(&mut self, pools: usize) {
        self.by_pool = vec![VecDeque::new(); pools];
        for (i, e) in self.ring.iter().enumerate() {
            if e.bits & HOLE == 0 && usize::from(e.pool) < pools {
                self.by_pool[usize::from(e.pool)].push_back(self.head.wrapping_add(i as u64));
            }
        }
    }

    /// The pool of the entry at the head (never a hole), if any.
    pub(super) fn front_pool(&self) -> Option<u16> {
        self.ring.front().map(|e| e.pool)
    }

    /// The place of pool `p`'s first entry (counting holes, as [`Self::remove`] does), if
    /// pools are tracked and it has one.
    pub(super) fn first_of(&self, p: usize) -> Option<usize> {
        let s = *self.by_pool.get(p)?.front()?;
        Some(s.wrapping_sub(self.head) as usize)
    }

    /// Queues `op` at the back; with `index`, the plane within its die (below 16) of a program
    /// that multi-plane partners may find.
    pub(super) fn push_back(&mut self, op: Op, index: Option<u32>) {
        let serial = self.head.wrapping_add(self.ring.len() as u64);
        let e = match index {
            Some(plane) => self.pack(op, INDEXED, (u64::from(plane) & PLANE_MASK) as u8),
            None => self.pack(op, 0, 0),
        };
        self.ring.push_back(e);
        if let Some(q) = self.by_pool.get_mut(usize::from(op.pool)) {
            q.push_back(serial);
        }
        if let Some(plane) = index {
            let page = op.page as usize;
            if page >= self.by_page.len() {
                self.by_page.resize_with(page + 1, VecDeque::new);
            }
            self.by_page[page].push_back(index_entry(serial, plane));
            // A stream programs a page offset on each plane in turn, then the next offset: the
            // die's next programs are most likely the next offset's, whose index was last
            // written a block's worth of programs ago. Bring in (a hint) the line its next
            // serial goes to, and a stage earlier the offset after's header, which says where.
            if let Some(n) = self.by_page.get(page + 1).and_then(VecDeque::back) {
                mem_prefetch::prefetch_read_data::<_, 3>(n);
            }
            if let Some(n) = self.by_page.get(page + 2) {
                mem_prefetch::prefetch_read_data::<_, 3>(n);
            }
        }
    }

    /// Puts `op` back at the head (it was taken but cannot start yet); it is not indexed again.
    pub(super) fn push_front(&mut self, op: Op) {
        self.head = self.head.wrapping_sub(1);
        let e = self.pack(op, 0, 0);
        self.ring.push_front(e);
        if let Some(q) = self.by_pool.get_mut(usize::from(op.pool)) {
            q.push_front(self.head);
        }
    }

    /// The pools of the entries in queue order (ops taken by a multi-plane program included; a
    /// hole is no pool's: `None`).
    #[cfg(test)]
    fn pools(&self) -> impl Iterator<Item = Option<u16>> + '_ {
        self.ring.iter().map(|e| (e.bits & HOLE == 0).then_some(e.pool))
    }

    /// The ops in queue order (those taken by a multi-plane program included).
    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = Op> + '_ {
        self.ring.iter().filter(|e| e.bits & HOLE == 0).map(|&e| Self::unpack(&self.spill, e))
    }

    /// Removes the op at place `at`, counting holes (the places of [`Self::first_of`]; never a
    /// hole itself): the op and whether a multi-plane program took it already. An indexed op
    /// taken from the middle leaves the page index now; one taken at the head, when a gather
    /// meets its serial.
    pub(super) fn remove(&mut self, at: usize) -> Option<(Op, bool)> {
        let serial = self.head.wrapping_add(at as u64);
        let e = if at == 0 {
            let e = self.ring.pop_front()?;
            self.head = self.head.wrapping_add(1);
            while self.ring.front().is_some_and(|e| e.bits & HOLE != 0) {
                self.ring.pop_front();
                self.head = self.head.wrapping_add(1);
            }
            self.hint_head();
            e
        } else {
            let slot = self.ring.get_mut(at)?;
            debug_assert!(slot.bits & HOLE == 0, "place {at} is a hole");
            slot.bits |= HOLE;
            *slot
        };
        if let Some(q) = self.by_pool.get_mut(usize::from(e.pool)) {
            // What is taken is its pool's first: the head, or the first the fair share picked.
            debug_assert_eq!(q.front(), Some(&serial), "an entry taken before its pool's first");
            q.pop_front();
        }
        let taken = e.bits & TAKEN != 0;
        // An indexed op taken at the head stays in the page index until a gather meets it
        // there (its place is behind the head by then: see `gather`); one taken from the
        // middle leaves it now, as its place is a hole until the head reaches it.
        if at > 0 && e.bits & INDEXED != 0 && !taken {
            let (q, head) = (&mut self.by_page[e.page as usize], self.head);
            if let Some(k) = q.iter().position(|&v| place(v, head) == at) {
                q.remove(k);
            }
        }
        Some((self.take_out(e), taken))
    }

    /// Brings toward the cache what the die's next op will read (a hint): the ring two lines
    /// past the head, which the head reaches in a few ops (the ring is thousands deep under
    /// GC, so its entries have left the cache long before they come up), and, when the op now
    /// at the head is an indexed program, the ring entries of the first programs of its page
    /// on other planes that the page index lists: its multi-plane partners, gathered when it
    /// starts (that index's front came in a stage before, as the op after the head's).
    fn hint_head(&self) {
        const LINES_AHEAD: usize = 2 * 64 / std::mem::size_of::<Packed>();
        if let Some(e) = self.ring.get(LINES_AHEAD) {
            mem_prefetch::prefetch_read_data::<_, 3>(e);
        }
        let indexed = |at: usize| self.ring.get(at).filter(|h| h.bits & (INDEXED | TAKEN) == INDEXED).and_then(|h| self.by_page.get(h.page as usize));
        // A stage ahead, for the op after it: the front of its page's index.
        if let Some(s) = indexed(1).and_then(VecDeque::front) {
            mem_prefetch::prefetch_read_data::<_, 3>(s);
        }
        let Some(q) = indexed(0) else { return };
        let own = self.ring.front().map_or(0, |h| u64::from(h.plane));
        for &v in q.iter().take(4) {
            if v & PLANE_MASK != own {
                if let Some(e) = self.ring.get(place(v, self.head)) {
                    mem_prefetch::prefetch_read_data::<_, 3>(e);
                }
            }
        }
    }

    /// Multi-plane program: the indexed programs of `page`, oldest first, whose plane (as
    /// pushed) is not among `taken` (a bit per plane) join until `max` planes act together;
    /// each joins `merged`, leaves the index and is marked taken. Returns the planes,
    /// counting the ones in `taken`.
    pub(super) fn gather(&mut self, page: u32, mut taken: u32, max: u32, merged: &mut Vec<Op>) -> u32 {
        let mut planes = taken.count_ones();
        let Some(q) = self.by_page.get_mut(page as usize) else { return planes };
        let mut k = 0;
        while k < q.len() && planes < max {
            // A serial whose op has left at the head points behind it: it leaves the index
            // here, its place past the ring's end.
            let (v, head) = (q[k], self.head);
            let at = place(v, head);
            if at >= self.ring.len() {
                q.remove(k);
                continue;
            }
            // A plane taken already: its ring entry is not read.
            let bit = 1 << (v & PLANE_MASK);
            if taken & bit != 0 {
                k += 1;
                continue;
            }
            // After an op was put back at the head, a serial that had left there may point at
            // it, which is not indexed: it leaves the index too.
            let Some(e) = self.ring.get_mut(at).filter(|e| e.bits & (INDEXED | TAKEN | HOLE) == INDEXED) else {
                q.remove(k);
                continue;
            };
            taken |= bit;
            planes += 1;
            q.remove(k);
            e.bits |= TAKEN;
            let e = *e;
            merged.push(Self::unpack(&self.spill, e));
        }
        planes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::BlockId;
    use crate::media::nand::Work;

    fn program(block: u32, page: u32) -> Op {
        Op::new(Work::Program { gc: false, gen: 0 }, BlockId(block), page)
    }

    /// Planes by the block number's parity.
    fn plane(b: BlockId) -> u32 {
        b.0 % 2
    }

    /// Each tracked pool's first entry is where a walk of the queue finds it.
    fn check_pools(q: &OpQueue) {
        for p in 0..q.by_pool.len() {
            assert_eq!(q.first_of(p), q.pools().position(|x| x == Some(p as u16)), "pool {p}'s first entry");
        }
    }

    fn drain_n(q: &mut OpQueue, n: usize) -> Vec<(u32, bool)> {
        std::iter::from_fn(|| q.remove(0)).take(n).map(|(o, t)| (o.block.0, t)).collect()
    }

    fn drain(q: &mut OpQueue) -> Vec<(u32, bool)> {
        std::iter::from_fn(|| q.remove(0)).map(|(o, t)| (o.block.0, t)).collect()
    }

    #[test]
    fn order_is_kept_and_taken_ops_are_reported_when_they_come_up() {
        let mut q = OpQueue::default();
        q.push_back(program(0, 5), Some(plane(BlockId(0))));
        q.push_back(Op::new(Work::Erase, BlockId(2), 0), None);
        q.push_back(program(1, 5), Some(plane(BlockId(1))));
        q.push_back(program(3, 5), Some(plane(BlockId(3))));
        let (first, taken) = q.remove(0).unwrap();
        assert_eq!((first.block, taken), (BlockId(0), false));
        // Block 0's program on plane 0 starts: the oldest page-5 program of plane 1 joins it.
        let mut merged = Vec::new();
        assert_eq!(q.gather(5, 1 << plane(first.block), 2, &mut merged), 2);
        assert_eq!(merged.iter().map(|o| o.block).collect::<Vec<_>>(), vec![BlockId(1)]);
        assert_eq!(q.iter().map(|o| o.block.0).collect::<Vec<_>>(), vec![2, 1, 3]);
        assert_eq!(drain(&mut q), vec![(2, false), (1, true), (3, false)]);
        assert!(q.ring.is_empty() && q.free.len() == q.spill.len() && q.by_pool.iter().all(VecDeque::is_empty));
    }

    #[test]
    fn ops_gone_at_the_head_leave_the_page_index_when_a_gather_meets_them() {
        let mut q = OpQueue::default();
        for b in [0u32, 1, 3, 4] {
            q.push_back(program(b, 5), Some(plane(BlockId(b))));
        }
        // Blocks 0 and 1 start one after the other, alone: their serials stay in the index.
        assert_eq!(drain_n(&mut q, 2), vec![(0, false), (1, false)]);
        assert_eq!(q.by_page[5].len(), 4);
        // A plane-0 program of page 5 starts: block 0's and block 1's serials are met first
        // and dropped, and block 3 (plane 1) joins it.
        let mut merged = Vec::new();
        assert_eq!(q.gather(5, 1 << 0, 2, &mut merged), 2);
        assert_eq!(merged.iter().map(|o| o.block.0).collect::<Vec<_>>(), vec![3]);
        assert_eq!(q.by_page[5].len(), 1, "block 0's and 1's serials went, block 3's with its merge");
        assert_eq!(drain(&mut q), vec![(3, true), (4, false)]);
    }

    /// What a gather takes, by definition: the ring's indexed ops of `page`, not taken and
    /// not holes, oldest first, one per plane not yet taken, up to `max` planes.
    fn gather_by_scan(q: &mut OpQueue, page: u32, mut taken: u32, max: u32, plane_of: impl Fn(BlockId) -> u32, merged: &mut Vec<Op>) -> u32 {
        let mut planes = taken.count_ones();
        for e in q.ring.iter_mut() {
            if planes >= max {
                break;
            }
            if e.bits & (INDEXED | TAKEN | HOLE) == INDEXED && e.page == page && taken & (1 << plane_of(e.block)) == 0 {
                taken |= 1 << plane_of(e.block);
                planes += 1;
                e.bits |= TAKEN;
                merged.push(OpQueue::unpack(&q.spill, *e));
            }
        }
        planes
    }

    #[test]
    fn gathers_take_what_a_scan_of_the_whole_ring_takes() {
        use rand::{RngExt, SeedableRng};
        let mut rng = crate::sim::Rng::from_seed(crate::sim::stream_seed(11, 0).to_le_bytes());
        let plane4 = |b: BlockId| b.0 % 4;
        let mut joined = 0;
        for _ in 0..200 {
            let (mut q, mut reference) = (OpQueue::default(), OpQueue::default());
            q.track_pools(2);
            reference.track_pools(2);
            let mut block = 0u32;
            for _ in 0..400 {
                let step = rng.random_range(0..11);
                let page = rng.random_range(0..3);
                for q in [&mut q, &mut reference] {
                    match step {
                        0..=4 => {
                            // Programs of a few pages on random planes, an erase now and then.
                            let op = if step == 4 { Op::new(Work::Erase, BlockId(block), 0) } else { Op { pool: (block % 2) as u16, ..program(block, page) } };
                            q.push_back(op, (step != 4).then(|| plane4(op.block)));
                        }
                        5 | 6 => {
                            q.remove(0);
                        }
                        7 => {
                            // A fair share takes pool 1's first entry from the middle.
                            if let Some(at) = q.first_of(1) {
                                q.remove(at);
                            }
                        }
                        10 => {
                            // The head's op cannot start yet and goes back (not indexed again):
                            // serials that left at the head may point at it.
                            if let Some((op, false)) = q.remove(0) {
                                q.push_front(op);
                            }
                        }
                        _ => {}
                    }
                }
                block += rng.random_range(1..4);
                if step >= 8 {
                    let (taken, max) = (1u32 << rng.random_range(0..4), rng.random_range(2..5));
                    let (mut got, mut want) = (Vec::new(), Vec::new());
                    let n = q.gather(page, taken, max, &mut got);
                    assert_eq!(n, gather_by_scan(&mut reference, page, taken, max, plane4, &mut want));
                    assert_eq!(got.iter().map(|o| o.block).collect::<Vec<_>>(), want.iter().map(|o| o.block).collect::<Vec<_>>());
                    joined += got.len();
                }
            }
            let bits = |q: &OpQueue| q.ring.iter().map(|e| (e.block, e.bits & (TAKEN | HOLE))).collect::<Vec<_>>();
            assert_eq!(bits(&q), bits(&reference));
        }
        assert!(joined > 1000, "only {joined} ops joined a multi-plane program");
    }

    #[test]
    fn a_program_put_back_at_the_head_is_no_partner() {
        let mut q = OpQueue::default();
        q.push_back(program(0, 7), Some(plane(BlockId(0))));
        q.push_back(program(2, 7), Some(plane(BlockId(2))));
        let (op, _) = q.remove(0).unwrap();
        q.push_front(op);
        let mut merged = Vec::new();
        // Only block 2's program is indexed for page 7; block 0's came back unindexed.
        assert_eq!(q.gather(7, 1 << 1, 2, &mut merged), 2);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].block, BlockId(2));
        // Nor is it a partner later: nothing is left to join a plane-1 program of page 7.
        assert_eq!(q.gather(7, 1 << 1, 2, &mut merged), 1);
        assert_eq!(merged.len(), 1);
        assert_eq!(drain(&mut q), vec![(0, false), (2, true)]);
    }

    #[test]
    fn a_put_back_at_serial_zero_wraps_and_the_index_still_finds_its_ops() {
        let mut q = OpQueue::default();
        q.push_back(Op { pool: 1, ..program(0, 2) }, Some(plane(BlockId(0))));
        q.push_back(program(1, 2), Some(plane(BlockId(1))));
        q.push_back(program(3, 2), Some(plane(BlockId(3))));
        // A fair share takes block 1's program from the middle, then puts it back at the head:
        // the head's serial goes below zero.
        let (op, _) = q.remove(1).unwrap();
        q.push_front(op);
        assert_eq!(q.head, u64::MAX);
        let mut merged = Vec::new();
        assert_eq!(q.gather(2, 1 << 0, 2, &mut merged), 2);
        assert_eq!(merged[0].block, BlockId(3));
        assert_eq!(drain(&mut q), vec![(1, false), (0, false), (3, true)]);
    }

    #[test]
    fn ops_taken_from_the_middle_leave_holes_that_keep_the_index_right() {
        let mut q = OpQueue::default();
        q.track_pools(2);
        // Pools 0 and 1 alternate; page-3 programs on planes 0 and 1 throughout.
        for b in 0..8u32 {
            q.push_back(Op { pool: (b % 2) as u16, ..program(b, 3) }, Some(plane(BlockId(b))));
        }
        check_pools(&q);
        // A fair share takes pool 1's ops from the middle (places 1 and 3 of the ring).
        assert_eq!(q.remove(1).map(|(o, t)| (o.block.0, t)), Some((1, false)));
        assert_eq!(q.pools().collect::<Vec<_>>(), vec![Some(0), None, Some(0), Some(1), Some(0), Some(1), Some(0), Some(1)]);
        assert_eq!(q.remove(3).map(|(o, t)| (o.block.0, t)), Some((3, false)));
        // Block 0's program starts: the oldest indexed plane-1 program left is block 5's.
        let (first, _) = q.remove(0).unwrap();
        assert_eq!(first.block, BlockId(0));
        assert_eq!(q.pools().next(), Some(Some(0)), "the hole at the head went with it");
        check_pools(&q);
        let mut merged = Vec::new();
        assert_eq!(q.gather(3, 1 << plane(first.block), 2, &mut merged), 2);
        assert_eq!(merged[0].block, BlockId(5));
        check_pools(&q);
        // Put back at the head, block 0 comes first again, and the index still finds the rest.
        q.push_front(first);
        check_pools(&q);
        merged.clear();
        assert_eq!(q.gather(3, 1 << 0, 2, &mut merged), 2);
        assert_eq!(merged[0].block, BlockId(7));
        assert_eq!(drain(&mut q), vec![(0, false), (2, false), (4, false), (5, true), (6, false), (7, true)]);
        assert!(q.ring.is_empty() && q.free.len() == q.spill.len() && q.by_pool.iter().all(VecDeque::is_empty));
    }

    #[test]
    fn holes_side_by_side_all_go_when_they_reach_the_head_and_merged_ops_leave_holes_too() {
        let mut q = OpQueue::default();
        for b in 0..6u32 {
            q.push_back(program(b, 4), Some(plane(BlockId(b))));
        }
        // Block 0 starts with block 1 (plane 1) merged into it.
        let (first, _) = q.remove(0).unwrap();
        let mut merged = Vec::new();
        assert_eq!(q.gather(4, 1 << plane(first.block), 2, &mut merged), 2);
        // A fair share takes blocks 3 and 2 from the middle: two holes side by side.
        assert_eq!(q.remove(2).map(|(o, t)| (o.block.0, t)), Some((3, false)));
        assert_eq!(q.remove(1).map(|(o, t)| (o.block.0, t)), Some((2, false)));
        assert_eq!(q.pools().collect::<Vec<_>>(), vec![Some(0), None, None, Some(0), Some(0)]);
        // Merged block 1 comes up, reported as taken, and both holes go with it.
        assert_eq!(q.remove(0).map(|(o, t)| (o.block.0, t)), Some((1, true)));
        assert_eq!(q.pools().count(), 2);
        // The index still finds block 4 at its serial's place; merged, then taken from the
        // middle behind an op put back at the head, it is reported as taken there too.
        merged.clear();
        assert_eq!(q.gather(4, 1 << 1, 2, &mut merged), 2);
        assert_eq!(merged[0].block, BlockId(4));
        q.push_front(Op::new(Work::Erase, BlockId(9), 0));
        assert_eq!(q.remove(1).map(|(o, t)| (o.block.0, t)), Some((4, true)));
        assert_eq!(drain(&mut q), vec![(9, false), (5, false)]);
        assert!(q.ring.is_empty() && q.free.len() == q.spill.len() && q.by_pool.iter().all(VecDeque::is_empty));
    }
}
