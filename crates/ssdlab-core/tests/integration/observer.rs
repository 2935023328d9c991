//! The statistics observer: the warm-up reset, time series and tenants.
// Counts carried as f64 are whole numbers below 2^53: comparing them exactly is right.
#![allow(clippy::float_cmp)]

use ssdlab_core::stats::Row;
use ssdlab_core::Simulation;
use ssdlab_core::Summary;

use crate::config_from;

fn run(base: &str, settings: &[(&str, &str)]) -> Summary {
    Simulation::new(config_from(Some(base), settings)).and_then(|mut s| s.run()).expect("run")
}

fn device_rows(s: &Summary) -> Vec<&Row> {
    s.timeseries.as_ref().expect("a time series").rows.iter().filter(|r| r.tenant == "all").collect()
}

fn metric(r: &Row, name: &str) -> f64 {
    r.metrics.get(name).copied().unwrap_or_else(|| panic!("row has no {name}: {:?}", r.metrics.keys()))
}

/// An aged drive under random writes: GC is busy from the first write.
const AGED: &[(&str, &str)] = &[("workload.number_ios", "6000")];

#[test]
fn a_ramp_excludes_the_warm_up_from_waf_utilisation_and_gc_counts() {
    // The same run observed two ways: with a ramp of R, and without one but cut into
    // intervals of R. The ramped figures must be the intervals after the first, exactly.
    let plain = run("ops-isolation", AGED);
    let r = plain.window_s / 3.0;
    let ramp = format!("\"{}ns\"", (r * 1e9) as u64);
    let ramped = run("ops-isolation", &[AGED[0], ("workload.ramp_time", &ramp)]);
    let cut = run("ops-isolation", &[AGED[0], ("stats.interval", &ramp)]);
    let rows = device_rows(&cut);
    let after: Vec<&&Row> = rows.iter().skip(1).collect();
    let sum = |name: &str| after.iter().map(|r| metric(r, name)).sum::<f64>();
    let f = ramped.flash.as_ref().unwrap();
    let pf = plain.flash.as_ref().unwrap();
    assert!(metric(rows[0], "ftl.gc.units_moved") > 0.0, "GC works during the warm-up");
    assert_eq!(f.ftl.gc_writes as f64, sum("ftl.gc.units_moved"));
    assert_eq!(f.ftl.host_writes as f64, sum("ftl.host_writes"));
    assert_eq!(f.ftl.erases as f64, sum("ftl.erases"));
    assert_eq!(f.ftl.gc_victims, ramped.metrics["ftl.gc.victims"] as u64);
    assert!(f.ftl.gc_writes < pf.ftl.gc_writes && f.ftl.host_writes < pf.ftl.host_writes);
    let waf = (sum("ftl.host_writes") + sum("ftl.gc.units_moved")) / sum("ftl.host_writes");
    assert!((f.waf - waf).abs() < 1e-12, "window WAF {} vs {waf}", f.waf);
    // Utilisation: busy time after the ramp over the time after the ramp.
    let busy = sum("media.units.busy") * 1e-12;
    let span = ramped.sim_time_s - r;
    let dies = ramped.metrics["media.units"];
    let want = busy / span / dies;
    assert!((ramped.utilisation.media_units - want).abs() < 1e-6 * want, "{} vs {want}", ramped.utilisation.media_units);
    // Every counter in `metrics` is window-only too.
    assert_eq!(ramped.metrics["ftl.host_writes"], sum("ftl.host_writes"));
}

#[test]
fn interval_io_counts_add_up_to_the_total_with_and_without_a_ramp() {
    for settings in [vec![("stats.interval", "\"1ms\"")], vec![("stats.interval", "\"700us\""), ("workload.ramp_time", "\"2ms\"")]] {
        let mut all = vec![("workload.numjobs", "2"), ("workload.number_ios", "5000"), ("workload.rw", "randrw")];
        all.extend(settings);
        let s = run("default", &all);
        let ts = s.timeseries.as_ref().unwrap();
        let dev: u64 = ts.rows.iter().filter(|r| r.tenant == "all").map(|r| r.ios).sum();
        assert_eq!(dev, s.ios);
        let tenant: u64 = ts.rows.iter().filter(|r| r.tenant != "all").map(|r| r.ios).sum();
        assert_eq!(tenant, s.ios);
        let reads: u64 = ts.rows.iter().filter(|r| r.tenant == "all").map(|r| r.read_ios).sum();
        assert_eq!(reads, s.read.ios);
        // Rows tile the window: each starts where the last ended.
        let dev_rows: Vec<&Row> = ts.rows.iter().filter(|r| r.tenant == "all").collect();
        for w in dev_rows.windows(2) {
            assert!((w[0].end_s - w[1].start_s).abs() < 1e-15);
        }
        assert!(dev_rows.len() > 3);
    }
}

#[test]
fn an_aged_random_write_time_series_shows_gc_activity() {
    let s = run("tlc-aged", &[("workload.number_ios", "20000"), ("stats.interval", "\"20ms\"")]);
    let rows = device_rows(&s);
    assert!(rows.len() >= 3, "{} rows", rows.len());
    // GC interleaves with the host writes: it moves pages in every interval that has writes,
    // and the interval WAF stays near the drive's.
    let writing: Vec<&&Row> = rows.iter().filter(|r| metric(r, "ftl.host_writes") > 0.0).collect();
    assert!(writing.len() >= 3, "{} intervals with writes", writing.len());
    assert!(writing.iter().all(|r| metric(r, "ftl.gc.units_moved") > 0.0), "GC in every interval with writes");
    // Moves count when their pages are programmed: while the 64 MiB write buffer fills, host
    // writes run ahead of the dies; once it is full, every interval's WAF shows GC.
    let mut written = 0.0;
    let full: Vec<&&&Row> = writing
        .iter()
        .filter(|r| {
            let before = written;
            written += metric(r, "ftl.host_writes") * 4096.0;
            before > 64.0 * 1_048_576.0
        })
        .collect();
    assert!(full.len() >= 3 && full.iter().all(|r| metric(r, "ftl.waf") > 1.5), "the interval WAF shows GC");
    assert!(rows.iter().any(|r| metric(r, "ftl.erases") > 0.0));
    assert!(rows.iter().all(|r| r.metrics.contains_key("ftl.free_blocks")));
    let moved: f64 = rows.iter().map(|r| metric(r, "ftl.gc.units_moved")).sum();
    assert_eq!(moved, s.flash.as_ref().unwrap().ftl.gc_writes as f64);
}

#[test]
fn two_tenants_records_are_kept_apart() {
    let c = r#"
extends = "default"
[workload]
numjobs = 1
number_ios = 3000
[[workload.jobs]]
tenant = "reader"
rw = "randread"
iodepth = 4
[[workload.jobs]]
tenant = "writer"
rw = "randwrite"
bs = "16KiB"
iodepth = 16
[stats]
interval = "2ms"
"#;
    let config = ssdlab_core::config::build_on_text(c, "<test>", None, &[]).expect("config");
    let s = Simulation::new(config).and_then(|mut s| s.run()).expect("run");
    let names: Vec<&str> = s.tenants.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["reader", "writer"]);
    let (r, w) = (&s.tenants[0], &s.tenants[1]);
    assert_eq!((r.read.ios, r.write.ios), (3000, 0));
    assert_eq!((w.read.ios, w.write.ios), (0, 3000));
    assert_eq!(w.bytes, 3000 * 16384);
    assert_eq!(r.ios + w.ios, s.ios);
    // Each tenant's latency is its own, not the device's mix.
    assert!((r.read.latency_us.mean - s.read.latency_us.mean).abs() < 1e-9);
    assert!((w.write.latency_us.mean - s.write.latency_us.mean).abs() < 1e-9);
    let ts = s.timeseries.as_ref().unwrap();
    for (name, want) in [("reader", 3000), ("writer", 3000)] {
        let rows: Vec<&Row> = ts.rows.iter().filter(|x| x.tenant == name).collect();
        assert_eq!(rows.iter().map(|x| x.ios).sum::<u64>(), want);
        assert!(rows.iter().all(|x| if name == "reader" { x.write_ios == 0 } else { x.read_ios == 0 }));
    }
}

#[test]
fn unknown_interval_metrics_are_config_errors() {
    let Err(e) = Simulation::new(config_from(Some("default"), &[("stats.interval", "\"1ms\""), ("stats.interval_metrics", "[\"ftl.gc.units_moved\"]")])) else { panic!("an NVM drive has no FTL") };
    assert!(e.to_string().contains("stats.interval_metrics[0] = \"ftl.gc.units_moved\": no such metric"), "{e}");
}

#[test]
fn every_metric_has_a_unit_and_a_description_and_appears_in_the_flat_object() {
    let sim = Simulation::new(config_from(Some("tlc"), &[("workload.number_ios", "200")])).unwrap();
    let list = sim.metric_list();
    assert!(list.iter().all(|m| !m.unit.is_empty() && !m.description.is_empty()));
    let mut sim = sim;
    let s = sim.run().unwrap();
    for m in &list {
        assert!(s.metrics.contains_key(&m.name), "{} missing from metrics", m.name);
    }
    for name in ["ftl.gc.victims", "pcie.up.wire_bytes", "nand.dies.busy", "io.read.latency_us.p99", "ftl.waf"] {
        assert!(s.metrics.contains_key(name), "{name}");
    }
}

#[test]
fn every_percentile_lies_between_the_minimum_and_the_maximum() {
    use ssdlab_core::stats::LatencySummary;
    fn check(what: &str, l: &LatencySummary) {
        let mut all = vec![("p50", l.p50), ("p90", l.p90), ("p99", l.p99), ("p999", l.p999), ("p9999", l.p9999)];
        all.extend(l.percentiles.iter().map(|(k, v)| (k.as_str(), *v)));
        for (name, v) in all {
            assert!(v <= l.max && v >= l.min, "{what} {name} = {v} outside [{}, {}]", l.min, l.max);
        }
    }
    // dram-polled has a spread of a few ns: the histogram's bucket edges lie past its extremes.
    for (preset, ios) in [("dram-polled", "3000"), ("default", "3000"), ("tlc", "2000")] {
        let s = run(preset, &[("workload.number_ios", ios), ("stats.percentiles", "[1.0, 99.5, 100.0]")]);
        for (name, o) in [("read", &s.read), ("write", &s.write)] {
            if o.ios > 0 {
                for (k, l) in [("lat", &o.latency_us), ("slat", &o.slat_us), ("clat", &o.clat_us)] {
                    check(&format!("{preset} {name} {k}"), l);
                }
            }
        }
        for j in &s.jobs {
            check(&format!("{preset} {}", j.name), &j.read.latency_us);
        }
    }
}

#[test]
fn a_series_that_would_grow_without_bound_stops_with_a_config_error() {
    // 100 ns intervals over a run of about 29 ms would be 290 000 rows.
    let mut sim = Simulation::new(config_from(Some("default"), &[("workload.number_ios", "5000"), ("stats.interval", "\"100ns\"")])).unwrap();
    let Err(err) = sim.run() else { panic!("the series is refused") };
    assert!(err.to_string().contains("stats.interval = 100ns: the run needs more than 100000 intervals"), "{err}");
}

#[test]
fn until_steady_stops_at_the_first_pts_window_whatever_the_run_length() {
    // The default device is host-CPU bound once its queues fill: four CPUs, each always busy.
    let steady = |ios: &str, stop: &str| run("default", &[("workload.number_ios", ios), ("stats.interval", "\"1ms\""), ("stats.steady_metric", "\"iops\""), ("stats.steady_stop", stop)]);
    let short = steady("20000", "true");
    let long = steady("200000", "true");
    let (a, b) = (short.steady_state.as_ref().unwrap(), long.steady_state.as_ref().unwrap());
    assert!(a.reached && b.reached);
    assert_eq!((a.first, a.last), (b.first, b.last), "the same rounds, whatever the run length");
    let bound = 4e6 / long.host.cpu_us_per_io;
    assert!((a.average - b.average).abs() < 1e-6 * a.average && (a.average / bound - 1.0).abs() < 0.02, "{} vs {bound}", a.average);
    assert!(long.ios < 4 * 200_000 / 10, "the run stopped once steady: {} I/Os", long.ios);
    // Without the stop the run goes on, and the same first window is reported.
    let full = steady("20000", "false");
    let c = full.steady_state.as_ref().unwrap();
    assert_eq!((c.first, c.reached), (a.first, true));
    assert_eq!(full.ios, 80_000);
}

#[test]
fn an_aged_drive_reaches_a_steady_waf_that_does_not_depend_on_the_run_length() {
    // A 12 GiB aged TLC drive under 4 KiB random writes at QD32, in 2 s rounds (each holds
    // about a hundred GC victims, so a round's WAF is not one victim's). GC paces itself to
    // the free-block level, so rounds do not swing between collecting and resting.
    let aged = |ios: &str| run("tlc-aged", &[("media.nand.blocks_per_plane", "48"), ("workload.number_ios", ios), ("stats.interval", "\"2s\""), ("stats.steady_metric", "\"ftl.waf\"")]);
    let (short, long) = (aged("300000"), aged("450000"));
    let (a, b) = (short.steady_state.as_ref().unwrap(), long.steady_state.as_ref().unwrap());
    assert!(a.reached && b.reached, "{a:?} {b:?}");
    assert!((a.average / b.average - 1.0).abs() < 0.03, "steady WAF {} vs {}", a.average, b.average);
    let (fa, fb) = (short.flash.as_ref().unwrap(), long.flash.as_ref().unwrap());
    assert!((fa.waf / fb.waf - 1.0).abs() < 0.05, "run WAF {} vs {}", fa.waf, fb.waf);
    assert!((fb.waf / b.average - 1.0).abs() < 0.05, "the whole run's WAF {} is the steady one {}", fb.waf, b.average);
    // Preconditioning aged the drive to the same state (its GC reclaims whole victims).
    assert!((b.average / fb.precondition.waf - 1.0).abs() < 0.10, "steady {} vs preconditioned {}", b.average, fb.precondition.waf);
}

#[test]
fn a_steady_metric_needs_an_interval_and_a_known_name() {
    let Err(e) = ssdlab_core::config::build(Some("default"), None, &[("stats.steady_metric".into(), "\"iops\"".into())]) else { panic!("no interval") };
    assert!(e.to_string().contains("stats.steady_metric = \"iops\": needs stats.interval"), "{e}");
    let Err(e) = Simulation::new(config_from(Some("default"), &[("stats.interval", "\"1ms\""), ("stats.steady_metric", "\"ftl.waf\"")])) else { panic!("no FTL") };
    assert!(e.to_string().contains("stats.steady_metric = \"ftl.waf\": must be one of ios, iops"), "{e}");
    assert!(Simulation::new(config_from(Some("tlc-aged"), &[("workload.number_ios", "100"), ("stats.interval", "\"1ms\""), ("stats.steady_metric", "\"ftl.waf\"")])).is_ok());
}

#[test]
fn gc_moves_and_erases_count_when_the_dies_perform_them() {
    // An aged drive under random writes, cut into intervals. The FTL decides GC's moves as
    // host writes enter the buffer, ahead of the dies; the counters count a moved unit when the
    // page it moved to is programmed and an erase when it ends, so no interval counts more
    // moves than its programs hold, nor other erases than the dies did.
    let s = run(
        "tlc-aged",
        &[
            ("workload.number_ios", "20000"),
            ("stats.interval", "\"10ms\""),
            ("stats.interval_metrics", "[\"ftl.host_writes\", \"ftl.gc.units_moved\", \"ftl.erases\", \"nand.programs\", \"nand.gc_programs\", \"nand.erases\"]"),
        ],
    );
    let rows = device_rows(&s);
    let units_per_page = 4.0; // 16 KiB pages of 4 KiB units
    assert!(rows.len() > 5);
    for r in &rows {
        let (moved, programs) = (metric(r, "ftl.gc.units_moved"), metric(r, "nand.programs"));
        assert!(moved <= units_per_page * programs, "{moved} units moved over {programs} programs at {} s", r.start_s);
        assert_eq!(moved, units_per_page * metric(r, "nand.gc_programs"));
        assert_eq!(metric(r, "ftl.erases"), metric(r, "nand.erases"));
    }
    let sum = |name: &str| rows.iter().map(|r| metric(r, name)).sum::<f64>();
    let f = s.flash.as_ref().unwrap();
    assert!(sum("ftl.gc.units_moved") > 0.0 && sum("ftl.erases") > 0.0, "GC works");
    assert_eq!(f.ftl.gc_writes as f64, sum("ftl.gc.units_moved"));
    assert_eq!(f.nand.gc_programs * 4, f.ftl.gc_writes);
    // The run's WAF is that of the work done: host units plus the units GC's programs wrote.
    let waf = (sum("ftl.host_writes") + sum("ftl.gc.units_moved")) / sum("ftl.host_writes");
    assert!((f.waf - waf).abs() < 1e-12 && f.waf > 1.5, "WAF {} vs {waf}", f.waf);
}
