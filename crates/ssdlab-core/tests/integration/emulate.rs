//! The emulated drive (`ssdlab serve`'s core): data comes back as written, each request's
//! simulated latency is what the simulation recorded for it, an idle drive serves a request
//! in the time a run takes for the same request, and bad requests are refused without harm.
//! Nothing here depends on how fast the machine is: the engine's pacing only decides when a
//! reply is released, never the simulated figures checked.

use ssdlab_core::emulate::{Emulator, Options};
use ssdlab_core::stats::Component;
use ssdlab_core::Simulation;

use super::{config_from, scratch_dir};

/// The host settings `ssdlab serve` applies: the real host replaces the simulated stack.
const HOST: [(&str, &str); 6] =
    [("host.submit_cost", "0ns"), ("host.completion", "\"poll\""), ("host.poll_complete_cost", "0ns"), ("host.complete_cost", "0ns"), ("host.batch_complete_cost", "0ns"), ("workload.numjobs", "2")];

fn emulator(base: Option<&str>, extra: &[(&str, &str)], scale: f64) -> Emulator {
    let mut s: Vec<(&str, &str)> = HOST.to_vec();
    s.extend_from_slice(extra);
    let config = config_from(base, &s);
    let sim = Simulation::new(config).expect("simulation");
    let opts = Options { time_scale: scale, store_memory: 32 << 10, spill_dir: scratch_dir("emulate"), checksums: true, block: 512 };
    Emulator::start(sim, &opts).expect("emulator")
}

fn pattern(seed: u64, n: usize) -> Vec<u8> {
    (0..n).map(|i| ((i as u64).wrapping_mul(0x9e37_79b9).wrapping_add(seed) >> 3) as u8).collect()
}

#[test]
fn reads_return_what_was_written_trims_and_zeroes_read_back_zeroes() {
    // Simulated time runs 20x slower than the wall clock: the test takes a few ms of drive time.
    let e = emulator(None, &[], 0.05);
    let a = pattern(1, 64 << 10);
    let b = pattern(2, 4096);
    e.write(0, 0, 1 << 20, &a).unwrap();
    e.write(0, 1, (1 << 20) + 8192, &b).unwrap();
    let mut got = vec![0u8; 64 << 10];
    e.read(0, 1, 1 << 20, &mut got).unwrap();
    let mut want = a.clone();
    want[8192..8192 + 4096].copy_from_slice(&b);
    assert!(got == want, "first difference at byte {:?}", got.iter().zip(&want).position(|(x, y)| x != y));
    e.zero(0, 0, (1 << 20) + 4096, 8192, true).unwrap();
    e.zero(0, 0, (1 << 20) + 32768, 4096, false).unwrap();
    e.read(0, 0, 1 << 20, &mut got).unwrap();
    want[4096..12288].fill(0);
    want[32768..36864].fill(0);
    assert!(got == want, "first difference at byte {:?}", got.iter().zip(&want).position(|(x, y)| x != y));
    e.flush(0, 0).unwrap();
    e.stop();
    let st = e.stats();
    assert_eq!(st.requests, [2, 2, 1, 1, 1]);
    assert!(st.store.checked > 0 && st.store.corrupt == 0, "{:?}", st.store);
    // 32 KiB of memory: the rest of the data went to the spill file and came back.
    assert!(st.store.chunks_in_file > 0, "{:?}", st.store);
    let s = e.summary();
    assert_eq!((s.read.ios, s.write.ios, s.trim.ios), (2, 3, 1));
}

#[test]
fn each_replys_latency_is_the_simulations_and_an_idle_drive_serves_like_a_run() {
    // One 4 KiB read of an idle drive in a run with the same host settings.
    let mut run_settings: Vec<(&str, &str)> = HOST.to_vec();
    run_settings.extend_from_slice(&[("workload.numjobs", "1"), ("workload.rw", "\"read\""), ("workload.bs", "4096"), ("workload.number_ios", "1"), ("workload.iodepth", "1")]);
    let run = Simulation::new(config_from(Some("tlc"), &run_settings)).and_then(|mut s| s.run()).unwrap();
    let e = emulator(Some("tlc"), &[], 0.05);
    let mut buf = vec![0u8; 4096];
    let mut lat = Vec::new();
    for i in 0..5u64 {
        // Far apart, so each finds the drive idle.
        lat.push(e.read(0, 0, i << 30, &mut buf).unwrap().latency);
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    e.stop();
    let s = e.summary();
    let mean_us = lat.iter().map(|d| d.as_ns_f64() / 1000.0).sum::<f64>() / lat.len() as f64;
    assert!((s.read.latency_us.mean - mean_us).abs() < 1e-6, "summary {} vs replies {mean_us}", s.read.latency_us.mean);
    let first = lat[0].as_ns_f64() / 1000.0;
    assert!((first - run.read.latency_us.mean).abs() < 1e-6, "emulated {first} us vs run {} us", run.read.latency_us.mean);
    assert_eq!(s.read.breakdown_us.0[Component::HostSoftware as usize], 0.0, "the real host replaces the simulated stack");
}

#[test]
fn bad_requests_are_refused_and_the_drive_keeps_serving() {
    let e = emulator(None, &[], 0.05);
    let cap = e.exports()[0].1;
    let mut buf = vec![0u8; 4096];
    assert!(e.read(0, 0, cap - 2048, &mut buf).is_err(), "past the end");
    assert!(e.read(0, 0, 100, &mut buf).is_err(), "misaligned");
    assert!(e.write(0, 0, 0, &[]).is_err(), "empty");
    assert!(e.read(3, 0, 0, &mut buf).is_err(), "no such export");
    e.write(0, 0, 0, &pattern(5, 4096)).unwrap();
    e.read(0, 0, 0, &mut buf).unwrap();
    assert_eq!(buf, pattern(5, 4096));
    e.stop();
    assert_eq!(e.stats().refused, 4);
    assert!(e.read(0, 0, 0, &mut buf).is_err(), "stopped");
}

#[test]
fn concurrent_writers_contend_in_simulated_time() {
    // Eight threads write at once on a drive slowed 20x: every write completes, each reply's
    // latency is at least the idle drive's, and the drive saw them overlap (queueing).
    let e = std::sync::Arc::new(emulator(None, &[("ftl.write_buffer", "64KiB")], 0.05));
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let e = std::sync::Arc::clone(&e);
            std::thread::spawn(move || (0..20u64).map(|i| e.write(0, t as usize, (t * 20 + i) * 65536, &pattern(t, 65536)).unwrap().latency).collect::<Vec<_>>())
        })
        .collect();
    let lat: Vec<_> = threads.into_iter().flat_map(|h| h.join().unwrap()).collect();
    assert_eq!(lat.len(), 160);
    let s = e.summary();
    assert_eq!(s.write.ios, 160);
    // 64 KiB writes from eight threads into a 64 KiB buffer: they waited for each other.
    assert!(s.write.breakdown_us.0[Component::Queueing as usize] > 0.0, "{:?}", s.write.breakdown_us);
    let mut buf = vec![0u8; 65536];
    for t in 0..8u64 {
        e.read(0, 0, (t * 20 + 19) * 65536, &mut buf).unwrap();
        assert_eq!(buf, pattern(t, 65536));
    }
}

#[test]
fn each_tenant_is_an_export_of_its_namespace_on_its_own_queues() {
    let text = "[[tenants]]\nname = \"alpha\"\n[[tenants]]\nname = \"beta\"\nshare = 0.25\n";
    let s: Vec<(String, String)> = HOST[..5].iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
    let config = ssdlab_core::config::build_on_text(&format!("extends = \"default\"\n{text}"), "test", None, &s).expect("config");
    let layout = config.tenant_layout().unwrap();
    let sim = Simulation::new(config).expect("simulation");
    let opts = Options { time_scale: 0.05, store_memory: 1 << 20, spill_dir: scratch_dir("emulate"), checksums: false, block: 512 };
    let e = Emulator::start(sim, &opts).expect("emulator");
    let exports = e.exports();
    assert_eq!(exports.iter().map(|x| x.0.as_str()).collect::<Vec<_>>(), ["alpha", "beta"]);
    assert_eq!(exports[1].1, layout.ranges[1].end - layout.ranges[1].start);
    e.write(1, 0, 0, &pattern(9, 4096)).unwrap();
    let mut buf = vec![1u8; 4096];
    // Offset 0 of alpha is another place on the drive: never written.
    e.read(0, 0, 0, &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 0));
    e.read(1, 0, 0, &mut buf).unwrap();
    assert_eq!(buf, pattern(9, 4096));
    assert!(e.read(1, 0, exports[1].1, &mut buf).is_err(), "past the end of beta's namespace");
    e.stop();
    let sum = e.summary();
    let by = |n: &str| sum.tenants.iter().find(|t| t.name == n).map(|t| (t.read.ios, t.write.ios));
    assert_eq!((by("alpha"), by("beta")), (Some((1, 0)), Some((1, 1))));
}
