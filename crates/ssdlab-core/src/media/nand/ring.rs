//! A double-ended ring of `Copy` entries over a power-of-two buffer, for a die's queue of
//! operations (thousands deep under GC). Unlike `VecDeque`, every place of the buffer holds an
//! entry (a filler where none is queued), so a push can bring in ahead of time the line that a
//! later push will write: the back of a ring thousands deep was last written a lap ago, and a
//! store to it otherwise waits for the line to come from memory.

/// Entries the back's hint runs ahead of it (two lines of 16-byte entries).
const HINT_AHEAD: usize = 8;

pub(super) struct Ring<T> {
    /// A power of two of places (or none, before the first push).
    buf: Vec<T>,
    head: usize,
    len: usize,
    /// What fills places that hold no entry.
    filler: T,
}

impl<T: Copy + Default> Default for Ring<T> {
    fn default() -> Self {
        Ring::new(T::default())
    }
}

impl<T: Copy> Ring<T> {
    pub(super) fn new(filler: T) -> Self {
        Ring { buf: Vec::new(), head: 0, len: 0, filler }
    }

    #[inline]
    fn mask(&self) -> usize {
        self.buf.len().wrapping_sub(1)
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entry at place `i` from the front, if there is one.
    #[inline]
    pub(super) fn get(&self, i: usize) -> Option<&T> {
        if i < self.len {
            self.buf.get((self.head + i) & self.mask())
        } else {
            None
        }
    }

    #[inline]
    pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i < self.len {
            let m = self.mask();
            self.buf.get_mut((self.head + i) & m)
        } else {
            None
        }
    }

    #[inline]
    pub(super) fn front(&self) -> Option<&T> {
        self.get(0)
    }

    /// Appends `e`, and hints the place a push a few later will write.
    #[inline]
    pub(super) fn push_back(&mut self, e: T) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let m = self.mask();
        self.buf[(self.head + self.len) & m] = e;
        self.len += 1;
        mem_prefetch::prefetch_read_data::<_, 3>(&self.buf[(self.head + self.len + HINT_AHEAD) & m]);
    }

    #[inline]
    pub(super) fn push_front(&mut self, e: T) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let m = self.mask();
        self.head = (self.head + m) & m;
        self.buf[self.head] = e;
        self.len += 1;
    }

    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let e = self.buf[self.head];
        self.head = (self.head + 1) & self.mask();
        self.len -= 1;
        Some(e)
    }

    /// The entries from the front.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len).filter_map(|i| self.get(i))
    }

    /// The entries from the front, to change.
    #[cfg(test)]
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> + '_ {
        let (head, len) = (self.head, self.len);
        let (back, front) = self.buf.split_at_mut(head);
        // From the head to the buffer's end, then from its start, as far as the ring goes.
        front.iter_mut().chain(back.iter_mut()).take(len)
    }

    /// Twice the places (16 at first), the entries moved to the front of the new buffer.
    #[cold]
    fn grow(&mut self) {
        let cap = (self.buf.len() * 2).max(16);
        let mut buf = vec![self.filler; cap];
        for (i, slot) in buf.iter_mut().enumerate().take(self.len) {
            *slot = self.buf[(self.head + i) & self.mask()];
        }
        self.buf = buf;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use rand::{RngExt, SeedableRng};

    use super::*;

    #[test]
    fn behaves_as_a_vecdeque_through_growth_and_wrapping() {
        let mut draw = crate::sim::Rng::seed_from_u64(5);
        let (mut ours, mut model) = (Ring::new(u32::MAX), VecDeque::new());
        for n in 0..20_000u32 {
            match draw.random_range(0..10) {
                0..=4 => {
                    ours.push_back(n);
                    model.push_back(n);
                }
                5 => {
                    ours.push_front(n);
                    model.push_front(n);
                }
                _ => assert_eq!(ours.pop_front(), model.pop_front()),
            }
            assert_eq!(ours.len(), model.len());
            assert_eq!(ours.front(), model.front());
            let i = draw.random_range(0..model.len() + 2);
            assert_eq!(ours.get(i), model.get(i));
            if let (Some(a), Some(b)) = (ours.get_mut(i), model.get_mut(i)) {
                *a += 1;
                *b += 1;
            }
        }
        assert!(ours.iter().eq(model.iter()));
        for (a, b) in ours.iter_mut().zip(model.iter_mut()) {
            *a ^= 7;
            *b ^= 7;
        }
        assert!(ours.iter().eq(model.iter()));
        while let Some(e) = model.pop_front() {
            assert_eq!(ours.pop_front(), Some(e));
        }
        assert!(ours.is_empty() && ours.pop_front().is_none());
    }
}
