use crate::config::load::Issues;
use crate::sim::SimDuration;
use crate::{config_enum, config_struct};

config_enum! {
    /// How the host learns that a command completed.
    pub enum Completion {
        /// MSI-X interrupt, then the handler and a wake-up of the waiting thread.
        Interrupt = "interrupt",
        /// The submitting thread spins on the completion queue (no interrupt is sent).
        Poll = "poll",
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
        /// Cost of finishing one I/O found by polling: CQE processing and return to the
        /// application. Default: `0.9us`.
        poll_complete_cost: SimDuration = SimDuration::from_ns(900),
        /// Host memory latency seen by a device read: from the read request reaching the root
        /// port to its first completion leaving it (root complex and DRAM). Default: `250ns`.
        memory_latency: SimDuration = SimDuration::from_ns(250),
    }
}

impl HostConfig {
    pub fn validate(&self, _issues: &mut Issues) {
        // Every value of every field is meaningful (zero costs model an ideal host).
    }
}
