//! The NVM array: granularity effects that emerge from the model, seed 001's decomposition and
//! seed 002's sensitivity to media latency.

use ssdlab_core::stats::Component;
use ssdlab_core::{Simulation, Summary};

use crate::config_from;

fn run(base: &str, settings: &[(&str, &str)]) -> Summary {
    let mut all = vec![("workload.numjobs", "1")];
    all.extend_from_slice(settings);
    Simulation::new(config_from(Some(base), &all)).and_then(|mut s| s.run()).expect("run")
}

/// One controller, one bank, 10 us reads and 20 us writes: the media is the bottleneck.
fn media_bound(extra: &[(&str, &str)]) -> Summary {
    let mut s = vec![("media.nvm.controllers", "1"), ("media.nvm.read_latency", "\"10us\""), ("media.nvm.write_latency", "\"20us\""), ("workload.iodepth", "8"), ("workload.number_ios", "20000")];
    s.extend_from_slice(extra);
    run("default", &s)
}

#[test]
fn accesses_smaller_than_a_chunk_cost_a_whole_chunk() {
    let full = media_bound(&[("workload.bs", "4k")]);
    let part = media_bound(&[("workload.bs", "1k")]);
    assert!((full.iops / 100_000.0 - 1.0).abs() < 0.01, "{}", full.iops);
    assert!((part.iops / full.iops - 1.0).abs() < 0.01, "1 KiB reads cost a 4 KiB access: {} vs {}", part.iops, full.iops);
    assert!(part.bandwidth_mib_s < full.bandwidth_mib_s / 3.9);
    // Partial writes read, modify and write their chunk: 1 / (10 + 20 us) against 1 / 20 us.
    let w_full = media_bound(&[("workload.rw", "randwrite"), ("workload.bs", "4k")]);
    let w_part = media_bound(&[("workload.rw", "randwrite"), ("workload.bs", "2k")]);
    assert!((w_full.iops / 50_000.0 - 1.0).abs() < 0.01, "{}", w_full.iops);
    assert!((w_part.iops / 33_333.3 - 1.0).abs() < 0.01, "{}", w_part.iops);
}

#[test]
fn unaligned_accesses_touch_two_chunks() {
    let aligned = media_bound(&[("workload.rw", "read")]);
    let unaligned = media_bound(&[("workload.rw", "read"), ("workload.offset", "\"2k\"")]);
    assert!((unaligned.iops / (aligned.iops / 2.0) - 1.0).abs() < 0.01, "{} vs {}", unaligned.iops, aligned.iops);
}

#[test]
fn concurrent_accesses_to_one_chunk_serialise() {
    // Four controllers; four jobs at QD2 either all read one 4 KiB chunk or read over 8 MiB.
    let crowded = media_bound(&[("media.nvm.controllers", "4"), ("workload.numjobs", "4"), ("workload.iodepth", "2"), ("workload.size", "\"4k\"")]);
    let spread = media_bound(&[("media.nvm.controllers", "4"), ("workload.numjobs", "4"), ("workload.iodepth", "2"), ("workload.size", "\"8MiB\"")]);
    let q = |s: &Summary| s.read.breakdown_us.0[Component::Queueing as usize];
    assert!((crowded.iops / 100_000.0 - 1.0).abs() < 0.01, "one bank serves them all: {}", crowded.iops);
    assert!(crowded.iops < 0.6 * spread.iops, "{} vs {}", crowded.iops, spread.iops);
    assert!(q(&crowded) > 2.0 * q(&spread), "queueing {} vs {}", q(&crowded), q(&spread));
}

#[test]
fn bandwidth_saturates_at_the_interleaving_degree() {
    // Eight controllers of 10 us reads and an ideal host; sequential 4 KiB reads. Below
    // saturation IOPS grow with the queue depth (Little: QD over the path latency); once
    // saturated they stop at the interleaving degree x 100 k, whatever the depth.
    let at = |degree: &str, qd: &str| {
        media_bound(&[
            ("media.nvm.controllers", "8"),
            ("media.nvm.interleave", degree),
            ("host.submit_cost", "\"0us\""),
            ("host.complete_cost", "\"0us\""),
            ("workload.rw", "read"),
            ("workload.iodepth", qd),
            ("workload.number_ios", "80000"),
        ])
        .iops
    };
    let (q1, q2) = (at("8", "1"), at("8", "2"));
    assert!((q2 / q1 - 2.0).abs() < 0.1, "{q1} {q2}");
    for (degree, limit) in [("4", 400_000.0), ("8", 800_000.0)] {
        let (a, b) = (at(degree, "32"), at(degree, "64"));
        assert!((a / limit - 1.0).abs() < 0.02 && (b / limit - 1.0).abs() < 0.02, "degree {degree}: {a} {b}");
    }
}

#[test]
fn reads_and_writes_contend_for_the_banks() {
    // The same 30 k reads per second, alone or with 30 k writes per second on the same bank:
    // the bank goes from 30 % to 90 % busy and reads queue behind writes (seed 004: "control
    // the overall load").
    // Poisson arrivals: queueing as load usually brings it.
    let open =
        |rw: &str, rate: &str| media_bound(&[("workload.rw", rw), ("workload.rate_iops", rate), ("workload.rate_process", "poisson"), ("workload.iodepth", "64"), ("workload.number_ios", "30000")]);
    let reads = open("randread", "30000");
    let mixed = open("randrw", "60000");
    assert!(mixed.read.latency_us.mean > 3.0 * reads.read.latency_us.mean, "{} vs {}", mixed.read.latency_us.mean, reads.read.latency_us.mean);
}

/// 4 KiB reads on the Optane-class drive (`p4800x`, 7 channels x 4 dies, 4 KiB chunks).
fn optane(settings: &[(&str, &str)]) -> Summary {
    let mut all = vec![("workload.number_ios", "20000")];
    all.extend_from_slice(settings);
    run("p4800x", &all)
}

#[test]
fn optane_crowded_reads_to_one_chunk_serialise_on_its_partition() {
    // Seed 004, rule 3: sixteen reads in flight (4 jobs x QD4), all to one 4 KiB chunk or
    // spread over the drive. Crowded, each waits for the others on one partition of one die.
    let load = [("workload.numjobs", "4"), ("workload.iodepth", "4")];
    let crowded = optane(&[load[0], load[1], ("workload.size", "\"4KiB\"")]);
    let spread = optane(&[load[0], load[1], ("workload.size", "\"64GiB\"")]);
    // Spread reads stop at the controller's per-chunk ceiling (calibrated: ~586 k chunks/s,
    // 27 us at 16 in flight, where AnandTech measured 25.5 us). The crowded chunk's partition
    // takes one read per 305 ns access plus its 10 us recovery (calibrated on the seed's 4.6x
    // at 8 readers): 97 k reads/s, past the seed's ratio at 16 in flight.
    let ratio = crowded.read.latency_us.mean / spread.read.latency_us.mean;
    assert!(ratio >= 4.6, "crowded {} us vs spread {} us: {ratio:.2}x", crowded.read.latency_us.mean, spread.read.latency_us.mean);
    let cycle = 0.305e-6 + 10e-6;
    assert!((crowded.iops * cycle - 1.0).abs() < 0.01, "partition-bound: {} IOPS", crowded.iops);
}

/// Bandwidth (MiB/s) of four sequential 4 KiB read streams (QD8 each) that skip
/// `stride - 1` chunks after each read; the streams start 7 x 1024 chunks apart, on one channel.
fn strided(stride: u64) -> f64 {
    let skip = format!("\"{}KiB\"", 4 * (stride - 1));
    let jobs: Vec<String> = (0..4).map(|k| format!("{{ rw = \"read\", bs = \"4KiB\", iodepth = 8, offset = \"{}MiB\", rw_skip = {} }}", 28 * k, skip)).collect();
    let jobs = format!("[{}]", jobs.join(", "));
    optane(&[("host.completion", "\"poll\""), ("workload.jobs", &jobs)]).read.bandwidth_mib_s
}

#[test]
fn optane_strided_reads_dip_at_multiples_of_the_interleaving_degree() {
    // Seed 004: the distance between the lowest dips of a strided-read sweep is the drive's
    // interleaving degree, 7 (its channels). A stride of 7k chunks sends every read to one
    // channel; any other stride spreads them.
    let bw: Vec<(u64, f64)> = (1..=22).map(|s| (s, strided(s))).collect();
    let mut others: Vec<f64> = bw.iter().filter(|(s, _)| s % 7 != 0).map(|&(_, b)| b).collect();
    others.sort_by(f64::total_cmp);
    let worst_other = others[0];
    for &(s, b) in bw.iter().filter(|(s, _)| s % 7 == 0) {
        assert!(b < 0.8 * worst_other, "stride {s}: {b:.0} MiB/s against {worst_other:.0} at the worst other stride ({bw:?})");
    }
    // The dips are one channel's bandwidth (1.5 GB/s).
    for &(s, b) in bw.iter().filter(|(s, _)| s % 7 == 0) {
        assert!((b * 1.048_576 / 1500.0 - 1.0).abs() < 0.05, "stride {s}: {b:.0} MiB/s");
    }
}

#[test]
fn optane_random_and_sequential_reads_perform_the_same() {
    // Seed 004, rule 2: the LBA-striped layout has no read-ahead and no page to share, so the
    // order of 4 KiB reads does not matter, at QD1 or with 16 in flight (four streams 1 GiB
    // apart, as four random jobs).
    let rnd1 = optane(&[("workload.rw", "randread"), ("workload.iodepth", "1")]);
    let seq1 = optane(&[("workload.rw", "read"), ("workload.iodepth", "1")]);
    let jobs = |rw: &str| format!("[{}]", (0..4).map(|k| format!("{{ rw = \"{rw}\", iodepth = 4, offset = \"{k}GiB\" }}")).collect::<Vec<_>>().join(", "));
    let rnd16 = optane(&[("workload.jobs", &jobs("randread"))]);
    let seq16 = optane(&[("workload.jobs", &jobs("read"))]);
    for (rnd, seq) in [(&rnd1, &seq1), (&rnd16, &seq16)] {
        let (r, q) = (rnd.read.latency_us.mean, seq.read.latency_us.mean);
        // Within 8 %: with 16 in flight, random reads now and then meet on a channel, where
        // sequential streams rotate over the channels in step.
        assert!((r / q - 1.0).abs() < 0.08, "random {r} us vs sequential {q} us");
        assert!((rnd.iops / seq.iops - 1.0).abs() < 0.08, "{} vs {} IOPS", rnd.iops, seq.iops);
    }
    assert!(rnd16.iops > 3.0 * rnd1.iops, "QD16 is not bound by one stream: {} vs {}", rnd16.iops, rnd1.iops);
}

#[test]
fn seed_004_heatmap_optane_leads_at_low_request_scale_and_the_lead_vanishes_at_high_scale() {
    // Seed 004's heatmap: T = (L_flash - L_optane) / L_optane for one job of random reads.
    // At 4 KiB and QD1 the Optane drive is several times faster (the seed: 6.7); as request size
    // and depth grow, its 7-channel parallelism runs out while the 970 PRO's 64 planes keep
    // scaling. At large requests and depths the Optane drive's own ceiling (its controller's
    // data path, calibrated on its 2.4 GB/s sequential reads) holds it below the link, and the
    // flash drive is ahead: the seed's cells with T down to -0.4.
    let t = |bs: &str, qd: &str| {
        let lat = |preset: &str| run(preset, &[("workload.rw", "randread"), ("workload.bs", bs), ("workload.iodepth", qd), ("workload.number_ios", "4000")]).read.latency_us.mean;
        let (optane, flash) = (lat("p4800x"), lat("970pro"));
        (flash - optane) / optane
    };
    let low = t("4k", "1");
    assert!(low > 2.0, "4 KiB QD1: T = {low}");
    let mid = t("64k", "4");
    assert!(mid > 0.2 && mid < 0.5 * low, "64 KiB QD4: T = {mid} (4 KiB QD1: {low})");
    let high = t("256k", "64");
    assert!(high < -0.2 && high > -0.45, "256 KiB QD64: the flash drive ahead, as in the seed (T down to -0.4): T = {high}");
}

#[test]
fn qd1_reads_of_the_low_latency_drives_have_tails_from_soft_decoding() {
    // With the raw error rate near the hard decoder's limit, a share of reads (the binomial
    // tail, about 0.2 %) takes the soft-decoding path: p99.99 rises above p50, and the share
    // of slow reads is the one the ECC parameters imply. Without errors there is no tail.
    for preset in ["p4800x", "sz985"] {
        let s = run(preset, &[("workload.iodepth", "1"), ("workload.number_ios", "40000")]);
        let lat = &s.read.latency_us;
        assert!(lat.p9999 > lat.p50 + 5.0, "{preset}: p99.99 {} vs p50 {}", lat.p9999, lat.p50);
        let soft = s.metrics["media.ecc.soft_decodes"] / s.read.ios as f64;
        assert!(soft > 5e-4 && soft < 5e-3, "{preset}: {soft}");
        let clean = run(preset, &[("workload.iodepth", "1"), ("workload.number_ios", "40000"), ("media.ecc.rber", "0.0")]);
        assert!(clean.read.latency_us.p9999 - clean.read.latency_us.p50 < 1.0, "{preset}: {:?}", clean.read.latency_us);
    }
}

#[test]
fn seed_001_decomposition_firmware_dominates_fast_media_and_automation_removes_it() {
    // Seed 001's media (its read latencies) under the OpenExpress-like controller, QD1.
    let media = [("tlc", "\"450us\""), ("mlc", "\"150us\""), ("slc", "\"25us\""), ("znand", "\"3us\""), ("pram", "\"120ns\""), ("mram", "\"65ns\"")];
    let device = |s: &Summary, parts: &[Component]| parts.iter().map(|&c| s.read.breakdown_us.0[c as usize]).sum::<f64>();
    let ctrl = [Component::Doorbell, Component::Fetch, Component::Prp, Component::Controller];
    for (name, lat) in media {
        let fw = run("openexpress-fw", &[("media.nvm.read_latency", lat), ("workload.iodepth", "1"), ("workload.number_ios", "300")]);
        let hw = run("openexpress-hw", &[("media.nvm.read_latency", lat), ("workload.iodepth", "1"), ("workload.number_ios", "300")]);
        let nvm = device(&fw, &[Component::Media]);
        let fw_ctrl = device(&fw, &ctrl);
        let hw_ctrl = device(&hw, &ctrl);
        let dev_total = fw.read.breakdown_us.total() - device(&fw, &[Component::HostSoftware, Component::HostQueueing]);
        if name == "pram" || name == "mram" {
            // The media share includes moving 4 KiB over the 4 GB/s ring (~1 us).
            assert!(fw_ctrl > 3.0 * nvm, "{name}: firmware {fw_ctrl} us vs media {nvm} us");
            assert!(hw_ctrl < 0.3 * fw_ctrl, "{name}: automation leaves {hw_ctrl} of {fw_ctrl} us");
        }
        if name == "tlc" {
            assert!(nvm > 0.9 * dev_total, "TLC: media {nvm} of {dev_total} us");
        }
    }
}

#[test]
fn openexpress_automation_reaches_the_link_on_reads_and_serialised_fetches_slow_writes() {
    // Seed 001, 10 threads at QD8: the hardware-automated controller reaches ~7 GB/s of 16 KiB
    // random reads (the Gen3 x8 link), while writes reach less (4.7 GB/s in the seed) because
    // one engine fetches every write's SQE, PRP list and data in turn ("All payloads are
    // serialized"); a read's data leaves on the other direction meanwhile.
    let at = |rw: &str, fetch: &str| {
        run(
            "openexpress-hw",
            &[
                ("workload.numjobs", "10"),
                ("nvme.io_queues", "10"),
                ("workload.iodepth", "8"),
                ("workload.bs", "16k"),
                ("workload.rw", rw),
                ("workload.number_ios", "2000"),
                ("ctrl.fetch_engines", fetch),
            ],
        )
    };
    let gb = |s: &Summary| s.bandwidth_mib_s * 1.048_576 / 1000.0;
    let (reads, writes) = (gb(&at("randread", "1")), gb(&at("randwrite", "1")));
    assert!((reads / 7.0 - 1.0).abs() < 0.1, "16 KiB reads: {reads} GB/s");
    assert!(writes < 0.8 * reads && writes > 0.4 * reads, "16 KiB writes: {writes} vs reads {reads} GB/s");
    // With a fetch engine per outstanding fetch, writes go as fast as their completions come
    // down (cut at the root port's 64 B completion boundary).
    let free = gb(&at("randwrite", "0"));
    assert!(free > 1.3 * writes, "unserialised writes: {free} vs serialised {writes} GB/s");
}

#[test]
fn seed_002_sensitivity_bandwidth_stays_flat_to_about_1_us_with_enough_controllers() {
    let bw = |controllers: &str, latency: &str| {
        run(
            "pcm",
            &[
                ("media.nvm.controllers", controllers),
                ("media.nvm.banks", "1"),
                ("media.nvm.start_gap_interval", "0"),
                ("media.nvm.read_latency", latency),
                ("workload.numjobs", "4"),
                ("workload.iodepth", "16"),
                ("workload.number_ios", "5000"),
            ],
        )
        .bandwidth_mib_s
    };
    let fast = bw("8", "\"4ns\"");
    assert!(bw("8", "\"1us\"") > 0.9 * fast, "8 controllers stay flat to 1 us");
    assert!(bw("8", "\"128us\"") < 0.1 * fast, "and fall at 128 us");
    let at8us: Vec<f64> = ["1", "2", "4", "8"].iter().map(|c| bw(c, "\"8us\"")).collect();
    // (At 8 controllers the four host threads start to cap it.)
    assert!(at8us.windows(2).all(|w| w[1] > 1.3 * w[0]), "more controllers, more bandwidth at 8 us: {at8us:?}");
    assert!(bw("1", "\"2us\"") < 0.9 * bw("1", "\"4ns\""), "one controller falls earlier");
}

#[test]
fn moneta_software_steps_move_latency_as_seed_002_reports() {
    let sw = |s: &Summary| s.read.breakdown_us.0[Component::HostSoftware as usize] + s.read.breakdown_us.0[Component::HostQueueing as usize];
    let steps: Vec<Summary> = ["moneta", "moneta-nosched", "moneta-atomic", "moneta-spin"].iter().map(|p| run(p, &[("workload.number_ios", "3000")])).collect();
    let software: Vec<f64> = steps.iter().map(sw).collect();
    let hardware: Vec<f64> = steps.iter().map(|s| s.read.latency_us.mean - sw(s)).collect();
    // Seed 002: 13.4 us of software and 8.2 us of hardware at baseline; no scheduler saves
    // ~10 %, the atomic request word another ~10 %, spinning brings software to ~5 us.
    assert!((software[0] - 13.4).abs() < 0.1 && (hardware[0] - 8.2).abs() < 0.1, "{software:?} {hardware:?}");
    assert!((software[1] / software[0] - 0.9).abs() < 0.02 && (software[2] / software[1] - 0.9).abs() < 0.02, "{software:?}");
    assert!((software[3] - 5.0).abs() < 0.1, "{software:?}");
    assert!(hardware.iter().all(|h| (h - hardware[0]).abs() < 0.05), "hardware stays put: {hardware:?}");
    // The seed's "62 % cut": software, 13.4 us down to 5 us.
    let cut = 1.0 - software[3] / software[0];
    assert!((cut - 0.62).abs() < 0.02, "{cut}");
    // CPU per GB/s falls as the scheduler and the lock go.
    let cpu: Vec<f64> = steps.iter().map(|s| s.host.cpus_per_gb_s).collect();
    assert!(cpu[1] < cpu[0] && cpu[2] < cpu[1], "{cpu:?}");
}

#[test]
fn moneta_baseline_collapses_under_sixteen_threads_and_each_software_step_lifts_it() {
    // Seed 002: 16 threads of random 4 KiB reads. The baseline never reaches 1 GB/s and costs
    // about 12 CPUs per GB/s; without the scheduler (and its request queue) it costs about 3;
    // the atomic request word "a little" less; spinning raises bandwidth a little and CPU a lot.
    // Nothing here is set: the request queue's lock, taken three times per request by CPUs
    // whose caches hold its lines in turn, saturates and its spinners burn the CPU.
    let at = |preset: &str, bs: &str| run(preset, &[("workload.numjobs", "16"), ("workload.bs", bs), ("workload.number_ios", "3000")]);
    let gb = |s: &Summary| s.bandwidth_mib_s * 1.048_576 / 1000.0;
    let steps = ["moneta", "moneta-nosched", "moneta-atomic", "moneta-spin"];
    let k4: Vec<Summary> = steps.iter().map(|p| at(p, "4k")).collect();
    let bw: Vec<f64> = k4.iter().map(gb).collect();
    let cpu: Vec<f64> = k4.iter().map(|s| s.host.cpus_per_gb_s).collect();
    assert!(bw[0] < 1.0, "baseline at 4 KiB: {bw:?} GB/s");
    assert!(cpu[0] > 6.0, "baseline CPUs per GB/s: {cpu:?}");
    // (Past the scheduler every step is at the link, within a few per cent.)
    assert!(bw[1] > 1.5 * bw[0] && bw[2] > 0.95 * bw[1] && bw[3] > 0.95 * bw[2], "{bw:?}");
    assert!(cpu[1] < 0.6 * cpu[0] && cpu[1] < 5.0, "no scheduler: {cpu:?}");
    assert!(cpu[2] < cpu[1] && cpu[2] > 0.5 * cpu[1], "atomic, a little less: {cpu:?}");
    assert!(cpu[3] > 2.0 * cpu[2], "spinning costs CPU: {cpu:?}");
    let locks = k4[0].metrics["host.queue_lock.migrations"] / k4[0].metrics["host.queue_lock.acquisitions"];
    assert!(locks > 0.9, "under 16 threads the queue lock moves almost every time: {locks}");
    // Small requests gain at every step; at 64 KiB every step reaches the link (~1.7 GB/s).
    let small: Vec<f64> = steps.iter().map(|p| gb(&at(p, "512"))).collect();
    assert!(small.windows(2).all(|w| w[1] > 1.3 * w[0]), "512 B: {small:?}");
    for p in steps {
        let large = gb(&at(p, "64k"));
        assert!((large / 1.74 - 1.0).abs() < 0.05, "{p} at 64 KiB: {large} GB/s");
    }
}

#[test]
fn split_read_write_queues_use_both_link_directions() {
    let mix = |q: &str| {
        run("moneta-spin", &[("workload.numjobs", "4"), ("workload.iodepth", "8"), ("workload.rw", "randrw"), ("workload.bs", "64k"), ("workload.number_ios", "10000"), ("ctrl.dma_queues", q)])
    };
    let one = mix("\"shared\"");
    let two = mix("\"split\"");
    let mb = |s: &Summary| s.bandwidth_mib_s * 1.048_576;
    // Seed 002: 1.6 GB/s with one queue, just under 3 GB/s with split queues on a 50/50 mix.
    assert!((mb(&one) / 1600.0 - 1.0).abs() < 0.1, "one queue: {}", mb(&one));
    assert!(mb(&two) > 1.5 * mb(&one) && mb(&two) < 3000.0, "split: {} vs {}", mb(&two), mb(&one));
    assert!(one.utilisation.pcie_up < 0.6 && two.utilisation.pcie_up > 0.7, "{} {}", one.utilisation.pcie_up, two.utilisation.pcie_up);
}

#[test]
fn round_robin_splitting_keeps_small_requests_from_starving() {
    // Seed 002: a 4 KiB stream competing with a 512 KiB stream gets ~12x more bandwidth when
    // large requests are split and re-queued round robin. The large stream keeps four requests
    // queued, so the engine always has one; in FIFO order the small request waits for all of
    // them, in round robin for one piece of each.
    let two_streams = |split: &str| {
        run(
            "moneta-spin",
            &[
                ("workload.jobs", "[{name = \"small\", bs = \"4k\"}, {name = \"large\", bs = \"512k\", iodepth = 4}]"),
                ("workload.runtime", "\"20ms\""),
                ("workload.number_ios", "1000000"),
                ("ctrl.dma_queues", "\"shared\""),
                ("ctrl.transfer_window", "4"),
                ("ctrl.split", split),
            ],
        )
    };
    let fifo = two_streams("\"fifo\"");
    let rr = two_streams("\"rr\"");
    let small = |s: &Summary| s.jobs.iter().find(|j| j.name == "small").unwrap().bandwidth_mib_s;
    let large = |s: &Summary| s.jobs.iter().find(|j| j.name == "large").unwrap().bandwidth_mib_s;
    assert!(small(&rr) > 8.0 * small(&fifo), "4 KiB stream: {} MiB/s with rr, {} with fifo", small(&rr), small(&fifo));
    assert!(large(&rr) > 0.85 * large(&fifo), "the large stream keeps most of its bandwidth");
}

#[test]
fn per_job_overrides_are_validated_under_their_own_path() {
    let s: Vec<(String, String)> = vec![("workload.jobs".into(), "[{bs = \"4k\"}, {bs = \"1000\", iodepth = 0}]".into())];
    let err = ssdlab_core::config::build(Some("default"), None, &s).unwrap_err().to_string();
    assert!(err.contains("workload.jobs[1].bs = 1000B") && err.contains("workload.jobs[1].iodepth = 0"), "{err}");
    let s: Vec<(String, String)> = vec![("workload.jobs".into(), "[{size = \"1TiB\"}]".into())];
    let err = ssdlab_core::config::build(Some("default"), None, &s).unwrap_err().to_string();
    assert!(err.contains("workload.jobs[0].size"), "{err}");
}

#[test]
fn reads_move_whole_codewords_over_the_interconnect() {
    // A 100 MB/s bus bounds the reads (the bank's 100 ns is far shorter than a transfer). The
    // ECC decoder is in the controller, so a 1 KiB read moves its 4 KiB codeword: it runs at the
    // 4 KiB read's rate, 100e6 / 4096 per second. With 1 KiB codewords it moves a quarter.
    let bus = |bs: &str, codeword: &str| media_bound(&[("media.nvm.bus_bandwidth", "\"100MB/s\""), ("media.nvm.read_latency", "\"100ns\""), ("workload.bs", bs), ("media.ecc.codeword", codeword)]);
    let full = bus("4k", "\"4KiB\"");
    let part = bus("1k", "\"4KiB\"");
    let small = bus("1k", "\"1KiB\"");
    assert!((full.iops / (100e6 / 4096.0) - 1.0).abs() < 0.02, "{}", full.iops);
    assert!((part.iops / full.iops - 1.0).abs() < 0.02, "a 1 KiB read moves 4 KiB: {} vs {}", part.iops, full.iops);
    assert!((small.iops / (100e6 / 1024.0) - 1.0).abs() < 0.03, "1 KiB codewords: {}", small.iops);
    // A 4 KiB read 2 KiB off alignment needs two codewords: half the aligned rate.
    let off = media_bound(&[("media.nvm.bus_bandwidth", "\"100MB/s\""), ("media.nvm.read_latency", "\"100ns\""), ("workload.offset", "\"2k\"")]);
    assert!((off.iops / (full.iops / 2.0) - 1.0).abs() < 0.02, "{} vs {}", off.iops, full.iops);
}

#[test]
fn a_write_buffer_acknowledges_writes_before_the_media_and_the_media_still_bounds_the_rate() {
    // One bank of 20 us writes. Paced at one write per 100 us, a buffered write completes once
    // its data is in: its latency loses exactly the media part (the 4 KiB on the 16 GB/s bus,
    // then the bank), and nothing else moves.
    let paced =
        |buffer: &str| media_bound(&[("workload.rw", "randwrite"), ("workload.iodepth", "1"), ("workload.rate_iops", "10000"), ("workload.number_ios", "2000"), ("media.nvm.write_buffer", buffer)]);
    let (direct, buffered) = (paced("0"), paced("\"64KiB\""));
    let media = |s: &Summary| s.write.breakdown_us.0[Component::Media as usize];
    let expect = 4096.0 / 16e9 * 1e6 + 20.0;
    assert!((media(&direct) - expect).abs() < 1e-3 && media(&buffered) == 0.0, "{} {}", media(&direct), media(&buffered));
    let saved = direct.write.latency_us.mean - buffered.write.latency_us.mean;
    assert!((saved - expect).abs() < 1e-3, "saved {saved} us, expected {expect}");
    // Unpaced at QD8 the 16 slots fill, and writes complete at the bank's rate: 1 / 20 us.
    let full = media_bound(&[("workload.rw", "randwrite"), ("media.nvm.write_buffer", "\"64KiB\"")]);
    assert!((full.iops / 50_000.0 - 1.0).abs() < 0.01, "{}", full.iops);
    assert!(full.metrics["nvm.write_buffer.waits"] > 0.0);
    // A buffer that is not whole chunks is refused with its key.
    let bad = ssdlab_core::config::build(Some("default"), None, &[("media.nvm.write_buffer".to_string(), "\"6KiB\"".to_string())]);
    assert!(bad.is_err_and(|e| e.to_string().contains("media.nvm.write_buffer")));
}

#[test]
fn cut_through_reads_pay_the_link_for_one_codeword_not_the_chunk() {
    // One controller on a 1 GB/s interconnect (slower than the link), 16 KiB chunks in 512 B
    // codewords, QD1. Store and forward, the chunk crosses the interconnect and then the link;
    // cut through, the link carries each codeword as it arrives, so only the last one's link
    // time follows the interconnect. The media part is the same; the transfer part shrinks to
    // one codeword's, and the whole saving is that.
    let read = |cut: &str, bs: &str| {
        media_bound(&[
            ("media.nvm.chunk", "\"16KiB\""),
            ("media.nvm.bus_bandwidth", "\"1GB/s\""),
            ("media.ecc.codeword", "\"512B\""),
            ("media.nvm.cut_through", cut),
            ("workload.bs", bs),
            ("workload.iodepth", "1"),
            ("workload.number_ios", "2000"),
        ])
    };
    let (whole, cut) = (read("false", "\"16KiB\""), read("true", "\"16KiB\""));
    let part = |s: &Summary, c: Component| s.read.breakdown_us.0[c as usize];
    assert!((part(&whole, Component::Media) - part(&cut, Component::Media)).abs() < 1e-6);
    let saved = whole.read.latency_us.mean - cut.read.latency_us.mean;
    let transfer_saved = part(&whole, Component::Transfer) - part(&cut, Component::Transfer);
    assert!((saved - transfer_saved).abs() < 1e-3, "saved {saved} us, the transfer {transfer_saved} us");
    // 32 codewords: the last one's link time is ~1/32 of the chunk's (TLP framing aside).
    let ratio = part(&cut, Component::Transfer) / part(&whole, Component::Transfer);
    assert!(ratio > 1.0 / 40.0 && ratio < 1.0 / 20.0, "{ratio}");
    // Cut through, the bank streams its whole chunk from its start: a 4 KiB read waits for the
    // chunk up to its own last byte, 4, 8, 12 or 16 KiB in (10 KiB on average, at 1 GB/s),
    // after the bank's 10 us.
    let small = read("true", "\"4KiB\"");
    let expect = 10.0 + 10.0 * 1024.0 / 1e3;
    assert!((part(&small, Component::Media) / expect - 1.0).abs() < 0.05, "{} vs {expect}", part(&small, Component::Media));
}

#[test]
fn the_overlap_check_runs_commands_on_one_unit_one_at_a_time() {
    // Four controllers; four jobs at QD2 all read one 4 KiB chunk. Without the check its bank
    // (10 us a read) serialises them; with it, each also waits for the previous command's
    // completion (its transfer and completion step after the bank: ~11 us a command), so the
    // rate falls below the bank's and nearly every command waits.
    let crowded = |overlap: &str| media_bound(&[("media.nvm.controllers", "4"), ("workload.numjobs", "4"), ("workload.iodepth", "2"), ("workload.size", "\"4k\""), ("ctrl.overlap", overlap)]);
    let (bank, checked) = (crowded("0"), crowded("\"4KiB\""));
    assert!((bank.iops / 100_000.0 - 1.0).abs() < 0.01, "{}", bank.iops);
    assert!(checked.iops < 0.95 * bank.iops, "{} vs {}", checked.iops, bank.iops);
    assert!(checked.metrics["ctrl.overlap.waits"] > 0.9 * checked.read.ios as f64 && bank.metrics["ctrl.overlap.waits"] == 0.0);
    // Spread over the drive, the check holds nothing back.
    let spread = media_bound(&[("media.nvm.controllers", "4"), ("workload.numjobs", "4"), ("workload.iodepth", "2"), ("workload.size", "\"8MiB\""), ("ctrl.overlap", "\"4KiB\"")]);
    assert!(spread.metrics["ctrl.overlap.waits"] < 0.05 * spread.read.ios as f64);
}

#[test]
fn a_partition_recovers_after_each_read_off_the_reads_path() {
    // One bank of 1 us reads whose partitions need 9 us after each read.
    let bank = |extra: &[(&str, &str)]| {
        let mut s = vec![("media.nvm.read_latency", "\"1us\""), ("media.nvm.read_recovery", "\"9us\"")];
        s.extend_from_slice(extra);
        media_bound(&s)
    };
    // Paced at one read per 100 us, no read finds its partition recovering: the latency is
    // that of a bank that needs no recovery, to the picosecond.
    let paced = [("workload.iodepth", "1"), ("workload.rate_iops", "10000"), ("workload.number_ios", "2000")];
    let lone = bank(&paced);
    let plain = media_bound(&[paced[0], paced[1], paced[2], ("media.nvm.read_latency", "\"1us\"")]);
    assert_eq!(lone.read.latency_us.mean, plain.read.latency_us.mean);
    // Eight reads in flight on one chunk: one per access and recovery, 1 / 10 us.
    let crowded = bank(&[("workload.numjobs", "4"), ("workload.iodepth", "2"), ("workload.size", "\"4k\"")]);
    assert!((crowded.iops / 100_000.0 - 1.0).abs() < 0.01, "{}", crowded.iops);
    // A sequential stream visits the next chunk each time. With one partition each read waits
    // for the previous one's recovery (1 / 10 us again); with 16, a partition is visited every
    // 16 reads and the bank (1 us a read) no longer bounds the stream, the host does.
    let stream = |parts: &str| bank(&[("workload.rw", "read"), ("media.nvm.partitions", parts)]);
    let (one, sixteen) = (stream("1"), stream("16"));
    assert!((one.iops / 100_000.0 - 1.0).abs() < 0.01, "{}", one.iops);
    assert!(sixteen.iops > 1.5 * one.iops, "{} vs {}", sixteen.iops, one.iops);
    let bad = ssdlab_core::config::build(Some("default"), None, &[("media.nvm.partitions".to_string(), "0".to_string())]);
    assert!(bad.is_err_and(|e| e.to_string().contains("media.nvm.partitions")));
}
