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
//! The FTL is timing-free: each call reports the flash operations it implies (page programs, GC
//! page reads, erases) to a sink, and the NAND timing model turns them into die and channel
//! work. Preconditioning runs the same code with a sink that ignores them.
//!
//! With `ftl.map_cache` set, map lookups and updates go through a cache of translation pages
//! (`map_cache.rs`), and report the flash reads and writes its misses cost.
//!
//! Leaves out: block-level or hybrid mapping, read disturb and retention, bad blocks; for
//! pools, pools over a subset of planes, routing other than by LPN range, moving blocks that
//! hold data, and replica aging of more than one pool (several pools age by simulation); for
//! FDP, several reclaim groups, reclaim units other than a stream's open block in every plane,
//! placement identifiers chosen per write (a tenant's writes all name its handle), and FDP
//! events and statistics log pages.

mod config;
mod device;
pub mod map;
pub mod map_cache;
pub mod ops;
mod pool;
mod read_ahead;
mod zones;

use std::collections::HashMap;

use rand::{RngExt, SeedableRng};

pub use config::{Aging, FtlConfig, OpsSplit, Placement, PoolMode, Precondition, RuhType, Striping, Victim, SPARE_RULE_KEYS};
pub use device::{Event, FlashDevice, FlashSummary, IntegrityReport, PreconditionReport, Tenancy};
use map::{L2p, Layout, P2l, Segment, UNMAPPED};
use map_cache::{MapCache, MapCacheCounters};
pub use pool::{apportion, spare_need, PoolSpec};
use pool::{Collecting, Links, Pool, PoolId, Sizing, GC, HOST, NIL};

use crate::error::{ConfigIssue, Error, Result};
use crate::ids::{BlockId, Lpn};
use crate::media::nand::{FlashOp, Geometry};
use crate::media::NandConfig;
use crate::sim::{stream_seed, Rng};

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

/// The shadow map of integrity mode: the version of every written unit, and the version each
/// physical slot holds; and what the checks of host reads found.
struct Shadow {
    version: HashMap<u64, u64>,
    slot_version: HashMap<u64, u64>,
    next: u64,
    found: IntegrityCounts,
}

/// What integrity mode's checks of host reads found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IntegrityCounts {
    /// Mapping units read and checked against the shadow map.
    pub checked: u64,
    /// Units written (and not trimmed since) that the map no longer finds.
    pub lost: u64,
    /// Units that map to a slot holding another version than their last write (an older
    /// one, or data of a unit trimmed or never written).
    pub stale: u64,
    /// Units whose slot holds another unit (two units claim one slot).
    pub duplicated: u64,
}

/// The FTL.
pub struct Ftl {
    g: Geometry,
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

/// GC attribution among tenants: every unit GC moves is counted by the tenant whose write
/// earned the move (or idle time, for background GC) and by the tenant that owns the unit.
/// Tenants own contiguous LPN ranges, so a unit's owner follows from its LPN.
#[derive(Clone, Debug)]
pub struct Attribution {
    /// First LPN of every tenant's range, ascending.
    starts: Vec<u64>,
    /// Host units written, per tenant.
    pub host: Vec<u64>,
    /// Units moved, `moved[payer * tenants + owner]`; the payer row `tenants` is background GC.
    pub moved: Vec<u64>,
    /// The tenant paying for the GC work under way.
    payer: usize,
}

impl Attribution {
    fn new(starts: Vec<u64>) -> Self {
        let n = starts.len();
        Attribution { starts, host: vec![0; n], moved: vec![0; (n + 1) * n], payer: 0 }
    }

    /// Tenants.
    pub fn tenants(&self) -> usize {
        self.starts.len()
    }

    #[inline]
    fn owner(&self, lpn: u64) -> usize {
        self.starts.partition_point(|&s| s <= lpn).saturating_sub(1)
    }

    /// Units that GC moved on behalf of `payer` (a tenant, or `tenants()` for background GC)
    /// and that belong to `owner`.
    pub fn moved_by(&self, payer: usize, owner: usize) -> u64 {
        self.moved[payer * self.tenants() + owner]
    }

    fn reset(&mut self) {
        self.host.iter_mut().for_each(|x| *x = 0);
        self.moved.iter_mut().for_each(|x| *x = 0);
    }
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
            let sizing = Sizing::new(spec.blocks_per_plane * planes, planes, spb, spec);
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
            l2p: L2p::new(lpn),
            p2l: P2l::new(blocks.len(), spb as usize),
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
        })
    }

    /// Turns on the shadow map (integrity mode). Call before any write (preconditioning
    /// records what it places).
    pub fn enable_integrity(&mut self) {
        self.shadow = Some(Shadow { version: HashMap::new(), slot_version: HashMap::new(), next: 1, found: IntegrityCounts::default() });
    }

    /// Integrity mode: checks that a host read of `lpn` finds its last written version (and
    /// nothing, if it was trimmed or never written).
    pub fn check_read(&mut self, lpn: Lpn) {
        let slot = self.lookup(lpn);
        let holder = slot.map(|s| self.p2l.get(self.block_of_slot(s), (s % u64::from(self.g.slots_per_block())) as u32));
        let Some(sh) = &mut self.shadow else { return };
        sh.found.checked += 1;
        match (sh.version.get(&lpn.0), slot) {
            (None, None) => {}
            (Some(_), None) => sh.found.lost += 1,
            (None, Some(_)) => sh.found.stale += 1,
            (Some(want), Some(s)) => {
                if holder != Some(lpn.0) {
                    sh.found.duplicated += 1;
                } else if sh.slot_version.get(&s) != Some(want) {
                    sh.found.stale += 1;
                }
            }
        }
    }

    /// Integrity mode: what the checks of host reads found (`None` when it is off).
    pub fn integrity_counts(&self) -> Option<IntegrityCounts> {
        self.shadow.as_ref().map(|s| s.found)
    }

    pub fn geometry(&self) -> &Geometry {
        &self.g
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

    /// Attributes GC among tenants whose LPN ranges start at `starts` (ascending, the first
    /// at 0); each tenant's range ends where the next begins.
    pub fn set_tenants(&mut self, starts: Vec<u64>) {
        self.attribution = (starts.len() > 1).then(|| Box::new(Attribution::new(starts)));
    }

    /// FDP: each tenant (set by [`Ftl::set_tenants`]) writes through its own reclaim unit
    /// handle, a host stream of its own; `persistent` handles also get a GC stream each. Call
    /// before any write.
    pub fn enable_placement(&mut self, persistent: bool) {
        let n = self.attribution.as_ref().map_or(0, |a| a.tenants());
        if n < 2 {
            return;
        }
        self.handles = n;
        self.persistent = persistent;
        for pool in &mut self.pools {
            pool.add_streams(n - 1 + if persistent { n } else { 0 });
        }
    }

    /// FDP with `n` reclaim unit handles that host writes pick by placement identifier
    /// ([`Ftl::write_placed_by`]), each a host stream of its own, initially isolated (GC moves
    /// every handle's data into one GC stream). Call before any write.
    pub fn enable_handles(&mut self, n: usize) {
        if n < 2 {
            return;
        }
        self.handles = n;
        self.by_pid = true;
        for pool in &mut self.pools {
            pool.add_streams(n - 1);
        }
    }

    /// FDP reclaim unit handles (0 without placement).
    pub fn placement_handles(&self) -> usize {
        self.handles
    }

    /// The host stream of the tenant owning `lpn` (FDP), else the host stream.
    #[inline]
    fn host_stream(&self, lpn: u64) -> usize {
        if self.by_pid {
            return HOST;
        }
        match (&self.attribution, self.handles) {
            (Some(a), h) if h > 1 => match a.owner(lpn) {
                0 => HOST,
                t => 1 + t,
            },
            _ => HOST,
        }
    }

    /// The GC stream for moving `lpn`: its handle's with persistently isolated FDP.
    #[inline]
    fn gc_stream(&self, lpn: u64) -> usize {
        match &self.attribution {
            Some(a) if self.persistent && self.handles > 1 => self.handles + 1 + a.owner(lpn),
            _ => GC,
        }
    }

    /// Whether `stream` holds data moved by GC.
    #[inline]
    fn is_gc_stream(&self, stream: usize) -> bool {
        stream == GC || (self.handles > 1 && stream > self.handles)
    }

    /// Full or open blocks holding valid units, and those of them holding units of more than
    /// one tenant (0 without tenants).
    pub fn mixed_blocks(&self) -> (u64, u64) {
        let Some(a) = &self.attribution else { return (0, 0) };
        let spb = self.g.slots_per_block();
        let (mut with_data, mut mixed) = (0, 0);
        for (i, b) in self.blocks.iter().enumerate() {
            if b.valid == 0 {
                continue;
            }
            with_data += 1;
            let mut owner = None;
            for offset in 0..spb {
                let lpn = self.p2l.get(i as u32, offset);
                if lpn == UNMAPPED {
                    continue;
                }
                let t = a.owner(lpn);
                if owner.is_some_and(|o| o != t) {
                    mixed += 1;
                    break;
                }
                owner = Some(t);
            }
        }
        (with_data, mixed)
    }

    /// GC attribution among tenants, if set.
    pub fn attribution(&self) -> Option<&Attribution> {
        self.attribution.as_deref()
    }

    /// Free blocks, over every pool.
    pub fn free_blocks(&self) -> u32 {
        self.pools.iter().map(|p| p.free_count).sum()
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
        self.pools[from].blocks -= k;
        self.pools[to].blocks += k;
        self.moved_blocks += u64::from(k);
        for p in [from, to] {
            let pool = &mut self.pools[p];
            pool.trigger = ((f64::from(pool.blocks) * self.cfg.gc_trigger).ceil() as u32).max(1);
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
        usize::from(self.blocks[block.index()].pool)
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
        self.blocks[block.index()].erases
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
        self.written_slots(block.0) / self.g.slots_per_page
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

    /// Caches the map as `ftl.map_cache` says, from now on (the cache starts empty): map
    /// lookups and updates then go through [`MapCache`], and report the translation-page
    /// reads and write-backs they cost. Preconditioning runs without it.
    pub fn enable_map_cache(&mut self) {
        if self.cfg.map_cache.0 > 0 {
            let pages = (self.cfg.map_cache.0 / self.g.page_size.max(1)) as usize;
            self.map_cache = Some(MapCache::new(pages, self.g.page_size / self.cfg.map_entry.0.max(1)));
        }
    }

    /// Map cache counters (zero without one).
    pub fn map_cache_counters(&self) -> MapCacheCounters {
        self.map_cache.as_ref().map_or_else(MapCacheCounters::default, |c| c.counters)
    }

    /// Looks `lpn`'s map entry up for a read: true if it is in DRAM, else its translation page
    /// is loaded (a [`FlashOp::MapRead`], maybe after a [`FlashOp::MapWrite`] of the page it
    /// evicts) and the read must wait for it.
    pub fn translate(&mut self, lpn: Lpn, sink: &mut impl FnMut(FlashOp)) -> bool {
        self.touch_map(lpn.0, false, sink)
    }

    /// The translation page that maps `lpn`, when the map is cached.
    pub fn map_page(&self, lpn: Lpn) -> Option<u64> {
        self.map_cache.as_ref().map(|c| c.tpage(lpn.0))
    }

    /// Passes a map access through the cache, if there is one; true on a hit.
    #[inline]
    fn touch_map(&mut self, lpn: u64, dirty: bool, sink: &mut impl FnMut(FlashOp)) -> bool {
        let Some(c) = &mut self.map_cache else { return true };
        let a = c.access(lpn, dirty);
        if let Some(tpage) = a.writeback {
            sink(FlashOp::MapWrite { tpage });
        }
        if !a.hit {
            sink(FlashOp::MapRead { tpage: c.tpage(lpn) });
        }
        a.hit
    }

    /// The physical slot of `lpn`, if mapped.
    #[inline]
    pub fn lookup(&self, lpn: Lpn) -> Option<u64> {
        let s = self.l2p.get(lpn.0);
        (s != UNMAPPED).then_some(s)
    }

    /// Block and page of a slot.
    #[inline]
    pub fn locate(&self, slot: u64) -> (BlockId, u32) {
        let spb = u64::from(self.g.slots_per_block());
        (BlockId(self.block_of_slot(slot)), ((slot % spb) / u64::from(self.g.slots_per_page)) as u32)
    }

    /// The block index of a slot.
    #[inline]
    fn block_of_slot(&self, slot: u64) -> u32 {
        (slot / u64::from(self.g.slots_per_block())) as u32
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
        let p = self.pool_of(lpn);
        self.pools[p].counters.host_writes += 1;
        if let Some(a) = &mut self.attribution {
            let t = a.owner(lpn);
            a.payer = t;
            a.host[t] += 1;
        }
        self.touch_map(lpn, true, sink);
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
        let old = self.l2p.set(lpn, slot);
        if old != UNMAPPED {
            self.invalidate(old);
        }
        self.record(lpn, slot, version);
        self.collect_if_needed(p, sink)?;
        Ok(slot)
    }

    /// A host trim of `lpn`: its map entry is looked up and, if mapped, cleared (through the
    /// map cache, if there is one), and the unit is unmapped.
    pub fn deallocate(&mut self, lpn: Lpn, sink: &mut impl FnMut(FlashOp)) {
        let mapped = self.lookup(lpn).is_some();
        self.touch_map(lpn.0, mapped, sink);
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
        let block = self.block_of_slot(slot);
        let offset = (slot % u64::from(self.g.slots_per_block())) as u32;
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
    fn record(&mut self, lpn: u64, slot: u64, version: Option<u64>) {
        let block = self.block_of_slot(slot);
        let offset = (slot % u64::from(self.g.slots_per_block())) as u32;
        self.p2l.set(block, offset, lpn);
        // The slot that fills a block closes it (and buckets it) before it is counted here.
        self.count_valid(block, true);
        if let (Some(s), Some(v)) = (&mut self.shadow, version) {
            s.slot_version.insert(slot, v);
        }
    }

    /// The next free slot of `stream` of pool `p`; reports a program when a page fills.
    fn allocate(&mut self, p: usize, stream: usize, sink: &mut impl FnMut(FlashOp)) -> Result<u64> {
        let spp = self.g.slots_per_page;
        let spb = self.g.slots_per_block();
        let bpp = self.g.blocks_per_plane;
        let planes = self.order.len();
        let is_gc = self.is_gc_stream(stream);
        let pool = &mut self.pools[p];
        for _ in 0..=planes {
            let plane = self.order[pool.streams[stream].cursor] as usize;
            let mut block = pool.streams[stream].active[plane];
            if block == NIL {
                if let Some(b) = pool.take_free(plane, bpp) {
                    self.blocks[b as usize].state = State::Open;
                    self.p2l.open(b);
                    pool.streams[stream].active[plane] = b;
                    pool.streams[stream].written[plane] = 0;
                    block = b;
                } else {
                    // This plane has no free block: try the next one in order.
                    pool.streams[stream].cursor = (pool.streams[stream].cursor + 1) % planes;
                    continue;
                }
            }
            let s = &mut pool.streams[stream];
            let offset = s.written[plane];
            let written = offset + 1;
            s.written[plane] = written;
            if written.is_multiple_of(spp) {
                sink(FlashOp::Program { block: BlockId(block), page: offset / spp, gc: is_gc });
                s.cursor = (s.cursor + 1) % planes;
            }
            if written == spb {
                s.active[plane] = NIL;
                self.close(block);
            }
            return Ok(u64::from(block) * u64::from(spb) + u64::from(offset));
        }
        Err(Error::Invariant { component: "ftl", detail: "no free block in any plane: GC could not keep up".into() })
    }

    /// Marks an open block full and lists it with its pool's victims.
    fn close(&mut self, block: u32) {
        self.closed_seq = self.closed_seq.wrapping_add(1);
        let b = &mut self.blocks[block as usize];
        b.state = State::Full;
        b.closed = self.closed_seq;
        let (valid, p) = (b.valid, usize::from(b.pool));
        self.pools[p].victims.list(&mut self.links, block, valid);
    }

    fn pick_victim(&mut self, p: usize) -> Option<u32> {
        let pool = &mut self.pools[p];
        let full = pool.victims.full();
        if full.is_empty() {
            return None;
        }
        if self.cfg.wl_threshold > 0 {
            pool.wl_check += 1;
            if pool.wl_check >= 8 {
                pool.wl_check = 0;
                let coldest = pool.victims.full().iter().copied().min_by_key(|&b| (self.blocks[b as usize].erases, b))?;
                if pool.max_erases - self.blocks[coldest as usize].erases > self.cfg.wl_threshold {
                    pool.counters.wl_moves += 1;
                    return Some(coldest);
                }
            }
        }
        let full = pool.victims.full();
        Some(match self.cfg.gc_policy {
            Victim::Greedy => pool.victims.fewest_valid(),
            Victim::Random => full[self.rng.random_range(0..full.len())],
            Victim::CostBenefit => {
                let spb = f64::from(self.g.slots_per_block());
                let mut best = (f64::NEG_INFINITY, 0u32);
                for _ in 0..self.cfg.gc_window {
                    let b = full[self.rng.random_range(0..full.len())];
                    let blk = &self.blocks[b as usize];
                    let u = f64::from(blk.valid) / spb;
                    let age = f64::from(self.closed_seq.wrapping_sub(blk.closed)) + 1.0;
                    let score = if u == 0.0 { f64::INFINITY } else { (1.0 - u) * age / (2.0 * u) };
                    if score > best.0 {
                        best = (score, b);
                    }
                }
                best.1
            }
        })
    }

    /// Foreground GC, paced by host writes. Once free blocks fall below the trigger, GC
    /// collects victims unit by unit: each host write earns the moves that keep free blocks
    /// level while the current victim is collected (valid / (slots - valid) of it), scaled by
    /// how far free blocks are from the middle of the trigger-reclaim band (1.5x at the
    /// trigger, 1x in the middle, 0.5x at the reclaim threshold, nothing half a band above
    /// it: a proportional controller), so that under steady writes free blocks settle in the
    /// band and GC runs at the rate writes need, not in cycles of catching up and resting. GC
    /// rests once free blocks are half a band above the reclaim threshold (after TRIMs or
    /// idle-time GC), and starts again below the trigger. Erasing a collected victim costs
    /// no credit. Only when free blocks fall to half the trigger does GC collect without
    /// waiting for credit. So GC work reaches the dies spread over host writes, as real FTLs
    /// interleave it, rather than in bursts of whole victims.
    fn collect_if_needed(&mut self, p: usize, sink: &mut impl FnMut(FlashOp)) -> Result<()> {
        if self.bulk_gc {
            if self.pools[p].free_count < self.pools[p].trigger {
                self.pools[p].counters.gc_runs += 1;
                while self.pools[p].free_count < self.pools[p].reclaim {
                    let Some(victim) = self.pick_victim(p) else { break };
                    self.reclaim_block(victim, sink)?;
                }
            }
            return Ok(());
        }
        let pool = &mut self.pools[p];
        if !pool.gc_active {
            if pool.free_count >= pool.trigger {
                return Ok(());
            }
            pool.gc_active = true;
            pool.counters.gc_runs += 1;
        }
        let floor = (pool.trigger / 2).max(1);
        let band = f64::from(pool.reclaim.saturating_sub(pool.trigger).max(1));
        let level = (f64::from(pool.free_count) - f64::from(pool.trigger)) / band;
        let boost = (1.5 - level).clamp(0.0, 2.0);
        pool.credit += pool.collecting.map_or(1.0, |c| c.pace) * boost;
        loop {
            let pool = &mut self.pools[p];
            if pool.collecting.is_none() {
                if pool.free_count >= pool.rest_level() {
                    pool.gc_active = false;
                    pool.credit = 0.0;
                    return Ok(());
                }
                if !self.start_victim(p) {
                    return Ok(());
                }
                continue;
            }
            // A victim with nothing valid left is erased at once: erasing costs no credit.
            if let Some(c) = pool.collecting {
                if self.blocks[c.block as usize].valid == 0 {
                    self.pools[p].collecting = None;
                    self.erase_victim(c.block, p, sink);
                    continue;
                }
            }
            let pool = &mut self.pools[p];
            if pool.free_count > floor && pool.credit < 1.0 {
                return Ok(());
            }
            if self.move_one(p, sink)? {
                self.pools[p].credit -= 1.0;
            }
        }
    }

    /// Picks the pool's next victim and starts collecting it; false if there is none.
    fn start_victim(&mut self, p: usize) -> bool {
        let Some(victim) = self.pick_victim(p) else { return false };
        let valid = self.blocks[victim as usize].valid;
        self.pools[p].victims.unlist(&mut self.links, victim, valid);
        self.blocks[victim as usize].state = State::Victim;
        self.pools[p].counters.gc_victims += 1;
        let spb = self.g.slots_per_block();
        // Touch the map entries of the victim's valid units now: independent loads whose cache
        // misses overlap, where the moves one by one would take them in turn.
        let touched = (0..spb).fold(0u64, |a, offset| {
            let lpn = self.p2l.get(victim, offset);
            if lpn == UNMAPPED {
                a
            } else {
                a ^ self.l2p.get(lpn)
            }
        });
        std::hint::black_box(touched);
        let pace = f64::from(valid) / f64::from(spb.saturating_sub(valid).max(1));
        self.pools[p].collecting = Some(Collecting { block: victim, next: 0, page_read: NIL, pace });
        true
    }

    /// Moves the next valid unit of the victim under collection; erases the victim when none
    /// is left. Returns whether it moved a unit.
    fn move_one(&mut self, p: usize, sink: &mut impl FnMut(FlashOp)) -> Result<bool> {
        let Some(mut c) = self.pools[p].collecting else { return Ok(false) };
        let spb = self.g.slots_per_block();
        let victim = c.block;
        while c.next < spb && self.p2l.get(victim, c.next) == UNMAPPED {
            c.next += 1;
        }
        if c.next == spb {
            self.pools[p].collecting = None;
            self.erase_victim(victim, p, sink);
            return Ok(false);
        }
        let offset = c.next;
        let lpn = self.p2l.get(victim, offset);
        let page = offset / self.g.slots_per_page;
        if page != c.page_read {
            sink(FlashOp::Read { block: BlockId(victim), page });
            c.page_read = page;
        }
        c.next += 1;
        self.pools[p].collecting = Some(c);
        self.relocate(victim, offset, lpn, p, sink)?;
        Ok(true)
    }

    /// Moves unit `lpn` from slot `offset` of `victim` (no longer listed) to its pool's GC
    /// stream.
    #[inline]
    fn relocate(&mut self, victim: u32, offset: u32, lpn: u64, p: usize, sink: &mut impl FnMut(FlashOp)) -> Result<()> {
        let old_slot = u64::from(victim) * u64::from(self.g.slots_per_block()) + u64::from(offset);
        let version = self.shadow.as_mut().and_then(|s| s.slot_version.remove(&old_slot));
        // The victim is no longer listed, so invalidating its copy needs no bucket moves.
        self.p2l.set(victim, offset, UNMAPPED);
        self.blocks[victim as usize].valid -= 1;
        let stream = self.gc_stream(lpn);
        let slot = self.allocate(p, stream, sink)?;
        self.l2p.set(lpn, slot);
        self.record(lpn, slot, version);
        self.touch_map(lpn, true, sink);
        self.pools[p].counters.gc_writes += 1;
        if let Some(a) = &mut self.attribution {
            let (n, owner) = (a.tenants(), a.owner(lpn));
            a.moved[a.payer * n + owner] += 1;
        }
        Ok(())
    }

    /// Background GC: reclaims one victim in the first pool (in order) that has fewer than
    /// `target` of its blocks free. Returns whether it did (and so whether more may be wanted).
    pub fn collect_background(&mut self, target: f64, sink: &mut impl FnMut(FlashOp)) -> Result<bool> {
        if let Some(a) = &mut self.attribution {
            a.payer = a.tenants();
        }
        for p in 0..self.pools.len() {
            let want = (f64::from(self.pools[p].blocks) * target).ceil() as u32;
            if self.pools[p].free_count >= want {
                continue;
            }
            let Some(victim) = self.pick_victim(p) else { continue };
            // Reclaiming a nearly full block frees almost nothing: leave it to foreground GC.
            if self.blocks[victim as usize].valid >= self.g.slots_per_block() - self.g.slots_per_page {
                continue;
            }
            self.pools[p].counters.bg_victims += 1;
            self.reclaim_block(victim, sink)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Moves the valid units of `victim` to its pool's GC stream and erases it.
    fn reclaim_block(&mut self, victim: u32, sink: &mut impl FnMut(FlashOp)) -> Result<()> {
        let (valid, p) = (self.blocks[victim as usize].valid, usize::from(self.blocks[victim as usize].pool));
        self.pools[p].victims.unlist(&mut self.links, victim, valid);
        self.pools[p].counters.gc_victims += 1;
        let spb = self.g.slots_per_block();
        let spp = self.g.slots_per_page;
        let mut moving = std::mem::take(&mut self.moving);
        moving.clear();
        moving.extend((0..spb).filter_map(|offset| {
            let lpn = self.p2l.get(victim, offset);
            (lpn != UNMAPPED).then_some((offset, lpn))
        }));
        // Touch every map entry to be rewritten before rewriting any: the loads are independent,
        // so their cache misses overlap instead of queueing one by one.
        std::hint::black_box(moving.iter().fold(0u64, |a, &(_, lpn)| a ^ self.l2p.get(lpn)));
        let mut page_read = NIL;
        for &(offset, lpn) in &moving {
            let page = offset / spp;
            if page != page_read {
                sink(FlashOp::Read { block: BlockId(victim), page });
                page_read = page;
            }
            self.relocate(victim, offset, lpn, p, sink)?;
        }
        self.moving = moving;
        self.erase_victim(victim, p, sink);
        Ok(())
    }

    /// Erases `block` now if it is full and holds nothing valid (a zone reset's blocks); a
    /// block that GC is collecting is left to GC.
    fn erase_if_empty(&mut self, block: u32, sink: &mut impl FnMut(FlashOp)) {
        let b = &self.blocks[block as usize];
        if b.state != State::Full || b.valid != 0 {
            return;
        }
        let p = usize::from(b.pool);
        self.pools[p].victims.unlist(&mut self.links, block, 0);
        self.erase_victim(block, p, sink);
    }

    /// The slot `lpn` maps to, if it is mapped.
    fn l2p_slot(&self, lpn: u64) -> Option<u64> {
        let slot = self.l2p.get(lpn);
        (slot != UNMAPPED).then_some(slot)
    }

    /// Erases a victim with nothing valid left: a free block of its pool again.
    fn erase_victim(&mut self, victim: u32, p: usize, sink: &mut impl FnMut(FlashOp)) {
        sink(FlashOp::Erase { block: BlockId(victim) });
        let b = &mut self.blocks[victim as usize];
        debug_assert_eq!(b.valid, 0);
        b.erases += 1;
        b.state = State::Free;
        let erases = b.erases;
        self.p2l.close(victim);
        let plane = self.g.plane_of(BlockId(victim)) as usize;
        let pool = &mut self.pools[p];
        pool.counters.erases += 1;
        pool.max_erases = pool.max_erases.max(erases);
        pool.free[plane].push(victim);
        pool.free_count += 1;
    }

    /// Checks every invariant; in integrity mode also that each unit maps to its last version.
    pub fn verify(&self) -> std::result::Result<(), String> {
        let spb = u64::from(self.g.slots_per_block());
        let mut valid = vec![0u32; self.blocks.len()];
        let mut seen = 0u64;
        for (lpn, slot) in self.l2p.iter() {
            let block = self.block_of_slot(slot);
            let offset = (slot % spb) as u32;
            if self.blocks[block as usize].state == State::Free {
                return Err(format!("lpn {lpn} maps to slot {slot} in free block {block}"));
            }
            if self.pool_of_block(BlockId(block)) != self.pool_of(lpn) {
                return Err(format!("lpn {lpn} of pool {} maps to block {block} of pool {}", self.pool_of(lpn), self.pool_of_block(BlockId(block))));
            }
            let back = self.p2l.get(block, offset);
            if back != lpn {
                return Err(format!("lpn {lpn} maps to slot {slot}, which holds lpn {back}"));
            }
            valid[block as usize] += 1;
            seen += 1;
            if let Some(s) = &self.shadow {
                let want = s.version.get(&lpn);
                let have = s.slot_version.get(&slot);
                if want != have {
                    return Err(format!("lpn {lpn}: last written version {want:?}, mapped slot holds {have:?}"));
                }
            }
        }
        if let Some(s) = &self.shadow {
            if s.version.len() as u64 != seen {
                return Err(format!("{} units written and not trimmed, {seen} mapped", s.version.len()));
            }
        }
        let mut free = vec![0u32; self.pools.len()];
        for (i, b) in self.blocks.iter().enumerate() {
            let (block, p) = (i as u32, usize::from(b.pool));
            let plane = self.g.plane_of(BlockId(block)) as usize;
            let in_span = self.moved_blocks > 0 || self.pools.get(p).is_some_and(|pool| pool.span.contains(&(block % self.g.blocks_per_plane)));
            if p >= self.pools.len() || !in_span {
                return Err(format!("block {i} is in pool {p}, which does not own it"));
            }
            if b.valid != valid[i] {
                return Err(format!("block {i} counts {} valid units, the map says {}", b.valid, valid[i]));
            }
            match b.state {
                State::Free => free[p] += 1,
                State::Open if self.pools[p].writer(plane, block).is_none() => {
                    return Err(format!("block {i} is open but no stream of pool {p} writes it"));
                }
                _ => {}
            }
            if b.valid > self.written_slots(block) {
                return Err(format!("block {i} has {} valid units in {} written slots", b.valid, self.written_slots(block)));
            }
        }
        for (p, (pool, &free)) in self.pools.iter().zip(&free).enumerate() {
            let listed = pool.listed_free();
            if free != pool.free_count || free as usize != listed {
                return Err(format!("pool {p}: {free} free blocks, counter says {}, lists hold {listed}", pool.free_count));
            }
        }
        Ok(())
    }

    /// Fills every exported unit once, in order (no timing), as host writes to a fresh drive
    /// would: each pool's units striped page by page over the planes in striping order. The
    /// placement is computed ([`Layout::striped`]), not stored, so a filled drive costs no map
    /// memory per unit until units are written again. The drive must be fresh.
    pub fn fill_sequential(&mut self) -> Result<()> {
        if self.l2p.mapped() > 0
            || self.pools.iter().any(|p| p.free_count != p.blocks || p.listed_free() != p.fresh.iter().map(|&f| (p.span.end - f) as usize).sum::<usize>() || p.fresh.iter().any(|&f| f != p.span.start))
        {
            return Err(Error::Invariant { component: "ftl", detail: "a sequential fill needs a fresh drive".into() });
        }
        let segments: Vec<Segment> = self.pools.iter().map(|p| Segment { lpns: p.lpns.clone(), span: p.span.clone() }).collect();
        let layout = std::sync::Arc::new(Layout::striped(&self.g, &self.order, segments));
        let (spp, spb, bpp) = (u64::from(self.g.slots_per_page), u64::from(self.g.slots_per_block()), self.g.blocks_per_plane);
        let planes = self.order.len() as u64;
        for p in 0..self.pools.len() {
            let units = self.pools[p].lpns.end - self.pools[p].lpns.start;
            self.pools[p].counters.host_writes += units;
            let pages = units.div_ceil(spp);
            // Per plane (in striping order): its full blocks and the slots of its open one.
            let filled: Vec<(u64, u32)> = (0..self.order.len())
                .map(|j| {
                    let on_plane = pages / planes + u64::from((j as u64) < pages % planes);
                    // Slots written on this plane: whole pages, less what the last page of all lacks.
                    let last = j as u64 == (pages + planes - 1) % planes && pages > 0;
                    let slots = on_plane * spp - if last { pages * spp - units } else { 0 };
                    (slots / spb, (slots % spb) as u32)
                })
                .collect();
            // Blocks close in the order writes would close them: the n-th block of every plane
            // (in striping order) before the next of any.
            let rows = filled.iter().map(|&(full, rest)| full + u64::from(rest > 0)).max().unwrap_or(0);
            for n in 0..rows {
                for (j, &(full, rest)) in filled.iter().enumerate() {
                    if n >= full + u64::from(rest > 0) {
                        continue;
                    }
                    let plane = self.order[j] as usize;
                    let b = self.pools[p].take_free(plane, bpp).ok_or_else(|| Error::Invariant { component: "ftl", detail: "a sequential fill ran out of blocks".into() })?;
                    let blk = &mut self.blocks[b as usize];
                    blk.state = State::Open;
                    if n < full {
                        blk.valid = spb as u32;
                        self.close(b);
                    } else {
                        blk.valid = rest;
                        let s = &mut self.pools[p].streams[HOST];
                        s.active[plane] = b;
                        s.written[plane] = rest;
                    }
                }
            }
            // The host stream goes on where the fill stopped: at the plane of a partly filled
            // last page, else at the next plane.
            self.pools[p].streams[HOST].cursor = if units.is_multiple_of(spp) { pages % planes } else { (pages - 1) % planes } as usize;
        }
        if let Some(sh) = &mut self.shadow {
            for lpn in 0..layout.placed() {
                sh.next += 1;
                sh.version.insert(lpn, sh.next);
                sh.slot_version.insert(layout.slot_of(lpn), sh.next);
            }
        }
        self.l2p.install(layout.clone());
        self.p2l.install(layout);
        Ok(())
    }

    /// Random overwrites until WAF settles (or `drive_writes` drive writes), after a
    /// sequential fill. Settled means: at least one drive write done, and the WAF of the last
    /// half drive write within 2 % of the half before (WAF over shorter windows swings by a few
    /// per cent with GC bursts, and overshoots right after a sequential fill). Returns the
    /// drive writes of overwrites done and the WAF of the last half drive write.
    pub fn age(&mut self, drive_writes: f64, seed: u64) -> Result<(f64, f64)> {
        let exported = self.exported_units();
        if self.l2p.mapped() < exported {
            self.fill_sequential()?;
        }
        self.bulk_gc = self.pools.iter().all(|p| p.collecting.is_none());
        let aged = self.age_writes(exported, drive_writes, seed);
        self.bulk_gc = false;
        self.steady_gc();
        aged
    }

    /// Leaves an aged drive in the regime of steady random writes: foreground GC under way in
    /// every pool whose free blocks are not above the band where it rests (untimed ageing
    /// stops GC at the reclaim threshold, a state that steady writes never leave).
    fn steady_gc(&mut self) {
        for pool in &mut self.pools {
            if pool.free_count < pool.rest_level() {
                pool.gc_active = true;
            }
        }
    }

    fn age_writes(&mut self, exported: u64, drive_writes: f64, seed: u64) -> Result<(f64, f64)> {
        let mut rng = Rng::from_seed(stream_seed(seed, 0xA6E).to_le_bytes());
        let step = (exported / 8).max(1);
        let limit = if drive_writes > 0.0 { (drive_writes * exported as f64) as u64 } else { 30 * exported };
        let mut done = 0u64;
        let mut windows: Vec<(u64, u64)> = Vec::new();
        let half_waf = |w: &[(u64, u64)]| {
            let (h, g) = w.iter().fold((0, 0), |a, x| (a.0 + x.0, a.1 + x.1));
            (h + g) as f64 / h.max(1) as f64
        };
        let mut batch: Vec<u64> = Vec::with_capacity(BATCH);
        while done < limit {
            let before = self.counters();
            let n = step.min(limit - done);
            let mut left = n;
            while left > 0 {
                // Draw a batch, touch the map entries it will read, then the old slots' blocks
                // and reverse-map entries: independent loads whose misses overlap.
                batch.clear();
                batch.extend((0..left.min(BATCH as u64)).map(|_| rng.random_range(0..exported)));
                let spb = u64::from(self.g.slots_per_block());
                let touched = batch.iter().fold(0u64, |a, &lpn| {
                    let slot = self.l2p.get(lpn);
                    if slot == UNMAPPED {
                        return a;
                    }
                    let block = (slot / spb) as u32;
                    a ^ u64::from(self.blocks[block as usize].valid) ^ self.p2l.get(block, (slot % spb) as u32)
                });
                std::hint::black_box(touched);
                for &lpn in &batch {
                    self.write(Lpn(lpn), &mut |_| {})?;
                }
                left -= batch.len() as u64;
                crate::cancel::checkpoint()?;
            }
            done += n;
            let after = self.counters();
            windows.push((after.host_writes - before.host_writes, after.gc_writes - before.gc_writes));
            if drive_writes == 0.0 && windows.len() >= 8 {
                let k = windows.len();
                let (last, prev) = (half_waf(&windows[k - 4..]), half_waf(&windows[k - 8..k - 4]));
                if (last - prev).abs() < 0.02 * prev {
                    break;
                }
            }
        }
        let k = windows.len();
        Ok((done as f64 / exported as f64, half_waf(&windows[k.saturating_sub(4)..])))
    }
}

impl Ftl {
    /// Ages the drive as `ftl.aging` says; returns drive writes and the settled WAF (those of
    /// the replica when one is used). A drive of several pools ages by simulation.
    pub fn precondition_aged(&mut self, drive_writes: f64, seed: u64) -> Result<(f64, f64)> {
        let use_replica = match self.cfg.aging {
            Aging::Simulate => false,
            Aging::Replica => true,
            Aging::Auto => self.g.blocks() > self.cfg.aging_replica_blocks,
        };
        let planes = self.g.all_planes();
        let rep_bpp = self.cfg.aging_replica_blocks / planes;
        if !use_replica || rep_bpp >= self.g.blocks_per_plane || rep_bpp < 8 || self.pools.len() != 1 {
            return self.age(drive_writes, seed);
        }
        self.age_by_replica(rep_bpp, drive_writes, seed)
    }

    fn age_by_replica(&mut self, rep_bpp: u32, drive_writes: f64, seed: u64) -> Result<(f64, f64)> {
        if self.l2p.mapped() > 0 {
            return Err(Error::Invariant { component: "ftl", detail: "replica aging needs a clean drive".into() });
        }
        let g = self.g.clone();
        let (b_big, planes) = (f64::from(g.blocks()), f64::from(g.all_planes()));
        let mut rg = g.clone();
        rg.blocks_per_plane = rep_bpp;
        let b_rep = f64::from(rg.blocks());
        // Open blocks hold about one block of unwritten space per plane; give the replica the
        // same usable spare fraction as this drive.
        let mut rcfg = self.cfg.clone();
        rcfg.op_ratio = (self.cfg.op_ratio + planes / b_rep - planes / b_big).min(0.95);
        let mut rep = Ftl::with_geometry(rg, &rcfg, seed)?;
        let (dw, waf) = rep.age(drive_writes, seed)?;

        let spb = g.slots_per_block();
        let mut rng = Rng::from_seed(stream_seed(seed, 0x5E9A).to_le_bytes());
        // Free blocks: the replica's fraction, within this drive's GC thresholds, spread over
        // the planes as never-used blocks at the end of each plane.
        let pool = &mut self.pools[0];
        let free = ((f64::from(rep.free_blocks()) / b_rep * b_big).round() as u32).clamp(pool.trigger, pool.reclaim);
        let per_plane = free / g.all_planes();
        let extra = free % g.all_planes();
        let hist = rep.valid_histogram();
        let cdf: Vec<u64> = hist
            .iter()
            .scan(0u64, |a, &h| {
                *a += h;
                Some(*a)
            })
            .collect();
        let total = *cdf.last().unwrap_or(&0);
        // Erase counts: each block draws from the replica's blocks in the same state (full
        // blocks from full ones, free from free), so that both follow the aged distribution.
        let of_state = |free: bool| -> Vec<u32> {
            let v: Vec<u32> = rep.blocks.iter().filter(|b| (b.state == State::Free) == free).map(|b| b.erases).collect();
            if v.is_empty() {
                rep.blocks.iter().map(|b| b.erases).collect()
            } else {
                v
            }
        };
        let (erases, free_erases) = (of_state(false), of_state(true));
        let mut full: Vec<u32> = Vec::with_capacity(g.blocks() as usize);
        for plane in 0..g.all_planes() {
            let keep_free = per_plane + u32::from(plane < extra);
            let used = g.blocks_per_plane - keep_free;
            pool.fresh[plane as usize] = used;
            for i in 0..used {
                full.push(plane * g.blocks_per_plane + i);
            }
            for i in used..g.blocks_per_plane {
                let e = free_erases[rng.random_range(0..free_erases.len())];
                self.blocks[(plane * g.blocks_per_plane + i) as usize].erases = e;
                pool.max_erases = pool.max_erases.max(e);
            }
        }
        pool.free_count = free;
        // Valid counts drawn from the replica, then nudged to hold exactly every logical page.
        let mut sum = 0u64;
        for &b in &full {
            let v = if total == 0 { spb } else { cdf.partition_point(|&c| c <= rng.random_range(0..total)) as u32 };
            self.blocks[b as usize].valid = v.min(spb);
            sum += u64::from(v.min(spb));
        }
        let target = self.exported_units();
        while sum != target {
            let b = full[rng.random_range(0..full.len())] as usize;
            let v = &mut self.blocks[b].valid;
            if sum < target && *v < spb {
                *v += 1;
                sum += 1;
            } else if sum > target && *v > 0 {
                *v -= 1;
                sum -= 1;
            }
        }
        // Place the logical pages: the k-th valid slot in block order holds page perm(k), a
        // placement computed on demand (`Layout::scattered`) rather than stored.
        let words = (spb as usize).div_ceil(64);
        let mut placed = vec![0u64; full.len() * words];
        for (i, &b) in full.iter().enumerate() {
            let mut need = self.blocks[b as usize].valid;
            let bits = &mut placed[i * words..(i + 1) * words];
            for offset in 0..spb {
                if need == 0 {
                    break;
                }
                // Selection sampling: keep each remaining slot with probability need / left.
                if rng.random_range(0..spb - offset) < need {
                    need -= 1;
                    bits[offset as usize / 64] |= 1 << (offset % 64);
                }
            }
            let e = erases[rng.random_range(0..erases.len())];
            let blk = &mut self.blocks[b as usize];
            blk.erases = e;
            blk.state = State::Open;
            self.pools[0].max_erases = self.pools[0].max_erases.max(e);
            self.close(b);
        }
        let layout = std::sync::Arc::new(Layout::scattered(&g, full, placed, target, seed));
        if let Some(sh) = &mut self.shadow {
            for lpn in 0..target {
                sh.next += 1;
                sh.version.insert(lpn, sh.next);
                sh.slot_version.insert(layout.slot_of(lpn), sh.next);
            }
        }
        self.l2p.install(layout.clone());
        self.p2l.install(layout);
        self.steady_gc();
        Ok((dw, waf))
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
    let whole = PoolSpec::from_config(g.blocks_per_plane, cfg);
    Sizing::new(g.blocks(), g.all_planes(), g.slots_per_block(), &whole).spare_issue(cfg.op_ratio)
}

/// The spare-space rule of one pool of a split drive (see [`spare_space_issue`]).
pub fn pool_spare_issue(g: &Geometry, spec: &PoolSpec) -> Option<ConfigIssue> {
    Sizing::new(spec.blocks_per_plane * g.all_planes(), g.all_planes(), g.slots_per_block(), spec).spare_issue(spec.op_ratio)
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
    fn too_little_spare_space_is_a_config_error() {
        let nand = small(1, 16, 8, 4096);
        let err = Ftl::new(&nand, &FtlConfig { op_ratio: 0.01, ..FtlConfig::default() }, 1).err().unwrap();
        assert!(err.to_string().contains("spare blocks"), "{err}");
    }
}
