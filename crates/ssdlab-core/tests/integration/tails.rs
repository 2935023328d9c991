//! Latency tails, each from its mechanism: with the mechanism off, its tail is gone.

use ssdlab_core::{Simulation, Summary};

use crate::config_from;

fn run(base: &str, settings: &[(&str, &str)]) -> Summary {
    let mut all = vec![("workload.numjobs", "1")];
    all.extend_from_slice(settings);
    Simulation::new(config_from(Some(base), &all)).and_then(|mut s| s.run()).expect("run")
}

fn pct(s: &Summary, p: &str) -> f64 {
    s.read.latency_us.percentiles[p]
}

#[test]
fn retention_gives_reads_of_old_data_retry_steps_per_decade_of_age() {
    // SLC (one page type) so that only retries spread the latency. Data 10,000 hours old is
    // four decades past an hour: at 0.25 steps per decade the mean is 1, and steps are
    // geometric with q = m / (1 + m) = 0.5, at most 8: E[steps] = sum_{j=1..8} 0.5^j.
    let qd1 = |age_days: &'static str, per_decade: &'static str| {
        run("slc", &[("workload.iodepth", "1"), ("workload.number_ios", "4000"), ("media.nand.data_age_days", age_days), ("media.nand.read_retry_per_decade", per_decade)])
    };
    let old = qd1("416.6667", "0.25");
    let per_read = old.flash.as_ref().unwrap().nand.read_retries as f64 / 4000.0;
    let want = (1..=8).map(|j| 0.5f64.powi(j)).sum::<f64>();
    assert!((per_read / want - 1.0).abs() < 0.06, "{per_read} steps per read, model {want}");
    assert!(old.read.latency_us.p99 > old.read.latency_us.p50 + 50.0, "retries make a tail: p50 {} p99 {}", old.read.latency_us.p50, old.read.latency_us.p99);
    // Data an hour old or younger needs none, and neither does old data with the mechanism off.
    for s in [qd1("0.04", "0.25"), qd1("416.6667", "0")] {
        assert_eq!(s.flash.as_ref().unwrap().nand.read_retries, 0);
        assert!(s.read.latency_us.p99 - s.read.latency_us.p50 < 0.01, "no retries, no tail: {:?}", s.read.latency_us);
    }
}

#[test]
fn slow_path_reads_queue_for_a_finite_number_of_soft_decoders() {
    // The P4800X at QD16: 0.27 % of reads take the soft-decoding path. With one decoder a slow
    // read now and then finds it busy and waits up to one more decode; with as many as needed
    // none waits; with no raw errors there is no slow path at all (what tail is left is
    // queueing behind other reads, about 46 us at the 99.999th percentile).
    let qd16 = |extra: &[(&'static str, &'static str)]| {
        let mut s = vec![("workload.numjobs", "4"), ("workload.iodepth", "4"), ("workload.number_ios", "100000"), ("stats.percentiles", "[99.999]")];
        s.extend_from_slice(extra);
        run("p4800x", &s)
    };
    let soft_us = 25.47;
    let one = qd16(&[("media.ecc.soft_decoders", "1")]);
    let many = qd16(&[("media.ecc.soft_decoders", "0")]);
    let clean = qd16(&[("media.ecc.rber", "0.0")]);
    let wait = one.metrics["media.ecc.decoder_wait"];
    let slow = one.metrics["media.ecc.soft_decodes"];
    assert!(wait > 0.0 && wait / slow / 1e6 < soft_us, "mean wait of a slow read {} us", wait / slow / 1e6);
    assert_eq!(many.metrics["media.ecc.decoder_wait"], 0.0);
    assert!(pct(&one, "99.999") > pct(&many, "99.999") + 0.3 * soft_us, "one decoder {} vs many {}", pct(&one, "99.999"), pct(&many, "99.999"));
    assert!(pct(&many, "99.999") > pct(&clean, "99.999") + 0.5 * soft_us, "the slow path {} vs none {}", pct(&many, "99.999"), pct(&clean, "99.999"));
    assert_eq!(clean.metrics["media.ecc.soft_decodes"], 0.0);
}

#[test]
fn background_gc_that_reads_do_not_defer_gives_reads_a_tail_and_suspend_cuts_it() {
    // The aged TLC drive reads at QD1. With background GC deferred by writes only, it reclaims
    // a victim every 200 ms while the host reads (toward more free space than the run reaches):
    // a read that finds its die programming (TLC pages up to 5.7 ms) or erasing (3 ms) waits
    // for it, however rare that is. When reads defer it too, GC never runs and the tail is the
    // page types' spread (tR 56.5 to 106 us). Suspending the program or erase for the read
    // (10 us each way) cuts the wait to the suspend's cost.
    let qd1 = |defer: &'static str, suspend: &'static str| {
        run(
            "tlc-aged",
            &[
                ("workload.rw", "randread"),
                ("workload.iodepth", "1"),
                ("workload.number_ios", "30000"),
                ("stats.percentiles", "[99.99]"),
                ("ftl.bg_gc_idle", "\"200ms\""),
                ("ftl.bg_gc_target", "0.25"),
                ("ftl.bg_gc_defer", defer),
                ("media.nand.suspend", suspend),
                ("media.nand.suspend_latency", "\"10us\""),
            ],
        )
    };
    let bg = |s: &Summary| s.flash.as_ref().unwrap().ftl.bg_victims;
    let on = qd1("\"writes\"", "false");
    let off = qd1("\"io\"", "false");
    let cut = qd1("\"writes\"", "true");
    assert!(bg(&on) >= 5, "{} background victims", bg(&on));
    assert_eq!(bg(&off), 0);
    assert!(pct(&on, "99.99") > 1000.0, "a read behind a program or erase: p99.99 {} us", pct(&on, "99.99"));
    assert!(pct(&off, "99.99") < 130.0, "no background GC, no tail: p99.99 {} us", pct(&off, "99.99"));
    assert!((on.read.latency_us.p50 - off.read.latency_us.p50).abs() < 1.0, "the median read meets no GC");
    assert!(bg(&cut) >= 5 && cut.flash.as_ref().unwrap().nand.suspends > 0);
    assert!(pct(&cut, "99.99") < 250.0, "suspended for the read: p99.99 {} us", pct(&cut, "99.99"));
}
