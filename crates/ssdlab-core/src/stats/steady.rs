//! Steady state as the SNIA Solid State Storage Performance Test Specification (PTS) defines
//! it: a tracked variable (IOPS, WAF, ...) measured round by round is steady over a
//! measurement window of `window` rounds (5) when
//! - its data excursion, max - min, is at most `excursion` (20 %) of the window's average, and
//! - the excursion of its least-squares line across the window, |slope| x (rounds - 1), is at
//!   most `slope` (10 %) of that average.
//!
//! The first such window is the measurement window; its average is the steady-state value.

use serde::Serialize;

pub use super::config::SteadyRule;

/// The test: PTS's bounds, or fio's deviation or slope bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Criteria {
    pub window: usize,
    /// PTS: data excursion bound (fraction of the average).
    pub excursion: f64,
    /// PTS: slope excursion bound (fraction of the average).
    pub slope: f64,
    pub rule: SteadyRule,
    /// fio's rules: the bound (fraction of the mean).
    pub limit: f64,
}

impl Default for Criteria {
    /// PTS: 5 rounds, 20 % data excursion, 10 % slope excursion.
    fn default() -> Self {
        Criteria { window: 5, excursion: 0.20, slope: 0.10, rule: SteadyRule::Pts, limit: 0.1 }
    }
}

/// What the detector found over a sequence of rounds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SteadyState {
    /// The tracked variable.
    pub metric: String,
    /// Its value per round.
    pub rounds: Vec<f64>,
    pub reached: bool,
    /// The measurement window: rounds `[first, last]` (the last window checked if not reached).
    pub first: usize,
    pub last: usize,
    /// Average over the window: the steady-state value when reached.
    pub average: f64,
    /// Data excursion and slope excursion over the window, as fractions of its average.
    pub data_excursion: f64,
    pub slope_excursion: f64,
}

/// The least-squares slope of `y` against 0, 1, 2, ...
fn slope(y: &[f64]) -> f64 {
    let n = y.len() as f64;
    let mx = (n - 1.0) / 2.0;
    let my = y.iter().sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for (i, v) in y.iter().enumerate() {
        let dx = i as f64 - mx;
        num += dx * (v - my);
        den += dx * dx;
    }
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

/// Checks the rounds of `metric` window by window, oldest first.
pub fn detect(metric: &str, rounds: &[f64], c: Criteria) -> SteadyState {
    let mut out = SteadyState { metric: metric.to_string(), rounds: rounds.to_vec(), ..SteadyState::default() };
    let n = c.window.max(2);
    if rounds.len() < n {
        return out;
    }
    for first in 0..=rounds.len() - n {
        let w = &rounds[first..first + n];
        let avg = w.iter().sum::<f64>() / n as f64;
        let (lo, hi) = w.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        let scale = avg.abs().max(f64::MIN_POSITIVE);
        let data = (hi - lo) / scale;
        let line = (slope(w) * (n - 1) as f64).abs() / scale;
        out.first = first;
        out.last = first + n - 1;
        out.average = avg;
        out.data_excursion = data;
        out.slope_excursion = line;
        let pass = match c.rule {
            SteadyRule::Pts => data <= c.excursion && line <= c.slope,
            // fio: the largest distance from the mean, and the slope per round, against the
            // mean; strictly below the limit.
            SteadyRule::Deviation => w.iter().map(|v| (v - avg).abs()).fold(0.0, f64::max) / scale < c.limit,
            SteadyRule::Slope => slope(w).abs() / scale < c.limit,
        };
        if w.iter().all(|v| v.is_finite()) && pass {
            out.reached = true;
            return out;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_that_settles_is_steady_and_one_that_drifts_or_swings_is_not() {
        // IOPS falling towards 10 000 as a fresh drive fills: 30 000 e^{-k/3} + 10 000, with a
        // deterministic +-2 % ripple.
        let settling: Vec<f64> = (0..40).map(|k| 10_000.0 + 30_000.0 * (-f64::from(k) / 3.0).exp() + 200.0 * (f64::from(k * 7 % 5) - 2.0)).collect();
        let s = detect("iops", &settling, Criteria::default());
        assert!(s.reached, "{s:?}");
        assert!(s.first > 3 && s.first < 20, "steady once the transient has gone: round {}", s.first);
        // PTS accepts the first window within its bounds, before the tail has quite gone.
        assert!((s.average / 10_000.0 - 1.0).abs() < 0.15, "{}", s.average);
        assert!(s.data_excursion <= 0.2 && s.slope_excursion <= 0.1);
        // A steady climb of 3 % a round never settles: every window's line rises 12 %.
        let drifting: Vec<f64> = (0..40).map(|k| 1000.0 * 1.03f64.powi(k)).collect();
        let d = detect("waf", &drifting, Criteria::default());
        assert!(!d.reached && d.slope_excursion > 0.1, "{d:?}");
        // Flat on average but swinging +-15 %: the line is flat, the data excursion is not.
        let swinging: Vec<f64> = (0..40).map(|k| if k % 2 == 0 { 1150.0 } else { 850.0 }).collect();
        let w = detect("iops", &swinging, Criteria::default());
        assert!(!w.reached && w.data_excursion > 0.2 && w.slope_excursion < 0.1, "{w:?}");
        // Too few rounds for a window.
        assert!(!detect("iops", &settling[..4], Criteria::default()).reached);
    }

    #[test]
    fn the_slope_excursion_is_the_fitted_line_across_the_window() {
        // y = 100 + 2k over five rounds: slope 2, excursion 8 of an average 104.
        let s = detect("x", &[100.0, 102.0, 104.0, 106.0, 108.0], Criteria { window: 5, excursion: 1.0, slope: 1.0, ..Criteria::default() });
        assert!((s.slope_excursion - 8.0 / 104.0).abs() < 1e-12 && (s.data_excursion - 8.0 / 104.0).abs() < 1e-12);
    }

    #[test]
    fn fio_rules_bound_the_deviation_and_the_slope_per_round() {
        // Mean 104, largest distance 4 (3.8 %), slope 2 per round (1.9 %).
        let w = [100.0, 102.0, 104.0, 106.0, 108.0];
        let c = |rule, limit| Criteria { window: 5, rule, limit, ..Criteria::default() };
        assert!(detect("iops", &w, c(SteadyRule::Deviation, 0.04)).reached);
        assert!(!detect("iops", &w, c(SteadyRule::Deviation, 0.038)).reached);
        assert!(detect("iops", &w, c(SteadyRule::Slope, 0.02)).reached);
        assert!(!detect("iops", &w, c(SteadyRule::Slope, 0.019)).reached);
    }
}
