//! Measures the emulation engine in-process, without NBD: `cargo run --release -p ssdlab-core
//! --example emulate -- [THREADS] [REQUESTS] [PRESET] [TIME_SCALE]`. THREADS threads (default
//! 32) each send REQUESTS (default 20000) 4 KiB random reads, one at a time, to PRESET
//! (default `dram`) served at TIME_SCALE (default 1: real time); prints the requests served
//! per wall second, the simulated mean latency and the lag percentiles.
use std::sync::Arc;
use std::time::Instant;

use ssdlab_core::emulate::{Emulator, Options};
use ssdlab_core::Simulation;

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(32);
    let requests: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let preset = args.next().unwrap_or_else(|| "dram".into());
    let scale: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1.0);
    let settings: Vec<(String, String)> = [
        ("host.submit_cost", "0ns"),
        ("host.completion", "\"poll\""),
        ("host.poll_complete_cost", "0ns"),
        ("host.complete_cost", "0ns"),
        ("host.batch_complete_cost", "0ns"),
        ("workload.numjobs", "8"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
    .collect();
    let config = ssdlab_core::config::build(Some(&preset), None, &settings).unwrap_or_else(|e| panic!("{e}"));
    let sim = Simulation::new(config).unwrap_or_else(|e| panic!("{e}"));
    let opts = Options { time_scale: scale, store_memory: 1 << 20, spill_dir: std::env::temp_dir(), checksums: false, block: 512 };
    let e = Arc::new(Emulator::start(sim, &opts).unwrap_or_else(|e| panic!("{e}")));
    let size = e.exports()[0].1 / 4096;
    let t = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|k| {
            let e = Arc::clone(&e);
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 4096];
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ k;
                for _ in 0..requests {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    e.read(0, k as usize, (x % size) * 4096, &mut buf).unwrap_or_else(|e| panic!("{e}"));
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    let wall = t.elapsed().as_secs_f64();
    e.stop();
    let s = e.stats();
    let n = threads * requests;
    let mean = e.summary().read.latency_us.mean;
    println!(
        "{preset} at time scale {scale}: {n} reads from {threads} threads in {wall:.2} s wall = {:.0} requests/s; simulated mean {mean:.2} us; lag p50 {:.1} p99 {:.1} p99.9 {:.1} max {:.1} us",
        n as f64 / wall,
        s.lag_ns[0] as f64 / 1e3,
        s.lag_ns[2] as f64 / 1e3,
        s.lag_ns[3] as f64 / 1e3,
        s.lag_ns[4] as f64 / 1e3
    );
}
