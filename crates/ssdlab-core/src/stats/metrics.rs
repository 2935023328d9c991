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
    pub fn count(&mut self, name: &str, unit: &'static str, description: &'static str, value: u64) {
        self.set(name, unit, Kind::Counter, description, Value::Int(value));
    }

    /// Publishes one cumulative counter per unit (die, channel, ...).
    pub fn counts(&mut self, name: &str, unit: &'static str, description: &'static str, values: &[u64]) {
        self.set(name, unit, Kind::Counter, description, Value::Ints(values.to_vec()));
    }

    /// Publishes a gauge's current value.
    pub fn gauge(&mut self, name: &str, unit: &'static str, description: &'static str, value: f64) {
        self.set(name, unit, Kind::Gauge, description, Value::Float(value));
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

    /// Whether a metric of that name has been published.
    pub fn has(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// A counter's growth since the reset (0 if it does not exist or is not an integer).
    pub fn int(&self, name: &str) -> u64 {
        match self.entry(name) {
            Some(Entry { value: Value::Int(v), base: Value::Int(b), .. }) => v - b,
            Some(Entry { value: Value::Ints(v), base: Value::Ints(b), .. }) => v.iter().zip(b).map(|(v, b)| v - b).sum(),
            _ => 0,
        }
    }

    /// A per-unit counter's growth since the reset, unit by unit.
    pub fn ints(&self, name: &str) -> Vec<u64> {
        match self.entry(name) {
            Some(Entry { value: Value::Ints(v), base: Value::Ints(b), .. }) => v.iter().zip(b).map(|(v, b)| v - b).collect(),
            _ => Vec::new(),
        }
    }

    /// A metric as one number: a counter's growth since the reset (summed over units), or a
    /// gauge's value. 0 if it does not exist.
    pub fn value(&self, name: &str) -> f64 {
        match self.entry(name) {
            Some(Entry { value: Value::Float(v), .. }) => *v,
            Some(_) => self.int(name) as f64,
            None => 0.0,
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
        self.entries.iter().map(|e| (e.info.name.clone(), self.value(&e.info.name))).collect()
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // whole numbers: exact
mod tests {
    use super::*;

    #[test]
    fn counters_read_from_the_last_reset_and_gauges_as_they_are() {
        let mut m = Metrics::default();
        m.count("a.count", "ops", "a counter", 10);
        m.counts("a.each", "ps", "per unit", &[1, 2]);
        m.gauge("a.gauge", "blocks", "a gauge", 7.0);
        m.reset();
        m.count("a.count", "ops", "a counter", 25);
        m.counts("a.each", "ps", "per unit", &[4, 2]);
        m.gauge("a.gauge", "blocks", "a gauge", 5.0);
        assert_eq!(m.int("a.count"), 15);
        assert_eq!(m.ints("a.each"), vec![3, 0]);
        assert_eq!(m.value("a.each"), 3.0);
        assert_eq!(m.value("a.gauge"), 5.0);
        assert_eq!(m.value("missing"), 0.0);
        let names: Vec<String> = m.infos().into_iter().map(|i| i.name).collect();
        assert_eq!(names, vec!["a.count", "a.each", "a.gauge"]);
        assert_eq!(m.flat().get("a.count"), Some(&15.0));
    }
}
