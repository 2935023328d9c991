//! Read data handed over in runs: the pieces a flash device serves from DRAM for one instant
//! (read-ahead, the write buffer, a joined page read) are one event, and so are the pieces of
//! read data a medium hands to the link one after another for one instant. Events scheduled
//! one after another for the same instant run one after another, with nothing between them,
//! so the runs must give every result that one event per piece gives, with fewer events.

use serde_json::Value;
use ssdlab_core::Simulation;

use crate::{config_from, scrub};

/// The run's summary without its wall-clock fields and event count, and the event count.
fn summary(preset: &str, settings: &[(&str, &str)], unfold: bool) -> (Value, u64) {
    let mut sim = Simulation::new(config_from(Some(preset), settings)).expect("simulation");
    if unfold {
        sim.unfold_runs();
    }
    let s = sim.run().expect("run");
    let events = s.events;
    let mut v = serde_json::to_value(&s).expect("summary serialises");
    scrub(&mut v, &["wall_time_s", "wall_s", "events"]);
    (v, events)
}

/// The first path where two summaries differ, with both values.
fn first_difference(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x.iter().find_map(|(k, va)| y.get(k).map_or_else(|| Some(format!("{path}.{k} missing")), |vb| first_difference(&format!("{path}.{k}"), va, vb))),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x.iter().zip(y).enumerate().find_map(|(i, (va, vb))| first_difference(&format!("{path}[{i}]"), va, vb)),
        _ => (a != b).then(|| format!("{path}: {a} with runs, {b} without")),
    }
}

/// A preset, settings over it, and whether runs must save events there.
type Case = (&'static str, Vec<(&'static str, &'static str)>, bool);

#[test]
fn runs_of_read_pieces_change_no_result_only_the_event_count() {
    const SEQ128: [(&str, &str); 4] = [("workload.rw", "\"read\""), ("workload.bs", "\"128k\""), ("workload.iodepth", "8"), ("workload.number_ios", "600")];
    let cases: Vec<Case> = vec![
        // Read-ahead: each 128 KiB read's 32 units leave DRAM together.
        ("tlc", SEQ128.to_vec(), true),
        // The same with no buffer latency: the pieces leave at the read's own instant.
        ("tlc", [&SEQ128[..], &[("ftl.buffer_latency", "\"0ns\"")]].concat(), true),
        ("qlc", SEQ128.to_vec(), true),
        ("p4500", SEQ128.to_vec(), true),
        ("zns", SEQ128.to_vec(), true),
        // Buffered reads through the page cache: its read-ahead reaches the drive's.
        ("tlc", vec![("workload.rw", "\"read\""), ("workload.bs", "\"4k\""), ("workload.direct", "false"), ("workload.number_ios", "6000")], true),
        // Half the drive never written: zeroes, sent at once, among pieces from DRAM.
        (
            "tlc",
            vec![("ftl.precondition", "\"clean\""), ("workload.rw", "\"rw\""), ("workload.bs", "\"16k\""), ("workload.iodepth", "16"), ("workload.number_ios", "2000"), ("workload.size", "\"64MiB\"")],
            true,
        ),
        (
            "tlc",
            vec![
                ("ftl.precondition", "\"clean\""),
                ("ftl.buffer_latency", "\"0ns\""),
                ("workload.rw", "\"randrw\""),
                ("workload.bs", "\"8k\""),
                ("workload.iodepth", "32"),
                ("workload.number_ios", "4000"),
                ("workload.size", "\"8MiB\""),
            ],
            true,
        ),
        // Reads that join a page read under way, and reads from the write buffer.
        (
            "tlc",
            vec![
                ("workload.rw", "\"randrw\""),
                ("workload.bs", "\"16k\""),
                ("workload.iodepth", "32"),
                ("workload.numjobs", "4"),
                ("workload.number_ios", "1500"),
                ("workload.size", "\"16MiB\""),
                ("ftl.read_coalesce", "true"),
            ],
            true,
        ),
        // The aged drive under GC, and a cached map's loads.
        ("tlc-aged", SEQ128.to_vec(), true),
        ("mqsim", vec![("workload.rw", "\"read\""), ("workload.bs", "\"64k\""), ("workload.iodepth", "16"), ("workload.number_ios", "1500"), ("ftl.map_cache", "\"2MiB\"")], false),
        // NVM: codewords stream to the link each at its own instant.
        ("optane", vec![("workload.number_ios", "4000")], false),
        ("default", SEQ128.to_vec(), false),
    ];
    for (preset, settings, saves) in &cases {
        let (runs, fewer) = summary(preset, settings, false);
        let (pieces, more) = summary(preset, settings, true);
        if let Some(d) = first_difference("summary", &runs, &pieces) {
            panic!("{preset} {settings:?}: {d}");
        }
        assert!(fewer <= more, "{preset} {settings:?}: {fewer} events with runs, {more} without");
        if *saves {
            assert!(fewer < more, "{preset} {settings:?}: runs saved no event ({fewer})");
        }
    }
}
