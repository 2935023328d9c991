//! The `NVMe` queue interface: submission/completion queue pairs in host memory, the doorbells
//! that announce new entries, round-robin arbitration among submission queues, and interrupt
//! aggregation (coalescing) per completion queue.
//!
//! Models: a submission queue is a FIFO of commands the host has written; an entry becomes
//! visible to the controller when the SQ tail doorbell carrying it arrives (the queue holds
//! only visible entries). The controller
//! fetches one 64 B SQE per read request. Completion entries (16 B) are posted in order; an
//! MSI-X interrupt goes out per CQE, or, with coalescing, when `irq_coalesce_threshold` CQEs
//! are waiting or `irq_coalesce_time` has passed since the first of them.
//!
//! Leaves out: admin commands, weighted round robin with urgent priority, burst fetch of
//! several SQEs per read, SGLs, and the phase tag (completion order is tracked directly).

mod config;

use std::collections::VecDeque;

pub use config::{Arbitration, NvmeConfig};

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

/// Index of an I/O queue pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueId(pub u16);

/// Index of a command slot in the simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CmdId(pub u32);

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
    rr_next: usize,
    /// Whether CQEs are held back for coalescing.
    coalescing: bool,
    threshold: u32,
}

impl Nvme {
    pub fn new(c: &NvmeConfig, queue_pairs: usize) -> Self {
        Nvme {
            qps: (0..queue_pairs).map(|_| QueuePair::default()).collect(),
            rr_next: 0,
            coalescing: c.coalescing(),
            threshold: c.irq_coalesce_threshold,
        }
    }

    /// An SQ tail doorbell announcing the entry of `cmd` reached the controller.
    #[inline]
    pub fn doorbell(&mut self, q: QueueId, cmd: CmdId) {
        self.qps[usize::from(q.0)].sq.push_back(cmd);
    }

    /// Round robin: the next visible command, from the queue after the last one served.
    #[inline]
    pub fn arbitrate(&mut self) -> Option<(QueueId, CmdId)> {
        let n = self.qps.len();
        for i in 0..n {
            let q = (self.rr_next + i) % n;
            if let Some(cmd) = self.qps[q].sq.pop_front() {
                self.rr_next = (q + 1) % n;
                return Some((QueueId(q as u16), cmd));
            }
        }
        None
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
        qp.cq_signalled.extend(qp.cq_waiting.drain(..));
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
        let mut n = Nvme::new(&NvmeConfig::default(), 3);
        for (q, c) in [(0, 10), (0, 11), (2, 20)] {
            n.doorbell(QueueId(q), CmdId(c));
        }
        // Queue 1's entry is written but its doorbell has not arrived: nothing of it is seen.
        let order: Vec<u32> = std::iter::from_fn(|| n.arbitrate().map(|(_, c)| c.0)).collect();
        assert_eq!(order, vec![10, 20, 11]);
        n.doorbell(QueueId(1), CmdId(30));
        assert_eq!(n.arbitrate(), Some((QueueId(1), CmdId(30))));
    }

    #[test]
    fn coalescing_fires_at_threshold() {
        let c = NvmeConfig { irq_coalesce_threshold: 3, irq_coalesce_time: SimDuration::from_us(100), ..NvmeConfig::default() };
        let mut n = Nvme::new(&c, 1);
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
