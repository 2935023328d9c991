//! `cargo run --release -p ssdlab-core --example trace_stats -- FILE [FORMAT]`: one pass of
//! `ssdlab trace stats` without Python, with lines per wall second.

use std::path::Path;
use std::time::Instant;

use ssdlab_core::trace::{stats::stats_file, ReadOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: trace_stats FILE [FORMAT]")?;
    let opts = ReadOptions { format: args.get(2).map(|f| f.parse()).transpose()?, ..ReadOptions::default() };
    let t = Instant::now();
    let (format, sum) = stats_file(Path::new(path), &opts, 5, |_| true)?;
    let wall = t.elapsed().as_secs_f64();
    println!("{}", serde_json::to_string_pretty(&sum)?);
    eprintln!("{path} ({format}): {} lines in {wall:.2} s = {:.2} M lines/s", sum.lines, sum.lines as f64 / wall / 1e6);
    Ok(())
}
