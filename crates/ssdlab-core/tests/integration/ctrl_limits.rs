//! Controller ceilings that come out of its mechanisms: firmware cores with a per-command cost,
//! and an internal data path of so many bytes per cycle.

use ssdlab_core::{Simulation, Summary};

use super::{config, config_from};

fn run(base: Option<&str>, settings: &[(&str, &str)]) -> Summary {
    let c = match base {
        None => config(settings),
        Some(b) => config_from(Some(b), settings),
    };
    Simulation::new(c).unwrap().run().unwrap()
}

#[test]
fn iops_stop_rising_with_queue_depth_at_the_firmware_cores_rate() {
    // Two cores at 1 GHz, each 4 KiB read costing 600 + 400 + 300 + 500 + 500 = 2300 cycles of
    // firmware: at most 2 / 2.3 us = 869.6 k IOPS, below the link's ~1.76 M. The host is SPDK
    // (about 0.1 us of CPU per I/O), so only the controller can hold the rate.
    let ceiling = 2.0 / 2.3e-6;
    let mut last = 0.0;
    for qd in [1, 2, 4, 8, 16, 32, 64] {
        let depth = qd.to_string();
        let s = run(None, &[("host.engine", "\"spdk\""), ("ctrl.firmware.cores", "2"), ("workload.iodepth", &depth), ("workload.number_ios", "40000")]);
        assert!(s.iops <= ceiling * 1.0001, "QD{qd}: {} IOPS above the cores' ceiling", s.iops);
        if qd <= 4 {
            assert!(s.iops > last * 1.2, "QD{qd}: still rising below the ceiling ({} after {last})", s.iops);
        }
        if qd >= 16 {
            assert!((s.iops / ceiling - 1.0).abs() < 0.01, "QD{qd}: {} IOPS, the cores allow {ceiling:.0}", s.iops);
            assert!(s.utilisation.ctrl > 0.99, "QD{qd}: the cores bind ({})", s.utilisation.ctrl);
        }
        last = s.iops;
    }
}

/// OpenExpress's hardware engines moving 128 KiB reads (4 jobs x QD8, SPDK host) with a data
/// path of `bytes` per cycle at `clock`.
fn openexpress(clock: &str, bytes: &str) -> f64 {
    let clock = format!("\"{clock}\"");
    let s = run(
        Some("openexpress-hw"),
        &[
            ("host.engine", "\"spdk\""),
            ("workload.rw", "\"read\""),
            ("workload.bs", "\"128KiB\""),
            ("workload.numjobs", "4"),
            ("workload.iodepth", "8"),
            ("workload.number_ios", "6000"),
            ("ctrl.hardware.clock", &clock),
            ("ctrl.datapath_bytes", bytes),
        ],
    );
    s.read.bandwidth_mib_s * 1_048_576.0
}

#[test]
fn the_engines_clock_sets_bandwidth_once_the_data_path_binds() {
    // Without a data path the link (PCIe 3.0 x8) binds at either clock.
    let (slow, fast) = (openexpress("100MHz", "0"), openexpress("250MHz", "0"));
    assert!((slow / fast - 1.0).abs() < 0.02, "link-bound: {slow} vs {fast} B/s");
    // 32 B per cycle: 8 GB/s at 250 MHz, above the link's ~7 GB/s; 3.2 GB/s at 100 MHz.
    let at250 = openexpress("250MHz", "32");
    assert!((at250 / fast - 1.0).abs() < 0.02, "still link-bound at 250 MHz: {at250} vs {fast}");
    let at100 = openexpress("100MHz", "32");
    assert!((at100 / 3.2e9 - 1.0).abs() < 0.01, "the data path binds at 100 MHz: {at100} B/s, 32 B x 100 MHz = 3.2e9");
}

#[test]
fn write_data_crossing_a_slower_path_bounds_writes_and_mixes_by_their_share() {
    // One shared DMA engine behind a data path of 2 B per cycle for reads and 1 B for writes at
    // 1 GHz, far below the link: 128 KiB reads stream at 2 GB/s, writes at 1 GB/s, and a 50/50
    // mix at the bytes' harmonic mean, 1 / (0.5 / 2 + 0.5 / 1) = 1.333 GB/s.
    let rate = |rw: &str| {
        let s = run(
            None,
            &[
                ("host.engine", "\"spdk\""),
                ("ctrl.dma_queues", "\"shared\""),
                ("ctrl.datapath_bytes", "2"),
                ("ctrl.write_datapath_bytes", "1"),
                ("workload.rw", rw),
                ("workload.rwmixread", "50"),
                ("workload.bs", "\"128KiB\""),
                ("workload.iodepth", "16"),
                ("workload.number_ios", "4000"),
            ],
        );
        s.bandwidth_mib_s * 1.048_576e6
    };
    for (rw, expect) in [("\"randread\"", 2e9), ("\"randwrite\"", 1e9), ("\"randrw\"", 1e9 / 0.75)] {
        let got = rate(rw);
        assert!((got / expect - 1.0).abs() < 0.02, "{rw}: {got} B/s against {expect}");
    }
    let bad = ssdlab_core::config::build(Some("default"), None, &[("ctrl.write_datapath_bytes".to_string(), "1".to_string())]);
    assert!(bad.is_err_and(|e| e.to_string().contains("ctrl.write_datapath_bytes")));
}

#[test]
fn a_writes_firmware_work_is_controller_time_on_its_path() {
    // One 16 KiB write on the tlc drive is four 4 KiB units: 4 x 700 cycles at 1 GHz more.
    let write = |cycles: &str| {
        let s = run(Some("tlc"), &[("workload.rw", "\"randwrite\""), ("workload.bs", "\"16KiB\""), ("workload.iodepth", "1"), ("workload.number_ios", "300"), ("ctrl.firmware.write_cycles", cycles)]);
        (s.write.latency_us.mean, s.write.breakdown_us.0[ssdlab_core::stats::Component::Controller as usize])
    };
    let (lat0, ctl0) = write("0");
    let (lat1, ctl1) = write("700");
    assert!((ctl1 - ctl0 - 2.8).abs() < 1e-6, "controller time {ctl0} -> {ctl1} us");
    assert!((lat1 - lat0 - 2.8).abs() < 1e-6, "latency {lat0} -> {lat1} us");
}

#[test]
fn deferred_write_work_leaves_the_writes_path_but_not_the_cores() {
    // SPDK host, one core, 4 KiB writes with 20000 cycles (20 us at 1 GHz) of write work each.
    // Paced at one write per 100 us and deferred, a write completes exactly 20 us sooner; the
    // core still does the work, so under load both stop at one core's rate: 1 / (2300 + 20000
    // cycles) = 44.8 k writes/s.
    let write = |qd: &str, rate: &str, defer: &str| {
        run(
            None,
            &[
                ("host.engine", "\"spdk\""),
                ("ctrl.firmware.cores", "1"),
                ("workload.rw", "\"randwrite\""),
                ("workload.iodepth", qd),
                ("workload.rate_iops", rate),
                ("workload.number_ios", "4000"),
                ("ctrl.firmware.write_cycles", "20000"),
                ("ctrl.firmware.defer_write_work", defer),
            ],
        )
    };
    let (on, off) = (write("1", "10000", "false"), write("1", "10000", "true"));
    let saved = on.write.latency_us.mean - off.write.latency_us.mean;
    assert!((saved - 20.0).abs() < 1e-6, "saved {saved} us");
    let ceiling = 1e9 / 22300.0;
    for defer in ["false", "true"] {
        let s = write("16", "0", defer);
        assert!((s.iops / ceiling - 1.0).abs() < 0.01, "defer {defer}: {} IOPS against {ceiling}", s.iops);
        let busy = s.metrics["ctrl.busy"] / 1e3;
        assert!((busy / (4000.0 * 22300.0) - 1.0).abs() < 1e-6, "core busy {busy} ns");
    }
}

#[test]
fn gc_moves_take_the_cores_host_commands_need() {
    // The aged tlc drive under 4 KiB random writes: GC moves units all the time. Each costs
    // the cores 2000 cycles; what the cores did is then the commands' 2300 cycles each plus
    // the moves', and the host's writes wait for cores GC holds.
    let aged = |cycles: &str| {
        run(Some("tlc-aged"), &[("workload.rw", "\"randwrite\""), ("workload.iodepth", "32"), ("workload.number_ios", "20000"), ("ctrl.firmware.cores", "1"), ("ctrl.firmware.gc_move_cycles", cycles)])
    };
    let (free, charged) = (aged("0"), aged("2000"));
    let moved = charged.metrics["ftl.gc.units_moved"];
    assert!(moved > 20000.0, "GC moved {moved} units");
    let busy_ns = charged.metrics["ctrl.busy"] / 1e3;
    let commands = 20000.0 * 2300.0;
    assert!(((busy_ns - commands) / (moved * 2000.0) - 1.0).abs() < 0.01, "cores busy {busy_ns} ns: commands {commands}, GC {}", moved * 2000.0);
    assert!(charged.write.latency_us.mean > free.write.latency_us.mean, "{} vs {}", charged.write.latency_us.mean, free.write.latency_us.mean);
}

#[test]
fn a_journal_record_is_opened_per_run_of_blocks_not_per_write() {
    // 300 16 KiB writes at QD1 on the tlc drive, 5000 cycles (5 us at 1 GHz) per record the
    // power-loss journal opens. Sequential, only the first write opens one (the others extend
    // it): 5 us over 300 writes. Random, or sequential with a hole after every write (fio's
    // rw=write:4k), every write opens one: 5 us each.
    let ctl = |rw: &str, skip: &str, cycles: &str| {
        let s = run(
            Some("tlc"),
            &[("workload.rw", rw), ("workload.rw_skip", skip), ("workload.bs", "\"16KiB\""), ("workload.iodepth", "1"), ("workload.number_ios", "300"), ("ctrl.firmware.extent_cycles", cycles)],
        );
        s.write.breakdown_us.0[ssdlab_core::stats::Component::Controller as usize]
    };
    for (rw, skip, opened) in [("\"write\"", "0", 1.0), ("\"randwrite\"", "0", 300.0), ("\"write\"", "4096", 300.0)] {
        let added = ctl(rw, skip, "5000") - ctl(rw, skip, "0");
        assert!((added - 5.0 * opened / 300.0).abs() < 1e-6, "rw={rw} skip={skip}: {added} us more per write, {opened} records expected");
    }
}
