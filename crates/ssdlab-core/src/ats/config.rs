use super::Policy;
use crate::config_struct;
use crate::schema::Issues;
use crate::sim::SimDuration;
use crate::units::Bytes;

config_struct! {
    /// PCIe ATS with an Address Translation Cache in the device: every DMA looks its
    /// translation up; a miss waits for an ATS translation request to the host's translation
    /// agent (a PCIe read round trip), plus an IOMMU page walk when the IOMMU's IOTLB misses too.
    pub struct AtsConfig {
        /// Model the ATC in the device path. Default: `false`.
        enabled: bool = false,
        /// Smallest Translation Unit: 4 KiB × a power of two. Default: `2MiB`.
        stu: Bytes = Bytes(2 << 20),
        /// ATC lines. Default: `64`.
        lines: u32 = 64,
        /// Ways per set (0 = fully associative). Default: `0`.
        ways: u32 = 0,
        /// `lru`, `fifo` (or `rr`), `random` or `plru`. Default: `"lru"`.
        policy: Policy = Policy::Lru,
        /// Keep the SQ/CQ ring translations pinned (they take lines). Default: `true`.
        pin_rings: bool = true,
        /// Entries of the IOMMU's IOTLB (fully associative LRU). Default: `2048` (gem5 SMMUv3's
        /// main TLB size, figures.md; no vendor publishes one).
        iotlb_entries: u32 = 2048,
        /// IOMMU page walk on an IOTLB miss. Default: `500ns` (an assumption: no published
        /// figure, figures.md).
        iommu_walk: SimDuration = SimDuration::from_ns(500),
    }
}

impl AtsConfig {
    pub fn validate(&self, issues: &mut Issues) {
        let stu = self.stu.0;
        issues.check(stu >= 4096 && stu.is_multiple_of(4096) && (stu / 4096).is_power_of_two() && stu <= 4096 << 30, "ats.stu", self.stu, "must be 4KiB times a power of two");
        issues.check((1..=1 << 20).contains(&self.lines), "ats.lines", self.lines, "must be between 1 and 1048576");
        if self.ways > 0 {
            issues.check(
                self.ways <= 64 && self.lines.is_multiple_of(self.ways) && (self.lines / self.ways).is_power_of_two(),
                "ats.ways",
                self.ways,
                format!("must be at most 64 and give a power-of-two number of sets for ats.lines = {}", self.lines),
            );
        }
        issues.check(self.iotlb_entries >= 1, "ats.iotlb_entries", self.iotlb_entries, "must be at least 1");
        issues.check(
            self.policy != Policy::Opt,
            "ats.policy",
            format!("{:?}", self.policy.as_str()),
            "Belady's optimum needs the whole stream ahead: it is for ATC studies (`ssdlab atc`), not the device (lru, fifo, random or plru)",
        );
        issues.check(self.iommu_walk <= SimDuration::from_us(1000), "ats.iommu_walk", self.iommu_walk, "must be at most 1ms");
    }

    /// The STU as its ATS exponent.
    pub fn stu_exponent(&self) -> u32 {
        (self.stu.0 / 4096).max(1).trailing_zeros()
    }
}
