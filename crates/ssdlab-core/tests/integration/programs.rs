//! Programs beyond a page's own tPROG, each deciding a sequential-write figure: one-shot
//! programming of a word line, and a power budget on programs running at once.

use ssdlab_core::Simulation;

use super::config_from;

/// The `tlc` drive, clean (no GC), writing 128 KiB sequentially at 4 x QD8 long enough for the
/// write buffer to fill: what is counted is the rate the dies drain it at, in B/s.
fn seq_write(settings: &[(&str, &str)]) -> (f64, f64) {
    let mut all = vec![
        ("ftl.precondition", "\"clean\""),
        ("workload.rw", "\"write\""),
        ("workload.bs", "\"128KiB\""),
        ("workload.numjobs", "4"),
        ("workload.iodepth", "8"),
        ("workload.ramp_time", "\"60ms\""),
        ("workload.runtime", "\"260ms\""),
        // Whole word lines per block (one-shot programs them whole).
        ("media.nand.pages_per_block", "192"),
    ];
    all.extend_from_slice(settings);
    let s = Simulation::new(config_from(Some("tlc"), &all)).unwrap().run().unwrap();
    (s.write.bandwidth_mib_s * 1_048_576.0, s.metrics.get("nand.power_waits").copied().unwrap_or(0.0))
}

// The tlc preset: 32 dies of 2 planes, 16 KiB pages, TLC programs of 820.5 + 2225 + 5734 us,
// 800 MB/s x8 channels with 100 ns of command cycles. A die programs one word line of each
// plane (3 pages x 2 planes = 96 KiB) after moving each page pair in over its channel
// (2 x 16 KiB at 800 MB/s + 100 ns = 41.06 us, the die busy meanwhile).
const DIES: f64 = 32.0;
const WORD_LINES: f64 = 3.0 * 2.0 * 16384.0;
const DATA_IN_US: f64 = 0.1 + 2.0 * 16384.0 / 800.0;

fn die_bound(array_us: f64) -> f64 {
    DIES * WORD_LINES / ((3.0 * DATA_IN_US + array_us) * 1e-6)
}

#[test]
fn one_shot_programming_sets_the_sequential_write_rate() {
    let (paged, _) = seq_write(&[]);
    let want = die_bound(820.5 + 2225.0 + 5734.0);
    assert!((paged / want - 1.0).abs() < 0.03, "page by page: {paged:.4e} B/s, dies allow {want:.4e}");
    let (one_shot, _) = seq_write(&[("media.nand.one_shot_program", "\"2ms\"")]);
    let want = die_bound(2000.0);
    assert!((one_shot / want - 1.0).abs() < 0.03, "one-shot: {one_shot:.4e} B/s, dies allow {want:.4e}");
}

#[test]
fn a_power_budget_caps_the_dies_programming_at_once() {
    let (free, waits) = seq_write(&[("media.nand.one_shot_program", "\"2ms\"")]);
    assert_eq!(waits, 0.0, "no budget, no waits");
    // A quarter of the dies may program at once: a quarter of the rate (each program holds
    // its slot through its data-in and its array time).
    let (capped, waits) = seq_write(&[("media.nand.one_shot_program", "\"2ms\""), ("media.nand.max_active_programs", "8")]);
    assert!(waits > 0.0);
    assert!((capped / free - 0.25).abs() < 0.01, "8 of 32 dies: {capped:.4e} of {free:.4e} B/s");
}
