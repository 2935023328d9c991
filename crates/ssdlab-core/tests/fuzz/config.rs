//! Config targets: TOML loading with every validation rule (`config-toml`, mutated presets
//! and their resolved forms) and `key=value` overrides on a preset (`config-set`, whose input
//! is a preset name on the first line and one `key=value` per line after it).

use rand::RngExt;
use ssdlab_core::config::{build, presets};
use ssdlab_core::{Config, Error};

use crate::engine::{self, Rng, Seeds, Verdict};

/// A config error lists at least one problem, each with a rule (`--set =5` has no path).
pub fn rejected(e: &Error) -> Verdict {
    match e {
        Error::Config(issues) => {
            assert!(!issues.is_empty(), "a config error without problems");
            for i in issues {
                assert!(!i.rule.is_empty(), "{i:?}");
            }
        }
        Error::Io { .. } => {}
        e => panic!("not a config or I/O error: {e}"),
    }
    Verdict::Rejected
}

/// What loads is shown (`config show`) as TOML that loads back and shows the same: showing is
/// a fixed point. (Not the same config: a rate like 1742780862.3000002 B/s shows rounded.)
fn accepted(c: &Config) -> Verdict {
    let shown = c.to_toml();
    match Config::from_toml_str(&shown, "shown.toml") {
        Ok(back) => assert_eq!(back.to_toml(), shown, "`config show` output loads back to another config"),
        Err(e) => panic!("`config show` output does not load: {e}\n{shown}"),
    }
    Verdict::Accepted
}

pub fn check_toml(input: &[u8]) -> Verdict {
    match Config::from_toml_str(&String::from_utf8_lossy(input), "fuzz.toml") {
        Ok(c) => accepted(&c),
        Err(e) => rejected(&e),
    }
}

/// Reads a `config-set` input: a preset name, then `key=value` lines.
pub fn parse_set(input: &[u8]) -> (String, Vec<(String, String)>) {
    let text = String::from_utf8_lossy(input);
    let mut lines = text.split('\n');
    let preset = lines.next().unwrap_or_default().to_string();
    (preset, lines.map(|l| l.split_once('=').unwrap_or((l, ""))).map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

pub fn check_set(input: &[u8]) -> Verdict {
    let (preset, settings) = parse_set(input);
    match build(Some(&preset), None, &settings) {
        Ok(c) => accepted(&c),
        Err(e) => rejected(&e),
    }
}

/// Every preset as written (with `extends`) and fully resolved.
fn preset_texts() -> Vec<Vec<u8>> {
    presets::names().into_iter().flat_map(|n| [presets::get(n).unwrap_or_default().to_string(), Config::load(n).expect("a preset loads").to_toml()]).map(String::into_bytes).collect()
}

#[test]
fn config_toml() {
    let s = Seeds::new(preset_texts(), usize::MAX);
    engine::run("config-toml", engine::parser_cases(), |rng| s.mutate(rng), check_toml);
}

/// The `key = value` lines of the resolved presets, as (dotted key, value text).
fn settings_pool() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for n in presets::names() {
        let mut table = String::new();
        for line in Config::load(n).expect("a preset loads").to_toml().lines() {
            if let Some(t) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                table = t.trim_matches(['[', ']']).to_string();
            } else if let Some((k, v)) = line.split_once(" = ") {
                out.push((if table.is_empty() { k.to_string() } else { format!("{table}.{k}") }, v.to_string()));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn make_set(pool: &[(String, String)], values: &Seeds, rng: &mut Rng) -> Vec<u8> {
    let names = presets::names();
    let mut text = names[rng.random_range(0..names.len())].to_string();
    for _ in 0..rng.random_range(1..=6) {
        let i = rng.random_range(0..pool.len());
        // The value of another key half the time: type and range errors.
        let (k, v) = (&pool[i].0, &pool[if rng.random_bool(0.5) { i } else { rng.random_range(0..pool.len()) }].1);
        let mut line = format!("{k}={v}").into_bytes();
        if rng.random_bool(0.5) {
            values.damage(&mut line, rng);
        }
        text.push('\n');
        text.push_str(&String::from_utf8_lossy(&line));
    }
    if rng.random_bool(0.1) {
        let mut b = text.into_bytes();
        values.damage(&mut b, rng);
        return b;
    }
    text.into_bytes()
}

#[test]
fn config_set() {
    let pool = settings_pool();
    let values = Seeds::new(pool.iter().map(|(_, v)| v.clone().into_bytes()), 1);
    engine::run("config-set", engine::parser_cases(), |rng| make_set(&pool, &values, rng), check_set);
}
