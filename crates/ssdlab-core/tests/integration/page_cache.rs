//! Buffered I/O through the page cache, checked against what the cache's rules imply.
#![allow(clippy::float_cmp, clippy::cast_lossless)]

use ssdlab_core::stats::Component;
use ssdlab_core::{Simulation, Summary};

use crate::{config, config_from};

fn run_kept(base: Option<&str>, settings: &[(&str, &str)]) -> (Summary, Simulation) {
    let mut all = vec![("workload.numjobs", "1"), ("workload.direct", "false")];
    all.extend_from_slice(settings);
    let mut sim = Simulation::new(config_from(base, &all)).expect("config");
    sim.keep_io_log();
    let s = sim.run().expect("run");
    (s, sim)
}

/// Every I/O's components add up to its latency, exactly.
fn breakdowns_add_up(sim: &Simulation) {
    let log = sim.io_log().expect("log");
    for i in 0..log.latency_ps.len() {
        let sum: u64 = log.breakdown_ps.iter().map(|col| col[i]).sum();
        assert_eq!(sum, log.latency_ps[i], "I/O {i}");
    }
}

#[test]
fn a_reread_file_is_served_from_the_cache() {
    // 8 MiB read sequentially twice: the device sees each page once, and the second pass hits.
    // (Readahead stops at the end of the job's region, its file.)
    let (s, sim) = run_kept(None, &[("workload.rw", "read"), ("workload.size", "8MiB"), ("workload.number_ios", "2048"), ("workload.loops", "2"), ("workload.bs", "4KiB"), ("workload.iodepth", "1")]);
    let m = &s.metrics;
    assert_eq!(s.read.ios, 2 * 2048);
    assert_eq!(m["host.page_cache.device_read_bytes"], (8 << 20) as f64, "each page comes from the device once");
    assert!(m["host.page_cache.hit_pages"] >= 2048.0, "the second pass hits: {}", m["host.page_cache.hit_pages"]);
    // A hit costs the system call, the page look-up and the copy, nothing else.
    let c = config(&[]);
    let pc = &c.host.page_cache;
    let hit_us = (pc.syscall_cost.as_ps() + pc.page_cost.as_ps()) as f64 / 1e6 + 4096.0 / c.host.copy_bandwidth.0 * 1e6;
    assert!((s.read.latency_us.min - hit_us).abs() < 1e-3, "hit {} us vs {hit_us}", s.read.latency_us.min);
    breakdowns_add_up(&sim);
}

#[test]
fn sequential_buffered_reads_grow_the_readahead_window() {
    let (s, sim) = run_kept(Some("tlc"), &[("workload.rw", "read"), ("workload.bs", "4KiB"), ("workload.iodepth", "1"), ("workload.number_ios", "20000")]);
    let m = &s.metrics;
    assert_eq!(m["host.page_cache.largest_window"], (128 << 10) as f64, "the window grows to read_ahead");
    let mean_req = m["host.page_cache.device_read_bytes"] / m["host.page_cache.device_reads"];
    assert!(mean_req > 100e3, "device reads are large: {mean_req} B");
    assert!(m["host.page_cache.hit_ratio"] > 0.9, "most reads find their page read ahead: {}", m["host.page_cache.hit_ratio"]);
    breakdowns_add_up(&sim);
    // Random reads do not: each miss reads its own page.
    let (r, _) = run_kept(Some("tlc"), &[("workload.rw", "randread"), ("workload.bs", "4KiB"), ("workload.iodepth", "1"), ("workload.number_ios", "5000"), ("workload.offset", "1MiB")]);
    let m = &r.metrics;
    assert_eq!(m["host.page_cache.readahead_pages"], 0.0);
    assert_eq!(m["host.page_cache.device_read_bytes"], 4096.0 * (m["host.page_cache.read_pages"] - m["host.page_cache.hit_pages"]));
    // A buffered miss costs the device read, so it is slower than direct I/O by the cache's
    // own work; the device part shows in the device's components.
    let b = &r.read.breakdown_us.0;
    assert!(b[Component::Media as usize] > 10.0, "media time reaches the application's breakdown");
}

#[test]
fn buffered_writes_return_before_the_device_and_writeback_holds_the_limit() {
    // A 64 MiB cache (limit 20 % = 12.8 MiB) and 96 MiB written far faster than the drive takes it.
    let (s, sim) = run_kept(Some("tlc"), &[("host.page_cache.size", "64MiB"), ("workload.rw", "write"), ("workload.bs", "128KiB"), ("workload.iodepth", "1"), ("workload.number_ios", "768")]);
    let m = &s.metrics;
    let limit = m["host.page_cache.dirty_limit"];
    assert_eq!(limit, (64u64 << 20) as f64 * 0.2 - ((64u64 << 20) as f64 * 0.2) % 4096.0);
    assert!(m["host.page_cache.dirty_max"] <= limit + 4096.0, "dirty {} over the limit {limit}", m["host.page_cache.dirty_max"]);
    assert!(m["host.page_cache.device_write_bytes"] > 0.0 && m["host.page_cache.paused"] > 0.0, "writeback ran and writers were paced");
    // Every byte written is on the device or still dirty.
    let written = m["host.page_cache.dirtied_pages"] * 4096.0;
    let placed = m["host.page_cache.device_write_bytes"] + m["host.page_cache.dirty_at_end"];
    assert!(placed >= written - 1.0, "{placed} of {written}");
    // The fastest write costs the system call, the page and the copy: far below a device write.
    let c = config(&[]);
    let pc = &c.host.page_cache;
    let free_us = (pc.syscall_cost.as_ps() + 32 * pc.page_cost.as_ps()) as f64 / 1e6 + 131_072.0 / c.host.copy_bandwidth.0 * 1e6;
    assert!((s.write.latency_us.min - free_us).abs() < 1e-3, "{} vs {free_us}", s.write.latency_us.min);
    assert!(s.write.breakdown_us.0[Component::PageCache as usize] > 0.0, "paced writers wait on the page cache");
    breakdowns_add_up(&sim);
}

#[test]
fn fsync_puts_every_dirty_page_on_the_device() {
    for (key, value) in [("workload.end_fsync", "true"), ("workload.fsync", "32")] {
        let (s, _) = run_kept(Some("tlc"), &[("workload.rw", "write"), ("workload.bs", "4KiB"), ("workload.iodepth", "1"), ("workload.number_ios", "4096"), (key, value)]);
        let m = &s.metrics;
        assert_eq!(m["host.page_cache.dirty_at_end"], 0.0, "{key}");
        assert_eq!(m["host.page_cache.device_write_bytes"], 4096.0 * 4096.0, "{key}: sequential pages written once");
        let calls = if key == "workload.fsync" { 4096.0 / 32.0 } else { 1.0 };
        assert_eq!(m["host.page_cache.fsyncs"], calls, "{key}");
    }
    // Without fsync the data stays in memory.
    let (s, _) = run_kept(Some("tlc"), &[("workload.rw", "write"), ("workload.bs", "4KiB"), ("workload.iodepth", "1"), ("workload.number_ios", "4096")]);
    assert_eq!(s.metrics["host.page_cache.dirty_at_end"], 4096.0 * 4096.0);
}

#[test]
fn buffered_runs_are_deterministic() {
    let settings = [("workload.rw", "randrw"), ("workload.numjobs", "2"), ("workload.bs", "16KiB"), ("workload.number_ios", "3000"), ("host.page_cache.size", "16MiB"), ("workload.size", "64MiB")];
    let (a, _) = run_kept(Some("tlc"), &settings);
    let (b, _) = run_kept(Some("tlc"), &settings);
    assert_eq!(serde_json::to_string(&a.read).unwrap(), serde_json::to_string(&b.read).unwrap());
    assert_eq!(a.metrics, b.metrics);
}
