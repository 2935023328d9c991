//! Fuzzing harness on stable Rust: a mutation fuzzer seeded from real inputs, one target per
//! parser, one for the simulation on small random configs, and the regression corpus.
//!
//! Fuzzed: config TOML loading with validation (mutated presets) and `key=value` overrides;
//! every block-trace text format read with its own parser, strict and lenient; format
//! detection through compressed files (gzip, bzip2, zstd; garbage behind xz's magic); the
//! canonical Parquet; ATC address traces, text and raw; the simulation on small random valid
//! configs (no panic, same config and seed give the same summary, I/Os completed = I/Os
//! issued). The property of every parser target: each input ends in `Ok` or a clean `Err`,
//! with no panic, no abort on memory and no hang.
//!
//! Not fuzzed here: trace statistics (`trace stats`, whose memory bound is separate work),
//! the Python job-file parser (`tests/fuzz_fiojob.py` at the repository root), and the
//! command line. Memory is bounded by keeping inputs under 64 KiB, not by measurement.
//!
//! `cargo test --test fuzz` runs a short budget; `SSDLAB_FUZZ_CASES=1000000 cargo test --test fuzz
//! -- --nocapture` a long one (`SSDLAB_FUZZ_SIM_CASES` for the simulation). Each target prints
//! its count, the accepted/rejected split and the wall time. Every input that ever failed
//! lives in `tests/fuzz-corpus/<target>/` and is replayed by [`corpus`].
#![allow(clippy::missing_panics_doc)]

mod atc;
mod config;
mod corpus;
mod engine;
mod sim;
mod trace;

use std::path::{Path, PathBuf};

/// Cases per parser target when `SSDLAB_FUZZ_CASES` is not set.
pub const SHORT: u64 = 3000;

/// A file of `../shared/data` beside the repository, if it is there (its samples seed the
/// fuzzers; without them the fuzzers start from their own corpus only, and say so, unless
/// `SSDLAB_REQUIRE_SHARED=1`, which makes a missing sample a failure).
pub fn shared(rel: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data").join(rel);
    if p.exists() {
        return Some(p);
    }
    assert!(std::env::var("SSDLAB_REQUIRE_SHARED").as_deref() != Ok("1"), "{} is missing: SSDLAB_REQUIRE_SHARED=1 requires ../shared beside the repository", p.display());
    eprintln!("SKIPPED seed: {} is not beside the repository", p.display());
    None
}
