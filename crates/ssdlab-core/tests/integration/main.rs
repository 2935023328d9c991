//! Integration tests of the core: analytic checks of the models and the config rules.
//! One binary, one module per topic.
// Metrics are counts held as f64, and a component that never ran is exactly 0: the tests compare
// them exactly on purpose.
#![allow(clippy::missing_panics_doc, clippy::many_single_char_names, clippy::float_cmp)]

mod analytic;
mod ats;
mod cancel;
mod config_rules;
mod control;
mod ctrl_limits;
mod determinism;
mod emulate;
mod engines;
mod flush;
mod ftl;
mod golden;
mod layers;
mod map_cache;
mod nand;
mod nvm;
mod observer;
mod page_cache;
mod programs;
mod replay;
mod robustness;
mod runs;
mod tails;
mod tenants;
mod time_overflow;
mod trace;
mod trims;

use ssdlab_core::config::build;
use ssdlab_core::{Config, Simulation, Summary};

/// A path under `../shared/data` (the test material beside the repository, read in place). When
/// it is missing, a test that needs it fails if `SSDLAB_REQUIRE_SHARED=1` (as CI runs), and
/// otherwise says so on stderr and is skipped (`None`).
pub fn shared(rel: &str) -> Option<std::path::PathBuf> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data").join(rel);
    if p.exists() {
        return Some(p);
    }
    assert!(std::env::var("SSDLAB_REQUIRE_SHARED").as_deref() != Ok("1"), "{} is missing: SSDLAB_REQUIRE_SHARED=1 requires ../shared beside the repository", p.display());
    eprintln!("SKIPPED: {} is not beside the repository (../shared holds the test material)", p.display());
    None
}

/// A directory for a test's files, under cargo's scratch space for integration tests (in
/// `target/`, not the system's temporary directory, so nothing is left behind there).
pub fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// The `default` preset with one job (the tests' baseline) and `key=value` settings applied.
pub fn config(settings: &[(&str, &str)]) -> Config {
    let mut all = vec![("workload.numjobs", "1")];
    all.extend_from_slice(settings);
    config_from(None, &all)
}

/// Drops the keys named in `keys` from a summary's JSON, at every depth.
pub fn scrub(v: &mut serde_json::Value, keys: &[&str]) {
    match v {
        serde_json::Value::Object(m) => {
            m.retain(|k, _| !keys.contains(&k.as_str()));
            m.values_mut().for_each(|x| scrub(x, keys));
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| scrub(x, keys)),
        _ => {}
    }
}

pub fn config_from(base: Option<&str>, settings: &[(&str, &str)]) -> Config {
    let s: Vec<(String, String)> = settings.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
    match build(base, None, &s) {
        Ok(c) => c,
        Err(e) => panic!("test config is invalid: {e}"),
    }
}

pub fn run(settings: &[(&str, &str)]) -> Summary {
    Simulation::new(config(settings)).and_then(|mut s| s.run()).expect("run")
}

/// Runs `base` (a preset) with `settings` and returns the summary.
pub fn run_on(base: &str, settings: &[(&str, &str)]) -> Summary {
    Simulation::new(config_from(Some(base), settings)).and_then(|mut s| s.run()).expect("run")
}
