//! Dynamic over-provisioning among isolated pools (seed 003's OPS isolation, `ftl.ops_interval`).
//!
//! Every interval a controller looks at each tenant's pool and moves free blocks between
//! pools. It predicts a pool's write rate with the seed's model, IOPS = 1 / (tGC + tPROG +
//! tXfer) per die, where the GC time per page written follows from the valid fraction u of
//! the pool's next victim: collecting a victim of N pages moves u·N pages (a read, two
//! transfers and a program each) and erases it, and frees (1 - u)·N pages, so
//! tGC = (u·N·(tR + 2·tXfer + tPROG) + tBERS) / ((1 - u)·N). Each tenant has a target: its
//! IOPS SLO, or without any SLO in the run, its weight's share of the I/Os the tenants did
//! together in the interval (reads and writes that reached the flash device, which is what an
//! IOPS SLO counts). The tenant furthest below its target (measured over the interval)
//! takes up to `ftl.ops_step` free blocks from the tenant furthest above its own (a
//! tenant without an SLO, when others have one, is always a donor), if that pool can spare them
//! above its GC margin. The blocks go over erased, and each pool's GC thresholds follow its
//! new size; the tenants' namespaces do not change, so the moved blocks are spare space.
//!
//! Leaves out: moving blocks that hold data (a donor gives only free blocks, so it must
//! reclaim before it shrinks), and sizing from a workload forecast instead of the last
//! interval.

use super::Ftl;
use crate::ids::BlockId;
use crate::sim::{SimDuration, SimTime};

/// One tenant's pool at one controller step.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct OpsRow {
    pub time_s: f64,
    pub tenant: String,
    /// Blocks of its pool, and the fraction of their slots its namespace leaves spare.
    pub blocks: u32,
    pub spare_fraction: f64,
    /// Valid fraction of its next victim, and the model's write rate (in mapping units per
    /// second, the whole array at this victim utilisation).
    pub victim_valid: f64,
    pub model_units_s: f64,
    /// Its IOPS over the interval (reads and writes reaching the device), and its target.
    pub measured_iops: f64,
    pub target_iops: f64,
}

/// The controller.
pub struct OpsSizer {
    pub interval: SimDuration,
    step: u32,
    names: Vec<String>,
    weights: Vec<f64>,
    /// Per tenant: its IOPS SLO (None: no SLO).
    slo_iops: Vec<Option<f64>>,
    /// Model constants: read, program, transfer of a page, erase, pages per block, slots per
    /// page, dies.
    t_read: f64,
    t_prog: f64,
    t_xfer: f64,
    t_erase: f64,
    pages: f64,
    slots: f64,
    dies: f64,
    /// I/Os of each tenant at the last step, and when it was.
    last_ios: Vec<u64>,
    last_at: SimTime,
    pub rows: Vec<OpsRow>,
    /// Blocks moved so far.
    pub moved: u64,
}

impl OpsSizer {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        interval: SimDuration,
        step: u32,
        names: Vec<String>,
        weights: Vec<f64>,
        slo_iops: Vec<Option<f64>>,
        (t_read, t_prog, t_xfer, t_erase): (SimDuration, SimDuration, SimDuration, SimDuration),
        geometry: &super::Geometry,
    ) -> Self {
        let n = names.len();
        OpsSizer {
            interval,
            step,
            names,
            weights,
            slo_iops,
            t_read: t_read.as_secs_f64(),
            t_prog: t_prog.as_secs_f64(),
            t_xfer: t_xfer.as_secs_f64(),
            t_erase: t_erase.as_secs_f64(),
            pages: f64::from(geometry.pages_per_block),
            slots: f64::from(geometry.slots_per_page),
            dies: f64::from(geometry.dies()),
            last_ios: vec![0; n],
            last_at: SimTime::ZERO,
            rows: Vec::new(),
            moved: 0,
        }
    }

    /// The seed's model: mapping units per second the array writes for a pool whose victims
    /// hold `u` valid.
    pub fn model_units_s(&self, u: f64) -> f64 {
        let u = u.clamp(0.0, 0.999);
        let n = self.pages;
        let t_gc = (u * n * (self.t_read + 2.0 * self.t_xfer + self.t_prog) + self.t_erase) / ((1.0 - u) * n);
        self.dies * self.slots / (t_gc + self.t_prog + self.t_xfer)
    }

    /// One step at `now`, given each tenant's I/Os so far: records every pool and moves
    /// blocks; returns the blocks moved and their new pool.
    pub fn step(&mut self, ftl: &mut Ftl, now: SimTime, ios: &[u64]) -> Vec<(BlockId, u16)> {
        let n = self.names.len();
        let secs = now.since(self.last_at).as_secs_f64();
        let measured: Vec<f64> = (0..n).map(|t| if secs > 0.0 { ios.get(t).copied().unwrap_or(0).saturating_sub(self.last_ios[t]) as f64 / secs } else { 0.0 }).collect();
        self.last_ios = (0..n).map(|t| ios.get(t).copied().unwrap_or(0)).collect();
        self.last_at = now;
        let any_slo = self.slo_iops.iter().any(Option::is_some);
        let total: f64 = measured.iter().sum();
        let w: f64 = self.weights.iter().sum();
        let targets: Vec<f64> = (0..n).map(|t| if any_slo { self.slo_iops[t].unwrap_or(0.0) } else { total * self.weights[t] / w }).collect();
        let spb = f64::from(ftl.geometry().slots_per_block());
        for t in 0..n {
            let u = ftl.pool_victim_valid(t);
            let blocks = ftl.pool_blocks(t);
            let raw = f64::from(blocks) * spb;
            let lpns = ftl.pool_lpns(t);
            self.rows.push(OpsRow {
                time_s: now.as_secs_f64(),
                tenant: self.names[t].clone(),
                blocks,
                spare_fraction: 1.0 - (lpns.end - lpns.start) as f64 / raw,
                victim_valid: u,
                model_units_s: self.model_units_s(u),
                measured_iops: measured[t],
                target_iops: targets[t],
            });
        }
        if total <= 0.0 {
            return Vec::new();
        }
        // How far each tenant is from its target: below 1 it needs blocks.
        let ratio: Vec<f64> = (0..n).map(|t| if targets[t] > 0.0 { measured[t] / targets[t] } else { f64::INFINITY }).collect();
        let needy = (0..n).filter(|&t| ratio[t] < 0.98).min_by(|&a, &b| ratio[a].total_cmp(&ratio[b]));
        let Some(needy) = needy else { return Vec::new() };
        let donor = (0..n).filter(|&t| t != needy && ratio[t] > 1.02 && ftl.spare_free(t) > 0).max_by(|&a, &b| ratio[a].total_cmp(&ratio[b]).then(ftl.pool_blocks(a).cmp(&ftl.pool_blocks(b))));
        let Some(donor) = donor else { return Vec::new() };
        let moved = ftl.move_free_blocks(donor, needy, self.step);
        self.moved += moved.len() as u64;
        moved.into_iter().map(|b| (b, needy as u16)).collect()
    }
}
