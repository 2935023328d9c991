//! Results checked against what the parameters imply.

use ssdlab_core::stats::Component;
use ssdlab_core::Simulation;

use crate::{config, config_from, run};

/// Gen4 x4: 4 lanes x 16 GT/s x 128/130 / 8 bits, in picoseconds per byte.
fn ps_per_byte(gt_per_s: f64, lanes: f64) -> f64 {
    1e12 / (gt_per_s * lanes * 128.0 / 130.0 / 8.0)
}

#[test]
fn qd1_read_latency_is_the_sum_of_the_path_and_of_its_breakdown() {
    let c = config(&[("workload.iodepth", "1"), ("workload.number_ios", "2000")]);
    let host = (c.host.submit_cost.as_ps() + c.host.complete_cost.as_ps()) as f64;
    let sub = c.host.submit_cost.as_ps() as f64 / 1e6;
    let mut sim = Simulation::new(c).unwrap();
    sim.keep_io_log();
    let s = sim.run().unwrap();

    // The default device, step by step (see presets/default.toml).
    let ppb = ps_per_byte(16e9, 4.0);
    let ser = |bytes: f64| (bytes * ppb).round();
    let ns = 1e3; // ps per ns
                  // 4 B MWr, 4-DW header, 8 B framing; then the firmware takes the doorbell (600 cycles).
    let doorbell = ser(4.0 + 16.0 + 8.0) + 100.0 * ns + 600.0 * ns;
    let fetch = ser(24.0) + 100.0 * ns + 250.0 * ns + ser(64.0 + 12.0 + 8.0) + 100.0 * ns;
    let controller = (400.0 + 500.0) * ns; // parse + one translation at 1 GHz
    let prp = 300.0 * ns;
    let media = 48.0 * ns + 256.0 * ns; // PCM read + 4 KiB over a 16 GB/s bus
    let transfer = ser(4096.0 + 16.0 * 24.0); // 16 x 256 B TLPs
    let completion = 500.0 * ns + ser(16.0 + 24.0) + ser(4.0 + 24.0) + 100.0 * ns; // CQE, MSI-X
    let expected_us = (host + doorbell + fetch + controller + prp + media + transfer + completion) / 1e6;

    let lat = &s.read.latency_us;
    assert!((lat.mean - expected_us).abs() < 1e-3, "mean {} vs analytic {expected_us}", lat.mean);
    assert!((lat.min - expected_us).abs() < 1e-3 && (lat.max - expected_us).abs() < 1e-3, "QD1 latency is constant");

    let b = &s.read.breakdown_us.0;
    let by = |c: Component| b[c as usize];
    assert!((by(Component::HostSoftware) - host / 1e6).abs() < 1e-6);
    assert!((by(Component::Doorbell) - doorbell / 1e6).abs() < 1e-6);
    assert!((by(Component::Fetch) - fetch / 1e6).abs() < 1e-6);
    assert!((by(Component::Prp) - prp / 1e6).abs() < 1e-6);
    assert!((by(Component::Controller) - controller / 1e6).abs() < 1e-6);
    assert!((by(Component::Media) - media / 1e6).abs() < 1e-6);
    assert!((by(Component::Transfer) - transfer / 1e6).abs() < 1e-6);
    assert!((by(Component::Completion) - completion / 1e6).abs() < 1e-6);
    assert!(by(Component::Queueing).abs() < 1e-6 && by(Component::HostQueueing).abs() < 1e-6, "nothing waits at QD1");
    assert!((s.read.breakdown_us.total() - lat.mean).abs() < 1e-3, "breakdown sums to the mean latency within 1 ns");

    // fio's split: submission ends at the SQ doorbell, so at QD1 slat is the submit cost and
    // clat everything after it; per job they equal the totals of a one-job run.
    assert!((s.read.slat_us.mean - sub).abs() < 1e-6 && (s.read.slat_us.max - sub).abs() < 1e-6, "slat {} vs {sub}", s.read.slat_us.mean);
    assert!((s.read.slat_us.mean + s.read.clat_us.mean - lat.mean).abs() < 1e-6);
    assert_eq!(s.jobs[0].read.latency_us, s.read.latency_us);
    assert_eq!(s.jobs[0].read.clat_us, s.read.clat_us);

    // And per I/O, exactly.
    let log = sim.io_log().unwrap();
    for i in 0..log.latency_ps.len() {
        let sum: u64 = log.breakdown_ps.iter().map(|col| col[i]).sum();
        assert_eq!(sum, log.latency_ps[i], "I/O {i}");
    }
}

#[test]
fn per_job_results_add_up_to_the_totals() {
    let s = run(&[("workload.rw", "randrw"), ("workload.numjobs", "3"), ("workload.number_ios", "3000")]);
    for op in [&s.read, &s.write] {
        assert!((op.slat_us.mean + op.clat_us.mean - op.latency_us.mean).abs() < 1e-6);
    }
    let (r, w): (u64, u64) = (s.jobs.iter().map(|j| j.read.ios).sum(), s.jobs.iter().map(|j| j.write.ios).sum());
    assert_eq!((r, w), (s.read.ios, s.write.ios));
    let worst = s.jobs.iter().map(|j| j.read.latency_us.max).fold(0.0, f64::max);
    assert!((worst - s.read.latency_us.max).abs() < 1e-9);
    let mean = s.jobs.iter().map(|j| j.read.latency_us.mean * j.read.ios as f64).sum::<f64>() / s.read.ios as f64;
    assert!((mean - s.read.latency_us.mean).abs() < 1e-6);
}

#[test]
fn each_job_and_each_tenant_is_measured_over_its_own_time() {
    // Issue 29, items 1 and 5: a QD1 and a QD32 job of 5,000 4 KiB random reads each on `tlc`.
    // Each job's rates are over its own runtime (its start to its last completion), so its
    // IOPS times its runtime is its I/Os, and Little's law holds per job: IOPS x mean latency
    // is about its depth. The QD32 job ends long before the QD1 job.
    let s = crate::run_on(
        "tlc",
        &[("workload.rw", "randread"), ("workload.numjobs", "1"), ("workload.number_ios", "5000"), ("workload.jobs", "[{name = \"qd1\", iodepth = 1}, {name = \"qd32\", iodepth = 32}]")],
    );
    let (a, b) = (&s.jobs[0], &s.jobs[1]);
    for (j, depth) in [(a, 1.0), (b, 32.0)] {
        assert_eq!(j.ios, 5000);
        assert!((j.iops * j.runtime_s - 5000.0).abs() < 1e-6, "{}: {} IOPS over {} s", j.name, j.iops, j.runtime_s);
        let little = j.iops * j.mean_latency_us * 1e-6;
        assert!((little / depth - 1.0).abs() < 0.1, "{}: IOPS x latency = {little}, depth {depth}", j.name);
    }
    assert!(a.runtime_s > 5.0 * b.runtime_s, "QD1 {} s against QD32 {} s", a.runtime_s, b.runtime_s);
    assert!((a.runtime_s - s.window_s).abs() < 1e-9, "the run lasts as long as its longest job");
    // Two tenants with the same I/O counts at QD1 and QD32: their bandwidth follows their own
    // active time, not the run's.
    let t = crate::run_on(
        "tlc",
        &[
            ("workload.rw", "randread"),
            ("workload.numjobs", "1"),
            ("workload.number_ios", "5000"),
            ("tenants", "[{name = \"slow\", workload = {iodepth = 1}}, {name = \"fast\", workload = {iodepth = 32}}]"),
        ],
    );
    let (slow, fast) = (&t.tenants[0], &t.tenants[1]);
    assert_eq!((slow.ios, fast.ios), (5000, 5000));
    assert!(fast.bandwidth_mib_s > 5.0 * slow.bandwidth_mib_s, "{} against {} MiB/s", fast.bandwidth_mib_s, slow.bandwidth_mib_s);
    assert!((fast.iops * fast.runtime_s - 5000.0).abs() < 1e-6);
}

#[test]
fn hardware_automation_removes_most_controller_time() {
    let fw = run(&[("workload.iodepth", "1"), ("workload.number_ios", "1000")]);
    let hw = run(&[("workload.iodepth", "1"), ("workload.number_ios", "1000"), ("ctrl.mode", "hardware")]);
    let ctrl_time = |s: &ssdlab_core::Summary| {
        let b = &s.read.breakdown_us.0;
        b[Component::Controller as usize] + b[Component::Prp as usize]
    };
    // Firmware: parse + PRP + translate = 1200 cycles at 1 GHz. Hardware: 4 + 6 + 4 = 14 cycles
    // at 250 MHz = 56 ns.
    assert!((ctrl_time(&fw) - 1.2).abs() < 1e-6);
    assert!((ctrl_time(&hw) - 0.056).abs() < 1e-6);
    assert!(hw.read.latency_us.mean < fw.read.latency_us.mean - 2.0);
}

#[test]
fn closed_loop_obeys_littles_law() {
    for (qd, rw) in [("32", "randread"), ("32", "randwrite"), ("7", "randrw")] {
        let s = run(&[("workload.iodepth", qd), ("workload.rw", rw), ("workload.number_ios", "200000")]);
        let lat = (s.read.latency_us.mean * s.read.ios as f64 + s.write.latency_us.mean * s.write.ios as f64) / s.ios as f64;
        let n = s.iops * lat * 1e-6;
        let q: f64 = qd.parse().unwrap();
        assert!((n / q - 1.0).abs() < 0.01, "{rw} QD{qd}: IOPS x latency = {n}");
    }
}

#[test]
fn jobs_beyond_the_queue_pairs_share_them_and_little_still_holds() {
    // 16 threads at QD4 on a drive with 4 I/O queue pairs: four CPUs per queue (blk-mq), each
    // queue's interrupt handled on its first CPU. Every I/O is still counted once and the
    // closed loop keeps 64 in flight.
    let base = [("workload.numjobs", "16"), ("workload.iodepth", "4"), ("workload.rw", "randread"), ("workload.number_ios", "100000")];
    let shared = run(&[&base[..], &[("nvme.io_queues", "4")]].concat());
    let own = run(&[&base[..], &[("nvme.io_queues", "16")]].concat());
    assert_eq!(shared.ios, own.ios);
    let n = shared.iops * shared.read.latency_us.mean * 1e-6;
    assert!((n / 64.0 - 1.0).abs() < 0.01, "IOPS x latency = {n}");
    assert_eq!(shared.jobs.len(), 16);
    // The device is the same; only the host's side of completion differs (a handler may wait
    // for its CPU's own thread), so throughput stays close.
    assert!((shared.iops / own.iops - 1.0).abs() < 0.15, "{} vs {}", shared.iops, own.iops);
}

#[test]
fn sequential_read_bandwidth_follows_the_pcie_maths_when_the_link_is_the_bottleneck() {
    // Per 128 KiB read, upstream carries: 32 pieces x (4096 B + TLP overhead per MPS payload),
    // the SQE and PRP-list read requests (24 B each), the CQE (16 + 24 B), the MSI-X (4 + 24 B),
    // and one 8 B DLLP for each of the 7 TLPs that come down (SQ doorbell, SQE, 4 PRP-list
    // completions at 64 B RCB, CQ doorbell). Bandwidth = 128 KiB / those bytes x link rate.
    let cases = [
        // (gen, lanes, mps, literal MiB/s from the formula)
        ("4", "4", "256", 6859.90),
        ("3", "4", "512", 3583.34),
    ];
    for (gen, lanes, mps, literal) in cases {
        let s = run(&[("pcie.gen", gen), ("pcie.lanes", lanes), ("pcie.mps", mps), ("workload.rw", "read"), ("workload.bs", "128k"), ("workload.iodepth", "32"), ("workload.number_ios", "20000")]);
        let mps: f64 = mps.parse().unwrap();
        let rate = 1e12 / ps_per_byte(if gen == "4" { 16e9 } else { 8e9 }, lanes.parse().unwrap());
        let up = 32.0 * (4096.0 / mps) * (mps + 24.0) + 24.0 + 24.0 + 40.0 + 28.0 + 7.0 * 8.0;
        let formula = 131_072.0 / up * rate / 1_048_576.0;
        assert!((formula - literal).abs() < 0.01, "formula {formula} vs literal {literal}");
        let got = s.read.bandwidth_mib_s;
        assert!((got / literal - 1.0).abs() < 0.002, "Gen{gen} x{lanes} MPS {mps}: {got} MiB/s vs {literal}");
        assert!(s.utilisation.pcie_up > 0.99, "the link is the bottleneck");
    }
}

#[test]
fn firmware_cores_bound_iops_when_they_are_the_bottleneck() {
    // One core: every 4 KiB read costs 600 + 400 + 300 + 500 + 500 = 2300 cycles at 1 GHz, so
    // at most 1 / 2.3 us = 434.8 k IOPS (four host threads keep it fed).
    let s = run(&[("ctrl.firmware.cores", "1"), ("workload.numjobs", "4"), ("workload.number_ios", "50000")]);
    assert!((s.iops / 434_782.6 - 1.0).abs() < 0.005, "{} IOPS", s.iops);
    assert!(s.utilisation.ctrl > 0.99);
}

#[test]
fn media_units_bound_iops_when_they_are_the_bottleneck() {
    // One unit with a 10 us read: at most 100 k IOPS whatever the queue depth.
    let s = run(&[("media.nvm.controllers", "1"), ("media.nvm.read_latency", "10us"), ("workload.number_ios", "20000")]);
    assert!((s.iops / 100_000.0 - 1.0).abs() < 0.005, "{} IOPS", s.iops);
}

#[test]
fn transfers_over_two_pages_fetch_a_prp_list() {
    // 8 KiB = 2 pages: PRP1 + PRP2, no list. 16 KiB = 4 pages: a 3-entry list is fetched.
    let two = run(&[("workload.iodepth", "1"), ("workload.bs", "8k"), ("workload.number_ios", "100")]);
    let four = run(&[("workload.iodepth", "1"), ("workload.bs", "16k"), ("workload.number_ios", "100")]);
    let prp = |s: &ssdlab_core::Summary| s.read.breakdown_us.0[Component::Prp as usize];
    assert!((prp(&two) - 0.3).abs() < 1e-6, "PRP handling only: {}", prp(&two));
    let ppb = ps_per_byte(16e9, 4.0);
    // prp_cycles + list request up + propagation + memory + 24 B list down + propagation + 3 entries walked.
    let list = 300e3 + (24.0 * ppb).round() + 100e3 + 250e3 + ((24.0 + 20.0) * ppb).round() + 100e3 + 3.0 * 16e3;
    assert!((prp(&four) - list / 1e6).abs() < 1e-6, "{} vs {}", prp(&four), list / 1e6);
}

#[test]
fn interrupt_coalescing_holds_a_lone_completion_for_the_aggregation_time() {
    let base = run(&[("workload.iodepth", "1"), ("workload.number_ios", "200")]);
    let held = run(&[("workload.iodepth", "1"), ("workload.number_ios", "200"), ("nvme.irq_coalesce_threshold", "4"), ("nvme.irq_coalesce_time", "100us")]);
    // At QD1 the threshold is never reached: every CQE waits the full 100 us for the timer.
    let diff = held.read.latency_us.mean - base.read.latency_us.mean;
    assert!((diff - 100.0).abs() < 0.1, "coalescing added {diff} us");
    // With 16 in flight the threshold is reached: one MSI-X per 4 CQEs instead of one per CQE
    // (0.75 fewer upstream TLPs per I/O), and no I/O waits for the timer.
    let busy = |coalesce: bool| {
        let mut s = vec![("workload.iodepth", "16"), ("workload.number_ios", "20000")];
        if coalesce {
            s.extend([("nvme.irq_coalesce_threshold", "4"), ("nvme.irq_coalesce_time", "100us")]);
        }
        run(&s)
    };
    let (plain, batched) = (busy(false), busy(true));
    let per_io = |s: &ssdlab_core::Summary| s.pcie.up_tlps as f64 / s.ios as f64;
    assert!((per_io(&plain) - per_io(&batched) - 0.75).abs() < 1e-3, "{} vs {}", per_io(&plain), per_io(&batched));
    assert!(batched.read.latency_us.max < plain.read.latency_us.max + 20.0, "no I/O waited 100 us");
}

#[test]
fn polling_skips_the_interrupt() {
    let irq = run(&[("workload.iodepth", "1"), ("workload.number_ios", "200")]);
    let poll = run(&[("workload.iodepth", "1"), ("workload.number_ios", "200"), ("host.completion", "poll")]);
    let ppb = ps_per_byte(16e9, 4.0);
    // Polling saves the MSI-X TLP and the difference in host completion cost (3.6 - 1.6 us).
    let saved = ((28.0 * ppb).round() + 2_000_000.0) / 1e6;
    let diff = irq.read.latency_us.mean - poll.read.latency_us.mean;
    assert!((diff - saved).abs() < 1e-3, "{diff} vs {saved}");
}

#[test]
fn dram_polled_preset_matches_the_published_5_to_6_us() {
    let c = config_from(Some("dram-polled"), &[]);
    let s = Simulation::new(c).unwrap().run().unwrap();
    let mean = s.read.latency_us.mean;
    assert!((5.0..=6.0).contains(&mean), "polled 4 KiB read on DRAM: {mean} us");
}

#[test]
fn open_loop_rate_is_met_and_latency_is_unloaded() {
    let s = run(&[("workload.rate_iops", "50000"), ("workload.iodepth", "64"), ("workload.number_ios", "20000")]);
    assert!((s.iops / 50_000.0 - 1.0).abs() < 0.01, "{} IOPS", s.iops);
    let qd1 = run(&[("workload.iodepth", "1"), ("workload.number_ios", "200")]);
    assert!((s.read.latency_us.p50 - qd1.read.latency_us.p50).abs() < 0.05);
    // Poisson arrivals queue sometimes: higher tail, same rate.
    let p = run(&[("workload.rate_iops", "50000"), ("workload.rate_process", "poisson"), ("workload.iodepth", "64"), ("workload.number_ios", "20000")]);
    assert!((p.iops / 50_000.0 - 1.0).abs() < 0.03, "{} IOPS", p.iops);
}

#[test]
fn an_unsustainable_open_loop_rate_fails_with_a_workload_error() {
    let c = config(&[("workload.rate_iops", "10000000"), ("workload.runtime", "2s"), ("workload.number_ios", "100000000")]);
    match Simulation::new(c).unwrap().run() {
        Err(e @ ssdlab_core::Error::Workload { .. }) => {
            let ssdlab_core::Error::Workload { path, value, reason } = &e else { unreachable!() };
            assert_eq!((path.as_str(), value.as_str()), ("workload.rate_iops", "10000000"));
            assert!(reason.contains("cannot sustain"), "{reason}");
            assert!(e.to_string().contains("workload.rate_iops = 10000000: job 0: more than"), "{e}");
        }
        other => panic!("expected a workload error, got {other:?}"),
    }
}

#[test]
fn runtime_and_ramp_time_bound_what_is_counted() {
    let s = run(&[("workload.runtime", "10ms"), ("workload.ramp_time", "2ms"), ("workload.number_ios", "100000000")]);
    // The window runs from the end of the ramp to the last completion: 8 ms, plus the drain of
    // the 32 I/Os in flight at 10 ms (the host CPU, 5.8 us per I/O, is the bottleneck here).
    let drain = 32.0 * 5.8e-6;
    assert!(s.window_s > 0.008 && s.window_s < 0.008 + drain + 20e-6, "window {}", s.window_s);
    assert!(s.sim_time_s > 0.01 && s.sim_time_s < 0.01 + drain + 20e-6);
    assert!((s.ios as f64 / s.window_s / s.iops - 1.0).abs() < 1e-9);
}

#[test]
fn writes_read_their_data_from_host_memory() {
    let s = run(&[("workload.iodepth", "1"), ("workload.rw", "write"), ("workload.number_ios", "100")]);
    let ppb = ps_per_byte(16e9, 4.0);
    // Requests for 4 KiB at 512 B MRRS: the first leaves after one request time; data comes
    // back as 64 x 64 B completions (RCB) with 3-DW headers.
    let transfer = (24.0 * ppb).round() + 100e3 + 250e3 + ((4096.0 + 64.0 * 20.0) * ppb).round() + 100e3;
    let media = 256e3 + 150e3; // bus, then the PCM write
    let b = &s.write.breakdown_us.0;
    assert!((b[Component::Transfer as usize] - transfer / 1e6).abs() < 1e-6);
    assert!((b[Component::Media as usize] - media / 1e6).abs() < 1e-6);
    assert!((s.write.breakdown_us.total() - s.write.latency_us.mean).abs() < 1e-3);
}

#[test]
fn host_and_device_queueing_are_told_apart() {
    // One thread at QD32: each I/O costs its CPU 2.2 us to submit and 0.8 us to finish in an
    // interrupt handler run that finds several completed, which share the run's other 2.8 us.
    // Between 1 / (2.2 + 0.8 + 2.8) and 1 / (2.2 + 0.8) I/Os per us, far below what the device
    // can do: the CPU is busy all the time, and I/Os wait for it, almost never in the device.
    let s = run(&[("workload.iodepth", "32"), ("workload.number_ios", "50000")]);
    let b = &s.read.breakdown_us.0;
    assert!(s.iops > 1.0 / 5.8e-6 && s.iops < 1.0 / 3.0e-6, "{} IOPS", s.iops);
    assert!((s.iops * s.host.cpu_us_per_io * 1e-6 - 1.0).abs() < 0.01, "one CPU, always busy: {} IOPS x {} us", s.iops, s.host.cpu_us_per_io);
    assert!(b[Component::HostQueueing as usize] > 100.0 * b[Component::Queueing as usize].max(1e-3));
    // One media unit with a 20 us read: now the device is the bottleneck and I/Os queue inside it.
    let d = run(&[("workload.iodepth", "32"), ("workload.number_ios", "5000"), ("media.nvm.controllers", "1"), ("media.nvm.read_latency", "20us")]);
    let b = &d.read.breakdown_us.0;
    assert!(b[Component::Queueing as usize] > 10.0 * b[Component::HostQueueing as usize]);
}

#[test]
fn thinktime_spaces_a_closed_loop_by_exactly_its_length() {
    let base = run(&[("workload.iodepth", "1"), ("workload.number_ios", "1000")]);
    let think = run(&[("workload.iodepth", "1"), ("workload.number_ios", "1000"), ("workload.thinktime", "\"20us\"")]);
    let lat = base.read.latency_us.mean;
    assert!((think.read.latency_us.mean - lat).abs() < 1e-6, "thinking does not change the I/O's own latency");
    // 1000 I/Os and 999 pauses between them.
    let expect = (1000.0 * lat + 999.0 * 20.0) * 1e-6;
    assert!((think.sim_time_s - expect).abs() < 1e-9, "{} vs {expect}", think.sim_time_s);
}

#[test]
fn fio_flow_control_splits_the_ios_by_weight() {
    // fio's flow.fio: a writer of weight 1 and a reader of weight 8 in one flow group.
    let s = run(&[
        ("workload.numjobs", "1"),
        ("workload.runtime", "\"20ms\""),
        ("workload.number_ios", "100000000"),
        ("workload.iodepth", "4"),
        ("workload.jobs", "[{name = \"w\", rw = \"randwrite\", flow = 1}, {name = \"r\", rw = \"randread\", flow = 8}]"),
    ]);
    let (w, r) = (s.jobs[0].ios as f64, s.jobs[1].ios as f64);
    assert!(w > 100.0 && (r / w - 8.0).abs() < 0.1, "reads per write {}", r / w);
    // A job alone in its group is not held back: the same without flow gives the same reads.
    let alone = run(&[
        ("workload.numjobs", "1"),
        ("workload.runtime", "\"20ms\""),
        ("workload.number_ios", "100000000"),
        ("workload.iodepth", "4"),
        ("workload.jobs", "[{name = \"r\", rw = \"randread\", flow = 8}]"),
    ]);
    let free = run(&[("workload.numjobs", "1"), ("workload.runtime", "\"20ms\""), ("workload.number_ios", "100000000"), ("workload.iodepth", "4"), ("workload.rw", "randread")]);
    assert_eq!(alone.read.ios, free.read.ios);
}

#[test]
fn a_virtio_blk_request_pays_three_dependent_reads_where_nvme_pays_one() {
    // virtio-blk (split virtqueue): the device reads the available ring entry, then the
    // descriptor chain, then the request header, each after the one before; NVMe reads one
    // 64 B SQE. The fetch of a QD1 read so takes three small host-memory round trips against
    // one, and the rest of the path (controller, media, data) is the same device.
    let qd1 = |iface: &str| run(&[("workload.number_ios", "2000"), ("nvme.interface", iface)]);
    let (nvme, virtio) = (qd1("\"nvme\""), qd1("\"virtio-blk\""));
    let fetch = |s: &ssdlab_core::Summary| s.read.breakdown_us.0[Component::Fetch as usize];
    let ratio = fetch(&virtio) / fetch(&nvme);
    assert!((2.8..3.05).contains(&ratio), "fetch {} us vs {} us: {ratio}", fetch(&virtio), fetch(&nvme));
    let media = |s: &ssdlab_core::Summary| s.read.breakdown_us.0[Component::Media as usize];
    assert!((media(&virtio) - media(&nvme)).abs() < 1e-9);
    // Upstream: three read requests for one, and three completion writes (1, 8 and 2 B) for a
    // 16 B CQE: more TLPs; downstream no CQ head doorbell.
    assert!(virtio.metrics["pcie.up.wire_bytes"] > nvme.metrics["pcie.up.wire_bytes"]);
}
