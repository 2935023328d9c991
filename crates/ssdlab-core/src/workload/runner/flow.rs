//! fio's flow control (`flow`, `flow_id`, `flow_sleep`) for the runner: the jobs of a flow
//! group share its I/Os in proportion to their weights; a job ahead of its share is held back
//! and looks again `flow_sleep` after another job of its group issues.

use super::{Ctx, Event, Job, Out, Runner};
use crate::ids::JobId;

/// Numbers the flow groups of `jobs` and turns each job's weight into its share of its
/// group's total; returns how many groups there are.
pub(super) fn shares(jobs: &mut [Job]) -> usize {
    let mut flow_ids: Vec<usize> = jobs.iter().filter_map(|j| j.flow.map(|f| f.0)).collect();
    flow_ids.sort_unstable();
    flow_ids.dedup();
    let totals: Vec<f64> = flow_ids.iter().map(|&id| jobs.iter().filter_map(|j| j.flow.filter(|f| f.0 == id).map(|f| f.1)).sum()).collect();
    for j in jobs.iter_mut() {
        if let Some((id, w)) = j.flow {
            let g = flow_ids.iter().position(|&x| x == id).unwrap_or(0);
            j.flow = Some((g, w / totals[g]));
        }
    }
    flow_ids.len()
}

impl Runner {
    /// fio's flow_threshold_exceeded: whether `job` is ahead of its share and held back;
    /// otherwise it counts the I/O it is about to issue (and others may go).
    pub(super) fn flow_holds(&mut self, ctx: &mut Ctx, job: usize) -> bool {
        let Some((g, share)) = self.jobs[job].flow else { return false };
        let total = self.flow_issued[g].max(1) as f64;
        if self.jobs[job].flow_issued as f64 / total > share {
            self.jobs[job].flow_held = true;
            return true;
        }
        self.jobs[job].flow_issued += 1;
        self.flow_issued[g] += 1;
        self.release_flow(ctx, g, job);
        false
    }

    /// Jobs of flow group `g` held back that are no longer ahead of their share look again
    /// (after their `flow_sleep`).
    pub(super) fn release_flow(&mut self, ctx: &mut Ctx, g: usize, by: usize) {
        let total = self.flow_issued[g].max(1) as f64;
        for j in 0..self.jobs.len() {
            let s = &mut self.jobs[j];
            if j != by && s.flow_held && s.flow.is_some_and(|(fg, share)| fg == g && s.flow_issued as f64 / total <= share) {
                s.flow_held = false;
                ctx.at(ctx.now + s.flow_sleep, Out::Wake(Event::Arrival { job: JobId(j as u32) }));
            }
        }
    }

    /// A job of a flow group is done (fio's `flow_exit_job`): its weight leaves the group, the
    /// others' shares grow, and those held back look again.
    pub(super) fn flow_exit(&mut self, ctx: &mut Ctx, job: usize) {
        let Some((g, _)) = self.jobs[job].flow.take() else { return };
        let total: f64 = self.jobs.iter().filter(|j| j.flow.is_some_and(|f| f.0 == g)).map(|j| j.flow_weight).sum();
        for j in &mut self.jobs {
            if let Some((fg, share)) = j.flow.as_mut() {
                if *fg == g && total > 0.0 {
                    *share = j.flow_weight / total;
                }
            }
        }
        self.release_flow(ctx, g, job);
    }
}
