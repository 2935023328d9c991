use crate::schema::Issues;
use crate::sim::SimDuration;
use crate::{config_enum, config_struct};

config_enum! {
    /// The test a window of rounds passes to be steady.
    pub enum SteadyRule {
        /// SNIA PTS: max - min within 20 % of the window's average, and the fitted line's rise
        /// across the window within 10 %.
        Pts = "pts",
        /// fio's `ss=<metric>:N%`: every round within `steady_limit` of the window's mean.
        Deviation = "deviation",
        /// fio's `ss=<metric>_slope:N%`: the fitted line's slope per round within `steady_limit`
        /// of the window's mean.
        Slope = "slope",
    }
}

config_struct! {
    /// What the statistics observer reports.
    pub struct StatsConfig {
        /// Latency percentiles to report besides the fixed p50/p90/p99/p99.9/p99.99, each in
        /// (0, 100]. Default: `[]`.
        percentiles: Vec<f64> = Vec::new(),
        /// Significant decimal digits kept by the latency histograms, 1 to 5. Default: `3`.
        histogram_digits: u8 = 3,
        /// Report each completion latency's histogram in fio's bins (`clat_us.bins`: fio's
        /// log-linear buckets, 64 per power of two, as `[ns, count]`; for `--output-format=json+`
        /// and fio's latency buckets). Default: `false`.
        fio_bins: bool = false,
        /// fio's `group_reporting`: `jobs` reports one entry per group of jobs
        /// (`workload.group`), named after its first job, its counts and latencies merged and
        /// its rates over the longest of its jobs' runtimes, as fio sums a group. Default: `false`.
        group_reporting: bool = false,
        /// Simulated time per time-series row, from the end of the ramp (`"10ms"`); `0` = no
        /// time series. Default: `0`.
        interval: SimDuration = SimDuration::ZERO,
        /// Device metrics the time series tracks (names as `ssdlab run --metrics` lists them).
        /// Empty: GC, erases, free blocks, host writes (so WAF) and media busy time, where the
        /// device has them. Default: `[]`.
        interval_metrics: Vec<String> = Vec::new(),
        /// Steady state (SNIA PTS) of this device-row column of the time series, each interval a
        /// round: `iops`, `bandwidth_mib_s`, `lat_mean_us`, `lat_p99_us`, or a tracked metric
        /// such as `ftl.waf`. Empty: off. Needs `stats.interval`. Default: `""`.
        steady_metric: String = String::new(),
        /// Stop the run once that steady state is reached (`ssdlab run --until-steady`).
        /// Default: `false`.
        steady_stop: bool = false,
        /// The steady-state test: `"pts"`, `"deviation"` or `"slope"` (fio's `ss`). Default:
        /// `"pts"`.
        steady_rule: SteadyRule = SteadyRule::Pts,
        /// `deviation`/`slope`: the bound, as a fraction of the window's mean (fio's `N%` / 100).
        /// Default: `0.1`.
        steady_limit: f64 = 0.1,
        /// Rounds in the window (fio's `ss_dur` over its one-second rounds). Default: `5`.
        steady_window: u32 = 5,
        /// Rounds that end before this much time after the ramp are not judged (fio's
        /// `ss_ramp`). Default: `0`.
        steady_ramp: SimDuration = SimDuration::ZERO,
    }
}

impl StatsConfig {
    /// The steady-state test this config asks for.
    pub fn steady_criteria(&self) -> super::steady::Criteria {
        let pts = super::steady::Criteria::default();
        super::steady::Criteria { window: self.steady_window.max(2) as usize, rule: self.steady_rule, limit: self.steady_limit, ..pts }
    }

    /// Rounds at the start that `steady_ramp` leaves out.
    pub fn steady_skip(&self) -> usize {
        if self.interval == SimDuration::ZERO {
            return 0;
        }
        self.steady_ramp.as_ps().div_ceil(self.interval.as_ps()) as usize
    }

    pub fn validate(&self, issues: &mut Issues) {
        for (i, p) in self.percentiles.iter().enumerate() {
            issues.check(*p > 0.0 && *p <= 100.0, &format!("stats.percentiles[{i}]"), p, "a percentile must be in (0, 100]");
        }
        issues.check((1..=5).contains(&self.histogram_digits), "stats.histogram_digits", self.histogram_digits, "must be between 1 and 5");
        issues.check(self.interval == SimDuration::ZERO || self.interval >= SimDuration::from_ns(100), "stats.interval", self.interval, "must be 0 (no time series) or at least 100ns");
        issues.check(self.steady_metric.is_empty() || self.interval > SimDuration::ZERO, "stats.steady_metric", format!("{:?}", self.steady_metric), "needs stats.interval: each interval is a round");
        issues.check(!self.steady_stop || !self.steady_metric.is_empty(), "stats.steady_stop", self.steady_stop, "needs stats.steady_metric");
        issues.check(self.steady_limit.is_finite() && self.steady_limit > 0.0, "stats.steady_limit", self.steady_limit, "must be greater than zero");
        issues.check((2..=100_000).contains(&self.steady_window), "stats.steady_window", self.steady_window, "must be between 2 and 100000 rounds");
    }
}
