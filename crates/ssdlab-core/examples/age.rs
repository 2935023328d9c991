//! Measures aged preconditioning: `cargo run --release -p ssdlab-core --example age -- GIB OP [simulate|replica|auto] [REPLICA_BLOCKS]`.
//! The drive is 8 channels x 4 ways x 2 planes with 4 MiB blocks (256 x 16 KiB pages).
use ssdlab_core::ftl::{Ftl, FtlConfig};
use ssdlab_core::media::NandConfig;
use ssdlab_core::units::Bytes;

fn main() {
    let mut args = std::env::args().skip(1);
    let gib: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(16);
    let op: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0.07);
    let aging = args.next().and_then(|a| a.parse().ok()).unwrap_or(ssdlab_core::ftl::Aging::Auto);
    let replica = args.next().and_then(|a| a.parse().ok()).unwrap_or(FtlConfig::default().aging_replica_blocks);
    let nand = NandConfig { blocks_per_plane: gib * 1024 / 4 / 64, page_size: Bytes(16384), pages_per_block: 256, ..NandConfig::default() };
    let mut ftl = Ftl::new(&nand, &FtlConfig { op_ratio: op, aging, aging_replica_blocks: replica, ..FtlConfig::default() }, 1).unwrap();
    let t = std::time::Instant::now();
    let (dw, waf) = ftl.precondition_aged(0.0, 1).unwrap();
    println!("{gib} GiB raw, op {op}, aging {aging}: {dw:.2} drive writes to WAF {waf:.2}, valid fraction {:.3}, in {:.2} s", ftl.full_valid_fraction(), t.elapsed().as_secs_f64());
}
