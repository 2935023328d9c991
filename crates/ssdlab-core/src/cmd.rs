//! The command table, and what every block's handler is given: the clock, the command table,
//! the statistics probe, the run's failure slot, and the block's outbox.
//!
//! A block never schedules another block's events. It writes typed outputs (its own `Out`)
//! into its outbox, each with the instant it takes effect; the simulation's router
//! (`simulation::route`) turns each output into the next event or block call, in the order
//! they were written.

use crate::error::Error;
use crate::ids::{CmdId, QueueId};
use crate::ids::{JobId, TenantId};
use crate::io::{Kind, Op, DSM_RANGE_BYTES};
use crate::sim::{SimDuration, SimTime};
use crate::stats::{Breakdown, Component, Stats};

/// Who asked for a command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Origin {
    /// An application's I/O (a job's): what the I/O statistics count.
    #[default]
    App,
    /// The page cache: a read, readahead or writeback.
    PageCache,
    /// fio's zone management: a zbd job resets a zone before it writes it again (the kernel's
    /// BLKRESETZONE, a Zone Management Send); no I/O of the job.
    ZoneMgmt,
    /// An NVMe Flush (an emulated drive's host asked for one): the job waits for it, but the
    /// I/O statistics do not count it.
    Flush,
}

/// A write that names no FDP placement identifier.
pub const NO_PID: u16 = u16::MAX;

/// A command in flight: what it asks for, where it is, and where its time went.
#[derive(Clone, Debug)]
pub struct Command {
    pub tenant: TenantId,
    pub job: JobId,
    pub queue: QueueId,
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    pub issued: SimTime,
    /// Time up to which the breakdown is filled in.
    pub mark: SimTime,
    pub breakdown: Breakdown,
    /// PRP-list entries (0 when PRP1/PRP2 suffice).
    pub prp_entries: u64,
    /// Media accesses the controller cuts the command into (set when it is fetched).
    pub pieces: u64,
    pub pieces_left: u64,
    /// Write: the latest unit completion among pieces, and that piece's length.
    pub crit_end: SimTime,
    pub crit_len: u64,
    /// Read: media time (without waits) of the piece that became ready last.
    pub crit_media: SimDuration,
    /// Read: of that piece's wait at its die, the time the die spent on GC work.
    pub crit_gc: SimDuration,
    /// Read: the time that piece waited for its translation page (cached map), before its
    /// flash read was issued.
    pub crit_map: SimDuration,
    /// Write: the FDP placement identifier it names ([`NO_PID`]: none).
    pub pid: u16,
    /// Write: the NVMe command it is (Write, Write Zeroes, Verify, ...).
    pub kind: Kind,
    /// Metadata bytes (protection information) that cross the link with its data.
    pub md: u64,
    /// A trim of several ranges (fio's `num_range`): each range's first byte and length
    /// (`offset` is the first's, `len` their total); `None`: the one range `offset`, `len`.
    pub ranges: Option<Box<[(u64, u64)]>>,
    /// virtio-blk: which of the request's dependent reads the fetch is at.
    pub fetch_stage: u8,
    /// DMA addresses: the SQ/CQ slot, and the data buffer (a base address, or for buffered
    /// I/O the number that picks its page-cache pages).
    pub slot: u64,
    pub buf: u64,
    /// When the host finished submitting (a polling thread spins from here).
    pub submitted: SimTime,
    /// Transfer engine: the byte of the I/O its next piece starts at.
    pub next_at: u32,
    /// Who asked for it: an application's I/O, or a request of the page cache or of fio's
    /// zone management (left out of the I/O statistics).
    pub origin: Origin,
    /// The request reached the device (rang its doorbell).
    pub device: bool,
}

impl Command {
    /// Bytes of host data the command moves to the drive: a trim's range list (16 B a range),
    /// else what its kind moves.
    pub fn data_len(&self) -> u64 {
        if self.kind == Kind::Deallocate {
            DSM_RANGE_BYTES * self.ranges.as_ref().map_or(1, |r| r.len() as u64)
        } else {
            self.kind.data_len(self.len)
        }
    }

    /// The byte ranges the command addresses: its ranges, or `offset`, `len`.
    pub fn extents(&self) -> Vec<(u64, u64)> {
        self.ranges.as_ref().map_or_else(|| vec![(self.offset, self.len)], |r| r.to_vec())
    }

    /// A command of `job` (of `tenant`) arriving at `arrival`, with nothing accounted yet (the
    /// host's block layer maps it to its queue).
    #[inline]
    pub fn new(tenant: TenantId, job: JobId, op: Op, offset: u64, len: u64, arrival: SimTime) -> Self {
        Command {
            tenant,
            job,
            queue: QueueId(0),
            op,
            offset,
            len,
            issued: arrival,
            mark: arrival,
            breakdown: Breakdown::default(),
            prp_entries: 0,
            pieces: 0,
            pieces_left: 0,
            crit_end: SimTime::ZERO,
            crit_len: 0,
            crit_media: SimDuration::ZERO,
            crit_gc: SimDuration::ZERO,
            crit_map: SimDuration::ZERO,
            pid: NO_PID,
            kind: Kind::Write,
            md: 0,
            ranges: None,
            fetch_stage: 0,
            slot: 0,
            buf: 0,
            submitted: SimTime::ZERO,
            next_at: 0,
            origin: Origin::App,
            device: false,
        }
    }

    /// Attributes `[mark, until)` to `c`.
    #[inline]
    pub fn account(&mut self, c: Component, until: SimTime) {
        self.breakdown.0[c as usize] += until.since(self.mark).as_ps();
        self.mark = self.mark.max(until);
    }

    /// Adds `d` to component `c` without moving the mark (for critical-path splits).
    #[inline]
    pub fn add(&mut self, c: Component, d: SimDuration) {
        self.breakdown.0[c as usize] += d.as_ps();
    }
}

/// The commands in flight, in reusable slots.
#[derive(Default)]
pub struct Commands {
    slots: Vec<Command>,
    free: Vec<u32>,
}

impl Commands {
    /// Stores `c` in a free slot.
    #[inline]
    pub fn insert(&mut self, c: Command) -> CmdId {
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = c;
            CmdId(i)
        } else {
            self.slots.push(c);
            CmdId((self.slots.len() - 1) as u32)
        }
    }

    /// Frees the slot of a finished command.
    #[inline]
    pub fn remove(&mut self, id: CmdId) {
        self.free.push(id.0);
    }
}

impl std::ops::Index<CmdId> for Commands {
    type Output = Command;
    #[inline]
    fn index(&self, id: CmdId) -> &Command {
        &self.slots[id.0 as usize]
    }
}

impl std::ops::IndexMut<CmdId> for Commands {
    #[inline]
    fn index_mut(&mut self, id: CmdId) -> &mut Command {
        &mut self.slots[id.0 as usize]
    }
}

/// A value per command in flight, found by the command's slot: what a hash map keyed by
/// [`CmdId`] holds, without hashing (ids are the command table's slots: few, and reused).
#[derive(Clone, Debug)]
pub struct PerCmd<T> {
    slots: Vec<Option<T>>,
}

impl<T> Default for PerCmd<T> {
    fn default() -> Self {
        PerCmd { slots: Vec::new() }
    }
}

impl<T> PerCmd<T> {
    #[inline]
    pub fn get_mut(&mut self, id: CmdId) -> Option<&mut T> {
        self.slots.get_mut(id.0 as usize)?.as_mut()
    }

    #[inline]
    pub fn contains(&self, id: CmdId) -> bool {
        self.slots.get(id.0 as usize).is_some_and(Option::is_some)
    }

    /// Sets the value of `id`; returns the one it replaces.
    #[inline]
    pub fn insert(&mut self, id: CmdId, value: T) -> Option<T> {
        self.slot(id).replace(value)
    }

    /// The value of `id`, made by `make` if it has none.
    #[inline]
    pub fn get_or_insert_with(&mut self, id: CmdId, make: impl FnOnce() -> T) -> &mut T {
        self.slot(id).get_or_insert_with(make)
    }

    /// The slot of `id`, the table grown to hold it.
    #[inline]
    fn slot(&mut self, id: CmdId) -> &mut Option<T> {
        let i = id.0 as usize;
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        &mut self.slots[i]
    }

    #[inline]
    pub fn remove(&mut self, id: CmdId) -> Option<T> {
        self.slots.get_mut(id.0 as usize)?.take()
    }
}

/// A block's view of the simulation while it handles an input: `O` is the block's output type.
pub struct Ctx<'a, O> {
    pub now: SimTime,
    pub cmds: &'a mut Commands,
    /// Typed records for the statistics observer.
    pub probe: &'a mut Stats,
    /// The first error that stops the run.
    pub failure: &'a mut Option<Error>,
    /// Outputs written so far, each with the instant it takes effect.
    out: &'a mut Vec<(SimTime, O)>,
}

impl<'a, O> Ctx<'a, O> {
    #[inline]
    pub fn new(now: SimTime, cmds: &'a mut Commands, probe: &'a mut Stats, failure: &'a mut Option<Error>, out: &'a mut Vec<(SimTime, O)>) -> Self {
        Ctx { now, cmds, probe, failure, out }
    }

    /// Hands `o` to the router, to take effect at `t`.
    #[inline]
    pub fn at(&mut self, t: SimTime, o: O) {
        self.out.push((t, o));
    }

    /// Stops the run with `e` (the first failure wins).
    pub fn fail(&mut self, e: Error) {
        self.failure.get_or_insert(e);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use rand::{RngExt, SeedableRng};

    use super::*;

    /// Random inserts, updates, removals and lookups agree with a hash map's.
    #[test]
    fn per_cmd_does_what_a_hash_map_by_id_does() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let (mut t, mut m) = (PerCmd::<u32>::default(), HashMap::<CmdId, u32>::new());
        for step in 0..20_000u32 {
            let id = CmdId(rng.random_range(0..48));
            match rng.random_range(0..5u32) {
                0 => assert_eq!(t.insert(id, step), m.insert(id, step)),
                1 => assert_eq!(t.remove(id), m.remove(&id)),
                2 => assert_eq!(t.get_mut(id).map(|v| std::mem::replace(v, step)), m.get_mut(&id).map(|v| std::mem::replace(v, step))),
                3 => {
                    *t.get_or_insert_with(id, || 100) += 1;
                    *m.entry(id).or_insert(100) += 1;
                }
                _ => assert_eq!(t.contains(id), m.contains_key(&id)),
            }
        }
        for i in 0..64 {
            assert_eq!(t.get_mut(CmdId(i)).copied(), m.get(&CmdId(i)).copied(), "slot {i}");
        }
    }
}
