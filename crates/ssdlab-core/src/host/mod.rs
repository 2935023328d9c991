//! The host: application threads and the software path of an I/O, as costs on CPUs.
//!
//! Each job is one thread pinned to its own CPU, with its own `NVMe` queue pair (as Linux
//! nvme-pci gives one queue pair per CPU). The CPU is a FIFO timeline: submitting an I/O,
//! and finishing one after its interrupt or poll, each take a fixed software cost on that CPU,
//! so a busy thread delays its own interrupt handling and vice versa. Host memory answers
//! device reads after a fixed latency.
//!
//! Leaves out (for the host-stack issue): the split into syscall / file system / block layer /
//! scheduler / driver costs, lock contention between threads, interrupt steering to other
//! CPUs, context-switch effects, and DRAM contention.

mod config;

pub use config::{Completion, DmaLayout, HostConfig, Scheduler, Tags};

use crate::sim::{Grant, SimDuration, SimTime, Timeline};

/// The host CPUs, one per job, and what the jobs share: the tag lock and the scheduler thread.
pub struct Host {
    cpus: Vec<Timeline>,
    /// The tag lock (`tags = "lock"`).
    pub lock: Timeline,
    /// The I/O scheduler thread (`scheduler = "thread"`).
    pub scheduler: Timeline,
    /// CPU time spent spinning (on the lock, or polling for completions).
    pub spin: SimDuration,
}

impl Host {
    pub fn new(jobs: usize) -> Self {
        Host { cpus: vec![Timeline::default(); jobs], lock: Timeline::default(), scheduler: Timeline::default(), spin: SimDuration::ZERO }
    }

    /// CPU time on all host CPUs, the scheduler thread and spinning included.
    pub fn cpu_time(&self) -> SimDuration {
        self.busy() + self.scheduler.busy() + self.spin
    }

    /// Runs `cost` of software on job `job`'s CPU, arriving at `now`.
    #[inline]
    pub fn run(&mut self, job: usize, now: SimTime, cost: SimDuration) -> Grant {
        self.cpus[job].reserve(now, cost)
    }

    /// CPU time spent on I/O over all jobs.
    pub fn busy(&self) -> SimDuration {
        self.cpus.iter().fold(SimDuration::ZERO, |a, c| a + c.busy())
    }
}

/// Host events.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// An open-loop arrival for a job.
    Arrival { job: u32 },
    /// The next record of a timed trace replay arrives.
    TraceArrival,
    /// An MSI-X interrupt reaches the host, covering `count` CQEs of `queue`.
    Interrupt { queue: crate::nvme::QueueId, count: u32 },
    /// A polling thread finds the CQE of `cmd`.
    CqeSeen { cmd: crate::nvme::CmdId },
    /// The request reaches the tag lock.
    TagLock { cmd: crate::nvme::CmdId },
    /// The request reaches the I/O scheduler thread.
    Schedule { cmd: crate::nvme::CmdId },
    /// The host has finished `cmd`: the application sees it complete.
    Complete { cmd: crate::nvme::CmdId, ring_cq: bool },
}
