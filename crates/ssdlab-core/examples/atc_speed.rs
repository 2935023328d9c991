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
}
