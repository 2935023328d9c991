//! fio's `zonemode=zbd` on a zoned drive: the host's view of the zones (a zone report when
//! the run starts, then its own writes and resets), and how fio moves each I/O it generated
//! to a place the zones accept (`zbd.c`: `zbd_adjust_block`, `zbd_convert_to_write_zone`).
//!
//! - A write goes to its zone's write pointer, cut to what the zone has left. A full zone is
//!   reset first (the job drains its queue, then resets it: fio's `io_u_quiesce` and
//!   `__zbd_reset_zone`). With `max_open_zones`, a write to a zone outside the set of zones
//!   being written goes to one inside it (the set fills as writes open zones, and a zone
//!   leaves it when full). With `zone_reset_frequency`, once the job's zones hold
//!   `zone_reset_threshold` of its size, every 1/frequency-th write resets its zone first.
//! - A read stays below the write pointer: a random one at its offset within the zone's
//!   written part, a sequential one from the next zone holding data (with no zone holding
//!   data, the job is done), unless `read_beyond_wp`.
//! - A trim resets a whole zone (fio's `zbd_do_io_u_trim`: a Zone Management Send reset in
//!   place of a deallocate); a random one that finds its zone empty takes the nearest zone of
//!   the job's range holding data (none: the job is done). It waits for a write under way to
//!   its zone, and writes to the zone wait for it.
//! - Linux lets one write per zone be in flight (mq-deadline's zone write lock), so the
//!   drive sees each zone's writes in order: the host holds a write to a zone with a write
//!   under way until that one completes (the job goes on issuing others meanwhile).
//!
//! Leaves out: conventional zones, zone capacity below the zone size, `zone_append`, zone
//! finish for remainders below the block size, and the random search fio does when every
//! write zone is full (the write then resets the zone it picked).

use crate::io::Op;

/// What to do with a generated I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Issue it at this offset and length.
    Io { offset: u64, len: u64 },
    /// Reset zone `zone` first (after the job's queue drains), then write at its start.
    Reset { zone: usize, len: u64 },
    /// Wait: the zone is being reset.
    Busy { zone: usize },
    /// No zone holds data to read: the job is done.
    Eof,
}

/// The zoned drive as the host sees it.
#[derive(Clone, Debug)]
pub struct ZoneView {
    zone: u64,
    /// Bytes written in each zone.
    wp: Vec<u64>,
    /// Per zone, the writes in flight (one holding the write lock, or Zone Appends), and
    /// zones being reset.
    busy: Vec<u32>,
    resetting: Vec<bool>,
    /// The zones being written (fio's `write_zones[]`), and how many may be.
    open: Vec<usize>,
    max_open: usize,
}

/// One job's zbd options and state.
#[derive(Clone, Debug, Default)]
pub struct ZbdJob {
    /// The job's region: first byte and length.
    pub start: u64,
    pub len: u64,
    pub min_bs: u64,
    pub random: bool,
    pub read_beyond_wp: bool,
    /// `zone_reset_threshold` and `zone_reset_frequency` (0: off), and the writes left
    /// until the next reset.
    pub reset_threshold: f64,
    pub reset_frequency: f64,
    pub writes_left: u64,
}

impl ZoneView {
    /// Zones of `zone` bytes, each holding `wp[i]` bytes; at most `max_open` written at once
    /// (0: no limit).
    pub fn new(zone: u64, wp: Vec<u64>, max_open: usize) -> Self {
        let n = wp.len();
        ZoneView { zone, wp, busy: vec![0; n], resetting: vec![false; n], open: Vec::new(), max_open }
    }

    pub fn zone_bytes(&self) -> u64 {
        self.zone
    }

    /// Where the I/O `op` of `len` bytes that `job` generated at `offset` goes.
    pub fn place(&mut self, job: &mut ZbdJob, op: Op, offset: u64, len: u64) -> Place {
        let z = ((offset / self.zone) as usize).min(self.wp.len().saturating_sub(1));
        if op == Op::Read {
            return self.place_read(job, z, offset, len);
        }
        let mut z = z;
        if self.max_open > 0 && !self.open.contains(&z) && self.open.len() >= self.max_open {
            // fio: start from write_zones[(off - file_offset) * n / io_size] and take the
            // first zone of the job's range with room for a block.
            let n = self.open.len();
            let first = (u128::from(offset.saturating_sub(job.start)) * n as u128 / u128::from(job.len.max(1))) as usize % n;
            let in_range = |zz: usize| (zz as u64 * self.zone) >= job.start && ((zz as u64 + 1) * self.zone) <= job.start + job.len;
            let pick = (0..n).map(|i| self.open[(first + i) % n]).find(|&zz| in_range(zz) && self.zone - self.wp[zz] >= job.min_bs);
            z = pick.unwrap_or(self.open[first]);
        }
        if self.resetting[z] {
            return Place::Busy { zone: z };
        }
        let mut reset = self.zone - self.wp[z] < job.min_bs;
        if job.reset_frequency > 0.0 {
            let zones = self.job_zones(job);
            let valid: u64 = zones.map(|zz| self.wp[zz]).sum();
            if valid as f64 >= job.len as f64 * job.reset_threshold {
                job.writes_left = job.writes_left.saturating_sub(1);
                if job.writes_left == 0 {
                    // fio truncates 1/frequency to an integer.
                    job.writes_left = ((1.0 / job.reset_frequency) as u64).max(1);
                    reset = true;
                }
            }
        }
        if !self.open.contains(&z) {
            self.open.push(z);
        }
        if reset {
            return Place::Reset { zone: z, len: len.min(self.zone) };
        }
        let room = self.zone - self.wp[z];
        let len = len.min(room) / job.min_bs.max(1) * job.min_bs.max(1);
        Place::Io { offset: z as u64 * self.zone + self.wp[z], len }
    }

    /// Where a trim the job generated at `offset` goes: the whole zone, reset (see the module
    /// notes). The zone is locked against writes until [`ZoneView::reset`].
    pub fn place_trim(&mut self, job: &ZbdJob, offset: u64) -> Place {
        let mut z = self.zone_of(offset);
        if job.random && self.wp[z] == 0 {
            let range = self.job_zones(job);
            let found = (1..=self.wp.len()).flat_map(|d| [z.checked_add(d), z.checked_sub(d)]).flatten().find(|&zz| range.contains(&zz) && self.wp[zz] > 0);
            match found {
                Some(zz) => z = zz,
                None => return Place::Eof,
            }
        }
        if self.resetting[z] || self.busy[z] > 0 {
            return Place::Busy { zone: z };
        }
        self.resetting[z] = true;
        self.open.retain(|&x| x != z);
        Place::Io { offset: z as u64 * self.zone, len: self.zone }
    }

    fn job_zones(&self, job: &ZbdJob) -> std::ops::Range<usize> {
        let first = (job.start / self.zone) as usize;
        let last = ((job.start + job.len).div_ceil(self.zone) as usize).min(self.wp.len());
        first..last
    }

    fn place_read(&self, job: &ZbdJob, z: usize, offset: u64, len: u64) -> Place {
        if job.read_beyond_wp {
            return Place::Io { offset, len };
        }
        let min = job.min_bs.max(1);
        let ok = |zz: usize| self.wp[zz] >= min;
        let seq_short = !job.random && offset + min > z as u64 * self.zone + self.wp[z];
        let zone = if !ok(z) || seq_short {
            let range = self.job_zones(job);
            let found = if job.random {
                // fio searches outward: +1, -1, +2, -2, ...
                (1..=self.wp.len()).flat_map(|d| [z.checked_add(d), z.checked_sub(d)]).flatten().find(|&zz| range.contains(&zz) && ok(zz))
            } else {
                (z + 1..range.end).find(|&zz| ok(zz))
            };
            match found {
                Some(zz) => zz,
                None => return Place::Eof,
            }
        } else {
            z
        };
        let start = zone as u64 * self.zone;
        let written = self.wp[zone];
        if !job.random {
            let at = if zone == z { offset } else { start };
            let len = len.min(start + written - at) / min * min;
            return Place::Io { offset: at, len: len.max(min) };
        }
        let at = if written <= len { start } else { start + ((offset - z as u64 * self.zone) % (written - len)) / min * min };
        let len = len.min(start + written - at) / min * min;
        Place::Io { offset: at, len: len.max(min) }
    }

    /// A write of `len` bytes at `offset` was submitted: the zone's pointer moves on. Returns
    /// whether it goes to the drive now: it takes the zone's write lock, or is a Zone Append
    /// (`append`), which needs none; else it waits for the write under way.
    pub fn issued(&mut self, offset: u64, len: u64, append: bool) -> bool {
        let z = self.zone_of(offset);
        self.wp[z] = (self.wp[z] + len).min(self.zone);
        if append || self.busy[z] == 0 {
            self.busy[z] += 1;
            return true;
        }
        false
    }

    /// The zone holding byte `offset`.
    pub fn zone_of(&self, offset: u64) -> usize {
        ((offset / self.zone) as usize).min(self.wp.len().saturating_sub(1))
    }

    /// A write to `zone` completed and no other waits for its lock; once none is in flight, a
    /// full zone leaves the set being written (fio's `zbd_end_zone_io`).
    pub fn unlock(&mut self, zone: usize) {
        self.busy[zone] = self.busy[zone].saturating_sub(1);
        if self.busy[zone] == 0 && self.wp[zone] == self.zone && !self.resetting[zone] {
            self.open.retain(|&x| x != zone);
        }
    }

    /// Whether a write to `zone` is in flight (a reset waits for it).
    pub fn write_locked(&self, zone: usize) -> bool {
        self.busy[zone] > 0
    }

    /// Zone `zone` is being reset: writes placed in it wait.
    pub fn lock(&mut self, zone: usize) {
        self.resetting[zone] = true;
    }

    /// Zone `zone` was reset.
    pub fn reset(&mut self, zone: usize) {
        self.wp[zone] = 0;
        self.resetting[zone] = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 1 << 20;

    fn job(random: bool) -> ZbdJob {
        ZbdJob { start: 0, len: 4 * 256 * M, min_bs: 512 * 1024, random, ..ZbdJob::default() }
    }

    #[test]
    fn writes_go_to_the_write_pointer_and_a_full_zone_is_reset_first() {
        let mut v = ZoneView::new(256 * M, vec![0, 256 * M, 100 * M, 0], 0);
        let mut j = job(true);
        assert_eq!(v.place(&mut j, Op::Write, 2 * 256 * M + 5 * M, 512 * 1024), Place::Io { offset: 2 * 256 * M + 100 * M, len: 512 * 1024 });
        assert_eq!(v.place(&mut j, Op::Write, 256 * M + 7, 512 * 1024), Place::Reset { zone: 1, len: 512 * 1024 });
        assert!(v.issued(2 * 256 * M + 100 * M, 512 * 1024, false), "the first write takes the zone's lock");
        assert_eq!(v.place(&mut j, Op::Write, 2 * 256 * M, 512 * 1024), Place::Io { offset: 2 * 256 * M + 100 * M + 512 * 1024, len: 512 * 1024 });
        assert!(!v.issued(2 * 256 * M + 100 * M + 512 * 1024, 512 * 1024, false), "the next waits for it");
        assert!(v.issued(2 * 256 * M + 100 * M + M, 512 * 1024, true), "a Zone Append needs no lock");
        v.lock(1);
        assert_eq!(v.place(&mut j, Op::Write, 256 * M, 512 * 1024), Place::Busy { zone: 1 }, "a zone being reset takes nothing");
    }

    #[test]
    fn a_trim_resets_a_zone_holding_data_and_locks_it_meanwhile() {
        let mut v = ZoneView::new(256 * M, vec![0, 0, 100 * M, 0], 0);
        let j = job(true);
        // Zone 0 is empty: a random trim takes the nearest zone holding data.
        assert_eq!(v.place_trim(&j, 5 * M), Place::Io { offset: 2 * 256 * M, len: 256 * M });
        assert_eq!(v.place(&mut job(true), Op::Write, 2 * 256 * M, M), Place::Busy { zone: 2 }, "writes wait for the reset");
        v.reset(2);
        assert_eq!(v.place_trim(&j, 0), Place::Eof, "no zone holds data");
        // A write under way holds the trim back.
        assert!(v.issued(256 * M, M, false));
        assert_eq!(v.place_trim(&j, 256 * M), Place::Busy { zone: 1 });
    }

    #[test]
    fn reads_stay_below_the_write_pointer() {
        let v = ZoneView::new(256 * M, vec![0, 10 * M, 0, 0], 0);
        let j = job(true);
        let Place::Io { offset, len } = v.place_read(&j, 0, 3 * M, M) else { panic!() };
        assert!(offset >= 256 * M && offset + len <= 266 * M, "moved to zone 1's written part");
        let seq = job(false);
        assert_eq!(v.place_read(&seq, 2, 2 * 256 * M, M), Place::Eof, "nothing written after zone 2");
    }

    #[test]
    fn max_open_zones_keeps_writes_in_the_open_set() {
        let mut v = ZoneView::new(256 * M, vec![0; 8], 2);
        let mut j = ZbdJob { len: 8 * 256 * M, ..job(true) };
        for z in [0u64, 1] {
            let Place::Io { offset, len } = v.place(&mut j, Op::Write, z * 256 * M, 512 * 1024) else { panic!() };
            v.issued(offset, len, false);
            v.unlock(v.zone_of(offset));
        }
        let Place::Io { offset, .. } = v.place(&mut j, Op::Write, 5 * 256 * M, 512 * 1024) else { panic!() };
        assert!(offset / (256 * M) < 2, "zone 5 is outside the open set: {offset}");
    }
}
