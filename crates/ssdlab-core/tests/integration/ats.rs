//! The ATC study: one-pass curves against per-size simulation and straightforward references.

use std::collections::{HashSet, VecDeque};

use rand::{RngExt, SeedableRng};
use ssdlab_core::ats::sim::CacheSim;
use ssdlab_core::ats::synth::{self, Synth};
use ssdlab_core::ats::{curve, run_study, Access, Assoc, Point, Policy, Study};

/// Random, looping and zipf-like key streams over `n` keys.
fn traces() -> Vec<Vec<u32>> {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
    let uniform: Vec<u32> = (0..20_000).map(|_| rng.random_range(0..300)).collect();
    let looping: Vec<u32> = (0..20_000).map(|i| (i % 97) as u32).collect();
    let skewed: Vec<u32> = (0..20_000).map(|_| (rng.random_range(0.0f64..1.0).powi(4) * 2000.0) as u32).collect();
    let mut phases = Vec::new();
    for p in 0..10u32 {
        for _ in 0..2000 {
            phases.push(p * 50 + rng.random_range(0..80));
        }
    }
    vec![uniform, looping, skewed, phases]
}

fn naive_lru(trace: &[u32], lines: usize) -> u64 {
    let mut q: VecDeque<u32> = VecDeque::new();
    let mut hits = 0;
    for &k in trace {
        if let Some(i) = q.iter().position(|&x| x == k) {
            hits += 1;
            q.remove(i);
        } else if q.len() == lines {
            q.pop_back();
        }
        q.push_front(k);
    }
    hits
}

fn naive_fifo(trace: &[u32], lines: usize) -> u64 {
    let mut q: VecDeque<u32> = VecDeque::new();
    let mut set = HashSet::new();
    let mut hits = 0;
    for &k in trace {
        if set.contains(&k) {
            hits += 1;
            continue;
        }
        if q.len() == lines {
            set.remove(&q.pop_front().unwrap());
        }
        q.push_back(k);
        set.insert(k);
    }
    hits
}

fn sim_hits(policy: Policy, sets: usize, ways: usize, trace: &[u32], next: Option<&[u64]>) -> u64 {
    let mut s = CacheSim::new(policy, sets, ways, &[], 1);
    for (i, &k) in trace.iter().enumerate() {
        s.access(k, u64::from(k), next.map_or(u64::MAX, |n| n[i]));
    }
    s.hits
}

#[test]
fn fully_associative_lru_curve_equals_simulation_and_a_naive_lru_for_every_size() {
    for t in traces() {
        let mut c = curve::FaLruCurve::new(400);
        for &k in &t {
            c.access(k);
        }
        let all = c.all_hits();
        for lines in [1usize, 2, 3, 7, 16, 31, 32, 33, 64, 97, 100, 257, 400] {
            let naive = naive_lru(&t, lines);
            assert_eq!(all[lines - 1], naive, "curve, {lines} lines");
            assert_eq!(sim_hits(Policy::Lru, 1, lines, &t, None), naive, "simulation, {lines} lines");
        }
    }
}

#[test]
fn fenwick_compaction_keeps_distances_exact() {
    // Far more accesses than the tree's initial 65536 slots, over 40000 keys.
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(4);
    let t: Vec<u32> = (0..400_000).map(|_| rng.random_range(0..40_000)).collect();
    let mut c = curve::FaLruCurve::new(60_000);
    for &k in &t {
        c.access(k);
    }
    for lines in [1000usize, 20_000, 39_999] {
        assert_eq!(c.hits(lines), sim_hits(Policy::Lru, 1, lines, &t, None), "{lines} lines");
    }
}

#[test]
fn set_associative_lru_curve_equals_per_size_simulation() {
    for t in traces() {
        let set_keys: Vec<u64> = t.iter().map(|&k| u64::from(k)).collect();
        for sets in [1usize, 4, 16, 64] {
            // Access by access (any associativity), and fed as a run (unrolled for 2-16 ways).
            let mut c = curve::SetLruCurve::new(sets, 16, vec![0; sets]);
            for &k in &t {
                c.access(u64::from(k), u64::from(k));
            }
            for ways in [1usize, 2, 4, 8, 16] {
                assert_eq!(c.hits(ways), sim_hits(Policy::Lru, sets, ways, &t, None), "{sets} sets x {ways} ways");
            }
            for max_ways in [2usize, 3, 4, 8, 16] {
                let mut fed = curve::SetLruCurve::new(sets, max_ways, vec![0; sets]);
                fed.feed(&t, &set_keys, |_| false);
                for ways in 1..=max_ways {
                    assert_eq!(fed.hits(ways), sim_hits(Policy::Lru, sets, ways, &t, None), "fed: {sets} sets x {ways} of {max_ways} ways");
                }
            }
        }
    }
}

/// A run fed at once (unrolled, the depths counted in locals) lands where the same lookups
/// one by one do, with pinned ways in some sets and lookups the caller skips.
#[test]
fn set_associative_lru_curve_fed_with_pins_and_skips_equals_access_by_access() {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(9);
    let mut compared = 0;
    for t in traces() {
        let set_keys: Vec<u64> = t.iter().map(|&k| u64::from(k).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7).collect();
        let skip = |k: u32| k % 11 == 3;
        for sets in [1usize, 4, 16] {
            for max_ways in [2usize, 3, 4, 8, 16] {
                let pinned: Vec<u16> = (0..sets).map(|_| rng.random_range(0..max_ways as u16)).collect();
                let mut one = curve::SetLruCurve::new(sets, max_ways, pinned.clone());
                for (&k, &s) in t.iter().zip(&set_keys) {
                    if !skip(k) {
                        one.access(u64::from(k), s);
                    }
                }
                let mut fed = curve::SetLruCurve::new(sets, max_ways, pinned);
                for (keys, bits) in t.chunks(1000).zip(set_keys.chunks(1000)) {
                    fed.feed(keys, bits, skip);
                }
                assert_eq!(fed.accesses(), one.accesses(), "{sets} sets x {max_ways} ways");
                compared += one.hits(max_ways);
                for ways in 1..=max_ways {
                    assert_eq!(fed.hits(ways), one.hits(ways), "{sets} sets x {ways} of {max_ways} ways");
                }
            }
        }
    }
    assert!(compared > 100_000, "too few hits to compare: {compared}");
}

#[test]
fn fifo_equals_a_naive_fifo_and_opt_is_never_worse_than_lru() {
    for t in traces() {
        let mut next = vec![u64::MAX; t.len()];
        let mut seen = std::collections::HashMap::new();
        for i in (0..t.len()).rev() {
            next[i] = *seen.get(&t[i]).unwrap_or(&u64::MAX);
            seen.insert(t[i], i as u64);
        }
        for lines in [1usize, 4, 16, 40, 64, 128] {
            assert_eq!(sim_hits(Policy::Fifo, 1, lines, &t, None), naive_fifo(&t, lines), "FIFO {lines}");
            let lru = sim_hits(Policy::Lru, 1, lines, &t, None);
            let opt = sim_hits(Policy::Opt, 1, lines, &t, Some(&next));
            assert!(opt >= lru, "OPT {opt} < LRU {lru} at {lines} lines");
            for sets in [2usize, 8] {
                if lines >= sets {
                    let ways = lines / sets;
                    assert!(sim_hits(Policy::Opt, sets, ways, &t, Some(&next)) >= sim_hits(Policy::Lru, sets, ways, &t, None));
                }
            }
        }
    }
}

fn study(policies: Vec<Policy>, assocs: Vec<Assoc>, lines: Vec<u32>, pins: Vec<(u64, u64)>) -> Study {
    Study { stus: vec![0], policies, assocs, lines, pin_ranges: pins, pin_tagged: false, pin_dedicated: false, seed: 1 }
}

fn trace_accesses(t: &[u32]) -> Vec<Access> {
    t.iter().map(|&k| Access { addr: u64::from(k) << 12, size: 0, pasid: 0, pinned: false }).collect()
}

#[test]
fn study_curves_match_simulation_with_and_without_pins() {
    let t = &traces()[2];
    let accesses = trace_accesses(t);
    // Pin keys 0..3 (the hottest of the skewed trace).
    let pins = vec![(0u64, 4 << 12)];
    let s = study(vec![Policy::Lru, Policy::Fifo], vec![Assoc::Full, Assoc::Ways(4)], vec![4, 8, 16, 64, 256], pins);
    let points = run_study(&s, || Ok(accesses.iter().copied().map(Ok))).unwrap();
    let find = |p: Policy, ways: u32, lines: u32, pinned: bool| -> &Point { points.iter().find(|x| x.policy == p && x.ways == ways && x.lines == lines && x.pinned == pinned).unwrap() };
    let pinned_key = |k: u32| k < 4;
    for lines in [4u32, 8, 16, 64, 256] {
        // Unpinned: the same as simulation.
        assert_eq!(find(Policy::Lru, lines, lines, false).hits, sim_hits(Policy::Lru, 1, lines as usize, t, None));
        assert_eq!(find(Policy::Fifo, lines, lines, false).hits, naive_fifo(t, lines as usize));
        // Pinned: pinned keys always hit; the rest go through lines - 4.
        let rest: Vec<u32> = t.iter().copied().filter(|&k| !pinned_key(k)).collect();
        let pin_hits = (t.len() - rest.len()) as u64;
        let direct = pin_hits + if lines > 4 { naive_lru(&rest, lines as usize - 4) } else { 0 };
        assert_eq!(find(Policy::Lru, lines, lines, true).hits, direct, "pinned LRU at {lines}");
        let direct = pin_hits + if lines > 4 { naive_fifo(&rest, lines as usize - 4) } else { 0 };
        assert_eq!(find(Policy::Fifo, lines, lines, true).hits, direct, "pinned FIFO at {lines}");
        // Set associative, pinned: the one-pass curve against per-set simulation with pinned ways.
        let sets = lines / 4;
        let mut per_set = vec![0u16; sets as usize];
        for k in 0..4u64 {
            per_set[(k as usize) & (sets as usize - 1)] += 1;
        }
        let mut sim = CacheSim::new(Policy::Lru, sets as usize, 4, &per_set, 1);
        for &k in t {
            if pinned_key(k) {
                sim.pinned_hit();
            } else {
                sim.access(k, u64::from(k), u64::MAX);
            }
        }
        assert_eq!(find(Policy::Lru, 4, lines, true).hits, sim.hits, "pinned 4-way LRU at {lines}");
    }
}

/// The points of a study as plain numbers, for comparing two runs of it.
fn numbers(points: &[Point]) -> Vec<(u64, u32, u32, bool, u64, u64)> {
    points.iter().map(|p| (p.stu_bytes, p.ways, p.lines, p.pinned, p.accesses, p.hits)).collect()
}

#[test]
fn bare_addresses_key_the_same_from_a_file_from_memory_and_as_accesses() {
    // Raw addresses are keyed straight from their buffer, without accesses: the same points
    // as the accesses they stand for, at 4 KiB and 2 MiB translation units.
    let t = &traces()[2];
    let addrs: Vec<u64> = t.iter().map(|&k| (u64::from(k) << 12) + 0x1_0000_0000 + u64::from(k % 7) * 512).collect();
    let bytes: Vec<u8> = addrs.iter().flat_map(|a| a.to_le_bytes()).collect();
    let path = std::env::temp_dir().join(format!("ssdlab-test-raw-{}.u64", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let accesses: Vec<Access> = addrs.iter().map(|&addr| Access { addr, size: 0, pasid: 0, pinned: false }).collect();
    // With a fully associative curve, or with pins, the bare pages get dense ids;
    // set-associative curves alone compare the pages themselves.
    let set_assoc = vec![Assoc::Ways(2), Assoc::Ways(4), Assoc::Ways(16)];
    let pins = vec![(0x1_0000_0000u64, 0x1_0000_4000u64)];
    for (assocs, pins) in [(vec![Assoc::Full, Assoc::Ways(4), Assoc::Ways(8)], Vec::new()), (set_assoc.clone(), Vec::new()), (set_assoc, pins)] {
        let mut s = study(vec![Policy::Lru], assocs, vec![8, 64, 256], pins);
        s.stus = vec![0, 9];
        let reference = numbers(&run_study(&s, || Ok(accesses.iter().copied().map(Ok))).unwrap());
        let in_memory = numbers(&run_study(&s, || Ok(ssdlab_core::ats::trace::AddressBlocks::new(&bytes))).unwrap());
        let from_file = numbers(&run_study(&s, || ssdlab_core::ats::trace::RawReader::open(&path).map(ssdlab_core::ats::trace::RawReader::blocks)).unwrap());
        assert!(reference.iter().any(|p| p.5 > 0));
        assert_eq!(in_memory, reference);
        assert_eq!(from_file, reference);
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn an_access_over_several_pages_looks_up_each_of_them_in_order() {
    // One access of 3 pages and a bit (4 lookups) against its pages as accesses of their own.
    let t = &traces()[1];
    let whole: Vec<Access> = t.iter().map(|&k| Access { addr: (u64::from(k) << 14) + 100, size: 3 * 4096 + 1, pasid: k % 3, pinned: false }).collect();
    let pages: Vec<Access> = whole.iter().flat_map(|a| (0..4u64).map(move |i| Access { addr: ((a.addr >> 12) + i) << 12, size: 0, ..*a })).collect();
    let s = study(vec![Policy::Lru], vec![Assoc::Full, Assoc::Ways(4)], vec![16, 64], Vec::new());
    let a = numbers(&run_study(&s, || Ok(whole.iter().copied().map(Ok))).unwrap());
    let b = numbers(&run_study(&s, || Ok(pages.iter().copied().map(Ok))).unwrap());
    assert_eq!(a, b);
    assert_eq!(a[0].4, 4 * t.len() as u64);
}

#[test]
fn pins_that_exceed_the_cache_are_left_out_or_an_error() {
    let t = &traces()[0];
    let accesses = trace_accesses(t);
    // Eight pinned 4 KiB pages: no point for 4 lines, points from 8 lines on.
    let s = study(vec![Policy::Lru], vec![Assoc::Full], vec![4, 8, 16], vec![(0, 8 << 12)]);
    let points = run_study(&s, || Ok(accesses.iter().copied().map(Ok))).unwrap();
    let pinned: Vec<u32> = points.iter().filter(|p| p.pinned).map(|p| p.lines).collect();
    assert_eq!(pinned, vec![8, 16]);
    let s = study(vec![Policy::Lru], vec![Assoc::Full], vec![4], vec![(0, 8 << 12)]);
    let err = run_study(&s, || Ok(accesses.iter().copied().map(Ok))).unwrap_err().to_string();
    assert!(err.contains("8 pinned translations") && err.contains("exceed"), "{err}");
    // Dedicated pin entries: every size has a pinned point, equal to the pinned hits plus the
    // rest through all of its lines.
    let s = Study { pin_dedicated: true, ..study(vec![Policy::Lru], vec![Assoc::Full], vec![4], vec![(0, 8 << 12)]) };
    let points = run_study(&s, || Ok(accesses.iter().copied().map(Ok))).unwrap();
    let rest: Vec<u32> = t.iter().copied().filter(|&k| k >= 8).collect();
    let expected = (t.len() - rest.len()) as u64 + naive_lru(&rest, 4);
    assert_eq!(points.iter().find(|p| p.pinned).unwrap().hits, expected);
}

#[test]
fn bad_studies_are_config_errors() {
    let bad = study(vec![Policy::Lru], vec![Assoc::Ways(4)], vec![12], vec![(10, 5)]);
    let err = bad.validate().unwrap_err().to_string();
    assert!(err.contains("lines = 12") && err.contains("pin"), "{err}");
    let empty: Vec<Access> = Vec::new();
    let s = study(vec![Policy::Lru], vec![Assoc::Full], vec![4], vec![]);
    assert!(run_study(&s, || Ok(empty.iter().copied().map(Ok))).unwrap_err().to_string().contains("no accesses"));
}

#[test]
fn linux_like_stream_shows_the_seed_findings() {
    // Eight queue pairs; as in the seed's figure, the pinned SQ/CQ translations sit in entries of
    // their own beside the lines counted.
    let syn = Synth { ios: 200_000, ..Synth::default() };
    let pins: Vec<(u64, u64)> = synth::ring_ranges(&syn).into_iter().map(|(_, s, e)| (s, e)).collect();
    let s = Study {
        stus: vec![9],
        policies: vec![Policy::Lru, Policy::Fifo, Policy::Random],
        assocs: vec![Assoc::Full],
        lines: vec![1, 2, 4, 8, 16, 32, 64, 128],
        pin_ranges: pins,
        pin_tagged: false,
        pin_dedicated: true,
        seed: 1,
    };
    let points = run_study(&s, || Ok(synth::stream(&syn).map(Ok))).unwrap();
    let rate = |p: Policy, lines: u32, pinned: bool| points.iter().find(|x| x.policy == p && x.lines == lines && x.pinned == pinned).unwrap().hit_rate;
    // At 1 line of 2 MiB, pinning the rings lifts the hit rate from below 10 % to about 2/3.
    assert!(rate(Policy::Lru, 1, false) < 0.10, "{}", rate(Policy::Lru, 1, false));
    assert!(rate(Policy::Lru, 1, true) > 0.6, "{}", rate(Policy::Lru, 1, true));
    // LRU, round robin and random differ little: not at all with the rings pinned, by a few
    // points without (LRU keeps the hot ring translation that the others sometimes evict).
    for lines in [2u32, 8, 32, 128] {
        for (pinned, most) in [(true, 0.01), (false, 0.06)] {
            if !pinned && lines < 8 {
                continue; // at two lines random already loses the ring translation often
            }
            let r = [rate(Policy::Lru, lines, pinned), rate(Policy::Fifo, lines, pinned), rate(Policy::Random, lines, pinned)];
            let spread = r.iter().copied().fold(f64::MIN, f64::max) - r.iter().copied().fold(f64::MAX, f64::min);
            assert!(spread < most, "{lines} lines, pinned {pinned}: {r:?}");
        }
    }
    // The curves converge at tens of lines: within 1 % of the 128-line hit rate by 64 lines.
    assert!(rate(Policy::Lru, 64, false) > rate(Policy::Lru, 128, false) - 0.01);
    assert!(rate(Policy::Lru, 4, false) < rate(Policy::Lru, 64, false) - 0.2);
}

mod in_device {
    use ssdlab_core::stats::Component;
    use ssdlab_core::Simulation;

    use crate::config;

    fn ps_per_byte() -> f64 {
        1e12 / (16e9 * 4.0 * 128.0 / 130.0 / 8.0)
    }

    #[test]
    fn atc_misses_cost_an_ats_round_trip_each_and_show_in_the_breakdown() {
        let base = [("workload.iodepth", "1"), ("workload.number_ios", "3000"), ("ats.enabled", "true")];
        let run = |extra: &[(&str, &str)]| {
            let mut s = base.to_vec();
            s.extend_from_slice(extra);
            Simulation::new(config(&s)).unwrap().run().unwrap()
        };
        // The round trip: 24 B request up, propagation, host translation agent (memory latency),
        // 8 B translation in a 3-DW completion down, propagation.
        let ppb = ps_per_byte();
        let rtt = ((24.0 * ppb).round() + 100e3 + 250e3 + ((8.0 + 20.0) * ppb).round() + 100e3) / 1e6;
        let big = run(&[]);
        let a = big.ats.as_ref().expect("ATS figures");
        assert!((a.miss_round_trip_us - rtt).abs() < 1e-6, "{} vs {rtt}", a.miss_round_trip_us);
        // At QD1 every miss delays its DMA by the round trip (plus a walk on an IOTLB miss):
        // the translation component adds up to exactly that.
        let translation = big.read.breakdown_us.0[Component::Translation as usize] * big.ios as f64;
        let expected = a.misses as f64 * rtt + a.iotlb_misses as f64 * 0.5;
        assert!((translation - expected).abs() < 1e-6 * expected.max(1.0), "{translation} vs {expected}");
        assert!(a.hit_rate > 0.9 && a.pinned_hits > 0, "{a:?}");
        // One line, nothing pinned: the data translation evicts the ring one (the SQ and CQ of a
        // queue pair share a 2 MiB page, so the next SQE fetch finds the CQE's translation): two
        // misses per I/O, each a round trip.
        let tiny = run(&[("ats.lines", "1"), ("ats.pin_rings", "false")]);
        let t = tiny.ats.as_ref().unwrap();
        assert!((t.misses_per_io - 2.0).abs() < 0.01, "{t:?}");
        assert!(tiny.read.latency_us.mean > big.read.latency_us.mean + 1.9 * rtt);
        assert!((tiny.read.breakdown_us.total() - tiny.read.latency_us.mean).abs() < 1e-3);
        // Off by default: no translation time.
        let off = Simulation::new(config(&base[..2])).unwrap().run().unwrap();
        assert!(off.ats.is_none() && off.read.breakdown_us.0[Component::Translation as usize] == 0.0);
    }

    #[test]
    fn pins_that_do_not_fit_the_atc_are_a_config_error() {
        let settings: Vec<(String, String)> =
            [("ats.enabled", "true"), ("ats.lines", "1"), ("ats.stu", "\"4KiB\""), ("workload.numjobs", "2")].iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
        let err = ssdlab_core::config::build(None, None, &settings).err().unwrap();
        assert!(err.to_string().contains("pinned SQ/CQ translations need"), "{err}");
    }

    #[test]
    fn each_vm_has_its_own_address_space() {
        let mut sim = Simulation::new(config(&[("host.vms", "2"), ("workload.numjobs", "4"), ("workload.number_ios", "500"), ("ats.enabled", "true")])).unwrap();
        sim.keep_dma_log().unwrap();
        let s = sim.run().unwrap();
        let log = sim.dma_log().unwrap();
        let pasids: std::collections::HashSet<u32> = log.iter().map(|a| a.pasid).collect();
        assert_eq!(pasids, [0, 1].into_iter().collect());
        // Both VMs' rings are pinned: four queue pairs in two address spaces.
        let a = s.ats.unwrap();
        assert!(a.pinned_hits as f64 >= 2.0 * 4.0 * 500.0 * 0.99, "{a:?}");
    }

    #[test]
    fn the_dma_log_follows_the_device_order() {
        let mut sim = Simulation::new(config(&[("workload.iodepth", "1"), ("workload.number_ios", "100"), ("workload.bs", "16k")])).unwrap();
        sim.keep_dma_log().unwrap();
        sim.run().unwrap();
        let log = sim.dma_log().unwrap();
        // Per 16 KiB read: SQE fetch, PRP list, four data pages (4 KiB pieces), CQE.
        assert_eq!(log.len(), 100 * 7);
        assert!(log[0].pinned && !log[1].pinned && log[6].pinned);
        assert_eq!(log[0].size, 64);
        assert_eq!(log[1].size, 3 * 8);
        assert_eq!(log[6].size, 16);
        assert!(log[2..6].iter().all(|a| a.size == 4096 && !a.pinned));
    }
}

#[test]
fn dma_iommu_reuses_a_few_iovas_per_queue() {
    use ssdlab_core::ats::synth::DmaLayout;
    // Synthesised: 2 queues x 8 in flight -> at most 2 x 9 distinct data IOVAs over 50000 I/Os.
    let syn = Synth { stack: DmaLayout::LinuxIommu, queues: 2, qd: 8, ios: 50_000, ..Synth::default() };
    let data: HashSet<u64> = synth::stream(&syn).filter(|a| !a.pinned && a.size == 4096).map(|a| a.addr).collect();
    assert!(data.len() <= 18 && data.len() >= 8, "{} distinct data IOVAs", data.len());
    assert!(data.iter().all(|&a| a < 1 << 48 && a > (1 << 48) - (1 << 20)), "allocated top-down below the 48-bit limit");
    // Simulated host: each job's IOVAs are freed on completion and reused.
    let mut sim =
        ssdlab_core::Simulation::new(crate::config(&[("host.dma_layout", "\"linux-iommu\""), ("workload.numjobs", "2"), ("workload.iodepth", "4"), ("workload.number_ios", "5000")])).unwrap();
    sim.keep_dma_log().unwrap();
    sim.run().unwrap();
    let data: HashSet<u64> = sim.dma_log().unwrap().iter().filter(|a| !a.pinned).map(|a| a.addr).collect();
    assert!(data.len() <= 2 * 5, "{} distinct data IOVAs", data.len());
}

/// Distinct (address space, 2 MiB page) pairs a stream's accesses touch.
fn stu_pages(syn: &Synth) -> usize {
    synth::stream(syn).map(|a| (a.pasid, a.addr >> 21)).collect::<HashSet<_>>().len()
}

#[test]
fn vms_slicing_one_host_with_lifo_buffers_touch_what_the_layout_implies() {
    use ssdlab_core::ats::synth::BufferReuse;
    // One VM of a host with 8 queue pairs at QD 32: 8 ring pages (each queue's SQ and CQ share a
    // 128 KiB-aligned frame) + the 8 x 32 x 4 KiB = 1 MiB of buffers in flight, which LIFO reuse
    // keeps in the pool's first 2 MiB chunk: 9 pages (fewer if two rings share a page).
    let one = Synth { ios: 100_000, ..Synth::default() };
    let p1 = stu_pages(&one);
    assert!((7..=9).contains(&p1), "{p1}");
    // 16 VMs slicing the host: each keeps one queue pair and its own first chunk: 2 pages each.
    let sixteen = Synth { vms: 16, ..one.clone() };
    let p16 = stu_pages(&sixteen);
    assert!((30..=32).contains(&p16), "{p16}");
    // Each VM a whole copy of the host: 16 x 9.
    let copies = Synth { split: false, ..sixteen.clone() };
    let pc = stu_pages(&copies);
    assert!((16 * 7..=16 * 9).contains(&pc), "{pc}");
    // Random reuse spreads a VM's I/O over its whole 64 MiB pool: 32 chunks + 8 ring pages.
    let random = Synth { reuse: BufferReuse::Random, ..one };
    let pr = stu_pages(&random);
    assert!((36..=40).contains(&pr), "{pr}");
}
