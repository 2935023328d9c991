//! Time cannot overflow: every time and cycle count a config gives is bounded when it loads (an
//! error naming the key), and a run whose times add up past the limit stops with an error
//! instead of reporting saturated time.

use ssdlab_core::config::build;
use ssdlab_core::sim::time::MAX_PARAM;
use ssdlab_core::units::parse_time;
use ssdlab_core::{Config, Error, Simulation};
use toml::{Table, Value};

/// Presets that between them use every block: NVM with firmware and hardware controllers, and
/// NAND behind an FTL.
const PRESETS: [&str; 3] = ["default", "default-hw", "tlc"];

/// Time keys a resolved config leaves out when unset (options).
const OPTIONAL_TIMES: [&str; 4] = ["workload.runtime", "workload.rate_cycle", "media.nand.suspend_latency", "workload.latency_target"];

/// Dotted keys of every time in `t` (strings that read as a time with a unit, or arrays of them).
fn time_keys(t: &Table, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in t {
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        let is_time = |v: &Value| v.as_str().is_some_and(|s| s.chars().any(char::is_alphabetic) && parse_time(s).is_ok());
        match v {
            Value::Table(sub) => time_keys(sub, &key, out),
            Value::Array(items) if !items.is_empty() && items.iter().all(is_time) => out.push(key),
            v if is_time(v) => out.push(key),
            _ => {}
        }
    }
}

fn settings(preset: &str, key: &str, value: &str) -> Vec<(String, String)> {
    let base = Config::load(preset).expect("preset");
    let resolved: Table = base.to_toml().parse().expect("resolved TOML");
    // An array keeps its length, each element set to the value.
    let mut cur = &resolved;
    let parts: Vec<&str> = key.split('.').collect();
    for p in &parts[..parts.len() - 1] {
        cur = cur.get(*p).and_then(Value::as_table).unwrap_or(cur);
    }
    let text = match cur.get(parts[parts.len() - 1]) {
        Some(Value::Array(items)) => format!("[{}]", vec![format!("\"{value}\""); items.len()].join(", ")),
        _ => format!("\"{value}\""),
    };
    vec![("workload.numjobs".into(), "1".into()), ("workload.number_ios".into(), "64".into()), (key.into(), text)]
}

/// Runs up to a few slices of events: a run may end, go on (valid), or stop with an overflow.
fn run_some(c: Config) -> Result<(), Error> {
    let mut sim = Simulation::new(c)?;
    for _ in 0..4 {
        if sim.run_events(50_000)? {
            break;
        }
    }
    Ok(())
}

fn names_key(e: &Error, key: &str) -> bool {
    // An array's elements are named `key[i]`.
    matches!(e, Error::Config(issues) if issues.iter().any(|i| i.path.strip_prefix(key).is_some_and(|rest| rest.is_empty() || rest.starts_with('['))))
}

#[test]
fn every_time_parameter_is_bounded_or_runs() {
    let max = MAX_PARAM.to_string();
    let mut checked = 0;
    for preset in PRESETS {
        let resolved: Table = Config::load(preset).expect("preset").to_toml().parse().expect("resolved TOML");
        let mut keys = Vec::new();
        time_keys(&resolved, "", &mut keys);
        keys.extend(OPTIONAL_TIMES.iter().map(|k| (*k).to_string()));
        for key in keys {
            // One step over the bound: refused, naming the key.
            let over = build(Some(preset), None, &settings(preset, &key, "1000001s"));
            assert!(over.as_ref().is_err_and(|e| names_key(e, &key)), "{preset}: {key} = 1000001s: {:?}", over.err());
            // At the bound: a valid run, or an error that says what is wrong (never a panic or
            // a saturated result).
            match build(Some(preset), None, &settings(preset, &key, &max)) {
                Ok(c) => match run_some(c) {
                    Ok(()) | Err(Error::TimeOverflow { .. } | Error::Workload { .. }) => {}
                    Err(e) => panic!("{preset}: {key} = {max}: unexpected error {e}"),
                },
                Err(Error::Config(_)) => {}
                Err(e) => panic!("{preset}: {key} = {max}: unexpected error {e}"),
            }
            checked += 1;
        }
    }
    assert!(checked > 60, "only {checked} time keys found");
}

#[test]
fn cycle_counts_that_overflow_name_the_key() {
    let keys = ["fetch_cycles", "parse_cycles", "prp_cycles", "prp_entry_cycles", "translate_cycles", "completion_cycles"];
    for (block, preset) in [("firmware", "default"), ("hardware", "default-hw")] {
        for key in keys.iter().chain(if block == "hardware" { &["issue_interval"][..] } else { &[][..] }) {
            let path = format!("ctrl.{block}.{key}");
            let s = vec![(path.clone(), i64::MAX.to_string())];
            let err = build(Some(preset), None, &s).expect_err("refused");
            assert!(names_key(&err, &path), "{err}");
            assert!(err.to_string().contains("overflows simulated time"), "{err}");
            // The most cycles allowed at the clock: runs, or stops with an overflow error.
            let clock = if block == "firmware" { 1_000_000_000u64 } else { 250_000_000 };
            let most = MAX_PARAM.as_ps() / (1_000_000_000_000 / clock);
            let s = vec![("workload.number_ios".into(), "64".into()), (path.clone(), most.to_string())];
            match run_some(build(Some(preset), None, &s).expect("at the bound")) {
                Ok(()) | Err(Error::TimeOverflow { .. }) => {}
                Err(e) => panic!("{path} = {most}: {e}"),
            }
        }
    }
}

#[test]
fn saturated_time_stops_the_run() {
    // Each cost is within bounds, but a command's costs together pass the limit.
    let most = MAX_PARAM.as_ps() / 1000;
    let s: Vec<(String, String)> = ["fetch_cycles", "parse_cycles", "prp_cycles", "translate_cycles", "completion_cycles"]
        .iter()
        .map(|k| (format!("ctrl.firmware.{k}"), most.to_string()))
        .chain([("ctrl.firmware.clock".to_string(), "1GHz".to_string()), ("workload.number_ios".into(), "100000".into()), ("workload.numjobs".into(), "1".into())])
        .collect();
    let c = build(None, None, &s).expect("each value within bounds");
    let err = Simulation::new(c).and_then(|mut sim| sim.run()).expect_err("overflows");
    assert!(matches!(err, Error::TimeOverflow { .. }), "{err}");
}
