//! The fixed benchmark scenarios behind `ssdlab bench` and `cargo bench`: each runs the
//! default device on one workload and reports simulated I/Os per wall-clock second.

use std::time::Instant;

use serde::Serialize;

use crate::config::build;
use crate::error::Result;
use crate::simulation::Simulation;

/// A benchmark scenario: a name, the preset it runs on, and settings applied over it.
pub struct Scenario {
    pub name: &'static str,
    pub preset: &'static str,
    pub settings: &'static [(&'static str, &'static str)],
}

/// Seed 003's four tenants, of weights 1 to 4, each at QD32.
const TENANTS_1_TO_4: &str =
    "[{name = \"vm1\", weight = 1, workload = {iodepth = 32}}, {name = \"vm2\", weight = 2, workload = {iodepth = 32}}, {name = \"vm3\", weight = 3, workload = {iodepth = 32}}, {name = \"vm4\", weight = 4, workload = {iodepth = 32}}]";

/// The scenarios, in the order they are reported.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "randread-4k-qd1",
        preset: "default",
        settings: &[("workload.numjobs", "1"), ("workload.rw", "randread"), ("workload.bs", "4k"), ("workload.iodepth", "1"), ("workload.number_ios", "200000")],
    },
    Scenario {
        name: "randread-4k-qd32",
        preset: "default",
        settings: &[("workload.numjobs", "1"), ("workload.rw", "randread"), ("workload.bs", "4k"), ("workload.iodepth", "32"), ("workload.number_ios", "2000000")],
    },
    Scenario {
        name: "randwrite-4k-qd32",
        preset: "default",
        settings: &[("workload.numjobs", "1"), ("workload.rw", "randwrite"), ("workload.bs", "4k"), ("workload.iodepth", "32"), ("workload.number_ios", "1000000")],
    },
    Scenario {
        name: "seqread-128k-qd8",
        preset: "default",
        settings: &[("workload.numjobs", "1"), ("workload.rw", "read"), ("workload.bs", "128k"), ("workload.iodepth", "8"), ("workload.number_ios", "100000")],
    },
    Scenario {
        name: "optane-randread-4k-qd16",
        preset: "optane",
        settings: &[("workload.numjobs", "1"), ("workload.rw", "randread"), ("workload.bs", "4k"), ("workload.iodepth", "16"), ("workload.number_ios", "1000000")],
    },
    Scenario {
        name: "tlc-randread-4k-qd16",
        preset: "tlc",
        settings: &[("workload.numjobs", "1"), ("workload.rw", "randread"), ("workload.bs", "4k"), ("workload.iodepth", "16"), ("workload.number_ios", "1000000")],
    },
    Scenario {
        name: "tlc-seqread-128k-qd8",
        preset: "tlc",
        settings: &[("workload.numjobs", "1"), ("workload.rw", "read"), ("workload.bs", "128k"), ("workload.iodepth", "8"), ("workload.number_ios", "100000")],
    },
    // Sequential writes over the TLC drive, filled in order: the write buffer and the dies'
    // programs at full speed; the units overwritten in order leave GC nothing to move (WAF 1).
    Scenario {
        name: "tlc-seqwrite-128k-qd8",
        preset: "tlc",
        settings: &[("workload.numjobs", "1"), ("workload.rw", "write"), ("workload.bs", "128k"), ("workload.iodepth", "8"), ("workload.number_ios", "100000")],
    },
    Scenario {
        name: "tlc-aged-randwrite-4k-qd32",
        preset: "tlc-aged",
        settings: &[("workload.numjobs", "1"), ("workload.rw", "randwrite"), ("workload.bs", "4k"), ("workload.iodepth", "32"), ("workload.number_ios", "300000")],
    },
    // Trims on the aged drive: each 4 KiB block trimmed (a Dataset Management deallocate),
    // then written again, under GC.
    Scenario {
        name: "tlc-aged-randtrimwrite-4k-qd32",
        preset: "tlc-aged",
        settings: &[("workload.numjobs", "1"), ("workload.rw", "randtrimwrite"), ("workload.bs", "4k"), ("workload.iodepth", "32"), ("workload.number_ios", "600000")],
    },
    // The same writes on the aged drive made 1 TiB (4096 blocks a plane): its forward map is
    // past the size whose leaves are dense from the start, so writes and GC's moves land in
    // sparse leaves (sorted lists) first, and the layout answers for units not yet moved.
    Scenario {
        name: "tlc-aged-1tib-randwrite-4k-qd32",
        preset: "tlc-aged",
        settings: &[
            ("media.nand.blocks_per_plane", "4096"),
            ("workload.numjobs", "1"),
            ("workload.rw", "randwrite"),
            ("workload.bs", "4k"),
            ("workload.iodepth", "32"),
            ("workload.number_ios", "200000"),
        ],
    },
    // Buffered I/O through the page cache: a sequential reader kept in memory by readahead, and
    // random writers paced by writeback into a 256 MiB cache.
    Scenario {
        name: "tlc-buffered-seqread-4k",
        preset: "tlc",
        settings: &[("workload.numjobs", "1"), ("workload.direct", "false"), ("workload.rw", "read"), ("workload.bs", "4k"), ("workload.iodepth", "1"), ("workload.number_ios", "1000000")],
    },
    Scenario {
        name: "tlc-buffered-randwrite-4k",
        preset: "tlc",
        settings: &[
            ("workload.numjobs", "1"),
            ("workload.direct", "false"),
            ("host.page_cache.size", "\"256MiB\""),
            ("workload.rw", "randwrite"),
            ("workload.bs", "4k"),
            ("workload.iodepth", "1"),
            ("workload.number_ios", "500000"),
        ],
    },
    // fio's zbd random writes on the zoned drive: 16 KiB writes of four jobs at QD8 at their
    // zones' write pointers, each full zone reset (and its 64 blocks erased) before it is
    // written again.
    Scenario { name: "zns-zbd-randwrite-16k", preset: "zns", settings: &[("workload.bs", "16k"), ("workload.iodepth", "8"), ("workload.number_ios", "100000")] },
    Scenario { name: "mqsim-randread-4k-qd32", preset: "mqsim", settings: &[("workload.number_ios", "500000")] },
    Scenario { name: "mqsim-cmt-randread-4k-qd32", preset: "mqsim", settings: &[("workload.number_ios", "500000"), ("ftl.map_cache", "\"2MiB\"")] },
    Scenario { name: "moneta-16-threads-4k", preset: "moneta", settings: &[("workload.numjobs", "16"), ("workload.number_ios", "60000")] },
    Scenario {
        name: "openexpress-hw-randwrite-16k",
        preset: "openexpress-hw",
        settings: &[("workload.numjobs", "10"), ("nvme.io_queues", "10"), ("workload.iodepth", "8"), ("workload.rw", "randwrite"), ("workload.bs", "16k"), ("workload.number_ios", "60000")],
    },
    // Seed 003: four tenants (weights 1-4) writing at random into one shared pool of the aged
    // drive, under io.weight (10000 I/Os each); each host write drags about 12 GC moves
    // through the dies.
    Scenario {
        name: "seed003-4-tenants-aged",
        preset: "ops-isolation",
        settings: &[("workload.number_ios", "10000"), ("host.share", "\"weight\""), ("host.cost_wrandiops", "8865"), ("tenants", TENANTS_1_TO_4)],
    },
    // The same tenants, each in a pool of its own (OPS isolation), the dies' time shared among
    // the pools by weight (`tenant_fair`): each die picks its next op from the pool furthest
    // behind its share, from the middle of a queue thousands deep.
    Scenario {
        name: "seed003-4-tenants-isolated-fair",
        preset: "ops-isolation",
        settings: &[
            ("workload.number_ios", "10000"),
            ("host.share", "\"weight\""),
            ("host.cost_wrandiops", "8865"),
            ("tenants", TENANTS_1_TO_4),
            ("ftl.pools", "\"isolated\""),
            ("media.nand.tenant_fair", "true"),
        ],
    },
    // The same tenants in one shared pool under FDP: each writes through a reclaim unit handle
    // of its own (seed 003's "aged FDP" case), so GC's victims and moves follow the handles.
    Scenario {
        name: "seed003-4-tenants-fdp",
        preset: "ops-isolation",
        settings: &[("workload.number_ios", "10000"), ("host.share", "\"weight\""), ("host.cost_wrandiops", "8865"), ("tenants", TENANTS_1_TO_4), ("ftl.placement", "\"fdp\"")],
    },
];

/// The measurement of one scenario. `wall_s` times the run only; preconditioning (functional,
/// for aged flash) is timed apart in `precondition_s`.
#[derive(Clone, Debug, Serialize)]
pub struct BenchResult {
    pub name: String,
    pub ios: u64,
    pub events: u64,
    pub wall_s: f64,
    pub sim_ios_per_sec: f64,
    pub precondition_s: f64,
}

/// Runs one scenario, with its I/O count scaled by `scale` (1.0 = as listed).
pub fn run_scenario(s: &Scenario, scale: f64) -> Result<BenchResult> {
    run_with(s, scale, |_| {}).map(|(r, _)| r)
}

/// [`run_scenario`] with the event loop's census (the `census` feature), counted over the
/// timed run alone: the result (whose wall time includes the census's own cost) and the census.
#[cfg(feature = "census")]
pub fn census_scenario(s: &Scenario, scale: f64) -> Result<(BenchResult, crate::simulation::Census)> {
    let (r, mut sim) = run_with(s, scale, Simulation::start_census)?;
    Ok((r, sim.take_census().unwrap_or_default()))
}

/// Builds the scenario's simulation (timed as its precondition), calls `before` on it, and
/// times its run.
fn run_with(s: &Scenario, scale: f64, before: impl FnOnce(&mut Simulation)) -> Result<(BenchResult, Simulation)> {
    let mut settings: Vec<(String, String)> = s.settings.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
    for kv in &mut settings {
        if kv.0 == "workload.number_ios" {
            let n: f64 = kv.1.parse().unwrap_or(1e5);
            kv.1 = format!("{}", ((n * scale) as u64).max(1000));
        }
    }
    let config = build(Some(s.preset), None, &settings)?;
    let t_build = Instant::now();
    let mut sim = Simulation::new(config)?;
    let precondition_s = t_build.elapsed().as_secs_f64();
    before(&mut sim);
    let t0 = Instant::now();
    let summary = sim.run()?;
    let wall = t0.elapsed().as_secs_f64();
    let r = BenchResult { name: s.name.to_string(), ios: summary.ios, events: summary.events, wall_s: wall, sim_ios_per_sec: if wall > 0.0 { summary.ios as f64 / wall } else { 0.0 }, precondition_s };
    Ok((r, sim))
}

/// Scenarios over streams rather than simulated I/Os: the ATC models, measured in addresses per
/// wall second, and the trace reader with its statistics, in trace lines per wall second.
pub const STREAM_SCENARIOS: &[&str] = &["atc-4way-lru-replay", "atc-fa-lru-curve-64k", "atc-4way-lru-raw-file", "trace-stats-mqsim"];

/// Runs a stream scenario: ATC scenarios over 20 M skewed addresses (200 k distinct 4 KiB
/// pages), the trace scenario over 5 M MQSim lines held in memory (one thread parses and
/// counts), each × `scale`.
pub fn run_stream(name: &str, scale: f64) -> Result<BenchResult> {
    use rand::{RngExt, SeedableRng};

    if name == "trace-stats-mqsim" {
        return run_trace_stats(((5_000_000.0 * scale) as u64).max(10_000));
    }
    if name == "atc-4way-lru-raw-file" {
        return run_atc_file(((40_000_000.0 * scale) as usize).max(10_000));
    }

    let n = ((20_000_000.0 * scale) as usize).max(10_000);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
    let keys: Vec<u32> = (0..n).map(|_| (rng.random_range(0.0f64..1.0).powi(3) * 200_000.0) as u32).collect();
    let t0 = Instant::now();
    match name {
        "atc-4way-lru-replay" => {
            let mut s = crate::ats::sim::CacheSim::new(crate::ats::Policy::Lru, 16, 4, &[], 1);
            for &k in &keys {
                s.access(k, u64::from(k), u64::MAX);
            }
            std::hint::black_box(s.hits);
        }
        "atc-fa-lru-curve-64k" => {
            let mut c = crate::ats::curve::FaLruCurve::new(65_536);
            for &k in &keys {
                c.access(k);
            }
            std::hint::black_box(c.hits(65_536));
        }
        _ => return Err(crate::Error::config("bench", name.to_string(), "no such scenario")),
    }
    let wall = t0.elapsed().as_secs_f64();
    Ok(BenchResult { name: name.to_string(), ios: n as u64, events: 0, wall_s: wall, sim_ios_per_sec: n as f64 / wall, precondition_s: 0.0 })
}

/// `n` skewed 4 KiB-page addresses written to a raw trace file (little-endian u64), then the
/// whole ATC study end to end as `ssdlab atc FILE` runs it: read the file, map pages to keys,
/// one 4-way LRU of 64 lines. The file is written before the clock starts and removed after.
fn run_atc_file(n: usize) -> Result<BenchResult> {
    use rand::{RngExt, SeedableRng};
    use std::io::Write as _;

    let path = std::env::temp_dir().join(format!("ssdlab-bench-atc-{}.u64", std::process::id()));
    let io = |e: std::io::Error| crate::Error::Io { path: path.display().to_string(), message: e.to_string() };
    {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&path).map_err(io)?);
        for _ in 0..n {
            let page = (rng.random_range(0.0f64..1.0).powi(3) * 200_000.0) as u64;
            w.write_all(&((page << 12) + 0x1_0000_0000).to_le_bytes()).map_err(io)?;
        }
        w.flush().map_err(io)?;
    }
    let study = crate::ats::Study {
        stus: vec![0],
        policies: vec![crate::ats::Policy::Lru],
        assocs: vec![crate::ats::Assoc::Ways(4)],
        lines: vec![64],
        pin_ranges: Vec::new(),
        pin_tagged: false,
        pin_dedicated: false,
        seed: 1,
    };
    let t0 = Instant::now();
    let points = crate::ats::run_study(&study, || crate::ats::trace::RawReader::open(&path).map(crate::ats::trace::RawReader::blocks));
    let wall = t0.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    std::hint::black_box(points?);
    Ok(BenchResult { name: "atc-4way-lru-raw-file".into(), ios: n as u64, events: 0, wall_s: wall, sim_ios_per_sec: n as f64 / wall, precondition_s: 0.0 })
}

/// `n` random MQSim lines (4-128 KiB over 1 TiB, 70 % reads, 8 devices) parsed and counted.
fn run_trace_stats(n: u64) -> Result<BenchResult> {
    use rand::{RngExt, SeedableRng};
    use std::fmt::Write as _;

    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
    let mut text = String::with_capacity(n as usize * 32);
    let mut t = 0u64;
    for _ in 0..n {
        t += rng.random_range(0..20_000u64);
        let sectors = 8u64 << rng.random_range(0..5u32);
        let lba = rng.random_range(0..(1u64 << 31) / sectors) * sectors;
        let _ = writeln!(text, "{t} {} {lba} {sectors} {}", rng.random_range(0..8u32), u8::from(rng.random_range(0..10u32) < 7));
    }
    let t0 = Instant::now();
    let mut r = crate::trace::TraceReader::from_reader("bench", Box::new(std::io::Cursor::new(text.into_bytes())), crate::trace::Format::Mqsim, true);
    let mut s = crate::trace::stats::TraceStats::default();
    // Batches of records, as `ssdlab trace stats` hands them from its reading thread.
    let mut batch = Vec::with_capacity(crate::trace::stats::BATCH);
    loop {
        let more = crate::trace::stats::read_batch(&mut r, &mut batch)?;
        s.add_all(&batch);
        if !more {
            break;
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    std::hint::black_box(s.summary(&r.counts, 1));
    Ok(BenchResult { name: "trace-stats-mqsim".into(), ios: n, events: 0, wall_s: wall, sim_ios_per_sec: n as f64 / wall, precondition_s: 0.0 })
}
