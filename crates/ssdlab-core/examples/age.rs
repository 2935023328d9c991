//! Measures functional preconditioning speed: `cargo run --release --example age -- GIB OP`.
use ssdlab_core::config::units::Bytes;
use ssdlab_core::ftl::{Ftl, FtlConfig};
use ssdlab_core::media::NandConfig;
fn main() {
    let gib: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(16);
    let op: f64 = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(0.07);
    let bpp = gib * 1024 / 4 / 64;
    let nand = NandConfig { blocks_per_plane: bpp, page_size: Bytes(16384), pages_per_block: 256, ..NandConfig::default() };
    let mut ftl = Ftl::new(&nand, &FtlConfig { op_ratio: op, ..FtlConfig::default() }, 1).unwrap();
    let t = std::time::Instant::now();
    let (dw, waf) = ftl.age(0.0, 1).unwrap();
    let c = ftl.counters();
    let total = t.elapsed().as_secs_f64();
    println!("{gib} GiB raw, op {op}: aged {dw:.2} DW to WAF {waf:.2} in {total:.2}s ({:.1} ns per unit write)", total * 1e9 / (c.host_writes + c.gc_writes) as f64);
}
