use crate::schema::Issues;
use crate::sim::{SimDuration, PS_PER_US};
use crate::units::Bytes;
use crate::{config_enum, config_struct};

config_enum! {
    /// How the controller picks the next submission queue to fetch from.
    pub enum Arbitration {
        /// Round robin over the submission queues that have commands.
        RoundRobin = "rr",
        /// Weighted round robin with urgent priority: urgent queues first, then the high,
        /// medium and low classes by `wrr_weights` (NVMe Base Specification 2.0, 3.4.4.2).
        Wrr = "wrr",
    }
}

config_enum! {
    /// The queue interface the device presents to the host.
    pub enum Interface {
        /// NVMe submission/completion queue pairs: a 64 B SQE fetched per command, PRPs, a
        /// 16 B CQE and a CQ head doorbell.
        Nvme = "nvme",
        /// virtio-blk virtqueues (split ring), as a virtio-blk PCI function: per request the
        /// device reads the available ring entry, then the descriptor chain (header, data,
        /// status: 3 x 16 B), then the 16 B request header, each read depending on the one
        /// before; it writes the 1 B status, the 8 B used element and the 2 B used index, and
        /// the driver rings no completion doorbell.
        VirtioBlk = "virtio-blk",
    }
}

config_struct! {
    /// The NVMe queue interface: queue pairs, arbitration and interrupts.
    pub struct NvmeConfig {
        /// I/O submission/completion queue pairs the drive offers; the driver creates one per
        /// host job (CPU) up to this many, and more jobs share them. Default: `8`.
        io_queues: u32 = 8,
        /// The queue interface: `"nvme"`, or `"virtio-blk"` (virtqueues in place of queue
        /// pairs; everything behind the queues is the same device). Default: `"nvme"`.
        interface: Interface = Interface::Nvme,
        /// Data bytes of a logical block (the LBA format's LBADS): a power of two from 512B
        /// to 64KiB. Default: `512B`.
        lba_size: Bytes = Bytes(512),
        /// Metadata bytes per logical block (the LBA format's MS: 8 or 64 for end-to-end
        /// protection information), at most `lba_size`; the host's I/O carries them across the
        /// link, the drive keeps them out of band. Default: `0`.
        metadata_size: Bytes = Bytes(0),
        /// The metadata is interleaved with each block's data (an extended LBA, FLBAS bit 4):
        /// the host's sizes and offsets count both (fio's bs=4160 for 4096 + 64); else it
        /// travels in a separate buffer (fio's md_per_io_size). Default: `false`.
        extended_lba: bool = false,
        /// The largest write the drive completes atomically across a power failure (NVMe
        /// AWUPF, in bytes): Linux's `RWF_ATOMIC` writes (`workload.atomic`) must fit it.
        /// Default: `4KiB` (AWUPF = 0: one 4 KiB logical block, what most drives report).
        atomic_write_unit: Bytes = Bytes(4096),
        /// Entries per queue, 2 to 65536 (a queue holds one entry less than its size).
        /// Default: `1024` (Linux nvme-pci).
        queue_depth: u32 = 1024,
        /// Arbitration among submission queues: `"rr"` or `"wrr"`. Default: `"rr"`.
        arbitration: Arbitration = Arbitration::RoundRobin,
        /// WRR: commands per round of the high, medium and low classes, 1 to 256 each (the
        /// Set Features Arbitration fields HPW, MPW and LPW plus one). Default: `[4, 2, 1]`.
        wrr_weights: Vec<u32> = vec![4, 2, 1],
        /// Arbitration burst: most commands fetched from a queue each time it wins arbitration,
        /// a power of two up to 128, or 0 for no limit (AB = 111b). Default: `1`.
        arbitration_burst: u32 = 1,
        /// Host memory page size for PRPs (CC.MPS): a power of two from 4 KiB to 128 MiB.
        /// Default: `4KiB`.
        page_size: Bytes = Bytes(4096),
        /// Interrupt coalescing: completions that trigger an interrupt, 0 (off) to 256.
        /// Default: `0`.
        irq_coalesce_threshold: u32 = 0,
        /// Interrupt coalescing: longest an interrupt is held back, a multiple of 100us
        /// (0 = off). Default: `0`.
        irq_coalesce_time: SimDuration = SimDuration::ZERO,
    }
}

impl NvmeConfig {
    pub fn validate(&self, issues: &mut Issues) {
        issues.check((1..=65_535).contains(&self.io_queues), "nvme.io_queues", self.io_queues, "must be between 1 and 65535");
        issues.check(self.lba_size.0.is_power_of_two() && (512..=65_536).contains(&self.lba_size.0), "nvme.lba_size", self.lba_size, "must be a power of two from 512B to 64KiB");
        issues.check(self.metadata_size.0 <= self.lba_size.0, "nvme.metadata_size", self.metadata_size, format!("must be at most nvme.lba_size = {}", self.lba_size));
        issues.check((2..=65_536).contains(&self.queue_depth), "nvme.queue_depth", self.queue_depth, "must be between 2 and 65536");
        issues.check(self.page_size.0.is_power_of_two() && (4096..=(128 << 20)).contains(&self.page_size.0), "nvme.page_size", self.page_size, "must be a power of two from 4KiB to 128MiB");
        issues.check(
            self.wrr_weights.len() == 3 && self.wrr_weights.iter().all(|w| (1..=256).contains(w)),
            "nvme.wrr_weights",
            format!("{:?}", self.wrr_weights),
            "must be three weights [high, medium, low], each between 1 and 256",
        );
        issues.check(
            self.arbitration_burst == 0 || (self.arbitration_burst.is_power_of_two() && self.arbitration_burst <= 128),
            "nvme.arbitration_burst",
            self.arbitration_burst,
            "must be a power of two up to 128, or 0 (no limit)",
        );
        issues.check(self.irq_coalesce_threshold <= 256, "nvme.irq_coalesce_threshold", self.irq_coalesce_threshold, "must be between 0 and 256");
        issues.check(
            self.irq_coalesce_time.as_ps().is_multiple_of(100 * PS_PER_US) && self.irq_coalesce_time.as_ps() <= 255 * 100 * PS_PER_US,
            "nvme.irq_coalesce_time",
            self.irq_coalesce_time,
            "must be a multiple of 100us up to 25.5ms (the NVMe field counts 100us units)",
        );
    }

    /// Whether interrupt coalescing is on.
    pub fn coalescing(&self) -> bool {
        self.irq_coalesce_threshold > 1 || self.irq_coalesce_time > SimDuration::ZERO
    }
}

config_enum! {
    /// A submission queue's priority class under NVMe weighted round robin with urgent
    /// priority (NVMe Base Specification 2.0, 3.4.4).
    pub enum WrrClass {
        /// Served before every weighted class (strict priority).
        Urgent = "urgent",
        /// The weighted classes: each gets `nvme.wrr_weights` commands per round.
        High = "high",
        Medium = "medium",
        Low = "low",
    }
}

impl Default for WrrClass {
    /// A tenant's queues are of the medium class unless it names another.
    fn default() -> Self {
        WrrClass::Medium
    }
}

impl WrrClass {
    /// Index among the weighted classes (urgent has none).
    pub fn weighted_index(self) -> Option<usize> {
        match self {
            WrrClass::Urgent => None,
            WrrClass::High => Some(0),
            WrrClass::Medium => Some(1),
            WrrClass::Low => Some(2),
        }
    }
}
