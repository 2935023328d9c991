use super::ecc::EccConfig;
use crate::schema::Issues;
use crate::sim::SimDuration;
use crate::units::{Bandwidth, Bytes};
use crate::{config_enum, config_struct};

config_enum! {
    /// The storage medium behind the controller.
    pub enum MediaKind {
        /// Byte-addressable non-volatile memory units (PCM, MRAM, 3D XPoint, DRAM).
        Nvm = "nvm",
        /// NAND flash behind a flash translation layer (`[ftl]`).
        Nand = "nand",
    }
}

config_enum! {
    /// How a die picks its next operation.
    pub enum DieScheduler {
        /// In arrival order.
        Fifo = "fifo",
        /// Reads first: a read overtakes queued programs, erases and GC work (and suspends one
        /// in progress when `suspend` is on).
        ReadPriority = "read-priority",
    }
}

config_struct! {
    /// NAND flash: geometry, timing and the ONFI channel.
    pub struct NandConfig {
        /// Channels (independent buses). Default: `8`.
        channels: u32 = 8,
        /// Chips (ways) per channel. Default: `4`.
        ways: u32 = 4,
        /// Dies per chip. Default: `1`.
        dies_per_chip: u32 = 1,
        /// Planes per die. Default: `2`.
        planes: u32 = 2,
        /// Blocks per plane. Default: `1024`.
        blocks_per_plane: u32 = 1024,
        /// Pages per block. Default: `256`.
        pages_per_block: u32 = 256,
        /// Page size (data area). Default: `16KiB`.
        page_size: Bytes = Bytes(16384),
        /// Array read time per page type (LSB, CSB, MSB, ...); page `p` of a block has type
        /// `p mod len`. Default: `["56.5us", "77.5us", "106us"]` (TLC, FEMU/SimpleSSD).
        read_latency: Vec<SimDuration> = vec![SimDuration::from_ps(56_500_000), SimDuration::from_us(77) + SimDuration::from_ns(500), SimDuration::from_us(106)],
        /// Program time per page type, as `read_latency`. Default: `["820.5us", "2225us", "5734us"]`.
        program_latency: Vec<SimDuration> = vec![SimDuration::from_ps(820_500_000), SimDuration::from_us(2225), SimDuration::from_us(5734)],
        /// Block erase time. Default: `3ms`.
        erase_latency: SimDuration = SimDuration::from_us(3000),
        /// One-shot programming (3D NAND): the pages of a word line, one per page type of
        /// `program_latency`, move into the die's latches in turn and program together in this
        /// time; until then none of them counts as programmed. Unset: each page programs on
        /// its own at its page type's `program_latency`. Default: unset.
        one_shot_program: Option<SimDuration> = None,
        /// The drive's power budget: programs and erases running at once over all dies; one
        /// more waits for a slot (0 = unlimited). Default: `0`.
        max_active_programs: u32 = 0,
        /// ONFI channel transfer rate in megatransfers per second. Default: `800`.
        channel_mts: u32 = 800,
        /// ONFI channel width in bits. Default: `8`.
        channel_width: u32 = 8,
        /// Command and address cycles on the channel per operation. Default: `100ns`.
        command_overhead: SimDuration = SimDuration::from_ns(100),
        /// Multi-plane operations: a die programs (or reads) the same page offset in all its
        /// planes at once. Default: `true`.
        multiplane: bool = true,
        /// Cache read: a die starts its next read as soon as a page leaves the array, while that
        /// page still moves out over the channel. Default: `false`.
        cache_read: bool = false,
        /// Cache program: the next page's data moves in while the array programs the current
        /// one. Default: `false`.
        cache_program: bool = false,
        /// Die scheduling: `fifo` or `read-priority`. Default: `"read-priority"`.
        scheduler: DieScheduler = DieScheduler::ReadPriority,
        /// Program/erase suspend for reads (needs `suspend_latency`). Default: `false`.
        suspend: bool = false,
        /// Time to suspend a program or erase, and to resume it. Default: unset.
        suspend_latency: Option<SimDuration> = None,
        /// Page-register reuse: a read of the page a plane read last (no program or erase on the
        /// die since) moves its data out again without sensing it (ONFI change read column), so
        /// a stream of small reads inside a page pays one tR. Default: `false`.
        register_reuse: bool = false,
        /// With isolated pools (`ftl.pools = "isolated"`): each die shares its time among the
        /// tenants' pools in proportion to their weights (start-time fair queueing over the
        /// programs, erases and GC reads waiting behind host reads, each charged its nominal
        /// array time), so that one tenant's GC delays its own writes first, as FLIN's
        /// fairness-aware flash scheduler does (Tavakkol et al., ISCA 2018). With one shared
        /// pool the dies cannot tell tenants apart. Default: `false` (first come first served).
        tenant_fair: bool = false,
        /// LDPC decode of a page read in the controller's ECC engine, after its data leaves
        /// the die (the die is free meanwhile). Default: `0ns`.
        ecc_decode: SimDuration = SimDuration::ZERO,
        /// Read retry: mean extra read steps (the page sensed again with shifted read
        /// voltages, its data moved out and decoded again) per 1000 P/E cycles of the block.
        /// Each read draws its steps from a geometric distribution with that mean, so most
        /// reads need none and a few need several (0 = off). Default: `0`.
        read_retry_per_kpe: f64 = 0.0,
        /// Read retry from retention: mean extra read steps per decade of the data's age
        /// beyond one hour (charge leaks from the cells with the log of time, so the read
        /// voltages drift). Data written in the run is young; preconditioned data is
        /// `data_age_days` old when the run starts (0 = off). Default: `0`.
        read_retry_per_decade: f64 = 0.0,
        /// Age of the preconditioned data at the start of the run (time since it was
        /// programmed), in days. Default: `0`.
        data_age_days: f64 = 0.0,
        /// Most retry steps a read takes (then soft decoding succeeds). Default: `8`.
        read_retry_max: u32 = 8,
        /// P/E cycles every block had before preconditioning (the drive's age); the blocks'
        /// own erases add to it. Default: `0`.
        pe_cycles: u32 = 0,
    }
}

config_enum! {
    /// How memory controllers reach the host interface.
    pub enum Interconnect {
        /// One bus shared by every controller.
        Bus = "bus",
        /// A ring shared by every controller; controller `i` is `min(i + 1, n - i)` hops away.
        Ring = "ring",
        /// A crossbar: each controller has its own port of `bus_bandwidth`.
        Crossbar = "crossbar",
    }
}

config_struct! {
    /// Byte-addressable NVM (PCM, MRAM, 3D XPoint, DRAM): memory controllers with banks, on an
    /// interconnect, interleaved by chunk.
    pub struct NvmConfig {
        /// Memory controllers. Default: `16`.
        controllers: u32 = 16,
        /// Banks per controller (independent arrays behind one controller). Default: `1`.
        banks: u32 = 1,
        /// Interleaving degree: consecutive chunks rotate over this many controllers; each group
        /// of that many controllers holds its own contiguous part of the capacity (0 = all).
        /// Default: `0`.
        interleave: u32 = 0,
        /// Interleaving chunk and media access unit: touching part of a chunk occupies its bank
        /// for a whole-chunk access, and a partial write reads and writes the chunk. A multiple
        /// of 512 B. Default: `4KiB`.
        chunk: Bytes = Bytes(4096),
        /// Time a bank is busy reading one chunk. Default: `48ns` (PCM, Moneta).
        read_latency: SimDuration = SimDuration::from_ns(48),
        /// Time a bank is busy writing one chunk. Default: `150ns` (PCM, Moneta).
        write_latency: SimDuration = SimDuration::from_ns(150),
        /// Partitions per bank: arrays that share the bank's access path but recover on their
        /// own. Chunk `k` of a bank lives in its partition `(k / (degree * banks)) mod
        /// partitions`. Default: `1`.
        partitions: u32 = 1,
        /// Time a partition takes after each read before it can be read again (the recovery
        /// part of its read cycle). The bank is free for another partition's read meanwhile,
        /// and the read's data does not wait for it: a lone read does not see it, reads of one
        /// partition back to back do. Default: `0`.
        read_recovery: SimDuration = SimDuration::ZERO,
        /// `bus`, `ring` or `crossbar`. Default: `"bus"`.
        interconnect: Interconnect = Interconnect::Bus,
        /// Bandwidth of the bus or ring, or of each crossbar port. Default: `16GB/s`.
        bus_bandwidth: Bandwidth = Bandwidth(16e9),
        /// Ring: latency of each hop. Default: `0`.
        hop_latency: SimDuration = SimDuration::ZERO,
        /// Start-gap wear levelling: the gap moves (a chunk read and written) every this many
        /// writes to a controller (0 = off). Default: `0`.
        start_gap_interval: u32 = 0,
        /// Cut-through reads: the bank streams its whole chunk over the interconnect, and when
        /// ECC codewords (`media.ecc.codeword`) are smaller than the chunk each one a read
        /// needs goes on to the host link once it has crossed and been decoded, instead of
        /// after the whole piece. Default: `false`.
        cut_through: bool = false,
        /// Power-loss-protected write buffer in the controller, in whole chunks: a write
        /// completes once its data is in the buffer, and each chunk's slot is held until its
        /// media write (interconnect, then bank) ends; a write that finds too few free slots
        /// waits for them. `0`: a write completes when its last chunk is written. Default: `0`.
        write_buffer: Bytes = Bytes(0),
    }
}

config_struct! {
    /// The media backend.
    pub struct MediaConfig {
        /// `"nvm"`. Default: `"nvm"`.
        kind: MediaKind = MediaKind::Nvm,
        /// Capacity exported to the host, a multiple of 512 B. Default: `256GiB`.
        capacity: Bytes = Bytes(256 << 30),
        /// NVM array parameters (used when `kind = "nvm"`).
        nvm: NvmConfig = NvmConfig::default(),
        /// NAND parameters (used when `kind = "nand"`; the capacity then follows from the
        /// geometry and `ftl.op_ratio`).
        nand: NandConfig = NandConfig::default(),
        /// ECC decoding of reads: hard-decision limit and the soft-decision slow path.
        ecc: EccConfig = EccConfig::default(),
    }
}

impl MediaConfig {
    pub fn validate(&self, issues: &mut Issues) {
        self.ecc.validate(issues);
        if self.kind == MediaKind::Nand {
            self.nand.validate(issues);
            return;
        }
        issues.check(self.capacity.0 > 0 && self.capacity.0.is_multiple_of(512), "media.capacity", self.capacity, "must be a positive multiple of 512B");
        let n = &self.nvm;
        issues.check((1..=1 << 16).contains(&n.controllers), "media.nvm.controllers", n.controllers, "must be between 1 and 65536");
        issues.check((1..=1024).contains(&n.banks), "media.nvm.banks", n.banks, "must be between 1 and 1024");
        issues.check(
            n.interleave == 0 || (n.interleave <= n.controllers && n.controllers.is_multiple_of(n.interleave)),
            "media.nvm.interleave",
            n.interleave,
            format!("must be 0 or divide media.nvm.controllers = {}", n.controllers),
        );
        issues.check((1..=1024).contains(&n.partitions), "media.nvm.partitions", n.partitions, "must be between 1 and 1024");
        issues.check(u64::from(n.controllers) * u64::from(n.banks) * u64::from(n.partitions) <= 1 << 24, "media.nvm.partitions", n.partitions, "controllers x banks x partitions must be at most 2^24");
        issues.check(n.chunk.0 > 0 && n.chunk.0.is_multiple_of(512), "media.nvm.chunk", n.chunk, "must be a positive multiple of 512B");
        issues.check(n.bus_bandwidth.0 > 0.0, "media.nvm.bus_bandwidth", n.bus_bandwidth, "must be greater than zero");
        issues.check(
            n.write_buffer.0.is_multiple_of(n.chunk.0.max(1)) && n.write_buffer.0 / n.chunk.0.max(1) < 1 << 24,
            "media.nvm.write_buffer",
            n.write_buffer,
            format!("must be a whole number of chunks ({}), fewer than 2^24", n.chunk),
        );
    }
}

impl NandConfig {
    pub fn validate(&self, issues: &mut Issues) {
        for (key, v, max) in [
            ("media.nand.channels", self.channels, 1024),
            ("media.nand.ways", self.ways, 256),
            ("media.nand.dies_per_chip", self.dies_per_chip, 16),
            ("media.nand.planes", self.planes, 16),
            ("media.nand.blocks_per_plane", self.blocks_per_plane, 1 << 20),
            ("media.nand.pages_per_block", self.pages_per_block, (1 << 16) - 1),
        ] {
            issues.check((1..=max).contains(&v), key, v, format!("must be between 1 and {max}"));
        }
        let blocks = self.dies() * u64::from(self.planes) * u64::from(self.blocks_per_plane);
        issues.check(blocks < u64::from(u32::MAX), "media.nand.blocks_per_plane", self.blocks_per_plane, format!("the drive would have {blocks} blocks; at most 4294967294"));
        issues.check(self.page_size.0 >= 512 && self.page_size.0.is_multiple_of(512) && self.page_size.0 <= 1 << 20, "media.nand.page_size", self.page_size, "must be a multiple of 512B up to 1MiB");
        for (key, list) in [("media.nand.read_latency", &self.read_latency), ("media.nand.program_latency", &self.program_latency)] {
            issues.check(
                (1..=8).contains(&list.len()),
                key,
                format!("[{}]", list.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")),
                "needs 1 to 8 page-type latencies (SLC 1, MLC 2, TLC 3, QLC 4)",
            );
        }
        issues.check(
            self.read_latency.len() == self.program_latency.len(),
            "media.nand.program_latency",
            self.program_latency.len(),
            format!("must list as many page types as media.nand.read_latency ({})", self.read_latency.len()),
        );
        if let Some(t) = self.one_shot_program {
            let k = self.program_latency.len().max(1) as u32;
            issues.check(t > SimDuration::ZERO, "media.nand.one_shot_program", t, "must be greater than zero (leave it unset to program page by page)");
            issues.check(
                self.pages_per_block.is_multiple_of(k),
                "media.nand.pages_per_block",
                self.pages_per_block,
                format!("must be a whole number of word lines ({k} pages each) with media.nand.one_shot_program"),
            );
        }
        issues.check(self.channel_mts > 0, "media.nand.channel_mts", self.channel_mts, "must be greater than zero");
        issues.check([8, 16].contains(&self.channel_width), "media.nand.channel_width", self.channel_width, "must be 8 or 16 bits");
        issues.check(
            self.read_retry_per_kpe >= 0.0 && self.read_retry_per_kpe <= 100.0,
            "media.nand.read_retry_per_kpe",
            self.read_retry_per_kpe,
            "must be between 0 and 100 (mean retry steps per 1000 P/E cycles)",
        );
        issues.check(
            self.read_retry_per_decade >= 0.0 && self.read_retry_per_decade <= 100.0,
            "media.nand.read_retry_per_decade",
            self.read_retry_per_decade,
            "must be between 0 and 100 (mean retry steps per decade of data age)",
        );
        issues.check((0.0..=7305.0).contains(&self.data_age_days), "media.nand.data_age_days", self.data_age_days, "must be between 0 and 7305 days (20 years)");
        issues.check(self.read_retry_max <= 64, "media.nand.read_retry_max", self.read_retry_max, "must be at most 64");
        issues.check(self.pe_cycles <= 1_000_000, "media.nand.pe_cycles", self.pe_cycles, "must be at most 1000000");
        issues.check(self.ecc_decode <= SimDuration::from_us(10_000), "media.nand.ecc_decode", self.ecc_decode, "must be at most 10ms");
        if self.suspend {
            issues.check(self.suspend_latency.is_some(), "media.nand.suspend", self.suspend, "needs media.nand.suspend_latency (no suspend latency is set)");
            issues.check(!self.cache_program, "media.nand.suspend", self.suspend, "is not modelled together with media.nand.cache_program");
        }
    }

    /// Dies in the drive.
    pub fn dies(&self) -> u64 {
        u64::from(self.channels) * u64::from(self.ways) * u64::from(self.dies_per_chip)
    }
}
