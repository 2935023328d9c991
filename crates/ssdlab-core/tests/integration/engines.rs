//! The host's I/O engines: each one's CPU cost per I/O from its components at QD1, and its rate
//! on one saturated core against the published per-core figure its components were fitted to.

use ssdlab_core::host::EngineCosts;
use ssdlab_core::stats::Component;
use ssdlab_core::{Simulation, Summary};

use super::{config, config_from};

fn us(d: ssdlab_core::sim::SimDuration) -> f64 {
    d.as_ps() as f64 / 1e6
}

fn qd1(engine: &str) -> Summary {
    Simulation::new(config(&[("host.engine", &format!("\"{engine}\"")), ("workload.iodepth", "1"), ("workload.number_ios", "500")])).unwrap().run().unwrap()
}

#[test]
fn at_qd1_each_engine_pays_its_components_once_per_io() {
    let c = EngineCosts::default();
    let (sys, blk, end) = (us(c.syscall), us(c.block), us(c.end));
    // A thread at QD1 always waits for its completion: it sleeps (interrupt) or spins (poll).
    let irq = us(c.irq) + us(c.irq_complete) + end;
    let cases = [
        ("psync", sys + blk + irq + us(c.wakeup)),
        ("libaio", sys + us(c.aio) + blk + irq + us(c.wakeup) + sys),
        ("io_uring", sys + us(c.uring) + blk + irq + us(c.wakeup) + sys),
        ("io_uring-hipri", sys + us(c.uring) + blk + us(c.poll) + end + sys),
        ("io_uring-sqpoll", us(c.uring) + blk + irq),
        ("spdk", us(c.spdk_submit) + us(c.spdk_complete)),
    ];
    for (engine, want) in cases {
        let s = qd1(engine);
        let sw = s.read.breakdown_us.0[Component::HostSoftware as usize];
        assert!((sw - want).abs() < 1e-6, "{engine}: host software {sw} us per I/O, components say {want}");
        assert!((s.read.breakdown_us.total() - s.read.latency_us.mean).abs() < 1e-3, "{engine}: the breakdown sums to the latency");
    }
}

#[test]
fn polling_threads_never_sleep_and_sqpoll_burns_its_own_cpu() {
    let wakeups = |s: &Summary| s.metrics["host.wakeups"];
    let hipri = qd1("io_uring-hipri");
    let spdk = qd1("spdk");
    let uring = qd1("io_uring");
    assert_eq!(wakeups(&hipri), 0.0, "a polling thread never sleeps");
    assert_eq!(wakeups(&spdk), 0.0);
    assert_eq!(wakeups(&uring), 500.0, "at QD1 the thread sleeps for every completion");
    let sq = qd1("io_uring-sqpoll");
    let per_io = sq.metrics["host.sq_thread.busy"] / 1e6 / 500.0;
    let c = EngineCosts::default();
    assert!((per_io - us(c.uring) - us(c.block)).abs() < 1e-9, "the SQ thread submits: {per_io} us per I/O");
    assert_eq!(sq.metrics["host.syscalls"], 0.0, "sqpoll submits without a system call and reaps by spinning on its ring");
    assert_eq!(wakeups(&sq), 0.0, "a thread spinning on its ring never sleeps");
    assert_eq!(spdk.metrics["host.syscalls"], 0.0);
}

/// One job at QD128 submitting 32 I/Os per call (fio's `t/io_uring` set-up) on a drive no part
/// of which binds before the job's CPU: its IOPS are one over the engine's cost per I/O.
fn saturated(engine: &str) -> Summary {
    let c = config_from(
        Some("dram"),
        &[
            ("host.engine", &format!("\"{engine}\"")),
            ("workload.numjobs", "1"),
            ("workload.iodepth", "128"),
            ("workload.iodepth_batch", "32"),
            ("workload.number_ios", "60000"),
            ("nvme.queue_depth", "1024"),
            ("pcie.gen", "5"),
            ("pcie.lanes", "16"),
            ("ctrl.mode", "\"hardware\""),
            ("ctrl.max_inflight", "4096"),
            ("media.nvm.bus_bandwidth", "\"256GB/s\""),
        ],
    );
    Simulation::new(c).unwrap().run().unwrap()
}

#[test]
fn one_saturated_core_reaches_each_engines_published_rate() {
    // Published 4 KiB random-read rates of one core (cited in `host::engine`'s defaults):
    // io_uring polled 1.7 M and by interrupt 1.2 M, libaio 608 k (Axboe, "Efficient IO with
    // io_uring", section 9); SPDK 10.39 M (spdk.io, 2019-05-06).
    for (engine, published) in [("io_uring-hipri", 1.7e6), ("io_uring", 1.2e6), ("libaio", 608e3), ("spdk", 10.39e6)] {
        let s = saturated(engine);
        let busy = s.metrics["host.cpu.busy"] / 1e12;
        let util = busy / (s.read.ios as f64 / s.iops);
        assert!(util > 0.97, "{engine}: the job's CPU must be what binds (busy {util:.3} of the run)");
        let err = s.iops / published - 1.0;
        assert!(err.abs() < 0.05, "{engine}: {:.0} IOPS on one core, published {published:.0} ({:+.1} %)", s.iops, err * 100.0);
    }
}

/// Ren and Trivedi, "Performance Characterization of Modern Storage Stacks: POSIX I/O,
/// libaio, SPDK, and io_uring" (CHEOPS '23), their artifact's fio 3.32 JSON for one job of 4 KiB
/// random reads at QD1 on one Optane SSD (github.com/ZebinRen/Performance-Characterization-Storage-Stacks
/// at 6add9ec, example_results/2-iops_d1_qd1/results/*_dev1.txt): psync 94,629.5 IOPS at
/// 10.266 us mean with fio's sys_cpu at 27.64 % (2.92 us of kernel time per I/O); io_uring with
/// sqthread_poll 8.869 us and SPDK 6.885 us on the same drive.
#[test]
fn psync_and_sqpoll_cost_what_a_published_qd1_run_measured() {
    // psync: the kernel time of one pread (system call, block layer, interrupt, wake-up), on
    // the job's CPU. fio's sys_cpu may miss interrupt time spent while the thread slept, so the
    // bound is loose on that side only by the interrupt's share.
    let psync = qd1("psync");
    let kernel = psync.metrics["host.cpu.busy"] / 1e6 / 500.0;
    let published = 0.2764 / 94_629.5 * 1e6;
    assert!((kernel / published - 1.0).abs() < 0.15, "psync: {kernel:.2} us of kernel time per I/O, fio measured {published:.2}");
    // sqpoll: the latency it adds over SPDK's on the same drive (no system call, no wake-up:
    // the SQ thread's pickup and the interrupt).
    let (sq, spdk) = (qd1("io_uring-sqpoll"), qd1("spdk"));
    let over = sq.read.latency_us.mean - spdk.read.latency_us.mean;
    let published = 8.869 - 6.885;
    assert!((over / published - 1.0).abs() < 0.15, "sqpoll: {over:.2} us over SPDK at QD1, published {published:.2}");
}

#[test]
fn an_engine_refuses_what_its_path_cannot_do() {
    use ssdlab_core::config::build;
    use ssdlab_core::Error;
    let problem = |settings: &[(&str, &str)], key: &str, part: &str| {
        let s: Vec<(String, String)> = settings.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
        match build(None, None, &s) {
            Err(Error::Config(found)) => assert!(found.iter().any(|i| i.path == key && i.rule.contains(part)), "{settings:?}: {found:?}"),
            other => panic!("{settings:?} was not refused: {:?}", other.err()),
        }
    };
    problem(&[("host.engine", "\"psync\""), ("workload.iodepth", "4")], "workload.iodepth", "synchronous engine psync");
    problem(&[("workload.ioengine", "\"spdk\""), ("host.scheduler", "\"thread\"")], "host.scheduler", "no kernel block layer");
    problem(&[("host.engine", "\"spdk\""), ("workload.direct", "false")], "workload.direct", "direct I/O only");
    problem(&[("host.engine", "\"io_uring\""), ("host.completion", "\"poll\"")], "host.completion", "io_uring-hipri");
    problem(&[("workload.iodepth", "4"), ("workload.iodepth_batch", "8")], "workload.iodepth_batch", "between 1 and iodepth");
    problem(&[("host.engine", "\"io_uring_cmd\"")], "host.engine", "must be one of");
}

#[test]
fn a_jobs_engine_overrides_the_hosts() {
    // Two jobs on one drive: the psync one sleeps for each of its completions, the SPDK one
    // never does.
    let c = config(&[("host.engine", "\"spdk\""), ("workload.iodepth", "1"), ("workload.number_ios", "300"), ("workload.jobs", "[{name = \"sync\", ioengine = \"psync\"}, {name = \"user\"}]")]);
    let s = Simulation::new(c).unwrap().run().unwrap();
    assert_eq!(s.metrics["host.wakeups"], 300.0);
    let by = |name: &str| s.jobs.iter().find(|j| j.name == name).unwrap().read.breakdown_us.0[Component::HostSoftware as usize];
    let costs = EngineCosts::default();
    assert!((by("user") - us(costs.spdk_submit) - us(costs.spdk_complete)).abs() < 1e-6, "{}", by("user"));
    assert!(by("sync") > 2.0, "{}", by("sync"));
}
