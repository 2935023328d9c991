use crate::media::NandConfig;
use crate::schema::Issues;
use crate::units::Bytes;
use crate::{config_enum, config_struct};

config_enum! {
    /// Which block the garbage collector reclaims.
    pub enum Victim {
        /// The full block with the fewest valid pages.
        Greedy = "greedy",
        /// The best of `gc_window` random full blocks by (1 - u) · age / 2u (Rosenblum & Ousterhout).
        CostBenefit = "cost-benefit",
        /// A random full block (a baseline).
        Random = "random",
    }
}

config_enum! {
    /// What host activity defers background GC.
    pub enum BgGcDefer {
        /// Any command: background GC waits for an idle host.
        Io = "io",
        /// Only writes: background GC goes on while the host reads (firmware that reclaims
        /// space whenever writes pause, so reads meet its programs and erases).
        Writes = "writes",
    }
}

config_enum! {
    /// What the cached map (`ftl.map_cache`) holds.
    pub enum MapCacheUnit {
        /// Whole translation pages (a miss loads the page's every entry).
        Page = "page",
        /// Single entries (DFTL's cached mapping table, as MQSim models it): a miss loads its
        /// entry (a GC move's sets it without a load), and evicting a changed entry writes its
        /// translation page back with every other changed entry of that page.
        Entry = "entry",
    }
}

config_enum! {
    /// The order in which consecutive page writes are spread over the flash.
    pub enum Striping {
        /// Consecutive pages go to consecutive channels, then dies, then planes.
        ChannelFirst = "channel-first",
        /// Consecutive pages go to consecutive dies of a channel, then channels, then planes.
        DieFirst = "die-first",
        /// Consecutive pages go to the planes of a die, then channels, then dies.
        PlaneFirst = "plane-first",
    }
}

config_enum! {
    /// The blocks the FTL opens, fills, collects and erases as one.
    pub enum BlockGroup {
        /// Each plane's blocks stand alone: a plane that finds no free block is skipped, and
        /// once a die's planes write at different pages their programs go one plane at a time.
        Plane = "plane",
        /// Multi-plane blocks: block `k` of each plane of a die. The FTL's page is a page of
        /// every plane of the die, programmed together.
        Die = "die",
        /// Superblocks: block `k` of every plane of the drive (of the pool), filled a die's
        /// multi-plane page at a time over the dies in channel order, so that free space and
        /// writes stay spread evenly over the dies.
        Superblock = "superblock",
    }
}

config_enum! {
    /// The state the drive is put in before the measured run (without timing).
    pub enum Precondition {
        /// Factory fresh: nothing mapped, every block free.
        Clean = "clean",
        /// Every exported LBA written once, in order.
        Sequential = "sequential",
        /// Sequentially filled, then overwritten at random until WAF settles (or
        /// `precondition_drive_writes` drive writes).
        Aged = "aged",
    }
}

config_enum! {
    /// How `aged` preconditioning reaches steady state.
    pub enum Aging {
        /// `replica` above `aging_replica_blocks` blocks, `simulate` below.
        Auto = "auto",
        /// Random overwrites of the whole drive until WAF settles.
        Simulate = "simulate",
        /// Age a scaled replica (same planes, block shape and usable spare fraction) by
        /// simulation (by valid counts alone, where the drive allows it), then build this
        /// drive's state from the replica's valid-count and erase-count distributions with a
        /// random placement of the logical pages. Exact for uniform traffic, whose steady state
        /// does not depend on the drive's size.
        Replica = "replica",
    }
}

config_enum! {
    /// How the blocks are shared among tenants (`[[tenants]]`).
    pub enum PoolMode {
        /// One pool: every tenant's pages mix in the same blocks, and GC moves them together.
        Shared = "shared",
        /// A pool per tenant: its blocks, spare space included, hold only its pages.
        Isolated = "isolated",
    }
}

config_enum! {
    /// How isolated pools split the spare blocks (the over-provisioned space).
    pub enum OpsSplit {
        /// Equal parts.
        Equal = "equal",
        /// In proportion to the tenants' weights.
        Weight = "weight",
        /// In proportion to the tenants' capacities.
        Capacity = "capacity",
    }
}

config_enum! {
    /// Where the host's writes are placed (NVMe Flexible Data Placement, TP4146).
    pub enum Placement {
        /// The device decides: every host write goes to one write stream.
        None = "none",
        /// FDP: each tenant writes through its own reclaim unit handle (its placement
        /// identifier), so its data fills reclaim units of its own; the spare space stays shared.
        Fdp = "fdp",
    }
}

config_enum! {
    /// FDP reclaim unit handle type: where GC puts the data it moves.
    pub enum RuhType {
        /// Initially isolated: moved data of every handle shares GC's reclaim units.
        Initial = "initial",
        /// Persistently isolated: moved data goes to reclaim units of its own handle.
        Persistent = "persistent",
    }
}

config_struct! {
    /// The flash translation layer: page-level mapping, allocation, garbage collection,
    /// over-provisioning and wear levelling.
    pub struct FtlConfig {
        /// Mapping unit (logical page): a divisor of the flash page size, a multiple of 512 B.
        /// Default: `4KiB`.
        mapping_unit: Bytes = Bytes(4096),
        /// Fraction of the raw capacity hidden from the host as spare space, in (0, 1).
        /// Default: `0.07`.
        op_ratio: f64 = 0.07,
        /// Order of page striping over channels, dies and planes. Default: `"channel-first"`.
        striping: Striping = Striping::ChannelFirst,
        /// The blocks managed as one: `plane` (each plane's blocks alone), `die` (multi-plane
        /// blocks: block `k` of each plane of a die) or `superblock` (block `k` of every plane).
        /// Grouped blocks open, fill and are collected and erased together, so every page a
        /// stream writes is a multi-plane program (a die programs its planes together only at
        /// one page; SimpleSSD's superpages over planes and dies). Default: `"plane"`.
        block_group: BlockGroup = BlockGroup::Plane,
        /// GC victim policy: `greedy`, `cost-benefit` or `random`. Default: `"greedy"`.
        gc_policy: Victim = Victim::Greedy,
        /// Random candidates that `cost-benefit` compares. Default: `32`.
        gc_window: u32 = 32,
        /// GC starts when free blocks fall below this fraction of all blocks (and below two
        /// blocks at least, three with grouped blocks). Default: `0.005`.
        gc_trigger: f64 = 0.005,
        /// GC stops once free blocks are back above this fraction. Default: `0.01`.
        gc_reclaim: f64 = 0.01,
        /// Static wear levelling: at every 8th victim, if the erase-count spread exceeds this,
        /// the least-worn full block is reclaimed instead (0 = off). Default: `0`.
        wl_threshold: u32 = 0,
        /// Background GC: after this long without host I/O (or writes, `bg_gc_defer`), GC
        /// reclaims victims one at a time, this long apart, until `bg_gc_target` of the blocks
        /// are free (0 = off). Default: `0`.
        bg_gc_idle: crate::sim::SimDuration = crate::sim::SimDuration::ZERO,
        /// Free-block fraction background GC works towards. Default: `0.03`.
        bg_gc_target: f64 = 0.03,
        /// What host activity defers background GC, `io` or `writes`: with `writes` it starts
        /// `bg_gc_idle` after the run begins or after the last write, and reads do not hold it
        /// off. Default: `"io"`.
        bg_gc_defer: BgGcDefer = BgGcDefer::Io,
        /// DRAM write buffer: host writes complete once their data is in it, and wait when it is
        /// full; reads of data not yet programmed are served from it. Default: `64MiB`.
        write_buffer: Bytes = Bytes(64 << 20),
        /// Volatile write cache: on, a write completes once its data is in the buffer; off, only
        /// once its pages are programmed (NVMe Volatile Write Cache feature disabled; needs
        /// `mapping_unit` = `media.nand.page_size`, so that no write waits for others to fill
        /// its page). Default: `true`.
        write_cache: bool = true,
        /// Time to put a mapping unit into the buffer or read it back. Default: `1us`.
        buffer_latency: crate::sim::SimDuration = crate::sim::SimDuration::from_us(1),
        /// Read-ahead: once a queue reads sequentially (a read that starts where its last one
        /// ended), the controller reads this far past it into DRAM, whole pages at a time and
        /// behind host reads on each die; reads that find their data there are served from DRAM
        /// (0 = off). Default: `128KiB`.
        read_ahead: Bytes = Bytes(128 << 10),
        /// Read coalescing: a host read whose bytes a page read already under way for another
        /// host read brings (same flash page, same bytes) waits for that read and is served
        /// from the controller's buffer, instead of sensing the page again. Default: `true`.
        read_coalesce: bool = true,
        /// Cached mapping table (DFTL): the map lives in flash as translation pages and this
        /// much DRAM caches them (`map_cache_unit`), least recently used out first; a read
        /// whose entry is not cached waits for one flash read of its translation page, and
        /// evicting a changed entry writes its page back (0 = the whole map in DRAM).
        /// Default: `0`.
        map_cache: Bytes = Bytes(0),
        /// What the cached map holds: `"page"` (whole translation pages, the cache starts
        /// empty) or `"entry"` (single entries of `map_cache_entry` bytes, DFTL's CMT as MQSim
        /// models it: a miss reads the 512 B sector of its translation page, a GC move sets
        /// its entry without one, write-backs read the page's unchanged entries and program it,
        /// and the cache starts full of clean entries spread evenly over the written units, as
        /// MQSim's preconditioning fills it).
        /// Default: `"page"`.
        map_cache_unit: MapCacheUnit = MapCacheUnit::Page,
        /// DRAM bytes per cached entry in `"entry"` mode (logical and physical address and a
        /// written-sectors bitmap). Default: `8B`.
        map_cache_entry: Bytes = Bytes(8),
        /// Bytes per entry of a translation page in flash (a page maps page size / this many
        /// units). Default: `4B`.
        map_entry: Bytes = Bytes(4),
        /// Tenants' blocks: `"shared"` (one pool) or `"isolated"` (a pool per tenant).
        /// Default: `"shared"`.
        pools: PoolMode = PoolMode::Shared,
        /// Isolated pools: how the spare blocks are split, `"equal"`, `"weight"` or
        /// `"capacity"`. Default: `"equal"`.
        ops_split: OpsSplit = OpsSplit::Equal,
        /// Isolated pools: whether each pool also owns a part of the write buffer (split like
        /// the spare blocks), so that one tenant's writes waiting for space never hold up
        /// another's. Default: `false` (one buffer, first come first served).
        buffer_split: bool = false,
        /// Data placement: `"none"` or `"fdp"` (each tenant a reclaim unit handle; a reclaim unit
        /// is a stream's open block in every plane). Default: `"none"`.
        placement: Placement = Placement::None,
        /// FDP: reclaim unit handles that writes pick by placement identifier (jobs'
        /// `workload.placement_ids`, fio's `fdp_pli`), each a host stream of its own, initially
        /// isolated; 0: a handle per tenant instead. Default: `0`.
        fdp_handles: u32 = 0,
        /// FDP: reclaim unit handles that are `"initial"`ly or `"persistent"`ly isolated.
        /// Default: `"initial"`.
        ruh_type: RuhType = RuhType::Initial,
        /// Isolated pools: how often the dynamic OPS controller moves free blocks between
        /// pools toward each tenant's IOPS SLO, or its weight's share without SLOs (0 = the
        /// split stays as `ops_split` made it). Default: `0`.
        ops_interval: crate::sim::SimDuration = crate::sim::SimDuration::ZERO,
        /// Most free blocks the controller moves at a step. Default: `8`.
        ops_step: u32 = 8,
        /// A zoned namespace (NVMe ZNS): zones of this many bytes, each written sequentially at
        /// its write pointer and reset before it is written again; a multiple of a superblock
        /// (one block of every plane), which a zone stripes over. Unset: a conventional
        /// namespace. Default: unset.
        zone_size: Option<Bytes> = None,
        /// Zones that may be partly written at once (MAR + 1 in the ZNS identify data); each
        /// has a write stream, and so an open block in every plane, of its own. Default: `14`
        /// (\[ASSUME\] a common report of large-zone ZNS drives).
        max_active_zones: u32 = 14,
        /// The controller's time to reset a zone (a Zone Management Send: it updates the
        /// zone's state and unmaps its data; the blocks are erased later, when GC reclaims
        /// them). Default: `10us` (\[ASSUME\]).
        zone_reset_latency: crate::sim::SimDuration = crate::sim::SimDuration::from_ps(10_000_000),
        /// Integrity mode: a shadow map records the version of every unit written (from
        /// preconditioning on), every host read is checked against it, and the FTL's
        /// invariants are verified at the end; `flash.integrity` reports lost, stale and
        /// duplicated units. Timing is unchanged; it costs host memory (two hash-map entries
        /// per mapped unit) and wall time. Default: `false`.
        integrity: bool = false,
        /// State before the run: `clean`, `sequential` or `aged`. Default: `"clean"`.
        precondition: Precondition = Precondition::Clean,
        /// Sequential preconditioning: the fraction of each pool's logical units written, from
        /// its first (MQSim's Initial_Occupancy_Percentage); the rest stays unwritten, and its
        /// reads return zeroes without a flash read. Default: `1`.
        precondition_fill: f64 = 1.0,
        /// Aged preconditioning: stop after this many drive writes of random overwrites even if
        /// WAF is still moving (0 = until WAF settles). Default: `0`.
        precondition_drive_writes: f64 = 0.0,
        /// How `aged` gets there: `auto`, `simulate` or `replica`. Default: `"auto"`.
        aging: Aging = Aging::Auto,
        /// Blocks of the replica aged by `replica` (and the size above which `auto` uses it).
        /// Default: `16384` (about 16 M mapping units of statistics; smaller replicas drift).
        aging_replica_blocks: u32 = 16384,
    }
}

/// The keys the spare-space rule reads: it is skipped when one of them broke a rule already.
pub const SPARE_RULE_KEYS: &[&str] = &[
    "ftl.op_ratio",
    "ftl.gc_trigger",
    "ftl.gc_reclaim",
    "ftl.mapping_unit",
    "ftl.block_group",
    "media.nand.channels",
    "media.nand.ways",
    "media.nand.dies_per_chip",
    "media.nand.planes",
    "media.nand.blocks_per_plane",
    "media.nand.pages_per_block",
    "media.nand.page_size",
];

impl FtlConfig {
    /// The rule between the FTL and the flash: the spare blocks must hold GC's margin (see
    /// [`super::spare_space_issue`]). Run it once the values it reads (`SPARE_RULE_KEYS`) are
    /// known to be good and the mapping unit divides the page.
    pub fn validate_spare(&self, nand: &NandConfig, issues: &mut Issues) {
        let g = super::Geometry::new(nand, self.mapping_unit.0);
        if let Some(issue) = super::spare_space_issue(&g, self) {
            issues.0.push(issue);
        }
        if let Some(z) = self.zone_size {
            // A zone is whole superblocks: its stream fills one block of every plane at a time.
            let superblock = u64::from(g.all_planes()) * u64::from(g.slots_per_block()) * self.mapping_unit.0;
            let exported = super::exported_units(&g, self.op_ratio) * self.mapping_unit.0;
            if z.0 == 0 || !z.0.is_multiple_of(superblock) {
                issues.push("ftl.zone_size", z, format!("must be a positive multiple of a superblock (one block of each of the {} planes) = {}", g.all_planes(), Bytes(superblock)));
            } else if z.0 > exported {
                issues.push("ftl.zone_size", z, format!("must be at most the exported capacity = {}", Bytes(exported)));
            }
        }
    }

    pub fn validate(&self, issues: &mut Issues) {
        issues.check(self.mapping_unit.0 > 0 && self.mapping_unit.0.is_multiple_of(512), "ftl.mapping_unit", self.mapping_unit, "must be a positive multiple of 512B");
        issues.check(self.op_ratio > 0.0 && self.op_ratio < 1.0, "ftl.op_ratio", self.op_ratio, "must be greater than 0 and less than 1");
        issues.check(self.gc_trigger > 0.0 && self.gc_trigger < 0.5, "ftl.gc_trigger", self.gc_trigger, "must be greater than 0 and less than 0.5");
        issues.check(self.gc_reclaim > 0.0 && self.gc_reclaim < 0.5, "ftl.gc_reclaim", self.gc_reclaim, "must be greater than 0 and less than 0.5");
        issues.check(self.gc_reclaim >= self.gc_trigger, "ftl.gc_reclaim", self.gc_reclaim, format!("must be >= ftl.gc_trigger = {}", self.gc_trigger));
        issues.check(self.gc_window >= 1, "ftl.gc_window", self.gc_window, "must be at least 1");
        issues.check(
            self.bg_gc_target > 0.0 && self.bg_gc_target < 0.5 && self.bg_gc_target >= self.gc_trigger,
            "ftl.bg_gc_target",
            self.bg_gc_target,
            format!("must be less than 0.5 and >= ftl.gc_trigger = {}", self.gc_trigger),
        );
        issues.check(self.map_cache.0 == 0 || self.map_cache.0 >= 4096, "ftl.map_cache", self.map_cache, "must be 0 (the whole map in DRAM) or at least 4KiB");
        issues.check((1..=64).contains(&self.map_entry.0), "ftl.map_entry", self.map_entry, "must be between 1B and 64B");
        issues.check((1..=64).contains(&self.map_cache_entry.0), "ftl.map_cache_entry", self.map_cache_entry, "must be between 1B and 64B");
        issues.check(self.read_ahead.0 <= 64 << 20, "ftl.read_ahead", self.read_ahead, "must be at most 64MiB (0 = off)");
        issues.check(self.ops_step >= 1, "ftl.ops_step", self.ops_step, "must be at least 1");
        if self.zone_size.is_some() {
            issues.check((1..=4096).contains(&self.max_active_zones), "ftl.max_active_zones", self.max_active_zones, "must be between 1 and 4096");
            issues.check(self.precondition != Precondition::Aged, "ftl.precondition", self.precondition, "a zoned namespace is written zone by zone: clean (zones empty) or sequential (zones full)");
            issues.check(self.placement == Placement::None, "ftl.placement", self.placement, "FDP placement and zones do not mix: leave placement at none with ftl.zone_size");
        }
        issues.check(self.aging_replica_blocks >= 1024, "ftl.aging_replica_blocks", self.aging_replica_blocks, "must be at least 1024");
        issues.check(self.precondition_fill > 0.0 && self.precondition_fill <= 1.0, "ftl.precondition_fill", self.precondition_fill, "must be above 0 and at most 1");
        issues.check(
            self.precondition_fill >= 1.0 || self.zone_size.is_none(),
            "ftl.precondition_fill",
            self.precondition_fill,
            "a zoned namespace is written zone by zone: 1 (every zone full) or clean",
        );
        issues.check(
            self.precondition_fill >= 1.0 || self.precondition == Precondition::Sequential,
            "ftl.precondition_fill",
            self.precondition_fill,
            format!("a partial fill needs ftl.precondition = \"sequential\" (it is \"{}\")", self.precondition),
        );
        issues.check(self.precondition_drive_writes >= 0.0 && self.precondition_drive_writes <= 100.0, "ftl.precondition_drive_writes", self.precondition_drive_writes, "must be between 0 and 100");
    }
}
