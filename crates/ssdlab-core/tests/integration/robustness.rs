//! The core never panics on user input: random configs either run or fail with a config error.

use rand::{RngExt, SeedableRng};
use ssdlab_core::config::build;
use ssdlab_core::{Error, Simulation};

const KEYS: &[(&str, &[&str])] = &[
    ("pcie.gen", &["0", "1", "3", "6", "7", "-1", "\"x\""]),
    ("pcie.lanes", &["0", "1", "3", "16", "4294967296"]),
    ("pcie.mps", &["0", "64", "128", "4096", "8192", "\"1k\"", "300"]),
    ("pcie.rcb", &["64", "100", "128"]),
    ("pcie.dllps_per_tlp", &["0", "-1", "nan", "2.5"]),
    ("nvme.queue_depth", &["0", "1", "2", "65536", "65537"]),
    ("nvme.io_queues", &["0", "1", "65536"]),
    ("nvme.irq_coalesce_threshold", &["0", "2", "300"]),
    ("nvme.irq_coalesce_time", &["\"0us\"", "\"100us\"", "\"150us\"", "5"]),
    ("ctrl.mode", &["\"firmware\"", "\"hardware\"", "\"magic\""]),
    ("ctrl.max_inflight", &["0", "1", "70000"]),
    ("ctrl.firmware.cores", &["0", "1", "300"]),
    ("ctrl.firmware.clock", &["\"0Hz\"", "\"1MHz\"", "\"3GHz\""]),
    ("ctrl.hardware.issue_interval", &["0", "1", "3"]),
    ("media.capacity", &["0", "\"1MiB\"", "\"1GiB\"", "513"]),
    ("media.nvm.controllers", &["0", "1", "7"]),
    ("media.nvm.interleave", &["0", "3", "4"]),
    ("media.nvm.interconnect", &["\"ring\"", "\"crossbar\"", "\"mesh\""]),
    ("media.nvm.chunk", &["0", "100", "\"512B\"", "\"1MiB\""]),
    ("media.nvm.bus_bandwidth", &["\"0GB/s\"", "\"1GB/s\""]),
    ("workload.rw", &["\"randrw\"", "\"rw\"", "\"sideways\""]),
    ("workload.bs", &["\"4k\"", "\"1000\"", "0", "\"4k,128k\"", "\"1M\""]),
    ("workload.bssplit", &["\"4k/50:8k/50\"", "\"4k/40\"", "\"x/100\""]),
    ("workload.iodepth", &["0", "1", "64", "2000"]),
    ("workload.numjobs", &["0", "1", "4", "9"]),
    ("workload.size", &["0", "\"4k\"", "\"1GiB\"", "\"100TiB\""]),
    ("workload.offset", &["0", "\"3k\"", "\"1MiB\""]),
    ("workload.random_distribution", &["\"zipf:1.1\"", "\"zipf:0\"", "\"pareto:0.3\"", "\"pareto:2\""]),
    ("workload.rate_iops", &["0", "1000", "100000000"]),
    ("workload.rwmixread", &["0", "50", "101"]),
    ("workload.runtime", &["\"1ms\"", "\"0us\""]),
    ("workload.ramp_time", &["\"0us\"", "\"500us\"", "\"2ms\""]),
    ("stats.percentiles", &["[99.5]", "[0]", "[101]", "[\"x\"]"]),
];

#[test]
fn random_configs_never_panic() {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    let mut ran = 0;
    let mut rejected = 0;
    for _ in 0..400 {
        let mut settings = vec![("workload.number_ios".to_string(), "300".to_string()), ("workload.runtime".to_string(), "\"2ms\"".to_string())];
        for _ in 0..rng.random_range(1..6) {
            let (k, vals) = KEYS[rng.random_range(0..KEYS.len())];
            settings.push((k.to_string(), vals[rng.random_range(0..vals.len())].to_string()));
        }
        match build(None, None, &settings).and_then(Simulation::new) {
            Ok(mut sim) => {
                sim.run().expect("a valid config runs");
                ran += 1;
            }
            Err(Error::Config(issues)) => {
                assert!(!issues.is_empty());
                for i in &issues {
                    assert!(!i.path.is_empty() && !i.rule.is_empty(), "{i:?}");
                }
                rejected += 1;
            }
            Err(e) => panic!("unexpected error kind: {e}"),
        }
    }
    assert!(ran > 20 && rejected > 20, "ran {ran}, rejected {rejected}");
}

#[test]
fn memory_is_estimated_and_refused_before_it_is_allocated() {
    use ssdlab_core::Simulation;
    // Issue 16: this geometry passed validation and then aborted allocating 32 GiB.
    let huge = crate::config_from(Some("tlc"), &[("media.nand.blocks_per_plane", "1048576"), ("media.nand.channels", "64"), ("media.nand.ways", "16")]);
    let need = huge.memory_estimate(false).total();
    assert!(need > 64 << 30, "{need}");
    let err = Simulation::with_memory_limit(huge, 12 << 30, false).err().expect("refused");
    let msg = err.to_string();
    assert!(msg.contains("memory") && msg.contains("exceeds the limit of 12GiB"), "{msg}");
    // An aged 16 TiB drive (a replica aged, then random writes enough to touch the whole map:
    // 16 B per unit). With few writes it needs the replica and per-block state only.
    // (Eight jobs of the most I/Os a job may ask for, 10^9.)
    let aged = |ios: &str| crate::config_from(Some("tlc-aged"), &[("media.nand.blocks_per_plane", "65536"), ("workload.number_ios", ios), ("workload.numjobs", "8")]);
    let full = aged("1000000000").memory_estimate(false);
    assert!(full.total() > 32 << 30, "{full:?}");
    assert!(Simulation::with_memory_limit(aged("1000000000"), 12 << 30, false).is_err());
    let few = aged("1000").memory_estimate(false).total();
    assert!(few > 1 << 30 && few < 12 << 30, "{few}");
    // What the estimate counts covers what a small aged run holds.
    let small = crate::config_from(Some("tlc-aged"), &[("media.nand.blocks_per_plane", "64"), ("workload.number_ios", "20000")]);
    let est = small.memory_estimate(false);
    let s = Simulation::with_memory_limit(small, 1 << 40, false).and_then(|mut s| s.run()).expect("run");
    let heap = s.flash.as_ref().map_or(0, |f| f.mapping_heap_bytes);
    assert!(heap > 0 && heap <= est.total(), "mapping heap {heap} B within the estimate {:?}", est.parts);
}

#[test]
fn a_cached_map_is_in_the_memory_estimate() {
    use ssdlab_core::Simulation;
    // MQSim's 512 GiB drive: 2 MiB of 9-byte entries is 233,016 of them (a few MiB); 1 GiB
    // asks for more entries than the drive has units, and is held to one an unit (about 2 GB
    // when warm, which the estimate once left out).
    let part = |cache: &str| {
        let c = crate::config_from(Some("mqsim"), &[("ftl.map_cache", cache), ("ftl.map_cache_unit", "entry")]);
        c.memory_estimate(false).parts.iter().find(|p| p.0 == "map cache").map(|p| p.1)
    };
    assert_eq!(part("0B"), None, "no cache, no part");
    let small = part("2MiB").expect("counted");
    assert!(small > 233_016 * 16 && small < 16 << 20, "{small}");
    let big = part("1GiB").expect("counted");
    assert_eq!(big, part("64GiB").expect("counted"), "capped by the units");
    assert!(big > 1 << 30, "{big}");
    let c = crate::config_from(Some("mqsim"), &[("ftl.map_cache", "1GiB"), ("ftl.map_cache_unit", "entry")]);
    let err = Simulation::with_memory_limit(c, 1 << 30, false).err().expect("refused");
    assert!(err.to_string().contains("map cache"), "{err}");
}

#[test]
fn extends_reads_only_regular_files_of_config_size() {
    // A device file would be read without end (found with the fuzzer's notes, issue 16).
    let dir = crate::scratch_dir("extends-device");
    let p = dir.join("zero.toml");
    std::fs::write(&p, "extends = \"/dev/zero\"\n").expect("write");
    let err = ssdlab_core::config::build(Some(p.to_str().expect("utf-8 path")), None, &[]).expect_err("refused");
    assert!(err.to_string().contains("/dev/zero") && err.to_string().contains("not a regular file"), "{err}");
    let big = dir.join("big.toml");
    std::fs::write(&big, vec![b'#'; (16 << 20) + 1]).expect("write");
    let err = ssdlab_core::config::build(Some(big.to_str().expect("utf-8 path")), None, &[]).expect_err("refused");
    assert!(err.to_string().contains("more than a config may be"), "{err}");
}

#[test]
fn a_workload_of_too_many_jobs_is_refused_without_listing_them() {
    // 5000 sections x numjobs 1000: five million jobs, each listed while checking.
    let mut t = toml::Table::new();
    let jobs: Vec<toml::Value> = (0..5000).map(|_| toml::Value::Table(toml::Table::new())).collect();
    let mut w = toml::Table::new();
    w.insert("jobs".into(), toml::Value::Array(jobs));
    w.insert("numjobs".into(), toml::Value::Integer(1000));
    t.insert("workload".into(), toml::Value::Table(w));
    let err = ssdlab_core::config::build(None, Some(t), &[]).expect_err("refused");
    assert!(err.to_string().contains("gives 5000000 jobs; at most 4096"), "{err}");
}
