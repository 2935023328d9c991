use crate::config::load::Issues;
use crate::config_struct;

config_struct! {
    /// What the statistics observer reports.
    pub struct StatsConfig {
        /// Latency percentiles to report besides the fixed p50/p90/p99/p99.9/p99.99, each in
        /// (0, 100]. Default: `[]`.
        percentiles: Vec<f64> = Vec::new(),
        /// Significant decimal digits kept by the latency histograms, 1 to 5. Default: `3`.
        histogram_digits: u8 = 3,
    }
}

impl StatsConfig {
    pub fn validate(&self, issues: &mut Issues) {
        for (i, p) in self.percentiles.iter().enumerate() {
            issues.check(*p > 0.0 && *p <= 100.0, &format!("stats.percentiles[{i}]"), p, "a percentile must be in (0, 100]");
        }
        issues.check((1..=5).contains(&self.histogram_digits), "stats.histogram_digits", self.histogram_digits, "must be between 1 and 5");
    }
}
