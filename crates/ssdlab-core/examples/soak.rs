//! Integrity soak of the FTL: `cargo run --release -p ssdlab-core --example soak -- [OPS] [SEED]`
//! (default 100000000 operations, seed 1).
//!
//! A 1 GiB drive (2 channels x 2 ways x 2 planes, 256 blocks of 64 x 16 KiB pages, 4 KiB
//! units, 10 % spare) in integrity mode takes a random mix of 60 % writes, 15 % trims and 25 %
//! reads, half of them on an eighth of the space, so that GC (greedy, with wear levelling)
//! runs all the time. Every read is checked against the shadow map, and every invariant is
//! verified every 10^7 operations and at the end. Exits 1 if anything was lost, stale or
//! duplicated, or an invariant broke.
use rand::{RngExt, SeedableRng};
use ssdlab_core::ftl::{Ftl, FtlConfig};
use ssdlab_core::ids::Lpn;
use ssdlab_core::media::NandConfig;
use ssdlab_core::units::Bytes;

fn main() {
    let mut args = std::env::args().skip(1);
    let ops: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000_000);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let nand = NandConfig { channels: 2, ways: 2, dies_per_chip: 1, planes: 2, blocks_per_plane: 256, pages_per_block: 64, page_size: Bytes(16384), ..NandConfig::default() };
    let cfg = FtlConfig { op_ratio: 0.10, wl_threshold: 8, ..FtlConfig::default() };
    let mut ftl = match Ftl::new(&nand, &cfg, seed) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::exit(2);
        }
    };
    ftl.enable_integrity();
    let n = ftl.exported_units();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let (mut writes, mut trims, mut reads) = (0u64, 0u64, 0u64);
    let t = std::time::Instant::now();
    let mut violation = None;
    for i in 1..=ops {
        let lpn = Lpn(if rng.random_bool(0.5) { rng.random_range(0..n / 8) } else { rng.random_range(0..n) });
        match rng.random_range(0..100u32) {
            0..60 => {
                if let Err(e) = ftl.write(lpn, &mut |_| {}) {
                    violation = Some(e.to_string());
                    break;
                }
                writes += 1;
            }
            60..75 => {
                ftl.trim(lpn);
                trims += 1;
            }
            _ => {
                ftl.check_read(lpn);
                reads += 1;
            }
        }
        if i % 10_000_000 == 0 || i == ops {
            if let Err(e) = ftl.verify() {
                violation = Some(format!("after {i} operations: {e}"));
                break;
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let found = ftl.integrity_counts().unwrap_or_default();
    let c = ftl.counters();
    let done = writes + trims + reads;
    println!("{done} operations ({writes} writes, {trims} trims, {reads} reads) in {secs:.1} s, {:.2} M ops/s", done as f64 / secs / 1e6);
    println!("GC: {} victims, {} units moved, {} erases, WAF {:.3}", c.gc_victims, c.gc_writes, c.erases, c.waf());
    println!("reads checked {}: lost {}, stale {}, duplicated {}; invariants: {}", found.checked, found.lost, found.stale, found.duplicated, violation.as_deref().unwrap_or("ok"));
    if violation.is_some() || found.lost + found.stale + found.duplicated > 0 {
        std::process::exit(1);
    }
}
