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
    let mut s = vec![
        ("media.nvm.controllers", "1"),
        ("media.nvm.read_latency", "\"10us\""),
        ("media.nvm.write_latency", "\"20us\""),
        ("workload.iodepth", "8"),
        ("workload.number_ios", "20000"),
    ];
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
    let open = |rw: &str, rate: &str| {
        media_bound(&[("workload.rw", rw), ("workload.rate_iops", rate), ("workload.rate_process", "poisson"), ("workload.iodepth", "64"), ("workload.number_ios", "30000")])
    };
    let reads = open("randread", "30000");
    let mixed = open("randrw", "60000");
    assert!(mixed.read.latency_us.mean > 3.0 * reads.read.latency_us.mean, "{} vs {}", mixed.read.latency_us.mean, reads.read.latency_us.mean);
}

#[test]
fn optane_like_preset_meets_its_contract() {
    let rnd = run("optane", &[("workload.iodepth", "1"), ("workload.number_ios", "3000")]);
    let seq = run("optane", &[("workload.iodepth", "1"), ("workload.rw", "read"), ("workload.number_ios", "3000")]);
    assert!(rnd.read.latency_us.mean < 10.0, "{}", rnd.read.latency_us.mean);
    assert!((rnd.read.latency_us.mean / seq.read.latency_us.mean - 1.0).abs() < 0.02, "random is as good as sequential");
    let rnd16 = run("optane", &[("workload.numjobs", "4"), ("workload.iodepth", "4"), ("workload.number_ios", "20000")]);
    let seq16 = run("optane", &[("workload.numjobs", "4"), ("workload.iodepth", "4"), ("workload.rw", "read"), ("workload.number_ios", "20000")]);
    assert!((rnd16.iops / seq16.iops - 1.0).abs() < 0.05, "{} vs {}", rnd16.iops, seq16.iops);
    assert!((rnd16.iops / 550_000.0 - 1.0).abs() < 0.1, "spec: 550 k IOPS at QD16: {}", rnd16.iops);
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
fn split_read_write_queues_use_both_link_directions() {
    let mix = |q: &str| run("moneta-spin", &[("workload.numjobs", "4"), ("workload.iodepth", "8"), ("workload.rw", "randrw"), ("workload.bs", "64k"), ("workload.number_ios", "10000"), ("ctrl.dma_queues", q)]);
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
