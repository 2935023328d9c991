//! The regression corpus: every input that ever failed, under `tests/fuzz-corpus/<target>/`,
//! fed to its target's check (no panic, and `Ok` or a clean error).

use std::path::Path;

use ssdlab_core::trace::Format;

use crate::engine::Verdict;

/// A target's check of one input.
type Check = Box<dyn Fn(&[u8]) -> Verdict>;

fn check_for(target: &str) -> Option<Check> {
    Some(match target {
        "config-toml" => Box::new(crate::config::check_toml),
        "config-set" => Box::new(crate::config::check_set),
        "trace-detect" => Box::new(crate::trace::check_detect),
        "trace-parquet" => Box::new(crate::trace::check_parquet),
        "atc-text" => Box::new(crate::atc::check_text),
        "atc-raw" => Box::new(crate::atc::check_raw),
        "sim" => Box::new(crate::sim::check),
        t => {
            let format: Format = t.strip_prefix("trace-")?.parse().ok()?;
            Box::new(move |i| crate::trace::check_format(format, i))
        }
    })
}

#[test]
fn corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus");
    let mut n = 0;
    for dir in std::fs::read_dir(&root).expect("tests/fuzz-corpus").map(|d| d.expect("a corpus entry").path()).filter(|d| d.is_dir()) {
        let target = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let check = check_for(&target).unwrap_or_else(|| panic!("{}: no fuzz target by that name", dir.display()));
        for file in std::fs::read_dir(&dir).expect("a corpus directory").map(|f| f.expect("a corpus file").path()) {
            if file.extension().is_some_and(|e| e == "md") {
                continue;
            }
            let input = std::fs::read(&file).expect("a corpus file");
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&input)));
            assert!(result.is_ok(), "{}: {target} panicked", file.display());
            n += 1;
        }
    }
    eprintln!("fuzz corpus: {n} inputs");
    assert!(n > 0, "the corpus is empty");
}
