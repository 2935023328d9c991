//! ATC model speed on a synthetic key stream: `cargo run --release --example atc_speed`.
use rand::{RngExt, SeedableRng};
use ssdlab_core::ats::curve::FaLruCurve;
use ssdlab_core::ats::sim::{CacheSim, Policy};
fn main() {
    let n = 20_000_000usize;
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
    // Skewed keys over 200k distinct pages (like 4 KiB STU buffer pages).
    let keys: Vec<u32> = (0..n).map(|_| (rng.random_range(0.0f64..1.0).powi(3) * 200_000.0) as u32).collect();
    let t = std::time::Instant::now();
    let mut s = CacheSim::new(Policy::Lru, 16, 4, &[], 1);
    for &k in &keys {
        s.access(k, u64::from(k), u64::MAX);
    }
    let dt = t.elapsed().as_secs_f64();
    println!("4-way x 16 sets LRU replay: {:.0} M addresses/s (hit rate {:.3})", n as f64 / dt / 1e6, s.hits as f64 / n as f64);
    let t = std::time::Instant::now();
    let mut c = FaLruCurve::new(65_536);
    for &k in &keys {
        c.access(k);
    }
    let dt = t.elapsed().as_secs_f64();
    println!("FA LRU curve, all sizes to 64Ki lines: {:.1} ns/address (hit rate at 64Ki {:.3})", dt * 1e9 / n as f64, c.hits(65_536) as f64 / n as f64);
    // A raw trace file of `path` (argument), if given: read alone, then the 4-way study.
    if let Some(path) = std::env::args().nth(1) {
        let path = std::path::PathBuf::from(path);
        let start = std::time::Instant::now();
        let mut sum = 0u64;
        let mut count = 0u64;
        for a in ssdlab_core::ats::trace::RawReader::open(&path).unwrap() {
            sum = sum.wrapping_add(a.unwrap().addr);
            count += 1;
        }
        let dt = start.elapsed().as_secs_f64();
        println!("raw read alone: {:.0} M addresses/s ({sum:x})", count as f64 / dt / 1e6);
        let study = ssdlab_core::ats::Study {
            stus: vec![0],
            policies: vec![Policy::Lru],
            assocs: vec![ssdlab_core::ats::Assoc::Ways(4)],
            lines: vec![64],
            pin_ranges: vec![],
            pin_tagged: false,
            pin_dedicated: false,
            seed: 1,
        };
        for _ in 0..3 {
            let start = std::time::Instant::now();
            let points = ssdlab_core::ats::run_study(&study, || ssdlab_core::ats::trace::RawReader::open(&path).map(ssdlab_core::ats::trace::RawReader::blocks)).unwrap();
            let dt = start.elapsed().as_secs_f64();
            println!("4-way study from the file: {:.0} M addresses/s (hit rate {:.3})", count as f64 / dt / 1e6, points[0].hit_rate);
        }
    }
}
