//! `cargo run --release -p ssdlab-core --example gen_trace -- LINES > FILE`: a synthetic MQSim
//! ASCII trace (random 4-128 KiB requests over 1 TiB, 70 % reads, 8 devices) for measuring
//! trace-reading speed and memory.

use std::io::{BufWriter, Write};

use rand::{RngExt, SeedableRng};

fn main() -> std::io::Result<()> {
    let n: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let mut t: u64 = 0;
    for _ in 0..n {
        t += rng.random_range(0..20_000u64);
        let dev = rng.random_range(0..8u32);
        let sectors = 8u64 << rng.random_range(0..6u32);
        let lba = rng.random_range(0..(1u64 << 31) / sectors) * sectors;
        let op = u8::from(rng.random_range(0..10u32) < 7);
        writeln!(out, "{t} {dev} {lba} {sectors} {op}")?;
    }
    out.flush()
}
