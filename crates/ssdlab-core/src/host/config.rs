use super::engine::{Engine, EngineCosts};
use crate::ats::synth::{BufferReuse, DmaLayout};
use crate::schema::Issues;
use crate::sim::SimDuration;
use crate::{config_enum, config_struct};

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
    /// How the host shares the device among tenants (cgroup v2 I/O controllers; see `share.rs`).
    pub enum ShareMode {
        /// No controller: every I/O goes on at once.
        None = "none",
        /// `io.weight` under the `io.cost` controller (blk-iocost).
        Weight = "weight",
        /// `io.max` limits (blk-throttle).
        Max = "max",
    }
}

config_struct! {
    /// The host: application threads and the kernel/driver path, as fixed per-I/O costs.
    pub struct HostConfig {
        /// The I/O engine of jobs that name none (`workload.ioengine`): `"kernel"` (the
        /// parametric path of `submit_cost` and `complete_cost`), `"psync"`, `"libaio"`,
        /// `"io_uring"`, `"io_uring-hipri"`, `"io_uring-sqpoll"` or `"spdk"`. Default: `"kernel"`.
        engine: Engine = Engine::Kernel,
        /// The CPU cost components the engines other than `kernel` are made of.
        costs: EngineCosts = EngineCosts::default(),
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
        hybrid_threshold: crate::units::Bytes = crate::units::Bytes(8192),
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
        /// Host memory the buffers and page cache are spread over (divided among `vms`).
        /// Default: `64GiB`.
        memory: crate::units::Bytes = crate::units::Bytes(64 << 30),
        /// Application buffer pool (O_DIRECT, SPDK), allocated in 2 MiB pieces (divided among
        /// `vms`). Default: `64MiB`.
        buffer_pool: crate::units::Bytes = crate::units::Bytes(64 << 20),
        /// How a buffer is taken from the pool: `"lifo"` (the most recently freed) or
        /// `"random"`. Default: `"lifo"`.
        buffer_reuse: BufferReuse = BufferReuse::Lifo,
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
        copy_bandwidth: crate::units::Bandwidth = crate::units::Bandwidth(10e9),
        /// Virtual machines sharing the device: job `j` runs in VM `j mod vms`, each VM its own
        /// address space (PASID) and memory layout. With `[[tenants]]` each tenant is a VM (leave
        /// this at 1 or set it to the number of tenants). Default: `1`.
        vms: u32 = 1,
        /// The share of the device among tenants: `"none"`, `"weight"` (`io.weight`, priced
        /// by the `cost_*` model) or `"max"` (each tenant's `io.max` limits). Default: `"none"`.
        share: ShareMode = ShareMode::None,
        /// `io.cost.model`: sequential read bandwidth, in bytes per second. Default: `3102524156`
        /// (Linux blk-iocost's built-in model for fast SSDs, `AUTOP_SSD_FAST`).
        cost_rbps: crate::units::Bandwidth = crate::units::Bandwidth(3_102_524_156.0),
        /// `io.cost.model`: sequential 4 KiB read IOPS. Default: `724816` (`AUTOP_SSD_FAST`).
        cost_rseqiops: f64 = 724_816.0,
        /// `io.cost.model`: random 4 KiB read IOPS. Default: `778122` (`AUTOP_SSD_FAST`).
        cost_rrandiops: f64 = 778_122.0,
        /// `io.cost.model`: sequential write bandwidth. Default: `1742780862` (`AUTOP_SSD_FAST`).
        cost_wbps: crate::units::Bandwidth = crate::units::Bandwidth(1_742_780_862.0),
        /// `io.cost.model`: sequential 4 KiB write IOPS. Default: `425702` (`AUTOP_SSD_FAST`).
        cost_wseqiops: f64 = 425_702.0,
        /// `io.cost.model`: random 4 KiB write IOPS. Default: `443193` (`AUTOP_SSD_FAST`).
        cost_wrandiops: f64 = 443_193.0,
        /// How far ahead of the global virtual clock a tenant may run (its burst, and the most
        /// an idle tenant can bank), in model time. Default: `1ms`.
        cost_margin: SimDuration = SimDuration::from_ms(1),
        /// `io.cost.qos`: completion-latency target that steers vrate (0 = vrate stays 1).
        /// Default: `0`.
        cost_qos_latency: SimDuration = SimDuration::ZERO,
        /// `io.cost.qos`: the latency percentile held to the target. Default: `95`.
        cost_qos_percentile: f64 = 95.0,
        /// How often QoS looks at the latencies and moves vrate. Default: `50ms`.
        cost_qos_period: SimDuration = SimDuration::from_ms(50),
        /// `io.cost.qos` `min`: the lowest vrate. Default: `0.01`.
        cost_qos_min: f64 = 0.01,
        /// `io.max`: a token bucket holds this long of a limit's tokens (blk-throttle's slice).
        /// Default: `100ms`.
        throttle_slice: SimDuration = SimDuration::from_ms(100),
        /// The page cache of buffered jobs (`workload.direct = false`).
        page_cache: super::page_cache::PageCacheConfig = super::page_cache::PageCacheConfig::default(),
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
        for (k, v) in [
            ("cost_rbps", self.cost_rbps.0),
            ("cost_rseqiops", self.cost_rseqiops),
            ("cost_rrandiops", self.cost_rrandiops),
            ("cost_wbps", self.cost_wbps.0),
            ("cost_wseqiops", self.cost_wseqiops),
            ("cost_wrandiops", self.cost_wrandiops),
        ] {
            issues.check(v.is_finite() && v >= 1.0, &format!("host.{k}"), v, "must be at least 1");
        }
        issues.check(self.cost_qos_percentile > 0.0 && self.cost_qos_percentile < 100.0, "host.cost_qos_percentile", self.cost_qos_percentile, "must be between 0 and 100");
        issues.check(self.cost_qos_period > SimDuration::ZERO, "host.cost_qos_period", self.cost_qos_period, "must be greater than zero");
        issues.check(self.cost_qos_min > 0.0 && self.cost_qos_min <= 1.0, "host.cost_qos_min", self.cost_qos_min, "must be in (0, 1]");
        issues.check(self.throttle_slice > SimDuration::ZERO, "host.throttle_slice", self.throttle_slice, "must be greater than zero");
        self.page_cache.validate(issues);
        self.costs.validate(issues);
        if self.engine != Engine::Kernel && self.completion != Completion::Interrupt {
            issues.push("host.completion", self.completion, "applies to host.engine = \"kernel\"; the other engines complete as they do (io_uring-hipri and spdk poll)");
        }
        issues.check(self.buffer_pool.0 >= 4096 && self.buffer_pool.0 <= self.memory.0, "host.buffer_pool", self.buffer_pool, "must be at least 4KiB and at most host.memory");
    }
}
