//! The future-event list.
//!
//! Events are ordered by the key `(time, seq)`, where `seq` is a counter that increases with
//! every insertion. Two events at the same picosecond therefore run in the order they were
//! scheduled (FIFO), which makes every run a pure function of its config and seed: no tie is
//! ever broken by heap layout or hashing.
//!
//! The list is in two parts: the earliest events in key order in a ring (`near`, at most
//! [`NEAR`] of them), and the rest in a binary min-heap, no entry of which precedes an entry of
//! the ring. A simulation schedules most events either sooner than everything pending (a
//! TLP's hop, a controller step: about three in four at QD32) or later than everything (the
//! command's next step after a long wait): both are an insert at an end of the ring, found by
//! a short scan, and a pop is the ring's front. Only an event no earlier than the heap's first,
//! or one that overflows a full ring, goes to the heap, so many pending events (thousands of
//! timers) cost what a heap costs. Cancellation is not needed by any model yet (timers that
//! may become stale carry a generation number that the handler checks instead).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use super::time::SimTime;

/// The most events the ring holds; the latest of a full ring moves to the heap.
const NEAR: usize = 256;

/// Ring positions a push scans from the front before it searches by bisection.
const SCAN: usize = 8;

struct Entry<E> {
    time: SimTime,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest `(time, seq)`.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// A deterministic priority queue of timed events.
pub struct EventQueue<E> {
    /// The earliest events in `(time, seq)` order; none follows an entry of `heap`.
    near: VecDeque<Entry<E>>,
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { near: VecDeque::with_capacity(NEAR + 1), heap: BinaryHeap::with_capacity(1024), seq: 0 }
    }

    /// Schedules `event` at `time`. Among events at the same time, earlier calls run first.
    #[inline]
    pub fn push(&mut self, time: SimTime, event: E) {
        let seq = self.seq;
        self.seq += 1;
        let entry = Entry { time, seq, event };
        // The new entry has the largest `seq` yet, so it follows every entry at its time or
        // earlier and precedes every later one: its place is found by time alone.
        if matches!(self.heap.peek(), Some(first) if first.time <= time) {
            self.heap.push(entry);
            return;
        }
        let n = self.near.len();
        match self.near.back() {
            Some(last) if last.time > time => {
                let mut at = 0;
                while at < n.min(SCAN) && self.near[at].time <= time {
                    at += 1;
                }
                if at == SCAN {
                    at = self.near.partition_point(|e| e.time <= time);
                }
                self.near.insert(at, entry);
                if n == NEAR {
                    // It precedes every entry of the heap, as the whole ring does.
                    if let Some(last) = self.near.pop_back() {
                        self.heap.push(last);
                    }
                }
            }
            _ if n == NEAR => self.heap.push(entry),
            _ => self.near.push_back(entry),
        }
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.near.pop_front().or_else(|| self.heap.pop()).map(|e| (e.time, e.event))
    }

    /// The time of the earliest event, if any.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.near.front().or_else(|| self.heap.peek()).map(|e| e.time)
    }

    pub fn len(&self) -> usize {
        self.near.len() + self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.near.is_empty() && self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;

    #[test]
    fn pops_in_time_order_and_fifo_at_equal_time() {
        let mut q = EventQueue::new();
        q.push(SimTime(20), 'c');
        q.push(SimTime(10), 'a');
        q.push(SimTime(20), 'd');
        q.push(SimTime(10), 'b');
        q.push(SimTime(5), 'z');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['z', 'a', 'b', 'c', 'd']);
    }

    #[test]
    fn ties_keep_their_order_across_a_full_ring_and_the_heap() {
        // More events at one instant than the ring holds: the later ones go to the heap, an
        // earlier event then pushes the ring's last into the heap too, and all still come out
        // in the order they were scheduled.
        let mut q = EventQueue::new();
        let n = NEAR as u32 + 40;
        for i in 0..n {
            q.push(SimTime(5), i);
        }
        q.push(SimTime(3), u32::MAX);
        q.push(SimTime(5), n);
        assert_eq!(q.len(), n as usize + 2);
        assert_eq!(q.pop(), Some((SimTime(3), u32::MAX)));
        for i in 0..=n {
            assert_eq!(q.pop(), Some((SimTime(5), i)));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn pops_what_a_binary_heap_of_time_and_seq_pops() {
        // Pushes and pops interleaved as a simulation does them (never earlier than the last
        // pop), with many ties: the order must be std's binary heap's on (time, seq).
        use rand::{RngExt, SeedableRng};
        let mut q = EventQueue::new();
        let mut reference = std::collections::BinaryHeap::new();
        let mut rng = crate::sim::Rng::seed_from_u64(7);
        let (mut now, mut seq) = (0u64, 0u64);
        for round in 0..200_000u32 {
            let pushes = rng.random::<u64>() % 3;
            for _ in 0..pushes {
                let delay = match rng.random::<u64>() % 4 {
                    0 => 0,
                    1 => rng.random::<u64>() % 8,
                    2 => rng.random::<u64>() % 1000,
                    _ => rng.random::<u64>() % 1_000_000,
                };
                q.push(SimTime(now + delay), round);
                reference.push(Reverse((now + delay, seq, round)));
                seq += 1;
            }
            if rng.random::<u64>() % 2 == 0 || q.len() > 500 {
                let got = q.pop();
                let want = reference.pop().map(|Reverse((t, _, e))| (SimTime(t), e));
                assert_eq!(got, want);
                if let Some((t, _)) = got {
                    now = t.0;
                }
            }
            assert_eq!(q.len(), reference.len());
            assert_eq!(q.peek_time(), reference.peek().map(|Reverse((t, _, _))| SimTime(*t)));
        }
        while let Some(want) = reference.pop() {
            assert_eq!(q.pop(), Some((SimTime(want.0 .0), want.0 .2)));
        }
        assert!(q.is_empty());
    }
}
