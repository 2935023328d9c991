use crate::config::load::Issues;
use crate::sim::SimDuration;
use crate::{config_enum, config_struct};

impl From<DmaLayout> for crate::ats::synth::Stack {
    fn from(l: DmaLayout) -> Self {
        match l {
            DmaLayout::LinuxDirect => crate::ats::synth::Stack::LinuxDirect,
            DmaLayout::LinuxBuffered => crate::ats::synth::Stack::LinuxBuffered,
            DmaLayout::LinuxIommu => crate::ats::synth::Stack::LinuxIommu,
            DmaLayout::Spdk => crate::ats::synth::Stack::Spdk,
        }
    }
}

config_enum! {
    /// How the host learns that a command completed.
    pub enum Completion {
        /// MSI-X interrupt, then the handler and a wake-up of the waiting thread.
        Interrupt = "interrupt",
        /// The submitting thread spins on the completion queue (no interrupt is sent).
        Poll = "poll",
        /// Spin for requests up to `hybrid_threshold`, interrupt for larger ones.
        Hybrid = "hybrid",
    }
}

config_enum! {
    /// Where requests go between the system call and the driver.
    pub enum Scheduler {
        None = "none",
        Thread = "thread",
    }
}

config_enum! {
    /// How a request gets its tag.
    pub enum Tags {
        LockFree = "lockfree",
        Lock = "lock",
    }
}

config_enum! {
    /// How the host lays out the memory the device DMAs to (for DMA address streams and ATS).
    pub enum DmaLayout {
        /// Linux nvme-pci, O_DIRECT from an application buffer pool.
        LinuxDirect = "linux-direct",
        /// Linux nvme-pci, buffered I/O through page-cache pages scattered over memory.
        LinuxBuffered = "linux-buffered",
        /// Linux nvme-pci behind an IOMMU: data at per-CPU reused IOVAs (dma-iommu).
        LinuxIommu = "linux-iommu",
        /// SPDK: hugepage rings and buffer pool.
        Spdk = "spdk",
    }
}

config_struct! {
    /// The host: application threads and the kernel/driver path, as fixed per-I/O costs.
    pub struct HostConfig {
        /// Software cost of submitting one I/O on its thread's CPU: system call, block layer,
        /// driver writing the SQE, up to the SQ tail doorbell write. Default: `1.6us`.
        submit_cost: SimDuration = SimDuration::from_ns(1_600),
        /// How completions reach the host: `"interrupt"` or `"poll"`. Default: `"interrupt"`.
        completion: Completion = Completion::Interrupt,
        /// Cost of finishing one I/O after its interrupt: handler, CQE processing, wake-up and
        /// return to the application. Default: `2.8us`.
        complete_cost: SimDuration = SimDuration::from_ns(2_800),
        /// Completion by hybrid polling (`completion = "hybrid"`): requests up to this size spin,
        /// larger ones sleep for an interrupt. Default: `8KiB`.
        hybrid_threshold: crate::config::units::Bytes = crate::config::units::Bytes(8192),
        /// Cost of finishing one I/O found by polling: CQE processing and return to the
        /// application. Default: `0.9us`.
        poll_complete_cost: SimDuration = SimDuration::from_ns(900),
        /// Cost of each further I/O an interrupt's handler finds completed in its queue after
        /// the first: the block layer's completion and the event's return to the application.
        /// The interrupt, the wake-up and the return to user space are paid once per handler
        /// run, in `complete_cost`. Default: `0.8us`.
        batch_complete_cost: SimDuration = SimDuration::from_ns(800),
        /// Host memory latency seen by a device read: from the read request reaching the root
        /// port to its first completion leaving it (root complex and DRAM). Default: `250ns`.
        memory_latency: SimDuration = SimDuration::from_ns(250),
        /// Memory layout of rings and buffers (figures.md, Linux and SPDK): `linux-direct`,
        /// `linux-buffered`, `linux-iommu` or `spdk`. Default: `"linux-direct"`.
        dma_layout: DmaLayout = DmaLayout::LinuxDirect,
        /// Host memory the buffers and page cache are spread over. Default: `64GiB`.
        memory: crate::config::units::Bytes = crate::config::units::Bytes(64 << 30),
        /// Application buffer pool (O_DIRECT, SPDK), allocated in 2 MiB pieces. Default: `64MiB`.
        buffer_pool: crate::config::units::Bytes = crate::config::units::Bytes(64 << 20),
        /// I/O scheduler: `"none"` (the caller issues), or `"thread"` (each request is handed to
        /// one scheduler thread shared by all jobs: a context switch each way plus its work,
        /// serialised). Default: `"none"`.
        scheduler: Scheduler = Scheduler::None,
        /// Scheduler thread's work per request. Default: `0.6us`.
        scheduler_cost: SimDuration = SimDuration::from_ns(600),
        /// One context switch. Default: `0.35us`.
        context_switch: SimDuration = SimDuration::from_ns(350),
        /// Request tags: `"lockfree"` (per-CPU hint, no shared state) or `"lock"` (one lock
        /// shared by all jobs, held `lock_hold`; waiters spin). Default: `"lockfree"`.
        tags: Tags = Tags::LockFree,
        /// Time the tag lock is held per request, on a warm cache. Default: `1.3us`.
        lock_hold: SimDuration = SimDuration::from_ns(1300),
        /// With `scheduler = "thread"`: the request queue's lock (Linux's single request queue
        /// before blk-mq), held this long on a warm cache by each of the submitting CPU
        /// (inserting the request), the scheduler thread (dispatching it) and the completing CPU
        /// (ending it). Default: `0.2us`.
        queue_lock_hold: SimDuration = SimDuration::from_ns(200),
        /// One cache-line transfer between CPUs. A shared lock's lines move when it changes
        /// CPU, and each handover of a ticket lock waits a transfer per CPU spinning on it
        /// (0 = locks cost their hold only). Default: `0ns`.
        lock_transfer: SimDuration = SimDuration::ZERO,
        /// Cache lines the queue lock's critical sections touch, the lock's own included (they
        /// move when the lock changes CPU). Default: `12`.
        queue_lock_lines: u32 = 12,
        /// Cache lines the tag lock's critical section touches. Default: `2`.
        tag_lock_lines: u32 = 2,
        /// Copy data between the application and a kernel buffer (writes before submission,
        /// reads after completion) instead of DMA to the application's pages. Default: `false`.
        copy: bool = false,
        /// memcpy bandwidth of one CPU. Default: `10GB/s`.
        copy_bandwidth: crate::config::units::Bandwidth = crate::config::units::Bandwidth(10e9),
        /// Virtual machines sharing the device: job `j` runs in VM `j mod vms`, each VM its own
        /// address space (PASID) and memory layout. Default: `1`.
        vms: u32 = 1,
    }
}

impl HostConfig {
    pub fn validate(&self, issues: &mut Issues) {
        // Costs may be zero (an ideal host); the layout needs room.
        issues.check(self.memory.0 >= 1 << 24, "host.memory", self.memory, "must be at least 16MiB");
        issues.check((1..=1024).contains(&self.vms), "host.vms", self.vms, "must be between 1 and 1024");
        issues.check(self.queue_lock_lines <= 4096, "host.queue_lock_lines", self.queue_lock_lines, "must be at most 4096");
        issues.check(self.tag_lock_lines <= 4096, "host.tag_lock_lines", self.tag_lock_lines, "must be at most 4096");
        issues.check(self.copy_bandwidth.0 > 0.0, "host.copy_bandwidth", self.copy_bandwidth, "must be greater than zero");
        issues.check(self.buffer_pool.0 >= 4096 && self.buffer_pool.0 <= self.memory.0, "host.buffer_pool", self.buffer_pool, "must be at least 4KiB and at most host.memory");
    }
}
