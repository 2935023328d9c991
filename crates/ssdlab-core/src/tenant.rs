//! Tenants: the users (VMs, containers, applications) that share one drive.
//!
//! A config names them with `[[tenants]]`. Each has a name, an I/O weight (the cgroup
//! `io.weight` the host's proportional share uses), an NVMe arbitration class (its queue pairs'
//! priority under weighted round robin), a part of the drive's logical capacity (its namespace:
//! a contiguous LBA range), optional `io.max` limits, optional SLOs, and its own workload (a
//! job's keys, offsets relative to its range). The tenants' jobs replace `[workload.jobs]`;
//! `[workload]` holds what they share (seed, run length, ramp).
//!
//! With `ftl.pools = "isolated"` each tenant also gets its own pool of flash blocks: its data
//! and its part of the over-provisioned space (OPS), split by `ftl.ops_split`. The layout here
//! decides both: [`Config::tenant_layout`] gives every tenant's LBA range and, for isolated
//! pools, the pools' sizes.
//!
//! A tenant's workload may replay a trace of its own (`[tenants.workload.replay]`), scaled,
//! wrapped or checked against its namespace; its jobs share that replay.
//!
//! Leaves out: a fio job file per tenant (the Python package turns job files into workloads),
//! namespaces that are not contiguous, and nested cgroups (every tenant is a leaf under the
//! root).

use std::ops::Range;

use crate::schema::Issues;
use crate::units::{Bandwidth, Bytes};
use crate::config::Config;
use crate::ftl::PoolSpec;
use crate::sim::SimDuration;
use crate::workload::{JobOverride, WorkloadConfig, MAX_NUMJOBS};
use crate::{config_enum, config_struct};

config_enum! {
    /// A submission queue's priority class under NVMe weighted round robin with urgent
    /// priority (NVMe Base Specification 2.0, 3.4.4).
    pub enum WrrClass {
        /// Served before every weighted class (strict priority).
        Urgent = "urgent",
        /// The weighted classes: each gets `nvme.wrr_weights` commands per round.
        High = "high",
        Medium = "medium",
        Low = "low",
    }
}

impl WrrClass {
    /// Index among the weighted classes (urgent has none).
    pub fn weighted_index(self) -> Option<usize> {
        match self {
            WrrClass::Urgent => None,
            WrrClass::High => Some(0),
            WrrClass::Medium => Some(1),
            WrrClass::Low => Some(2),
        }
    }
}

config_struct! {
    /// One tenant (`[[tenants]]`).
    pub struct TenantConfig {
        /// Its name in results. Default: `tenant<i>`.
        name: Option<String> = None,
        /// I/O weight, as cgroup v2 `io.weight` (1 to 10000): its share of the device under
        /// `host.share = "weight"` is weight / the weights of the tenants with I/O pending.
        /// Default: `100`.
        weight: u32 = 100,
        /// NVMe arbitration class of its queue pairs: `urgent`, `high`, `medium` or `low`
        /// (used with `nvme.arbitration = "wrr"`). Default: `"medium"`.
        class: WrrClass = WrrClass::Medium,
        /// Fraction of the exported capacity that is its namespace (0 = an equal part of what
        /// the tenants that set one leave). Default: `0`.
        share: f64 = 0.0,
        /// Jobs (threads with a queue pair each) running its workload. Default: `1`.
        numjobs: u32 = 1,
        /// `io.max`: read and write IOPS limits (0 = none), under `host.share = "max"`.
        /// Default: `0`.
        riops: u64 = 0,
        wiops: u64 = 0,
        /// `io.max`: read and write bandwidth limits in bytes per second (0 = none).
        /// Default: `0`.
        rbps: Bandwidth = Bandwidth(0.0),
        wbps: Bandwidth = Bandwidth(0.0),
        /// SLO: IOPS it must get in each series interval (0 = none). Default: `0`.
        slo_iops: f64 = 0.0,
        /// SLO: bandwidth in bytes per second (0 = none). Default: `0`.
        slo_bandwidth: Bandwidth = Bandwidth(0.0),
        /// SLO: latency its `slo_percentile` must stay under (0 = none). Default: `0`.
        slo_latency: SimDuration = SimDuration::ZERO,
        /// The percentile `slo_latency` bounds. Default: `99`.
        slo_percentile: f64 = 99.0,
        /// Its workload: the keys of a job (`rw`, `bs`, `iodepth`, ...) over `[workload]`;
        /// `offset` and `size` are within its namespace. Default: `[workload]` as it is.
        workload: JobOverride = JobOverride::default(),
    }
}

use crate::ftl::OpsSplit;

/// Where the tenants live: each one's logical range in bytes and, with isolated pools, the
/// pools (one per tenant, in tenant order).
#[derive(Clone, Debug, PartialEq)]
pub struct TenantLayout {
    pub names: Vec<String>,
    pub ranges: Vec<Range<u64>>,
    pub pools: Option<Vec<PoolSpec>>,
}

impl TenantConfig {
    pub fn validate_at(&self, path: &str, issues: &mut Issues) {
        let key = |k: &str| format!("{path}.{k}");
        issues.check((1..=10_000).contains(&self.weight), &key("weight"), self.weight, "must be between 1 and 10000 (cgroup io.weight)");
        issues.check(self.share >= 0.0 && self.share <= 1.0, &key("share"), self.share, "must be between 0 and 1 (0 = an equal part)");
        issues.check((1..=MAX_NUMJOBS).contains(&self.numjobs), &key("numjobs"), self.numjobs, format!("must be between 1 and {MAX_NUMJOBS}"));
        for (k, v) in [("rbps", self.rbps.0), ("wbps", self.wbps.0), ("slo_bandwidth", self.slo_bandwidth.0), ("slo_iops", self.slo_iops)] {
            issues.check(v.is_finite() && v >= 0.0, &key(k), v, "must be 0 (none) or positive");
        }
        issues.check(self.slo_percentile > 0.0 && self.slo_percentile < 100.0, &key("slo_percentile"), self.slo_percentile, "must be between 0 and 100");
        if let Some(t) = &self.workload.tenant {
            issues.push(&key("workload.tenant"), format!("{t:?}"), "a tenant's workload belongs to it: leave this key out");
        }
        if let Some(n) = &self.name {
            issues.check(!n.is_empty() && n != "all", &key("name"), format!("{n:?}"), "must be a non-empty name other than \"all\"");
        }
    }
}

/// The name of tenant `i`.
pub fn tenant_name(t: &TenantConfig, i: usize) -> String {
    t.name.clone().unwrap_or_else(|| format!("tenant{i}"))
}

/// Splits `total` into parts proportional to `weights`, each the floor of its share, the
/// remainder going to the largest fractional parts (ties to the first).
pub fn apportion(total: u64, weights: &[f64]) -> Vec<u64> {
    let sum: f64 = weights.iter().sum();
    if weights.is_empty() || sum <= 0.0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<f64> = weights.iter().map(|w| total as f64 * w / sum).collect();
    let mut parts: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
    let mut left = total.saturating_sub(parts.iter().sum());
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())).then(a.cmp(&b)));
    for &i in order.iter().cycle().take(weights.len() * 2) {
        if left == 0 {
            break;
        }
        parts[i] += 1;
        left -= 1;
    }
    parts
}

impl Config {
    /// The tenants' capacity fractions: those set, and an equal part of the rest for the others.
    pub fn tenant_shares(&self) -> Vec<f64> {
        let set: f64 = self.tenants.iter().map(|t| t.share).sum();
        let unset = self.tenants.iter().filter(|t| t.share == 0.0).count();
        let rest = if unset > 0 { (1.0 - set).max(0.0) / unset as f64 } else { 0.0 };
        self.tenants.iter().map(|t| if t.share > 0.0 { t.share } else { rest }).collect()
    }

    /// Every tenant's LBA range and, with isolated pools, the pools. Without `[[tenants]]`: one
    /// tenant, `default`, over the whole drive, in one pool.
    ///
    /// With isolated pools the drive exports what one shared pool would (the same
    /// `ftl.op_ratio`), each tenant's pool holds its namespace, and the spare blocks are split
    /// by `ftl.ops_split`; pools are whole blocks of every plane (see [`crate::ftl`]).
    pub fn tenant_layout(&self) -> std::result::Result<TenantLayout, crate::error::ConfigIssue> {
        let cap = self.exported_capacity();
        if self.tenants.is_empty() {
            let whole = 0..cap;
            return Ok(TenantLayout { names: vec![crate::workload::DEFAULT_TENANT.into()], ranges: std::iter::once(whole).collect(), pools: None });
        }
        let names: Vec<String> = self.tenants.iter().enumerate().map(|(i, t)| tenant_name(t, i)).collect();
        let align = match self.media.kind {
            crate::media::MediaKind::Nand => self.ftl.mapping_unit.0,
            crate::media::MediaKind::Nvm => 4096,
        };
        let units = cap / align;
        let shares = self.tenant_shares();
        // Each tenant gets the floor of its share, in whole mapping units.
        let parts: Vec<u64> = shares.iter().map(|s| (units as f64 * s).floor() as u64).collect();
        let mut ranges = Vec::with_capacity(parts.len());
        let mut at = 0u64;
        for p in &parts {
            ranges.push(at * align..(at + p) * align);
            at += p;
        }
        let isolated = self.media.kind == crate::media::MediaKind::Nand && self.ftl.pools == crate::ftl::PoolMode::Isolated;
        let pools = if isolated { Some(self.isolated_pools(&parts)?) } else { None };
        Ok(TenantLayout { names, ranges, pools })
    }

    /// One pool per tenant holding `units[i]` mapping units, with the spare blocks split.
    fn isolated_pools(&self, units: &[u64]) -> std::result::Result<Vec<PoolSpec>, crate::error::ConfigIssue> {
        let g = crate::ftl::Geometry::new(&self.media.nand, self.ftl.mapping_unit.0);
        let (planes, bpp, spb) = (u64::from(g.all_planes()), u64::from(g.blocks_per_plane), u64::from(g.slots_per_block()));
        // Blocks of each plane a pool's data needs at least, then the spare blocks of a plane.
        let data: Vec<u64> = units.iter().map(|u| u.div_ceil(spb * planes)).collect();
        let spare = bpp.saturating_sub(data.iter().sum());
        let weights: Vec<f64> = match self.ftl.ops_split {
            OpsSplit::Equal => vec![1.0; units.len()],
            OpsSplit::Weight => self.tenants.iter().map(|t| f64::from(t.weight)).collect(),
            OpsSplit::Capacity => units.iter().map(|&u| u as f64).collect(),
        };
        let extra = apportion(spare, &weights);
        let mut specs = Vec::with_capacity(units.len());
        for (i, (&u, (d, e))) in units.iter().zip(data.iter().zip(&extra)).enumerate() {
            let blocks_per_plane = (d + e) as u32;
            let raw = u64::from(blocks_per_plane) * planes * spb;
            if u == 0 || blocks_per_plane == 0 {
                return Err(crate::error::ConfigIssue { path: format!("tenants[{i}].share"), value: self.tenant_shares()[i].to_string(), rule: "leaves this tenant no capacity".into() });
            }
            let op_ratio = 1.0 - u as f64 / raw as f64;
            specs.push(PoolSpec { blocks_per_plane, op_ratio, gc_trigger: self.ftl.gc_trigger, gc_reclaim: self.ftl.gc_reclaim, exported: Some(u) });
        }
        Ok(specs)
    }

    /// The tenants' jobs as `[workload.jobs]` entries would give them: per tenant, `numjobs`
    /// jobs of `[workload]` with the tenant's workload keys over it, placed in its range.
    pub fn tenant_jobs(&self) -> Vec<(String, String, WorkloadConfig, String)> {
        let Ok(layout) = self.tenant_layout() else { return Vec::new() };
        let mut base = self.workload.clone();
        base.jobs.clear();
        let mut out = Vec::new();
        for (i, t) in self.tenants.iter().enumerate() {
            let mut one = base.clone();
            one.numjobs = t.numjobs;
            one.jobs = vec![t.workload.clone()];
            let range = &layout.ranges[i];
            for (k, (_, _, mut w)) in one.job_configs().into_iter().enumerate() {
                let within = t.workload.offset.map_or(0, |o| o.0);
                w.offset = Bytes(range.start + within);
                let room = (range.end - range.start).saturating_sub(within);
                w.size = Some(Bytes(t.workload.size.map_or(room, |s| s.0)));
                if let Some(r) = &t.workload.replay {
                    w.replay = r.clone();
                }
                let name = if t.numjobs > 1 { format!("{}.{k}", layout.names[i]) } else { layout.names[i].clone() };
                out.push((name, format!("tenants[{i}].workload"), w, layout.names[i].clone()));
            }
        }
        out
    }

    /// Every job of the run as `(name, config path, workload, tenant)`: the tenants' jobs when
    /// there are tenants, else `[workload]`'s.
    pub fn jobs(&self) -> Vec<(String, String, WorkloadConfig, String)> {
        if !self.tenants.is_empty() {
            return self.tenant_jobs();
        }
        self.workload.job_configs().into_iter().zip(self.workload.job_tenants()).map(|((n, p, w), t)| (n, p, w, t)).collect()
    }

    /// The tenant rules: unique names, shares that fit, no `[workload.jobs]` beside them,
    /// and a layout that gives every pool its GC margin.
    pub fn validate_tenants(&self, issues: &mut Issues) {
        if self.tenants.is_empty() {
            return;
        }
        for (i, t) in self.tenants.iter().enumerate() {
            t.validate_at(&format!("tenants[{i}]"), issues);
            if t.workload.replay.is_some() && self.workload.replay.trace.is_some() {
                issues.push(&format!("tenants[{i}].workload.replay"), "set", "workload.replay.trace already feeds every job: give each tenant its trace, or none");
            }
        }
        // A tenant's workload stays inside its namespace.
        if let Ok(layout) = self.tenant_layout() {
            for (i, t) in self.tenants.iter().enumerate() {
                let room = layout.ranges[i].end - layout.ranges[i].start;
                let (offset, size) = (t.workload.offset.map_or(0, |o| o.0), t.workload.size.map(|s| s.0));
                let end = offset.saturating_add(size.unwrap_or(0));
                if offset >= room || end > room {
                    let (key, value) =
                        if size.is_some() && offset < room { ("size", crate::units::format_size(size.unwrap_or(0))) } else { ("offset", crate::units::format_size(offset)) };
                    issues.push(&format!("tenants[{i}].workload.{key}"), value, format!("offset + size must stay inside the tenant's namespace of {}", crate::units::format_size(room)));
                }
            }
        }
        // Each tenant's jobs by the workload rules, under the tenant's path (a problem the
        // base [workload] has is reported there once). Too many to list: refused above.
        if self.tenants.iter().any(|t| t.numjobs > MAX_NUMJOBS) {
            return;
        }
        let before: Vec<(String, String)> = issues.0.iter().map(|i| (i.rule.clone(), i.value.clone())).collect();
        let mut seen = std::collections::HashSet::new();
        for (_, path, w, _) in self.tenant_jobs() {
            if seen.insert(path.clone()) {
                let mut job = Issues::default();
                w.validate_at(&path, &mut job, self.host_block());
                issues.0.extend(job.0.into_iter().filter(|i| !before.contains(&(i.rule.clone(), i.value.clone()))));
            }
        }
        if !self.workload.jobs.is_empty() {
            issues.push("workload.jobs", format!("{} entries", self.workload.jobs.len()), "give each tenant its workload in [[tenants]] instead (the two cannot be mixed)");
        }
        let mut seen = std::collections::HashSet::new();
        for (i, t) in self.tenants.iter().enumerate() {
            let n = tenant_name(t, i);
            issues.check(seen.insert(n.clone()), &format!("tenants[{i}].name"), format!("{n:?}"), "is used by an earlier tenant");
        }
        if self.stats.interval == SimDuration::ZERO {
            for (i, t) in self.tenants.iter().enumerate() {
                let slo = [("slo_iops", t.slo_iops > 0.0), ("slo_bandwidth", t.slo_bandwidth.0 > 0.0), ("slo_latency", t.slo_latency > SimDuration::ZERO)];
                if let Some((k, _)) = slo.iter().find(|(_, on)| *on) {
                    issues.push(&format!("tenants[{i}].{k}"), "set", "an SLO is judged per series interval: set stats.interval too (for example \"100ms\")");
                }
            }
        }
        let n = self.tenants.len() as u32;
        issues.check(self.host.vms == 1 || self.host.vms == n, "host.vms", self.host.vms, format!("with [[tenants]] each tenant is a VM: leave it at 1 or set it to {n}"));
        let set: f64 = self.tenants.iter().map(|t| t.share).sum();
        issues.check(set <= 1.0 + 1e-9, "tenants", format!("shares summing to {set}"), "the tenants' shares must sum to at most 1");
        let unset = self.tenants.iter().filter(|t| t.share == 0.0).count();
        if unset > 0 && set >= 1.0 - 1e-9 {
            issues.push("tenants", format!("shares summing to {set}"), "leave room for the tenants without a share (or give every tenant one)");
        }
    }
}
