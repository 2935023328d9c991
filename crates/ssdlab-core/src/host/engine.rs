//! The I/O engines: how an application's I/O gets into the kernel, or past it, and how its
//! completion gets back, as CPU work on the job's thread built from named components.
//!
//! Six paths of a current host, after fio's engines of the same names:
//!
//! | engine | submission, per I/O | completion, per I/O |
//! |---|---|---|
//! | `psync` | `syscall` + `block` (pread/pwrite) | interrupt; the thread slept in the call: `wakeup` |
//! | `libaio` | `syscall` per `iodepth_batch` + `aio` + `block` | interrupt; `syscall` per reap (io_getevents), `wakeup` if the thread slept |
//! | `io_uring` | `syscall` per `iodepth_batch` + `uring` + `block` | interrupt, CQE in the ring; `syscall` + `wakeup` only if the thread slept waiting |
//! | `io_uring-hipri` | as `io_uring` | the thread polls the device's CQ (`poll`), no interrupt; `syscall` when it entered the kernel to poll |
//! | `io_uring-sqpoll` | nothing on the job's CPU: a kernel SQ thread on its own CPU pays `uring` + `block` | interrupt, CQE in the ring; the thread spins on the ring (fio never enters the kernel with `sqthread_poll`): no `syscall`, no `wakeup` |
//! | `spdk` | `spdk_submit` (user space, no system call, no block layer) | polled in user space: `spdk_complete` |
//!
//! Interrupt completion pays `irq` once per handler run, then `irq_complete` + `end` per
//! request; polled completion pays `poll` + `end` (SPDK has no kernel `end`). A thread "slept" when its
//! CPU was idle as its completion arrived. `kernel` is the older parametric path: the fixed
//! `host.submit_cost` and `host.complete_cost`, completion as `host.completion` says.
//!
//! The components are not published one by one: they are fitted so that each engine's cost per
//! I/O on one saturated core matches its published per-core rate (the `[host.costs]` defaults
//! cite them), with `uring` set from io_uring's measured no-op ring rate and `wakeup` from the
//! published cost of an interrupt-driven thread switch.
//!
//! Leaves out: registered buffers and files, doorbell batching (one doorbell write per
//! request), the SQ thread's idle sleep (`sq_thread_idle`: it is always awake), fio's own
//! per-I/O work, and CPU caches (a component costs the same hot or cold).

use crate::schema::Issues;
use crate::sim::{SimDuration, SimTime};
use crate::{config_enum, config_struct};

config_enum! {
    /// How a job's I/O enters the host's I/O path and how its completion comes back.
    pub enum Engine {
        /// The parametric path: `host.submit_cost` per I/O, completion as `host.completion`
        /// with `host.complete_cost` and its siblings.
        Kernel = "kernel",
        /// One synchronous system call per I/O (fio's `psync`, `sync`, `pvsync`, `pvsync2`,
        /// `vsync`); one I/O in flight per job.
        Psync = "psync" | "sync" | "pvsync" | "pvsync2" | "vsync",
        /// Linux AIO: `io_submit` and `io_getevents`, completion by interrupt.
        Libaio = "libaio",
        /// io_uring, completion by interrupt.
        IoUring = "io_uring",
        /// io_uring with polled completion (`IORING_SETUP_IOPOLL`, fio's `hipri`).
        IoUringHipri = "io_uring-hipri",
        /// io_uring with a kernel thread polling the submission ring (`IORING_SETUP_SQPOLL`,
        /// fio's `sqthread_poll`), completion by interrupt.
        IoUringSqpoll = "io_uring-sqpoll",
        /// SPDK's user-space NVMe driver: no system call, no block layer, polled completion.
        Spdk = "spdk",
        /// fio's null engine (`null`, `cpp_null`): the I/O completes in the engine, without a
        /// device, after `host.costs.null` on the job's CPU.
        Null = "null" | "cpp_null",
    }
}

config_struct! {
    /// The CPU cost components the engines are made of (one 4 KiB I/O on one core of a current
    /// server; see `host::engine`). Sources: \[AXBOE\] J. Axboe, "Efficient IO with io_uring"
    /// (kernel.dk/io_uring.pdf, v0.4, 2019), section 9: one core reads 4 KiB at 1.7 M IOPS
    /// with io_uring polled, 1.2 M by interrupt, 608 k with libaio, and no-op requests pass
    /// the ring at 12-20 M/s; \[SPDK\] "10.39M Storage I/O Per Second From One Thread"
    /// (spdk.io, 2019-05-06): 400 core clocks, 100 ns, per I/O; \[ONLOAD\] AMD Onload User Guide
    /// UG1586, "Polling vs. Interrupts": on the order of a microsecond to take an interrupt and
    /// switch to the waiting thread. No source splits a path into these parts: the ones marked
    /// fitted are set so that each engine's saturated cost per I/O is its published rate
    /// (`tests/integration/engines.rs` checks all four within 5 %).
    pub struct EngineCosts {
        /// Entry and exit of one system call (assumed; fitted with `block`). Default: `100ns`.
        syscall: SimDuration = SimDuration::from_ns(100),
        /// Submission through the block layer and the NVMe driver, per request: bio, tag,
        /// SQE, DMA mapping, the doorbell write (fitted: io_uring polled, 1.7 M/s \[AXBOE\]).
        /// Default: `300ns`.
        block: SimDuration = SimDuration::from_ns(300),
        /// The block layer's end of a request: unmapping, ending the bio (fitted with `block`).
        /// Default: `150ns`.
        end: SimDuration = SimDuration::from_ns(150),
        /// An interrupt: entry, the NVMe handler's run, exit; once per handler run (order of a
        /// microsecond \[ONLOAD\]). Default: `1us`.
        irq: SimDuration = SimDuration::from_ns(1000),
        /// The interrupt side's work per completed request: the engine's event (an AIO event,
        /// io_uring's task work and CQE) (fitted: io_uring by interrupt, 1.2 M/s \[AXBOE\]).
        /// Default: `290ns`.
        irq_complete: SimDuration = SimDuration::from_ns(290),
        /// Waking a thread that slept for its completion and switching to it (order of a
        /// microsecond \[ONLOAD\]). Default: `1us`.
        wakeup: SimDuration = SimDuration::from_ns(1000),
        /// Polling the device's completion queue until it finds a request's CQE, in the kernel
        /// (`io_uring-hipri`; fitted with `block`). Default: `60ns`.
        poll: SimDuration = SimDuration::from_ns(60),
        /// libaio's own work per I/O: copying and checking the iocb, the kiocb, the event ring
        /// (fitted: libaio, 608 k/s \[AXBOE\]). Default: `900ns`.
        aio: SimDuration = SimDuration::from_ns(900),
        /// io_uring's own work per I/O: the SQE's request and its CQE (no-op requests at
        /// 12-20 M/s, 50-80 ns each \[AXBOE\]). Default: `70ns`.
        uring: SimDuration = SimDuration::from_ns(70),
        /// SPDK: building and submitting one command from user space (with `spdk_complete`,
        /// 10.39 M/s on one core \[SPDK\]; the split is assumed). Default: `50ns`.
        spdk_submit: SimDuration = SimDuration::from_ns(50),
        /// SPDK: finding one CQE by polling and running its callback. Default: `46ns`.
        spdk_complete: SimDuration = SimDuration::from_ns(46),
        /// fio's null engine: queueing and reaping one I/O that no device sees (measured: fio
        /// 3.33's null engine, 4 KiB random reads and writes at iodepth 1, mean latency 62-73 ns,
        /// `tests/data/fio-3.33-null-randrw.json`). Default: `65ns`.
        null: SimDuration = SimDuration::from_ns(65),
    }
}

impl EngineCosts {
    pub fn validate(&self, issues: &mut Issues) {
        let all = [
            ("syscall", self.syscall),
            ("block", self.block),
            ("end", self.end),
            ("irq", self.irq),
            ("irq_complete", self.irq_complete),
            ("wakeup", self.wakeup),
            ("poll", self.poll),
            ("aio", self.aio),
            ("uring", self.uring),
            ("spdk_submit", self.spdk_submit),
            ("spdk_complete", self.spdk_complete),
            ("null", self.null),
        ];
        for (k, v) in all {
            issues.check(v <= SimDuration::from_ns(1_000_000), &format!("host.costs.{k}"), v, "must be at most 1ms");
        }
    }
}

impl Engine {
    /// Whether completions are found by polling (no interrupt).
    pub fn polls(self) -> bool {
        matches!(self, Engine::IoUringHipri | Engine::Spdk)
    }

    /// Whether the I/O goes through the kernel's block layer (cgroups, schedulers, tag locks
    /// and the page cache live there).
    pub fn in_kernel(self) -> bool {
        !matches!(self, Engine::Spdk | Engine::Null)
    }

    /// Whether a job has one I/O in flight (a synchronous call).
    pub fn synchronous(self) -> bool {
        self == Engine::Psync
    }
}

/// What submitting one I/O costs: on the job's CPU, then on its SQ thread's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubmitCost {
    pub app: SimDuration,
    pub sq_thread: SimDuration,
}

/// Each job's engine and the state its costs depend on.
#[derive(Clone, Debug)]
pub struct Engines {
    costs: EngineCosts,
    engine: Vec<Engine>,
    /// Per job: I/Os per submitting system call (fio's `iodepth_batch_submit`).
    batch: Vec<u32>,
    /// Per job: the instant of its last submission and how many I/Os that system call took.
    open: Vec<(SimTime, u32)>,
    /// Interrupt handler runs so far, and per job the last run that reaped one of its I/Os.
    runs: u64,
    reaped: Vec<u64>,
    /// System calls made and wake-ups paid, for statistics.
    pub syscalls: u64,
    pub wakeups: u64,
}

impl Engines {
    /// Jobs' engines and their submission batches.
    pub fn new(costs: &EngineCosts, jobs: &[(Engine, u32)]) -> Self {
        Engines {
            costs: costs.clone(),
            engine: jobs.iter().map(|j| j.0).collect(),
            batch: jobs.iter().map(|j| j.1.max(1)).collect(),
            open: vec![(SimTime::ZERO, u32::MAX); jobs.len()],
            runs: 0,
            reaped: vec![0; jobs.len()],
            syscalls: 0,
            wakeups: 0,
        }
    }

    #[inline]
    pub fn of(&self, job: usize) -> Engine {
        self.engine[job]
    }

    /// The cost of submitting one of `job`'s I/Os at `now`; a system call is made for the
    /// first I/O of each batch. I/Os share a call, up to the job's batch, when they are ready
    /// at one instant or while the thread is `busy` with earlier work (it reaps what completed
    /// and submits what that freed in one go). `kernel` is the caller's business.
    pub fn submit(&mut self, job: usize, now: SimTime, busy: bool) -> SubmitCost {
        let c = &self.costs;
        let (at, n) = self.open[job];
        let first = (at != now && !busy) || n >= self.batch[job];
        self.open[job] = if first { (now, 1) } else { (at, n + 1) };
        let call = if first { c.syscall } else { SimDuration::ZERO };
        let app = |d| SubmitCost { app: d, sq_thread: SimDuration::ZERO };
        let e = self.engine[job];
        if first && matches!(e, Engine::Psync | Engine::Libaio | Engine::IoUring | Engine::IoUringHipri) {
            self.syscalls += 1;
        }
        match e {
            Engine::Kernel => app(SimDuration::ZERO),
            Engine::Psync => app(c.syscall + c.block),
            Engine::Libaio => app(call + c.aio + c.block),
            Engine::IoUring | Engine::IoUringHipri => app(call + c.uring + c.block),
            Engine::IoUringSqpoll => SubmitCost { app: SimDuration::ZERO, sq_thread: c.uring + c.block },
            Engine::Spdk => app(c.spdk_submit),
            Engine::Null => app(c.null),
        }
    }

    /// An interrupt handler starts a run over the CQEs it finds.
    pub fn handler_run(&mut self) {
        self.runs += 1;
    }

    /// The cost on `job`'s CPU of one request the handler's run completed: `first` of the run
    /// pays the interrupt; a job's application I/O (`app`), the job's first in this run, pays
    /// its thread's return from waiting, `slept` when its CPU was idle.
    pub fn interrupt_cost(&mut self, job: usize, first: bool, app: bool, slept: bool) -> SimDuration {
        let c = &self.costs;
        let mut d = c.irq_complete + c.end;
        if first {
            d += c.irq;
        }
        let first_of_job = app && self.reaped[job] != self.runs;
        if first_of_job {
            self.reaped[job] = self.runs;
            let e = self.engine[job];
            // psync's thread always sleeps in its call; libaio's reaps with io_getevents;
            // io_uring's reads its ring and enters the kernel only to wait; with an SQ thread it
            // spins on the ring and never enters.
            let (wake, call) = match e {
                Engine::Psync => (true, false),
                Engine::Libaio => (slept, true),
                Engine::IoUringSqpoll => (false, false),
                _ => (slept, slept),
            };
            if wake {
                d += c.wakeup;
                self.wakeups += 1;
            }
            if call {
                d += c.syscall;
                self.syscalls += 1;
            }
        }
        d
    }

    /// The cost on `job`'s CPU of one request found by polling; `idle` when the thread was
    /// only polling (it entered the kernel to wait, `io_uring-hipri`).
    pub fn poll_cost(&mut self, job: usize, idle: bool) -> SimDuration {
        let c = &self.costs;
        if self.engine[job] == Engine::Spdk {
            return c.spdk_complete;
        }
        if idle {
            self.syscalls += 1;
        }
        c.poll + c.end + if idle { c.syscall } else { SimDuration::ZERO }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ns: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_ns(ns)
    }

    #[test]
    fn one_system_call_per_batch_of_simultaneous_submissions() {
        let c = EngineCosts::default();
        let mut e = Engines::new(&c, &[(Engine::IoUring, 4)]);
        let per = c.uring + c.block;
        let costs: Vec<_> = (0..6).map(|_| e.submit(0, at(10), false).app).collect();
        assert_eq!(costs, vec![c.syscall + per, per, per, per, c.syscall + per, per]);
        assert_eq!(e.submit(0, at(11), false).app, c.syscall + per, "a later instant is a new call");
        assert_eq!(e.submit(0, at(12), true).app, per, "a busy thread gathers its submissions");
        assert_eq!(e.syscalls, 3);
    }

    #[test]
    fn sqpoll_moves_submission_off_the_application_cpu() {
        let c = EngineCosts::default();
        let mut e = Engines::new(&c, &[(Engine::IoUringSqpoll, 1)]);
        assert_eq!(e.submit(0, at(0), false), SubmitCost { app: SimDuration::ZERO, sq_thread: c.uring + c.block });
        assert_eq!(e.syscalls, 0);
    }

    #[test]
    fn the_wakeup_is_paid_only_by_a_thread_that_slept() {
        let c = EngineCosts::default();
        let mut e = Engines::new(&c, &[(Engine::IoUring, 1), (Engine::Psync, 1), (Engine::Libaio, 1)]);
        let base = c.irq_complete + c.end;
        e.handler_run();
        assert_eq!(e.interrupt_cost(0, true, true, false), base + c.irq, "a busy io_uring thread reads its ring");
        e.handler_run();
        assert_eq!(e.interrupt_cost(0, false, true, true), base + c.wakeup + c.syscall);
        assert_eq!(e.interrupt_cost(1, false, true, false), base + c.wakeup, "psync always slept in its call");
        assert_eq!(e.interrupt_cost(2, false, true, false), base + c.syscall, "libaio reaps with io_getevents");
        assert_eq!(e.interrupt_cost(2, false, true, true), base, "one reap per job and handler run");
        assert_eq!(e.interrupt_cost(0, false, false, true), base, "the page cache's requests wake nobody");
    }
}
