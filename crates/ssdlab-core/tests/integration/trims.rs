//! Trims from workloads: Dataset Management deallocates reach the FTL, cost the path what a
//! 16 B range list and the firmware's map updates cost, and lower GC's work.

use ssdlab_core::config::build;
use ssdlab_core::stats::Component;
use ssdlab_core::{Config, Simulation, Summary};

/// A small aged TLC drive (64 blocks a plane, so ageing and GC are quick) with `jobs` as its
/// `[[workload.jobs]]` (TOML), `{half}` standing for half the exported bytes and `{mibs}` for
/// the MiB in it.
fn aged(jobs: &str) -> (Config, Summary) {
    let base = build(Some("tlc-aged"), None, &[("media.nand.blocks_per_plane".into(), "64".into())]).expect("base");
    let half = base.host_capacity() / 2;
    let jobs = jobs.replace("{half}", &format!("\"{half}B\"")).replace("{mibs}", &(half >> 20).to_string());
    let text = format!("[media.nand]\nblocks_per_plane = 64\n[workload]\nnumjobs = 1\niodepth = 32\n{jobs}");
    let table: toml::Table = toml::from_str(&text).expect("toml");
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
    let trims = format!("[[workload.jobs]]\nname = \"t\"\nrw = \"trim\"\nbs = \"1MiB\"\noffset = {{half}}\nsize = {{half}}\nnumber_ios = {{mibs}}\n{}wait_for = \"t\"\n", WRITES);
    let (config, trimmed) = aged(&trims);
    let (fp, ft) = (plain.flash.as_ref().expect("flash"), trimmed.flash.as_ref().expect("flash"));
    let mibs = config.host_capacity() / 2 >> 20;
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
    assert_eq!(s.trim.breakdown_us.0[Component::Media as usize], 0.0);
    // Sequentially filled: each 64 KiB trim unmaps 16 units, once each.
    assert!(f.ftl.trims > 0 && f.ftl.trims <= 2000 * 16);
    // The range list is one 16 B descriptor: a read request down, 16 B of completion up.
    let qd1 = s.trim.latency_us.mean;
    let total: f64 = s.trim.breakdown_us.0.iter().sum();
    assert!((qd1 - total).abs() < 1e-6, "QD1 latency is the sum of its breakdown: {qd1} vs {total}");
}
