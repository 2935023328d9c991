//! The run summary, built from the I/O statistics and the metric registry (after every block
//! has published into it, and with counters reset at the start of the measurement window).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ats::metrics::{ATS_HITS, ATS_IOTLB_MISSES, ATS_LOOKUPS, ATS_PINNED_HITS};
use crate::config::Config;
use crate::ctrl::metrics::{CTRL_BUSY, CTRL_UNITS};
use crate::ftl::metrics::{FTL_TENANT_GC_MOVED, FTL_TENANT_GC_PAID_OTHERS, FTL_TENANT_GC_PAID_OWN, FTL_TENANT_HOST_WRITES};
use crate::ftl::FlashSummary;
use crate::host::metrics::{HOST_CPUS, HOST_CPU_BUSY, HOST_IODEPTH_COMPLETE, HOST_SCHEDULER_BUSY, HOST_SPIN};
use crate::ids::TenantId;
use crate::io::Op;
use crate::pcie::metrics::{PCIE_BUSY, PCIE_TLPS, PCIE_WIRE_BYTES};
use crate::sim::{SimDuration, SimTime};
use crate::stats::Metric;
use crate::stats::{steady, BreakdownUs, JobSummary, Metrics, OpSummary, Row, SloResult, Stats, TenantFlash, TenantSummary, Timeseries};
use crate::workload::replay::ReplaySummary;
use crate::workload::runner::metrics::HOST_IODEPTH_LEVEL;

/// How busy each resource was over the run (busy time / simulated time; per unit for pools).
/// For NAND, `media_units` are the dies and `media_bus` the channels.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Utilisation {
    pub host_cpu: f64,
    pub pcie_down: f64,
    pub pcie_up: f64,
    pub ctrl: f64,
    pub media_units: f64,
    pub media_bus: f64,
}

/// Link traffic over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LinkTraffic {
    pub down_tlps: u64,
    pub down_wire_bytes: u64,
    pub up_tlps: u64,
    pub up_wire_bytes: u64,
}

/// Everything a run reports (the document `ssdlab run --json` prints).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub version: String,
    pub config_hash: String,
    pub seed: u64,
    pub ios: u64,
    pub sim_time_s: f64,
    pub window_s: f64,
    pub wall_time_s: f64,
    pub events: u64,
    pub iops: f64,
    pub bandwidth_mib_s: f64,
    pub read: OpSummary,
    pub write: OpSummary,
    /// Trims (Dataset Management deallocate); their bytes are the ranges trimmed.
    pub trim: OpSummary,
    /// Per job (a job is a host thread with its own queue pair).
    pub jobs: Vec<JobSummary>,
    /// Per tenant (its jobs together).
    pub tenants: Vec<TenantSummary>,
    pub breakdown_us: BreakdownUs,
    pub utilisation: Utilisation,
    pub pcie: LinkTraffic,
    /// Host CPU time over the run.
    pub host: HostSummary,
    /// Runs with `ats.enabled`: the device's ATC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ats: Option<AtsSummary>,
    /// NAND runs only: FTL, array and preconditioning figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flash: Option<FlashSummary>,
    /// Trace replays only: what the replay did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplaySummary>,
    /// Every metric of the registry over the measurement window, flat: `{name: value}`.
    pub metrics: BTreeMap<String, f64>,
    /// Runs with `stats.interval`: the time series.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<Timeseries>,
    /// Runs with `stats.steady_metric`: the SNIA PTS steady-state check over the rounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<steady::SteadyState>,
}

/// The device's Address Translation Cache over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AtsSummary {
    pub stu_bytes: u64,
    pub lines: u32,
    pub ways: u32,
    /// Translation lookups (one per STU page a DMA touches).
    pub lookups: u64,
    pub hits: u64,
    pub hit_rate: f64,
    /// Hits served by pinned SQ/CQ translations.
    pub pinned_hits: u64,
    pub misses: u64,
    /// ATC misses per completed I/O.
    pub misses_per_io: f64,
    /// Misses that also missed the IOMMU's IOTLB (and paid a page walk).
    pub iotlb_misses: u64,
    /// Time a miss costs: the ATS request round trip (without the walk).
    pub miss_round_trip_us: f64,
}

/// Host CPU time: every job's CPU, the scheduler thread, and spinning (on the tag lock, or
/// polling for completions).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HostSummary {
    pub cpu_seconds: f64,
    pub cpu_us_per_io: f64,
    /// CPU cores kept busy per GB/s moved (CPU-seconds per GB).
    pub cpus_per_gb_s: f64,
}

/// What the summary is built from besides the statistics.
pub struct Inputs<'a> {
    pub config: &'a Config,
    pub now: SimTime,
    pub wall_s: f64,
    pub events: u64,
    /// The registry, published now; its counters count from `window_start`.
    pub metrics: &'a Metrics,
    pub window_start: SimTime,
    pub job_names: Vec<String>,
    /// Per job: its early end's error and its latency search's depth.
    pub job_outcomes: Vec<(Option<String>, Option<u32>)>,
    pub tenants: &'a [String],
    pub job_tenants: Vec<TenantId>,
    /// Busy fraction of the media units and of the media's internal bus over the window.
    pub media_utilisation: (f64, f64),
    /// The flash section (flash media only), over the window.
    pub flash: Option<FlashSummary>,
    pub replay: Option<ReplaySummary>,
    /// The round trip of an ATS miss (runs with `ats.enabled`).
    pub ats_round_trip: Option<SimDuration>,
}

impl Summary {
    /// The results so far: `stats`' I/O statistics, and what `x` brings besides.
    pub fn build(stats: &Stats, x: &Inputs<'_>) -> Summary {
        let m = x.metrics;
        let read = stats.op_summary(Op::Read);
        let write = stats.op_summary(Op::Write);
        let trim = stats.op_summary(Op::Trim);
        // Bytes moved: a trim's range moves none.
        let bytes = read.bytes + write.bytes;
        let span = x.now.since(x.window_start);
        let sim = span.as_secs_f64();
        let ps = |metric: &Metric| SimDuration::from_ps(m.int(metric));
        let frac = |busy: SimDuration, n: f64| if sim > 0.0 { busy.as_secs_f64() / sim / n.max(1.0) } else { 0.0 };
        let (media_units, media_bus) = x.media_utilisation;
        let mut flash = x.flash.clone();
        if let Some(f) = &mut flash {
            f.free_blocks_over_time = stats.free_blocks_over_time().to_vec();
        }
        let ios = stats.ios();
        let window = stats.window().as_secs_f64();
        let per_io = |v: f64| if ios > 0 { v / ios as f64 } else { 0.0 };
        let cpu = (ps(&HOST_CPU_BUSY) + ps(&HOST_SCHEDULER_BUSY) + ps(&HOST_SPIN)).as_secs_f64();
        let gb = bytes as f64 / 1e9;
        let ats = x.ats_round_trip.map(|rtt| {
            let c = &x.config.ats;
            let (lookups, hits) = (m.int(&ATS_LOOKUPS), m.int(&ATS_HITS));
            AtsSummary {
                stu_bytes: c.stu.0,
                lines: c.lines,
                ways: if c.ways == 0 { c.lines } else { c.ways },
                lookups,
                hits,
                hit_rate: if lookups > 0 { hits as f64 / lookups as f64 } else { 0.0 },
                pinned_hits: m.int(&ATS_PINNED_HITS),
                misses: lookups - hits,
                misses_per_io: per_io((lookups - hits) as f64),
                iotlb_misses: m.int(&ATS_IOTLB_MISSES),
                miss_round_trip_us: rtt.as_us_f64(),
            }
        });
        let mut summary = Summary {
            version: crate::VERSION.to_string(),
            config_hash: x.config.hash(),
            seed: x.config.workload.randseed,
            ios,
            sim_time_s: x.now.as_secs_f64(),
            window_s: window,
            wall_time_s: x.wall_s,
            events: x.events,
            iops: if window > 0.0 { ios as f64 / window } else { 0.0 },
            bandwidth_mib_s: read.bandwidth_mib_s + write.bandwidth_mib_s,
            breakdown_us: stats.breakdown_all(),
            jobs: job_results(stats, x, m),
            tenants: stats.tenant_summaries(x.tenants, &x.job_tenants),
            read,
            write,
            trim,
            utilisation: Utilisation {
                host_cpu: frac(ps(&HOST_CPU_BUSY), m.value(&HOST_CPUS)),
                pcie_down: frac(SimDuration::from_ps(m.int_of(&PCIE_BUSY, "down")), 1.0),
                pcie_up: frac(SimDuration::from_ps(m.int_of(&PCIE_BUSY, "up")), 1.0),
                ctrl: frac(ps(&CTRL_BUSY), m.value(&CTRL_UNITS)),
                media_units,
                media_bus,
            },
            pcie: LinkTraffic {
                down_tlps: m.int_of(&PCIE_TLPS, "down"),
                down_wire_bytes: m.int_of(&PCIE_WIRE_BYTES, "down"),
                up_tlps: m.int_of(&PCIE_TLPS, "up"),
                up_wire_bytes: m.int_of(&PCIE_WIRE_BYTES, "up"),
            },
            host: HostSummary { cpu_seconds: cpu, cpu_us_per_io: per_io(cpu * 1e6), cpus_per_gb_s: if gb > 0.0 { cpu / gb } else { 0.0 } },
            flash,
            replay: x.replay.clone(),
            ats,
            metrics: m.flat(),
            steady_state: stats.series().filter(|_| !x.config.stats.steady_metric.is_empty()).map(|s| {
                let metric = &x.config.stats.steady_metric;
                let rounds = s.column(metric);
                let skip = x.config.stats.steady_skip().min(rounds.len());
                let mut found = steady::detect(metric, &rounds[skip..], x.config.stats.steady_criteria());
                // Report rounds and the window in the series' own numbering.
                found.rounds = rounds;
                found.first += skip;
                found.last += skip;
                found
            }),
            timeseries: stats.series().map(|s| Timeseries { interval_s: x.config.stats.interval.as_secs_f64(), metrics: s.tracked().to_vec(), rows: s.rows(x.now, m) }),
        };
        tenant_results(&mut summary, x.config, m);
        let extra: Vec<(String, f64)> = derived(&summary).into_iter().map(|(name, _, _, v)| (name, v)).collect();
        summary.metrics.extend(extra);
        summary
    }
}

/// Fills in what the tenants' results need besides their I/Os: weights and proportionality,
/// the FTL's work per tenant, and SLO compliance over the series.
fn tenant_results(s: &mut Summary, config: &Config, m: &Metrics) {
    let cfg = |t: usize| config.tenants.get(t);
    for (t, ts) in s.tenants.iter_mut().enumerate() {
        ts.weight = cfg(t).map_or(100, |c| c.weight);
        ts.class = cfg(t).map_or(crate::nvme::WrrClass::Medium, |c| c.class).as_str().to_string();
    }
    // The reference: the first tenant with the smallest weight.
    let reference = s.tenants.iter().enumerate().min_by_key(|(i, t)| (t.weight, *i)).map(|(i, t)| (i, f64::from(t.weight), t.bandwidth_mib_s));
    if let Some((_, w0, bw0)) = reference {
        for ts in &mut s.tenants {
            ts.weight_ratio = f64::from(ts.weight) / w0;
            ts.proportionality = if bw0 > 0.0 { ts.bandwidth_mib_s / bw0 } else { 0.0 };
        }
    }
    // Flash devices with several tenants attribute GC to them.
    let host = m.ints_if(&FTL_TENANT_HOST_WRITES).unwrap_or_default();
    if host.len() == s.tenants.len() {
        let (own, others, moved) = (m.ints(&FTL_TENANT_GC_PAID_OWN), m.ints(&FTL_TENANT_GC_PAID_OTHERS), m.ints(&FTL_TENANT_GC_MOVED));
        for (t, ts) in s.tenants.iter_mut().enumerate() {
            let paid = own[t] + others[t];
            ts.flash = Some(TenantFlash {
                host_writes: host[t],
                gc_paid_own: own[t],
                gc_paid_others: others[t],
                gc_moved: moved[t],
                waf: if host[t] > 0 { (host[t] + paid) as f64 / host[t] as f64 } else { 1.0 },
                own_fraction: if paid > 0 { own[t] as f64 / paid as f64 } else { 1.0 },
            });
        }
    }
    let Some(ts) = &s.timeseries else { return };
    for (t, tenant) in s.tenants.iter_mut().enumerate() {
        let Some(c) = cfg(t) else { continue };
        let rows: Vec<&Row> = ts.rows.iter().filter(|r| r.tenant == tenant.name).collect();
        let mut push = |kind: &str, target: f64, percentile: Option<f64>, met: &dyn Fn(&Row) -> Option<bool>| {
            let verdicts: Vec<bool> = rows.iter().filter_map(|r| met(r)).collect();
            let n = verdicts.len() as u64;
            let ok = verdicts.iter().filter(|&&v| v).count() as u64;
            tenant.slo.push(SloResult { kind: kind.into(), target, percentile, intervals: n, met: ok, compliance: if n > 0 { ok as f64 / n as f64 } else { 0.0 } });
        };
        if c.slo_iops > 0.0 {
            push("iops", c.slo_iops, None, &|r| Some(r.iops >= c.slo_iops));
        }
        if c.slo_bandwidth.0 > 0.0 {
            let target = c.slo_bandwidth.0;
            push("bandwidth", target, None, &|r| Some(r.bandwidth_mib_s * 1_048_576.0 >= target));
        }
        if c.slo_latency > SimDuration::ZERO {
            let us = c.slo_latency.as_us_f64();
            push("latency", us, Some(c.slo_percentile), &|r| (r.ios > 0).then(|| r.lat_slo_us.unwrap_or(r.lat_p99_us) <= us));
        }
    }
}

/// Results that are not block counters, under metric names too, so that the flat `metrics`
/// object holds every headline number of a run: `(name, unit, description, value)`.
pub fn derived(s: &Summary) -> Vec<(String, &'static str, &'static str, f64)> {
    let mut out = vec![
        ("io.ios".to_string(), "I/Os", "I/Os completed in the measurement window", s.ios as f64),
        ("io.iops".to_string(), "IOPS", "I/Os per second over the measurement window", s.iops),
        ("io.bandwidth_mib_s".to_string(), "MiB/s", "bytes moved per second over the window", s.bandwidth_mib_s),
        ("io.window_s".to_string(), "s", "the measurement window: end of the ramp to the last completion", s.window_s),
    ];
    for (op, o) in [("read", &s.read), ("write", &s.write), ("trim", &s.trim)] {
        out.push((format!("io.{op}.ios"), "I/Os", "I/Os of this direction", o.ios as f64));
        out.push((format!("io.{op}.iops"), "IOPS", "I/Os of this direction per second", o.iops));
        out.push((format!("io.{op}.bandwidth_mib_s"), "MiB/s", "bandwidth of this direction", o.bandwidth_mib_s));
        let l = &o.latency_us;
        for (k, v) in [("mean", l.mean), ("p50", l.p50), ("p99", l.p99), ("p999", l.p999), ("max", l.max)] {
            out.push((format!("io.{op}.latency_us.{k}"), "us", "latency (issue to completion) of this direction", v));
        }
    }
    let u = &s.utilisation;
    for (k, v) in [("host_cpu", u.host_cpu), ("pcie_down", u.pcie_down), ("pcie_up", u.pcie_up), ("ctrl", u.ctrl), ("media_units", u.media_units), ("media_bus", u.media_bus)] {
        out.push((format!("utilisation.{k}"), "fraction", "busy time over the window, per unit", v));
    }
    out.push(("host.cpu_us_per_io".to_string(), "us", "host CPU time per I/O", s.host.cpu_us_per_io));
    if let Some(f) = &s.flash {
        out.push(("ftl.waf".to_string(), "ratio", "write amplification: flash writes per host write", f.waf));
    }
    out
}

/// Each job's results with its queue-depth counts and outcome; merged per group with
/// `stats.group_reporting`.
fn job_results(stats: &Stats, x: &Inputs<'_>, m: &Metrics) -> Vec<JobSummary> {
    let mut jobs = stats.job_summaries(&x.job_names);
    let (levels, reaps) = (m.ints(&HOST_IODEPTH_LEVEL), m.ints(&HOST_IODEPTH_COMPLETE));
    for (j, job) in jobs.iter_mut().enumerate() {
        job.iodepth_level = levels.get(7 * j..7 * j + 7).map(<[u64]>::to_vec).unwrap_or_default();
        job.iodepth_complete = reaps.get(7 * j..7 * j + 7).map(<[u64]>::to_vec).unwrap_or_default();
        if let Some((error, depth)) = x.job_outcomes.get(j) {
            job.error.clone_from(error);
            job.latency_depth = *depth;
        }
    }
    if x.config.stats.group_reporting {
        jobs = group_jobs(stats, &x.job_names, &x.config.jobs(), &jobs);
    }
    jobs
}

/// fio's `group_reporting`: the jobs merged per `workload.group` (in the order groups first
/// appear), with their queue-depth counts summed and the first error and settled depth kept.
fn group_jobs(stats: &Stats, names: &[String], configs: &[(String, String, crate::workload::WorkloadConfig, String)], jobs: &[JobSummary]) -> Vec<JobSummary> {
    let mut order: Vec<u32> = Vec::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (j, (_, _, w, _)) in configs.iter().enumerate().take(jobs.len()) {
        let g = order.iter().position(|&x| x == w.group).unwrap_or_else(|| {
            order.push(w.group);
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(j);
    }
    let mut merged = stats.group_summaries(names, &groups);
    for (m, g) in merged.iter_mut().zip(&groups) {
        let sum = |pick: fn(&JobSummary) -> &Vec<u64>| {
            g.iter().map(|&j| pick(&jobs[j])).fold(Vec::new(), |mut acc: Vec<u64>, v| {
                acc.resize(acc.len().max(v.len()), 0);
                acc.iter_mut().zip(v).for_each(|(a, b)| *a += b);
                acc
            })
        };
        m.iodepth_level = sum(|j| &j.iodepth_level);
        m.iodepth_complete = sum(|j| &j.iodepth_complete);
        m.error = g.iter().find_map(|&j| jobs[j].error.clone());
        m.latency_depth = g.iter().find_map(|&j| jobs[j].latency_depth);
    }
    merged
}
