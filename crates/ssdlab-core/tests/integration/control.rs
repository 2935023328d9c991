//! fio's control loops in a job: bandwidth caps per direction, start delays, minimum rates and
//! the latency-target depth search, checked against what their settings imply.

use ssdlab_core::{Simulation, Summary};

use crate::{config_from, run};

/// A run of one job at QD1 on the TLC preset, bounded by time.
fn tlc(settings: &[(&str, &str)]) -> Summary {
    let mut all = vec![("workload.numjobs", "1"), ("workload.iodepth", "1"), ("workload.number_ios", "1000000000")];
    all.extend_from_slice(settings);
    Simulation::new(config_from(Some("tlc"), &all)).and_then(|mut s| s.run()).expect("run")
}

#[test]
fn a_write_cap_holds_writes_to_it_and_reads_fill_the_rest() {
    // fio's rate=,4m on randrw: writes are capped at 4 MiB/s, reads have no cap and are
    // always due, so they take every slot the writes leave.
    let s = run(&[("workload.rw", "randrw"), ("workload.iodepth", "8"), ("workload.runtime", "\"200ms\""), ("workload.rate", "\",4MiB/s\"")]);
    assert!((s.write.bandwidth_mib_s / 4.0 - 1.0).abs() < 0.02, "writes at {} MiB/s", s.write.bandwidth_mib_s);
    assert!(s.read.ios > 20 * s.write.ios, "reads fill the rest: {} reads, {} writes", s.read.ios, s.write.ios);
    // One cap for both: a read job at 20 MiB/s.
    let r = run(&[("workload.iodepth", "8"), ("workload.runtime", "\"200ms\""), ("workload.rate", "\"20MiB/s\"")]);
    assert!((r.bandwidth_mib_s / 20.0 - 1.0).abs() < 0.02, "{} MiB/s", r.bandwidth_mib_s);
}

#[test]
fn a_job_ahead_of_its_cap_drains_its_queue_before_it_waits() {
    // At 40 MiB/s with 4 KiB reads the schedule allows an I/O every 97.7 us, longer than a
    // read takes: each I/O finds the queue drained, so the job never has two in flight
    // (fio's io_u_quiesce before a rate sleep), whatever its iodepth.
    let s = run(&[("workload.iodepth", "32"), ("workload.runtime", "\"100ms\""), ("workload.rate", "\"40MiB/s\"")]);
    let qd1 = run(&[("workload.iodepth", "1"), ("workload.number_ios", "2000")]);
    assert!((s.read.latency_us.mean / qd1.read.latency_us.mean - 1.0).abs() < 0.05, "{} vs QD1 {}", s.read.latency_us.mean, qd1.read.latency_us.mean);
    assert_eq!(s.jobs[0].iodepth_level[0], s.jobs[0].ios, "every I/O issued at depth 1");
}

#[test]
fn a_start_delay_shifts_a_job_and_its_runtime() {
    let s = run(&[("workload.numjobs", "2"), ("workload.runtime", "\"20ms\""), ("workload.jobs", "[{name = \"early\"}, {name = \"late\", startdelay = \"10ms\"}]")]);
    let (early, late) = (&s.jobs[0], &s.jobs[1]);
    assert!((s.sim_time_s - 0.030).abs() < 0.0005, "the late job runs 10..30 ms: {} s", s.sim_time_s);
    assert!((late.ios as f64 / early.ios as f64 - 1.0).abs() < 0.1, "{} vs {}", late.ios, early.ios);
    // Each job's runtime is its own 20 ms, the start delay left out (fio's per-job runtime), so
    // the two report about the same IOPS.
    for j in [early, late] {
        assert!((j.runtime_s - 0.020).abs() < 0.0005, "{}: {} s", j.name, j.runtime_s);
    }
    assert!((late.iops / early.iops - 1.0).abs() < 0.1, "{} vs {} IOPS", late.iops, early.iops);
}

#[test]
fn a_missed_minimum_rate_ends_the_job_with_fios_error() {
    // A TLC drive at QD1 reads ~10 k IOPS, 40 MB/s: far below a 1 GB/s minimum. The check
    // starts two seconds in and spans a cycle (0.5 s here), so the job ends at about 2.5 s of its 10.
    let s = tlc(&[("workload.runtime", "\"10s\""), ("workload.rate_min", "\"1GB/s\""), ("workload.rate_cycle", "\"500ms\"")]);
    let err = s.jobs[0].error.as_deref().expect("the job failed");
    assert!(err.starts_with("job0: rate_min=1000000000B/s not met, got "), "{err}");
    assert!(s.sim_time_s > 2.5 && s.sim_time_s < 2.6, "ended at {} s", s.sim_time_s);
    let ok = tlc(&[("workload.runtime", "\"3s\""), ("workload.rate_min", "\"1MB/s\"")]);
    assert!(ok.jobs[0].error.is_none());
}

fn latency_run(depth: &str, extra: &[(&str, &str)]) -> Summary {
    let mut s = vec![("workload.iodepth", depth), ("workload.runtime", "\"2s\"")];
    s.extend_from_slice(extra);
    tlc(&s)
}

#[test]
fn the_latency_target_search_settles_on_the_deepest_queue_that_meets_it() {
    // Random reads on a TLC drive: latency grows once the dies are busy. The search (fio's
    // doubling and bisection) finds a depth D; at D the p99 meets the target, at 2D it does not.
    let target = "300us";
    let s = latency_run("256", &[("workload.latency_target", "\"300us\""), ("workload.latency_window", "\"20ms\""), ("workload.latency_percentile", "99.0")]);
    let d = s.jobs[0].latency_depth.expect("a latency search");
    assert!(d > 1 && d < 256, "depth {d}");
    // The search ended the job after one last window at D, whose statistics are the job's.
    assert!(s.sim_time_s < 2.0, "the job ended after its last window: {} s", s.sim_time_s);
    assert!(s.read.latency_us.p99 <= 300.0, "p99 {} us at the depth found", s.read.latency_us.p99);
    let fixed = |qd: u32| latency_run(&qd.to_string(), &[("workload.runtime", "\"100ms\"")]);
    assert!(fixed(d).read.latency_us.p99 <= 300.0 * 1.05, "{target} met at {d}");
    assert!(fixed(2 * d).read.latency_us.p99 > 300.0, "{target} missed at {}", 2 * d);
}

#[test]
fn a_job_that_ends_stops_the_jobs_of_its_exit_scope() {
    // fio's exitall: when the short job ends, the long one stops (exit_what=stonewall), or
    // goes on when it is in another reporting group and the scope is the group.
    let two = |scope: &str, other_group: &str| {
        let jobs = format!("[{{name = \"short\", number_ios = 500, exit_scope = \"{scope}\"}}, {{name = \"long\", runtime = \"50ms\", group = {other_group}}}]");
        run(&[("workload.numjobs", "2"), ("workload.number_ios", "1000000000"), ("workload.jobs", jobs.as_str())])
    };
    let stopped = two("stonewall", "1");
    assert!(stopped.sim_time_s < 0.01, "the long job stopped with the short one: {} s", stopped.sim_time_s);
    let same_group = two("group", "0");
    assert!(same_group.sim_time_s < 0.01, "{} s", same_group.sim_time_s);
    let other_group = two("group", "1");
    assert!((other_group.sim_time_s - 0.05).abs() < 0.001, "the long job ran its 50 ms: {} s", other_group.sim_time_s);
}

#[test]
fn a_job_waiting_for_another_starts_when_all_its_copies_end() {
    // fio's wait_for: the two "readers" start once both "writers" copies are done, and run
    // their 5 ms.
    let alone = run(&[("workload.numjobs", "2"), ("workload.rw", "write"), ("workload.number_ios", "3000")]);
    let jobs = "[{name = \"writers\", rw = \"write\", number_ios = 3000}, {name = \"readers\", wait_for = \"writers\", runtime = \"5ms\"}]";
    let s = run(&[("workload.numjobs", "2"), ("workload.number_ios", "1000000000"), ("workload.jobs", jobs)]);
    let names: Vec<&str> = s.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["writers.0", "writers.1", "readers.0", "readers.1"]);
    let expected = alone.sim_time_s + 0.005;
    assert!((s.sim_time_s - expected).abs() < 0.0003, "{} s vs writers' {} s + 5 ms", s.sim_time_s, alone.sim_time_s);
    assert!(s.jobs[2].ios > 0 && s.read.ios == s.jobs[2].ios + s.jobs[3].ios);
}

#[test]
fn the_ramp_restarts_fios_checks() {
    // fio checks nothing during ramp_time and starts the minimum-rate check's two seconds of
    // settling at its end: with a 1 s ramp the job fails at about 3.5 s, not 2.5 s.
    let s = tlc(&[("workload.runtime", "\"10s\""), ("workload.ramp_time", "\"1s\""), ("workload.rate_min", "\"1GB/s\""), ("workload.rate_cycle", "\"500ms\"")]);
    assert!(s.jobs[0].error.is_some());
    assert!(s.sim_time_s > 3.5 && s.sim_time_s < 3.6, "ended at {} s", s.sim_time_s);
}

#[test]
fn exit_what_stonewall_spares_jobs_not_yet_started() {
    // fio's TERMINATE_STONEWALL stops the jobs running; one still in its start delay runs.
    let jobs = "[{name = \"short\", number_ios = 500, exit_scope = \"stonewall\"}, {name = \"late\", startdelay = \"20ms\", runtime = \"10ms\"}]";
    let s = run(&[("workload.numjobs", "1"), ("workload.number_ios", "1000000000"), ("workload.jobs", jobs)]);
    assert!((s.sim_time_s - 0.030).abs() < 0.0005, "{} s", s.sim_time_s);
    let all = jobs.replace("stonewall", "all");
    let s = run(&[("workload.numjobs", "1"), ("workload.number_ios", "1000000000"), ("workload.jobs", all.as_str())]);
    let ios: Vec<(&str, u64)> = s.jobs.iter().map(|j| (j.name.as_str(), j.ios)).collect();
    assert_eq!(ios, [("short", 500), ("late", 0)], "exit_what=all stops it before it starts");
}
