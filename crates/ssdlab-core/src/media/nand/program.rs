//! What programs add beyond a page's own tPROG: one-shot programming of a word line (its
//! pages' data moves into the die's latches in turn, and the last page's program runs the
//! array once for all of them) and the drive's power budget (programs and erases running at
//! once over all dies; one more waits at the head of its die's queue until a slot frees).
//!
//! Leaves out: power by operation type (a program and an erase take one slot each, reads none),
//! per-channel budgets, and a suspended program giving up its slot.

use super::{DieId, NandArray, Op, Output, Work};
use crate::sim::{SimDuration, SimTime};

impl NandArray {
    /// Whether a power budget caps programs and erases.
    pub fn has_power_budget(&self) -> bool {
        self.power_max > 0
    }

    /// The array time of programming `page`: its page type's tPROG, or, one-shot, the word
    /// line's for its last page and none for the others (their data only fills the latches).
    pub(super) fn page_program_time(&self, page: u32) -> SimDuration {
        match self.one_shot {
            Some((k, t)) if (page + 1).is_multiple_of(k) => t,
            Some(_) => SimDuration::ZERO,
            None => self.program_time(page),
        }
    }

    /// Whether `op` runs the array in a way the power budget counts.
    fn draws_power(&self, op: &Op) -> bool {
        match op.work {
            Work::Erase | Work::MapProgram => true,
            Work::Program { .. } => self.page_program_time(op.page) > SimDuration::ZERO,
            _ => false,
        }
    }

    /// Takes a slot of the power budget for `op` on `die`, if it needs one; false when none is
    /// free (the die then waits for one).
    pub(super) fn take_power(&mut self, die: DieId, op: &Op) -> bool {
        if self.power_max == 0 || !self.draws_power(op) {
            return true;
        }
        if self.power_active >= self.power_max {
            self.power_waits += 1;
            if !self.power_wait.contains(&die) {
                self.power_wait.push_back(die);
            }
            return false;
        }
        self.power_active += 1;
        self.dies[die.index()].powered += 1;
        true
    }

    /// The die's program or erase ended: its slot goes to the die that waited longest.
    pub(super) fn release_power(&mut self, die: DieId, now: SimTime, out: &mut Vec<Output>) {
        let d = &mut self.dies[die.index()];
        if d.powered == 0 {
            return;
        }
        d.powered -= 1;
        self.power_active -= 1;
        if let Some(w) = self.power_wait.pop_front() {
            out.push(Output::At(now, super::Event::Start { die: w }));
        }
    }

    /// Puts `op` back at the head of its die's queue (it was taken, but cannot start yet).
    pub(super) fn requeue(&mut self, die: DieId, op: Op) {
        let d = &mut self.dies[die.index()];
        if op.work.is_urgent() && self.read_first {
            d.reads.push_front(op);
        } else {
            d.other.push_front(op);
            if let Some(sh) = &mut self.share {
                sh.enqueued(die, usize::from(op.pool));
            }
        }
    }
}
