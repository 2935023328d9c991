//! Emulation (`ssdlab serve`): the simulated drive in real time, for real software. A request
//! from outside enters the simulation at the simulated instant of its wall-clock arrival, and
//! its reply is released once wall-clock time reaches its simulated completion.
//!
//! One engine thread owns the [`Simulation`] and keeps its clock on the wall clock (scaled by
//! `time_scale`: simulated time runs that many times slower): it injects arrivals in order,
//! processes every event that wall-clock time has reached, and releases completed requests to
//! the threads waiting for them. It never runs ahead of the wall clock, so a request that
//! arrives later can still contend with one in flight, as in the simulation; how far behind
//! the wall clock each completion was processed is the emulation's lag, kept as a histogram.
//!
//! Data lives in a sparse [`store::Store`]; a read returns what was written before its
//! completion. The host stack is the real one: the caller configures the simulated host with
//! no software costs and polled completion (see `python/ssdlab/emulate.py`).
//!
//! A flush is an NVMe Flush through the whole path: on flash with a volatile write cache it
//! waits until the buffer's data is programmed (see `ftl/device/flush.rs`). A FUA write is a
//! write followed by a flush (the NBD server emulates it so).
//!
//! Leaves out: NVMe's per-command FUA bit (a write that alone waits for its own pages).

pub mod store;

use std::collections::VecDeque;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::ids::CmdId;
use crate::io::{Kind, Op};
use crate::sim::{SimDuration, SimTime};
use crate::simulation::{Simulation, Summary};
use store::{Store, StoreStats};

/// How long an idle engine looks for the next arrival before it sleeps until one comes.
const IDLE_SPIN: Duration = Duration::from_micros(50);

/// Below this much wall time to the next event the engine yields instead of sleeping: a timed
/// sleep wakes a few microseconds late even with a timer slack of 1 ns (the caller sets it;
/// Linux's default of 50 µs would make every reply that late), and a spin costs a core.
const SPIN: Duration = Duration::from_micros(20);

/// The index of flushes in [`EmulationStats::requests`].
const FLUSH: usize = 4;

/// What an emulated drive is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    Read {
        offset: u64,
        len: u64,
    },
    /// A write (its data is stored by [`Emulator::write`]).
    Write {
        offset: u64,
        len: u64,
    },
    /// Deallocate (NBD trim): the range reads back zeroes.
    Trim {
        offset: u64,
        len: u64,
    },
    /// Write Zeroes.
    Zero {
        offset: u64,
        len: u64,
    },
    /// NVMe Flush: completes once what the drive's volatile write cache held is on the media.
    Flush,
}

impl Request {
    fn range(self) -> Option<(u64, u64)> {
        match self {
            Request::Read { offset, len } | Request::Write { offset, len } | Request::Trim { offset, len } | Request::Zero { offset, len } => Some((offset, len)),
            Request::Flush => None,
        }
    }
}

/// How a request fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    /// Simulated time from its arrival to its completion.
    pub latency: SimDuration,
    /// How far behind the (scaled) wall clock its completion was processed.
    pub lag: SimDuration,
}

/// Options of an emulated drive.
#[derive(Clone, Debug)]
pub struct Options {
    /// Simulated time runs this many times slower than wall-clock time (1 = real time).
    pub time_scale: f64,
    /// Bytes of data kept in memory before the store spills to a file in `spill_dir`.
    pub store_memory: u64,
    pub spill_dir: std::path::PathBuf,
    /// Checksum every stored chunk and check it on each read.
    pub checksums: bool,
    /// Bytes per logical block: requests must be aligned to it.
    pub block: u64,
}

/// The emulation's own figures.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct EmulationStats {
    /// Requests completed, by kind: read, write, trim, zero, flush.
    pub requests: [u64; 5],
    /// Requests refused (out of range, misaligned) before they reached the drive.
    pub refused: u64,
    /// Lag percentiles (p50, p90, p99, p99.9, max) in nanoseconds of simulated time.
    pub lag_ns: [u64; 5],
    pub lag_mean_ns: f64,
    /// Simulated time elapsed, and the wall-clock seconds it took.
    pub simulated_s: f64,
    pub wall_s: f64,
    pub time_scale: f64,
    pub store: StoreStats,
    /// Host units of padding flushes wrote to close partly filled flash pages.
    pub flush_padding_units: u64,
    /// Mean simulated latency of the flushes, in microseconds (flushes are not I/Os of the
    /// run's statistics).
    pub flush_mean_us: f64,
}

struct Pending {
    arrived: SimTime,
    reply: SyncSender<Result<Done>>,
    kind: usize,
}

struct Arrival {
    at: SimTime,
    job: usize,
    req: Request,
    reply: SyncSender<Result<Done>>,
}

struct State {
    sim: Simulation,
    arrivals: VecDeque<Arrival>,
    inflight: FxHashMap<CmdId, Pending>,
    done: Vec<(CmdId, SimTime)>,
    lag: Histogram<u64>,
    requests: [u64; 5],
    /// Simulated time of all flushes, summed.
    flush_time: SimDuration,
    refused: u64,
    stop: bool,
    failure: Option<Error>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    t0: Instant,
    scale: f64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The simulated instant of wall-clock instant `wall`.
    fn sim_at(&self, wall: Instant) -> SimTime {
        let ns = wall.saturating_duration_since(self.t0).as_nanos() as f64;
        SimTime((ns * 1000.0 / self.scale) as u64)
    }

    /// The wall-clock instant of simulated instant `t`.
    fn wall_at(&self, t: SimTime) -> Instant {
        self.t0 + Duration::from_nanos((t.0 as f64 * self.scale / 1000.0) as u64)
    }
}

/// A simulated drive served in real time.
pub struct Emulator {
    shared: Arc<Shared>,
    engine: Mutex<Option<JoinHandle<()>>>,
    store: Mutex<Store>,
    exports: Vec<Export>,
    block: u64,
}

/// What a tenant sees: its namespace (a range of the drive's bytes) on its jobs' queues.
struct Export {
    name: String,
    jobs: Vec<usize>,
    start: u64,
    size: u64,
}

impl Emulator {
    /// Starts serving `sim` (built from a config whose host has the emulation's settings):
    /// each tenant's namespace is an export, its requests going to its jobs' queues.
    pub fn start(mut sim: Simulation, opts: &Options) -> Result<Self> {
        if !(opts.time_scale.is_finite() && opts.time_scale >= 1e-3 && opts.time_scale <= 1e6) {
            return Err(Error::config("time_scale", opts.time_scale.to_string(), "must be between 0.001 and 1e6"));
        }
        let layout = sim.config().tenant_layout().map_err(|i| Error::Config(vec![i]))?;
        let capacity = sim.config().exported_capacity();
        let mut exports = Vec::new();
        for (name, jobs) in sim.tenant_jobs() {
            let range = layout.names.iter().position(|n| *n == name).and_then(|i| layout.ranges.get(i)).cloned().unwrap_or(0..capacity);
            if jobs.is_empty() {
                return Err(Error::config("workload.numjobs", "0", format!("tenant {name:?} needs at least one job to serve its queues")));
            }
            exports.push(Export { name, jobs, start: range.start, size: range.end - range.start });
        }
        if exports.is_empty() {
            return Err(Error::config("workload.numjobs", "0", "the drive needs at least one job to serve its queues"));
        }
        sim.serve_externally();
        sim.advance_to(SimTime::ZERO)?;
        // Lags from 1 ns to an hour, to 3 significant digits (a larger one counts as an hour).
        let lag = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).map_err(|e| Error::config("emulate", "histogram", e.to_string()))?;
        let state =
            State { sim, arrivals: VecDeque::new(), inflight: FxHashMap::default(), done: Vec::new(), lag, requests: [0; 5], flush_time: SimDuration::ZERO, refused: 0, stop: false, failure: None };
        let shared = Arc::new(Shared { state: Mutex::new(state), wake: Condvar::new(), t0: Instant::now(), scale: opts.time_scale });
        let engine_shared = Arc::clone(&shared);
        let engine = std::thread::Builder::new().name("ssdlab-emulate".into()).spawn(move || run_engine(&engine_shared)).map_err(|e| Error::config("emulate", "engine thread", e.to_string()))?;
        let store = Store::new(capacity, opts.store_memory, &opts.spill_dir, opts.checksums);
        Ok(Emulator { shared, engine: Mutex::new(Some(engine)), store: Mutex::new(store), exports, block: opts.block.max(1) })
    }

    /// The exports, one per tenant: its name and size in bytes.
    pub fn exports(&self) -> Vec<(String, u64)> {
        self.exports.iter().map(|e| (e.name.clone(), e.size)).collect()
    }

    fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Checks a request of export `tenant` (offsets within it) and places it on the drive:
    /// the job of queue `queue` and the request at the drive's offsets; a refusal is counted.
    fn resolve(&self, tenant: usize, queue: usize, req: Request) -> Result<(usize, Request)> {
        let Some(export) = self.exports.get(tenant) else {
            self.shared.lock().refused += 1;
            return Err(Error::workload("emulate.export", tenant.to_string(), format!("no such export (the drive has {})", self.exports.len())));
        };
        let job = export.jobs[queue % export.jobs.len()];
        let Some((offset, len)) = req.range() else { return Ok((job, req)) };
        let past_end = match offset.checked_add(len) {
            Some(end) => end > export.size,
            None => true,
        };
        let problem = if len == 0 {
            Some("is empty".to_string())
        } else if past_end {
            Some(format!("goes past the end of export {:?} ({} bytes)", export.name, export.size))
        } else if offset % self.block != 0 || len % self.block != 0 {
            Some(format!("is not aligned to the drive's {}-byte blocks", self.block))
        } else {
            None
        };
        if let Some(p) = problem {
            self.shared.lock().refused += 1;
            return Err(Error::workload("emulate.request", format!("{len} bytes at {offset}"), p));
        }
        let at = offset + export.start;
        Ok((
            job,
            match req {
                Request::Read { .. } => Request::Read { offset: at, len },
                Request::Write { .. } => Request::Write { offset: at, len },
                Request::Trim { .. } => Request::Trim { offset: at, len },
                Request::Zero { .. } => Request::Zero { offset: at, len },
                Request::Flush => Request::Flush,
            },
        ))
    }

    /// Sends `req` (at the drive's offsets) to `job` now and waits until its reply is due.
    fn submit(&self, job: usize, req: Request) -> Result<Done> {
        let rx: Receiver<Result<Done>>;
        {
            let mut st = self.shared.lock();
            if let Some(e) = &st.failure {
                return Err(e.clone());
            }
            if st.stop {
                return Err(Error::Cancelled);
            }
            let (tx, r) = sync_channel(1);
            rx = r;
            let at = self.shared.sim_at(Instant::now());
            st.arrivals.push_back(Arrival { at, job, req, reply: tx });
        }
        self.shared.wake.notify_one();
        rx.recv().unwrap_or(Err(Error::Cancelled))
    }

    /// Reads into `buf` at `offset` of export `tenant`, on its queue `queue`.
    pub fn read(&self, tenant: usize, queue: usize, offset: u64, buf: &mut [u8]) -> Result<Done> {
        let (job, req) = self.resolve(tenant, queue, Request::Read { offset, len: buf.len() as u64 })?;
        let done = self.submit(job, req)?;
        if let Some((at, _)) = req.range() {
            self.store().read(at, buf)?;
        }
        Ok(done)
    }

    /// Writes `data` at `offset`.
    pub fn write(&self, tenant: usize, queue: usize, offset: u64, data: &[u8]) -> Result<Done> {
        let (job, req) = self.resolve(tenant, queue, Request::Write { offset, len: data.len() as u64 })?;
        if let Some((at, _)) = req.range() {
            self.store().write(at, data)?;
        }
        self.submit(job, req)
    }

    /// Trims (`trim`) or writes zeroes over `len` bytes at `offset`.
    pub fn zero(&self, tenant: usize, queue: usize, offset: u64, len: u64, trim: bool) -> Result<Done> {
        let req = if trim { Request::Trim { offset, len } } else { Request::Zero { offset, len } };
        let (job, req) = self.resolve(tenant, queue, req)?;
        if let Some((at, len)) = req.range() {
            self.store().zero(at, len)?;
        }
        self.submit(job, req)
    }

    /// An NVMe Flush: completes once what the drive's write cache held is on the media.
    pub fn flush(&self, tenant: usize, queue: usize) -> Result<Done> {
        let (job, req) = self.resolve(tenant, queue, Request::Flush)?;
        self.submit(job, req)
    }

    /// Stops serving: requests in flight complete without waiting for the wall clock, then the
    /// engine ends. Later requests are refused.
    pub fn stop(&self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        let handle = self.engine.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }

    /// The run's summary so far (the same as `ssdlab run`'s).
    pub fn summary(&self) -> Summary {
        self.shared.lock().sim.summary()
    }

    /// The emulation's own figures so far.
    pub fn stats(&self) -> EmulationStats {
        let st = self.shared.lock();
        let h = &st.lag;
        let q = |p: f64| if h.is_empty() { 0 } else { h.value_at_quantile(p) };
        EmulationStats {
            requests: st.requests,
            refused: st.refused,
            lag_ns: [q(0.5), q(0.9), q(0.99), q(0.999), h.max()],
            lag_mean_ns: if h.is_empty() { 0.0 } else { h.mean() },
            simulated_s: self.shared.sim_at(Instant::now()).as_secs_f64(),
            wall_s: self.shared.t0.elapsed().as_secs_f64(),
            time_scale: self.shared.scale,
            store: self.store().stats(),
            flush_padding_units: st.sim.flush_padding(),
            flush_mean_us: if st.requests[FLUSH] == 0 { 0.0 } else { st.flush_time.as_ns_f64() / 1000.0 / st.requests[FLUSH] as f64 },
        }
    }

    /// The first error that stopped the simulation, if one did.
    pub fn failure(&self) -> Option<Error> {
        self.shared.lock().failure.clone()
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The engine: keeps the simulation on the wall clock until stopped and drained.
fn run_engine(shared: &Shared) {
    let mut st = shared.lock();
    loop {
        let draining = st.stop;
        if draining && st.arrivals.is_empty() && st.inflight.is_empty() {
            return;
        }
        if let Err(e) = step(&mut st, shared, draining) {
            fail_all(&mut st, e);
            if draining {
                return;
            }
        }
        if !st.arrivals.is_empty() {
            continue;
        }
        // Wait for the next event's instant, or a new arrival.
        match st.sim.next_event() {
            _ if st.failure.is_some() && !draining => st = shared.wake.wait(st).unwrap_or_else(std::sync::PoisonError::into_inner),
            Some(_) if draining => {}
            Some(t) => {
                let wait = shared.wall_at(t).saturating_duration_since(Instant::now());
                if wait > SPIN {
                    st = shared.wake.wait_timeout(st, wait.saturating_sub(SPIN)).unwrap_or_else(std::sync::PoisonError::into_inner).0;
                } else if !wait.is_zero() {
                    drop(st);
                    std::thread::yield_now();
                    st = shared.lock();
                }
            }
            None if draining => return,
            None => {
                // Idle: look for an arrival a while (a request often follows a reply at once)
                // before sleeping until one comes.
                let idle = Instant::now();
                while st.arrivals.is_empty() && !st.stop && idle.elapsed() < IDLE_SPIN {
                    drop(st);
                    std::thread::yield_now();
                    st = shared.lock();
                }
                if st.arrivals.is_empty() && !st.stop {
                    st = shared.wake.wait(st).unwrap_or_else(std::sync::PoisonError::into_inner);
                }
            }
        }
    }
}

/// One round of the engine: arrivals go in at their instants, the simulation moves to `now`
/// (when draining, to its next event whatever the wall clock says), and completed requests
/// are released.
fn step(st: &mut State, shared: &Shared, draining: bool) -> Result<()> {
    if st.failure.is_some() {
        return Ok(());
    }
    let now = shared.sim_at(Instant::now());
    while let Some(a) = st.arrivals.pop_front() {
        let at = a.at.max(st.sim.now());
        // What completes before the arrival is released first: its command's id may be reused.
        st.sim.advance_to(at)?;
        release(st, shared);
        let (op, kind, offset, len, slot) = match a.req {
            Request::Read { offset, len } => (Op::Read, Kind::Write, offset, len, 0),
            Request::Write { offset, len } => (Op::Write, Kind::Write, offset, len, 1),
            Request::Trim { offset, len } => (Op::Trim, Kind::Deallocate, offset, len, 2),
            Request::Zero { offset, len } => (Op::Write, Kind::Zeroes, offset, len, 3),
            Request::Flush => (Op::Write, Kind::Flush, 0, 0, FLUSH),
        };
        let id = st.sim.inject(at, a.job, op, kind, offset, len)?;
        st.inflight.insert(id, Pending { arrived: at, reply: a.reply, kind: slot });
    }
    let until = if draining { st.sim.next_event().unwrap_or(now).max(now) } else { now };
    st.sim.advance_to(until)?;
    release(st, shared);
    Ok(())
}

/// Replies to the requests that completed; the lag of each is how far the wall clock has
/// passed its simulated completion now.
fn release(st: &mut State, shared: &Shared) {
    st.sim.take_done(&mut st.done);
    if st.done.is_empty() {
        return;
    }
    let now = shared.sim_at(Instant::now());
    let done = std::mem::take(&mut st.done);
    for &(id, t) in &done {
        let Some(p) = st.inflight.remove(&id) else { continue };
        let lag = now.since(t);
        st.lag.saturating_record(lag.as_ps() / 1000);
        st.requests[p.kind] += 1;
        if p.kind == FLUSH {
            st.flush_time += t.since(p.arrived);
        }
        let _ = p.reply.send(Ok(Done { latency: t.since(p.arrived), lag }));
    }
    st.done = done;
    st.done.clear();
}

/// The simulation failed: every waiting request gets the error, and so will later ones.
fn fail_all(st: &mut State, e: Error) {
    for (_, p) in st.inflight.drain() {
        let _ = p.reply.send(Err(e.clone()));
    }
    for a in st.arrivals.drain(..) {
        let _ = a.reply.send(Err(e.clone()));
    }
    st.failure.get_or_insert(e);
}
