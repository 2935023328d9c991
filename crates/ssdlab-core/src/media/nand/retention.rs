//! Retention as a cause of NAND read retries: charge leaks from the cells with the log of the
//! time since they were programmed, so the read voltages drift and reads of old data need more
//! retry steps. Each block's data is as old as the time since the run began to program it, or,
//! for preconditioned data, the drive's `data_age_days` plus the run's time.
//!
//! Leaves out: temperature (retention at a stated temperature only), read disturb, and the
//! spread of ages within a block (its pages count from its first).

use crate::ids::BlockId;
use crate::sim::SimTime;

/// The data's age per block, from the drive's preconditioned state or from its block's
/// programming in the run.
pub(super) struct Retention {
    /// Mean retry steps per decade of data age beyond an hour (0 = off).
    per_decade: f64,
    /// Age of the preconditioned data when the run starts, in hours.
    data_age_hours: f64,
    /// Per block, when the run began to program it last (None: it holds preconditioned
    /// data); empty when retention is off.
    written_at: Vec<Option<SimTime>>,
}

impl Retention {
    /// `per_decade` mean retry steps per decade of age beyond an hour (0 = off), the
    /// preconditioned data's age in days, and the array's blocks.
    pub(super) fn new(per_decade: f64, data_age_days: f64, blocks: usize) -> Self {
        Retention { per_decade, data_age_hours: data_age_days * 24.0, written_at: if per_decade > 0.0 { vec![None; blocks] } else { Vec::new() } }
    }

    pub(super) fn on(&self) -> bool {
        self.per_decade > 0.0
    }

    /// When the run began to program `block` last (None: preconditioned data, or off).
    #[inline]
    pub(super) fn written_at(&self, block: BlockId) -> Option<SimTime> {
        self.written_at.get(block.index()).copied().flatten()
    }

    /// A program of `page` of `block` is queued at `now`: the first page starts the block's
    /// data age (its pages are programmed within a block's fill time of each other).
    #[inline]
    pub(super) fn written(&mut self, block: BlockId, page: u32, now: SimTime) {
        if page == 0 {
            if let Some(t) = self.written_at.get_mut(block.index()) {
                *t = Some(now);
            }
        }
    }

    /// Mean retry steps the data of a block first programmed at `written` (None: preconditioned data)
    /// needs at `now`.
    pub(super) fn steps(&self, written: Option<SimTime>, now: SimTime) -> f64 {
        if self.per_decade <= 0.0 {
            return 0.0;
        }
        let hours = match written {
            Some(t) => now.since(t).as_secs_f64() / 3600.0,
            None => self.data_age_hours + now.since(SimTime::ZERO).as_secs_f64() / 3600.0,
        };
        if hours <= 1.0 {
            0.0
        } else {
            self.per_decade * hours.log10()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimDuration;

    #[test]
    fn old_data_needs_steps_per_decade_of_age_and_young_data_none() {
        // 1000 hours old at the start: three decades beyond an hour.
        let mut r = Retention::new(0.5, 1000.0 / 24.0, 4);
        let t0 = SimTime::ZERO;
        assert!((r.steps(r.written_at(BlockId(1)), t0) - 1.5).abs() < 1e-9);
        // Block 1 is programmed again in the run: its data is young.
        r.written(BlockId(1), 0, t0);
        assert!(r.steps(r.written_at(BlockId(1)), t0 + SimDuration::from_us(1_000_000)) <= 0.0);
        // A later page of the block does not restart its age.
        let t1 = t0 + SimDuration::from_us(5_000_000);
        r.written(BlockId(1), 7, t1);
        assert_eq!(r.written_at(BlockId(1)), Some(t0));
        // Off: nothing is tracked and nothing is owed.
        let off = Retention::new(0.0, 1000.0, 4);
        assert!(!off.on() && off.written_at(BlockId(0)).is_none() && off.steps(None, t0) <= 0.0);
    }
}
