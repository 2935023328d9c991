//! `cargo bench`: the `ssdlab bench` scenarios, printed as simulated I/Os per wall second.
//! `cargo bench -p ssdlab-core -- NAME...` runs only the scenarios whose names contain a NAME
//! (`--exact`: whose names are a NAME); `--scale=S` scales their I/O counts (1 by default), for
//! a short run under a profiler. Built with `--features census`, `--census` reports instead
//! what each scenario's timed run handled: its events per I/O by kind, where its pushes landed
//! in the future-event list, and the time that list's pushes and pops take replayed alone.

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
    if args.iter().any(|a| a == "--census") {
        census(&wanted, scale);
        return;
    }
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

#[cfg(feature = "census")]
fn census(wanted: &dyn Fn(&str) -> bool, scale: f64) {
    for s in ssdlab_core::bench::SCENARIOS.iter().filter(|s| wanted(s.name)) {
        // The run's own wall time, without the census (which slows it), as the replay's yardstick.
        let plain = match ssdlab_core::bench::run_scenario(s, scale) {
            Ok(r) => r.wall_s,
            Err(e) => {
                println!("{}: error: {e}", s.name);
                continue;
            }
        };
        let (r, c) = match ssdlab_core::bench::census_scenario(s, scale) {
            Ok(rc) => rc,
            Err(e) => {
                println!("{}: error: {e}", s.name);
                continue;
            }
        };
        let ios = r.ios.max(1) as f64;
        println!("{}: {} I/Os, {} events, {:.2} an I/O", r.name, r.ios, r.events, r.events as f64 / ios);
        let mut kinds: Vec<(&String, &u64)> = c.kinds().iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (kind, n) in kinds {
            println!("  {:>8.3} an I/O  {kind}", *n as f64 / ios);
        }
        let places = c.places();
        let pushes = places.iter().sum::<u64>().max(1) as f64;
        let shares: Vec<String> = places.iter().zip(ssdlab_core::simulation::PLACES).map(|(n, p)| format!("{p} {:.1} %", *n as f64 * 100.0 / pushes)).collect();
        println!("  pushes by place: {}; {:.1} events pending at a push, on average", shares.join(", "), c.mean_pending());
        let mut times: Vec<f64> = (0..3).map(|_| c.replay().as_secs_f64()).collect();
        times.sort_by(f64::total_cmp);
        let ops = c.operations();
        println!(
            "  the queue alone: {ops} pushes and pops replayed in {:.3} s (median of 3; {:.3}-{:.3}), {:.1} ns an event, {:.1} % of the run without the census ({plain:.3} s)",
            times[1],
            times[0],
            times[2],
            times[1] * 1e9 / (ops as f64 / 2.0).max(1.0),
            times[1] * 100.0 / plain.max(1e-9)
        );
    }
}

#[cfg(not(feature = "census"))]
fn census(_wanted: &dyn Fn(&str) -> bool, _scale: f64) {
    eprintln!("error: --census needs the census feature: cargo bench -p ssdlab-core --features census -- NAME --census");
    std::process::exit(2);
}
