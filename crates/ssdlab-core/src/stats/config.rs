use crate::config::load::Issues;
use crate::sim::SimDuration;
use crate::config_struct;

config_struct! {
    /// What the statistics observer reports.
    pub struct StatsConfig {
        /// Latency percentiles to report besides the fixed p50/p90/p99/p99.9/p99.99, each in
        /// (0, 100]. Default: `[]`.
        percentiles: Vec<f64> = Vec::new(),
        /// Significant decimal digits kept by the latency histograms, 1 to 5. Default: `3`.
        histogram_digits: u8 = 3,
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
    }
}

impl StatsConfig {
    pub fn validate(&self, issues: &mut Issues) {
        for (i, p) in self.percentiles.iter().enumerate() {
            issues.check(*p > 0.0 && *p <= 100.0, &format!("stats.percentiles[{i}]"), p, "a percentile must be in (0, 100]");
        }
        issues.check((1..=5).contains(&self.histogram_digits), "stats.histogram_digits", self.histogram_digits, "must be between 1 and 5");
        issues.check(self.interval == SimDuration::ZERO || self.interval >= SimDuration::from_ns(100), "stats.interval", self.interval, "must be 0 (no time series) or at least 100ns");
        issues.check(
            self.steady_metric.is_empty() || self.interval > SimDuration::ZERO,
            "stats.steady_metric",
            format!("{:?}", self.steady_metric),
            "needs stats.interval: each interval is a round",
        );
        issues.check(!self.steady_stop || !self.steady_metric.is_empty(), "stats.steady_stop", self.steady_stop, "needs stats.steady_metric");
    }
}
