//! The metric registry: named counters and gauges, each with a unit and a one-line
//! description, under dotted names (`ftl.gc.victims`, `pcie.up.wire_bytes`, `nand.dies.busy`).
//!
//! Blocks publish their cumulative counters and current gauges into it (the registry pulls;
//! blocks never compute results). A reset (at the end of the ramp) takes the current values of
//! every counter as the new zero, so every counter reads as "since the measurement window
//! began"; gauges are states and read as they are. Per-unit counters (one value per die, per
//! channel) reset element by element.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::Serialize;

/// What kind of quantity a metric is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Grows over the run; reads as the growth since the last reset.
    Counter,
    /// A state; reads as its current value.
    Gauge,
}

#[derive(Clone, Debug, PartialEq)]
enum Value {
    Int(u64),
    Ints(Vec<u64>),
    Float(f64),
}

/// A metric a block publishes, declared once as a constant next to the block that publishes it:
/// its dotted name, unit, kind and one-line description. A family of metrics (one per lock, per
/// link direction, per pool) has `{}` in its name where the member's name or index goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    pub kind: Kind,
    pub description: &'static str,
}

impl Metric {
    /// A counter: grows over the run, reads as its growth since the last reset.
    pub const fn counter(name: &'static str, unit: &'static str, description: &'static str) -> Self {
        Metric { name, unit, kind: Kind::Counter, description }
    }

    /// A gauge: a state, read as it is.
    pub const fn gauge(name: &'static str, unit: &'static str, description: &'static str) -> Self {
        Metric { name, unit, kind: Kind::Gauge, description }
    }

    /// The name of member `member` of a family (`{}` in the name replaced by it).
    pub fn member(&self, member: impl std::fmt::Display) -> String {
        debug_assert!(self.name.contains("{}"), "{} is no family", self.name);
        self.name.replace("{}", &member.to_string())
    }
}

/// A metric's name, unit, kind and description.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricInfo {
    pub name: String,
    pub unit: &'static str,
    pub kind: Kind,
    pub description: &'static str,
}

#[derive(Clone, Debug)]
struct Entry {
    info: MetricInfo,
    value: Value,
    /// Counters: the value at the last reset.
    base: Value,
}

/// The registry.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    entries: Vec<Entry>,
    index: FxHashMap<String, usize>,
}

impl Metrics {
    fn set(&mut self, name: &str, unit: &'static str, kind: Kind, description: &'static str, value: Value) {
        if let Some(&i) = self.index.get(name) {
            self.entries[i].value = value;
            return;
        }
        let base = match &value {
            Value::Int(_) => Value::Int(0),
            Value::Ints(v) => Value::Ints(vec![0; v.len()]),
            Value::Float(_) => Value::Float(0.0),
        };
        self.index.insert(name.to_string(), self.entries.len());
        self.entries.push(Entry { info: MetricInfo { name: name.to_string(), unit, kind, description }, value, base });
    }

    /// Publishes a counter's cumulative value.
    pub fn count(&mut self, m: &Metric, value: u64) {
        debug_assert_eq!(m.kind, Kind::Counter, "{}", m.name);
        self.set(m.name, m.unit, m.kind, m.description, Value::Int(value));
    }

    /// Publishes one cumulative counter per unit (die, channel, ...).
    pub fn counts(&mut self, m: &Metric, values: &[u64]) {
        debug_assert_eq!(m.kind, Kind::Counter, "{}", m.name);
        self.set(m.name, m.unit, m.kind, m.description, Value::Ints(values.to_vec()));
    }

    /// Publishes a gauge's current value.
    pub fn gauge(&mut self, m: &Metric, value: f64) {
        debug_assert_eq!(m.kind, Kind::Gauge, "{}", m.name);
        self.set(m.name, m.unit, m.kind, m.description, Value::Float(value));
    }

    /// Publishes the counter of member `member` of family `m`.
    pub fn count_of(&mut self, m: &Metric, member: impl std::fmt::Display, value: u64) {
        debug_assert_eq!(m.kind, Kind::Counter, "{}", m.name);
        self.set(&m.member(member), m.unit, m.kind, m.description, Value::Int(value));
    }

    /// Publishes the gauge of member `member` of family `m`.
    pub fn gauge_of(&mut self, m: &Metric, member: impl std::fmt::Display, value: f64) {
        debug_assert_eq!(m.kind, Kind::Gauge, "{}", m.name);
        self.set(&m.member(member), m.unit, m.kind, m.description, Value::Float(value));
    }

    /// Takes every counter's current value as its new zero.
    pub fn reset(&mut self) {
        for e in &mut self.entries {
            if e.info.kind == Kind::Counter {
                e.base = e.value.clone();
            }
        }
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.index.get(name).map(|&i| &self.entries[i])
    }

    /// A metric's kind, if it has been published.
    pub fn kind(&self, name: &str) -> Option<Kind> {
        self.entry(name).map(|e| e.info.kind)
    }

    /// Whether a metric of that name has been published (for names a user gives).
    pub fn has(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The published entry of `m`. Reading a metric nobody published is a mistake in the
    /// reading code (a typo, or a block that no longer publishes it): an error in debug
    /// builds; a release build reads it as absent.
    fn published(&self, m: &Metric) -> Option<&Entry> {
        let e = self.entry(m.name);
        debug_assert!(e.is_some(), "metric {} was never published", m.name);
        e
    }

    /// A counter's growth since the reset (summed over units).
    pub fn int(&self, m: &Metric) -> u64 {
        self.published(m).map_or(0, Self::growth)
    }

    /// The counter of member `member` of family `m`: its growth since the reset.
    pub fn int_of(&self, m: &Metric, member: impl std::fmt::Display) -> u64 {
        let e = self.entry(&m.member(member));
        debug_assert!(e.is_some(), "metric {} was never published", m.name);
        e.map_or(0, Self::growth)
    }

    /// A per-unit counter's growth since the reset, unit by unit.
    pub fn ints(&self, m: &Metric) -> Vec<u64> {
        self.published(m).map_or_else(Vec::new, Self::each)
    }

    /// A per-unit counter's growth unit by unit, if this device publishes it (some metrics
    /// exist only on some devices: per-tenant flash counters, for one).
    pub fn ints_if(&self, m: &Metric) -> Option<Vec<u64>> {
        self.entry(m.name).map(Self::each)
    }

    /// A metric as one number: a counter's growth since the reset (summed over units), or a
    /// gauge's value.
    pub fn value(&self, m: &Metric) -> f64 {
        self.published(m).map_or(0.0, Self::number)
    }

    /// The value of the metric named `name` (see [`Metrics::value`]), for names a user
    /// gives; `None` if no block publishes it.
    pub fn value_of(&self, name: &str) -> Option<f64> {
        self.entry(name).map(Self::number)
    }

    fn growth(e: &Entry) -> u64 {
        match (&e.value, &e.base) {
            (Value::Int(v), Value::Int(b)) => v - b,
            (Value::Ints(v), Value::Ints(b)) => v.iter().zip(b).map(|(v, b)| v - b).sum(),
            _ => 0,
        }
    }

    fn each(e: &Entry) -> Vec<u64> {
        match (&e.value, &e.base) {
            (Value::Ints(v), Value::Ints(b)) => v.iter().zip(b).map(|(v, b)| v - b).collect(),
            _ => Vec::new(),
        }
    }

    fn number(e: &Entry) -> f64 {
        match &e.value {
            Value::Float(v) => *v,
            _ => Self::growth(e) as f64,
        }
    }

    /// Every metric's description, in name order.
    pub fn infos(&self) -> Vec<MetricInfo> {
        let mut v: Vec<MetricInfo> = self.entries.iter().map(|e| e.info.clone()).collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// `{name: value}` of every metric (see [`Metrics::value`]), in name order.
    pub fn flat(&self) -> BTreeMap<String, f64> {
        self.entries.iter().map(|e| (e.info.name.clone(), Self::number(e))).collect()
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // whole numbers: exact
mod tests {
    use super::*;

    #[test]
    fn counters_read_from_the_last_reset_and_gauges_as_they_are() {
        const COUNT: Metric = Metric::counter("a.count", "ops", "a counter");
        const EACH: Metric = Metric::counter("a.each", "ps", "per unit");
        const GAUGE: Metric = Metric::gauge("a.gauge", "blocks", "a gauge");
        const POOL: Metric = Metric::gauge("a.pool{}.free", "blocks", "a family");
        let mut m = Metrics::default();
        m.count(&COUNT, 10);
        m.counts(&EACH, &[1, 2]);
        m.gauge(&GAUGE, 7.0);
        m.reset();
        m.count(&COUNT, 25);
        m.counts(&EACH, &[4, 2]);
        m.gauge(&GAUGE, 5.0);
        m.gauge_of(&POOL, 3, 2.0);
        assert_eq!(m.int(&COUNT), 15);
        assert_eq!(m.ints(&EACH), vec![3, 0]);
        assert_eq!(m.value(&EACH), 3.0);
        assert_eq!(m.value(&GAUGE), 5.0);
        assert_eq!(m.value_of("a.pool3.free"), Some(2.0));
        assert_eq!(m.value_of("missing"), None);
        assert_eq!(m.ints_if(&Metric::counter("missing", "ops", "absent")), None);
        let names: Vec<String> = m.infos().into_iter().map(|i| i.name).collect();
        assert_eq!(names, vec!["a.count", "a.each", "a.gauge", "a.pool3.free"]);
        assert_eq!(m.flat().get("a.count"), Some(&15.0));
    }
}

#[cfg(all(test, debug_assertions))]
mod debug_checks {
    use super::*;

    #[test]
    #[should_panic(expected = "metric a.typo was never published")]
    fn reading_a_metric_nobody_published_is_an_error_in_debug_builds() {
        let mut m = Metrics::default();
        m.count(&Metric::counter("a.count", "ops", "a counter"), 1);
        let _ = m.int(&Metric::counter("a.typo", "ops", "a misspelt name"));
    }
}
