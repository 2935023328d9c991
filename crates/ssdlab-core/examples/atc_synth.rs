//! Prints hit rates of a synthesised Linux-like stream: `cargo run --release --example atc_synth`.
use ssdlab_core::ats::synth::{self, Synth};
use ssdlab_core::ats::{run_study, Assoc, Policy, Study};
fn main() {
    let syn = Synth { ios: 200_000, queues: std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(8), ..Synth::default() };
    eprintln!("rings {:x?}", synth::ring_ranges(&syn));
    eprintln!("first {:x?}", synth::stream(&syn).take(6).collect::<Vec<_>>());
    let pins: Vec<(u64, u64)> = synth::ring_ranges(&syn).into_iter().map(|(_, s, e)| (s, e)).collect();
    let s = Study { stus: vec![9], policies: vec![Policy::Lru, Policy::Fifo, Policy::Random, Policy::Opt], assocs: vec![Assoc::Full, Assoc::Ways(4)], lines: vec![1, 2, 4, 8, 16, 32, 64, 128], pin_ranges: pins, pin_tagged: false, pin_dedicated: std::env::args().nth(2).is_some(), seed: 1 };
    let t = std::time::Instant::now();
    let points = run_study(&s, || Ok(synth::stream(&syn).map(Ok))).unwrap();
    eprintln!("{} points in {:.2}s", points.len(), t.elapsed().as_secs_f64());
    for pinned in [false, true] { for ways in ["full", "4"] { for p in [Policy::Lru, Policy::Fifo, Policy::Random, Policy::Opt] {
        let row: Vec<String> = points.iter().filter(|x| x.policy == p && x.pinned == pinned && ((ways == "full") == (x.sets == 1)) && (ways == "full" || x.ways == 4)).map(|x| format!("{:>3}:{:.3}", x.lines, x.hit_rate)).collect();
        println!("pinned={pinned:<5} {ways:>4} {:>6} {}", p.as_str(), row.join(" "));
    }}}
}
