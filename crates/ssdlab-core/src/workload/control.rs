//! fio's control loops inside one job, as fio 3.42 runs them (`backend.c`, `io_u.c`):
//! bandwidth caps per direction, the minimum-rate check, and the latency-target search for the
//! deepest queue that meets a latency percentile.
//!
//! - **Rate** (`rate=r,w`): each direction has a cumulative schedule, the next I/O of a
//!   direction being due when `bytes issued / rate` has passed since the job started
//!   (`usec_for_io`), so a job that fell behind catches up with back-to-back I/Os. A job draws
//!   its direction (rwmix), takes the other one if only that one is due (`rate_ddir`), and
//!   when neither is due it waits for every I/O in flight to finish (`io_u_quiesce`) and then
//!   until the earlier of the two. A direction without a cap is always due.
//! - **Minimum rate** (`rate_min`, `rate_iops_min`, `rate_cycle`): after two seconds of the
//!   job, a baseline of completed bytes and I/Os per direction; then, at completions at least
//!   `rate_cycle` after the baseline, a direction that has completed anything must have done
//!   its minimum over that span, or the job ends with an error (`__check_min_rate`).
//! - **Latency target** (`latency_target`, `latency_window`, `latency_percentile`,
//!   `latency_run`): the job starts at depth 1. At each window's end, if at least the
//!   percentile of its I/Os finished within the target, the depth grows (doubling while the
//!   upper bound is the job's iodepth, then bisecting); if not, it shrinks between the last
//!   good depth and this one, after the queue drains (`lat_target_success`,
//!   `__lat_target_failed`). With the percentile at 100, one slow I/O fails the window at once,
//!   and one at depth 1 ends the job with an error. Without `latency_run`, once the depth stops
//!   moving the job's statistics restart for one last window at that depth, and then it ends.
//!
//! Leaves out: fio's trim direction, `rate_process = poisson` for byte caps, and the
//! `rate_iops`-with-`bssplit` fixed-interval variant (ssdlab's `rate_iops` is its own open loop).

use crate::io::Op;
use crate::sim::{SimDuration, SimTime, PS_PER_S};

/// The settling time before the first minimum-rate baseline (fio's 2000 ms).
const MIN_RATE_SETTLE: SimDuration = SimDuration::from_ps(2 * PS_PER_S);

/// What the job may issue now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// An I/O in this direction.
    Now(Op),
    /// Nothing before this time (after the I/Os in flight finish).
    Wait(SimTime),
}

/// What a completion tells the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Go on.
    Go,
    /// Drain the queue, then call [`Control::drained`] and go on at the new depth.
    Drain,
    /// The depth search has settled: drain, restart the job's statistics, and run one last
    /// window.
    FinalRun,
    /// The job is done (its last window after the search).
    Done,
    /// The job ends with this error (fio's message).
    Error(String),
}

/// The latency-target search state (fio's `latency_*` fields of a thread).
#[derive(Clone, Debug)]
struct LatTarget {
    target: SimDuration,
    window: SimDuration,
    percentile: f64,
    run: bool,
    max_depth: u32,
    qd: u32,
    low: u32,
    high: u32,
    stable: u32,
    failed: u64,
    since: SimTime,
    ios: u64,
    end_run: bool,
    /// The queue is draining before a new window: completions meanwhile are not judged.
    draining: bool,
}

/// One job's control state.
#[derive(Clone, Debug)]
pub struct Control {
    start: SimTime,
    /// Bytes per second per direction (0: no cap), and bytes issued so far.
    bps: [u64; 2],
    issued: [u64; 2],
    /// Minimum bytes and I/Os per second per direction (0: none), and the check's cycle.
    min_bps: [u64; 2],
    min_iops: [u64; 2],
    cycle: SimDuration,
    done_bytes: [u64; 2],
    done_ios: [u64; 2],
    /// Per direction, fio's `lastrate`: when the span under check began, with the bytes and
    /// I/Os done by then.
    base: [Option<(SimTime, u64, u64)>; 2],
    lat: Option<LatTarget>,
    /// The end of the ramp (fio resets the schedule, the minimum-rate check and the latency
    /// search there, and checks nothing before), and whether it has passed.
    ramp_end: SimTime,
    ramped: bool,
}

/// The limits a job's config sets (see [`super::config::WorkloadConfig`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    pub rate: [u64; 2],
    pub rate_min: [u64; 2],
    pub rate_iops_min: [u64; 2],
    pub rate_cycle: SimDuration,
    /// The group's `ramp_time`.
    pub ramp_time: SimDuration,
    /// `latency_target` (zero: off), window, percentile, `latency_run`.
    pub latency_target: SimDuration,
    pub latency_window: SimDuration,
    pub latency_percentile: f64,
    pub latency_run: bool,
}

/// The direction's slot: reads, or writes (trims count with the writes: `workload.rate` has no
/// trim value).
fn index(op: Op) -> usize {
    usize::from(op != Op::Read)
}

fn other(op: Op) -> Op {
    if op == Op::Read {
        Op::Write
    } else {
        Op::Read
    }
}

impl Control {
    /// The control of a job that starts at `start` with `iodepth` slots.
    pub fn new(l: &Limits, start: SimTime, iodepth: u32) -> Self {
        let lat = (l.latency_target > SimDuration::ZERO).then_some(LatTarget {
            target: l.latency_target,
            window: l.latency_window,
            percentile: l.latency_percentile,
            run: l.latency_run,
            max_depth: iodepth,
            qd: 1,
            low: 1,
            high: iodepth,
            stable: 0,
            failed: 0,
            since: start,
            ios: 0,
            end_run: false,
            draining: false,
        });
        Control {
            start,
            bps: l.rate,
            issued: [0; 2],
            min_bps: l.rate_min,
            min_iops: l.rate_iops_min,
            cycle: l.rate_cycle,
            done_bytes: [0; 2],
            done_ios: [0; 2],
            base: [None; 2],
            lat,
            ramp_end: SimTime::ZERO + l.ramp_time,
            ramped: l.ramp_time == SimDuration::ZERO,
        }
    }

    /// The job starts at `now` (after waiting for others): schedules count from here.
    pub fn begin(&mut self, now: SimTime) {
        self.start = now;
        if let Some(l) = self.lat.as_mut() {
            l.since = now;
        }
    }

    /// Whether issuing is paced by a bandwidth cap.
    pub fn paced(&self) -> bool {
        self.bps != [0; 2]
    }

    /// The depth the job may keep in flight now (its iodepth, or the latency search's depth).
    pub fn depth(&self, iodepth: u32) -> u32 {
        self.lat.as_ref().map_or(iodepth, |l| l.qd.min(iodepth))
    }

    /// The final depth of the latency search (fio's `latency_depth`), if there is one.
    pub fn latency_depth(&self) -> Option<u32> {
        self.lat.as_ref().map(|l| l.qd)
    }

    fn due(&self, op: Op) -> SimTime {
        let i = index(op);
        if self.bps[i] == 0 {
            return SimTime::ZERO;
        }
        let ps = u128::from(self.issued[i]) * u128::from(PS_PER_S) / u128::from(self.bps[i]);
        self.start + SimDuration::from_ps(u64::try_from(ps).unwrap_or(u64::MAX))
    }

    /// fio's `reset_all_stats` at the end of the ramp: the rate schedule, the minimum-rate
    /// check (its settling time too) and the latency window start again.
    fn ramp(&mut self, now: SimTime) {
        if self.ramped || now < self.ramp_end {
            return;
        }
        self.ramped = true;
        self.start = self.start.max(self.ramp_end);
        self.issued = [0; 2];
        self.done_bytes = [0; 2];
        self.done_ios = [0; 2];
        self.base = [None; 2];
        if let Some(l) = self.lat.as_mut() {
            Self::cycle(l, now);
        }
    }

    /// The direction to issue at `now`, given the one the rwmix drew; `mixed` says whether the
    /// job issues both directions.
    pub fn pace(&mut self, now: SimTime, drawn: Op, mixed: bool) -> Pace {
        self.ramp(now);
        let mine = self.due(drawn);
        if now >= mine {
            return Pace::Now(drawn);
        }
        if mixed {
            let theirs = self.due(other(drawn));
            if now >= theirs {
                return Pace::Now(other(drawn));
            }
            return Pace::Wait(mine.min(theirs));
        }
        Pace::Wait(mine)
    }

    /// An I/O of `len` bytes in direction `op` was issued.
    pub fn issued(&mut self, op: Op, len: u64) {
        self.issued[index(op)] += len;
    }

    /// An I/O finished at `now` after `latency`; what the job does next.
    pub fn completed(&mut self, op: Op, len: u64, latency: SimDuration, now: SimTime) -> Verdict {
        self.ramp(now);
        if !self.ramped {
            return Verdict::Go;
        }
        let i = index(op);
        self.done_bytes[i] += len;
        self.done_ios[i] += 1;
        if let Some(v) = self.check_min_rate(now) {
            return v;
        }
        let Some(l) = self.lat.as_mut() else { return Verdict::Go };
        if l.draining {
            return Verdict::Go;
        }
        l.ios += 1;
        if latency > l.target {
            if l.percentile >= 100.0 {
                if l.qd == 1 {
                    return Verdict::Error(format!("latency of {} nsec exceeds specified max ({} nsec)", latency.as_ps() / 1000, l.target.as_ps() / 1000));
                }
                Self::shrink(l);
                return Verdict::Drain;
            }
            l.failed += 1;
        }
        if now.since(l.since) < l.window {
            return Verdict::Go;
        }
        // fio counts a window without I/Os as failed (NaN is not above the percentile).
        let ok = l.ios > 0 && (l.ios - l.failed.min(l.ios)) as f64 / l.ios as f64 * 100.0 >= l.percentile;
        if !ok {
            if l.qd == 1 {
                // fio's __lat_target_failed at depth 1 changes nothing: the window goes on
                // and is judged again.
                return Verdict::Go;
            }
            Self::shrink(l);
            return Verdict::Drain;
        }
        let before = l.qd;
        l.low = l.qd;
        if l.qd + 1 == l.high {
            l.stable += 1;
            if l.stable == 3 {
                l.stable = 0;
                l.high += 1;
            }
        }
        l.qd = if l.high == l.max_depth { l.qd.saturating_mul(2) } else { u32::midpoint(l.qd, l.high) };
        l.qd = l.qd.clamp(1, l.max_depth);
        if !l.run && l.qd == before {
            if l.end_run {
                return Verdict::Done;
            }
            l.end_run = true;
            l.draining = true;
            return Verdict::FinalRun;
        }
        Self::cycle(l, now);
        Verdict::Go
    }

    /// The queue has drained after [`Verdict::Drain`] or [`Verdict::FinalRun`]: a new window.
    pub fn drained(&mut self, now: SimTime) {
        if let Some(l) = self.lat.as_mut() {
            Self::cycle(l, now);
        }
    }

    fn cycle(l: &mut LatTarget, now: SimTime) {
        l.draining = false;
        l.since = now;
        l.ios = 0;
        l.failed = 0;
    }

    /// fio's `__lat_target_failed` above depth 1.
    fn shrink(l: &mut LatTarget) {
        l.high = l.qd;
        if l.qd == l.low {
            l.low = l.low.saturating_sub(1).max(1);
        }
        l.qd = u32::midpoint(l.qd, l.low).max(1);
        l.stable = 0;
        l.draining = true;
    }

    fn check_min_rate(&mut self, now: SimTime) -> Option<Verdict> {
        if self.min_bps == [0; 2] && self.min_iops == [0; 2] {
            return None;
        }
        if now.since(self.start) < MIN_RATE_SETTLE {
            return None;
        }
        // fio's __check_min_rate: per direction, once it has done something, a baseline, then
        // spans of at least rate_cycle.
        for d in 0..2 {
            if self.done_bytes[d] == 0 || (self.min_bps[d] == 0 && self.min_iops[d] == 0) {
                continue;
            }
            let Some((at, bytes, ios)) = self.base[d] else {
                self.base[d] = Some((now, self.done_bytes[d], self.done_ios[d]));
                continue;
            };
            let spent = now.since(at);
            if spent < self.cycle || spent == SimDuration::ZERO {
                continue;
            }
            let ms = (u128::from(spent.as_ps()) / 1_000_000_000).max(1);
            if self.min_bps[d] > 0 {
                let got = u128::from(self.done_bytes[d] - bytes) * 1000 / ms;
                if got < u128::from(self.min_bps[d]) {
                    return Some(Verdict::Error(format!("rate_min={}B/s not met, got {got}B/s", self.min_bps[d])));
                }
            } else {
                let got = u128::from(self.done_ios[d] - ios) * 1000 / ms;
                if got < u128::from(self.min_iops[d]) {
                    return Some(Verdict::Error(format!("rate_iops_min={} not met, got {got} IOPS", self.min_iops[d])));
                }
            }
            self.base[d] = Some((now, self.done_bytes[d], self.done_ios[d]));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000_000;

    fn t(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_ps(ms * MS)
    }

    #[test]
    fn a_byte_cap_is_a_cumulative_schedule_per_direction() {
        // 4 KiB writes at 8 KiB/s: one due every 500 ms; reads have no cap and are always due.
        let l = Limits { rate: [0, 8192], ..Limits::default() };
        let mut c = Control::new(&l, t(0), 4);
        assert_eq!(c.pace(t(0), Op::Write, true), Pace::Now(Op::Write));
        c.issued(Op::Write, 4096);
        assert_eq!(c.pace(t(100), Op::Write, true), Pace::Now(Op::Read), "the other direction fills the gap");
        assert_eq!(c.pace(t(100), Op::Write, false), Pace::Wait(t(500)));
        // Behind schedule, the job catches up with back-to-back I/Os.
        assert_eq!(c.pace(t(2000), Op::Write, false), Pace::Now(Op::Write));
    }

    #[test]
    fn the_minimum_rate_is_checked_after_two_seconds_over_a_cycle() {
        let l = Limits { rate_min: [1024, 0], rate_cycle: SimDuration::from_ps(1000 * MS), ..Limits::default() };
        let mut c = Control::new(&l, t(0), 1);
        let lat = SimDuration::from_ps(MS);
        assert_eq!(c.completed(Op::Read, 4096, lat, t(1000)), Verdict::Go);
        assert_eq!(c.completed(Op::Read, 4096, lat, t(2100)), Verdict::Go, "baseline");
        assert_eq!(c.completed(Op::Read, 4096, lat, t(3000)), Verdict::Go, "a cycle has not passed");
        // 4096 B over 1.2 s since the baseline: 3413 B/s.
        assert_eq!(c.completed(Op::Read, 0, lat, t(3300)), Verdict::Go);
        // Nothing more for 5 s: 0 B/s.
        assert_eq!(c.completed(Op::Read, 0, lat, t(8300)), Verdict::Error("rate_min=1024B/s not met, got 0B/s".into()));
    }

    #[test]
    fn the_latency_search_doubles_then_bisects_and_settles() {
        // Latency grows 10 us per I/O in flight beyond 8: the target of 50 us holds up to depth 12.
        let l = Limits { latency_target: SimDuration::from_ps(50_000_000), latency_window: SimDuration::from_ps(MS), latency_percentile: 99.0, ..Limits::default() };
        let mut c = Control::new(&l, t(0), 64);
        let mut now = t(0);
        let mut depths = vec![];
        for _ in 0..200 {
            let qd = u64::from(c.depth(64));
            let lat = SimDuration::from_ps(if qd <= 12 { 20_000_000 } else { (qd - 8) * 10_000_000 + 20_000_000 });
            let mut v = Verdict::Go;
            for _ in 0..10 {
                now += SimDuration::from_ps(MS / 10 + 1);
                v = c.completed(Op::Read, 4096, lat, now);
                if v != Verdict::Go {
                    break;
                }
            }
            depths.push(c.depth(64));
            match v {
                Verdict::Drain | Verdict::FinalRun => c.drained(now),
                Verdict::Done => break,
                Verdict::Go => {}
                Verdict::Error(e) => panic!("{e}"),
            }
        }
        assert_eq!(&depths[..6], &[2, 4, 8, 16, 12, 14], "{depths:?}");
        assert_eq!(c.latency_depth(), Some(12), "{depths:?}");
    }
}
