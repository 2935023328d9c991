//! Golden results: one checked-in summary per preset, on a fixed small workload, so that a
//! change shows every number it moves.
//!
//! Each preset runs twice: `plain` (its own workload, `number_ios` capped per job) and `ramped`
//! (the same with `ramp_time` a quarter of the plain run's measurement window, the time of its last completion), so that what the
//! warm-up reset discards is pinned as well. Wall-clock fields and the config's hash are dropped.
//!
//! To accept a change on purpose, regenerate and review the diff:
//!
//! ```sh
//! SSDLAB_BLESS=1 cargo test -p ssdlab-core --test integration golden
//! git diff crates/ssdlab-core/tests/golden
//! ```

use std::path::PathBuf;

use serde_json::Value;
use ssdlab_core::config::presets;
use ssdlab_core::Simulation;

use crate::{config_from, scrub};

/// I/Os per job of the golden workload.
const IOS_PER_JOB: &str = "2000";

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// What is not a function of config and seed (wall-clock times), and the config's hash (a new
/// config key changes every hash without changing a result).
const UNPINNED: [&str; 3] = ["wall_time_s", "wall_s", "config_hash"];

fn run(preset: &str, ramp_ps: Option<u64>) -> Value {
    let ramp = ramp_ps.map(|ps| format!("\"{}ns\"", ps / 1000));
    let mut settings = vec![("workload.number_ios", IOS_PER_JOB)];
    if let Some(r) = &ramp {
        settings.push(("workload.ramp_time", r.as_str()));
    }
    let summary = Simulation::new(config_from(Some(preset), &settings)).and_then(|mut s| s.run()).unwrap_or_else(|e| panic!("{preset}: {e}"));
    let mut v = serde_json::to_value(&summary).expect("summary serialises");
    scrub(&mut v, &UNPINNED);
    v
}

fn golden(preset: &str) -> Value {
    let plain = run(preset, None);
    let window_ps = (plain["window_s"].as_f64().unwrap_or(0.0) * 1e12) as u64;
    let ramped = run(preset, Some(window_ps / 4));
    serde_json::json!({ "plain": plain, "ramped": ramped })
}

/// Every leaf where `a` and `b` differ: (path, a, b).
fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<(String, String, String)>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                diff(&format!("{path}.{k}"), va, y.get(k).unwrap_or(&Value::Null), out);
            }
            for (k, vb) in y {
                if !x.contains_key(k) {
                    diff(&format!("{path}.{k}"), &Value::Null, vb, out);
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ if a != b => out.push((path.to_string(), a.to_string(), b.to_string())),
        _ => {}
    }
}

#[test]
fn every_preset_matches_its_golden_summary() {
    let bless = std::env::var_os("SSDLAB_BLESS").is_some();
    let mut failures = Vec::new();
    for preset in presets::names() {
        let got = golden(preset);
        let path = dir().join(format!("{preset}.json"));
        if bless {
            std::fs::create_dir_all(dir()).expect("golden dir");
            std::fs::write(&path, serde_json::to_string_pretty(&got).expect("json") + "\n").expect("write golden");
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (run with SSDLAB_BLESS=1 to create it)", path.display()));
        let want: Value = serde_json::from_str(&text).expect("golden file is JSON");
        let mut d = Vec::new();
        diff(preset, &want, &got, &mut d);
        failures.extend(d);
    }
    let shown: Vec<String> = failures.iter().take(60).map(|(p, a, b)| format!("  {p}: golden {a}, now {b}")).collect();
    assert!(failures.is_empty(), "{} golden values changed (SSDLAB_BLESS=1 regenerates on purpose):\n{}", failures.len(), shown.join("\n"));
}
