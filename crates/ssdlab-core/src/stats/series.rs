//! Time series: the measurement window cut into intervals of `stats.interval` of simulated
//! time. Each interval gives one row per tenant (I/Os, IOPS, bandwidth, latency mean and p99 of
//! the I/Os that completed in it) and one row for the whole device (`tenant = "all"`) that adds
//! the tracked device metrics: a counter's growth over the interval, a gauge's value at its end,
//! and the interval's WAF where the FTL publishes its writes.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::metrics::{Kind, Metrics};
use super::IoRecord;
use crate::io::Op;
use crate::sim::{SimDuration, SimTime, PS_PER_NS, PS_PER_US};

/// Device metrics a series tracks when `stats.interval_metrics` names none (those the device
/// publishes).
pub const DEFAULT_TRACKED: &[&str] = &["ftl.host_writes", "ftl.gc.units_moved", "ftl.gc.victims", "ftl.erases", "ftl.free_blocks", "media.units.busy"];

/// Intervals a series may hold: past this a run stops with a config error rather than grow
/// without bound (about 200 B per row and tenant).
pub const MAX_INTERVALS: usize = 100_000;

/// The tenant name of the whole-device rows.
pub const ALL: &str = "all";

/// One row: an interval of one tenant, or of the whole device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub start_s: f64,
    pub end_s: f64,
    pub tenant: String,
    pub ios: u64,
    pub read_ios: u64,
    pub write_ios: u64,
    pub iops: f64,
    pub bandwidth_mib_s: f64,
    /// Mean and 99th percentile latency of the I/Os completed in the interval (0 if none).
    pub lat_mean_us: f64,
    pub lat_p99_us: f64,
    /// Tenant rows of a tenant with a latency SLO: latency at the SLO's percentile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lat_slo_us: Option<f64>,
    /// Device rows: the tracked metrics over the interval.
    #[serde(flatten)]
    pub metrics: BTreeMap<String, f64>,
}

impl Row {
    /// A column by name: an I/O column, or a tracked metric of a device row.
    pub fn value(&self, name: &str) -> Option<f64> {
        match name {
            "ios" => Some(self.ios as f64),
            "iops" => Some(self.iops),
            "bandwidth_mib_s" => Some(self.bandwidth_mib_s),
            "lat_mean_us" => Some(self.lat_mean_us),
            "lat_p99_us" => Some(self.lat_p99_us),
            _ => self.metrics.get(name).copied(),
        }
    }
}

/// The I/O columns a steady-state metric may name besides tracked metrics.
pub const IO_COLUMNS: &[&str] = &["ios", "iops", "bandwidth_mib_s", "lat_mean_us", "lat_p99_us"];

/// The I/Os of one tenant in the open interval.
#[derive(Clone)]
struct Acc {
    ios: u64,
    reads: u64,
    bytes: u64,
    lat_sum: u128,
    hist: Histogram<u64>,
}

impl Acc {
    fn new() -> Self {
        Acc {
            ios: 0,
            reads: 0,
            bytes: 0,
            lat_sum: 0,
            hist: {
                // Grows with the largest latency recorded (see `LatStats::histogram`).
                let mut h = Histogram::new_with_bounds(1, 2048, 2).expect("valid HDR bounds");
                h.auto(true);
                h
            },
        }
    }

    fn row_at(&self, tenant: &str, start: SimTime, end: SimTime, slo_pct: Option<f64>) -> Row {
        let mut r = self.row(tenant, start, end);
        r.lat_slo_us = slo_pct.map(|p| if self.ios == 0 { 0.0 } else { self.hist.value_at_quantile(p / 100.0).min(self.hist.max()) as f64 / 1e3 });
        r
    }

    fn row(&self, tenant: &str, start: SimTime, end: SimTime) -> Row {
        let secs = end.since(start).as_secs_f64();
        let per_sec = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
        let (mean, p99) = if self.ios == 0 { (0.0, 0.0) } else { (self.lat_sum as f64 / self.ios as f64 / PS_PER_US as f64, self.hist.value_at_quantile(0.99).min(self.hist.max()) as f64 / 1e3) };
        Row {
            start_s: start.as_secs_f64(),
            end_s: end.as_secs_f64(),
            tenant: tenant.to_string(),
            ios: self.ios,
            read_ios: self.reads,
            write_ios: self.ios - self.reads,
            iops: per_sec(self.ios as f64),
            bandwidth_mib_s: per_sec(self.bytes as f64) / 1_048_576.0,
            lat_mean_us: mean,
            lat_p99_us: p99,
            lat_slo_us: None,
            metrics: BTreeMap::new(),
        }
    }
}

/// The time series being recorded.
pub struct Series {
    interval: SimDuration,
    /// Start of the open interval.
    start: SimTime,
    tenants: Vec<String>,
    acc: Vec<Acc>,
    all: Acc,
    tracked: Vec<String>,
    /// Tracked metrics' values at the start of the open interval.
    prev: Vec<f64>,
    rows: Vec<Row>,
    /// Per tenant: the percentile of its latency SLO, if it has one.
    slo_pct: Vec<Option<f64>>,
}

impl Series {
    /// A series of `interval` rows from `start` (the end of the ramp).
    pub fn new(interval: SimDuration, start: SimTime, tenants: &[String], tracked: Vec<String>) -> Self {
        let n = tracked.len();
        Series { interval, start, tenants: tenants.to_vec(), acc: vec![Acc::new(); tenants.len()], all: Acc::new(), tracked, prev: vec![0.0; n], rows: Vec::new(), slo_pct: vec![None; tenants.len()] }
    }

    /// Records, for each tenant with a latency SLO, its latency at the SLO's percentile.
    #[must_use]
    pub fn with_slo_percentiles(mut self, pct: Vec<Option<f64>>) -> Self {
        self.slo_pct = pct;
        self
    }

    /// The tracked device metrics.
    pub fn tracked(&self) -> &[String] {
        &self.tracked
    }

    /// When the open interval ends.
    pub fn boundary(&self) -> SimTime {
        self.start + self.interval
    }

    /// Counts a completed I/O in the open interval.
    pub fn io(&mut self, rec: &IoRecord<'_>, lat_ps: u64) {
        let ns = (lat_ps / PS_PER_NS).clamp(1, super::HIST_MAX_NS);
        for a in [&mut self.acc[rec.tenant.index()], &mut self.all] {
            a.ios += 1;
            a.reads += u64::from(rec.op == Op::Read);
            // Bytes moved: a trim's range moves none (as in the run's bandwidth).
            a.bytes += if rec.op == Op::Trim { 0 } else { rec.len };
            a.lat_sum += u128::from(lat_ps);
            if a.hist.record(ns).is_err() {
                a.hist.saturating_record(ns);
            }
        }
    }

    /// The rows of the interval `[start, end)` with the metrics as they are at `end`.
    fn interval_rows(&self, end: SimTime, m: &Metrics) -> Vec<Row> {
        let mut rows: Vec<Row> = self.tenants.iter().zip(&self.acc).enumerate().map(|(i, (t, a))| a.row_at(t, self.start, end, self.slo_pct.get(i).copied().flatten())).collect();
        let mut all = self.all.row(ALL, self.start, end);
        let mut delta = BTreeMap::new();
        for (name, prev) in self.tracked.iter().zip(&self.prev) {
            let now = m.value_of(name).unwrap_or(0.0);
            let v = if m.kind(name) == Some(Kind::Counter) { now - prev } else { now };
            delta.insert(name.clone(), v);
        }
        if let (Some(&host), Some(&gc)) = (delta.get("ftl.host_writes"), delta.get("ftl.gc.units_moved")) {
            if host > 0.0 {
                delta.insert("ftl.waf".to_string(), (host + gc) / host);
            }
        }
        all.metrics = delta;
        rows.push(all);
        rows
    }

    /// `name` in every closed interval's device row, oldest first (NaN where a row lacks it).
    pub fn column(&self, name: &str) -> Vec<f64> {
        self.rows.iter().filter(|r| r.tenant == ALL).map(|r| r.value(name).unwrap_or(f64::NAN)).collect()
    }

    /// `name` in the last `n` closed intervals' device rows (fewer if there are fewer), oldest
    /// first.
    pub fn last_column(&self, name: &str, n: usize) -> Vec<f64> {
        let mut v: Vec<f64> = self.rows.iter().rev().filter(|r| r.tenant == ALL).take(n).map(|r| r.value(name).unwrap_or(f64::NAN)).collect();
        v.reverse();
        v
    }

    /// Intervals closed so far.
    pub fn intervals(&self) -> usize {
        self.rows.len() / (self.tenants.len() + 1)
    }

    /// Closes the open interval at `end` (the metrics are as they are at `end`).
    pub fn close(&mut self, end: SimTime, m: &Metrics) {
        let rows = self.interval_rows(end, m);
        self.rows.extend(rows);
        self.start = end;
        for a in self.acc.iter_mut().chain(std::iter::once(&mut self.all)) {
            a.ios = 0;
            a.reads = 0;
            a.bytes = 0;
            a.lat_sum = 0;
            a.hist.reset();
        }
        self.prev = self.tracked.iter().map(|n| m.value_of(n).unwrap_or(0.0)).collect();
    }

    /// Every closed row, then the open interval up to `now` if anything happened in it.
    pub fn rows(&self, now: SimTime, m: &Metrics) -> Vec<Row> {
        let mut rows = self.rows.clone();
        if now > self.start || self.all.ios > 0 {
            rows.extend(self.interval_rows(now, m));
        }
        rows
    }
}

/// The time series of a run, as `--json` reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Timeseries {
    pub interval_s: f64,
    /// The device metrics the `all` rows carry.
    pub metrics: Vec<String>,
    pub rows: Vec<Row>,
}
