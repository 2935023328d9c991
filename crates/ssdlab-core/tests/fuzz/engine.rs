//! The mutation engine: deterministic per-case inputs, a panic catcher that saves the input,
//! and the budget read from the environment.
//!
//! Case `i` of a run with seed `s` is generated from its own generator seeded with `(s, i)`, so
//! one case replays without the ones before it (`SSDLAB_FUZZ_SEED=s SSDLAB_FUZZ_CASE=i`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

pub type Rng = Pcg64Mcg;

/// Inputs longer than this are cut (keeps each case fast; length bugs show at this size too).
pub const MAX_INPUT: usize = 64 << 10;

/// Numbers that sit on the edges parsers get wrong.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "-0",
    "00",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "0.5",
    "1.",
    ".5",
    "1e308",
    "1e-308",
    "nan",
    "inf",
    "-inf",
    "0x10",
    "0xffffffffffffffff",
    "0x1_0000_0000_0000_0000",
    "1_000",
    "",
];

/// Single bytes that separate, quote, comment or break fields.
const CHARS: &[u8] = b",. \n\t#-0123456789xX:\"'[]={}_\r\0\xff";

/// Tokens of every format fuzzed here: the engine splices them in anywhere, so the detection of
/// one format meets the keywords of the others.
const TOKENS: &[&str] = &[
    ",",
    " ",
    "\t",
    "\n",
    "\r\n",
    "#",
    ";",
    ".",
    "+",
    "-",
    ":",
    "=",
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    "[[",
    "]]",
    "\\",
    "\\u0000",
    "Read",
    "Write",
    "R",
    "W",
    "hm",
    "fio version 2 iolog",
    "fio version 3 iolog",
    "add",
    "open",
    "close",
    "read",
    "write",
    "trim",
    "sync",
    "datasync",
    "wait",
    "Q",
    "D",
    "C",
    "FWFS",
    "RS",
    "WS",
    "CPU0 (nvme0n1):",
    "Total (nvme0n1):",
    "Input file",
    "8,0",
    "259,0",
    "addr",
    "size",
    "pasid",
    "kind",
    "sq",
    "cq",
    "pin",
    "PAR1",
    "true",
    "false",
    "extends",
    "default",
    "4k",
    "1MiB",
    "1GiB",
    "16EiB",
    "48ns",
    "1.5us",
    "3.2GB/s",
    "800MHz",
    "16GT/s",
    "zipf:1.1",
    "randrw",
    "\u{e9}",
    "\u{1F600}",
    "\u{FEFF}",
    "\u{0}",
    "\u{7f}",
];

/// How many cases to run: `SSDLAB_FUZZ_CASES` (every parser target) or `SSDLAB_FUZZ_SIM_CASES`
/// (the simulation target) if set, else the short default.
pub fn cases(var: &str, default: u64) -> u64 {
    match std::env::var(var) {
        Ok(v) => v.parse().unwrap_or_else(|_| panic!("{var}={v:?} is not a whole number")),
        Err(_) => default,
    }
}

/// Cases per parser target: `SSDLAB_FUZZ_CASES`, else the short budget.
pub fn parser_cases() -> u64 {
    cases("SSDLAB_FUZZ_CASES", crate::SHORT)
}

/// `SSDLAB_FUZZ_SEED`, else a fixed seed (CI runs the same cases every time).
fn seed() -> u64 {
    std::env::var("SSDLAB_FUZZ_SEED").map_or(0x5eed_0016, |v| v.parse().unwrap_or_else(|_| panic!("SSDLAB_FUZZ_SEED={v:?} is not a whole number")))
}

/// Inputs of one target: seed texts cut into lines, and how many lines a case takes at most.
pub struct Seeds {
    files: Vec<Vec<Vec<u8>>>,
    max_lines: usize,
}

impl Seeds {
    /// `max_lines == usize::MAX` takes whole files (TOML, binary formats).
    pub fn new(files: impl IntoIterator<Item = Vec<u8>>, max_lines: usize) -> Self {
        let files: Vec<Vec<Vec<u8>>> = files.into_iter().filter(|f| !f.is_empty()).map(|f| f.split_inclusive(|&c| c == b'\n').map(<[u8]>::to_vec).collect()).collect();
        assert!(!files.is_empty(), "a fuzz target needs at least one seed");
        Seeds { files, max_lines }
    }

    fn line<'a>(&'a self, rng: &mut Rng) -> &'a [u8] {
        let f = &self.files[rng.random_range(0..self.files.len())];
        &f[rng.random_range(0..f.len())]
    }

    /// A window of a seed with 1 to 8 mutations.
    pub fn mutate(&self, rng: &mut Rng) -> Vec<u8> {
        let f = &self.files[rng.random_range(0..self.files.len())];
        let (start, n) = if self.max_lines >= f.len() { (0, f.len()) } else { (rng.random_range(0..f.len()), rng.random_range(1..=self.max_lines)) };
        let mut v: Vec<u8> = f[start..(start + n).min(f.len())].concat();
        for _ in 0..rng.random_range(1..=8) {
            self.mutate_once(&mut v, rng);
        }
        v.truncate(MAX_INPUT);
        v
    }

    /// One to four mutations of `v` in place.
    pub fn damage(&self, v: &mut Vec<u8>, rng: &mut Rng) {
        for _ in 0..rng.random_range(1..=4) {
            self.mutate_once(v, rng);
        }
    }

    fn mutate_once(&self, v: &mut Vec<u8>, rng: &mut Rng) {
        let pos = |rng: &mut Rng, v: &Vec<u8>| rng.random_range(0..=v.len());
        match rng.random_range(0..10) {
            0 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] = rng.random();
            }
            2 | 3 => {
                let t = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
                let i = pos(rng, v);
                v.splice(i..i, t.iter().copied());
            }
            4 => {
                let n = NUMBERS[rng.random_range(0..NUMBERS.len())].as_bytes();
                // Replace a run of digits if there is one at a random point, else insert.
                let i = pos(rng, v);
                let end = v[i..].iter().position(|c| !c.is_ascii_digit()).map_or(v.len(), |k| i + k);
                v.splice(i..end, n.iter().copied());
            }
            5 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                let end = (i + rng.random_range(1..=16)).min(v.len());
                v.drain(i..end);
            }
            6 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                let end = (i + rng.random_range(1..=64)).min(v.len());
                let copy = v[i..end].to_vec();
                let at = pos(rng, v);
                v.splice(at..at, copy);
            }
            7 => {
                let l = self.line(rng).to_vec();
                let at = pos(rng, v);
                v.splice(at..at, l);
            }
            8 if !v.is_empty() => v.truncate(rng.random_range(0..v.len())),
            _ => {
                let i = pos(rng, v);
                v.insert(i, CHARS[rng.random_range(0..CHARS.len())]);
            }
        }
    }
}

/// What a target's check said of one input.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Verdict {
    /// The parser accepted it.
    Accepted,
    /// The parser returned a clean error.
    Rejected,
}

/// Runs `cases` inputs made by `make` through `check`. A panic in `check` saves the input under
/// the target's scratch dir and fails with the replay command; the count, the split and the
/// wall time are printed (`-- --nocapture` shows them).
pub fn run(target: &str, cases: u64, make: impl Fn(&mut Rng) -> Vec<u8>, check: impl Fn(&[u8]) -> Verdict) {
    let seed = seed();
    let only: Option<u64> = std::env::var("SSDLAB_FUZZ_CASE").ok().map(|v| v.parse().expect("SSDLAB_FUZZ_CASE is a case number"));
    let (done, current) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let watchdog = watch(target, seed, Arc::clone(&done), Arc::clone(&current));
    let t = Instant::now();
    let mut accepted = 0u64;
    let range = only.map_or(0..cases, |i| i..i + 1);
    let n = range.end - range.start;
    for i in range {
        current.store(i, Ordering::Relaxed);
        let mut rng = Rng::seed_from_u64(seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let input = make(&mut rng);
        match catch_unwind(AssertUnwindSafe(|| check(&input))) {
            Ok(Verdict::Accepted) => accepted += 1,
            Ok(Verdict::Rejected) => {}
            Err(e) => {
                let msg = e.downcast_ref::<String>().map(String::as_str).or_else(|| e.downcast_ref::<&str>().copied()).unwrap_or("?");
                let path = save(target, i, &input);
                done.store(true, Ordering::Relaxed);
                panic!(
                    "fuzz target {target}: case {i} panicked: {msg}\ninput saved to {} (add it to tests/fuzz-corpus/{target}/)\nreplay: SSDLAB_FUZZ_SEED={seed} SSDLAB_FUZZ_CASE={i} cargo test --test fuzz {target} -- --exact",
                    path.display()
                );
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    watchdog.thread().unpark();
    let _ = watchdog.join();
    let wall = t.elapsed().as_secs_f64();
    eprintln!("fuzz {target}: {n} inputs ({accepted} accepted, {} rejected) in {wall:.1} s ({:.0}/s), seed {seed}", n - accepted, n as f64 / wall.max(1e-9));
}

/// Saves a failing input where `cargo test` keeps scratch files.
fn save(target: &str, case: u64, input: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures").join(target);
    let path = dir.join(format!("case-{case}"));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, input)) {
        eprintln!("could not save the failing input to {}: {e}", path.display());
    }
    path
}

/// Names the case that has run for a minute (a hang cannot be caught, only reported); it
/// never fails the test.
fn watch(target: &str, seed: u64, done: Arc<AtomicBool>, current: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    let target = target.to_string();
    std::thread::spawn(move || {
        let (mut last, mut since) = (u64::MAX, Instant::now());
        while !done.load(Ordering::Relaxed) {
            std::thread::park_timeout(Duration::from_secs(5));
            let now = current.load(Ordering::Relaxed);
            if now != last {
                (last, since) = (now, Instant::now());
            } else if since.elapsed().as_secs() >= 60 {
                eprintln!("fuzz {target}: case {now} has run for a minute; replay: SSDLAB_FUZZ_SEED={seed} SSDLAB_FUZZ_CASE={now}");
                since = Instant::now();
            }
        }
    })
}

/// A scratch file per thread for targets whose parser reads a path.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir.join(name)
}
