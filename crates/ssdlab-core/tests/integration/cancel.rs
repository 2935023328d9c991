//! Long work outside the event loop stops when the caller's check says so (Ctrl-C in Python):
//! drive ageing and ATC studies return `Error::Cancelled` instead of running to the end.

use std::time::{Duration, Instant};

use ssdlab_core::ats::{self, synth, Access, Assoc, Policy, Study};
use ssdlab_core::cancel::with_check;
use ssdlab_core::{Error, Simulation};

/// Runs `work` under a check that says stop after `after`; returns its error and how long it
/// ran past that.
fn stopped<T>(after: Duration, work: impl FnOnce() -> ssdlab_core::Result<T>) -> (Option<Error>, Duration) {
    let t0 = Instant::now();
    let r = with_check(move |_| t0.elapsed() >= after, work);
    (r.err(), t0.elapsed().saturating_sub(after))
}

#[test]
fn ageing_stops_when_asked() {
    // Many drive writes of ageing by simulation: far longer than the test waits.
    let c = crate::config_from(Some("tlc"), &[("ftl.precondition", "\"aged\""), ("ftl.aging", "\"simulate\""), ("ftl.precondition_drive_writes", "50")]);
    let (err, late) = stopped(Duration::from_millis(200), || Simulation::new(c));
    assert!(matches!(err, Some(Error::Cancelled)), "{err:?}");
    assert!(late < Duration::from_secs(5), "stopped {late:?} late");
}

#[test]
fn atc_studies_stop_when_asked() {
    let s = synth::Synth { ios: 50_000_000, ..synth::Synth::default() };
    let study =
        Study { stus: vec![0], policies: vec![Policy::Lru, Policy::Fifo], assocs: vec![Assoc::Full], lines: vec![64, 1024], pin_ranges: vec![], pin_tagged: false, pin_dedicated: false, seed: 1 };
    let source = || Ok(Box::new(synth::stream(&s).map(Ok)) as Box<dyn Iterator<Item = ssdlab_core::Result<Access>>>);
    let (err, late) = stopped(Duration::from_millis(200), || ats::run_study(&study, source));
    assert!(matches!(err, Some(Error::Cancelled)), "{err:?}");
    assert!(late < Duration::from_secs(5), "stopped {late:?} late");
}
