//! `cargo bench`: the `ssdlab bench` scenarios, printed as simulated I/Os per wall second.
//! `cargo bench -p ssdlab-core -- NAME...` runs only the scenarios whose names contain a NAME
//! (`--exact`: whose names are a NAME); `--scale=S` scales their I/O counts (1 by default), for
//! a short run under a profiler.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let exact = args.iter().any(|a| a == "--exact");
    let scale = match args.iter().find_map(|a| a.strip_prefix("--scale=")).map_or(Ok(1.0), str::parse::<f64>) {
        Ok(s) if s > 0.0 && s.is_finite() => s,
        _ => {
            eprintln!("error: --scale=S takes a positive number");
            std::process::exit(2);
        }
    };
    let wanted = |name: &str| filters.is_empty() || filters.iter().any(|f| if exact { name == f.as_str() } else { name.contains(f.as_str()) });
    println!("{:<22} {:>10} {:>12} {:>9} {:>16}", "scenario", "ios", "events", "wall_s", "sim_ios/s");
    for s in ssdlab_core::bench::SCENARIOS.iter().filter(|s| wanted(s.name)) {
        match ssdlab_core::bench::run_scenario(s, scale) {
            Ok(r) => println!("{:<28} {:>10} {:>12} {:>9.3} {:>16.0}", r.name, r.ios, r.events, r.wall_s, r.sim_ios_per_sec),
            Err(e) => println!("{:<28} error: {e}", s.name),
        }
    }
    let streams: Vec<&str> = ssdlab_core::bench::STREAM_SCENARIOS.iter().copied().filter(|n| wanted(n)).collect();
    if !streams.is_empty() {
        println!("(stream scenarios count ATC addresses or trace lines, not I/Os)");
    }
    for name in streams {
        match ssdlab_core::bench::run_stream(name, scale) {
            Ok(r) => println!("{:<28} {:>10} {:>12} {:>9.3} {:>16.0}  ({:.1} ns each)", r.name, r.ios, "-", r.wall_s, r.sim_ios_per_sec, r.wall_s * 1e9 / r.ios as f64),
            Err(e) => println!("{name:<28} error: {e}"),
        }
    }
}
