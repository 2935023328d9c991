//! The future-event list.
//!
//! Events are ordered by the key `(time, seq)`, where `seq` is a counter that increases with
//! every insertion. Two events at the same picosecond therefore run in the order they were
//! scheduled (FIFO), which makes every run a pure function of its config and seed: no tie is
//! ever broken by heap layout or hashing. The list is a binary min-heap with the earliest event
//! held beside it when it arrived after the heap's: a step that schedules the next step of a
//! command sooner than anything pending (a TLP's hop, a controller step) hands it straight to
//! the next pop, and the heap never sees it. Cancellation is not needed by any model yet (timers
//! that may become stale carry a generation number that the handler checks instead).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::time::SimTime;

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
    heap: BinaryHeap<Entry<E>>,
    /// When set, the earliest event of all: it precedes every entry of `heap`.
    next: Option<Entry<E>>,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(1024), next: None, seq: 0 }
    }

    /// Schedules `event` at `time`. Among events at the same time, earlier calls run first.
    #[inline]
    pub fn push(&mut self, time: SimTime, event: E) {
        let seq = self.seq;
        self.seq += 1;
        let entry = Entry { time, seq, event };
        // The new entry has the largest `seq` yet, so it precedes another only by time.
        match self.next.take() {
            Some(next) if time < next.time => {
                self.next = Some(entry);
                self.heap.push(next);
            }
            Some(next) => {
                self.next = Some(next);
                self.heap.push(entry);
            }
            None => match self.heap.peek() {
                Some(first) if first.time <= time => self.heap.push(entry),
                _ => self.next = Some(entry),
            },
        }
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.next.take().or_else(|| self.heap.pop()).map(|e| (e.time, e.event))
    }

    /// The time of the earliest event, if any.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.next.as_ref().or_else(|| self.heap.peek()).map(|e| e.time)
    }

    pub fn len(&self) -> usize {
        self.heap.len() + usize::from(self.next.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.next.is_none() && self.heap.is_empty()
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
