//! A census of the event loop, for speed work (the `census` feature; without it none of this
//! is compiled). It counts the events a run handles by kind, where each push lands in the
//! future-event list, and logs the list's pushes and pops in order (8 bytes each), which
//! [`Census::replay`] runs through an [`EventQueue`] alone to time what the list costs. It
//! observes and decides nothing: a run with the census gives the same results as one without,
//! only slower (each event's kind is read from its `Debug` text).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::Event;
use crate::sim::{time::LIMIT, EventQueue, SimTime};

/// Where pushes are counted as landing: the place a push takes among the pending events.
pub const PLACES: [&str; 5] = ["first", "second", "third", "4th-20th", "further"];

/// The log's word for a pop. A push is its time (no later than [`LIMIT`]); a run of `n` pushes
/// scheduled together (one `push_all`) starts with `RUN - n`.
const POP: u64 = u64::MAX;
const RUN: u64 = u64::MAX - 1;

/// The replay's payload: an event's size and alignment, so that its queue moves what the run's
/// does.
type Payload = [u64; std::mem::size_of::<Event>() / 8];
const _: () = assert!(std::mem::size_of::<Payload>() == std::mem::size_of::<Event>());

/// What the census has counted since the run started it.
#[derive(Default)]
pub struct Census {
    /// Events handled, by kind (`Pcie::Send`, `Flash::Nand::ArrayDone`, ...).
    kinds: BTreeMap<String, u64>,
    /// Pushes by the place they took, in the bins of [`PLACES`].
    places: [u64; 5],
    /// The pending events at each push, summed (for the mean).
    pending: u64,
    /// Pushes and pops in order: the events pending when the census started come first, as
    /// pushes.
    log: Vec<u64>,
    /// A hash of the times popped, in order, to check a replay against.
    popped: u64,
    text: String,
    kind: String,
}

/// Folds `time` into a hash of a sequence of times.
fn fold(hash: u64, time: SimTime) -> u64 {
    (hash ^ time.0).wrapping_mul(0x0100_0000_01b3)
}

/// The place each of `items` takes when they are pushed onto `queue` in turn: behind the
/// pending events at its time or earlier, and the items before it at its time or earlier.
fn places<'a, E: Copy>(queue: &'a EventQueue<E>, items: &'a [(SimTime, E)]) -> impl Iterator<Item = usize> + 'a {
    items.iter().enumerate().map(move |(j, &(time, _))| queue.place_of(time) + items[..j].iter().filter(|(t, _)| *t <= time).count())
}

impl Census {
    /// A census whose log starts with the events pending on `queue`.
    pub(super) fn new<E: Copy>(queue: &EventQueue<E>) -> Census {
        let log = queue.pending_times().into_iter().map(|t| t.0.min(LIMIT.0)).collect();
        Census { log, ..Census::default() }
    }

    /// An event at `time` was popped to be handled.
    pub(super) fn popped(&mut self, time: SimTime, ev: &Event) {
        self.logged_pop(time);
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

    /// Logs a pop of an event at `time`.
    fn logged_pop(&mut self, time: SimTime) {
        self.log.push(POP);
        self.popped = fold(self.popped, time);
    }

    /// `items` are about to be pushed onto `queue`, one by one or (`together`) as one run.
    pub(super) fn pushed<E: Copy>(&mut self, queue: &EventQueue<E>, items: &[(SimTime, E)], together: bool) {
        if together {
            self.log.push(RUN - items.len() as u64);
        }
        let pending = queue.len();
        for (j, place) in places(queue, items).enumerate() {
            self.places[match place {
                0..=2 => place,
                3..=19 => 3,
                _ => 4,
            }] += 1;
            self.pending += (pending + j) as u64;
            self.log.push(items[j].0 .0.min(LIMIT.0));
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

    /// Pushes and pops logged (the pending events the log starts with among the pushes).
    pub fn operations(&self) -> usize {
        self.log.iter().filter(|&&w| w == POP || w <= LIMIT.0).count()
    }

    /// Replays the log, in order and with the same times, through an [`EventQueue`] alone, with
    /// payloads of an event's size; returns the wall time the replay took. Its pops come out in
    /// the run's order (see [`Self::replay_matches`]).
    pub fn replay(&self) -> Duration {
        let start = Instant::now();
        std::hint::black_box(self.replay_hash());
        start.elapsed()
    }

    /// Whether a replay pops the times the run popped, in the same order.
    pub fn replay_matches(&self) -> bool {
        self.replay_hash() == self.popped
    }

    /// Replays the log; the hash of the times popped.
    fn replay_hash(&self) -> u64 {
        let mut queue: EventQueue<Payload> = EventQueue::new();
        let mut run: Vec<(SimTime, Payload)> = Vec::new();
        let mut hash = 0;
        let mut i = 0;
        while i < self.log.len() {
            match self.log[i] {
                POP => {
                    if let Some((time, _)) = queue.pop() {
                        hash = fold(hash, time);
                    }
                }
                w if w > LIMIT.0 => {
                    let n = usize::try_from(RUN - w).unwrap_or(usize::MAX);
                    let items = &self.log[i + 1..(i + 1).saturating_add(n).min(self.log.len())];
                    run.clear();
                    run.extend(items.iter().enumerate().map(|(k, &t)| (SimTime(t), [k as u64; std::mem::size_of::<Payload>() / 8])));
                    queue.push_all(&run);
                    i += items.len();
                }
                t => queue.push(SimTime(t), [i as u64; std::mem::size_of::<Payload>() / 8]),
            }
            i += 1;
        }
        hash
    }
}

#[cfg(test)]
mod tests {
    use super::{places, Census};
    use crate::config::build;
    use crate::sim::{EventQueue, SimTime};
    use crate::simulation::{Simulation, Summary};

    /// The project's seeded generator, as a stream of u64 draws.
    fn draws(seed: u64) -> impl FnMut() -> u64 {
        use rand::{RngExt, SeedableRng};
        let mut rng = crate::sim::Rng::seed_from_u64(seed);
        move || rng.random::<u64>()
    }

    /// A queue of fewer than `most` events at times below `span`.
    fn random_queue(next: &mut impl FnMut() -> u64, most: u64, span: u64) -> EventQueue<u64> {
        let mut q = EventQueue::new();
        for i in 0..next() % most {
            q.push(SimTime(next() % span), i);
        }
        q
    }

    /// `len` events at times below `span`, marked `u64::MAX`, `u64::MAX - 1`, ..., in time
    /// order if `sorted`.
    fn random_run(next: &mut impl FnMut() -> u64, len: u64, span: u64, sorted: bool) -> Vec<(SimTime, u64)> {
        let mut run: Vec<(SimTime, u64)> = (0..len).map(|j| (SimTime(next() % span), u64::MAX - j)).collect();
        if sorted {
            run.sort_by_key(|&(t, _)| t);
        }
        run
    }

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
            assert!(c.replay_matches(), "{preset}: the replay pops the run's times in the run's order");
            assert!(c.kinds().keys().all(|k| !k.contains(['(', ' ', '{'])), "{preset}: kinds are variant paths: {:?}", c.kinds().keys());
            assert!(c.kinds().contains_key("Pcie::Send"), "{preset}: {:?}", c.kinds().keys());
        }
    }

    #[test]
    fn a_replay_pops_what_the_queue_popped_from_a_census_begun_midway() {
        let mut next = draws(23);
        for round in 0..100u64 {
            // Events pending when the census begins, in the ring and (past 256) in the heap.
            let mut q = random_queue(&mut next, 700, 300);
            let mut c = Census::new(&q);
            for _ in 0..3000 {
                match next() % 3 {
                    0 => {
                        if let Some((t, _)) = q.pop() {
                            c.logged_pop(t);
                        }
                    }
                    1 => {
                        let t = SimTime(next() % 400);
                        c.pushed(&q, &[(t, 0)], false);
                        q.push(t, 0);
                    }
                    _ => {
                        let (len, sorted) = (next() % 12, next().is_multiple_of(2));
                        let run = random_run(&mut next, len, 400, sorted);
                        c.pushed(&q, &run, true);
                        q.push_all(&run);
                    }
                }
            }
            while let Some((t, _)) = q.pop() {
                c.logged_pop(t);
            }
            assert!(c.replay_matches(), "round {round}");
        }
    }

    #[test]
    fn a_run_pushed_together_takes_the_places_counted() {
        let mut next = draws(29);
        for round in 0..300u64 {
            let mut q = random_queue(&mut next, 400, 150);
            // A run in time order (merged into the ring in one pass) or in any order.
            let len = 1 + next() % 40;
            let run = random_run(&mut next, len, 170, round % 2 == 0);
            let counted: Vec<usize> = places(&q, &run).collect();
            q.push_all(&run);
            let mut order = Vec::new();
            while let Some((_, e)) = q.pop() {
                order.push(e);
            }
            for (j, &(t, marker)) in run.iter().enumerate() {
                // Its place when pushed, and the later items that land ahead of it since.
                let overtaken = run[j + 1..].iter().filter(|(u, _)| *u < t).count();
                let popped_at = order.iter().position(|&e| e == marker).expect("popped");
                assert_eq!(popped_at, counted[j] + overtaken, "round {round}, item {j}");
            }
        }
    }
}
