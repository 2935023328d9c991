//! Trace replay through the simulated device: counts, timing against the synthetic path,
//! address handling and the device-to-job mapping.

use std::path::PathBuf;

use ssdlab_core::Simulation;

use crate::config;

fn write(name: &str, body: &str) -> PathBuf {
    let dir = crate::scratch_dir("replay");
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn replay(path: &std::path::Path, extra: &[(&str, &str)]) -> ssdlab_core::Result<ssdlab_core::Summary> {
    let trace = format!("{:?}", path.display().to_string());
    let mut s = vec![("workload.replay.trace", trace.as_str())];
    s.extend_from_slice(extra);
    let c = ssdlab_core::config::build(None, None, &s.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect::<Vec<_>>())?;
    Simulation::new(c)?.run()
}

/// MQSim lines: `time_ns dev lba size type` (type 1 = read), 8-sector (4 KiB) requests.
fn mqsim(records: &[(u64, u32, u64, u8)]) -> String {
    let lines: Vec<String> = records.iter().map(|(t, d, lba, op)| format!("{t} {d} {lba} 8 {op}\n")).collect();
    lines.concat()
}

#[test]
fn closed_loop_replay_at_qd1_costs_what_the_synthetic_path_costs() {
    let recs: Vec<(u64, u32, u64, u8)> = (0..500).map(|i| (i * 10, 0, i * 8 * 7, 1)).collect();
    let p = write("qd1.trace", &mqsim(&recs));
    let r = replay(&p, &[("workload.numjobs", "1"), ("workload.iodepth", "1"), ("workload.replay.mode", "\"qd\"")]).unwrap();
    let synth = crate::run(&[("workload.iodepth", "1"), ("workload.number_ios", "500")]);
    assert_eq!(r.read.ios, 500);
    assert!((r.read.latency_us.mean - synth.read.latency_us.mean).abs() < 1e-6, "{} vs {}", r.read.latency_us.mean, synth.read.latency_us.mean);
    let rs = r.replay.as_ref().unwrap();
    assert_eq!((rs.issued, rs.format.as_str(), rs.mode.as_str()), (500, "mqsim", "qd"));
}

#[test]
fn timed_replay_keeps_trace_time_and_scales_it() {
    // One read every 100 us: far apart, so each sees the unloaded latency.
    let recs: Vec<(u64, u32, u64, u8)> = (0..200).map(|i| (5_000_000 + i * 100_000, 0, i * 8, 1)).collect();
    let p = write("timed.trace", &mqsim(&recs));
    let r = replay(&p, &[("workload.iodepth", "4")]).unwrap();
    let qd1 = crate::run(&[("workload.iodepth", "1"), ("workload.number_ios", "200")]);
    assert!((r.read.latency_us.mean - qd1.read.latency_us.mean).abs() < 1e-6);
    // Times are rebased to the first record: the last arrives at 199 x 100 us.
    let last = 199.0 * 100e-6;
    assert!((r.sim_time_s - (last + qd1.read.latency_us.mean * 1e-6)).abs() < 1e-9, "{}", r.sim_time_s);
    let half = replay(&p, &[("workload.iodepth", "4"), ("workload.replay.time_scale", "0.5")]).unwrap();
    assert!((half.sim_time_s - (last / 2.0 + qd1.read.latency_us.mean * 1e-6)).abs() < 1e-9);
    // Twice as fast again, with arrivals closer than the latency: they queue.
    let dense: Vec<(u64, u32, u64, u8)> = (0..200).map(|i| (i * 100, 0, i * 8, 1)).collect();
    let p = write("dense.trace", &mqsim(&dense));
    let d = replay(&p, &[("workload.iodepth", "1")]).unwrap();
    assert!(d.read.latency_us.mean > 10.0 * qd1.read.latency_us.mean, "arrivals every 0.1 us wait for the single slot");
}

#[test]
fn out_of_order_records_and_flushes_are_counted_and_trims_issued() {
    let body = "fio version 3 iolog\n0 f add\n10 f read 0 4096\n5 f read 4096 4096\n20 f trim 0 4096\n30 f sync\n40 f write 1000 4096\n";
    let p = write("mixed.iolog", body);
    let r = replay(&p, &[]).unwrap();
    let rs = r.replay.unwrap();
    assert_eq!((rs.issued, rs.reordered, rs.skipped_flushes, rs.realigned), (4, 1, 1, 1));
    assert_eq!((r.read.ios, r.write.ios, r.trim.ios, r.trim.bytes), (2, 1, 1, 4096));
}

#[test]
fn addresses_beyond_the_region_wrap_scale_or_stop() {
    let cap = config(&[]).media.capacity.0;
    let far = cap / 512 * 3; // sectors: three capacities in
    let body = mqsim(&[(0, 0, 0, 1), (1000, 0, far, 1), (2000, 0, far * 2, 0)]);
    let p = write("far.trace", &body);
    let e = replay(&p, &[("workload.replay.lba", "\"reject\"")]).unwrap_err().to_string();
    assert!(e.contains("far.trace:2") && e.contains("beyond the simulated region"), "{e}");
    let w = replay(&p, &[("workload.replay.lba", "\"wrap\"")]).unwrap();
    assert_eq!(w.replay.as_ref().unwrap().remapped, 2);
    let s = replay(&p, &[("workload.replay.lba", "\"scale\"")]).unwrap();
    assert_eq!(s.replay.as_ref().unwrap().remapped, 3, "scaling moves every record");
    assert_eq!(s.ios, 3);
}

#[test]
fn devices_map_to_jobs() {
    let mut recs = Vec::new();
    for i in 0..300u64 {
        recs.push((i * 1000, (i % 3) as u32, i * 8, 1));
    }
    recs.push((400_000, 0, 0, 1));
    let p = write("devs.trace", &mqsim(&recs));
    let r = replay(&p, &[("workload.numjobs", "3"), ("workload.iodepth", "2")]).unwrap();
    let per_job: Vec<u64> = r.jobs.iter().map(|j| j.ios).collect();
    assert_eq!(per_job, [101, 100, 100], "device k goes to job k");
    assert_eq!(r.replay.unwrap().devices, 3);
    let spread = replay(&p, &[("workload.numjobs", "2"), ("workload.replay.devices", "\"spread\"")]).unwrap();
    assert_eq!(spread.jobs.iter().map(|j| j.ios).collect::<Vec<_>>(), [151, 150]);
}

#[test]
fn the_mqsim_sample_replays_deterministically_and_bad_settings_are_config_errors() {
    if let Some(p) = crate::shared("traces/mqsim_tpcc-small.trace") {
        let a = replay(&p, &[("workload.numjobs", "4"), ("workload.iodepth", "8")]).unwrap();
        let b = replay(&p, &[("workload.numjobs", "4"), ("workload.iodepth", "8")]).unwrap();
        assert_eq!(a.replay.as_ref().unwrap().issued, 6999);
        assert_eq!((a.read.ios, a.write.ios), (4381, 2618));
        assert_eq!(a.read.latency_us, b.read.latency_us);
        assert_eq!(a.sim_time_s.to_bits(), b.sim_time_s.to_bits(), "bit for bit");
    }
    let e = replay(&write("x.trace", "1 0 8 8 1\n"), &[("workload.replay.format", "\"nope\""), ("workload.replay.time_scale", "0")]).unwrap_err().to_string();
    assert!(e.contains("workload.replay.format") && e.contains("workload.replay.time_scale"), "{e}");
    let e = replay(std::path::Path::new("/nonexistent/t.trace"), &[]).unwrap_err().to_string();
    assert!(e.contains("/nonexistent/t.trace"), "{e}");
}
