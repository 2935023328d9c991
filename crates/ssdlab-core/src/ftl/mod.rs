//! The flash translation layer: a page-level (mapping-unit) FTL, functional and fast.
//!
//! Models: a sparse logical-to-physical map whose memory follows what was written (a sequential
//! fill or replica aging is a computed layout, see `map.rs`), physical
//! slots (mapping units) packed into flash pages and pages into blocks; out-of-place writes into
//! an open block per plane per stream (host and GC streams apart), with planes visited in a
//! channel-, die- or plane-first striping order; over-provisioning; TRIM; garbage collection
//! triggered by the free-block count, collecting greedy, cost-benefit or random victims unit by
//! unit, paced by host writes, until a reclaim threshold; erase counts and an optional static wear-levelling rule; WAF and GC
//! counters; and a shadow map that checks every invariant in integrity mode.
//!
//! Blocks are managed in pools (see `pool.rs`). A pool owns the same range of blocks in every
//! plane, and has its own free blocks, host and GC streams, victim index, GC thresholds, spare
//! fraction and exported logical range, and counters: a logical unit is routed to the pool
//! whose LPN range holds it, and GC reclaims and rewrites within a pool, so pools share no
//! block, no GC work and no count. The maps, the per-block state (which records each block's
//! pool), the striping order, the random source and the shadow map are shared. A config makes
//! one pool of every block; with `[[tenants]]` and `ftl.pools = "isolated"` each tenant gets a
//! pool ([`Ftl::with_pools`]), and the dynamic OPS controller (`ops.rs`) moves free blocks
//! between them. The drive-wide accessors sum over pools. With several tenants the FTL also
//! attributes GC: every moved unit is counted by the tenant whose write paid for the move and
//! by the tenant that owns it. With FDP (`ftl.placement = "fdp"`) each tenant writes through
//! a reclaim unit handle of its own (a host stream), and persistently isolated handles get a
//! GC stream each, in one pool whose spare space they share.
//!
//! With `ftl.block_group` the FTL manages grouped blocks: block `k` of each plane of a die
//! (`die`: multi-plane blocks) or of every plane (`superblock`) open, fill, are collected and
//! erased as one. The FTL then works on a geometry of one plane per die (or one in all) whose
//! pages span the grouped planes, and translates at its edge: a die's share of a page goes to
//! the array as one multi-plane program, a unit's place is its plane's page, and a victim's
//! erase is one per plane. Unlike lone planes, grouped planes never drift to different pages.
//!
//! The FTL is timing-free: each call reports the flash operations it implies (page programs, GC
//! page reads, erases) to a sink, and the NAND timing model turns them into die and channel
//! work. Preconditioning runs the same code with a sink that ignores them.
//!
//! With `ftl.map_cache` set, map lookups and updates go through a cache of translation pages
//! (`map_cache.rs`), and report the flash reads and writes its misses cost.
//!
//! Leaves out: block-level or hybrid mapping, read disturb and retention, bad blocks; groups
//! other than a die or the whole drive (a channel's dies), a multi-plane erase (a group's
//! erases run one plane at a time); for
//! pools, pools over a subset of planes, routing other than by LPN range, moving blocks that
//! hold data, and replica aging of more than one pool (several pools age by simulation); for
//! FDP, several reclaim groups, reclaim units other than a stream's open block in every plane,
//! placement identifiers chosen per write (a tenant's writes all name its handle), and FDP
//! events and statistics log pages.

mod age;
mod bulk;
mod config;
mod counted;
mod device;
mod flush;
mod gc;
mod integrity;
pub mod map;
pub mod map_cache;
pub mod metrics;
pub mod ops;
mod placement;
mod pool;
mod prefetch;
mod read_ahead;
mod slots;
mod zones;

use rand::SeedableRng;

pub use config::{Aging, BgGcDefer, BlockGroup, FtlConfig, MapCacheUnit, OpsSplit, Placement, PoolMode, Precondition, RuhType, Striping, Victim, SPARE_RULE_KEYS};
pub use device::{Event, FlashDevice, FlashSummary, IntegrityReport, PreconditionReport, Tenancy};
pub use integrity::IntegrityCounts;
use integrity::Shadow;
use map::{L2p, Layout, P2l, Segment, UNMAPPED};
use map_cache::{MapCache, MapCacheCounters};
pub use placement::Attribution;
pub use pool::{apportion, spare_need, PoolSpec};
use pool::{Collecting, Links, Pool, PoolId, Sizing, GC, HOST, NIL};
use slots::Slot;

use crate::error::{ConfigIssue, Error, Result};
use crate::ids::{BlockId, Lpn};
use crate::media::nand::{FlashOp, Geometry};
use crate::media::NandConfig;
use crate::sim::{div_rem, divides, stream_seed, Rng};

/// The geometry the FTL manages for `ftl.block_group`: with `die`, one plane per die whose
/// pages are a page of every plane of the die and whose block `k` is block `k` of each; with
/// `superblock`, one plane in all, spanning every plane of the drive.
pub fn grouped(g: &Geometry, group: BlockGroup) -> Geometry {
    let n = match group {
        BlockGroup::Plane => return g.clone(),
        BlockGroup::Die => g.planes,
        BlockGroup::Superblock => g.all_planes(),
    };
    let (channels, dies_per_channel) = if group == BlockGroup::Superblock { (1, 1) } else { (g.channels, g.dies_per_channel) };
    Geometry { channels, dies_per_channel, planes: 1, page_size: g.page_size * u64::from(n), slots_per_page: g.slots_per_page * n, ..g.clone() }
}

/// The array's block in plane `plane` of a group (`group` planes; 1: none) of FTL block
/// `block`, with `bpp` blocks per plane: block `k` of the group's planes.
#[inline]
fn array_block(bpp: u32, group: u32, block: u32, plane: u32) -> u32 {
    ((block / bpp) * group + plane) * bpp + block % bpp
}

/// The fewest free blocks below which GC starts. A host write takes its slot before GC runs,
/// so GC must start while a free block is left for its own stream, whatever the fraction
/// rounds to on a small pool (at 1, the host could take the last one first). Grouped blocks
/// are few and large: GC starts while a free one is left for its own stream and one for the
/// host's.
fn min_trigger(group: u32) -> u32 {
    if group > 1 {
        3
    } else {
        2
    }
}

/// The global planes of `g` in striping order `s`.
pub fn striping_order(g: &Geometry, s: Striping) -> Vec<u32> {
    let (c, dpc, p) = (g.channels, g.dies_per_channel, g.planes);
    (0..g.all_planes())
        .map(|i| {
            let (ch, dl, pl) = match s {
                Striping::ChannelFirst => (i % c, (i / c) % dpc, i / (c * dpc)),
                Striping::DieFirst => ((i / dpc) % c, i % dpc, i / (c * dpc)),
                Striping::PlaneFirst => ((i / p) % c, i / (p * c), i % p),
            };
            (dl * c + ch) * p + pl
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    Open,
    Full,
    /// A full block under collection (no longer among the victims).
    Victim,
}

/// Per-block state: 16 bytes, so a 16 TiB drive's four million blocks take 64 MiB. (An open
/// block's write pointer lives in its stream.)
#[derive(Clone, Copy, Debug)]
struct Block {
    valid: u32,
    erases: u32,
    /// Sequence number of the block's closing (its age for cost-benefit).
    closed: u32,
    state: State,
    /// The pool the block belongs to.
    pool: PoolId,
}

const _: () = assert!(std::mem::size_of::<Block>() == 16);

/// FTL counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FtlCounters {
    /// Mapping units written by the host.
    pub host_writes: u64,
    /// Mapping units moved by GC.
    pub gc_writes: u64,
    /// Blocks erased.
    pub erases: u64,
    /// Victims reclaimed.
    pub gc_victims: u64,
    /// GC activations (trigger crossings).
    pub gc_runs: u64,
    /// Mapping units trimmed.
    pub trims: u64,
    /// Victims chosen by wear levelling.
    pub wl_moves: u64,
    /// Victims reclaimed by background (idle) GC.
    pub bg_victims: u64,
}

impl FtlCounters {
    /// Write amplification: flash writes per host write.
    pub fn waf(&self) -> f64 {
        if self.host_writes == 0 {
            1.0
        } else {
            (self.host_writes + self.gc_writes) as f64 / self.host_writes as f64
        }
    }
}

impl std::ops::AddAssign for FtlCounters {
    fn add_assign(&mut self, o: Self) {
        self.host_writes += o.host_writes;
        self.gc_writes += o.gc_writes;
        self.erases += o.erases;
        self.gc_victims += o.gc_victims;
        self.gc_runs += o.gc_runs;
        self.trims += o.trims;
        self.wl_moves += o.wl_moves;
        self.bg_victims += o.bg_victims;
    }
}

/// The FTL.
pub struct Ftl {
    /// The geometry the FTL manages: the array's, or with `ftl.block_group` one plane per die
    /// (or for the drive) whose blocks and pages span the die's planes (or every plane).
    g: Geometry,
    /// The array's geometry (what [`FlashOp`]s and [`Ftl::locate`] speak of).
    pg: Geometry,
    /// Planes a block of `g` spans (1; the die's planes; every plane: `ftl.block_group`).
    group: u32,
    cfg: FtlConfig,
    l2p: L2p,
    p2l: P2l,
    blocks: Vec<Block>,
    /// The victim lists' per-block links (each block is listed by its own pool).
    links: Links,
    /// The pools, in LPN order; every block belongs to one.
    pools: Vec<Pool>,
    order: Vec<u32>,
    /// Blocks closed so far (the clock of cost-benefit's ages).
    closed_seq: u32,
    rng: Rng,
    shadow: Option<Shadow>,
    /// GC scratch: (offset, lpn) of a victim's valid units.
    moving: Vec<(u32, u64)>,
    /// The cached mapping table, when the map does not live in DRAM.
    map_cache: Option<MapCache>,
    /// Untimed ageing: GC reclaims whole victims at the trigger instead of pacing moves by
    /// host writes (no timing to interleave with, and a whole victim's map updates can be
    /// fetched together).
    bulk_gc: bool,
    /// Who pays for GC, when the drive has several tenants.
    attribution: Option<Box<Attribution>>,
    /// Free blocks moved between pools so far (a moved block lies outside its pool's span).
    moved_blocks: u64,
    /// FDP: reclaim unit handles (one per tenant; 0 = no placement), and whether GC keeps
    /// each handle's data apart.
    handles: usize,
    persistent: bool,
    /// A zoned namespace's zones (`ftl.zone_size`).
    zones: Option<Box<zones::Zones>>,
    /// FDP handles are picked by the writes' placement identifiers, not by tenant.
    by_pid: bool,
}

impl Ftl {
    /// An FTL over `nand`, every block free. Fails if the spare space cannot hold GC's margin.
    pub fn new(nand: &NandConfig, cfg: &FtlConfig, seed: u64) -> Result<Self> {
        Ftl::with_geometry(Geometry::new(nand, cfg.mapping_unit.0), cfg, seed)
    }

    /// An FTL over a geometry, every block free, in one pool. Fails as [`spare_space_issue`]
    /// says (a validated config never does).
    pub fn with_geometry(g: Geometry, cfg: &FtlConfig, seed: u64) -> Result<Self> {
        let whole = PoolSpec::from_config(g.blocks_per_plane, cfg);
        Ftl::with_pools(g, cfg, seed, &[whole])
    }

    /// An FTL over a geometry split into pools, every block free: pool `i` owns the next
    /// `specs[i].blocks_per_plane` blocks of every plane and exports the next logical units
    /// after pool `i - 1`'s. The pools must share out every block of a plane. The victim
    /// policy, striping and wear levelling come from `cfg`, the spare and GC thresholds of
    /// each pool from its spec. Fails if a pool's spare space cannot hold GC's margin.
    pub fn with_pools(g: Geometry, cfg: &FtlConfig, seed: u64, specs: &[PoolSpec]) -> Result<Self> {
        let (g, pg) = (grouped(&g, cfg.block_group), g);
        let group = pg.all_planes() / g.all_planes();
        let shared: u64 = specs.iter().map(|s| u64::from(s.blocks_per_plane)).sum();
        if specs.is_empty() || specs.len() > usize::from(PoolId::MAX) || specs.iter().any(|s| s.blocks_per_plane == 0) || shared != u64::from(g.blocks_per_plane) {
            return Err(Error::Invariant {
                component: "ftl",
                detail: format!("pools of {:?} blocks per plane do not share out the {} blocks of a plane", specs.iter().map(|s| s.blocks_per_plane).collect::<Vec<_>>(), g.blocks_per_plane),
            });
        }
        let (planes, spb) = (g.all_planes(), g.slots_per_block());
        let mut pools = Vec::with_capacity(specs.len());
        let (mut first, mut lpn) = (0u32, 0u64);
        for spec in specs {
            let sizing = Sizing::new(spec.blocks_per_plane * planes, planes, spb, spec, min_trigger(group));
            if let Some(issue) = sizing.spare_issue(spec.op_ratio) {
                return Err(Error::Config(vec![issue]));
            }
            let span = first..first + spec.blocks_per_plane;
            pools.push(Pool::new(span, planes, spb, &sizing, lpn..lpn + sizing.exported));
            first += spec.blocks_per_plane;
            lpn += sizing.exported;
        }
        let mut blocks = Vec::with_capacity(g.blocks() as usize);
        for _ in 0..planes {
            for (id, spec) in specs.iter().enumerate() {
                let free = Block { valid: 0, erases: 0, closed: 0, state: State::Free, pool: id as PoolId };
                blocks.extend(std::iter::repeat_n(free, spec.blocks_per_plane as usize));
            }
        }
        Ok(Ftl {
            l2p: L2p::new(lpn, blocks.len() as u64 * u64::from(spb)),
            p2l: P2l::new(blocks.len(), spb as usize, lpn),
            links: Links::new(blocks.len()),
            blocks,
            pools,
            order: striping_order(&g, cfg.striping),
            closed_seq: 0,
            rng: Rng::from_seed(stream_seed(seed, 0xF7F7).to_le_bytes()),
            shadow: None,
            moving: Vec::new(),
            map_cache: None,
            bulk_gc: false,
            attribution: None,
            moved_blocks: 0,
            handles: 0,
            persistent: false,
            zones: None,
            by_pid: false,
            cfg: cfg.clone(),
            g,
            pg,
            group,
        })
    }

    /// The array's geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.pg
    }

    /// The array's block in plane `plane` (of its group) of the FTL's block `block`.
    #[inline]
    fn phys_block(&self, block: u32, plane: u32) -> BlockId {
        BlockId(array_block(self.g.blocks_per_plane, self.group, block, plane))
    }

    /// The FTL's block that holds the array's block `b`.
    #[inline]
    fn ftl_block(&self, b: BlockId) -> u32 {
        if self.group == 1 {
            return b.0;
        }
        let bpp = self.g.blocks_per_plane;
        (b.0 / bpp / self.group) * bpp + b.0 % bpp
    }

    /// Erases FTL block `block`: each plane it spans.
    fn erase_planes(&self, block: u32, sink: &mut impl FnMut(FlashOp)) {
        for p in 0..self.group {
            sink(FlashOp::Erase { block: self.phys_block(block, p) });
        }
    }

    /// Logical units exported to the host (by every pool).
    pub fn exported_units(&self) -> u64 {
        self.pools.last().map_or(0, |p| p.lpns.end)
    }

    /// The counters, summed over the pools.
    pub fn counters(&self) -> FtlCounters {
        self.pools.iter().fold(FtlCounters::default(), |mut sum, p| {
            sum += p.counters;
            sum
        })
    }

    /// Restarts the counters of every pool (end of preconditioning).
    pub fn reset_counters(&mut self) {
        for p in &mut self.pools {
            p.counters = FtlCounters::default();
        }
        if let Some(a) = &mut self.attribution {
            a.reset();
        }
    }

    /// Free blocks, over every pool.
    pub fn free_blocks(&self) -> u32 {
        self.pools.iter().map(|p| p.free_count).sum::<u32>() * self.group
    }

    /// How many pools the blocks are split into (1 unless built by [`Ftl::with_pools`]).
    pub fn pool_count(&self) -> usize {
        self.pools.len()
    }

    /// The counters of pool `pool`.
    pub fn pool_counters(&self, pool: usize) -> FtlCounters {
        self.pools[pool].counters
    }

    /// Blocks of pool `pool`, over all planes.
    pub fn pool_blocks(&self, pool: usize) -> u32 {
        self.pools[pool].blocks
    }

    /// The valid fraction of the block pool `pool`'s GC would collect next (greedy: its full
    /// block with the fewest valid units; none full: 0).
    pub fn pool_victim_valid(&mut self, pool: usize) -> f64 {
        let spb = f64::from(self.g.slots_per_block());
        let pool = &mut self.pools[pool];
        if pool.victims.full().is_empty() {
            return 0.0;
        }
        let b = pool.victims.fewest_valid();
        f64::from(self.blocks[b as usize].valid) / spb
    }

    /// Free blocks pool `from` can give away: those above the level at which its GC turns
    /// synchronous (half its trigger), so that to shrink it must collect harder but never
    /// stalls; and never so many that its blocks could not hold its namespace plus the spare
    /// GC needs (its reclaim threshold and an open block per stream and plane, as the
    /// spare-space rule asks of a new pool).
    pub fn spare_free(&self, from: usize) -> u32 {
        let pool = &self.pools[from];
        let spb = u64::from(self.g.slots_per_block());
        let data = (pool.lpns.end - pool.lpns.start).div_ceil(spb);
        let spare = u64::from(pool.blocks).saturating_sub(data);
        // The reclaim threshold grows with the pool; this bounds it for the pool as it is.
        let need = spare_need(pool.reclaim, pool.streams.len(), self.g.all_planes());
        let by_size = u32::try_from(spare.saturating_sub(need)).unwrap_or(u32::MAX);
        pool.free_count.saturating_sub(pool.trigger / 2 + 1).min(by_size)
    }

    /// Moves up to `count` free blocks from pool `from` to pool `to` (dynamic
    /// over-provisioning), taking them from the planes in turn: the blocks change hands
    /// erased, the pools' GC thresholds follow their new sizes, and their exported ranges
    /// stay. Returns the blocks moved (fewer than asked if `from` cannot spare them, see
    /// [`Ftl::spare_free`]).
    pub fn move_free_blocks(&mut self, from: usize, to: usize, count: u32) -> Vec<BlockId> {
        let mut left = count.min(self.spare_free(from));
        let mut moved = Vec::new();
        if from == to {
            return moved;
        }
        let (bpp, planes) = (self.g.blocks_per_plane, self.g.all_planes() as usize);
        let mut dry = 0;
        let mut plane = 0;
        while left > 0 && dry < planes {
            if let Some(b) = self.pools[from].take_free(plane, bpp) {
                self.blocks[b as usize].pool = to as PoolId;
                let dest = &mut self.pools[to];
                dest.free[plane].push(b);
                dest.free_count += 1;
                moved.push(BlockId(b));
                left -= 1;
                dry = 0;
            } else {
                dry += 1;
            }
            plane = (plane + 1) % planes;
        }
        let k = moved.len() as u32;
        if self.group > 1 {
            // The array's blocks: every plane's of each block moved.
            moved = moved.iter().flat_map(|b| (0..self.group).map(|p| self.phys_block(b.0, p))).collect();
        }
        self.pools[from].blocks -= k;
        self.pools[to].blocks += k;
        self.moved_blocks += u64::from(k);
        for p in [from, to] {
            let pool = &mut self.pools[p];
            pool.trigger = ((f64::from(pool.blocks) * self.cfg.gc_trigger).ceil() as u32).max(min_trigger(self.group));
            pool.reclaim = ((f64::from(pool.blocks) * self.cfg.gc_reclaim).ceil() as u32).max(pool.trigger);
        }
        moved
    }

    /// The free blocks of pool `pool`.
    pub fn pool_free_blocks(&self, pool: usize) -> u32 {
        self.pools[pool].free_count
    }

    /// The logical units routed to pool `pool`.
    pub fn pool_lpns(&self, pool: usize) -> std::ops::Range<u64> {
        self.pools[pool].lpns.clone()
    }

    /// The pool a block belongs to.
    pub fn pool_of_block(&self, block: BlockId) -> usize {
        usize::from(self.blocks[self.ftl_block(block) as usize].pool)
    }

    /// The pool that holds `lpn`.
    pub fn pool_of_lpn(&self, lpn: Lpn) -> usize {
        self.pool_of(lpn.0)
    }

    #[inline]
    fn pool_of(&self, lpn: u64) -> usize {
        if self.pools.len() == 1 {
            0
        } else {
            self.pools.partition_point(|p| p.lpns.end <= lpn).min(self.pools.len() - 1)
        }
    }

    pub fn mapped_units(&self) -> u64 {
        self.l2p.mapped()
    }

    /// Bytes of heap the mapping structures hold.
    pub fn heap_bytes(&self) -> usize {
        self.l2p.heap_bytes()
            + self.p2l.heap_bytes()
            + self.blocks.len() * (std::mem::size_of::<Block>() + Links::PER_BLOCK)
            + self.pools.iter().flat_map(|p| &p.free).map(|f| f.capacity() * 4).sum::<usize>()
    }

    /// Erases of `block` so far.
    pub fn erases(&self, block: BlockId) -> u32 {
        self.blocks[self.ftl_block(block) as usize].erases
    }

    /// Erase counts: (min, max, mean) over all blocks.
    pub fn erase_spread(&self) -> (u32, u32, f64) {
        let min = self.blocks.iter().map(|b| b.erases).min().unwrap_or(0);
        let max = self.blocks.iter().map(|b| b.erases).max().unwrap_or(0);
        let mean = self.blocks.iter().map(|b| f64::from(b.erases)).sum::<f64>() / self.blocks.len().max(1) as f64;
        (min, max, mean)
    }

    /// Valid units per full block: a histogram with one bucket per count (0..=slots per block).
    pub fn valid_histogram(&self) -> Vec<u64> {
        let mut h = vec![0u64; self.g.slots_per_block() as usize + 1];
        for b in &self.blocks {
            if b.state == State::Full {
                h[b.valid as usize] += 1;
            }
        }
        h
    }

    /// The valid count below which fraction `q` of the full blocks fall (the first bucket of
    /// [`Self::valid_histogram`] whose running sum passes `q` of them; 0 when none is full).
    pub fn valid_quantile(&self, q: f64) -> u32 {
        let h = self.valid_histogram();
        let total: u64 = h.iter().sum();
        let mut sum = 0;
        h.iter()
            .position(|&x| {
                sum += x;
                sum as f64 > q * total as f64
            })
            .map_or(0, |v| v as u32)
    }

    /// Slots of `block` written so far.
    fn written_slots(&self, block: u32) -> u32 {
        let b = &self.blocks[block as usize];
        match b.state {
            State::Free => 0,
            State::Full | State::Victim => self.g.slots_per_block(),
            State::Open => {
                let plane = self.g.plane_of(BlockId(block)) as usize;
                self.pools[usize::from(b.pool)].writer(plane, block).map_or(0, |s| s.written[plane])
            }
        }
    }

    /// Pages of `block` written so far (all of them for a full block).
    pub fn written_pages(&self, block: BlockId) -> u32 {
        let (spp, written) = (self.g.slots_per_page, self.written_slots(self.ftl_block(block)));
        // A superblock's die programs its share of a page once that share is full.
        let die = (block.0 / self.pg.blocks_per_plane) % self.group / self.pg.planes;
        let die_units = self.pg.planes * self.pg.slots_per_page;
        written / spp + u32::from(written % spp >= (die + 1) * die_units)
    }

    /// Mean valid fraction of the full blocks (0 when none is full).
    pub fn full_valid_fraction(&self) -> f64 {
        let spb = f64::from(self.g.slots_per_block());
        let (n, v) = self.blocks.iter().filter(|b| b.state == State::Full).fold((0u64, 0f64), |(n, v), b| (n + 1, v + f64::from(b.valid) / spb));
        if n == 0 {
            0.0
        } else {
            v / n as f64
        }
    }

    /// Caches the map as `ftl.map_cache` says, from now on (a cache of pages starts empty, one
    /// of entries warm, see below): map
    /// lookups and updates then go through [`MapCache`], and report the translation-page
    /// reads and write-backs they cost. Preconditioning runs without it.
    pub fn enable_map_cache(&mut self) {
        if self.cfg.map_cache.0 == 0 {
            return;
        }
        let per_page = self.pg.page_size / self.cfg.map_entry.0.max(1);
        // (At most the map: a bigger cache holds all of it.)
        let entries = map_cache::capacity(&self.cfg, self.pg.page_size, self.exported_units()).max(1) as usize;
        if self.cfg.map_cache_unit == MapCacheUnit::Page {
            self.map_cache = Some(MapCache::new(entries, per_page));
            return;
        }
        // Entries, warm as MQSim's preconditioning leaves its CMT: clean entries of written
        // units spread evenly over the logical space.
        let mut cache = MapCache::of_entries(entries, per_page);
        if self.l2p.mapped() > 0 {
            let step = (self.l2p.mapped() / entries as u64).max(1);
            cache.warm((0..self.exported_units()).step_by(step as usize).filter(|&lpn| self.l2p.get(lpn) != UNMAPPED));
        }
        self.map_cache = Some(cache);
    }

    /// Map cache counters (zero without one).
    pub fn map_cache_counters(&self) -> MapCacheCounters {
        self.map_cache.as_ref().map_or_else(MapCacheCounters::default, |c| c.counters)
    }

    /// Looks `lpn`'s map entry up for a read: true if it is in DRAM, else its translation page
    /// is loaded (a [`FlashOp::MapRead`], maybe after a [`FlashOp::MapWrite`] of the page it
    /// evicts) and the read must wait for it.
    pub fn translate(&mut self, lpn: Lpn, sink: &mut impl FnMut(FlashOp)) -> bool {
        self.touch_map(lpn.0, false, false, sink)
    }

    /// The translation page that maps `lpn`, when the map is cached.
    pub fn map_page(&self, lpn: Lpn) -> Option<u64> {
        self.map_cache.as_ref().map(|c| c.tpage(lpn.0))
    }

    /// Passes a map access through the cache, if there is one (`set`: GC's move, which sets the
    /// entry and needs nothing of a cached entry's page); true unless it must wait for a load
    /// of its translation page.
    #[inline]
    fn touch_map(&mut self, lpn: u64, dirty: bool, set: bool, sink: &mut impl FnMut(FlashOp)) -> bool {
        let Some(c) = &mut self.map_cache else { return true };
        let a = c.access(lpn, dirty, set);
        if let Some(tpage) = a.writeback {
            if c.per_entry() {
                // The page's entries that are not cached come from flash first.
                sink(FlashOp::MapMerge { tpage });
            }
            sink(FlashOp::MapWrite { tpage });
        }
        if a.load {
            sink(FlashOp::MapRead { tpage: c.tpage(lpn) });
        }
        !a.load
    }

    /// The physical slot of `lpn`, if mapped.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn lookup(&self, lpn: Lpn) -> Option<u64> {
        let s = self.l2p.get(lpn.0);
        (s != UNMAPPED).then_some(s)
    }

    /// Block and page of a slot.
    #[inline]
    pub fn locate(&self, slot: u64) -> (BlockId, u32) {
        let (block, offset) = self.place_of_slot(slot);
        let (page, within) = div_rem(u64::from(offset), u64::from(self.g.slots_per_page));
        if self.group == 1 {
            return (BlockId(block), page as u32);
        }
        let plane = div_rem(within, u64::from(self.pg.slots_per_page)).0;
        (self.phys_block(block, plane as u32), page as u32)
    }

    /// The block index of a slot.
    #[inline]
    fn block_of_slot(&self, slot: u64) -> u32 {
        self.place_of_slot(slot).0
    }

    /// The block and the offset in it of a slot.
    #[inline]
    fn place_of_slot(&self, slot: u64) -> (u32, u32) {
        let (block, offset) = div_rem(slot, u64::from(self.g.slots_per_block()));
        (block as u32, offset as u32)
    }

    /// Writes `lpn` (host stream of its pool), then runs GC if the pool's free blocks fell
    /// below its trigger.
    #[inline]
    pub fn write(&mut self, lpn: Lpn, sink: &mut impl FnMut(FlashOp)) -> Result<()> {
        self.write_placed(lpn, sink).map(|_| ())
    }

    /// [`Ftl::write`], returning the slot the unit was placed in before GC ran (GC in the same
    /// call may move it on at once).
    pub fn write_placed(&mut self, lpn: Lpn, sink: &mut impl FnMut(FlashOp)) -> Result<u64> {
        self.write_placed_by(lpn, None, sink)
    }

    /// [`Ftl::write_placed`] for a write naming FDP placement identifier `pid` (an index into
    /// the handles of [`Ftl::enable_handles`]; none or out of range: handle 0).
    pub fn write_placed_by(&mut self, lpn: Lpn, pid: Option<u16>, sink: &mut impl FnMut(FlashOp)) -> Result<u64> {
        let lpn = lpn.0;
        if self.short_ways() {
            if let Some(slot) = self.write_short(lpn, sink) {
                if self.pools[0].gc_due() {
                    self.collect_if_needed(0, sink)?;
                }
                return Ok(slot);
            }
        }
        let p = self.pool_of(lpn);
        self.pools[p].counters.host_writes += 1;
        if let Some(a) = &mut self.attribution {
            let t = a.owner(lpn);
            a.payer = t;
            a.host[t] += 1;
        }
        self.touch_map(lpn, true, false, sink);
        let version = self.shadow.as_mut().map(|s| {
            s.next += 1;
            s.version.insert(lpn, s.next);
            s.next
        });
        let stream = match pid.map(usize::from) {
            Some(h) if self.by_pid && h > 0 && h < self.handles => 1 + h,
            _ if self.zones.is_some() => self.zone_stream(lpn)?,
            _ => self.host_stream(lpn),
        };
        let slot = self.allocate(p, stream, sink)?;
        self.zone_written(lpn);
        let old = self.l2p.set(lpn, slot.at);
        if old != UNMAPPED {
            self.invalidate(old);
        }
        self.record(lpn, slot, version);
        self.collect_if_needed(p, sink)?;
        Ok(slot.at)
    }

    /// A host trim of `lpn`: its map entry is looked up and, if mapped, cleared (through the
    /// map cache, if there is one), and the unit is unmapped.
    pub fn deallocate(&mut self, lpn: Lpn, sink: &mut impl FnMut(FlashOp)) {
        let mapped = self.lookup(lpn).is_some();
        self.touch_map(lpn.0, mapped, false, sink);
        self.trim(lpn);
    }

    /// Unmaps `lpn`.
    pub fn trim(&mut self, lpn: Lpn) {
        let lpn = lpn.0;
        let old = self.l2p.set(lpn, UNMAPPED);
        if old != UNMAPPED {
            let p = self.pool_of(lpn);
            self.pools[p].counters.trims += 1;
            self.invalidate(old);
        }
        if let Some(s) = &mut self.shadow {
            s.version.remove(&lpn);
        }
    }

    fn invalidate(&mut self, slot: u64) {
        let (block, offset) = self.place_of_slot(slot);
        self.p2l.set(block, offset, UNMAPPED);
        if let Some(s) = &mut self.shadow {
            s.slot_version.remove(&slot);
        }
        self.count_valid(block, false);
    }

    /// Counts one valid unit more (`up`) or less in `block`, keeping a full block in the
    /// bucket of its count.
    #[inline]
    fn count_valid(&mut self, block: u32, up: bool) {
        let b = &mut self.blocks[block as usize];
        let old = b.valid;
        b.valid = if up { old + 1 } else { old - 1 };
        if b.state == State::Full {
            let (new, p) = (b.valid, usize::from(b.pool));
            self.pools[p].victims.rebucket(&mut self.links, block, old, new);
        }
    }

    /// Notes that `slot` now holds `lpn`.
    // Left to its own judgement the compiler calls this out of line from `write`, which costs
    // aging about 8 % more instructions.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn record(&mut self, lpn: u64, slot: Slot, version: Option<u64>) {
        self.p2l.set(slot.block, slot.offset, lpn);
        // The slot that fills a block closes it (and buckets it) before it is counted here.
        self.count_valid(slot.block, true);
        if let (Some(s), Some(v)) = (&mut self.shadow, version) {
            s.slot_version.insert(slot.at, v);
        }
    }

    /// The slot `lpn` maps to, if it is mapped.
    fn l2p_slot(&self, lpn: u64) -> Option<u64> {
        let slot = self.l2p.get(lpn);
        (slot != UNMAPPED).then_some(slot)
    }
}

/// Random overwrites prepared together while aging.
const BATCH: usize = 64;

/// Logical units exported for a geometry and spare fraction.
pub fn exported_units(g: &Geometry, op_ratio: f64) -> u64 {
    pool::units_of(g.raw_slots(), op_ratio)
}

/// The spare-space rule of a config over a geometry (one pool of every block): the issue to
/// report on `ftl.op_ratio` when the spare blocks cannot hold GC's margin (the `ftl.gc_reclaim`
/// reserve plus an open block per plane per stream). [`crate::Config::validate`] reports it
/// with every other problem; [`Ftl::new`] refuses such a config.
pub fn spare_space_issue(g: &Geometry, cfg: &FtlConfig) -> Option<ConfigIssue> {
    let managed = grouped(g, cfg.block_group);
    let group = g.all_planes() / managed.all_planes().max(1);
    let whole = PoolSpec::from_config(managed.blocks_per_plane, cfg);
    Sizing::new(managed.blocks(), managed.all_planes(), managed.slots_per_block(), &whole, min_trigger(group)).spare_issue(cfg.op_ratio)
}

/// The spare-space rule of one pool of a split drive (see [`spare_space_issue`]).
pub fn pool_spare_issue(g: &Geometry, spec: &PoolSpec) -> Option<ConfigIssue> {
    Sizing::new(spec.blocks_per_plane * g.all_planes(), g.all_planes(), g.slots_per_block(), spec, 1).spare_issue(spec.op_ratio)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bytes;

    fn small(planes: u32, blocks: u32, pages: u32, page: u64) -> NandConfig {
        NandConfig { channels: 2, ways: 2, dies_per_chip: 1, planes, blocks_per_plane: blocks, pages_per_block: pages, page_size: Bytes(page), ..NandConfig::default() }
    }

    #[test]
    fn striping_orders_visit_every_plane_once() {
        let g = Geometry::new(&NandConfig { channels: 2, ways: 3, dies_per_chip: 1, planes: 2, ..NandConfig::default() }, 4096);
        for s in [Striping::ChannelFirst, Striping::DieFirst, Striping::PlaneFirst] {
            let mut o = striping_order(&g, s);
            o.sort_unstable();
            assert_eq!(o, (0..12).collect::<Vec<_>>(), "{s}");
        }
        let ch = |gp: u32| g.channel_of_die(crate::ids::DieId(gp / 2));
        let o = striping_order(&g, Striping::ChannelFirst);
        assert_eq!((ch(o[0]), ch(o[1])), (0, 1), "channel-first alternates channels");
        let o = striping_order(&g, Striping::PlaneFirst);
        assert_eq!((o[0] / 2, o[1] / 2), (0, 0), "plane-first stays on a die");
        let o = striping_order(&g, Striping::DieFirst);
        assert_eq!((ch(o[0]), ch(o[1]), o[0] / 2 != o[1] / 2), (0, 0, true), "die-first stays on a channel");
    }

    #[test]
    fn pages_are_programmed_when_full_and_units_pack_into_pages() {
        let nand = small(1, 64, 8, 16384);
        let mut f = Ftl::new(&nand, &FtlConfig::default(), 1).unwrap();
        let mut ops = Vec::new();
        for lpn in (0..8).map(Lpn) {
            f.write(lpn, &mut |op| ops.push(op)).unwrap();
        }
        // 4 units per 16 KiB page: two programs, on two different planes (channel-first).
        assert_eq!(ops.len(), 2);
        let blocks: Vec<BlockId> = ops.iter().map(|o| if let FlashOp::Program { block, .. } = o { *block } else { BlockId(NIL) }).collect();
        assert_ne!(f.geometry().plane_of(blocks[0]), f.geometry().plane_of(blocks[1]));
        f.verify().unwrap();
    }

    #[test]
    fn integrity_checks_find_lost_stale_and_duplicated_units() {
        let nand = small(1, 64, 8, 16384);
        let mut f = Ftl::new(&nand, &FtlConfig::default(), 1).unwrap();
        f.enable_integrity();
        for lpn in 0..64 {
            f.write(Lpn(lpn), &mut |_| {}).unwrap();
        }
        f.trim(Lpn(5));
        for lpn in 0..64 {
            f.check_read(Lpn(lpn));
        }
        assert_eq!(f.integrity_counts(), Some(IntegrityCounts { checked: 64, ..IntegrityCounts::default() }), "a sound map");
        // Break the map as a bug would: drop a mapping, bring a trimmed unit back, point two
        // units at one slot, and point a unit at an older copy.
        let s2 = f.l2p.get(2);
        f.l2p.set(1, UNMAPPED);
        f.l2p.set(5, s2);
        f.l2p.set(3, s2);
        f.write(Lpn(4), &mut |_| {}).unwrap();
        let old = f.shadow.as_ref().map(|s| s.next).unwrap();
        f.shadow.as_mut().unwrap().version.insert(4, old + 1);
        for lpn in [1, 5, 3, 4] {
            f.check_read(Lpn(lpn));
        }
        let c = f.integrity_counts().unwrap();
        assert_eq!((c.lost, c.stale, c.duplicated), (1, 2, 1), "{c:?}");
        assert!(f.verify().is_err());
    }

    #[test]
    fn a_blocks_valid_units_in_one_pass_are_what_slot_by_slot_reads_find() {
        // Blocks the fill laid out (answered by the layout and its valid bits), blocks written
        // since (chunks), partly invalidated ones and erased ones.
        let nand = small(2, 64, 8, 16384);
        let mut f = Ftl::new(&nand, &FtlConfig::default(), 1).unwrap();
        f.fill_sequential().unwrap();
        let units = f.exported_units();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..units / 8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            f.write(Lpn(x % units), &mut |_| {}).unwrap();
        }
        let spb = f.g.slots_per_block();
        let mut got = Vec::new();
        for b in 0..f.blocks.len() as u32 {
            got.clear();
            f.p2l.valid_into(b, spb, &mut got);
            let want: Vec<(u32, u64)> = (0..spb).map(|o| (o, f.p2l.get(b, o))).filter(|&(_, u)| u != UNMAPPED).collect();
            assert_eq!(got, want, "block {b}");
        }
    }

    #[test]
    fn too_little_spare_space_is_a_config_error() {
        let nand = small(1, 16, 8, 4096);
        let err = Ftl::new(&nand, &FtlConfig { op_ratio: 0.01, ..FtlConfig::default() }, 1).err().unwrap();
        assert!(err.to_string().contains("spare blocks"), "{err}");
    }
}
