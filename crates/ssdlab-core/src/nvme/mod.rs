//! The `NVMe` queue interface: submission/completion queue pairs in host memory, the doorbells
//! that announce new entries, arbitration among submission queues (round robin, or weighted
//! round robin with urgent priority), and interrupt aggregation (coalescing) per completion
//! queue.
//!
//! Models: a submission queue is a FIFO of commands the host has written; an entry becomes
//! visible to the controller when the SQ tail doorbell carrying it arrives (the queue holds
//! only visible entries). The controller
//! fetches one 64 B SQE per read request. Arbitration follows NVMe Base Specification 2.0,
//! 3.4.4: a queue that wins takes up to `arbitration_burst` commands in a row; under WRR,
//! urgent queues win before any other, then the high, medium and low classes share rounds of
//! `wrr_weights` commands (a class that overdraws its round with a burst starts the next one
//! that much short, so long-run shares are the weights exactly), each class going round robin
//! over its queues. Completion entries (16 B) are posted in order; an
//! MSI-X interrupt goes out per CQE, or, with coalescing, when `irq_coalesce_threshold` CQEs
//! are waiting or `irq_coalesce_time` has passed since the first of them.
//!
//! Leaves out: admin commands (and their strict priority), vendor-specific arbitration, fetch
//! of several SQEs per read request, SGLs, and the phase tag (completion order is tracked
//! directly).

mod config;

use std::collections::VecDeque;

use crate::ids::{CmdId, QueueId};
pub use config::{Arbitration, Interface, NvmeConfig, WrrClass};

/// Bytes of a submission queue entry.
pub const SQE_BYTES: u64 = 64;
/// Bytes of a completion queue entry.
pub const CQE_BYTES: u64 = 16;
/// Bytes of a doorbell register write.
pub const DOORBELL_BYTES: u64 = 4;
/// Bytes of an MSI-X message.
pub const MSI_BYTES: u64 = 4;
/// Bytes of one PRP entry.
pub const PRP_ENTRY_BYTES: u64 = 8;
/// virtio-blk: bytes the device reads per request, each read after the one before: the
/// available ring's index and entry, the descriptor chain (header, data, status), the header.
pub const VIRTIO_FETCH_BYTES: [u64; 3] = [4, 48, 16];
/// virtio-blk: bytes the device writes per completion: the status byte, the used ring element,
/// the used index.
pub const VIRTIO_COMPLETION_BYTES: [u64; 3] = [1, 8, 2];

/// One I/O queue pair.
#[derive(Debug, Default)]
pub struct QueuePair {
    /// Commands announced by doorbells, oldest first, not yet fetched.
    sq: VecDeque<CmdId>,
    /// Posted CQEs not yet covered by an interrupt.
    cq_waiting: VecDeque<CmdId>,
    /// CQEs covered by sent interrupts, not yet handled by the host.
    cq_signalled: VecDeque<CmdId>,
    /// Interrupt timer generation (a fired or cancelled timer is stale).
    timer_gen: u32,
    timer_armed: bool,
}

/// All I/O queue pairs and the arbitration state.
pub struct Nvme {
    qps: Vec<QueuePair>,
    /// Whether arbitration is weighted round robin (else round robin over every queue).
    wrr: bool,
    /// The queues of each group in queue order: urgent, high, medium, low under WRR; every
    /// queue in group 0 under round robin.
    groups: [Vec<usize>; 4],
    /// Each queue's group.
    group_of: Vec<u8>,
    /// Per group: where its round robin looks first.
    next: [usize; 4],
    /// WRR: commands per round of the high, medium and low classes, and what is left of the
    /// current round (negative: overdrawn by a burst).
    weights: [i64; 3],
    credit: [i64; 3],
    /// Most commands per win (`u32::MAX`: no limit).
    burst: u32,
    /// The queue that won last, and the commands its burst may still take.
    current: usize,
    burst_left: u32,
    /// Whether CQEs are held back for coalescing.
    coalescing: bool,
    threshold: u32,
}

impl Nvme {
    /// Queue pairs whose classes are `classes` (one per queue).
    pub fn new(c: &NvmeConfig, classes: &[WrrClass]) -> Self {
        let wrr = c.arbitration == Arbitration::Wrr;
        let mut groups: [Vec<usize>; 4] = Default::default();
        let mut group_of = Vec::with_capacity(classes.len());
        for (q, class) in classes.iter().enumerate() {
            let g = if wrr { class.weighted_index().map_or(0, |i| i + 1) } else { 0 };
            groups[g].push(q);
            group_of.push(g as u8);
        }
        let w = |i: usize| i64::from(c.wrr_weights.get(i).copied().unwrap_or(1));
        let weights = [w(0), w(1), w(2)];
        Nvme {
            qps: (0..classes.len()).map(|_| QueuePair::default()).collect(),
            wrr,
            groups,
            group_of,
            next: [0; 4],
            weights,
            credit: weights,
            burst: if c.arbitration_burst == 0 { u32::MAX } else { c.arbitration_burst },
            current: 0,
            burst_left: 0,
            coalescing: c.coalescing(),
            threshold: c.irq_coalesce_threshold,
        }
    }

    /// An SQ tail doorbell announcing the entry of `cmd` reached the controller.
    #[inline]
    pub fn doorbell(&mut self, q: QueueId, cmd: CmdId) {
        self.qps[usize::from(q.0)].sq.push_back(cmd);
    }

    /// The next visible command in arbitration order: the current burst's queue while its
    /// burst lasts, else the queue that wins arbitration.
    #[inline]
    pub fn arbitrate(&mut self) -> Option<(QueueId, CmdId)> {
        if self.burst_left > 0 {
            if let Some(cmd) = self.qps[self.current].sq.pop_front() {
                self.burst_left -= 1;
                self.charge(self.current);
                return Some((QueueId(self.current as u16), cmd));
            }
            self.burst_left = 0;
        }
        let q = if self.wrr { self.wrr_winner()? } else { self.round_robin(0)? };
        let cmd = self.qps[q].sq.pop_front()?;
        self.current = q;
        self.burst_left = self.burst - 1;
        self.charge(q);
        Some((QueueId(q as u16), cmd))
    }

    /// The next queue of group `g` with a visible command, round robin.
    #[inline]
    fn round_robin(&mut self, g: usize) -> Option<usize> {
        let members = &self.groups[g];
        let n = members.len();
        // `next` is below `n`, so a place wraps at most once: a subtraction, not a division.
        let wrap = |k: usize| if k >= n { k - n } else { k };
        for i in 0..n {
            let k = wrap(self.next[g] + i);
            let q = members[k];
            if !self.qps[q].sq.is_empty() {
                self.next[g] = wrap(k + 1);
                return Some(q);
            }
        }
        None
    }

    fn has_work(&self, g: usize) -> bool {
        self.groups[g].iter().any(|&q| !self.qps[q].sq.is_empty())
    }

    /// WRR: an urgent queue, else a queue of the first weighted class with commands and
    /// credit left in this round; when none has both, a new round starts (classes without
    /// commands start it at zero credit; one overdrawn by a burst starts it short).
    fn wrr_winner(&mut self) -> Option<usize> {
        if let Some(q) = self.round_robin(0) {
            return Some(q);
        }
        loop {
            for c in 0..3 {
                if self.credit[c] > 0 {
                    if let Some(q) = self.round_robin(c + 1) {
                        return Some(q);
                    }
                }
            }
            if !(1..4).any(|g| self.has_work(g)) {
                return None;
            }
            for c in 0..3 {
                self.credit[c] = if self.has_work(c + 1) { self.credit[c].min(0) + self.weights[c] } else { 0 };
            }
        }
    }

    /// Charges a command of queue `q` to its class's round.
    #[inline]
    fn charge(&mut self, q: usize) {
        if self.wrr {
            if let Some(c) = usize::from(self.group_of[q]).checked_sub(1) {
                self.credit[c] -= 1;
            }
        }
    }

    /// A CQE for `cmd` was posted. Returns whether an interrupt must go out now, and, if a
    /// coalescing timer must be armed, its generation.
    #[inline]
    pub fn post_cqe(&mut self, q: QueueId, cmd: CmdId) -> (bool, Option<u32>) {
        let coalescing = self.coalescing;
        let threshold = self.threshold;
        let qp = &mut self.qps[usize::from(q.0)];
        qp.cq_waiting.push_back(cmd);
        if !coalescing || qp.cq_waiting.len() as u32 >= threshold {
            return (true, None);
        }
        if qp.timer_armed {
            (false, None)
        } else {
            qp.timer_armed = true;
            (false, Some(qp.timer_gen))
        }
    }

    /// Whether a coalescing timer of generation `gen` is still live and has CQEs to signal.
    #[inline]
    pub fn timer_fires(&self, q: QueueId, gen: u32) -> bool {
        let qp = &self.qps[usize::from(q.0)];
        qp.timer_armed && qp.timer_gen == gen && !qp.cq_waiting.is_empty()
    }

    /// An interrupt is sent: every waiting CQE is covered by it. Returns how many.
    #[inline]
    pub fn signal(&mut self, q: QueueId) -> usize {
        let qp = &mut self.qps[usize::from(q.0)];
        qp.timer_armed = false;
        qp.timer_gen = qp.timer_gen.wrapping_add(1);
        let n = qp.cq_waiting.len();
        if qp.cq_signalled.is_empty() {
            // The usual case: the handler has taken every earlier CQE, so the waiting ones
            // become the signalled ones as they are (and the emptied ring waits for the next).
            std::mem::swap(&mut qp.cq_signalled, &mut qp.cq_waiting);
        } else {
            qp.cq_signalled.extend(qp.cq_waiting.drain(..));
        }
        n
    }

    /// The CQEs signalled on `q` and not yet taken by a handler, in the order they were posted
    /// (the order they reach host memory).
    #[inline]
    pub fn signalled(&self, q: QueueId) -> impl Iterator<Item = CmdId> + '_ {
        self.qps[usize::from(q.0)].cq_signalled.iter().copied()
    }

    /// The host's interrupt handler takes the CQEs signalled on `q` that have reached host
    /// memory (`landed`), in order; later ones wait for their own interrupt.
    #[inline]
    pub fn take_landed(&mut self, q: QueueId, mut landed: impl FnMut(CmdId) -> bool, out: &mut Vec<CmdId>) {
        let sig = &mut self.qps[usize::from(q.0)].cq_signalled;
        while let Some(&cmd) = sig.front() {
            if !landed(cmd) {
                break;
            }
            sig.pop_front();
            out.push(cmd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimDuration;

    #[test]
    fn round_robin_serves_queues_in_turn_and_only_visible_entries() {
        let mut n = Nvme::new(&NvmeConfig::default(), &[WrrClass::Medium; 3]);
        for (q, c) in [(0, 10), (0, 11), (2, 20)] {
            n.doorbell(QueueId(q), CmdId(c));
        }
        // Queue 1's entry is written but its doorbell has not arrived: nothing of it is seen.
        let order: Vec<u32> = std::iter::from_fn(|| n.arbitrate().map(|(_, c)| c.0)).collect();
        assert_eq!(order, vec![10, 20, 11]);
        n.doorbell(QueueId(1), CmdId(30));
        assert_eq!(n.arbitrate(), Some((QueueId(1), CmdId(30))));
    }

    /// Fetches `n` commands from queues kept backlogged; returns the count per queue.
    fn serve_backlogged(n: &mut Nvme, queues: usize, fetches: usize) -> Vec<usize> {
        let mut next = 0u32;
        for q in 0..queues {
            for _ in 0..4 {
                n.doorbell(QueueId(q as u16), CmdId(next));
                next += 1;
            }
        }
        let mut count = vec![0; queues];
        for _ in 0..fetches {
            let (q, _) = n.arbitrate().expect("backlogged");
            count[usize::from(q.0)] += 1;
            n.doorbell(q, CmdId(next));
            next += 1;
        }
        count
    }

    #[test]
    fn wrr_shares_rounds_by_weight_and_urgent_goes_first() {
        let c = NvmeConfig { arbitration: Arbitration::Wrr, wrr_weights: vec![8, 4, 2], ..NvmeConfig::default() };
        let mut n = Nvme::new(&c, &[WrrClass::High, WrrClass::Medium, WrrClass::Low, WrrClass::Low]);
        // Rounds of 14: high 8, medium 4, and the low class's 2 split between its two queues.
        assert_eq!(serve_backlogged(&mut n, 4, 1400), vec![800, 400, 100, 100]);
        let mut u = Nvme::new(&c, &[WrrClass::High, WrrClass::Urgent]);
        assert_eq!(serve_backlogged(&mut u, 2, 50), vec![0, 50], "urgent starves the weighted classes while it has commands");
    }

    #[test]
    fn a_burst_overdraws_its_round_and_the_next_round_pays() {
        // Burst 8 with weights 4:2:1: each win takes 8 commands, so a round is overdrawn, but
        // the deficit carries over and long-run shares stay 4:2:1 within a burst plus a weight.
        let c = NvmeConfig { arbitration: Arbitration::Wrr, wrr_weights: vec![4, 2, 1], arbitration_burst: 8, ..NvmeConfig::default() };
        let mut n = Nvme::new(&c, &[WrrClass::High, WrrClass::Medium, WrrClass::Low]);
        let total = 7000;
        let got = serve_backlogged(&mut n, 3, total);
        for (q, w) in [4usize, 2, 1].into_iter().enumerate() {
            let want = total * w / 7;
            assert!(got[q].abs_diff(want) <= 8 + w, "queue {q}: {} against {want}", got[q]);
        }
    }

    #[test]
    fn round_robin_bursts_take_several_commands_from_the_winner() {
        let c = NvmeConfig { arbitration_burst: 2, ..NvmeConfig::default() };
        let mut n = Nvme::new(&c, &[WrrClass::Medium; 2]);
        for (q, cmd) in [(0, 1), (0, 2), (0, 3), (1, 10), (1, 11)] {
            n.doorbell(QueueId(q), CmdId(cmd));
        }
        let order: Vec<u32> = std::iter::from_fn(|| n.arbitrate().map(|(_, c)| c.0)).collect();
        assert_eq!(order, vec![1, 2, 10, 11, 3]);
    }

    #[test]
    fn coalescing_fires_at_threshold() {
        let c = NvmeConfig { irq_coalesce_threshold: 3, irq_coalesce_time: SimDuration::from_us(100), ..NvmeConfig::default() };
        let mut n = Nvme::new(&c, &[WrrClass::Medium]);
        let q = QueueId(0);
        assert_eq!(n.post_cqe(q, CmdId(1)), (false, Some(0)));
        assert_eq!(n.post_cqe(q, CmdId(2)), (false, None));
        assert_eq!(n.post_cqe(q, CmdId(3)), (true, None));
        assert_eq!(n.signal(q), 3);
        assert!(!n.timer_fires(q, 0), "the timer armed before the interrupt is stale");
        let mut out = Vec::new();
        n.take_landed(q, |c| c.0 < 3, &mut out);
        assert_eq!(out.iter().map(|c| c.0).collect::<Vec<_>>(), vec![1, 2], "the third has not landed yet");
        n.take_landed(q, |_| true, &mut out);
        assert_eq!(out.len(), 3);
    }
}

/// `NVMe` interface events.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// An SQ tail doorbell write announcing `cmd` reached the controller.
    Doorbell { queue: QueueId, cmd: CmdId },
    /// An interrupt-coalescing timer expired.
    IrqTimer { queue: QueueId, gen: u32 },
}
