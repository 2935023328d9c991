//! The machine's memory as the simulator meets it: the time of a random 8-byte load from an
//! array of each size, one waiting on the one before (a chase through a random cycle of cache
//! lines: the latency) and all independent (random places from a generator: as many in flight
//! as the core allows). A speed sitting quotes these beside its figures, because what a
//! simulated write costs on an aged drive is mostly loads from maps of tens of MiB.
//!
//! `cargo bench -p ssdlab-core --bench memlat [-- MiB...]` (default 1 2 8 32 128 MiB; arguments
//! that are not sizes are another bench's filter, and this one does nothing). The last
//! column is the process's memory in transparent huge pages while the array lives: 0 unless
//! the kernel's setting is `always` (the simulator asks for none).

use std::hint::black_box;
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;

/// Loads timed per array and mode.
const LOADS: usize = 20_000_000;
/// 8-byte words in a 64-byte line.
const LINE: usize = 8;

fn main() {
    // cargo passes `--bench`, and any filter meant for the scenarios of `benches/sim.rs`
    // (`cargo bench -p ssdlab-core -- qd32`) reaches this binary too: it runs only when every
    // other argument is a size.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let Ok(sizes) = args.iter().map(|a| a.parse::<usize>()).collect::<Result<Vec<_>, _>>() else { return };
    let sizes: Vec<usize> = if sizes.is_empty() { vec![1, 2, 8, 32, 128] } else { sizes.into_iter().filter(|&m| m > 0).collect() };
    println!("{:>8} {:>14} {:>16} {:>16}", "MiB", "chase ns/load", "independent ns", "huge pages MiB");
    for mib in sizes {
        let (chase, independent, huge) = measure(mib);
        println!("{mib:>8} {chase:>14.1} {independent:>16.2} {huge:>16}");
    }
}

/// The process's anonymous memory in transparent huge pages, in MiB (0 where unknown).
fn huge_mib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    let kib = s.lines().find_map(|l| l.strip_prefix("AnonHugePages:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    kib.unwrap_or(0) >> 10
}

/// Nanoseconds a load, chased and independent, over an array of `mib` MiB, and the MiB of
/// huge pages while the array lives.
fn measure(mib: usize) -> (f64, f64, u64) {
    let words = (mib << 20) / 8;
    let lines = words / LINE;
    // Each line's first word names the next line of a random cycle through all of them.
    let mut order: Vec<usize> = (0..lines).collect();
    order.shuffle(&mut rand_pcg::Pcg64Mcg::seed_from_u64(1));
    let mut a = vec![0u64; words];
    for (i, &l) in order.iter().enumerate() {
        a[l * LINE] = (order[(i + 1) % lines] * LINE) as u64;
    }
    let t = Instant::now();
    let mut x = 0u64;
    for _ in 0..LOADS {
        x = a[x as usize];
    }
    black_box(x);
    let chase = t.elapsed().as_secs_f64() / LOADS as f64 * 1e9;
    let t = Instant::now();
    let (mut s, mut sum) = (0x9e37_79b9_7f4a_7c15u64, 0u64);
    for _ in 0..LOADS {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        sum = sum.wrapping_add(a[(s % lines as u64) as usize * LINE]);
    }
    black_box(sum);
    let independent = t.elapsed().as_secs_f64() / LOADS as f64 * 1e9;
    (chase, independent, huge_mib())
}
