//! What each block is built from, assembled from a config: the runner's jobs, replays and
//! zones; the host's cgroups; the host memory's places; the flash device's tenants.

use super::Config;
use crate::error::{Error, Result};
use crate::ftl::{Precondition, Tenancy};
use crate::host::dma::HostMemory;
use crate::host::Cgroup;
use crate::ids::TenantId;
use crate::workload::runner::{JobPlan, Plan, ReplayPlan, ZonePlan};

impl Config {
    /// The runner's plan: every job, the trace replays and the jobs each feeds
    /// (`workload.replay` feeds every job; otherwise each tenant with a trace of its own feeds
    /// its jobs, over its namespace), and the zones fio's zbd jobs find.
    pub fn runner_plan(&self) -> Plan {
        let w = &self.workload;
        let all = self.jobs();
        let n = all.len();
        let mut replays = Vec::new();
        if w.replay.trace.is_some() {
            replays.push(ReplayPlan {
                replay: w.replay.clone(),
                path: String::new(),
                first: 0,
                jobs: n,
                offset: w.offset.0,
                region: self.region_size_of(w),
                number_ios: w.number_ios,
                runtime: w.runtime,
            });
        } else {
            let mut j = 0;
            while j < n {
                let (_, path, jw, tenant) = &all[j];
                let count = all[j..].iter().take_while(|x| x.3 == *tenant).count();
                let own = self.tenants.iter().enumerate().find(|(i, t)| crate::tenant::tenant_name(t, *i) == *tenant).and_then(|(_, t)| t.workload.replay.as_ref());
                if let Some(rc) = own {
                    replays.push(ReplayPlan {
                        replay: rc.clone(),
                        path: path.clone(),
                        first: j,
                        jobs: count,
                        offset: jw.offset.0,
                        region: self.region_size_of(jw),
                        number_ios: jw.number_ios,
                        runtime: jw.runtime,
                    });
                }
                j += count;
            }
        }
        let zones = self.ftl.zone_size.and_then(|z| {
            let first = all.iter().find(|j| j.2.zbd)?;
            let limit = self.ftl.max_active_zones;
            let asked = first.2.max_open_zones;
            let max_open = if asked == 0 { limit } else { asked.min(limit) };
            Some(ZonePlan { zone_bytes: z.0, zones: (self.exported_capacity() / z.0.max(1)) as usize, full: self.ftl.precondition == Precondition::Sequential, max_open: max_open as usize })
        });
        let jobs = all.into_iter().map(|(name, path, workload, tenant)| JobPlan { region: self.region_size_of(&workload), name, path, workload, tenant }).collect();
        Plan { jobs, replays, zones, ramp_time: w.ramp_time, rate_iops: w.rate_iops }
    }

    /// Each tenant's cgroup (`io.weight`, `io.max`) and NVMe class, as the host sees them.
    pub fn cgroups(&self) -> Vec<Cgroup> {
        self.tenants.iter().map(|t| Cgroup { weight: t.weight, riops: t.riops, wiops: t.wiops, rbps: t.rbps.0, wbps: t.wbps.0, class: t.class }).collect()
    }

    /// Each job's tenant, numbered in order of first appearance (`None` without tenants).
    pub fn job_tenant_ids(&self) -> Option<Vec<TenantId>> {
        if self.tenants.is_empty() {
            return None;
        }
        let mut names: Vec<String> = Vec::new();
        Some(
            self.jobs()
                .into_iter()
                .map(|(_, _, _, t)| {
                    let i = names.iter().position(|n| *n == t).unwrap_or_else(|| {
                        names.push(t);
                        names.len() - 1
                    });
                    TenantId(i as u16)
                })
                .collect(),
        )
    }

    /// The host memory the device's DMAs address, for `jobs` jobs.
    pub fn host_memory(&self, jobs: usize) -> HostMemory {
        HostMemory::new(&self.host, jobs, self.job_tenant_ids().as_deref(), self.workload.max_bs(), self.workload.randseed)
    }

    /// The tenants as the flash device sees them.
    pub fn tenancy(&self) -> Result<Tenancy> {
        let layout = self.tenant_layout().map_err(|issue| Error::Config(vec![issue]))?;
        Ok(Tenancy {
            names: layout.names,
            starts: layout.ranges.iter().map(|r| r.start).collect(),
            pools: layout.pools,
            weights: self.tenants.iter().map(|t| f64::from(t.weight)).collect(),
            slo_iops: self.tenants.iter().map(|t| (t.slo_iops > 0.0).then_some(t.slo_iops)).collect(),
        })
    }
}
