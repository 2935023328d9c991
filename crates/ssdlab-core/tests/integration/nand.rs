//! NAND timing checked against what its parameters imply.

use ssdlab_core::stats::Component;
use ssdlab_core::{Simulation, Summary};

use crate::config_from;

fn run(base: &str, settings: &[(&str, &str)]) -> Summary {
    let mut all = vec![("workload.numjobs", "1")];
    all.extend_from_slice(settings);
    Simulation::new(config_from(Some(base), &all)).and_then(|mut s| s.run()).expect("run")
}

fn flash(s: &Summary) -> &ssdlab_core::ftl::FlashSummary {
    s.flash.as_ref().expect("a NAND run reports flash figures")
}

#[test]
fn qd1_read_is_the_host_path_plus_tr_plus_the_page_transfer() {
    // The same host, link and controller as `default`; only the media differ. SLC: one page
    // type, tR = 25 us; 4 KiB over an 800 MT/s x 8-bit channel = 5.12 us; 100 ns of command cycles.
    let nvm = run("default", &[("workload.iodepth", "1"), ("workload.number_ios", "500")]);
    let slc = run("slc", &[("workload.iodepth", "1"), ("workload.number_ios", "500")]);
    let nand_media = 0.1 + 25.0 + 4096.0 / 800e6 * 1e6;
    let nvm_media = 0.048 + 0.256;
    let media = |s: &Summary| s.read.breakdown_us.0[Component::Media as usize];
    assert!((media(&slc) - nand_media).abs() < 1e-6, "{} vs {nand_media}", media(&slc));
    let diff = slc.read.latency_us.mean - nvm.read.latency_us.mean;
    assert!((diff - (nand_media - nvm_media)).abs() < 1e-3, "only the media differ: {diff}");
    assert!((slc.read.latency_us.max - slc.read.latency_us.min).abs() < 1e-3, "every QD1 read is alike");
    assert_eq!(flash(&slc).nand.host_reads, 500);
}

#[test]
fn a_read_inside_one_page_costs_one_tr_plus_its_transfer() {
    // SLC, sequentially filled: the 4 KiB units of an aligned 8 or 16 KiB read sit side by side
    // in one 16 KiB page, so one tR senses them all and their bytes leave together.
    for (bs, bytes) in [("8k", 8192.0), ("16k", 16384.0)] {
        let s = run("slc", &[("workload.iodepth", "1"), ("workload.number_ios", "500"), ("workload.bs", bs)]);
        let want = 0.1 + 25.0 + bytes / 800e6 * 1e6;
        let media = s.read.breakdown_us.0[Component::Media as usize];
        assert!((media - want).abs() < 1e-6, "{bs}: {media} vs {want}");
        assert_eq!(flash(&s).nand.host_reads, 500, "{bs}: one page read per I/O");
    }
    // A read across two pages reads both, on their own dies, at once.
    let s = run("slc", &[("workload.iodepth", "1"), ("workload.number_ios", "500"), ("workload.bs", "32k")]);
    assert_eq!(flash(&s).nand.host_reads, 1000);
    let media = s.read.breakdown_us.0[Component::Media as usize];
    assert!((media - (0.1 + 25.0 + 16384.0 / 800e6 * 1e6)).abs() < 1e-6, "two dies in parallel: {media}");
}

#[test]
fn a_read_across_the_planes_of_a_die_senses_them_together() {
    // Plane-first striping puts a 32 KiB read's two 16 KiB pages on the two planes of one die,
    // at the same page offset: a multi-plane read senses both in one tR (25 us, plus 0.1 us of
    // command cycles), then moves them out one after the other. Without it the die reads them
    // in turn, and the read takes one tR and command more.
    let qd1 = |mp: &'static str| run("slc", &[("workload.iodepth", "1"), ("workload.bs", "32k"), ("workload.number_ios", "500"), ("ftl.striping", "\"plane-first\""), ("media.nand.multiplane", mp)]);
    let (on, off) = (qd1("true"), qd1("false"));
    assert_eq!(flash(&on).nand.multiplane_reads, 500);
    assert_eq!((flash(&on).nand.host_reads, flash(&off).nand.host_reads, flash(&off).nand.multiplane_reads), (1000, 1000, 0));
    let saved = off.read.latency_us.mean - on.read.latency_us.mean;
    assert!((saved - 25.1).abs() < 1e-3, "saved {saved} us");
    // The second plane's media time is the shared sensing and its own transfer.
    let media = on.read.breakdown_us.0[Component::Media as usize];
    assert!((media - (0.1 + 25.0 + 16384.0 / 800e6 * 1e6)).abs() < 1e-6, "{media}");
}

#[test]
fn with_register_reuse_a_stream_of_small_reads_pays_one_tr_per_page() {
    // SLC, read-ahead off, QD1 sequential 4 KiB reads: four reads per 16 KiB page. The first
    // senses the page (25 us); the next three find it in the plane's page register and only
    // move their 4 KiB out. Without reuse each pays its tR.
    let qd1 = |reuse: &'static str| run("slc", &[("workload.iodepth", "1"), ("workload.rw", "read"), ("workload.number_ios", "4000"), ("ftl.read_ahead", "0"), ("media.nand.register_reuse", reuse)]);
    let media = |s: &Summary| s.read.breakdown_us.0[Component::Media as usize];
    let xfer = 4096.0 / 800e6 * 1e6;
    let (on, off) = (qd1("true"), qd1("false"));
    assert_eq!((flash(&on).nand.register_hits, flash(&off).nand.register_hits), (3000, 0));
    assert!((media(&on) - (0.1 + xfer + 25.0 / 4.0)).abs() < 1e-6, "{}", media(&on));
    assert!((media(&off) - (0.1 + xfer + 25.0)).abs() < 1e-6, "{}", media(&off));
}

#[test]
fn read_retries_grow_with_wear_and_give_qd1_reads_a_tail() {
    // SLC (one page type, tR 25 us) so that only retries spread the latency. A retry step
    // senses the page again (tR), moves it out (4 KiB at 800 MB/s) and decodes it (2 us); the
    // last decode follows the data out. Steps are geometric with mean 1 per 1000 P/E cycles,
    // at most 8: E[steps] = sum_{j=1..8} q^j with q = m / (1 + m).
    let qd1 = |pe: &'static str, per_kpe: &'static str| {
        run("slc", &[("workload.iodepth", "1"), ("workload.number_ios", "4000"), ("media.nand.pe_cycles", pe), ("media.nand.read_retry_per_kpe", per_kpe), ("media.nand.ecc_decode", "\"2us\"")])
    };
    let xfer = 4096.0 / 800e6 * 1e6;
    let base = 0.1 + 25.0 + xfer + 2.0;
    let step = 25.0 + xfer + 2.0;
    let media = |s: &Summary| s.read.breakdown_us.0[Component::Media as usize];
    let fresh = qd1("0", "1.0");
    assert_eq!(flash(&fresh).nand.read_retries, 0);
    assert!((media(&fresh) - base).abs() < 1e-6, "{}", media(&fresh));
    assert!((fresh.read.latency_us.p99 - fresh.read.latency_us.p50).abs() < 0.01, "no retries, no spread");
    for (pe, m) in [("1000", 1.0f64), ("3000", 3.0)] {
        let s = qd1(pe, "1.0");
        let per_read = flash(&s).nand.read_retries as f64 / 4000.0;
        let q = m / (1.0 + m);
        let want = (1..=8).map(|j| q.powi(j)).sum::<f64>();
        assert!((per_read / want - 1.0).abs() < 0.06, "{pe} P/E: {per_read} steps per read, model {want}");
        // Every microsecond of the extra media time is a retry step.
        assert!((media(&s) - base - per_read * step).abs() < 1e-6, "{pe} P/E: media {} us", media(&s));
        assert!(s.read.latency_us.p99 > s.read.latency_us.p50 + 2.0 * step, "{pe} P/E: p50 {} p99 {}", s.read.latency_us.p50, s.read.latency_us.p99);
    }
}

#[test]
fn sequential_reads_hit_read_ahead_and_cost_far_less_than_random_ones() {
    let qd1 = |rw: &'static str, ahead: &'static str| run("tlc", &[("workload.iodepth", "1"), ("workload.rw", rw), ("workload.number_ios", "3000"), ("ftl.read_ahead", ahead)]);
    let rand = qd1("randread", "128KiB");
    let seq = qd1("read", "128KiB");
    let f = flash(&seq);
    eprintln!(
        "QD1 4 KiB: random {:.2} us, sequential {:.2} us with read-ahead ({} hits, {} page reads ahead)",
        rand.read.latency_us.mean, seq.read.latency_us.mean, f.read_ahead_hits, f.nand.prefetch_reads
    );
    assert!(f.read_ahead_hits >= 2990, "every read after the first finds its data read ahead: {}", f.read_ahead_hits);
    assert_eq!(f.nand.host_reads + f.read_ahead_hits, 3000);
    // Whole pages are read ahead: four 4 KiB units per 16 KiB page.
    assert!(f.nand.prefetch_reads <= 3000 / 4 + 16, "{} page reads ahead", f.nand.prefetch_reads);
    assert!(seq.read.latency_us.mean < 0.25 * rand.read.latency_us.mean, "{} vs {}", seq.read.latency_us.mean, rand.read.latency_us.mean);
    assert_eq!(flash(&rand).read_ahead_hits, 0, "random reads start no stream");
    let off = qd1("read", "0");
    assert_eq!((flash(&off).read_ahead_hits, flash(&off).nand.prefetch_reads), (0, 0));
    let ratio = off.read.latency_us.mean / rand.read.latency_us.mean;
    assert!((ratio - 1.0).abs() < 0.05, "without read-ahead a sequential read costs what a random one does: {ratio}");
}

#[test]
fn tlc_reads_take_the_tr_of_their_page_type() {
    let s = run("tlc", &[("workload.iodepth", "1"), ("workload.number_ios", "3000")]);
    // Uniform reads over a sequentially filled drive hit LSB, CSB and MSB pages alike.
    let mean_tr = (56.5 + 77.5 + 106.0) / 3.0;
    let media = s.read.breakdown_us.0[Component::Media as usize];
    let expected = 0.1 + mean_tr + 4096.0 / 800e6 * 1e6;
    assert!((media - expected).abs() < 1.5, "{media} vs {expected}");
    assert!(s.read.latency_us.max - s.read.latency_us.min > 49.0, "MSB reads are 49.5 us slower than LSB reads");
}

#[test]
fn writes_complete_in_the_buffer() {
    let s = run("tlc", &[("workload.iodepth", "1"), ("workload.rw", "randwrite"), ("workload.number_ios", "500")]);
    let media = s.write.breakdown_us.0[Component::Media as usize];
    assert!((media - 1.0).abs() < 1e-6, "a buffered write's media time is the buffer latency: {media}");
    assert!(s.write.latency_us.mean < 20.0, "{}", s.write.latency_us.mean);
}

#[test]
fn sequential_write_bandwidth_is_bounded_by_programs_or_channels() {
    // A die programs both planes at once (multi-plane) and is occupied while their 32 KiB move
    // in over the channel, then for tPROG.
    // Program-bound: 32 dies x 32 KiB / (0.1 + 40.96 + 500 us) = 1938 MB/s (the channels could
    // carry 8 x 800 MB/s).
    // Channel-bound: each channel carries 8 x 100 MB/s less 10 B of command time per 32 KiB,
    // while its 4 dies would need 4 x 327.8 us of channel per 527.8 us cycle.
    let program_bound = 32.0 * 32768.0 / ((0.1 + 32768.0 / 800.0 + 500.0) * 1e-6) / 1e6;
    let channel_bound = 8.0 * 100.0 * 32768.0 / (32768.0 + 10.0);
    for (tprog, mts, bound_mb_s) in [("500us", "800", program_bound), ("200us", "100", channel_bound)] {
        let s = run(
            "slc",
            &[
                ("ftl.precondition", "\"clean\""),
                ("ftl.write_buffer", "\"4MiB\""),
                ("media.nand.program_latency", &format!("[\"{tprog}\"]")),
                ("media.nand.channel_mts", mts),
                ("workload.rw", "write"),
                ("workload.bs", "128k"),
                ("workload.iodepth", "32"),
                ("workload.number_ios", "12000"),
            ],
        );
        let mb_s = s.write.bandwidth_mib_s * 1_048_576.0 / 1e6;
        // The 4 MiB buffer fills at PCIe speed first: up to 0.3 % of the bytes.
        assert!(mb_s <= bound_mb_s * 1.005, "tPROG {tprog}, {mts} MT/s: {mb_s} MB/s exceeds the bound {bound_mb_s}");
        assert!(mb_s >= bound_mb_s * 0.98, "tPROG {tprog}, {mts} MT/s: {mb_s} MB/s, bound {bound_mb_s}");
    }
}

/// Desnoyers (SYSTOR 2012) for uniform random writes: x = exp(-α(1 - x)), WAF = 1/(1 - x), with
/// α the usable physical space over the user space (see tests/integration/ftl.rs).
fn waf_model(alpha: f64) -> f64 {
    let mut x = 0.5;
    for _ in 0..10_000 {
        x = (-alpha * (1.0 - x)).exp();
    }
    1.0 / (1.0 - x)
}

#[test]
fn aged_random_writes_follow_the_seed_003_iops_reasoning_and_the_waf_model() {
    let s = run("ops-isolation", &[("workload.number_ios", "150000"), ("media.nand.blocks_per_plane", "512"), ("stats.interval", "\"50ms\"")]);
    let f = flash(&s);
    let waf = f.waf;
    // WAF against the model at equal reserve: 8 planes x 512 blocks of 128 pages, 5 % spare,
    // less the blocks GC keeps free (as measured over the run) and the host and GC block open
    // on each plane (half empty on average).
    let rows: Vec<f64> = s.timeseries.as_ref().unwrap().rows.iter().filter(|r| r.tenant == "all").map(|r| r.metrics["ftl.free_blocks"]).collect();
    let free = rows.iter().sum::<f64>() / rows.len() as f64;
    let blocks: f64 = 8.0 * 512.0;
    let user = (blocks * 128.0 * 0.95).floor() / 128.0;
    let reserve = free + 8.0;
    let model = waf_model((blocks - reserve) / user);
    assert!((waf / model - 1.0).abs() < 0.10, "WAF {waf} vs model {model}");
    // Seed 003: IOPS = 1 / (tGC + tPROG + tXfer) per die, with tGC the die time GC spends per host
    // write: (WAF - 1) page moves of tR + two transfers + tPROG, and the erases.
    let xfer = 4096.0 / 40e6;
    let (t_r, t_prog, t_bers) = (60e-6, 800e-6, 1.5e-3);
    let erases_per_write = f.ftl.erases as f64 / f.ftl.host_writes as f64;
    let t_gc = (waf - 1.0) * (t_r + 2.0 * xfer + t_prog) + erases_per_write * t_bers;
    let expected = 8.0 / (t_gc + t_prog + xfer);
    assert!((s.iops / expected - 1.0).abs() < 0.10, "IOPS {} vs 8 dies / (tGC + tPROG + tXfer) = {expected}", s.iops);
    assert!(s.utilisation.media_units > 0.9, "the dies are the bottleneck");
}

#[test]
fn grouped_blocks_make_every_program_of_an_aged_drive_a_whole_die_program() {
    // 2 channels x 2 dies x 4 planes, 64 blocks of 64 16 KiB pages (1 GiB), aged, random 4 KiB
    // writes through a 2 MiB buffer (eight pages queued per die). A die programs its planes
    // together only at one page. With each plane's blocks apart, a plane that finds no free
    // block while its die's others do is skipped and writes at other pages from then on, so
    // programs go a plane or two at a time. Grouped blocks open, fill and are erased together:
    // every program is a program of all four planes. Multi-plane blocks leave free space
    // uneven over the dies (GC's victims free the dies they sit on); superblocks keep it even.
    let drive = |group: &str| {
        run(
            "tlc",
            &[
                ("media.nand.channels", "2"),
                ("media.nand.ways", "2"),
                ("media.nand.planes", "4"),
                ("media.nand.blocks_per_plane", "64"),
                ("media.nand.pages_per_block", "64"),
                ("ftl.op_ratio", "0.2"),
                ("ftl.write_buffer", "\"2MiB\""),
                ("ftl.precondition", "\"aged\""),
                ("ftl.block_group", group),
                ("workload.rw", "\"randwrite\""),
                ("workload.iodepth", "64"),
                ("workload.number_ios", "40000"),
            ],
        )
    };
    let (apart, die, superblock) = (drive("\"plane\""), drive("\"die\""), drive("\"superblock\""));
    let spread = |s: &Summary| {
        let u = &flash(s).die_utilisation;
        (u.iter().copied().fold(f64::INFINITY, f64::min), u.iter().copied().fold(0.0, f64::max))
    };
    for (name, s) in [("die", &die), ("superblock", &superblock)] {
        assert_eq!(s.metrics["nand.multiplane_programs"] * 4.0, s.metrics["nand.programs"], "{name}: every program takes the four planes");
        assert!(s.metrics["nand.programs"] > 20_000.0, "{name}: GC ran");
    }
    assert!(apart.metrics["nand.multiplane_programs"] * 4.0 > apart.metrics["nand.programs"] * 1.1, "apart, programs of two or three planes are common");
    // A collected multi-plane block is four erases, a superblock sixteen.
    assert_eq!((die.metrics["nand.erases"] % 4.0, superblock.metrics["nand.erases"] % 16.0), (0.0, 0.0));
    let (lo, hi) = spread(&superblock);
    assert!(lo > 0.97 * hi, "superblocks keep every die busy: {lo:.2}..{hi:.2}");
    assert!(spread(&die).0 < 0.9 * spread(&die).1, "multi-plane blocks leave some dies short of free blocks: {:?}", spread(&die));
    assert!(superblock.iops > apart.iops * 1.2 && die.iops > apart.iops, "{} and {} vs {} IOPS", superblock.iops, die.iops, apart.iops);
}

#[test]
fn gc_time_is_its_own_component_of_a_write_and_of_a_read() {
    // Seed 003's aged drive (one die per channel, no multi-plane, no cache program, no command
    // overhead), random 4 KiB writes at QD32. The dies' GC time is exactly the moves' page
    // reads (tR + transfer) and programs (transfer + tPROG) and the erases (tBERS).
    let s = run("ops-isolation", &[("workload.number_ios", "60000"), ("media.nand.blocks_per_plane", "512")]);
    let f = flash(&s);
    let m = |k: &str| s.metrics[k];
    let xfer = 4096.0 / 40e6;
    let (t_r, t_prog, t_bers) = (60e-6, 800e-6, 1.5e-3);
    let expected = m("nand.gc_reads") * (t_r + xfer) + f.ftl.gc_writes as f64 * (xfer + t_prog) + m("nand.erases") * t_bers;
    let gc_busy = m("nand.dies.gc_busy") / 1e12;
    assert!((gc_busy / expected - 1.0).abs() < 0.01, "GC die time {gc_busy} s vs moves and erases {expected} s");
    // A write waits for buffer space, which frees as fast as the dies program: GC caused the
    // share of the wait that GC took of the dies' time.
    let share = m("nand.dies.gc_busy") / m("media.units.busy");
    let b = &s.write.breakdown_us.0;
    let (gc, queueing) = (b[Component::Gc as usize], b[Component::Queueing as usize]);
    assert!(share > 0.5 && gc > 0.0, "GC dominates an aged drive's die time ({share})");
    assert!((gc / (gc + queueing) / share - 1.0).abs() < 0.05, "writes' GC wait {gc} us of {} us waited, vs GC's share of die time {share}", gc + queueing);
    // Reads among the writes wait behind GC at their dies; a clean drive has none.
    let mixed = |pre: &str| run("ops-isolation", &[("workload.number_ios", "30000"), ("media.nand.blocks_per_plane", "512"), ("workload.rw", "randrw"), ("ftl.precondition", pre)]);
    let aged = mixed("\"aged\"");
    let read_gc = aged.read.breakdown_us.0[Component::Gc as usize];
    assert!(read_gc > 0.0 && read_gc < aged.read.latency_us.mean, "aged reads' GC wait {read_gc} us");
    let clean = mixed("\"clean\"");
    assert_eq!(clean.read.breakdown_us.0[Component::Gc as usize], 0.0);
    assert_eq!(clean.write.breakdown_us.0[Component::Gc as usize], 0.0);
    assert_eq!(clean.metrics["nand.dies.gc_busy"], 0.0);
}

#[test]
fn gc_interleaves_with_host_writes_so_no_write_waits_longer_than_a_block_reclaim() {
    // Seed 003's drive, aged, random 4 KiB writes at QD32. Reclaiming one block on its die takes
    // at most 128 pages x (tR + 2 transfers + tPROG) + tBERS = 136 ms (60 us, 2 x 102.4 us,
    // 800 us; 1.5 ms). Paced GC spreads that work over host writes; collecting whole victims at
    // once made single writes wait seconds.
    let s = run("ops-isolation", &[("workload.number_ios", "100000")]);
    let reclaim_ms = 128.0 * (0.060 + 2.0 * 4096.0 / 40e6 * 1e3 + 0.800) + 1.5;
    let max_ms = s.write.latency_us.max / 1e3;
    assert!(max_ms < reclaim_ms, "max write latency {max_ms:.1} ms vs one block's reclaim {reclaim_ms:.1} ms");
    assert!(flash(&s).ftl.gc_writes > 100_000, "GC was busy all along");
}

#[test]
fn read_priority_and_suspend_shorten_reads_under_writes() {
    let mixed = |sched: &str, suspend: bool| {
        let mut s = vec![
            ("ftl.precondition", "\"sequential\""),
            ("media.nand.scheduler", sched),
            ("workload.rw", "randrw"),
            ("workload.rwmixread", "50"),
            ("workload.iodepth", "16"),
            ("workload.number_ios", "20000"),
        ];
        if suspend {
            s.extend([("media.nand.suspend", "true"), ("media.nand.suspend_latency", "\"20us\"")]);
        }
        run("tlc", &s)
    };
    let fifo = mixed("\"fifo\"", false);
    let prio = mixed("\"read-priority\"", false);
    let susp = mixed("\"read-priority\"", true);
    assert!(prio.read.latency_us.mean < fifo.read.latency_us.mean, "{} vs {}", prio.read.latency_us.mean, fifo.read.latency_us.mean);
    assert!(susp.read.latency_us.p99 < prio.read.latency_us.p99, "{} vs {}", susp.read.latency_us.p99, prio.read.latency_us.p99);
    assert!(flash(&susp).nand.suspends > 0);
}

#[test]
fn nand_runs_are_deterministic_and_keep_the_breakdown_exact() {
    let a = run("tlc-aged", &[("media.nand.blocks_per_plane", "64"), ("workload.number_ios", "40000"), ("workload.rw", "randrw")]);
    let b = run("tlc-aged", &[("media.nand.blocks_per_plane", "64"), ("workload.number_ios", "40000"), ("workload.rw", "randrw")]);
    let strip = |s: &Summary| {
        let mut v = serde_json::to_value(s).unwrap();
        v.as_object_mut().unwrap().remove("wall_time_s");
        v["flash"]["precondition"].as_object_mut().unwrap().remove("wall_s");
        v.to_string()
    };
    assert_eq!(strip(&a), strip(&b));
    for op in [&a.read, &a.write] {
        assert!((op.breakdown_us.total() - op.latency_us.mean).abs() < 1e-3);
    }
    assert!(flash(&a).ftl.gc_victims > 0);
}

#[test]
fn mapping_memory_follows_the_footprint_not_the_capacity() {
    // 16 TiB of raw flash (16 ch x 8 ways x 2 dies x 4 planes x 4096 blocks x 4 MiB); the job
    // writes a 1 GiB region.
    let s = run(
        "tlc",
        &[
            ("media.nand.channels", "16"),
            ("media.nand.ways", "8"),
            ("media.nand.dies_per_chip", "2"),
            ("media.nand.planes", "4"),
            ("media.nand.blocks_per_plane", "4096"),
            ("ftl.precondition", "\"clean\""),
            ("workload.rw", "randwrite"),
            ("workload.size", "\"1GiB\""),
            ("workload.number_ios", "50000"),
        ],
    );
    let bytes = flash(&s).mapping_heap_bytes;
    assert!(bytes < 200 << 20, "mapping structures take {} MiB", bytes >> 20);
}

#[test]
fn a_filled_16_tib_drive_pays_map_memory_per_write_not_per_unit_or_leaf() {
    // 16 TiB of raw flash filled in order (2^32 slots of 4 KiB in 2^22 blocks), then 100k random
    // 4 KiB writes, each to a different map leaf and a different block. Fixed: 12 B of directory
    // per 1024 units, and per block at most 56 B of state (the memory estimate's count: its
    // record, links, wear, reverse-map index, the name of its valid bitmap, the layout's
    // start). Per write at most: a sparse leaf of its own (72 B), a reverse-map entry (8 B) and
    // the 128 B valid bitmap of the block whose unit it overwrites. Open blocks' chunks and
    // pool growth: 1 MiB. Before issue 30 the bitmaps of every filled block (512 MiB) and a
    // leaf of 8 KiB per write (800 MB) were held.
    let s = run("tlc", &[("media.nand.blocks_per_plane", "65536"), ("workload.rw", "randwrite"), ("workload.number_ios", "100000"), ("workload.iodepth", "32")]);
    let bytes = flash(&s).mapping_heap_bytes;
    let bound: u64 = (1u64 << 32) / 1024 * 12 + (1 << 22) * 56 + (1 << 20) + 100_000 * (72 + 8 + 128);
    assert!(bytes < bound, "the map takes {} MiB (bound {} MiB)", bytes >> 20, bound >> 20);
    assert_eq!(s.ios, 100_000);
}

#[test]
fn a_sequentially_filled_drive_costs_map_memory_only_for_what_is_written_again() {
    // MQSim's stock drive (476 GiB exported), filled: 16 B of map per 4 KiB unit would be
    // 1.9 GB. The fill is computed, so the map costs what the blocks need (tens of bytes per
    // 2 MiB block) until writes land. 20k random 4 KiB writes then cost the forward map a
    // sparse entry each (8 B, at most 72 B with a leaf of its own, never an 8 KiB leaf) and the
    // reverse map an entry per slot written (8 B) in a chunk per block they open: the open
    // blocks' unwritten rest and the pool's growth take up to 1 MiB more.
    let reads = run("mqsim", &[("workload.number_ios", "2000")]);
    let filled = flash(&reads).mapping_heap_bytes;
    assert!(filled < 40 << 20, "a filled 512 GiB drive's map takes {} MiB", filled >> 20);
    assert_eq!(flash(&reads).unmapped_reads, 0, "every read finds its unit on flash");
    let writes = run("mqsim", &[("workload.rw", "randwrite"), ("workload.number_ios", "20000")]);
    let grown = flash(&writes).mapping_heap_bytes - filled;
    assert!(grown > 20_000 * 16 && grown < 20_000 * (72 + 8) + (1 << 20), "20k writes grew the map by {grown} B");
}

#[test]
fn background_gc_reclaims_in_idle_time() {
    // Open-loop random writes at about half of what the aged drive sustains: between writes the
    // dies are idle, and background GC uses that time so that foreground GC triggers less.
    let with = |idle: &str| {
        run(
            "ops-isolation",
            &[
                ("media.nand.blocks_per_plane", "256"),
                ("workload.rate_iops", "300"),
                ("workload.iodepth", "32"),
                ("workload.number_ios", "20000"),
                ("ftl.bg_gc_idle", idle),
                ("ftl.bg_gc_target", "0.05"),
            ],
        )
    };
    let (fg, bg) = (with("\"0us\""), with("\"500us\""));
    let (f, b) = (flash(&fg), flash(&bg));
    assert_eq!(f.ftl.bg_victims, 0);
    assert!(b.ftl.bg_victims > 100, "{:?}", b.ftl);
    assert!(b.ftl.gc_runs * 2 < f.ftl.gc_runs.max(1), "foreground GC activations: {} with background GC, {} without", b.ftl.gc_runs, f.ftl.gc_runs);
    // Series: one utilisation per die; free blocks sampled from t = 0.
    assert_eq!(b.die_utilisation.len(), 8);
    assert!(f.free_blocks_over_time.len() > 1 && f.free_blocks_over_time[0].0 == 0.0);
}

#[test]
fn cache_program_hides_the_data_in_behind_tprog() {
    // As the program-bound case above, but the next 32 KiB moves in while the array programs:
    // each die now completes two planes every tPROG = 500 us.
    let bound = 32.0 * 32768.0 / 500e-6 / 1e6;
    let s = run(
        "slc",
        &[
            ("ftl.precondition", "\"clean\""),
            ("ftl.write_buffer", "\"4MiB\""),
            ("media.nand.program_latency", "[\"500us\"]"),
            ("media.nand.cache_program", "true"),
            ("workload.rw", "write"),
            ("workload.bs", "128k"),
            ("workload.iodepth", "32"),
            ("workload.number_ios", "12000"),
        ],
    );
    let mb_s = s.write.bandwidth_mib_s * 1_048_576.0 / 1e6;
    assert!(mb_s <= bound * 1.005 && mb_s >= bound * 0.98, "{mb_s} MB/s vs {bound}");
}

#[test]
fn cache_read_overlaps_the_next_tr_with_the_data_out() {
    // One channel, one die, one plane: every read is cmd (0.1 us) + tR (25 us) + 4 KiB out
    // (5.12 us). With cache read the next command goes out before the data, so the die cycles
    // every 25.1 us instead of 30.22 us.
    let one_die = |cache: &str| {
        run(
            "slc",
            &[
                ("media.nand.channels", "1"),
                ("media.nand.ways", "1"),
                ("media.nand.planes", "1"),
                ("media.nand.blocks_per_plane", "1024"),
                ("media.nand.cache_read", cache),
                ("workload.iodepth", "16"),
                ("workload.number_ios", "20000"),
            ],
        )
    };
    let plain = one_die("false");
    let cached = one_die("true");
    assert!((plain.iops * 30.22e-6 - 1.0).abs() < 0.01, "{} IOPS", plain.iops);
    assert!((cached.iops * 25.1e-6 - 1.0).abs() < 0.01, "{} IOPS", cached.iops);
}

#[test]
fn readers_of_one_unit_share_one_page_read() {
    // Seed 004's crowded accesses on a flash drive: 8 readers at QD1 on one 4 KiB unit. A read
    // that arrives while another host read brings the same bytes joins it (ftl.read_coalesce):
    // the die senses the page once for all of them. Without it, each read senses the page in
    // turn on the one die, and the 8 readers queue there.
    let crowd = |on: &str, size: &str| run("970pro", &[("workload.numjobs", "8"), ("workload.size", size), ("workload.number_ios", "1500"), ("ftl.read_coalesce", on)]);
    let (on, off, spread) = (crowd("true", "\"4KiB\""), crowd("false", "\"4KiB\""), crowd("true", "\"64GiB\""));
    let lat = |s: &Summary| s.read.latency_us.mean;
    assert!(lat(&off) > 4.0 * lat(&spread), "serialised on the die: {} vs spread {}", lat(&off), lat(&spread));
    assert!(lat(&on) < 1.2 * lat(&spread), "coalesced: {} vs spread {}", lat(&on), lat(&spread));
    // Every read either sensed the page or joined a read that did.
    let joined = on.metrics["ftl.read_coalesced"];
    let sensed = flash(&on).nand.host_reads as f64;
    assert!(joined > 0.5 * on.read.ios as f64, "{joined} of {}", on.read.ios);
    assert!((joined + sensed - on.read.ios as f64).abs() <= 8.0, "joined {joined} + sensed {sensed} = {} reads", on.read.ios);
    assert!(off.metrics["ftl.read_coalesced"] < 0.5);
    assert!(spread.metrics["ftl.read_coalesced"] < 0.5, "random reads over 64 GiB never meet");
}

#[test]
fn a_zoned_drive_moves_nothing_and_erases_what_resets_empty() {
    // fio's zbd random writes on the ZNS preset (every zone full): each write goes to an open
    // zone's write pointer, a full zone is reset first, and the reset erases the zone's blocks,
    // which hold nothing valid: no page moves, WAF 1 (where the same drive without zones, under
    // random writes, collects: see the aged runs above).
    let s = run("zns", &[("workload.numjobs", "4"), ("workload.number_ios", "6000")]);
    let f = flash(&s);
    assert_eq!(f.ftl.gc_writes, 0, "a zoned drive moves nothing");
    assert!((f.waf - 1.0).abs() < 1e-9, "WAF {}", f.waf);
    let resets = s.metrics["ftl.zone_resets"];
    // 6000 x 4 jobs x 512 KiB = 11.7 GiB written through 256 MiB zones that start full: a
    // reset for every zone opened, give or take the 14 open at the end. Each reset erases the
    // zone's block in each of the 64 planes.
    let zones_written = 4.0 * 6000.0 * 512.0 / (256.0 * 1024.0);
    assert!(resets >= zones_written - 14.0 && resets <= zones_written + 14.0, "{resets} resets for {zones_written} zones' worth");
    assert_eq!(s.metrics["ftl.erases"], 64.0 * resets, "a reset erases one block per plane");
    // Without zbd, a random write on a zoned drive is not at its zone's write pointer.
    let err = Simulation::new(config_from(Some("zns"), &[("workload.zbd", "false"), ("workload.numjobs", "1")])).and_then(|mut s| s.run()).unwrap_err();
    assert!(err.to_string().contains("is full: reset it before writing it again") || err.to_string().contains("write pointer is at unit"), "{err}");
}

#[test]
fn a_zbd_zone_reset_is_a_command_that_crosses_the_link() {
    // fio resets a full zone with the kernel's BLKRESETZONE: a Zone Management Send that takes
    // the host's path, a queue entry and the link like any command (the drive fetches its SQE
    // and posts its CQE), though fio counts no I/O for it.
    let mut sim = Simulation::new(config_from(Some("zns"), &[("workload.numjobs", "1"), ("workload.number_ios", "1500")])).expect("config");
    sim.keep_dma_log().expect("a DMA log");
    let s = sim.run().expect("run");
    let resets = s.metrics["ftl.zone_resets"];
    assert!(resets >= 2.0, "1500 writes of 512 KiB fill and reset zones: {resets}");
    let log = sim.dma_log().expect("kept");
    let sqes = log.iter().filter(|a| a.pinned && a.size == 64).count() as f64;
    let cqes = log.iter().filter(|a| a.pinned && a.size == 16).count() as f64;
    assert_eq!(s.ios, 1500, "fio counts the writes alone");
    assert_eq!(sqes, 1500.0 + resets, "an SQE fetched for every write and every reset");
    assert_eq!(cqes, 1500.0 + resets, "a CQE posted for every write and every reset");
}

#[test]
fn one_write_per_zone_in_flight_caps_a_zones_write_rate() {
    // Linux lets one write per zone be in flight, so one job writing one zone at QD32 keeps
    // one write in flight; with eight zones open its writes spread and overlap.
    let zns = |open: &str, depth: &str| {
        run(
            "zns",
            &[
                ("workload.numjobs", "1"),
                ("workload.bs", "\"16KiB\""),
                ("workload.iodepth", depth),
                ("workload.max_open_zones", open),
                ("workload.number_ios", "20000"),
                ("ftl.precondition", "\"clean\""),
            ],
        )
    };
    // The drive's mean queue (iostat's avgqu-sz, from the device's in-queue time): one write
    // at a time with one zone, several with eight.
    let in_flight = |s: &Summary| s.metrics["host.disk.in_queue"] / (s.sim_time_s * 1e12);
    let one_zone = zns("1", "32");
    let eight = zns("8", "32");
    assert!(in_flight(&one_zone) <= 1.0, "one zone at QD32 keeps {} in flight", in_flight(&one_zone));
    assert!(in_flight(&eight) > 4.0, "eight zones keep {} in flight", in_flight(&eight));
}

#[test]
fn write_zeroes_deallocate_and_verify_reads_without_moving_data() {
    // NVMe Write Zeroes and Write Uncorrectable unmap the blocks (no data crosses the link, no
    // program); Verify reads the media and sends nothing back. fio counts all as writes.
    let mix = |mode: &str| run("tlc", &[("workload.rw", "randwrite"), ("workload.iodepth", "8"), ("workload.number_ios", "20000"), ("workload.write_mode", mode)]);
    let writes = mix("\"write\"");
    let zeroes = mix("\"zeroes\"");
    let verify = mix("\"verify\"");
    let down = |s: &Summary| s.metrics["pcie.down.wire_bytes"];
    let up = |s: &Summary| s.metrics["pcie.up.wire_bytes"];
    // 20000 x 4 KiB of data cross the link only for real writes.
    assert!(down(&writes) > 20000.0 * 4096.0 && down(&zeroes) < 20000.0 * 200.0, "{} vs {}", down(&writes), down(&zeroes));
    assert!(up(&verify) < 20000.0 * 200.0, "verify sends no data back: {}", up(&verify));
    assert_eq!(zeroes.metrics["nand.programs"], 0.0);
    let t = zeroes.metrics["ftl.trims"];
    assert!(t > 19_900.0 && t <= 20_000.0, "each unit unmapped once (a random offset drawn twice counts once): {t}");
    assert_eq!(verify.metrics["nand.host_reads"], 20000.0, "one page read per 4 KiB verify");
    assert!(verify.write.latency_us.mean > 50.0, "a verify waits for tR: {} us", verify.write.latency_us.mean);
    // A mix draws each write's command by its share.
    let split = mix("\"write/50:zeroes/50\"");
    let trims = split.metrics["ftl.trims"];
    assert!((trims / 10000.0 - 1.0).abs() < 0.05, "{trims} of 20000 writes were zeroes");
    assert!(split.write.ios == 20000 && zeroes.write.ios == 20000 && verify.write.ios == 20000, "fio counts them all as writes");
}

#[test]
fn zone_appends_to_one_zone_overlap_where_writes_wait() {
    // Zone Append takes no zone write lock: the drive writes each at the pointer it finds, so
    // one zone written at QD32 keeps many appends at the drive, where plain writes keep one.
    let zns = |mode: &str| {
        run(
            "zns",
            &[
                ("workload.numjobs", "1"),
                ("workload.bs", "\"16KiB\""),
                ("workload.iodepth", "32"),
                ("workload.max_open_zones", "1"),
                ("workload.number_ios", "20000"),
                ("ftl.precondition", "\"clean\""),
                ("workload.write_mode", mode),
            ],
        )
    };
    let at_drive = |s: &Summary| s.metrics["host.disk.in_queue"] / (s.sim_time_s * 1e12);
    let writes = zns("\"write\"");
    let appends = zns("\"zone_append\"");
    assert!(at_drive(&writes) <= 1.0 && at_drive(&appends) > 8.0, "writes {} appends {}", at_drive(&writes), at_drive(&appends));
    assert_eq!(flash(&appends).ftl.gc_writes, 0);
    assert_eq!(appends.write.ios, 20000);
}

#[test]
fn protection_information_crosses_the_link_but_not_the_flash() {
    // An extended LBA format, 4096 B of data and 64 B of protection information per block
    // (fio's bs=4160): the host counts 4160 B an I/O and the link carries them; the flash
    // stores the data (the metadata lives out of band), so programs do not change.
    let w = |extra: &[(&str, &str)]| {
        let mut s = vec![("workload.rw", "randwrite"), ("workload.iodepth", "4"), ("workload.number_ios", "20000")];
        s.extend_from_slice(extra);
        run("tlc", &s)
    };
    let plain = w(&[("workload.bs", "\"4096\""), ("nvme.lba_size", "\"4KiB\"")]);
    let pi = w(&[("workload.bs", "\"4160\""), ("nvme.lba_size", "\"4KiB\""), ("nvme.metadata_size", "\"64B\""), ("nvme.extended_lba", "true")]);
    assert_eq!(pi.write.bytes, 20000 * 4160);
    assert_eq!(pi.metrics["nand.programs"], plain.metrics["nand.programs"]);
    let per_io = |s: &Summary| s.metrics["pcie.down.wire_bytes"] / 20000.0;
    let extra = per_io(&pi) - per_io(&plain);
    assert!((64.0..64.0 + 2.0 * 30.0).contains(&extra), "64 B more a write, with at most a TLP or two of overhead: {extra}");
    // Sizes that are not whole 4160 B blocks are refused.
    let bad: Vec<(String, String)> = [("workload.bs", "\"4096\""), ("nvme.lba_size", "\"4KiB\""), ("nvme.metadata_size", "\"64B\""), ("nvme.extended_lba", "true")]
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    let err = ssdlab_core::config::build(Some("tlc"), None, &bad).expect_err("refused");
    assert!(err.to_string().contains("positive multiples of 4160B"), "{err}");
}

#[test]
fn a_write_into_part_of_a_unit_on_the_flash_reads_the_unit_first() {
    // 8 KiB mapping units, 4 KiB writes. On a filled drive each random write covers half of a
    // unit that holds data on the flash: the controller reads the unit (one page read per
    // write) before it can write the merged unit, and the write waits for that read.
    let writes = |fill: &str, rw: &str, bs: &str| {
        run("tlc", &[("ftl.mapping_unit", "\"8KiB\""), ("ftl.precondition", fill), ("workload.rw", rw), ("workload.bs", bs), ("workload.iodepth", "1"), ("workload.number_ios", "2000")])
    };
    let rmw = |s: &Summary| s.metrics["ftl.rmw_reads"];
    let filled = writes("\"sequential\"", "\"randwrite\"", "\"4KiB\"");
    let ios = filled.write.ios as f64;
    assert!(rmw(&filled) <= ios && rmw(&filled) > 0.99 * ios, "{} unit reads for {ios} writes", rmw(&filled));
    assert_eq!(flash(&filled).nand.host_reads as f64, rmw(&filled), "one page read per unit read, and no other");
    // Nothing to read: units never written are padded with zeroes, whole units need no merge,
    // and the second half of a unit merges with the first in the write buffer.
    let clean = writes("\"clean\"", "\"randwrite\"", "\"4KiB\"");
    assert_eq!(rmw(&clean), 0.0);
    assert_eq!(rmw(&writes("\"sequential\"", "\"randwrite\"", "\"8KiB\"")), 0.0);
    let seq = writes("\"sequential\"", "\"write\"", "\"4KiB\"");
    assert_eq!(rmw(&seq), seq.write.ios as f64 / 2.0, "only the first half of each unit reads it");
    // The read is on the write's path: at QD1 it adds at least the fastest page type's tR.
    let extra = filled.write.latency_us.mean - clean.write.latency_us.mean;
    assert!(extra > 56.5, "read-modify-write adds {extra:.1} us");
    let media = |s: &Summary| s.write.breakdown_us.0[Component::Media as usize];
    assert!(media(&filled) > media(&clean) + 56.5, "the read is the write's media time: {} vs {}", media(&filled), media(&clean));
}
