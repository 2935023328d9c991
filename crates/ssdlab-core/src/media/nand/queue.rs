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
//! reported as taken when it comes up (the die skips it).

use std::collections::VecDeque;

use super::Op;

/// A queued op, and how the queue holds it.
#[derive(Clone, Copy)]
struct Entry {
    op: Op,
    /// Merged into a multi-plane program already: reported as taken when it comes up.
    taken: bool,
    /// Listed in the page index (a program queued at the back while multi-plane is on).
    indexed: bool,
    /// Taken from the middle: a hole until it reaches the head.
    hole: bool,
}

/// The queue of one die.
#[derive(Default)]
pub(super) struct OpQueue {
    ring: VecDeque<Entry>,
    /// The serial of the entry at the head of the ring (wrapping).
    head: u64,
    /// Per page offset: the serials of the indexed programs of that offset, in queue order.
    by_page: Vec<VecDeque<u64>>,
}

impl OpQueue {
    /// Queues `op` at the back; with `index`, a program that multi-plane partners may find.
    pub(super) fn push_back(&mut self, op: Op, index: bool) {
        let serial = self.head.wrapping_add(self.ring.len() as u64);
        self.ring.push_back(Entry { op, taken: false, indexed: index, hole: false });
        if index {
            let page = op.page as usize;
            if page >= self.by_page.len() {
                self.by_page.resize_with(page + 1, VecDeque::new);
            }
            self.by_page[page].push_back(serial);
        }
    }

    /// Puts `op` back at the head (it was taken but cannot start yet); it is not indexed again.
    pub(super) fn push_front(&mut self, op: Op) {
        self.head = self.head.wrapping_sub(1);
        self.ring.push_front(Entry { op, taken: false, indexed: false, hole: false });
    }

    /// The pools of the entries in queue order, for a pool's fair share to pick from (ops taken
    /// by a multi-plane program included; a hole is no pool's: `None`).
    pub(super) fn pools(&self) -> impl Iterator<Item = Option<u16>> + '_ {
        self.ring.iter().map(|e| (!e.hole).then_some(e.op.pool))
    }

    /// The ops in queue order (those taken by a multi-plane program included).
    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = &Op> {
        self.ring.iter().filter(|e| !e.hole).map(|e| &e.op)
    }

    /// Removes the op at place `at`, counting holes (the places of [`Self::pools`]; never a
    /// hole itself): the op and whether a multi-plane program took it already. An indexed op
    /// leaves the page index too.
    pub(super) fn remove(&mut self, at: usize) -> Option<(Op, bool)> {
        let serial = self.head.wrapping_add(at as u64);
        let e = if at == 0 {
            let e = self.ring.pop_front()?;
            self.head = self.head.wrapping_add(1);
            while self.ring.front().is_some_and(|e| e.hole) {
                self.ring.pop_front();
                self.head = self.head.wrapping_add(1);
            }
            e
        } else {
            let slot = self.ring.get_mut(at)?;
            debug_assert!(!slot.hole, "place {at} is a hole");
            slot.hole = true;
            *slot
        };
        if e.indexed && !e.taken {
            let q = &mut self.by_page[e.op.page as usize];
            if let Some(k) = q.iter().position(|&s| s == serial) {
                q.remove(k);
            }
        }
        Some((e.op, e.taken))
    }

    /// Multi-plane program: the indexed programs of `page`, oldest first, whose plane
    /// (`plane_of`) is not among `taken` (a bit per plane) join until `max` planes act
    /// together; each joins `merged`, leaves the index and is marked taken. Returns the
    /// planes, counting the ones in `taken`.
    pub(super) fn gather(&mut self, page: u32, mut taken: u32, max: u32, plane_of: impl Fn(&Op) -> u32, merged: &mut Vec<Op>) -> u32 {
        let mut planes = taken.count_ones();
        let Some(q) = self.by_page.get_mut(page as usize) else { return planes };
        let mut k = 0;
        while k < q.len() && planes < max {
            let e = &mut self.ring[q[k].wrapping_sub(self.head) as usize];
            let bit = 1 << plane_of(&e.op);
            if taken & bit != 0 {
                k += 1;
                continue;
            }
            taken |= bit;
            planes += 1;
            q.remove(k);
            e.taken = true;
            merged.push(e.op);
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
    fn plane(o: &Op) -> u32 {
        o.block.0 % 2
    }

    fn drain(q: &mut OpQueue) -> Vec<(u32, bool)> {
        std::iter::from_fn(|| q.remove(0)).map(|(o, t)| (o.block.0, t)).collect()
    }

    #[test]
    fn order_is_kept_and_taken_ops_are_reported_when_they_come_up() {
        let mut q = OpQueue::default();
        q.push_back(program(0, 5), true);
        q.push_back(Op::new(Work::Erase, BlockId(2), 0), false);
        q.push_back(program(1, 5), true);
        q.push_back(program(3, 5), true);
        let (first, taken) = q.remove(0).unwrap();
        assert_eq!((first.block, taken), (BlockId(0), false));
        // Block 0's program on plane 0 starts: the oldest page-5 program of plane 1 joins it.
        let mut merged = Vec::new();
        assert_eq!(q.gather(5, 1 << plane(&first), 2, plane, &mut merged), 2);
        assert_eq!(merged.iter().map(|o| o.block).collect::<Vec<_>>(), vec![BlockId(1)]);
        assert_eq!(q.iter().map(|o| o.block.0).collect::<Vec<_>>(), vec![2, 1, 3]);
        assert_eq!(drain(&mut q), vec![(2, false), (1, true), (3, false)]);
        assert!(q.ring.is_empty() && q.by_page.iter().all(VecDeque::is_empty));
    }

    #[test]
    fn a_program_put_back_at_the_head_is_no_partner() {
        let mut q = OpQueue::default();
        q.push_back(program(0, 7), true);
        q.push_back(program(2, 7), true);
        let (op, _) = q.remove(0).unwrap();
        q.push_front(op);
        let mut merged = Vec::new();
        // Only block 2's program is indexed for page 7; block 0's came back unindexed.
        assert_eq!(q.gather(7, 1 << 1, 2, plane, &mut merged), 2);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].block, BlockId(2));
        // Nor is it a partner later: nothing is left to join a plane-1 program of page 7.
        assert_eq!(q.gather(7, 1 << 1, 2, plane, &mut merged), 1);
        assert_eq!(merged.len(), 1);
        assert_eq!(drain(&mut q), vec![(0, false), (2, true)]);
    }

    #[test]
    fn a_put_back_at_serial_zero_wraps_and_the_index_still_finds_its_ops() {
        let mut q = OpQueue::default();
        q.push_back(Op { pool: 1, ..program(0, 2) }, true);
        q.push_back(program(1, 2), true);
        q.push_back(program(3, 2), true);
        // A fair share takes block 1's program from the middle, then puts it back at the head:
        // the head's serial goes below zero.
        let (op, _) = q.remove(1).unwrap();
        q.push_front(op);
        assert_eq!(q.head, u64::MAX);
        let mut merged = Vec::new();
        assert_eq!(q.gather(2, 1 << 0, 2, plane, &mut merged), 2);
        assert_eq!(merged[0].block, BlockId(3));
        assert_eq!(drain(&mut q), vec![(1, false), (0, false), (3, true)]);
    }

    #[test]
    fn ops_taken_from_the_middle_leave_holes_that_keep_the_index_right() {
        let mut q = OpQueue::default();
        // Pools 0 and 1 alternate; page-3 programs on planes 0 and 1 throughout.
        for b in 0..8u32 {
            q.push_back(Op { pool: (b % 2) as u16, ..program(b, 3) }, true);
        }
        // A fair share takes pool 1's ops from the middle (places 1 and 3 of the ring).
        assert_eq!(q.remove(1).map(|(o, t)| (o.block.0, t)), Some((1, false)));
        assert_eq!(q.pools().collect::<Vec<_>>(), vec![Some(0), None, Some(0), Some(1), Some(0), Some(1), Some(0), Some(1)]);
        assert_eq!(q.remove(3).map(|(o, t)| (o.block.0, t)), Some((3, false)));
        // Block 0's program starts: the oldest indexed plane-1 program left is block 5's.
        let (first, _) = q.remove(0).unwrap();
        assert_eq!(first.block, BlockId(0));
        assert_eq!(q.pools().next(), Some(Some(0)), "the hole at the head went with it");
        let mut merged = Vec::new();
        assert_eq!(q.gather(3, 1 << plane(&first), 2, plane, &mut merged), 2);
        assert_eq!(merged[0].block, BlockId(5));
        // Put back at the head, block 0 comes first again, and the index still finds the rest.
        q.push_front(first);
        merged.clear();
        assert_eq!(q.gather(3, 1 << 0, 2, plane, &mut merged), 2);
        assert_eq!(merged[0].block, BlockId(7));
        assert_eq!(drain(&mut q), vec![(0, false), (2, false), (4, false), (5, true), (6, false), (7, true)]);
        assert!(q.ring.is_empty() && q.by_page.iter().all(VecDeque::is_empty));
    }

    #[test]
    fn holes_side_by_side_all_go_when_they_reach_the_head_and_merged_ops_leave_holes_too() {
        let mut q = OpQueue::default();
        for b in 0..6u32 {
            q.push_back(program(b, 4), true);
        }
        // Block 0 starts with block 1 (plane 1) merged into it.
        let (first, _) = q.remove(0).unwrap();
        let mut merged = Vec::new();
        assert_eq!(q.gather(4, 1 << plane(&first), 2, plane, &mut merged), 2);
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
        assert_eq!(q.gather(4, 1 << 1, 2, plane, &mut merged), 2);
        assert_eq!(merged[0].block, BlockId(4));
        q.push_front(Op::new(Work::Erase, BlockId(9), 0));
        assert_eq!(q.remove(1).map(|(o, t)| (o.block.0, t)), Some((4, true)));
        assert_eq!(drain(&mut q), vec![(9, false), (5, false)]);
        assert!(q.ring.is_empty() && q.by_page.iter().all(VecDeque::is_empty));
    }
}
