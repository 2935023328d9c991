//! Every config rule: each bad value is reported with its dotted path, the value and the rule,
//! and one load reports every problem at once.

use ssdlab_core::config::{build, presets};
use ssdlab_core::{Config, ConfigIssue, Error};

fn issues(settings: &[(&str, &str)]) -> Vec<ConfigIssue> {
    let s: Vec<(String, String)> = settings.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
    match build(None, None, &s) {
        Err(Error::Config(i)) => i,
        Ok(_) => panic!("{settings:?} was accepted"),
        Err(e) => panic!("{settings:?}: not a config error: {e}"),
    }
}

fn rejects(key: &str, value: &str, rule_part: &str) {
    let found = issues(&[(key, value)]);
    assert!(found.iter().any(|i| i.path == key && i.rule.contains(rule_part) && !i.value.is_empty()), "{key} = {value}: expected a rule containing {rule_part:?}, got {found:?}");
}

#[test]
fn value_rules_of_every_block() {
    let cases: &[(&str, &str, &str)] = &[
        ("pcie.gen", "0", "between 1 and 6"),
        ("pcie.gen", "7", "between 1 and 6"),
        ("pcie.lanes", "0", "one of 1, 2, 4, 8, 12, 16, 32"),
        ("pcie.lanes", "3", "one of 1, 2, 4, 8, 12, 16, 32"),
        ("pcie.lane_rate", "\"0GT/s\"", "greater than zero"),
        ("pcie.mps", "64", "power of two from 128B to 4KiB"),
        ("pcie.mps", "300", "power of two from 128B to 4KiB"),
        ("pcie.mps", "8192", "power of two from 128B to 4KiB"),
        ("pcie.mrrs", "\"8KiB\"", "power of two from 128B to 4KiB"),
        ("pcie.rcb", "256", "64B or 128B"),
        ("pcie.dllps_per_tlp", "-1", "between 0 and 16"),
        ("nvme.io_queues", "0", "between 1 and 65535"),
        ("nvme.queue_depth", "0", "between 2 and 65536"),
        ("nvme.queue_depth", "65537", "between 2 and 65536"),
        ("nvme.page_size", "\"2KiB\"", "power of two from 4KiB"),
        ("nvme.irq_coalesce_threshold", "257", "between 0 and 256"),
        ("nvme.irq_coalesce_time", "\"150us\"", "multiple of 100us"),
        ("ctrl.max_inflight", "0", "between 1 and 65536"),
        ("ctrl.firmware.cores", "0", "between 1 and 256"),
        ("ctrl.firmware.clock", "\"0Hz\"", "greater than zero"),
        ("ctrl.hardware.clock", "\"0MHz\"", "greater than zero"),
        ("ctrl.hardware.issue_interval", "0", "at least 1 cycle"),
        ("media.capacity", "1000", "multiple of 512B"),
        ("media.nvm.controllers", "0", "between 1 and"),
        ("media.nvm.banks", "0", "between 1 and 1024"),
        ("media.nvm.interleave", "3", "divide media.nvm.controllers"),
        ("media.nvm.chunk", "1000", "multiple of 512B"),
        ("media.nvm.bus_bandwidth", "\"0GB/s\"", "greater than zero"),
        ("workload.rwmixread", "101", "between 0 and 100"),
        ("workload.bs", "\"1000\"", "multiples of 512B"),
        ("workload.bssplit", "\"4k/50:1000/50\"", "multiples of 512B"),
        ("workload.bssplit", "\"4k/50:8k/40\"", "add up to 100"),
        ("workload.iodepth", "0", "at least 1"),
        ("workload.numjobs", "0", "between 1 and 1024"),
        ("workload.numjobs", "\"256MiB\"", "between 1 and 1024"),
        ("workload.offset", "100", "multiple of 512B"),
        ("workload.size", "0", "greater than zero"),
        ("workload.number_ios", "0", "between 1 and 1000000000"),
        ("workload.number_ios", "1000000001", "between 1 and 1000000000"),
        ("workload.runtime", "\"0s\"", "greater than zero"),
        ("workload.rate_iops", "2000000000", "at most 1000000000"),
        ("workload.random_distribution", "\"zipf:0\"", "θ > 0"),
        ("workload.random_distribution", "\"pareto:1.5\"", "0 < h < 1"),
        ("workload.random_distribution", "\"gaussian\"", "random, zipf:θ, pareto:h or zoned"),
        ("workload.rw", "\"sideways\"", "one of: read, write"),
        ("stats.percentiles", "[101]", "(0, 100]"),
        ("stats.histogram_digits", "6", "between 1 and 5"),
    ];
    for (k, v, rule) in cases {
        if k.starts_with("stats.percentiles") {
            let found = issues(&[(k, v)]);
            assert!(found.iter().any(|i| i.path == "stats.percentiles[0]" && i.rule.contains(rule)), "{found:?}");
            continue;
        }
        rejects(k, v, rule);
    }
    let neg = issues(&[("stats.percentiles", "[50, -3]")]);
    assert!(neg.iter().any(|i| i.path == "stats.percentiles[1]" && i.value == "-3"), "{neg:?}");
}

#[test]
fn cross_field_rules() {
    // More jobs than queue pairs share them, within a queue's depth and one tenant's queues.
    let deep = issues(&[("workload.numjobs", "4"), ("nvme.io_queues", "2"), ("workload.iodepth", "600")]);
    assert!(deep.iter().any(|i| i.path == "workload.numjobs" && i.rule.contains("the 2 jobs on queue 0 have iodepth 1200 in all; must be <= nvme.queue_depth - 1 = 1023")), "{deep:?}");
    // FDP placement identifiers name the drive's handles.
    let pid = issues(&[("workload.placement_ids", "[1]")]);
    assert!(pid.iter().any(|i| i.path == "workload.placement_ids" && i.rule.contains("ftl.fdp_handles = 0")), "{pid:?}");
    // RWF_ATOMIC writes follow Linux's rules against the drive's atomic write unit.
    let atomic = issues(&[("workload.atomic", "true"), ("workload.rw", "\"randwrite\""), ("workload.bs", "\"8k\"")]);
    assert!(atomic.iter().any(|i| i.path == "workload.atomic" && i.rule.contains("must be a power of two no larger than nvme.atomic_write_unit = 4KiB")), "{atomic:?}");
    let buffered = issues(&[("workload.atomic", "true"), ("workload.rw", "\"randwrite\""), ("workload.direct", "false")]);
    assert!(buffered.iter().any(|i| i.path == "workload.atomic" && i.rule.contains("need direct I/O")), "{buffered:?}");
    let fits = [("workload.atomic", "true"), ("workload.rw", "\"randwrite\""), ("nvme.atomic_write_unit", "\"16KiB\""), ("workload.bs", "\"16k\"")];
    build(None, None, &fits.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect::<Vec<_>>()).expect("16 KiB atomic writes fit a 16 KiB unit");
    let ats = issues(&[("workload.numjobs", "4"), ("nvme.io_queues", "2"), ("ats.enabled", "true")]);
    assert!(ats.iter().any(|i| i.path == "workload.numjobs" && i.rule.contains("with ats.enabled each job needs a queue pair of its own")), "{ats:?}");
    rejects("workload.iodepth", "1024", "<= nvme.queue_depth - 1 = 1023");
    let over = issues(&[("workload.offset", "\"200GiB\""), ("workload.size", "\"100GiB\"")]);
    assert!(over.iter().any(|i| i.path == "workload.size" && i.rule.contains("must be <= the exported capacity = 256GiB")), "{over:?}");
    let small = issues(&[("workload.size", "\"4k\""), ("workload.bs", "\"8k\"")]);
    assert!(small.iter().any(|i| i.path == "workload.size" && i.rule.contains("at least one block")), "{small:?}");
    let mut both = issues(&[("workload.runtime", "\"1ms\""), ("workload.ramp_time", "\"5ms\"")]);
    both.retain(|i| i.path == "workload.ramp_time");
    assert_eq!(both.len(), 1);
}

#[test]
fn type_errors_unknown_keys_and_units() {
    rejects("pcie.lanes", "\"four\"", "whole number");
    rejects("pcie.lanes", "-4", "between 0 and");
    rejects("pcie.ecrc", "1", "true or false");
    rejects("host.submit_cost", "5", "a time needs a unit");
    rejects("host.submit_cost", "\"5 parsecs\"", "unknown time unit");
    rejects("media.nvm.bus_bandwidth", "\"3GB\"", "data rate needs a unit");
    rejects("ctrl.firmware.clock", "\"1GB/s\"", "unknown frequency unit");
    rejects("pcie.lanse", "4", "did you mean `lanes`");
    rejects("pcie.bogus", "4", "allowed: gen, lanes");
    rejects("ctrl.mode", "\"magic\"", "one of: firmware, hardware");
    let table = issues(&[("pcie", "4")]);
    assert!(table.iter().any(|i| i.path == "pcie" && i.rule.contains("must be a table")), "{table:?}");
}

#[test]
fn every_problem_is_reported_at_once() {
    // Unknown keys, wrong types and bad values, all in one load.
    let found = issues(&[
        ("pcie.lanes", "0"),
        ("nvme.queue_depth", "0"),
        ("workload.bs", "\"1000\""),
        ("stats.percentiles", "[150]"),
        ("pcie.mps", "100"),
        ("pcie.nonsense", "1"),
        ("ctrl.firmware.cores", "\"many\""),
    ]);
    let paths: Vec<&str> = found.iter().map(|i| i.path.as_str()).collect();
    for p in ["pcie.lanes", "nvme.queue_depth", "workload.bs", "stats.percentiles[0]", "pcie.mps", "pcie.nonsense", "ctrl.firmware.cores"] {
        assert!(paths.contains(&p), "{p} missing from {paths:?}");
    }
    assert_eq!(found.len(), 7, "{found:?}");
    let text = Error::Config(found).to_string();
    assert!(text.contains("pcie.lanes = 0: must be one of"), "{text}");
}

#[test]
fn syntax_errors_point_at_line_and_column() {
    let err = Config::from_toml_str("[pcie]\nlanes = 4\ngen = = 3\n", "my.toml").unwrap_err();
    let Error::Config(i) = err else { panic!("not a config error") };
    assert!(i[0].path.starts_with("my.toml:3:"), "{i:?}");
    assert!(i[0].rule.contains("TOML syntax error"));
}

#[test]
fn presets_load_extend_and_list() {
    for name in presets::names() {
        let c = Config::load(name).unwrap_or_else(|e| panic!("preset {name}: {e}"));
        assert!(!c.description.is_empty(), "preset {name} has no description");
    }
    let hw = Config::load("default-hw").unwrap();
    let base = Config::load("default").unwrap();
    assert_eq!(hw.ctrl.mode.as_str(), "hardware");
    assert_eq!(hw.pcie, base.pcie, "extends keeps the base's other tables");

    let c = Config::from_toml_str("extends = \"default\"\n[pcie]\nlanes = 8\n", "user.toml").unwrap();
    assert_eq!(c.pcie.lanes, 8);
    assert_eq!(c.pcie.gen, base.pcie.gen);

    let err = Config::from_toml_str("extends = \"no-such-preset\"\n", "user.toml").unwrap_err();
    assert!(err.to_string().contains("no preset or file by that name"), "{err}");

    // A file extending a file, relative to its own directory.
    let dir = crate::scratch_dir("extends");
    std::fs::write(dir.join("base.toml"), "extends = \"default\"\n[pcie]\ngen = 3\n").unwrap();
    std::fs::write(dir.join("top.toml"), "extends = \"base.toml\"\n[pcie]\nlanes = 2\n").unwrap();
    let c = Config::load(dir.join("top.toml").to_str().unwrap()).unwrap();
    assert_eq!((c.pcie.gen, c.pcie.lanes), (3, 2));
    std::fs::write(dir.join("loop.toml"), "extends = \"loop.toml\"\n").unwrap();
    let err = Config::load(dir.join("loop.toml").to_str().unwrap()).unwrap_err();
    assert!(err.to_string().contains("levels of extends"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn resolved_config_round_trips_through_toml() {
    for name in presets::names() {
        let c = Config::load(name).unwrap();
        let again = Config::from_toml_str(&c.to_toml(), "round-trip").unwrap_or_else(|e| panic!("{name}: {e}\n{}", c.to_toml()));
        assert_eq!(c, again, "{name}");
        assert_eq!(c.hash(), again.hash());
    }
}

#[test]
fn the_json_holds_what_the_toml_holds() {
    // `to_json` is the TOML's tree for readers that parse JSON: every table, key and value, of
    // the same type (an integer stays one, a float stays one).
    let mut configs: Vec<Config> = presets::names().iter().map(|n| Config::load(n).unwrap()).collect();
    configs.push(build(Some("tlc"), None, &[("workload.rw".into(), "randrw".into()), ("ftl.op_ratio".into(), "0.125".into())]).unwrap());
    for c in &configs {
        let from_toml: toml::Value = toml::from_str(&c.to_toml()).unwrap();
        let from_json: serde_json::Value = serde_json::from_str(&c.to_json().unwrap()).unwrap();
        // (serde_json's numbers compare their kind: 1 and 1.0 differ.)
        assert_eq!(serde_json::to_value(&from_toml).unwrap(), from_json, "{}", c.description);
    }
}

/// The issues of the default config on NAND with `extra` settings.
fn nand(extra: &[(&str, &str)]) -> Vec<ConfigIssue> {
    let mut s = vec![("media.kind", "\"nand\""), ("workload.numjobs", "1")];
    s.extend_from_slice(extra);
    issues(&s)
}

#[test]
fn nand_and_ftl_rules() {
    let has = |found: &[ConfigIssue], path: &str, part: &str| found.iter().any(|i| i.path == path && i.rule.contains(part));
    let f = nand(&[("ftl.op_ratio", "0")]);
    assert!(has(&f, "ftl.op_ratio", "greater than 0 and less than 1"), "{f:?}");
    let f = nand(&[("ftl.op_ratio", "1.0")]);
    assert!(has(&f, "ftl.op_ratio", "greater than 0 and less than 1"), "{f:?}");
    let f = nand(&[("ftl.gc_trigger", "0.05"), ("ftl.gc_reclaim", "0.02")]);
    assert!(has(&f, "ftl.gc_reclaim", "must be >= ftl.gc_trigger = 0.05"), "{f:?}");
    let f = nand(&[("ftl.mapping_unit", "\"12KiB\"")]);
    assert!(has(&f, "ftl.mapping_unit", "must divide media.nand.page_size = 16KiB"), "{f:?}");
    let f = nand(&[("media.nand.channels", "0"), ("media.nand.page_size", "1000")]);
    assert!(has(&f, "media.nand.channels", "between 1 and") && has(&f, "media.nand.page_size", "multiple of 512B"), "{f:?}");
    let f = nand(&[("media.nand.suspend", "true")]);
    assert!(has(&f, "media.nand.suspend", "needs media.nand.suspend_latency"), "{f:?}");
    let f = nand(&[("media.nand.program_latency", "[\"200us\"]")]);
    assert!(has(&f, "media.nand.program_latency", "as many page types"), "{f:?}");
    let f = nand(&[("ftl.aging_replica_blocks", "10"), ("ftl.aging", "\"sometimes\"")]);
    assert!(has(&f, "ftl.aging_replica_blocks", "at least 1024") && has(&f, "ftl.aging", "one of: auto, simulate, replica"), "{f:?}");
    let f = nand(&[("ftl.precondition_fill", "0"), ("ftl.map_cache_entry", "\"0B\""), ("ftl.map_cache_unit", "\"line\"")]);
    assert!(has(&f, "ftl.precondition_fill", "above 0 and at most 1") && has(&f, "ftl.map_cache_entry", "between 1B and 64B") && has(&f, "ftl.map_cache_unit", "one of: page, entry"), "{f:?}");
    let f = nand(&[("ftl.precondition_fill", "0.5"), ("ftl.precondition", "\"sequential\""), ("ftl.zone_size", "\"64MiB\"")]);
    assert!(has(&f, "ftl.precondition_fill", "written zone by zone"), "{f:?}");
    let f = nand(&[("ftl.precondition_fill", "0.5"), ("ftl.precondition", "\"aged\"")]);
    assert!(has(&f, "ftl.precondition_fill", "needs ftl.precondition = \"sequential\""), "{f:?}");
    let f = nand(&[("media.nand.blocks_per_plane", "16"), ("workload.size", "\"1TiB\"")]);
    assert!(has(&f, "workload.size", "exported capacity"), "{f:?}");
}

#[test]
fn pinned_rings_that_do_not_fit_the_atc_are_reported_with_every_other_problem() {
    let settings: Vec<(String, String)> =
        [("ats.enabled", "true"), ("ats.lines", "1"), ("ats.stu", "\"4KiB\""), ("workload.numjobs", "2"), ("pcie.lanes", "3")].iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
    let Err(ssdlab_core::Error::Config(issues)) = ssdlab_core::config::build(None, None, &settings) else { panic!("expected a config error") };
    let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
    assert!(paths.contains(&"ats.lines") && paths.contains(&"pcie.lanes"), "{paths:?}");
    let ats = issues.iter().find(|i| i.path == "ats.lines").unwrap();
    assert!(ats.rule.contains("pinned SQ/CQ translations need 40 lines"), "{}", ats.rule);
}

#[test]
fn too_little_spare_space_is_reported_with_every_other_problem() {
    let spare = |found: &[ConfigIssue]| found.iter().filter(|i| i.rule.contains("spare blocks; GC needs at least")).cloned().collect::<Vec<_>>();
    // 16 blocks per plane leave fewer spare blocks at 7 % than GC's reserve and open blocks take.
    let f = nand(&[("media.nand.blocks_per_plane", "16"), ("pcie.lanes", "3")]);
    let s = spare(&f);
    assert_eq!(s.len(), 1, "{f:?}");
    assert_eq!((s[0].path.as_str(), s[0].value.as_str()), ("ftl.op_ratio", "0.07"), "{f:?}");
    assert!(f.iter().any(|i| i.path == "pcie.lanes"), "both problems in one error: {f:?}");

    // The FTL refuses the same config with the same issue (for callers that skip validation).
    let mut c = build(None, None, &[("media.kind".into(), "\"nand\"".into()), ("workload.numjobs".into(), "1".into())]).unwrap();
    c.media.nand.blocks_per_plane = 16;
    match ssdlab_core::ftl::Ftl::new(&c.media.nand, &c.ftl, 1) {
        Err(Error::Config(i)) => assert_eq!(i, s),
        Err(e) => panic!("not a config error: {e}"),
        Ok(_) => panic!("the FTL accepted too little spare space"),
    }

    // Skipped when a value it reads is wrong already (and never computed from one).
    for bad in [
        ("ftl.op_ratio", "0"),
        ("ftl.gc_reclaim", "0.6"),
        ("ftl.gc_trigger", "0"),
        ("ftl.mapping_unit", "\"12KiB\""),
        ("media.nand.planes", "0"),
        ("media.nand.pages_per_block", "0"),
        ("media.nand.page_size", "1000"),
    ] {
        let f = nand(&[("media.nand.blocks_per_plane", "16"), bad]);
        assert!(spare(&f).is_empty() && f.iter().any(|i| i.path == bad.0), "{bad:?}: {f:?}");
    }
}

#[test]
fn rules_between_keys_are_reported_with_type_errors() {
    // A key of the wrong type (or unknown) does not hide a broken rule between two other keys.
    let found = issues(&[("pcie.lanes", "\"wide\""), ("host.no_such_key", "1"), ("workload.iodepth", "2000")]);
    let paths: Vec<&str> = found.iter().map(|i| i.path.as_str()).collect();
    assert!(paths.contains(&"pcie.lanes") && paths.contains(&"host.no_such_key"), "{found:?}");
    assert!(found.iter().any(|i| i.path == "workload.iodepth" && i.rule.contains("nvme.queue_depth - 1 = 1023")), "{found:?}");
    // A rule whose other key failed is skipped rather than quote that key's stand-in default.
    let found = issues(&[("nvme.queue_depth", "\"deep\""), ("workload.iodepth", "2000")]);
    assert_eq!(found.iter().map(|i| i.path.as_str()).collect::<Vec<_>>(), ["nvme.queue_depth"], "{found:?}");
}
