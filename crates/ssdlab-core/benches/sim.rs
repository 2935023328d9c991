//! `cargo bench`: the `ssdlab bench` scenarios, printed as simulated I/Os per wall second.

fn main() {
    println!("{:<22} {:>10} {:>12} {:>9} {:>16}", "scenario", "ios", "events", "wall_s", "sim_ios/s");
    for s in ssdlab_core::bench::SCENARIOS {
        match ssdlab_core::bench::run_scenario(s, 1.0) {
            Ok(r) => println!("{:<28} {:>10} {:>12} {:>9.3} {:>16.0}", r.name, r.ios, r.events, r.wall_s, r.sim_ios_per_sec),
            Err(e) => println!("{:<28} error: {e}", s.name),
        }
    }
    println!("(stream scenarios count ATC addresses or trace lines, not I/Os)");
    for name in ssdlab_core::bench::STREAM_SCENARIOS {
        match ssdlab_core::bench::run_stream(name, 1.0) {
            Ok(r) => println!("{:<28} {:>10} {:>12} {:>9.3} {:>16.0}  ({:.1} ns each)", r.name, r.ios, "-", r.wall_s, r.sim_ios_per_sec, r.wall_s * 1e9 / r.ios as f64),
            Err(e) => println!("{name:<28} error: {e}"),
        }
    }
}
