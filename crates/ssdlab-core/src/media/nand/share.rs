//! Die time shared among the pools of isolated tenants (`media.nand.tenant_fair`): each die
//! takes its next operation from the waiting pool that has used the least of its weighted
//! share of the die.

use crate::ids::{BlockId, DieId};

/// The pool of ops outside the tenants' fair share (translation pages).
pub(super) const NO_POOL: u16 = u16::MAX;

/// Die time shared among the pools of isolated tenants: per die, each pool's virtual time
/// (array time used divided by its weight) and its ops waiting in the die's queue. The die
/// takes its next op from the waiting pool with the least virtual time; a pool that had
/// nothing waiting starts level with the least of the others (no credit for idling).
pub(super) struct DieShare {
    /// Per block: its pool.
    pub(super) owner: Vec<u16>,
    weight: Vec<f64>,
    pools: usize,
    /// Per die and pool.
    vt: Vec<f64>,
    queued: Vec<u32>,
}

impl DieShare {
    /// Dies' shares among pools of `weight` (one per pool), for blocks owned as `owner` says;
    /// `n` is dies times pools.
    pub(super) fn new(owner: Vec<u16>, weight: Vec<f64>, n: usize) -> Self {
        let pools = weight.len();
        DieShare { owner, weight, pools, vt: vec![0.0; n], queued: vec![0; n] }
    }

    pub(super) fn owner(&self, block: BlockId) -> usize {
        usize::from(self.owner[block.index()])
    }

    pub(super) fn enqueued(&mut self, die: DieId, p: usize) {
        if p >= self.pools {
            return;
        }
        let base = die.index() * self.pools;
        if self.queued[base + p] == 0 {
            let floor = (0..self.pools).filter(|&q| q != p && self.queued[base + q] > 0).map(|q| self.vt[base + q]).fold(f64::INFINITY, f64::min);
            if floor.is_finite() {
                self.vt[base + p] = self.vt[base + p].max(floor);
            }
        }
        self.queued[base + p] += 1;
    }

    pub(super) fn dequeued(&mut self, die: DieId, p: usize) {
        if p >= self.pools {
            return;
        }
        let i = die.index() * self.pools + p;
        self.queued[i] = self.queued[i].saturating_sub(1);
    }

    /// Where in the die's queue its next op is, given the pool of the op at its head (`None`:
    /// the queue is empty) and where each pool's first op is (`first_of`): translation-page
    /// traffic at the head goes first (it belongs to no tenant); else the first op of the
    /// waiting pool with the least virtual time.
    pub(super) fn pick(&self, die: DieId, front: Option<u16>, first_of: impl Fn(usize) -> Option<usize>) -> usize {
        let Some(front) = front else { return 0 };
        if front == NO_POOL {
            return 0;
        }
        let base = die.index() * self.pools;
        let waiting = (0..self.pools).filter(|&p| self.queued[base + p] > 0);
        let Some(p) = waiting.min_by(|&a, &b| self.vt[base + a].total_cmp(&self.vt[base + b]).then(a.cmp(&b))) else { return 0 };
        first_of(p).unwrap_or(0)
    }

    /// Charges `ps` of array time to pool `p` (negative: a refund).
    pub(super) fn charge(&mut self, die: DieId, p: usize, ps: f64) {
        if p >= self.pools {
            return;
        }
        self.vt[die.index() * self.pools + p] += ps / self.weight[p];
    }
}
