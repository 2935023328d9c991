//! Trims from workloads: Dataset Management deallocates reach the FTL, cost the path what a
//! 16 B range list and the firmware's map updates cost, and lower GC's work.

use ssdlab_core::config::build;
use ssdlab_core::stats::Component;
use ssdlab_core::{Config, Simulation, Summary};

/// A small aged TLC drive (64 blocks a plane, so ageing and GC are quick) with `jobs` as its
/// `[[workload.jobs]]` (TOML), `{half}` standing for half the exported bytes and `{mibs}` for
/// the MiB in it.
fn aged(jobs: &str) -> (Config, Summary) {
    aged_on("", jobs)
}

/// [`aged`] with more `[media.nand]` keys (TOML lines).
fn aged_on(nand: &str, jobs: &str) -> (Config, Summary) {
    let mut table: toml::Table = toml::from_str(&format!("[media.nand]\nblocks_per_plane = 64\n{nand}")).expect("toml");
    let base = build(Some("tlc-aged"), Some(table.clone()), &[]).expect("base");
    let half = base.host_capacity() / 2;
    let jobs = jobs.replace("{half}", &format!("\"{half}B\"")).replace("{mibs}", &(half >> 20).to_string());
    let rest: toml::Table = toml::from_str(&format!("[workload]\nnumjobs = 1\niodepth = 32\n{jobs}")).expect("toml");
    table.extend(rest);
    let config = build(Some("tlc-aged"), Some(table), &[]).expect("config");
    let summary = Simulation::new(config.clone()).and_then(|mut s| s.run()).expect("run");
    (config, summary)
}

const WRITES: &str = "[[workload.jobs]]\nname = \"w\"\nrw = \"randwrite\"\nsize = {half}\nnumber_ios = 120000\n";

#[test]
fn trimming_half_of_an_aged_drive_lowers_the_waf_of_writes_to_the_other_half() {
    // The same random writes into the lower half of a full, aged drive, with and without a
    // trim of the upper half first. Without it, GC's victims hold the upper half's data too and
    // move it again and again; trimmed, that data is invalid and victims are half empty.
    let (_, plain) = aged(WRITES);
    let trims = format!("[[workload.jobs]]\nname = \"t\"\nrw = \"trim\"\nbs = \"1MiB\"\noffset = {{half}}\nsize = {{half}}\nnumber_ios = {{mibs}}\n{WRITES}wait_for = \"t\"\n");
    let (config, trimmed) = aged(&trims);
    let (fp, ft) = (plain.flash.as_ref().expect("flash"), trimmed.flash.as_ref().expect("flash"));
    let mibs = (config.host_capacity() / 2) >> 20;
    assert_eq!((trimmed.trim.ios, trimmed.trim.bytes), (mibs, mibs << 20), "the upper half in 1 MiB trims");
    assert_eq!(ft.ftl.trims, (mibs << 20) / config.ftl.mapping_unit.0, "every unit trimmed was mapped (aged) and is unmapped");
    assert_eq!((plain.write.ios, trimmed.write.ios), (120_000, 120_000));
    assert!(fp.waf > 2.0, "a full aged drive amplifies: {}", fp.waf);
    assert!(ft.waf < 0.75 * fp.waf, "trims lower WAF: {} with, {} without", ft.waf, fp.waf);
}

#[test]
fn a_trim_moves_its_range_list_and_touches_no_flash() {
    let settings: Vec<(String, String)> = [("workload.numjobs", "1"), ("workload.iodepth", "1"), ("workload.rw", "randtrim"), ("workload.bs", "64k"), ("workload.number_ios", "2000")]
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    let config = build(Some("tlc"), None, &settings).expect("config");
    let s = Simulation::new(config.clone()).and_then(|mut s| s.run()).expect("run");
    assert_eq!((s.trim.ios, s.read.ios, s.write.ios), (2000, 0, 0));
    let f = s.flash.as_ref().expect("flash");
    assert_eq!((f.nand.host_reads, f.nand.programs), (0, 0), "no data reaches the flash");
    assert!(s.trim.breakdown_us.0[Component::Media as usize].abs() < f64::EPSILON, "no media time");
    // Sequentially filled: each 64 KiB trim unmaps 16 units, once each.
    assert!(f.ftl.trims > 0 && f.ftl.trims <= 2000 * 16);
    // The range list is one 16 B descriptor: a read request down, 16 B of completion up.
    let qd1 = s.trim.latency_us.mean;
    let total: f64 = s.trim.breakdown_us.0.iter().sum();
    assert!((qd1 - total).abs() < 1e-6, "QD1 latency is the sum of its breakdown: {qd1} vs {total}");
}

#[test]
fn integrity_mode_checks_every_read_of_a_run_with_writes_trims_and_gc() {
    // Random trims then writes of the same blocks beside random reads, on a small aged drive:
    // GC runs throughout, and every unit read is checked against the shadow map. A quarter of
    // the channels and ways: the shadow map holds every unit.
    let jobs = "[ftl]\nintegrity = true\n[[workload.jobs]]\nname = \"tw\"\nrw = \"randtrimwrite\"\nnumber_ios = 60000\n[[workload.jobs]]\nname = \"r\"\nrw = \"randread\"\nnumber_ios = 30000\n";
    let small = "channels = 4\nways = 2\n";
    let (_, s) = aged_on(small, jobs);
    let f = s.flash.as_ref().expect("flash");
    let i = f.integrity.as_ref().expect("integrity mode reports");
    assert_eq!((s.trim.ios, s.write.ios, s.read.ios), (30_000, 30_000, 30_000));
    assert!(f.ftl.gc_victims > 0 && f.ftl.trims > 0, "GC and trims ran");
    assert!(i.reads.checked >= 30_000, "every unit read is checked: {}", i.reads.checked);
    assert_eq!((i.reads.lost, i.reads.stale, i.reads.duplicated, i.violation.as_deref()), (0, 0, 0, None));
    assert!(i.mapped > 0);
    // Off by default, and it changes no timing.
    let plain = aged_on(small, &jobs.replace("integrity = true", "integrity = false")).1;
    assert!(plain.flash.as_ref().is_some_and(|f| f.integrity.is_none()));
    assert_eq!(plain.read.latency_us, s.read.latency_us);
}
