//! NVMe Flush, sent from outside as an emulated drive's host does (`Simulation::inject`), in
//! simulated time only: with a volatile write cache it waits until the buffer's data is
//! programmed (a partly filled page is padded first); without one, or on power-loss
//! protected NVM, it has nothing to wait for. Integrity mode checks that padding moved no
//! unit's mapping.

use ssdlab_core::io::{Kind, Op};
use ssdlab_core::sim::{SimDuration, SimTime};
use ssdlab_core::Simulation;

use super::config_from;

const HOST: [(&str, &str); 5] = [("host.submit_cost", "0ns"), ("host.completion", "\"poll\""), ("host.poll_complete_cost", "0ns"), ("host.complete_cost", "0ns"), ("workload.numjobs", "1")];

fn drive(base: &str, extra: &[(&str, &str)]) -> Simulation {
    let mut s: Vec<(&str, &str)> = HOST.to_vec();
    s.extend_from_slice(extra);
    let mut sim = Simulation::new(config_from(Some(base), &s)).expect("simulation");
    sim.serve_externally();
    sim
}

/// Issues one command at `at` and runs until it completes: its latency.
fn one(sim: &mut Simulation, at: SimTime, op: Op, kind: Kind, offset: u64, len: u64) -> SimDuration {
    let id = sim.inject(at, 0, op, kind, offset, len).expect("inject");
    let mut done = Vec::new();
    loop {
        let Some(t) = sim.next_event() else { panic!("{op:?} {kind:?} at {at:?} of {len} B at {offset} never completes") };
        sim.advance_to(t).expect("advance");
        sim.take_done(&mut done);
        if let Some(&(_, end)) = done.iter().find(|(c, _)| *c == id) {
            return end.since(at);
        }
    }
}

fn flush(sim: &mut Simulation, at: SimTime) -> SimDuration {
    one(sim, at, Op::Write, Kind::Flush, 0, 0)
}

fn ms(n: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_ms(n)
}

#[test]
fn a_flush_waits_for_the_buffered_write_to_be_programmed_and_pads_its_page() {
    let mut sim = drive("tlc", &[("ftl.integrity", "true")]);
    let lsb = sim.config().media.nand.program_latency.iter().copied().min().unwrap_or_default();
    let write = one(&mut sim, ms(0), Op::Write, Kind::Write, 1 << 20, 4096);
    assert!(write < SimDuration::from_us(50), "a 4 KiB write completes from the buffer: {write:?}");
    let f = flush(&mut sim, ms(1));
    // 4 KiB units, four to a 16 KiB page: the page the write went to (which the sequential
    // fill may have started) is padded with one to three units, then programmed.
    let padding = sim.flush_padding();
    assert!((1..=3).contains(&padding), "{padding} units of padding");
    assert!(f >= lsb, "the flush waited {f:?}, less than a page program ({lsb:?})");
    // Nothing is buffered now: a second flush has no program to wait for.
    let again = flush(&mut sim, ms(20));
    assert!(again < SimDuration::from_us(50), "{again:?}");
    assert_eq!(sim.flush_padding(), padding);
    // The unit reads back from its (now programmed) page; integrity mode finds it mapped right.
    let read = one(&mut sim, ms(30), Op::Read, Kind::Write, 1 << 20, 4096);
    assert!(read > SimDuration::from_us(20), "read from the flash, not the buffer: {read:?}");
    let s = sim.summary();
    let integrity = s.flash.and_then(|f| f.integrity).expect("integrity mode reports");
    assert_eq!((integrity.reads.lost, integrity.reads.stale, integrity.reads.duplicated), (0, 0, 0));
    assert_eq!(integrity.violation, None);
    // A flush is not an I/O of the statistics: one write and one read.
    assert_eq!((s.write.ios, s.read.ios), (1, 1));
}

#[test]
fn flushes_among_many_writes_keep_the_map_whole() {
    // Writes of every size, a flush every few, then GC over padded blocks: integrity mode
    // checks every read and every invariant at the end.
    // A small drive (4 planes x 128 blocks x 64 pages of 16 KiB), full from the sequential
    // fill, so that overwrites soon need GC.
    let small = [("ftl.integrity", "true"), ("ftl.write_buffer", "256KiB"), ("media.nand.channels", "2"), ("media.nand.ways", "1"), ("media.nand.pages_per_block", "64")];
    let mut sim = drive("tlc", &small);
    let cap = sim.config().exported_capacity() / 16384;
    let mut t = 0u64;
    for i in 0..4000u64 {
        let len = 4096 * (1 + i % 5);
        let offset = (i * 7919 % (cap - 2)) * 16384;
        one(&mut sim, SimTime(t), Op::Write, Kind::Write, offset, len);
        t += 50_000_000;
        if i % 7 == 0 {
            flush(&mut sim, SimTime(t));
        }
    }
    for i in 0..50u64 {
        one(&mut sim, SimTime(t + i * 1_000_000_000), Op::Read, Kind::Write, (i * 7919 % (cap - 2)) * 16384, 4096);
    }
    assert!(sim.flush_padding() > 0);
    let flash = sim.summary().flash.expect("a flash drive");
    assert!(flash.ftl.gc_victims > 0, "GC ran over padded blocks");
    let integrity = flash.integrity.expect("integrity mode reports");
    assert_eq!((integrity.reads.lost, integrity.reads.stale, integrity.reads.duplicated), (0, 0, 0));
    assert_eq!(integrity.violation, None);
}

#[test]
fn without_a_volatile_cache_or_on_protected_nvm_a_flush_waits_for_nothing() {
    let mut sim = drive("tlc", &[("ftl.write_cache", "false"), ("ftl.mapping_unit", "16KiB")]);
    let tlc_write = one(&mut sim, ms(0), Op::Write, Kind::Write, 0, 16384);
    let f = flush(&mut sim, ms(20));
    assert!(tlc_write > SimDuration::from_us(500) && f < SimDuration::from_us(50), "write {tlc_write:?}, flush {f:?}");
    assert_eq!(sim.flush_padding(), 0);
    let mut nvm = drive("optane", &[]);
    one(&mut nvm, ms(0), Op::Write, Kind::Write, 0, 4096);
    let f = flush(&mut nvm, ms(1));
    assert!(f < SimDuration::from_us(20), "{f:?}");
}
