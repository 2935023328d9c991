//! The tenants' part of a config: every tenant's namespace (a contiguous LBA range) and, with
//! isolated pools, its pool of flash blocks; the jobs of a run; and the rules between tenants.

use std::ops::Range;

use super::Config;
use crate::error::ConfigIssue;
use crate::ftl::{apportion, OpsSplit, PoolMode, PoolSpec};
use crate::media::nand::Geometry;
use crate::media::MediaKind;
use crate::schema::Issues;
use crate::sim::SimDuration;
use crate::tenant::tenant_name;
use crate::units::{format_size, Bytes};
use crate::workload::{WorkloadConfig, DEFAULT_TENANT, MAX_NUMJOBS};

/// Where the tenants live: each one's logical range in bytes and, with isolated pools, the
/// pools (one per tenant, in tenant order).
#[derive(Clone, Debug, PartialEq)]
pub struct TenantLayout {
    pub names: Vec<String>,
    pub ranges: Vec<Range<u64>>,
    pub pools: Option<Vec<PoolSpec>>,
}

impl Config {
    /// Advice on a valid config: settings that do nothing the user likely meant, each as a
    /// config issue (path, value, why). Tenants with unequal weights that neither the host's
    /// share nor the spare-space split enforces are one.
    pub fn advisories(&self) -> Vec<ConfigIssue> {
        let mut out = Vec::new();
        let weights: Vec<u32> = self.tenants.iter().map(|t| t.weight).collect();
        let unequal = weights.windows(2).any(|w| w[0] != w[1]);
        // Isolated pools enforce weights by their spare space split, or by the dies' fair share.
        let split = self.media.kind == MediaKind::Nand && self.ftl.pools == PoolMode::Isolated && (self.ftl.ops_split == OpsSplit::Weight || self.media.nand.tenant_fair);
        if unequal && self.host.share != crate::host::ShareMode::Weight && !split {
            let list: Vec<String> = self.tenants.iter().enumerate().map(|(i, t)| format!("{} = {}", tenant_name(t, i), t.weight)).collect();
            out.push(ConfigIssue {
                path: "host.share".into(),
                value: format!("\"{}\"", self.host.share),
                rule: format!(
                    "the tenants' weights ({}) are enforced by nothing: set host.share = \"weight\" (cgroup io.weight), or ftl.pools = \"isolated\" with ftl.ops_split = \"weight\" or media.nand.tenant_fair",
                    list.join(", ")
                ),
            });
        }
        out
    }

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
    /// by `ftl.ops_split`; pools are whole blocks of every plane (see `ftl`).
    pub fn tenant_layout(&self) -> std::result::Result<TenantLayout, ConfigIssue> {
        let cap = self.exported_capacity();
        if self.tenants.is_empty() {
            let whole = 0..cap;
            return Ok(TenantLayout { names: vec![DEFAULT_TENANT.into()], ranges: std::iter::once(whole).collect(), pools: None });
        }
        let names: Vec<String> = self.tenants.iter().enumerate().map(|(i, t)| tenant_name(t, i)).collect();
        let align = match self.media.kind {
            MediaKind::Nand => self.ftl.mapping_unit.0,
            MediaKind::Nvm => 4096,
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
        let isolated = self.media.kind == MediaKind::Nand && self.ftl.pools == PoolMode::Isolated;
        let pools = if isolated { Some(self.isolated_pools(&parts)?) } else { None };
        Ok(TenantLayout { names, ranges, pools })
    }

    /// One pool per tenant holding `units[i]` mapping units, with the spare blocks split.
    fn isolated_pools(&self, units: &[u64]) -> std::result::Result<Vec<PoolSpec>, ConfigIssue> {
        let g = Geometry::new(&self.media.nand, self.ftl.mapping_unit.0);
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
                return Err(ConfigIssue { path: format!("tenants[{i}].share"), value: self.tenant_shares()[i].to_string(), rule: "leaves this tenant no capacity".into() });
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
                    let (key, value) = if size.is_some() && offset < room { ("size", format_size(size.unwrap_or(0))) } else { ("offset", format_size(offset)) };
                    issues.push(&format!("tenants[{i}].workload.{key}"), value, format!("offset + size must stay inside the tenant's namespace of {}", format_size(room)));
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
