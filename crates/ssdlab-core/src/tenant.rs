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
//! decides both: [`Config::tenant_layout`](crate::config::Config::tenant_layout) gives every tenant's LBA range and, for isolated
//! pools, the pools' sizes.
//!
//! A tenant's workload may replay a trace of its own (`[tenants.workload.replay]`), scaled,
//! wrapped or checked against its namespace; its jobs share that replay.
//!
//! Leaves out: a fio job file per tenant (the Python package turns job files into workloads),
//! namespaces that are not contiguous, and nested cgroups (every tenant is a leaf under the
//! root).

use crate::config_struct;
use crate::nvme::WrrClass;
use crate::schema::Issues;
use crate::sim::SimDuration;
use crate::units::Bandwidth;
use crate::workload::{JobOverride, MAX_NUMJOBS};

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
        /// `io.max`: read IOPS limit (0 = none), under `host.share = "max"`. Default: `0`.
        riops: u64 = 0,
        /// `io.max`: write IOPS limit (0 = none), under `host.share = "max"`. Default: `0`.
        wiops: u64 = 0,
        /// `io.max`: read bandwidth limit in bytes per second (0 = none). Default: `0`.
        rbps: Bandwidth = Bandwidth(0.0),
        /// `io.max`: write bandwidth limit in bytes per second (0 = none). Default: `0`.
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
