//! The FTL: integrity under random operations, and WAF against the analytic model.

use rand::{RngExt, SeedableRng};
use ssdlab_core::config::units::Bytes;
use ssdlab_core::ftl::{Ftl, FtlConfig, Victim};
use ssdlab_core::media::NandConfig;

fn nand(blocks_per_plane: u32, pages: u32, page: u64) -> NandConfig {
    NandConfig { channels: 2, ways: 2, dies_per_chip: 1, planes: 2, blocks_per_plane, pages_per_block: pages, page_size: Bytes(page), ..NandConfig::default() }
}

#[test]
fn shadow_map_holds_over_a_million_random_operations_with_gc() {
    // 8 planes x 64 blocks x 32 pages x 16 KiB, 4 KiB units: 65536 slots, 10 % spare. Small
    // enough that GC runs constantly; 16 KiB pages pack four units, so partial-page state is
    // exercised too.
    for policy in [Victim::Greedy, Victim::CostBenefit, Victim::Random] {
        let cfg = FtlConfig { op_ratio: 0.10, gc_policy: policy, wl_threshold: 4, ..FtlConfig::default() };
        let mut ftl = Ftl::new(&nand(64, 32, 16384), &cfg, 5).unwrap();
        ftl.enable_integrity();
        let n = ftl.exported_units();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
        let ops = if policy == Victim::Greedy { 1_000_000 } else { 200_000 };
        let (mut reads, mut trims) = (0u64, 0u64);
        for i in 0..ops {
            // Skewed: half the operations hit the first eighth of the space.
            let lpn = if rng.random_bool(0.5) { rng.random_range(0..n / 8) } else { rng.random_range(0..n) };
            match rng.random_range(0..100) {
                0..=69 => ftl.write(lpn, &mut |_| {}).unwrap(),
                70..=79 => {
                    ftl.trim(lpn);
                    trims += 1;
                }
                _ => {
                    if let Some(slot) = ftl.lookup(lpn) {
                        let (block, page) = ftl.locate(slot);
                        assert!(block < ftl.geometry().blocks() && page < ftl.geometry().pages_per_block);
                        reads += 1;
                    }
                }
            }
            if i % 250_000 == 249_999 {
                ftl.verify().unwrap_or_else(|e| panic!("{policy} after {i} ops: {e}"));
            }
        }
        ftl.verify().unwrap_or_else(|e| panic!("{policy}: {e}"));
        let c = ftl.counters();
        assert!(c.gc_victims > 500 && c.erases == c.gc_victims, "{policy}: GC ran: {c:?}");
        assert!(reads > 0 && trims > 0 && c.trims > 0);
    }
}

/// Desnoyers, "Analytic modeling of SSD write performance", SYSTOR 2012: under uniform random
/// writes with LRW (FIFO) cleaning, a victim's valid fraction x solves x = exp(-α(1 - x)),
/// α = physical / user space, and WAF = 1 / (1 - x). Bux & Iliadis, "Performance of greedy
/// garbage collection in flash-based SSDs", Perf. Eval. 67(11), 2010, show greedy's WAF rises
/// with pages per block towards this bound; with 128 pages per block it sits just below it.
///
/// α counts only space GC can use: the raw space less the free-block reserve (between the
/// trigger and reclaim thresholds) and the unwritten half of the open blocks (one per plane per
/// stream, half full on average).
fn waf_model(raw_blocks: f64, exported_blocks: f64, reserve_blocks: f64) -> f64 {
    let alpha = (raw_blocks - reserve_blocks) / exported_blocks;
    let mut x = 0.5;
    for _ in 0..10_000 {
        x = (-alpha * (1.0 - x)).exp();
    }
    1.0 / (1.0 - x)
}

#[test]
fn steady_state_greedy_waf_matches_the_analytic_model() {
    for op in [0.07, 0.125, 0.28] {
        // 8 planes x 256 blocks x 128 pages, one 4 KiB unit per page: 262144 slots (1 GiB).
        let cfg = FtlConfig { op_ratio: op, gc_trigger: 0.005, gc_reclaim: 0.006, ..FtlConfig::default() };
        let mut ftl = Ftl::new(&nand(256, 128, 4096), &cfg, 3).unwrap();
        ftl.age(3.0, 9).unwrap();
        ftl.reset_counters();
        let n = ftl.exported_units();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(21);
        for _ in 0..2 * n {
            ftl.write(rng.random_range(0..n), &mut |_| {}).unwrap();
        }
        let waf = ftl.counters().waf();
        let g = ftl.geometry();
        let blocks = f64::from(g.blocks());
        let reserve = (blocks * 0.005).ceil() / 2.0 + (blocks * 0.006).ceil() / 2.0 + f64::from(g.all_planes());
        let model = waf_model(blocks, n as f64 / f64::from(g.slots_per_block()), reserve);
        assert!((waf / model - 1.0).abs() < 0.10, "OP {op}: greedy WAF {waf:.3}, model {model:.3}");
        assert!(waf <= model * 1.01, "OP {op}: greedy should not exceed the LRW bound ({waf:.3} > {model:.3})");
    }
}

#[test]
fn waf_is_one_without_overwrites_and_trim_frees_space() {
    let mut ftl = Ftl::new(&nand(64, 32, 4096), &FtlConfig { op_ratio: 0.2, ..FtlConfig::default() }, 1).unwrap();
    ftl.fill_sequential().unwrap();
    assert_eq!(ftl.counters().gc_writes, 0, "WAF is exactly 1");
    assert_eq!(ftl.mapped_units(), ftl.exported_units());
    // Trimming everything and rewriting costs no GC copies: every victim is empty.
    for lpn in 0..ftl.exported_units() {
        ftl.trim(lpn);
    }
    ftl.reset_counters();
    ftl.fill_sequential().unwrap();
    assert_eq!(ftl.counters().gc_writes, 0);
    ftl.verify().unwrap();
}

#[test]
fn static_wear_levelling_narrows_the_erase_spread() {
    // Hot/cold: 90 % of writes to 10 % of the space; cold blocks never get erased without WL.
    let spread = |wl: u32| {
        let mut ftl = Ftl::new(&nand(64, 32, 4096), &FtlConfig { op_ratio: 0.15, wl_threshold: wl, ..FtlConfig::default() }, 1).unwrap();
        ftl.fill_sequential().unwrap();
        let n = ftl.exported_units();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(2);
        for _ in 0..20 * n {
            let lpn = if rng.random_bool(0.9) { rng.random_range(0..n / 10) } else { rng.random_range(0..n) };
            ftl.write(lpn, &mut |_| {}).unwrap();
        }
        ftl.verify().unwrap();
        let (min, max, _) = ftl.erase_spread();
        max - min
    };
    let (off, on) = (spread(0), spread(8));
    assert!(on * 2 < off, "spread with WL {on}, without {off}");
}

#[test]
fn replica_aging_builds_the_same_steady_state_as_simulated_aging() {
    use ssdlab_core::ftl::Aging;
    // 8 planes x 1024 blocks x 64 pages of 4 KiB: 8192 blocks, aged through a 2048-block replica.
    let nand_cfg = nand(1024, 64, 4096);
    let after = |aging: Aging| {
        let cfg = FtlConfig { op_ratio: 0.1, aging, aging_replica_blocks: 2048, ..FtlConfig::default() };
        let mut ftl = Ftl::new(&nand_cfg, &cfg, 3).unwrap();
        if aging == Aging::Replica {
            ftl.enable_integrity();
        }
        ftl.precondition_aged(0.0, 4).unwrap();
        if aging == Aging::Replica {
            ftl.verify().unwrap_or_else(|e| panic!("replica-built state: {e}"));
            assert_eq!(ftl.mapped_units(), ftl.exported_units(), "every logical page is mapped once");
        }
        let valid = ftl.full_valid_fraction();
        ftl.reset_counters();
        let n = ftl.exported_units();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(8);
        for _ in 0..n / 2 {
            ftl.write(rng.random_range(0..n), &mut |_| {}).unwrap();
        }
        if aging == Aging::Replica {
            ftl.verify().unwrap();
        }
        (ftl.counters().waf(), valid)
    };
    let (waf_sim, valid_sim) = after(Aging::Simulate);
    let (waf_rep, valid_rep) = after(Aging::Replica);
    assert!((waf_rep / waf_sim - 1.0).abs() < 0.05, "WAF after replica aging {waf_rep}, after simulated aging {waf_sim}");
    assert!((valid_rep - valid_sim).abs() < 0.01, "valid fraction {valid_rep} vs {valid_sim}");
}
