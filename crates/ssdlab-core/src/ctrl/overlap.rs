//! The controller's overlap check: commands whose data ranges share a unit (`ctrl.overlap`
//! bytes, aligned) reach the media one after another, in arrival order. A later one waits
//! before its media access until the earlier one has posted its completion, as firmware that
//! tracks LBA collisions does to keep overlapping commands ordered.
//!
//! Leaves out: the lookup's own cost (charged nowhere) and any distinction between reads and
//! writes (two reads of one unit serialise too, which is what seed 004's crowded reads show).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::ids::CmdId;

/// Which media entry a held-back command resumes at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    Read,
    Write,
}

/// Units in use and the commands waiting for theirs.
#[derive(Debug, Default)]
pub struct Overlap {
    /// Unit size in bytes (0 = no check).
    unit: u64,
    /// Unit -> the command holding it.
    held: FxHashMap<u64, CmdId>,
    /// Commands waiting, in arrival order, with their range and entry.
    waiting: VecDeque<(CmdId, u64, u64, Entry)>,
    /// Commands that had to wait.
    pub waits: u64,
}

impl Overlap {
    pub fn new(unit: u64) -> Self {
        Overlap { unit, ..Overlap::default() }
    }

    pub fn enabled(&self) -> bool {
        self.unit > 0
    }

    fn units(&self, offset: u64, len: u64) -> std::ops::RangeInclusive<u64> {
        offset / self.unit..=(offset + len.max(1) - 1) / self.unit
    }

    fn free(&self, offset: u64, len: u64) -> bool {
        self.units(offset, len).all(|u| !self.held.contains_key(&u))
    }

    fn overlaps(&self, (a, al): (u64, u64), (b, bl): (u64, u64)) -> bool {
        let (ua, ub) = (self.units(a, al), self.units(b, bl));
        ua.start() <= ub.end() && ub.start() <= ua.end()
    }

    fn take(&mut self, id: CmdId, offset: u64, len: u64) {
        for u in self.units(offset, len) {
            self.held.insert(u, id);
        }
    }

    /// Command `id` of `[offset, offset + len)` wants the media: true if it may go now (its
    /// units are then held); otherwise it waits, behind every earlier waiter it overlaps.
    pub fn enter(&mut self, id: CmdId, offset: u64, len: u64, entry: Entry) -> bool {
        if self.free(offset, len) && self.waiting.iter().all(|&(_, o, l, _)| !self.overlaps((o, l), (offset, len))) {
            self.take(id, offset, len);
            return true;
        }
        self.waits += 1;
        self.waiting.push_back((id, offset, len, entry));
        false
    }

    /// Command `id` of `[offset, offset + len)` has completed: its units free, and the waiters
    /// whose units are now free go (in order; one that still waits holds back the later
    /// waiters that overlap it). Pushes those that go onto `ready`.
    pub fn leave(&mut self, id: CmdId, offset: u64, len: u64, ready: &mut Vec<(CmdId, Entry)>) {
        for u in self.units(offset, len) {
            if self.held.get(&u) == Some(&id) {
                self.held.remove(&u);
            }
        }
        let mut blocked: Vec<(u64, u64)> = Vec::new();
        let mut at = 0;
        while at < self.waiting.len() {
            let (cmd, start, bytes, entry) = self.waiting[at];
            let clear = self.free(start, bytes) && blocked.iter().all(|&range| !self.overlaps(range, (start, bytes)));
            if clear {
                self.take(cmd, start, bytes);
                ready.push((cmd, entry));
                self.waiting.remove(at);
            } else {
                blocked.push((start, bytes));
                at += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::many_single_char_names)]
    fn overlapping_commands_go_in_arrival_order_and_others_pass() {
        let mut o = Overlap::new(4096);
        let (a, b, c, d) = (CmdId(1), CmdId(2), CmdId(3), CmdId(4));
        assert!(o.enter(a, 0, 4096, Entry::Read));
        assert!(!o.enter(b, 512, 512, Entry::Read), "shares a's unit");
        assert!(!o.enter(c, 0, 8192, Entry::Write), "overlaps a, and b waits before it");
        assert!(o.enter(d, 16384, 4096, Entry::Read), "overlaps nothing: passes the waiters");
        let mut ready = Vec::new();
        o.leave(a, 0, 4096, &mut ready);
        assert_eq!(ready, vec![(b, Entry::Read)], "c overlaps b, which goes first");
        ready.clear();
        o.leave(b, 512, 512, &mut ready);
        assert_eq!(ready, vec![(c, Entry::Write)]);
        assert_eq!(o.waits, 2);
    }
}
