//! The cached map (`ftl.map_cache`): whole translation pages or single entries, checked against
//! what their parameters imply.

use ssdlab_core::ftl::exported_units;
use ssdlab_core::media::nand::Geometry;
use ssdlab_core::stats::Component;
use ssdlab_core::{Simulation, Summary};

use crate::config_from;

fn run(base: &str, settings: &[(&str, &str)]) -> Summary {
    let mut all = vec![("workload.numjobs", "1"), ("ftl.read_ahead", "0")];
    all.extend_from_slice(settings);
    Simulation::new(config_from(Some(base), &all)).and_then(|mut s| s.run()).expect("run")
}

fn flash(s: &Summary) -> &ssdlab_core::ftl::FlashSummary {
    s.flash.as_ref().expect("a NAND run reports flash figures")
}

fn part(s: &Summary, c: Component) -> f64 {
    s.read.breakdown_us.0[c as usize]
}

fn hit_rate(s: &Summary) -> f64 {
    let (h, m) = (s.metrics["ftl.map_cache.hits"], s.metrics["ftl.map_cache.misses"]);
    h / (h + m)
}

#[test]
fn with_a_cached_map_a_read_that_misses_costs_one_extra_flash_read_in_its_own_component() {
    // SLC: tR 25 us, 16 KiB pages, 800 MT/s x8 channels, 0.1 us of command cycles. The map
    // cache holds one translation page (16 KiB / 4 B = 4096 units) of the 4 GiB drive's 256,
    // so nearly every random read misses: it reads its translation page (command, tR, the whole
    // page out), then its data. Nothing else runs at QD1, so the difference is exact, and it is
    // the breakdown's `map`: the data's own media time is unchanged.
    let qd1 = |rw: &'static str, cache: &'static str| run("slc", &[("workload.iodepth", "1"), ("workload.rw", rw), ("workload.number_ios", "2000"), ("ftl.map_cache", cache)]);
    let (dram, cached) = (qd1("randread", "0"), qd1("randread", "16KiB"));
    let misses = cached.metrics["ftl.map_cache.misses"];
    assert!(misses >= 1990.0, "random reads miss a one-page cache: {misses}");
    assert_eq!(flash(&cached).nand.map_reads, misses as u64, "one flash read per miss");
    assert_eq!(flash(&dram).nand.map_reads, 0);
    assert_eq!(flash(&cached).nand.host_reads, 2000);
    let map_read = 0.1 + 25.0 + 16384.0 / 800e6 * 1e6;
    assert!((part(&cached, Component::Media) - part(&dram, Component::Media)).abs() < 1e-9, "the data's media time is the same");
    assert_eq!(part(&dram, Component::Map), 0.0);
    let want = misses / 2000.0 * map_read;
    assert!((part(&cached, Component::Map) - want).abs() < 1e-6, "map {} us, want {want} us", part(&cached, Component::Map));
    assert!((cached.read.latency_us.mean - dram.read.latency_us.mean - want).abs() < 1e-3);
    // Sequential reads load a translation page once per 4096 units.
    let seq = qd1("read", "16KiB");
    assert_eq!(seq.metrics["ftl.map_cache.misses"] as u64, 1);
    // Writes change cached pages; evicting a changed page writes it back.
    let w = run("slc", &[("workload.rw", "randwrite"), ("workload.number_ios", "4000"), ("ftl.map_cache", "64KiB")]);
    let (wb, programs) = (w.metrics["ftl.map_cache.writebacks"], flash(&w).nand.map_programs as f64);
    assert!(wb > 3900.0 && programs <= wb && programs > wb - 200.0, "{wb} write-backs, {programs} programmed by the end");
}

#[test]
fn a_cache_of_entries_hits_in_proportion_to_the_entries_it_holds() {
    // Uniform random reads over every unit of a sequentially filled drive, against a cache of C
    // single entries that starts full (as MQSim's preconditioning leaves it): each read hits
    // with probability C / N, before and after its misses replace entries (LRU keeps C).
    let n = {
        let cfg = config_from(Some("slc"), &[]);
        exported_units(&Geometry::new(&cfg.media.nand, cfg.ftl.mapping_unit.0), cfg.ftl.op_ratio)
    };
    for (cache, entry) in [("4MiB", "8B"), ("8MiB", "8B"), ("6MiB", "12B")] {
        let s = run(
            "slc",
            &[("workload.rw", "randread"), ("workload.iodepth", "8"), ("workload.number_ios", "200000"), ("ftl.map_cache", cache), ("ftl.map_cache_unit", "\"entry\""), ("ftl.map_cache_entry", entry)],
        );
        let c = ssdlab_core::units::parse_size(cache).expect("size") as f64 / ssdlab_core::units::parse_size(entry).expect("size") as f64;
        let want = c / n as f64;
        let got = hit_rate(&s);
        // Binomial noise of 200,000 draws: a few tenths of a per cent at these rates.
        assert!((got - want).abs() < 4.0 * (want * (1.0 - want) / 200_000.0).sqrt() + 1e-3, "{cache} of {entry} entries: hit rate {got}, C/N = {want}");
        // A miss reads its translation page, or joins a read of it already under way.
        let (reads, misses) = (flash(&s).nand.map_reads as f64, s.metrics["ftl.map_cache.misses"]);
        assert!(reads <= misses && reads > 0.99 * misses, "{reads} map reads for {misses} misses");
        assert!(part(&s, Component::Map) > 0.0);
    }
}

#[test]
fn an_entry_miss_moves_one_sector_out_and_a_write_back_reads_then_programs_its_page() {
    // SLC at QD1: a miss senses the translation page (tR) and moves out the 512 B sector that
    // holds the entry, so its map time is the command, tR and 512 B at 800 MB/s.
    let reads = run("slc", &[("workload.rw", "randread"), ("workload.iodepth", "1"), ("workload.number_ios", "2000"), ("ftl.map_cache", "16KiB"), ("ftl.map_cache_unit", "\"entry\"")]);
    let misses = reads.metrics["ftl.map_cache.misses"];
    assert!(misses >= 1990.0, "{misses}");
    let want = misses / 2000.0 * (0.1 + 25.0 + 512.0 / 800e6 * 1e6);
    assert!((part(&reads, Component::Map) - want).abs() < 1e-6, "map {} us, want {want}", part(&reads, Component::Map));
    // Random writes load their entries in the background (a write completes in the buffer);
    // evicting a changed entry reads its translation page's other entries and programs the
    // page: one read per miss and per write-back, one program per write-back.
    let w = run("slc", &[("workload.rw", "randwrite"), ("workload.number_ios", "4000"), ("ftl.map_cache", "16KiB"), ("ftl.map_cache_unit", "\"entry\"")]);
    let (wb, f) = (w.metrics["ftl.map_cache.writebacks"], flash(&w));
    assert!(wb > 1000.0, "a small cache of changed entries writes back: {wb}");
    assert_eq!(f.nand.map_reads as f64, w.metrics["ftl.map_cache.misses"] + wb, "one read per miss and per write-back");
    assert!(f.nand.map_programs as f64 <= wb && f.nand.map_programs as f64 > wb - 200.0, "{} programs", f.nand.map_programs);
    assert_eq!(w.read.ios, 0);
    assert_eq!(w.write.breakdown_us.0[Component::Map as usize], 0.0, "writes do not wait for the map");
}

#[test]
fn a_write_back_takes_every_changed_entry_of_its_page_along() {
    // Sequential writes change every entry of one translation page before the next: when the
    // page's first entry is evicted, the page goes back with all of them, so a page of 4096
    // entries is written back once, not 4096 times.
    let w = run("slc", &[("workload.rw", "write"), ("workload.bs", "4KiB"), ("workload.number_ios", "40960"), ("ftl.map_cache", "64KiB"), ("ftl.map_cache_unit", "\"entry\"")]);
    let wb = w.metrics["ftl.map_cache.writebacks"];
    // 64 KiB of 8 B entries: 8192 entries, 2 pages' worth; 10 pages written; those still cached
    // at the end are not written back.
    assert!((7.0..=9.0).contains(&wb), "{wb} write-backs for 10 translation pages");
}

#[test]
fn a_partial_fill_writes_its_fraction_and_warms_the_cache_with_written_units_only() {
    // Half of the drive written: random reads over all of it find half unwritten (no flash
    // read); reads over the written half hit a warm cache of C entries with probability
    // C / (N / 2), every warm entry being a written unit.
    let n = {
        let cfg = config_from(Some("slc"), &[]);
        exported_units(&Geometry::new(&cfg.media.nand, cfg.ftl.mapping_unit.0), cfg.ftl.op_ratio)
    };
    let half = |extra: &[(&str, &str)]| {
        let mut all = vec![("ftl.precondition", "\"sequential\""), ("ftl.precondition_fill", "0.5"), ("workload.rw", "randread"), ("workload.number_ios", "100000")];
        all.extend_from_slice(extra);
        run("slc", &all)
    };
    let all = half(&[]);
    let unwritten = flash(&all).unmapped_reads as f64 / 100_000.0;
    assert!((unwritten - 0.5).abs() < 0.01, "{unwritten} of the reads found unwritten units");
    let size = format!("\"{}B\"", n / 2 * 4096);
    let cached = half(&[("workload.size", &size), ("ftl.map_cache", "4MiB"), ("ftl.map_cache_unit", "\"entry\"")]);
    assert_eq!(flash(&cached).unmapped_reads, 0);
    let want = f64::from(4u32 << 20) / 8.0 / (n / 2) as f64;
    let got = hit_rate(&cached);
    assert!((got - want).abs() < 4.0 * (want * (1.0 - want) / 100_000.0).sqrt() + 1e-3, "hit rate {got}, C / (N / 2) = {want}");
}
