//! A kernel spinlock shared by CPUs (a ticket lock, as Linux's since 2.6.25), with the cost
//! of the cache lines it moves.
//!
//! An acquisition holds the lock for `hold` on a warm cache. When the previous holder ran on
//! another CPU, the lines the critical section touches (`lines`, the lock's own included) move
//! over first, one `transfer` each. And each handover waits for the spinners: releasing a ticket
//! lock invalidates the copy of its line that every waiting CPU spins on, all of them re-read
//! it, and the next owner's read queues behind theirs, so a handover costs a transfer per CPU
//! still spinning (Boyd-Wickizer et al., "Non-scalable locks are dangerous", Linux Symposium
//! 2012). The lock's throughput then falls as more CPUs contend for it, and the CPUs spin for
//! longer: a lock that is cheap for one thread collapses under many.
//!
//! Leaves out: the cache hierarchy (every transfer costs the same, whichever sockets the CPUs
//! are on), and lock holders being preempted (spinlocks disable preemption).

use std::collections::VecDeque;

use crate::sim::{Grant, SimDuration, SimTime};

/// A spinlock shared by CPUs, granted in arrival order.
#[derive(Clone, Debug)]
pub struct SpinLock {
    hold: SimDuration,
    transfer: SimDuration,
    lines: u64,
    free: SimTime,
    last_cpu: Option<u32>,
    /// Release times of the acquisitions granted or waiting (in order): those after `now` are
    /// the lock's holder and its spinners.
    ends: VecDeque<SimTime>,
    /// Time the lock was held, summed.
    pub busy: SimDuration,
    /// Acquisitions that found the lock's lines on another CPU.
    pub migrations: u64,
    pub acquisitions: u64,
}

impl SpinLock {
    pub fn new(hold: SimDuration, transfer: SimDuration, lines: u32) -> Self {
        SpinLock { hold, transfer, lines: u64::from(lines), free: SimTime::ZERO, last_cpu: None, ends: VecDeque::new(), busy: SimDuration::ZERO, migrations: 0, acquisitions: 0 }
    }

    /// CPU `cpu` asks for the lock at `now`: it spins until the grant's start and holds the lock
    /// until its end.
    pub fn acquire(&mut self, now: SimTime, cpu: u32) -> Grant {
        while self.ends.front().is_some_and(|&e| e <= now) {
            self.ends.pop_front();
        }
        // Those ahead: the holder and the spinners that will own the lock before this one.
        let ahead = self.ends.len() as u64;
        let mut hold = self.hold;
        if self.last_cpu.is_some_and(|c| c != cpu) {
            hold += self.transfer * self.lines;
            self.migrations += 1;
        }
        // The handover to this CPU waits for the others' re-reads of the lock's line.
        hold += self.transfer * ahead.saturating_sub(1);
        let start = self.free.max(now);
        let end = start + hold;
        self.free = end;
        self.last_cpu = Some(cpu);
        self.ends.push_back(end);
        self.busy += hold;
        self.acquisitions += 1;
        Grant { start, end, wait: start.since(now) }
    }
}

#[cfg(test)]
#[allow(clippy::many_single_char_names)]
mod tests {
    use super::*;

    #[test]
    fn one_cpu_pays_the_hold_another_moves_the_lines_and_spinners_slow_each_handover() {
        let ns = SimDuration::from_ns;
        let mut l = SpinLock::new(ns(200), ns(100), 4);
        let a = l.acquire(SimTime(0), 0);
        assert_eq!((a.start, a.end, a.wait), (SimTime(0), SimTime(0) + ns(200), SimDuration::ZERO));
        // Same CPU, later: warm cache.
        let b = l.acquire(SimTime(0) + ns(1000), 0);
        assert_eq!(b.end.since(b.start), ns(200));
        // Another CPU: four lines move first.
        let c = l.acquire(SimTime(0) + ns(2000), 1);
        assert_eq!(c.end.since(c.start), ns(600));
        // Three CPUs arrive together: the second waits for the first; the third's handover also
        // waits for the second's re-read of the lock line.
        let t = SimTime(0) + ns(5000);
        let g: Vec<Grant> = (2..5).map(|cpu| l.acquire(t, cpu)).collect();
        assert_eq!(g[0].end.since(g[0].start), ns(600));
        assert_eq!(g[1].end.since(g[1].start), ns(600));
        assert_eq!(g[2].end.since(g[2].start), ns(700));
        assert_eq!(g[2].wait, ns(1200));
        assert_eq!(l.migrations, 4);
    }
}
