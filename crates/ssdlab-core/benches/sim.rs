//! `cargo bench`: the `ssdlab bench` scenarios, printed as simulated I/Os per wall second.

fn main() {
    println!("{:<22} {:>10} {:>12} {:>9} {:>16}", "scenario", "ios", "events", "wall_s", "sim_ios/s");
    for s in ssdlab_core::bench::SCENARIOS {
        match ssdlab_core::bench::run_scenario(s, 1.0) {
            Ok(r) => println!("{:<22} {:>10} {:>12} {:>9.3} {:>16.0}", r.name, r.ios, r.events, r.wall_s, r.sim_ios_per_sec),
            Err(e) => println!("{:<22} error: {e}", s.name),
        }
    }
}
