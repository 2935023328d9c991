//! A census of the event loop, for speed work (the `census` feature; without it none of this
//! is compiled). It counts the events a run handles by kind, where each push lands in the
//! future-event list, and logs the list's pushes and pops in order, which [`Census::replay`]
//! runs through an [`EventQueue`] alone to time what the list costs. It observes and decides
//! nothing: a run with the census gives the same results as one without, only slower (each
//! event's kind is read from its `Debug` text).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::Event;
use crate::sim::{EventQueue, SimTime};

/// Where pushes are counted as landing: the place a push takes among the pending events.
pub const PLACES: [&str; 5] = ["first", "second", "third", "4th-20th", "further"];

/// One operation on the future-event list.
#[derive(Clone, Copy)]
enum Op {
    Push(SimTime),
    /// The next `n` pushes were scheduled together, as one `push_all`.
    Run(u32),
    Pop,
}

/// What the census has counted since it was made or cleared.
#[derive(Default)]
pub struct Census {
    /// Events handled, by kind (`Pcie::Send`, `Flash::Nand::ArrayDone`, ...).
    kinds: BTreeMap<String, u64>,
    /// Pushes by the place they took, in the bins of [`PLACES`].
    places: [u64; 5],
    /// The pending events at each push, summed (for the mean).
    pending: u64,
    ops: Vec<Op>,
    text: String,
    kind: String,
}

impl Census {
    /// An event was popped to be handled.
    pub(super) fn popped(&mut self, ev: &Event) {
        self.ops.push(Op::Pop);
        // The kind is the variants' path: `Pcie(Send { cmd: .. })` is `Pcie::Send`.
        self.text.clear();
        let _ = write!(self.text, "{ev:?}");
        let end = self.text.find([' ', '{', ')']).unwrap_or(self.text.len());
        self.kind.clear();
        for part in self.text[..end].split('(') {
            if !self.kind.is_empty() {
                self.kind.push_str("::");
            }
            self.kind.push_str(part);
        }
        if let Some(n) = self.kinds.get_mut(self.kind.as_str()) {
            *n += 1;
        } else {
            self.kinds.insert(self.kind.clone(), 1);
        }
    }

    /// `items` are about to be pushed onto `queue`, one by one or (`together`) as one run.
    pub(super) fn pushed(&mut self, queue: &EventQueue<Event>, items: &[(SimTime, Event)], together: bool) {
        if together {
            self.ops.push(Op::Run(u32::try_from(items.len()).unwrap_or(u32::MAX)));
        }
        let pending = queue.len();
        for (j, &(time, _)) in items.iter().enumerate() {
            // Behind the pending events at `time` or earlier, and the run's own before it.
            let place = queue.place_of(time) + items[..j].iter().filter(|(t, _)| *t <= time).count();
            self.places[match place {
                0..=2 => place,
                3..=19 => 3,
                _ => 4,
            }] += 1;
            self.pending += (pending + j) as u64;
            self.ops.push(Op::Push(time));
        }
    }

    /// Events handled, by kind.
    pub fn kinds(&self) -> &BTreeMap<String, u64> {
        &self.kinds
    }

    /// Pushes by the place they took, in the bins of [`PLACES`].
    pub fn places(&self) -> [u64; 5] {
        self.places
    }

    /// The mean number of events pending at a push.
    pub fn mean_pending(&self) -> f64 {
        let pushes: u64 = self.places.iter().sum();
        if pushes == 0 {
            0.0
        } else {
            self.pending as f64 / pushes as f64
        }
    }

    /// Pushes and pops logged.
    pub fn operations(&self) -> usize {
        self.ops.iter().filter(|o| !matches!(o, Op::Run(_))).count()
    }

    /// Replays the logged pushes and pops, in order and with the same times, through an
    /// [`EventQueue`] alone, with 24-byte payloads (an event takes at most 24 bytes); returns
    /// the wall time the replay took. A pop of an event pushed before the census began finds
    /// the replay's queue without it; nothing else differs.
    pub fn replay(&self) -> Duration {
        let mut queue: EventQueue<[u64; 3]> = EventQueue::new();
        let mut run: Vec<(SimTime, [u64; 3])> = Vec::new();
        let mut sink = 0u64;
        let start = Instant::now();
        let mut i = 0;
        while i < self.ops.len() {
            match self.ops[i] {
                Op::Push(time) => queue.push(time, [i as u64, 0, 0]),
                Op::Run(n) => {
                    run.clear();
                    let items = &self.ops[i + 1..(i + 1 + n as usize).min(self.ops.len())];
                    for (k, op) in items.iter().enumerate() {
                        if let Op::Push(time) = *op {
                            run.push((time, [k as u64, 0, 0]));
                        }
                    }
                    queue.push_all(&run);
                    i += items.len();
                }
                Op::Pop => {
                    if let Some((time, e)) = queue.pop() {
                        sink = sink.wrapping_add(time.0 ^ e[0]);
                    }
                }
            }
            i += 1;
        }
        std::hint::black_box(sink);
        start.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::build;
    use crate::simulation::{Simulation, Summary};

    /// The run's summary, its census if `census`, and the events pending before and after it.
    fn run(preset: &str, settings: &[(&str, &str)], census: bool) -> (Summary, Option<super::Census>, usize, usize) {
        let settings: Vec<(String, String)> = settings.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
        let mut sim = Simulation::new(build(Some(preset), None, &settings).expect("config")).expect("simulation");
        if census {
            sim.start_census();
        }
        let before = sim.queue.len();
        let summary = sim.run().expect("run");
        (summary, sim.take_census(), before, sim.queue.len())
    }

    #[test]
    fn a_census_changes_no_result_and_counts_each_event_once() {
        let cases: [(&str, &[(&str, &str)]); 2] = [
            ("default", &[("workload.rw", "\"randread\""), ("workload.iodepth", "32"), ("workload.number_ios", "3000")]),
            ("tlc-aged", &[("media.nand.blocks_per_plane", "48"), ("workload.rw", "\"randwrite\""), ("workload.iodepth", "32"), ("workload.number_ios", "3000")]),
        ];
        for (preset, settings) in cases {
            let (mut plain, none, _, _) = run(preset, settings, false);
            let (mut counted, census, before, after) = run(preset, settings, true);
            assert!(none.is_none(), "{preset}: no census unless started");
            // Everything but the wall clock's readings.
            for s in [&mut plain, &mut counted] {
                s.wall_time_s = 0.0;
                if let Some(f) = &mut s.flash {
                    f.precondition.wall_s = 0.0;
                }
            }
            assert!(plain == counted, "{preset}: the census changed a result");
            let c = census.expect("started");
            let handled: u64 = c.kinds().values().sum();
            assert_eq!(handled, counted.events, "{preset}: every event handled, counted once");
            // Every event handled was pending at the start or pushed since; what is left pending
            // at the end was pushed too.
            let pushes: u64 = c.places().iter().sum();
            assert_eq!(pushes + before as u64, handled + after as u64, "{preset}: every push counted");
            assert_eq!(c.operations() as u64, handled + pushes, "{preset}: a pop per event and every push logged");
            assert!(c.kinds().keys().all(|k| !k.contains(['(', ' ', '{'])), "{preset}: kinds are variant paths: {:?}", c.kinds().keys());
            assert!(c.kinds().contains_key("Pcie::Send"), "{preset}: {:?}", c.kinds().keys());
            c.replay();
        }
    }
}
