//! The future-event list.
//!
//! Events are ordered by their time and, at the same time, by the order they were pushed in.
//! Two events at the same picosecond therefore run in the order they were scheduled (FIFO),
//! which makes every run a pure function of its config and seed: no tie is ever broken by heap
//! layout or hashing.
//!
//! The list is in two parts: the earliest events in order in a ring (at most `NEAR` of
//! them, in a fixed array indexed modulo a power of two), and the rest in a binary min-heap,
//! no entry of which precedes an entry of the ring. A simulation schedules most events either
//! sooner than everything pending (a TLP's hop, a controller step: about three in four at
//! QD32) or later than everything (the command's next step after a long wait): both are an
//! insert at an end of the ring, and a pop is the ring's front. On an aged drive about half
//! land second or third instead, behind another command's next hop: the one or two entries
//! ahead move down one place. A push to either end, second or third is inlined where the
//! event is scheduled. A push further into the middle moves the shorter side of the ring by
//! one place (a long run as slice copies: on an aged drive, a host command's events land among
//! the dies' array operations and the other commands' events, 64 pending). Only an event no
//! earlier than the heap's first, or one that overflows a full ring, goes to the heap, so many
//! pending events (thousands of timers) cost what a heap costs. A run of events scheduled
//! together in time order (a chunk's codewords, a die's pieces) is merged into the ring in one
//! pass, so that an entry it passes moves once, not once per event. Cancellation is not needed
//! by any model yet (timers that may become stale carry a generation number that the handler
//! checks instead).
//!
//! The ring keeps ties in order by position, so its entries carry only time and event. The
//! heap orders by `(time, seq)`: an event pushed to it takes the next of a counter that rises
//! from 2^63, and an event the full ring hands over takes the next of one that falls from just
//! below. Both orders hold because no ring entry follows a heap entry: a handed-over event
//! precedes every event then in the heap, and each later hand-over precedes it in turn.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::time::SimTime;

/// The most events the ring holds; the latest of a full ring moves to the heap.
const NEAR: usize = 256;

/// The ring's storage: a power of two above `NEAR`, so that a position wraps by a mask.
const CAP: usize = 512;
const MASK: usize = CAP - 1;

/// Ring positions a push scans from either end before it searches by bisection.
const SCAN: usize = 8;

/// An event in the heap, with its place among the heap's events at the same time.
#[derive(Clone, Copy)]
struct Entry<E> {
    time: SimTime,
    seq: u64,
    event: E,
}

/// An event in the ring: its place in the ring is its order, so it carries no `seq` (a ring
/// entry is moved when a push lands before it, and a smaller one moves faster).
#[derive(Clone, Copy)]
struct Near<E> {
    time: SimTime,
    event: E,
}

/// The `seq` of the first event pushed straight to the heap; events the ring hands over to the
/// heap count down from just below it.
const SEQ_BASE: u64 = 1 << 63;

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

/// Entries a push into the ring moves one by one; a longer run is copied as slices.
const SHORT: usize = 8;

/// Moves the `len` entries at positions `from..from + len` of the ring (modulo `CAP`) `d`
/// places up, last first: a short run one by one, a longer one as slices (out of line).
/// Source and destination span less than `CAP` places.
#[allow(clippy::inline_always)]
#[inline(always)]
fn move_up<T: Copy>(ring: &mut [T], from: usize, len: usize, d: usize) {
    if len <= SHORT {
        for j in (0..len).rev() {
            ring[(from + j + d) & MASK] = ring[(from + j) & MASK];
        }
    } else {
        copy_up(ring, from, len, d);
    }
}

/// [`move_up`]'s long runs: one slice where neither end wraps, else slices that neither
/// start nor end across the storage's end.
#[inline(never)]
fn copy_up<T: Copy>(ring: &mut [T], from: usize, len: usize, d: usize) {
    if from + len + d <= CAP {
        ring.copy_within(from..from + len, from + d);
        return;
    }
    let mut left = len;
    while left > 0 {
        let (src, dst) = ((from + left - 1) & MASK, (from + left - 1 + d) & MASK);
        let c = left.min(src + 1).min(dst + 1);
        ring.copy_within(src + 1 - c..=src, dst + 1 - c);
        left -= c;
    }
}

/// Moves the `len` entries at positions `from..from + len` of the ring (modulo `CAP`) `d`
/// places down, first first, as [`move_up`] moves them up.
#[allow(clippy::inline_always)]
#[inline(always)]
fn move_down<T: Copy>(ring: &mut [T], from: usize, len: usize, d: usize) {
    if len <= SHORT {
        for j in 0..len {
            ring[(from + j + CAP - d) & MASK] = ring[(from + j) & MASK];
        }
    } else {
        copy_down(ring, from, len, d);
    }
}

/// [`move_down`]'s long runs, as [`copy_up`] copies them.
#[inline(never)]
fn copy_down<T: Copy>(ring: &mut [T], from: usize, len: usize, d: usize) {
    if from >= d && from + len <= CAP {
        ring.copy_within(from..from + len, from - d);
        return;
    }
    let mut done = 0;
    while done < len {
        let (src, dst) = ((from + done) & MASK, (from + done + CAP - d) & MASK);
        let c = (len - done).min(CAP - src).min(CAP - dst);
        ring.copy_within(src..src + c, dst);
        done += c;
    }
}

/// Puts `entry` at place `k` of the ring that starts at `head`, the `k` entries ahead of it
/// moved down one place, as [`EventQueue::insert_incoming`] moves them for a place in the
/// front half; returns the ring's new head.
#[allow(clippy::inline_always)]
#[inline(always)]
fn behind_front<T: Copy>(ring: &mut [T], head: usize, k: usize, entry: T) -> usize {
    move_down(ring, head, k, 1);
    let h = (head + MASK) & MASK;
    ring[(h + k) & MASK] = entry;
    h
}

/// The first of ring positions `lo..hi` (from `head`) whose entry is later than `time`, or
/// `hi`: the entries are in time order.
#[inline]
fn bisect<E>(ring: &[Near<E>], head: usize, (mut lo, mut hi): (usize, usize), time: SimTime) -> usize {
    while lo < hi {
        let mid = usize::midpoint(lo, hi);
        if ring[(head + mid) & MASK].time <= time {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A deterministic priority queue of timed events.
pub struct EventQueue<E> {
    /// The ring's storage, `CAP` entries (empty until the first push fills it with copies of
    /// that event, so that `E` needs no default); the ring is `len` entries from `head`, in
    /// the order they run, and none follows an entry of `heap`.
    ring: Vec<Near<E>>,
    head: usize,
    len: usize,
    heap: BinaryHeap<Entry<E>>,
    /// The time of the heap's first entry (`u64::MAX` ps when it is empty), kept beside it so
    /// that an inline push tests one field.
    heap_first: SimTime,
    /// The `seq` of the next event pushed to the heap (from `SEQ_BASE` up).
    up: u64,
    /// The `seq` of the next event the ring hands over to the heap (from `SEQ_BASE - 1` down).
    down: u64,
    /// The entry an inline push hands to an out-of-line path. Passed as an argument, it was
    /// taken by address, so each caller built it on its stack and copied it into the ring from
    /// there: 16-byte loads over the event's narrower stores, which a store buffer does not
    /// forward (`perf` put about a tenth of the PCM reads' samples right after those loads).
    /// Left here instead, it goes to its place field by field.
    incoming: Option<Near<E>>,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { ring: Vec::new(), head: 0, len: 0, heap: BinaryHeap::with_capacity(1024), heap_first: SimTime(u64::MAX), up: SEQ_BASE, down: SEQ_BASE - 1, incoming: None }
    }

    /// Schedules `event` at `time`. Among events at the same time, earlier calls run first.
    ///
    /// Inlined at the caller for the common cases: an event no earlier than every pending one,
    /// one earlier than all of them, and one that lands second or third (on an aged drive
    /// most pushes land among the first few places, behind the next hop of another command);
    /// an event for the heap or further into the ring is a call.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn push(&mut self, time: SimTime, event: E) {
        let entry = Near { time, event };
        let (n, head) = (self.len, self.head);
        // The new entry is the latest pushed, so it follows every entry at its time or earlier
        // and precedes every later one: its place is found by time alone. It stays in the ring
        // if the heap holds nothing at or before `time` and the ring has room.
        if n < NEAR && time < self.heap_first && self.ring.len() == CAP {
            // (Sliced to its length, so that the masked positions need no bounds checks.)
            let ring = &mut self.ring[..CAP];
            if n == 0 || ring[(head + n - 1) & MASK].time <= time {
                ring[(head + n) & MASK] = entry;
                self.len = n + 1;
            } else if time < ring[head & MASK].time {
                self.head = (head + MASK) & MASK;
                ring[self.head & MASK] = entry;
                self.len = n + 1;
            } else if time < ring[(head + 1) & MASK].time {
                // Second place (the ring's last is later than `time`, the first is not: it
                // holds two entries or more).
                self.head = behind_front(ring, head, 1, entry);
                self.len = n + 1;
            } else if n > 3 && time < ring[(head + 2) & MASK].time {
                // Third place, in a ring of four or more.
                self.head = behind_front(ring, head, 2, entry);
                self.len = n + 1;
            } else {
                self.incoming = Some(entry);
                self.insert_incoming();
            }
        } else {
            self.incoming = Some(entry);
            self.push_rest();
        }
    }

    /// [`Self::push`]'s other cases for the entry it left in `incoming`: the first push, an
    /// entry for the heap, and a full ring.
    #[inline(never)]
    fn push_rest(&mut self) {
        let Some(time) = self.incoming.as_ref().map(|e| e.time) else { return };
        if self.heap_first <= time {
            if let Some(entry) = self.incoming.take() {
                self.push_heap(entry);
            }
            return;
        }
        if self.ring.is_empty() {
            if let Some(entry) = self.incoming {
                self.ring = vec![entry; CAP];
            }
        }
        let (n, head) = (self.len, self.head);
        if n == 0 || self.ring[(head + n - 1) & MASK].time <= time {
            if let Some(entry) = self.incoming.take() {
                if n == NEAR {
                    self.push_heap(entry);
                } else {
                    self.ring[(head + n) & MASK] = entry;
                    self.len = n + 1;
                }
            }
            return;
        }
        self.insert_incoming();
    }

    /// Puts a pushed `entry` in the heap, after every entry there at its time.
    fn push_heap(&mut self, entry: Near<E>) {
        let seq = self.up;
        self.up += 1;
        self.heap_put(entry, seq);
    }

    /// Puts the ring's last entry in the heap, before every entry there.
    fn hand_over(&mut self, entry: Near<E>) {
        let seq = self.down;
        self.down -= 1;
        self.heap_put(entry, seq);
    }

    fn heap_put(&mut self, Near { time, event }: Near<E>, seq: u64) {
        self.heap_first = self.heap_first.min(time);
        self.heap.push(Entry { time, seq, event });
    }

    /// Puts the entry [`Self::push`] left in `incoming` in its place inside the ring: it
    /// precedes the ring's last entry. Only its time is read before the entries move; the
    /// entry itself is copied last, by when its stores have left the store buffer.
    #[inline(never)]
    fn insert_incoming(&mut self) {
        let Some(time) = self.incoming.as_ref().map(|e| e.time) else { return };
        let (n, head) = (self.len, self.head);
        let ring = &mut self.ring[..CAP];
        let at = |i: usize| ring[(head + i) & MASK].time;
        // `i`, the first position whose entry is later than `time`, is below `n`: the ring's
        // last is later. Among the first `SCAN` places or the last, it is found by a scan from
        // that end (on an aged drive most pushes land near the front; where a medium's pieces
        // end one after another, near the back), else by bisection between.
        let mut i;
        if n <= 2 * SCAN || at(SCAN - 1) > time {
            i = 0;
            while at(i) <= time {
                i += 1;
            }
        } else if at(n - SCAN) <= time {
            i = n - 1;
            while at(i - 1) > time {
                i -= 1;
            }
        } else {
            i = bisect(ring, head, (SCAN, n - SCAN), time);
        }
        // Make room at `i` by moving the shorter side by one place.
        if i <= n / 2 {
            self.head = (head + MASK) & MASK;
            move_down(ring, head, i, 1);
        } else {
            move_up(ring, (head + i) & MASK, n - i, 1);
        }
        if let Some(entry) = self.incoming.take() {
            ring[(self.head + i) & MASK] = entry;
        }
        if n == NEAR {
            // The ring's last moves to the heap: it precedes every entry there, as the whole
            // ring does.
            let last = ring[(self.head + NEAR) & MASK];
            self.hand_over(last);
        } else {
            self.len = n + 1;
        }
    }

    /// Schedules each of `items` in turn, as that many [`Self::push`] calls would. A run in
    /// time order that fits in the ring ahead of the heap (a medium's codewords or pieces,
    /// handed over at once) is merged into the ring in one pass, from the end where fewer
    /// entries move, where one push each would move them once per item.
    pub fn push_all(&mut self, items: &[(SimTime, E)]) {
        let (count, len, head) = (items.len(), self.len, self.head);
        let Some(&(last, _)) = items.last() else { return };
        if count < 2 || len + count > NEAR || last >= self.heap_first || self.ring.len() != CAP || !items.windows(2).all(|w| w[0].0 <= w[1].0) {
            for &(time, event) in items {
                self.push(time, event);
            }
            return;
        }
        let ring = &mut self.ring[..CAP];
        // Existing entries from `after` on are later than the run's first item, those before
        // `upto` no later than its last: only those may move. A tie goes after its equals.
        let after = bisect(ring, head, (0, len), items[0].0);
        if after == len {
            // All after the ring's last: appends.
            for (j, &(time, event)) in items.iter().enumerate() {
                ring[(head + len + j) & MASK] = Near { time, event };
            }
            self.len = len + count;
            return;
        }
        let upto = bisect(ring, head, (after, len), last);
        let at = |ring: &[Near<E>], i: usize| ring[(head + i) & MASK].time;
        if len - after <= upto {
            // From the back: item `j` lands before the entries later than it, which move up
            // by the `j + 1` items that land before them (a few one by one as they are
            // compared, more as one run once bisection has found where they start).
            let mut hi = len;
            for (j, &(time, event)) in items.iter().enumerate().rev() {
                let stop = hi.saturating_sub(SCAN).max(after);
                while hi > stop && at(ring, hi - 1) > time {
                    hi -= 1;
                    ring[(head + hi + j + 1) & MASK] = ring[(head + hi) & MASK];
                }
                if hi == stop && hi > after {
                    let from = bisect(ring, head, (after, hi), time);
                    move_up(ring, (head + from) & MASK, hi - from, j + 1);
                    hi = from;
                }
                ring[(head + hi + j) & MASK] = Near { time, event };
            }
        } else {
            // From the front: item `j` lands after the entries no later than it, which move
            // down by the `count - j` items that land after them.
            let mut lo = 0;
            for (j, &(time, event)) in items.iter().enumerate() {
                let down = count - j;
                let stop = (lo + SCAN).min(upto);
                while lo < stop && at(ring, lo) <= time {
                    ring[(head + CAP + lo - down) & MASK] = ring[(head + lo) & MASK];
                    lo += 1;
                }
                if lo == stop && lo < upto {
                    let to = bisect(ring, head, (lo, upto), time);
                    move_down(ring, (head + lo) & MASK, to - lo, down);
                    lo = to;
                }
                ring[(head + CAP + lo - down) & MASK] = Near { time, event };
            }
            self.head = (head + CAP - count) & MASK;
        }
        self.len = len + count;
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        match self.ring.get(self.head) {
            Some(&e) if self.len > 0 => {
                self.head = (self.head + 1) & MASK;
                self.len -= 1;
                Some((e.time, e.event))
            }
            _ => {
                let e = self.heap.pop()?;
                self.heap_first = self.heap.peek().map_or(SimTime(u64::MAX), |f| f.time);
                Some((e.time, e.event))
            }
        }
    }

    /// The time of the earliest event, if any.
    pub fn peek_time(&self) -> Option<SimTime> {
        match self.ring.get(self.head) {
            Some(e) if self.len > 0 => Some(e.time),
            _ => self.heap.peek().map(|e| e.time),
        }
    }

    pub fn len(&self) -> usize {
        self.len + self.heap.len()
    }

    /// The place a push at `time` would take: how many pending events run before it (those
    /// at `time` or earlier). For the `census` feature's count; it walks the whole list.
    #[cfg(feature = "census")]
    pub fn place_of(&self, time: SimTime) -> usize {
        let ring = (0..self.len).filter(|&i| self.ring[(self.head + i) & MASK].time <= time).count();
        ring + self.heap.iter().filter(|e| e.time <= time).count()
    }

    /// The times of the pending events, in the order they will be popped. For the `census`
    /// feature, which starts its log with them; it copies and sorts the heap.
    #[cfg(feature = "census")]
    pub fn pending_times(&self) -> Vec<SimTime> {
        let mut heap: Vec<(SimTime, u64)> = self.heap.iter().map(|e| (e.time, e.seq)).collect();
        heap.sort_unstable();
        (0..self.len).map(|i| self.ring[(self.head + i) & MASK].time).chain(heap.into_iter().map(|(t, _)| t)).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0 && self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;

    #[cfg(feature = "census")]
    #[test]
    fn a_push_takes_the_place_place_of_gives() {
        use rand::{RngExt, SeedableRng};
        let mut rng = crate::sim::Rng::seed_from_u64(17);
        let mut next = move || rng.random::<u64>();
        for round in 0..300u64 {
            let mut q: EventQueue<u64> = EventQueue::new();
            // Up to 600 pending (past the ring's 256, into the heap), times with many ties.
            for i in 0..next() % 600 {
                q.push(SimTime(next() % 200), i);
            }
            let t = SimTime(next() % 220);
            let place = q.place_of(t);
            q.push(t, u64::MAX);
            let mut popped = 0;
            while let Some((_, e)) = q.pop() {
                if e == u64::MAX {
                    break;
                }
                popped += 1;
            }
            assert_eq!(popped, place, "round {round}");
        }
    }

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
        // Three earlier events: each hands the ring's last over to the heap, where each must
        // precede the ones handed over before it and the ones pushed there.
        for k in 0..3 {
            q.push(SimTime(3), u32::MAX - k);
        }
        q.push(SimTime(5), n);
        assert_eq!(q.len(), n as usize + 4);
        for k in 0..3 {
            assert_eq!(q.pop(), Some((SimTime(3), u32::MAX - k)));
        }
        for i in 0..=n {
            assert_eq!(q.pop(), Some((SimTime(5), i)));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn each_way_in_keeps_the_order() {
        // Every path of `push`, in turn: appends, pushes at the front until the ring is full,
        // one more at the front of the full ring (its last moves to the heap), one after the
        // ring's last (to the heap, behind it), one at the heap's first time (to the heap,
        // after it), and pushes into the middle of the ring.
        let mut q = EventQueue::new();
        let mut want = Vec::new();
        let mut push = |q: &mut EventQueue<u32>, t: u64| {
            let tag = want.len() as u32;
            q.push(SimTime(t), tag);
            want.push((t, tag));
        };
        for t in [1_000, 2_000, 3_000] {
            push(&mut q, t);
        }
        for k in 0..NEAR as u64 {
            push(&mut q, 999 - k);
        }
        push(&mut q, 5);
        push(&mut q, 4_000);
        push(&mut q, 2_000);
        for t in [500, 501, 500, 743, 10, 999] {
            push(&mut q, t);
        }
        want.sort_by_key(|&(t, tag)| (t, tag));
        let got: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop().map(|(t, e)| (t.0, e))).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn long_moves_wrap_around_the_ring() {
        // A ring of 40 entries starting at every position of the storage, and a push at each
        // of its places: the run that moves (up to 20 entries, copied as slices) wraps around
        // the storage's end, or ends or starts right at it, at some start.
        for start in 0..CAP {
            for at in 0..=40u64 {
                let mut q = EventQueue::new();
                q.push(SimTime(0), 0u32);
                q.pop();
                q.head = start;
                let mut want: Vec<(u64, u32)> = (1..=40).map(|k| (10 * k, k as u32)).collect();
                for &(t, tag) in &want {
                    q.push(SimTime(t), tag);
                }
                q.push(SimTime(10 * at + 5), 99);
                want.push((10 * at + 5, 99));
                want.sort_unstable();
                let got: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop().map(|(t, e)| (t.0, e))).collect();
                assert_eq!(got, want, "ring from {start}, push after its {at}th");
            }
        }
    }

    #[test]
    fn a_tie_goes_after_its_equals_at_each_place_of_the_ring() {
        // A ring of 40 entries, two at each time, and a push at each time: it must follow both
        // of its equals, whether the scan from the front, the scan from the back or the
        // bisection finds its place.
        for at in 1..=20u64 {
            let mut q = EventQueue::new();
            let mut want: Vec<(u64, u32)> = (0..40).map(|k| (10 * (k / 2 + 1), k as u32)).collect();
            for &(t, tag) in &want {
                q.push(SimTime(t), tag);
            }
            q.push(SimTime(10 * at), 99);
            want.push((10 * at, 99));
            want.sort_unstable();
            let got: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop().map(|(t, e)| (t.0, e))).collect();
            assert_eq!(got, want, "a push at {}", 10 * at);
        }
    }

    #[test]
    fn pushes_landing_second_or_third_keep_time_and_push_order() {
        // Rings of 2 to 6 entries at times 10, 20, ...; a push at each time from 5 to 65 (ties
        // with every entry, and every place between): the pops must be in time order, a tie
        // after its equal.
        for n in 2..=6u64 {
            for t in 5..=65u64 {
                let mut q = EventQueue::new();
                let mut want: Vec<(u64, u32)> = (0..n).map(|k| (10 * (k + 1), k as u32)).collect();
                for &(time, tag) in &want {
                    q.push(SimTime(time), tag);
                }
                q.push(SimTime(t), 99);
                want.push((t, 99));
                want.sort_by_key(|&(time, tag)| (time, tag));
                let got: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop().map(|(time, e)| (time.0, e))).collect();
                assert_eq!(got, want, "{n} entries, a push at {t}");
            }
        }
    }

    #[test]
    fn a_run_pushed_at_once_lands_where_its_pushes_one_by_one_would() {
        // Two queues fed the same pushes and pops, one taking each run through `push_all` and
        // the other one push per item: runs in order and out of it, with ties among the items
        // and with the ring's entries, that merge from either end of rings starting anywhere
        // in the storage, fill the ring to the brim, overflow it, or reach the heap's times.
        use rand::{RngExt, SeedableRng};
        let mut rng = crate::sim::Rng::seed_from_u64(11);
        for case in 0..400u32 {
            let (mut a, mut b) = (EventQueue::new(), EventQueue::new());
            a.push(SimTime(0), 0u32);
            b.push(SimTime(0), 0u32);
            a.pop();
            b.pop();
            let start = rng.random::<u64>() as usize % CAP;
            (a.head, b.head) = (start, start);
            let (mut now, mut tag) = (0u64, 1u32);
            for _ in 0..400 {
                let k = (rng.random::<u64>() % 12) as usize;
                let spread = [4, 50, 5_000][(rng.random::<u64>() % 3) as usize];
                let mut run: Vec<(SimTime, u32)> = (0..k)
                    .map(|_| {
                        tag += 1;
                        (SimTime(now + rng.random::<u64>() % spread), tag)
                    })
                    .collect();
                if rng.random::<u64>() % 4 != 0 {
                    run.sort_by_key(|&(t, _)| t);
                }
                a.push_all(&run);
                for &(t, e) in &run {
                    b.push(t, e);
                }
                assert_eq!(a.len(), b.len(), "case {case}");
                let pops = rng.random::<u64>() % if a.len() > NEAR { 16 } else { 10 };
                for _ in 0..pops {
                    let got = a.pop();
                    assert_eq!(got, b.pop(), "case {case}");
                    if let Some((t, _)) = got {
                        now = t.0;
                    }
                }
            }
            while let Some(want) = b.pop() {
                assert_eq!(a.pop(), Some(want), "case {case}");
            }
            assert!(a.is_empty());
        }
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
