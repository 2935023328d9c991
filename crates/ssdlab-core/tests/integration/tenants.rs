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
    let s = run(&format!("{SLOW}[nvme]\narbitration = \"wrr\"\n[workload]\nruntime = \"10ms\"\n{}", tenants(&list, "rw = \"randread\"\niodepth = 64")));
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
    let s = run(&format!("extends = \"dram\"\n[host]\nshare = \"max\"\nthrottle_slice = \"1ms\"\n[workload]\nruntime = \"50ms\"\n{}", tenants(&list, "rw = \"randwrite\"\niodepth = 8")));
    let capped = s.tenants[0].iops;
    // 50 ms at 20k/s is 1000 I/Os, plus the 20 tokens the bucket starts with.
    assert!((capped - 20_400.0).abs() < 400.0, "capped tenant: {capped:.0} IOPS");
    assert!(s.tenants[1].iops > 5.0 * capped, "the other tenant is not held back: {:.0}", s.tenants[1].iops);
}

#[test]
fn tenants_are_the_vms_of_address_translation() {
    // With ATS on, each tenant's rings and buffers live in an address space of its own: two
    // tenants give two PASIDs' worth of pinned ring translations.
    let list = [("a", 1, ""), ("b", 1, "")];
    let one = run(&format!("extends = \"dram\"\n[ats]\nenabled = true\n[workload]\nnumber_ios = 2000\n{}", tenants(&list[..1], "iodepth = 4")));
    let two = run(&format!("extends = \"dram\"\n[ats]\nenabled = true\n[workload]\nnumber_ios = 2000\n{}", tenants(&list, "iodepth = 4")));
    let pinned = |s: &Summary| s.ats.as_ref().map_or(0, |a| a.pinned_hits);
    assert!(pinned(&one) > 0 && pinned(&two) > pinned(&one), "{} vs {}", pinned(&one), pinned(&two));
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
        (format!("[host]\nvms = 3\n{}", tenants(&[("a", 1, ""), ("b", 1, "")], "")), "host.vms"),
        (tenants(&[("a", 1, "")], "iodepth = 0"), "tenants[0].workload.iodepth"),
        (tenants(&[("a", 1, "share = 0.25"), ("b", 1, "")], "size = \"200GiB\""), "tenants[0].workload.size"),
        (tenants(&[("a", 1, "share = 0.25"), ("b", 1, "")], "offset = \"100GiB\""), "tenants[0].workload.offset"),
        (format!("extends = \"ops-isolation\"\n[ftl]\nplacement = \"fdp\"\n{}", tenants(&[("a", 1, "")], "")), "ftl.placement"),
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

/// Steady-state WAF of four tenants sharing a small drive, placed by `ftl`: tenants write at
/// rates 1:2:3:4; the first rewrites its namespace sequentially (a log: its data dies in the
/// order it was written), the second skews 80 % of its writes to a fifth of its namespace,
/// the others write uniformly at random. Returns the WAF over the last of 8 drive writes, and
/// the blocks holding data and those holding more than one tenant's.
fn placement_waf(ftl: &str) -> (f64, u64, u64) {
    use rand::{RngExt, SeedableRng};
    use ssdlab_core::ftl::{Ftl, Placement, RuhType};
    use ssdlab_core::ids::Lpn;
    use ssdlab_core::media::nand::Geometry;
    let list = [("t1", 1, ""), ("t2", 2, ""), ("t3", 3, ""), ("t4", 4, "")];
    let c = load(&format!(
        "[media]\nkind = \"nand\"\n[media.nand]\nchannels = 2\nways = 2\nplanes = 2\nblocks_per_plane = 256\npages_per_block = 64\npage_size = \"4KiB\"\n[ftl]\nop_ratio = 0.12\n{ftl}\n{}",
        tenants(&list, "")
    ));
    let layout = c.tenant_layout().expect("layout");
    let g = Geometry::new(&c.media.nand, 4096);
    let mut f = match &layout.pools {
        Some(specs) => Ftl::with_pools(g, &c.ftl, 1, specs),
        None => Ftl::with_geometry(g, &c.ftl, 1),
    }
    .expect("ftl");
    f.set_tenants(layout.ranges.iter().map(|r| r.start / 4096).collect());
    if c.ftl.placement == Placement::Fdp {
        f.enable_placement(c.ftl.ruh_type == RuhType::Persistent);
    }
    f.fill_sequential().expect("fill");
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    let units = f.exported_units();
    let ranges: Vec<(u64, u64)> = layout.ranges.iter().map(|r| (r.start / 4096, r.end / 4096)).collect();
    let mut cursor = ranges[0].0;
    let mut write = |f: &mut Ftl, n: u64| {
        for _ in 0..n {
            let t = match rng.random_range(0..10u32) {
                0 => 0,
                1..=2 => 1,
                3..=5 => 2,
                _ => 3,
            };
            let (s, e) = ranges[t];
            let len = e - s;
            let lpn = match t {
                0 => {
                    cursor = if cursor + 1 >= e { s } else { cursor + 1 };
                    cursor
                }
                1 if rng.random_bool(0.8) => s + rng.random_range(0..len / 5),
                _ => s + rng.random_range(0..len),
            };
            f.write(Lpn(lpn), &mut |_| {}).expect("write");
        }
    };
    write(&mut f, 7 * units);
    f.reset_counters();
    write(&mut f, units);
    f.verify().expect("FTL invariants");
    let (with_data, mixed) = f.mixed_blocks();
    (f.counters().waf(), with_data, mixed)
}

#[test]
fn fdp_keeps_each_tenants_data_in_its_own_reclaim_units() {
    let (shared, d0, m0) = placement_waf("");
    let (isolated, _, m1) = placement_waf("pools = \"isolated\"\nops_split = \"equal\"");
    let (fdp, _, m2) = placement_waf("placement = \"fdp\"");
    let (fdp_p, d3, m3) = placement_waf("placement = \"fdp\"\nruh_type = \"persistent\"");
    println!("steady WAF: shared {shared:.2}, isolated pools {isolated:.2}, FDP initially isolated {fdp:.2}, FDP persistently isolated {fdp_p:.2}");
    println!("mixed blocks: shared {m0}/{d0}, isolated {m1}, FDP initial {m2}, FDP persistent {m3}/{d3}");
    assert!(m0 * 2 > d0, "one shared pool mixes the tenants in most blocks: {m0} of {d0}");
    assert_eq!(m1, 0, "isolated pools never mix");
    assert_eq!(m3, 0, "persistently isolated handles keep every tenant's data, moved or not, in its own reclaim units");
    assert!(m2 > 0 && m2 < m0, "initially isolated handles mix only what GC moved: {m2}");
    // The log tenant's reclaim units die whole once it has rewritten them, so kept apart from
    // the random writers they need no moves: placement lowers WAF against one mixed stream,
    // the spare space still shared. (Measured: 4.52 shared, 4.38 isolated pools, 3.88 and
    // 3.86 with FDP. With four random writers of different rates only, placement does not
    // help: the extra open reclaim units cost spare space and the rates alone barely separate
    // lifetimes, 4.56 shared against 4.75 and 5.07.)
    assert!(fdp_p < shared && fdp < shared, "FDP {fdp:.2} / {fdp_p:.2} against shared {shared:.2}");
}

/// Seed 003's drive aged, four equal tenants writing at random, each in an isolated pool with
/// its own part of the write buffer and a fair share of every die; VM-1 asks for 220 IOPS.
fn slo_run(dynamic: bool) -> Summary {
    let list = [("vm1", 100, "slo_iops = 220"), ("vm2", 100, ""), ("vm3", 100, ""), ("vm4", 100, "")];
    let ops = if dynamic { "ops_interval = \"200ms\"" } else { "" };
    run(&format!(
        "extends = \"ops-isolation\"\n[workload]\nruntime = \"20s\"\n[stats]\ninterval = \"1s\"\n[ftl]\nprecondition = \"aged\"\npools = \"isolated\"\nbuffer_split = true\n{ops}\n[media.nand]\ntenant_fair = true\n{}",
        tenants(&list, "rw = \"randwrite\"\niodepth = 32")
    ))
}

#[test]
fn dynamic_ops_sizing_meets_an_slo_that_an_equal_split_misses() {
    // With an equal split every pool collects victims about 91 % valid (WAF near 13) and gets
    // a quarter of the dies: about 140 IOPS each, so VM-1's 220 is missed in every interval.
    let fixed = slo_run(false);
    let slo = &fixed.tenants[0].slo[0];
    assert!(slo.compliance < 0.1, "equal split: VM-1 met its SLO in {} of {} intervals", slo.met, slo.intervals);
    // The controller moves free blocks from the tenants without an SLO to VM-1 until it
    // meets it: with more spare space its victims hold less valid data, each write costs its
    // quarter of the dies less GC, and its IOPS rise (the seed's 1 / (tGC + tPROG + tXfer)).
    let dynamic = slo_run(true);
    let t = &dynamic.tenants[0];
    let slo = &t.slo[0];
    assert!(slo.compliance > 0.6, "dynamic OPS: VM-1 met its SLO in {} of {} intervals", slo.met, slo.intervals);
    let f = dynamic.flash.as_ref().expect("flash");
    let rows: Vec<_> = f.ops_over_time.iter().filter(|r| r.tenant == "vm1").collect();
    let (first, last) = (rows.first().expect("rows"), rows.last().expect("rows"));
    assert!(last.spare_fraction > first.spare_fraction + 0.01, "VM-1's spare space grew: {:.3} -> {:.3}", first.spare_fraction, last.spare_fraction);
    let mean = |r: &[&ssdlab_core::ftl::ops::OpsRow]| r.iter().map(|x| x.model_units_s).sum::<f64>() / r.len() as f64;
    let (early, late) = (mean(&rows[..10]), mean(&rows[rows.len() - 10..]));
    assert!(late > early, "the seed's model predicts more IOPS for VM-1's emptier victims: {early:.0} -> {late:.0}");
    let vm1_waf = t.flash.as_ref().map_or(0.0, |x| x.waf);
    let others = dynamic.tenants[1..].iter().map(|x| x.flash.as_ref().map_or(0.0, |y| y.waf)).fold(f64::INFINITY, f64::min);
    assert!(vm1_waf < others, "VM-1 now pays less GC per write ({vm1_waf:.1}) than the donors ({others:.1})");
}

#[test]
fn each_tenant_replays_its_own_trace_inside_its_namespace() {
    let (Some(tpcc), Some(msr)) = (crate::shared("traces/mqsim_tpcc-small.trace"), crate::shared("traces/msr-cambridge1-sample.csv")) else { return };
    let replay = |p: &std::path::Path| format!("iodepth = 8\n[tenants.workload.replay]\ntrace = {:?}\nmode = \"qd\"\nlba = \"scale\"", p.display().to_string());
    let text = format!(
        "extends = \"ops-isolation\"\n[ftl]\nprecondition = \"clean\"\n[[tenants]]\nname = \"tpcc\"\nshare = 0.25\n[tenants.workload]\n{}\n[[tenants]]\nname = \"msr\"\n[tenants.workload]\n{}\n",
        replay(&tpcc),
        replay(&msr)
    );
    let c = load(&text);
    let layout = c.tenant_layout().expect("layout");
    let s = Simulation::new(c).and_then(|mut sim| sim.run()).expect("run");
    let r = s.replay.as_ref().expect("replay summary");
    assert_eq!(r.issued, s.ios, "every I/O came from a trace");
    assert!(r.trace.contains("tpcc") && r.trace.contains("msr"), "{}", r.trace);
    // Each trace is scaled onto its own namespace: the FTL sees each tenant write only there.
    for t in &s.tenants {
        assert!(t.ios > 100, "{}: {} I/Os", t.name, t.ios);
        let f = t.flash.as_ref().expect("flash figures");
        assert!(f.host_writes > 0, "{} wrote", t.name);
    }
    assert!(layout.ranges[0].end <= layout.ranges[1].start);
    // A job has one trace: workload.replay and a tenant's own are refused together; a
    // tenant's replay keys are checked under its path.
    let both = format!("[workload.replay]\ntrace = {:?}\n{text}", tpcc.display().to_string());
    let err = Config::from_toml_str(&both, "test").expect_err("two replays").to_string();
    assert!(err.contains("tenants[0].workload.replay"), "{err}");
    let bad = text.replace("mode = \"qd\"", "mode = \"qd\"\ntime_scale = 0");
    let err = Config::from_toml_str(&bad, "test").expect_err("bad time scale").to_string();
    assert!(err.contains("tenants[0].workload.replay.time_scale"), "{err}");
}

#[test]
fn a_donor_pool_never_gives_away_the_spare_its_gc_needs() {
    use rand::{RngExt, SeedableRng};
    use ssdlab_core::ftl::Ftl;
    use ssdlab_core::ids::Lpn;
    use ssdlab_core::media::nand::Geometry;
    // Two equal pools; the second, still empty, gives all the free blocks it may to the first.
    let list = [("a", 1, ""), ("b", 1, "")];
    let c = load(&format!(
        "[media]\nkind = \"nand\"\n[media.nand]\nchannels = 2\nways = 2\nplanes = 2\nblocks_per_plane = 128\npages_per_block = 32\npage_size = \"4KiB\"\n[ftl]\nop_ratio = 0.2\npools = \"isolated\"\n{}",
        tenants(&list, "")
    ));
    let layout = c.tenant_layout().expect("layout");
    let mut f = Ftl::with_pools(Geometry::new(&c.media.nand, 4096), &c.ftl, 1, layout.pools.as_ref().expect("pools")).expect("ftl");
    f.set_tenants(layout.ranges.iter().map(|r| r.start / 4096).collect());
    let before = f.pool_blocks(1);
    let moved: usize = (0..100).map(|_| f.move_free_blocks(1, 0, 64).len()).sum();
    assert!(moved > 0 && f.spare_free(1) == 0, "it gave {moved} and can give no more");
    assert_eq!(f.pool_blocks(1), before - moved as u32);
    // Now it fills its namespace and overwrites it at random: its GC still finds room.
    let lpns = f.pool_lpns(1);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
    for _ in 0..4 * (lpns.end - lpns.start) {
        f.write(Lpn(rng.random_range(lpns.clone())), &mut |_| {}).expect("the shrunk pool keeps writing");
    }
    f.verify().expect("FTL invariants");
}

#[test]
fn a_replayed_trace_under_io_cost_qos_ends() {
    // The QoS tick re-arms only while some job can still issue: replay-fed jobs ask their trace.
    let Some(trace) = crate::shared("traces/mqsim_tpcc-small.trace") else { return };
    let s = run(&format!(
        "extends = \"dram\"\n[host]\nshare = \"weight\"\ncost_qos_latency = \"50us\"\ncost_qos_period = \"1ms\"\n[[tenants]]\nname = \"a\"\n[tenants.workload]\niodepth = 8\n[tenants.workload.replay]\ntrace = {:?}\nmode = \"qd\"\nlba = \"scale\"\n[[tenants]]\nname = \"b\"\n[tenants.workload]\nnumber_ios = 1000\n",
        trace.display().to_string()
    ));
    assert_eq!(s.tenants[0].ios, 6999, "the whole trace");
    assert_eq!(s.tenants[1].ios, 1000);
}

#[test]
fn a_tenant_study_is_the_same_bit_for_bit() {
    // Every tenant mechanism at once: io.weight with QoS, WRR, isolated pools with buffer parts,
    // fair dies and dynamic OPS, on the aged drive with an SLO.
    let list = [("vm1", 1, "slo_iops = 200\nclass = \"high\""), ("vm2", 2, ""), ("vm3", 3, "class = \"low\"")];
    let text = format!(
        "extends = \"ops-isolation\"\n[workload]\nruntime = \"2s\"\n[stats]\ninterval = \"250ms\"\n[host]\nshare = \"weight\"\ncost_wrandiops = 8865\ncost_qos_latency = \"200ms\"\n[nvme]\narbitration = \"wrr\"\narbitration_burst = 2\n[ftl]\nprecondition = \"aged\"\npools = \"isolated\"\nbuffer_split = true\nops_interval = \"100ms\"\n[media.nand]\ntenant_fair = true\n{}",
        tenants(&list, "rw = \"randrw\"\nrwmixread = 30\niodepth = 16")
    );
    let json = |s: &Summary| {
        let mut v = serde_json::to_value(s).expect("json");
        v["wall_time_s"] = serde_json::Value::Null;
        v["flash"]["precondition"]["wall_s"] = serde_json::Value::Null;
        v.to_string()
    };
    let (a, b) = (run(&text), run(&text));
    assert_eq!(json(&a), json(&b));
    assert!(a.ios > 1000);
}
