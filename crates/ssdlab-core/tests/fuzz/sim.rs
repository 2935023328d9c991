//! The simulation target (`sim`): a preset with a tiny geometry and random workload knobs,
//! a few hundred I/Os. Its input is a `config-set` input (preset, then `key=value` lines).
//! A valid config runs to the end, twice with the same summary, and completes every I/O it
//! issues (and in integrity mode finds nothing lost, stale or duplicated); an invalid one is a
//! config error.

use rand::RngExt;
use ssdlab_core::config::{build, presets};
use ssdlab_core::{Config, Simulation, Summary};

use crate::config::{parse_set, rejected};
use crate::engine::{self, Rng, Verdict};

/// Knobs and the values drawn for them (TOML text, as `--set` takes it).
const KNOBS: &[(&str, &[&str])] = &[
    ("workload.rw", &["read", "write", "randread", "randwrite", "rw", "randrw", "trim", "randtrim", "trimwrite", "randtrimwrite"]),
    ("workload.trim_ranges", &["1", "4"]),
    ("workload.bs", &["512", "4k", "8k", "16k", "64k", "128k", "\"4k,16k\""]),
    ("workload.iodepth", &["1", "2", "4", "8", "32"]),
    ("workload.numjobs", &["1", "2", "3", "4"]),
    ("workload.rwmixread", &["0", "30", "50", "100"]),
    ("workload.random_distribution", &["random", "zipf:1.2", "pareto:0.5"]),
    ("workload.loops", &["1", "2"]),
    ("workload.rate_iops", &["0", "20000"]),
    ("workload.thinktime", &["0us", "5us"]),
    ("workload.direct", &["true", "false"]),
    ("workload.size", &["1MiB", "16MiB"]),
    ("nvme.io_queues", &["1", "2", "8"]),
    ("nvme.queue_depth", &["64", "1024"]),
    ("ctrl.mode", &["firmware", "hardware"]),
    ("pcie.lanes", &["1", "4", "16"]),
    ("media.nand.channels", &["1", "2", "4"]),
    ("media.nand.ways", &["1", "2"]),
    ("media.nand.blocks_per_plane", &["16", "32", "64"]),
];

fn make(rng: &mut Rng) -> Vec<u8> {
    let names = presets::names();
    let mut lines = vec![
        names[rng.random_range(0..names.len())].to_string(),
        format!("workload.number_ios={}", rng.random_range(1..=300)),
        format!("workload.randseed={}", rng.random_range(1..1000)),
        "workload.ramp_time=0us".to_string(),
    ];
    for _ in 0..rng.random_range(0..=8) {
        let (k, vals) = KNOBS[rng.random_range(0..KNOBS.len())];
        lines.push(format!("{k}={}", vals[rng.random_range(0..vals.len())]));
    }
    if rng.random_range(0..4) == 0 {
        // Integrity mode's shadow map holds every unit: on a small drive only, to stay quick.
        lines.push("ftl.integrity=true".to_string());
        lines.push("media.nand.blocks_per_plane=16".to_string());
    }
    lines.join("\n").into_bytes()
}

fn run(c: &Config) -> Summary {
    match Simulation::new(c.clone()).and_then(|mut s| s.run()) {
        Ok(s) => s,
        Err(e) => panic!("a valid config fails to run: {e}"),
    }
}

/// The summary as JSON, without wall times (`wall_time_s`, and preconditioning's `wall_s`).
fn json(s: &Summary) -> String {
    fn strip(v: &mut serde_json::Value) {
        if let Some(o) = v.as_object_mut() {
            o.retain(|k, _| !k.starts_with("wall_"));
            o.values_mut().for_each(strip);
        }
    }
    let mut v = serde_json::to_value(s).expect("summary JSON");
    strip(&mut v);
    v.to_string()
}

pub fn check(input: &[u8]) -> Verdict {
    let (preset, settings) = parse_set(input);
    let c = match build(Some(&preset), None, &settings) {
        Ok(c) => c,
        Err(e) => return rejected(&e),
    };
    if c.memory_estimate(false).total() > ssdlab_core::config::memory::default_limit() {
        // Simulation::new refuses it before anything is built: a config error, as a value's.
        return rejected(&Simulation::new(c).err().expect("refused for its memory"));
    }
    let (a, b) = (run(&c), run(&c));
    assert_eq!(json(&a), json(&b), "the same config and seed gave two results");
    assert_eq!(a.jobs.iter().map(|j| j.ios).sum::<u64>(), a.ios, "jobs' I/Os do not add up");
    assert_eq!(a.read.ios + a.write.ios + a.trim.ios, a.ios, "reads, writes and trims do not add up");
    if let Some(i) = a.flash.as_ref().and_then(|f| f.integrity.as_ref()) {
        assert_eq!((i.reads.lost, i.reads.stale, i.reads.duplicated, i.violation.as_deref()), (0, 0, 0, None), "integrity mode found a fault");
    }
    let w = &c.workload;
    if w.runtime.is_none() && w.jobs.is_empty() && c.tenants.is_empty() {
        let issued = w.number_ios.unwrap_or(0) * u64::from(w.numjobs) * u64::from(w.loops);
        assert_eq!(a.ios, issued, "I/Os completed != I/Os issued");
    }
    Verdict::Accepted
}

#[test]
fn sim() {
    engine::run("sim", engine::cases("SSDLAB_FUZZ_SIM_CASES", 24), make, check);
}
