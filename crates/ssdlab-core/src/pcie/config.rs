use crate::schema::Issues;
use crate::sim::SimDuration;
use crate::units::{Bytes, TransferRate};
use crate::{config_enum, config_struct};

config_enum! {
    /// How the root complex sizes the completions of a device's read request.
    pub enum CompletionSplit {
        /// One completion TLP per Read Completion Boundary piece (many root ports do this).
        Rcb = "rcb",
        /// Completions coalesced up to Max Payload Size.
        Mps = "mps",
    }
}

config_struct! {
    /// The PCIe link between the root port and the device.
    pub struct PcieConfig {
        /// PCIe generation, 1 to 6; sets the lane rate and encoding. Default: `4`.
        gen: u8 = 4,
        /// Number of lanes: 1, 2, 4, 8, 12, 16 or 32. Default: `4`.
        lanes: u32 = 4,
        /// Overrides the generation's lane rate, e.g. `"8GT/s"`. Default: unset.
        lane_rate: Option<TransferRate> = None,
        /// Max Payload Size of a TLP: a power of two from 128 B to 4 KiB. Default: `256B`.
        mps: Bytes = Bytes(256),
        /// Max Read Request Size of the device: a power of two from 128 B to 4 KiB. Default: `512B`.
        mrrs: Bytes = Bytes(512),
        /// Read Completion Boundary of the root port: 64 or 128 B. Default: `64B`.
        rcb: Bytes = Bytes(64),
        /// How read completions are cut: `"rcb"` (one TLP per RCB piece) or `"mps"`. Default: `"rcb"`.
        completion_split: CompletionSplit = CompletionSplit::Rcb,
        /// Host memory above 4 GiB: requests carry 4-DW (16 B) headers instead of 3-DW. Default: `true`.
        addr64: bool = true,
        /// End-to-end CRC on every TLP (4 B more each). Default: `false`.
        ecrc: bool = false,
        /// ACK/flow-control DLLPs (8 B each) sent back per TLP received. Default: `1.0`
        /// (one per TLP: the upper bound; real links coalesce ACKs).
        dllps_per_tlp: f64 = 1.0,
        /// One-way latency of a TLP through the transmitter, wire and receiver pipelines, on
        /// top of its serialisation time. Default: `100ns`.
        propagation: SimDuration = SimDuration::from_ns(100),
    }
}

fn pow2_in(b: Bytes, lo: u64, hi: u64) -> bool {
    b.0.is_power_of_two() && (lo..=hi).contains(&b.0)
}

impl PcieConfig {
    pub fn validate(&self, issues: &mut Issues) {
        issues.check((1..=6).contains(&self.gen), "pcie.gen", self.gen, "must be between 1 and 6");
        issues.check([1, 2, 4, 8, 12, 16, 32].contains(&self.lanes), "pcie.lanes", self.lanes, "must be one of 1, 2, 4, 8, 12, 16, 32");
        if let Some(r) = self.lane_rate {
            issues.check(r.0 > 0.0, "pcie.lane_rate", r, "must be greater than zero");
        }
        issues.check(pow2_in(self.mps, 128, 4096), "pcie.mps", self.mps, "must be a power of two from 128B to 4KiB");
        issues.check(pow2_in(self.mrrs, 128, 4096), "pcie.mrrs", self.mrrs, "must be a power of two from 128B to 4KiB");
        issues.check(self.rcb.0 == 64 || self.rcb.0 == 128, "pcie.rcb", self.rcb, "must be 64B or 128B");
        issues.check(self.dllps_per_tlp.is_finite() && (0.0..=16.0).contains(&self.dllps_per_tlp), "pcie.dllps_per_tlp", self.dllps_per_tlp, "must be between 0 and 16");
    }
}
