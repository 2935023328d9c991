//! Tenants sharing a drive: NVMe weighted round robin, the host's proportional share, pools
//! of flash blocks per tenant, and who pays for garbage collection (seed 003).

use ssdlab_core::{Config, Simulation, Summary};

fn load(text: &str) -> Config {
    match Config::from_toml_str(text, "test") {
        Ok(c) => c,
        Err(e) => panic!("test config is invalid: {e}"),
    }
}

fn run(text: &str) -> Summary {
    Simulation::new(load(text)).and_then(|mut s| s.run()).expect("run")
}

/// `[[tenants]]` tables: name, weight and extra keys per tenant, one workload for all.
fn tenants(list: &[(&str, u32, &str)], workload: &str) -> String {
    use std::fmt::Write;
    list.iter().fold(String::new(), |mut s, (name, w, extra)| {
        let _ = write!(s, "[[tenants]]\nname = \"{name}\"\nweight = {w}\n{extra}\n[tenants.workload]\n{workload}\n");
        s
    })
}

/// Seed 003's four VMs (weights 1 to 4), each writing 4 KiB at random at queue depth 32 for
/// `runtime` on the `ops-isolation` drive, in `precondition` state, with the host's share
/// priced for the clean drive (see `proportionality_follows_weights_on_a_clean_drive`).
fn seed_vms(precondition: &str, ftl: &str, runtime: &str) -> Summary {
    let vms = tenants(&[("vm1", 1, ""), ("vm2", 2, ""), ("vm3", 3, ""), ("vm4", 4, "")], "rw = \"randwrite\"\niodepth = 32");
    run(&format!(
        "extends = \"ops-isolation\"\n[workload]\nruntime = \"{runtime}\"\n[host]\nshare = \"weight\"\ncost_wrandiops = {IOPS}\ncost_wseqiops = {IOPS}\ncost_wbps = \"{BPS}B/s\"\n[ftl]\nprecondition = \"{precondition}\"\n{ftl}\n{vms}"
    ))
}

/// The clean drive's random 4 KiB write rate, from its parameters: 8 dies, each moving a page
/// over its own 40 MT/s x8 channel (102.4 us) and programming it (800 us) in turn, so
/// 8 / 902.4 us. The `io.cost` model prices writes at this rate.
const IOPS: f64 = 8.0 / 902.4e-6;
const BPS: f64 = IOPS * 4096.0;

/// A device whose controller is the bottleneck: 4 commands in flight, 50 us each.
const SLOW: &str = "extends = \"dram\"\n[media.nvm]\nread_latency = \"50us\"\n[ctrl]\nmax_inflight = 4\n";

fn ratios(s: &Summary) -> Vec<f64> {
    s.tenants.iter().map(|t| t.proportionality).collect()
}

#[test]
fn wrr_serves_backlogged_queues_in_proportion_to_class_weights() {
    // An NVM device with 50 us reads whose controller holds 4 commands at a time (80k IOPS,
    // far below what the host submits): every tenant's queue is always backlogged, so the
    // arbiter alone decides who is served. Over N fetches with all
    // classes backlogged, a class gets N * w / W within a round's weight plus a burst (the
    // deficit a burst leaves is carried into the next round), and the commands in the
    // controller when the run stops add at most its 4. When the run stops each tenant still
    // has its 64 I/Os queued, which then drain (no longer backlogged): they are taken out.
    for burst in [1u32, 4] {
        let list = [("high", 1, "class = \"high\""), ("medium", 1, "class = \"medium\""), ("low", 1, "class = \"low\"")];
        let s = run(&format!(
            "{SLOW}[nvme]\narbitration = \"wrr\"\nwrr_weights = [8, 4, 2]\narbitration_burst = {burst}\n[workload]\nruntime = \"20ms\"\n{}",
            tenants(&list, "rw = \"randread\"\niodepth = 64")
        ));
        let n: u64 = s.tenants.iter().map(|t| t.ios - 64).sum();
        for (t, w) in s.tenants.iter().zip([8u64, 4, 2]) {
            let want = n as f64 * w as f64 / 14.0;
            let slack = (u64::from(burst) + w + 4) as f64;
            let got = (t.ios - 64) as f64;
            assert!((got - want).abs() <= slack, "burst {burst}, {}: {got} I/Os against {want:.0} +- {slack}", t.name);
        }
        assert!(n > 1000, "{n} I/Os: the controller was not kept busy");
    }
}

#[test]
fn urgent_queues_starve_the_weighted_classes() {
    let list = [("urgent", 1, "class = \"urgent\""), ("high", 1, "class = \"high\"")];
    let s = run(&format!(
        "{SLOW}[nvme]\narbitration = \"wrr\"\n[workload]\nruntime = \"10ms\"\n{}",
        tenants(&list, "rw = \"randread\"\niodepth = 64")
    ));
    let (u, h) = (s.tenants[0].ios, s.tenants[1].ios);
    // The high class gets only what the controller fetched before the urgent queue's first
    // doorbell arrived (at most its 4 tags), and its 64 queued I/Os once the urgent tenant
    // stops at the end of the run.
    assert!(h <= 64 + 4 && u > 10 * h, "urgent {u}, high {h}");
}

#[test]
fn round_robin_ignores_weights_and_depths() {
    // Plain round robin, controller-bound: equal shares whatever the classes.
    let list = [("a", 1, "class = \"high\""), ("b", 4, "class = \"low\"")];
    let s = run(&format!("{SLOW}[workload]\nruntime = \"10ms\"\n{}", tenants(&list, "rw = \"randread\"\niodepth = 64")));
    let (a, b) = (s.tenants[0].ios as f64, s.tenants[1].ios as f64);
    assert!((a / b - 1.0).abs() < 0.01, "{a} vs {b}");
}

#[test]
fn proportionality_follows_weights_on_a_clean_drive() {
    // The io.cost model is the clean drive's own capacity, so the host's virtual clock is the
    // bottleneck and splits it 1:2:3:4 (iocost hands each tenant cost / hweight of vtime).
    let s = seed_vms("clean", "", "2s");
    for (t, r) in s.tenants.iter().zip(ratios(&s)) {
        assert!((r / t.weight_ratio - 1.0).abs() < 0.03, "{}: bandwidth ratio {r:.3} against weight ratio {}", t.name, t.weight_ratio);
    }
    let total: f64 = s.tenants.iter().map(|t| t.iops).sum();
    assert!((total / IOPS - 1.0).abs() < 0.03, "the tenants together get the model's {IOPS:.0} IOPS, not {total:.0}");
}

#[test]
fn an_aged_shared_pool_departs_from_the_weights_and_isolated_pools_come_back() {
    // Aged, the drive writes at about 1/WAF of the model's rate: the io.cost clock never holds
    // anyone back, every tenant's 32 writes wait inside the device, and the device serves
    // them first come first served, so shares tend to the tenants' queue depths (equal).
    // Measured: 1 : 1.05 : 1.09 : 1.14 against 1 : 2 : 3 : 4.
    let shared = seed_vms("aged", "", "3s");
    let r = ratios(&shared);
    assert!(r[3] < 1.4, "aged shared pool: VM-4 gets {:.2}x VM-1, expected far below its weight ratio 4", r[3]);
    // Isolated pools whose spare blocks and write-buffer parts follow the weights: each
    // tenant's writes wait only for its own part of the buffer, which drains at the rate the
    // shared dies program pages, so bandwidth follows the parts (Little's law on each part).
    // Measured: 1 : 1.6 : 2.3 : 3.2.
    let isolated = seed_vms("aged", "pools = \"isolated\"\nops_split = \"weight\"\nbuffer_split = true", "3s");
    let q = ratios(&isolated);
    for i in 1..4 {
        let w = (i + 1) as f64;
        assert!((q[i] - w).abs() < (r[i] - w).abs(), "tenant {i}: isolated {:.2}, shared {:.2}, weight {w}", q[i], r[i]);
    }
    assert!(q[3] > 2.5, "isolated: VM-4 gets {:.2}x VM-1", q[3]);
    // Isolated pools without their own buffer parts still queue for one buffer: no better.
    let blocks_only = seed_vms("aged", "pools = \"isolated\"\nops_split = \"weight\"", "3s");
    assert!(ratios(&blocks_only)[3] < 1.4, "blocks alone: {:?}", ratios(&blocks_only));
}

#[test]
fn gc_in_a_shared_pool_moves_other_tenants_pages_and_isolated_pools_only_their_own() {
    let shared = seed_vms("aged", "", "1s");
    for t in &shared.tenants {
        let f = t.flash.as_ref().expect("per-tenant flash figures");
        assert!(f.gc_paid_own + f.gc_paid_others > 100, "{}: GC ran on its behalf", t.name);
        // Four equal namespaces mixed at random in the victims: about a quarter is its own.
        assert!(f.own_fraction > 0.15 && f.own_fraction < 0.35, "{}: {:.2} of the units moved for it were its own", t.name, f.own_fraction);
    }
    let moved: u64 = shared.tenants.iter().map(|t| t.flash.as_ref().map_or(0, |f| f.gc_moved)).sum();
    let paid: u64 = shared.tenants.iter().map(|t| t.flash.as_ref().map_or(0, |f| f.gc_paid_own + f.gc_paid_others)).sum();
    assert_eq!(moved, paid, "every moved unit has one owner and one payer (no idle GC here)");
    let unit_moves = shared.metrics["ftl.gc.units_moved"] as u64;
    assert_eq!(paid, unit_moves, "the attribution covers every unit GC moved");
    let isolated = seed_vms("aged", "pools = \"isolated\"", "1s");
    for t in &isolated.tenants {
        let f = t.flash.as_ref().expect("per-tenant flash figures");
        assert_eq!(f.gc_paid_others, 0, "{}: an isolated pool's GC moves only its tenant's pages", t.name);
        assert!(f.gc_paid_own > 0);
    }
}

#[test]
fn io_max_holds_each_tenant_to_its_limit() {
    // Token buckets: a tenant limited to 20k write IOPS gets 20k (plus the bucket's first
    // slice), the unlimited one the rest of a fast device.
    let list = [("capped", 100, "wiops = 20000"), ("free", 100, "")];
    let s = run(&format!(
        "extends = \"dram\"\n[host]\nshare = \"max\"\nthrottle_slice = \"1ms\"\n[workload]\nruntime = \"50ms\"\n{}",
        tenants(&list, "rw = \"randwrite\"\niodepth = 8")
    ));
    let capped = s.tenants[0].iops;
    // 50 ms at 20k/s is 1000 I/Os, plus the 20 tokens the bucket starts with.
    assert!((capped - 20_400.0).abs() < 400.0, "capped tenant: {capped:.0} IOPS");
    assert!(s.tenants[1].iops > 5.0 * capped, "the other tenant is not held back: {:.0}", s.tenants[1].iops);
}

#[test]
fn tenant_namespaces_split_the_drive_and_workloads_stay_inside() {
    let list = [("a", 100, "share = 0.25"), ("b", 100, "")];
    let c = load(&format!("extends = \"ops-isolation\"\n[ftl]\nprecondition = \"clean\"\n{}", tenants(&list, "rw = \"randwrite\"")));
    let layout = c.tenant_layout().expect("layout");
    let cap = c.exported_capacity();
    assert_eq!(layout.ranges[0].start, 0);
    assert_eq!(layout.ranges[0].end, layout.ranges[1].start);
    assert!(layout.ranges[1].end <= cap && cap - layout.ranges[1].end < 2 * 4096, "the namespaces cover the drive");
    let quarter = layout.ranges[0].end as f64 / cap as f64;
    assert!((quarter - 0.25).abs() < 1e-4, "{quarter}");
    let jobs = c.jobs();
    assert_eq!(jobs[1].2.offset.0, layout.ranges[1].start, "b's job starts at its namespace");
    assert_eq!(jobs[1].2.size.map(|s| s.0), Some(layout.ranges[1].end - layout.ranges[1].start));
}

#[test]
fn isolated_pools_share_out_the_spare_blocks_by_weight() {
    let list = [("vm1", 1, ""), ("vm2", 2, ""), ("vm3", 3, ""), ("vm4", 4, "")];
    let c = load(&format!("extends = \"ops-isolation\"\n[ftl]\nprecondition = \"clean\"\npools = \"isolated\"\nops_split = \"weight\"\n{}", tenants(&list, "")));
    let pools = c.tenant_layout().expect("layout").pools.expect("isolated pools");
    let total: u32 = pools.iter().map(|p| p.blocks_per_plane).sum();
    assert_eq!(total, c.media.nand.blocks_per_plane, "the pools share out every block of a plane");
    // Equal namespaces: the pools differ only by the spare blocks added to their data's, which
    // follow 1:2:3:4 (in whole blocks of a plane, so within one block).
    let spare: Vec<f64> = pools.iter().map(|p| p.op_ratio * f64::from(p.blocks_per_plane)).collect();
    let added = (spare.iter().sum::<f64>() - 4.0 * (spare[0] - spare[0].floor())) / 10.0;
    for (i, s) in spare.iter().enumerate() {
        let want = spare[0] + added * i as f64;
        assert!((s - want).abs() <= 1.0, "pool {i}: {s:.1} spare blocks per plane against {want:.1} ({spare:?})");
    }
}

#[test]
fn tenant_config_errors_name_their_key() {
    let bad = [
        (tenants(&[("a", 0, "")], ""), "tenants[0].weight"),
        (format!("[workload]\n[[workload.jobs]]\nrw = \"read\"\n{}", tenants(&[("a", 1, "")], "")), "workload.jobs"),
        (tenants(&[("a", 1, ""), ("a", 1, "")], ""), "tenants[1].name"),
        (tenants(&[("a", 1, "share = 0.7"), ("b", 1, "share = 0.6")], ""), "tenants"),
        (tenants(&[("a", 1, "slo_iops = 100")], ""), "tenants[0].slo_iops"),
        (tenants(&[("a", 1, "class = \"top\"")], ""), "tenants[0].class"),
        (format!("[nvme]\narbitration_burst = 3\n{}", tenants(&[("a", 1, "")], "")), "nvme.arbitration_burst"),
        (format!("[nvme]\nwrr_weights = [4, 2]\n{}", tenants(&[("a", 1, "")], "")), "nvme.wrr_weights"),
        // Eight tenants of the seed's drive, all the spare blocks to the last: the others'
        // pools are left without GC's margin.
        (
            format!(
                "extends = \"ops-isolation\"\n[ftl]\nprecondition = \"clean\"\npools = \"isolated\"\nops_split = \"weight\"\n{}",
                tenants(&[("a", 1, ""), ("b", 1, ""), ("c", 1, ""), ("d", 1, ""), ("e", 1, ""), ("f", 1, ""), ("g", 1, ""), ("h", 10000, "")], "")
            ),
            "ftl.ops_split",
        ),
    ];
    for (text, key) in bad {
        let err = Config::from_toml_str(&text, "test").expect_err(key).to_string();
        assert!(err.contains(key), "{key}: {err}");
    }
}
