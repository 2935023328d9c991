//! NAND flash timing: dies with their own operation queues, ONFI channels shared by the dies
//! on them, and the state of every block's programmed pages.
//!
//! Models: a read sends command cycles on the channel, occupies the die for tR of its page
//! type, then moves its data out over the channel; a program moves its data in over the channel
//! and occupies the die for tPROG (with multi-plane on, programs of the same page offset on the
//! die's other planes that are already queued join it, and host reads of one page offset on the
//! die's planes, queued together, are sensed in one tR and moved out in turn, under
//! read-priority without cache read; with register reuse, a read of the page a plane sensed
//! last skips the tR); an erase sends command cycles and
//! occupies the die for tBERS. Each die serves its queue FIFO, or reads first (read-priority),
//! and can suspend a program or erase for a host read (paying the suspend latency on the way
//! out and back). The die stays busy while its page register is emptied over the channel.
//!
//! With cache read, a die starts its next operation as soon as a read leaves the array and its
//! data moves out of the cache register meanwhile; with cache program, the next page's data moves
//! in while the array programs, and reads and erases wait for the array.
//!
//! With one-shot programming (3D NAND) a word line's pages move into the die's latches in turn
//! and program together; a power budget caps the programs and erases running at once over the
//! drive (`program`).
//!
//! Translation pages of the cached map (`ftl.map_cache`) are read and programmed like data
//! pages, at fixed places spread over the dies; a read that a host command waits for goes first.
//!
//! Every read's data goes through the controller's ECC engine (`ecc_decode`, the die free
//! meanwhile). A read may need retry steps, each sensing the page again with shifted read
//! voltages, moving it out and decoding it, before it decodes: their number is drawn per read
//! (geometric, its mean growing with the block's P/E cycles and with the log of its data's
//! age), so read tails come from wear and retention.
//! A read whose codeword has more raw bit errors than hard decoding corrects takes the soft
//! decoding path ([`super::ecc`]), so tails come from the raw error rate too.
//!
//! Leaves out: ONFI timing below command granularity, copyback
//! (GC data goes through the controller), read disturb and temperature as causes of retries,
//! retry steps' own channel time (the die holds the
//! time), and GC data dependencies
//! (a moved page's program may start before its read finishes: GC work is charged as load in
//! issue order).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

mod geometry;
mod program;
mod queue;
mod retention;
mod ring;
mod share;
mod start;

use rand::{RngExt, SeedableRng};

use geometry::Shape;
pub use geometry::{FlashOp, Geometry};
use queue::OpQueue;
use retention::Retention;
use share::{DieShare, NO_POOL};

use super::config::{DieScheduler, NandConfig};
use super::ecc::{Ecc, EccConfig};
use crate::ids::{BlockId, CmdId, DieId};
use crate::sim::{stream_seed, ByteRate, Divisor, Rng, SimDuration, SimTime, Timeline};

/// What an operation is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// A host read of `bytes` from a page; its data goes on to the host.
    HostRead { cmd: CmdId, bytes: u32, at: u32 },
    /// A GC read of a whole page.
    GcRead,
    /// A read-ahead of `bytes` of a page into the controller's DRAM; `token` names it.
    Prefetch { token: u32, bytes: u32 },
    /// A page program; `gen` is the block's erase generation when it was issued.
    Program { gc: bool, gen: u16 },
    /// A block erase.
    Erase,
    /// A translation-page read into the map cache: one that host reads wait for, named
    /// `token`, or one in the background (for a write or a GC move) when `None`.
    MapLoad { token: Option<u32> },
    /// A translation-page write-back.
    MapProgram,
}

impl Work {
    /// Whether it is garbage collection's work: a page moved (read and programmed again) or a
    /// block erased.
    fn is_gc(self) -> bool {
        matches!(self, Work::GcRead | Work::Program { gc: true, .. } | Work::Erase)
    }

    /// Whether the die's array only senses (a read of some kind).
    fn is_read(self) -> bool {
        matches!(self, Work::HostRead { .. } | Work::GcRead | Work::Prefetch { .. } | Work::MapLoad { .. })
    }

    /// Whether a host command waits for it (so it goes first under read-priority).
    fn is_urgent(self) -> bool {
        matches!(self, Work::HostRead { .. } | Work::MapLoad { token: Some(_) })
    }
}

#[derive(Clone, Copy, Debug)]
struct Op {
    work: Work,
    block: BlockId,
    page: u32,
    /// The pool its block belonged to when it was queued (dies' fair share among tenants);
    /// `NO_POOL` for translation-page traffic, which belongs to no tenant.
    pool: u16,
    /// When it was queued at its die.
    queued: SimTime,
    /// A host read: while queued, the die's GC time done by `queued` (its GC clock then);
    /// once started, the part of its wait that the die spent on GC work.
    gc: SimDuration,
}

impl Op {
    fn new(work: Work, block: BlockId, page: u32) -> Self {
        Op { work, block, page, pool: 0, queued: SimTime::ZERO, gc: SimDuration::ZERO }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The array is busy until `end`.
    Array,
    /// Read data is moving out over the channel.
    Transfer,
}

#[derive(Clone, Copy, Debug)]
struct Running {
    op: Op,
    end: SimTime,
    phase: Phase,
    /// Service time without waiting (for the latency breakdown of host reads).
    service: SimDuration,
}

#[derive(Default)]
struct Die {
    reads: VecDeque<Op>,
    /// The other ops, with multi-plane's index of queued programs by page offset.
    other: OpQueue,
    /// Emptied lists of `in_array`, kept for reuse: a program's list costs no allocation
    /// once the die has seen a few.
    spare_lists: Vec<Vec<Op>>,
    running: Option<Running>,
    suspended: Option<(Running, SimDuration)>,
    /// Bumped when a pending array-done event must be ignored (suspend).
    gen: u32,
    busy: SimDuration,
    /// Of `busy`, the time given to GC work (committed as operations start), and when the
    /// GC work committed so far ends.
    gc_busy: SimDuration,
    gc_until: SimTime,
    /// The GC clock's last reading (it never goes back, even when a suspend or a cache
    /// program's gap makes the committed estimate dip).
    gc_seen: SimDuration,
    /// Programs merged into the running multi-plane program.
    merged: Vec<Op>,
    /// Cache program: when the array finishes its last program, and the programs (with their
    /// merged planes) still in the array, oldest first.
    array_free: SimTime,
    in_array: VecDeque<Vec<Op>>,
    /// Cache read: reads whose data is moving out, oldest first.
    outgoing: VecDeque<Outgoing>,
    /// Per plane: the page its page register holds since its last read (until a program or
    /// erase on the die overwrites the registers).
    registers: Vec<Option<(BlockId, u32)>>,
    /// Power budget slots the die holds (for its running program or erase).
    powered: u32,
}

/// Busy time of all dies together, and the part of it given to GC work.
#[derive(Clone, Copy, Default)]
struct Totals {
    busy: SimDuration,
    gc: SimDuration,
}

impl Die {
    /// The die is occupied by `work` from `from` to `until` (added to the array's `totals`).
    #[inline]
    fn occupy(&mut self, totals: &mut Totals, work: Work, from: SimTime, until: SimTime) {
        let t = until.since(from);
        self.busy += t;
        totals.busy += t;
        if work.is_gc() {
            self.gc_busy += t;
            totals.gc += t;
            self.gc_until = self.gc_until.max(until);
        }
    }

    /// GC time the die has done by `now` (what is committed, less what lies ahead).
    #[inline]
    fn gc_clock(&mut self, now: SimTime) -> SimDuration {
        self.gc_seen = (self.gc_busy - self.gc_until.since(now).min(self.gc_busy)).max(self.gc_seen);
        self.gc_seen
    }

    /// A host read starts at `now`: of its wait since it was queued, the die's GC time.
    #[inline]
    fn gc_wait(&mut self, op: &mut Op, now: SimTime) {
        if matches!(op.work, Work::HostRead { .. }) {
            let done = self.gc_clock(now);
            op.gc = (done - op.gc.min(done)).min(now.since(op.queued));
        }
    }
}

/// Where a read's data goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// To a host command, at byte `at` of its I/O; the part of its wait at the die that went
    /// to GC work.
    Host(CmdId, u32, SimDuration),
    /// To the GC buffer.
    Gc,
    /// Into the read-ahead buffer.
    Prefetch(u32),
    /// Into the map cache (a load host reads wait for, or one in the background).
    Map(Option<u32>),
}

/// A cache read's data on its way out: where it goes, the bytes, and the read's media time.
type Outgoing = (Target, u32, SimDuration);

/// NAND events (scheduled by the simulation, handled here).
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// The array part of the running operation of `die` ends.
    ArrayDone { die: DieId, gen: u32 },
    /// The running read's data has left over the channel.
    TransferDone { die: DieId },
    /// `die` may start its next operation (after a suspend, or once its array is free).
    Start { die: DieId },
    /// Cache read: the oldest read data of `die` has left its cache register over the channel.
    ReadOut { die: DieId },
    /// Cache program: the oldest program in the array of `die` ends.
    ProgramDone { die: DieId },
    /// The ECC engine has decoded the oldest read it holds (decodes take the same time, so
    /// they finish in the order they start).
    Decoded,
    /// The oldest read on the slow (soft-decision) decode path is decoded.
    SoftDecoded,
}

/// What the array tells the simulation.
#[derive(Clone, Copy, Debug)]
pub enum Output {
    /// Schedule this event.
    At(SimTime, Event),
    /// A host read's data is in the controller; `service` is its media time without waits,
    /// and `gc` the part of its wait at the die that the die spent on GC work.
    ReadReady { cmd: CmdId, bytes: u32, at: u32, service: SimDuration, gc: SimDuration },
    /// A program finished; `units` host units (0 for GC) leave the write buffer.
    Programmed { block: BlockId, page: u32, units: u32 },
    /// The read-ahead `token` is in the controller's DRAM.
    Prefetched { token: u32 },
    /// The translation-page load `token` that host reads wait for is in the map cache.
    MapLoaded { token: u32 },
}

/// NAND operation counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NandCounters {
    pub host_reads: u64,
    pub gc_reads: u64,
    pub programs: u64,
    /// Page programs of GC's moved units (each unit moved counts when its page is programmed).
    pub gc_programs: u64,
    pub multiplane_programs: u64,
    pub erases: u64,
    pub suspends: u64,
    /// Page reads for read-ahead.
    pub prefetch_reads: u64,
    /// Translation-page reads (map cache misses).
    pub map_reads: u64,
    /// Translation-page write-backs.
    pub map_programs: u64,
    /// Read-retry steps (extra senses of a page).
    pub read_retries: u64,
    /// Multi-plane reads (host reads of two or more planes sensed together).
    pub multiplane_reads: u64,
    /// Reads served from a plane's page register (the page sensed by the read before, no tR).
    pub register_hits: u64,
    /// Reads that needed soft-decision decoding, and their wait for a decoder (ps).
    pub soft_decodes: u64,
    pub decoder_wait: u64,
}

/// The flash array.
pub struct NandArray {
    g: Geometry,
    /// The geometry's divisors, and the page types' (tR, tPROG) counts as divisors.
    shape: Shape,
    read_kinds: Divisor,
    program_kinds: Divisor,
    dies: Vec<Die>,
    channels: Vec<Timeline>,
    read: Vec<SimDuration>,
    program: Vec<SimDuration>,
    erase: SimDuration,
    channel_rate: ByteRate,
    overhead: SimDuration,
    read_first: bool,
    suspend: Option<SimDuration>,
    multiplane: bool,
    cache_read: bool,
    cache_program: bool,
    /// Bytes a translation-page load moves out: the whole page, or the sector that holds an
    /// entry (a cached map of entries, [`NandArray::set_map_read_bytes`]).
    map_read_bytes: u32,
    /// Per block: pages programmed, and the erase generation (u16 each: 4 bytes per block).
    programmed: Vec<u16>,
    gen: Vec<u16>,
    counters: NandCounters,
    totals: Totals,
    /// Read retry: the continuation probability of the geometric step count per P/E cycle's
    /// worth of mean, the cap, the P/E cycles of each block, and the source of retry draws.
    retry_per_pe: f64,
    retry_max: u32,
    retention: Retention,
    /// Page-register reuse (see [`NandConfig::register_reuse`]).
    register_reuse: bool,
    /// ECC decode of each page read, in the controller, and the reads being decoded.
    ecc: SimDuration,
    decoding: VecDeque<Outgoing>,
    /// Which reads need soft decoding, and those on that path (decoders serve them in arrival
    /// order and each decode takes the same time, so they finish in that order).
    soft: Ecc,
    soft_decoding: VecDeque<Outgoing>,
    wear: Vec<u32>,
    pe_base: u32,
    rng: Rng,
    /// Die time shared among tenants' pools (`tenant_fair`), once told the pools.
    share: Option<Box<DieShare>>,
    tenant_fair: bool,
    /// One-shot programming: pages per word line and the word line's tPROG.
    one_shot: Option<(u32, SimDuration)>,
    /// Pages whose data waits in their die's latches for the rest of their word line.
    latched: FxHashMap<BlockId, Vec<Op>>,
    /// The power budget: programs and erases at once (0 = unlimited), those running, and the
    /// dies waiting for a slot.
    power_max: u32,
    power_active: u32,
    power_wait: VecDeque<DieId>,
    /// Programs and erases that waited for a slot of the power budget.
    pub power_waits: u64,
}

impl NandArray {
    pub fn new(c: &NandConfig, ecc: &EccConfig, g: Geometry, seed: u64) -> Self {
        let blocks = g.blocks() as usize;
        let bytes_per_sec = f64::from(c.channel_mts) * 1e6 * f64::from(c.channel_width) / 8.0;
        NandArray {
            shape: Shape::new(&g),
            read_kinds: Divisor::new(c.read_latency.len() as u32),
            program_kinds: Divisor::new(c.program_latency.len() as u32),
            dies: (0..g.dies()).map(|_| Die { registers: vec![None; g.planes as usize], ..Die::default() }).collect(),
            channels: vec![Timeline::default(); g.channels as usize],
            read: c.read_latency.clone(),
            program: c.program_latency.clone(),
            erase: c.erase_latency,
            channel_rate: ByteRate::new(1e12 / bytes_per_sec),
            overhead: c.command_overhead,
            read_first: c.scheduler == DieScheduler::ReadPriority,
            suspend: if c.suspend { c.suspend_latency } else { None },
            multiplane: c.multiplane && c.planes > 1,
            cache_read: c.cache_read,
            cache_program: c.cache_program,
            map_read_bytes: g.page_size as u32,
            programmed: vec![0; blocks],
            gen: vec![0; blocks],
            counters: NandCounters::default(),
            totals: Totals::default(),
            retry_per_pe: c.read_retry_per_kpe / 1000.0,
            retry_max: c.read_retry_max,
            retention: Retention::new(c.read_retry_per_decade, c.data_age_days, blocks),
            ecc: c.ecc_decode,
            register_reuse: c.register_reuse,
            decoding: VecDeque::new(),
            soft: Ecc::new(ecc, seed),
            soft_decoding: VecDeque::new(),
            wear: vec![c.pe_cycles; blocks],
            pe_base: c.pe_cycles,
            rng: Rng::from_seed(stream_seed(seed, 0x2E72).to_le_bytes()),
            share: None,
            tenant_fair: c.tenant_fair,
            one_shot: c.one_shot_program.map(|t| (c.program_latency.len().max(1) as u32, t)),
            latched: FxHashMap::default(),
            power_max: c.max_active_programs,
            power_active: 0,
            power_wait: VecDeque::new(),
            power_waits: 0,
            g,
        }
    }

    /// Tells the array each block's pool (`owner`) and each pool's weight: with
    /// `tenant_fair`, dies then share their time among the pools. Call before any op.
    pub fn set_pools(&mut self, owner: Vec<u16>, weight: Vec<f64>) {
        if !self.tenant_fair || weight.len() < 2 {
            return;
        }
        let pools = weight.len();
        let n = self.dies.len() * pools;
        self.share = Some(Box::new(DieShare::new(owner, weight, n)));
        for d in &mut self.dies {
            d.other.track_pools(pools);
        }
    }

    /// A block moved to another pool (it must have no op queued).
    pub fn set_owner(&mut self, block: BlockId, pool: u16) {
        if let Some(sh) = &mut self.share {
            sh.owner[block.index()] = pool;
        }
    }

    /// The nominal array time of an op (what the dies' fair share charges).
    fn nominal(&self, work: &Work) -> SimDuration {
        match work {
            Work::Program { .. } | Work::MapProgram => self.program[0],
            Work::Erase => self.erase,
            _ => self.read[0],
        }
    }

    /// Mapping units a page holds.
    pub fn slots_per_page(&self) -> u32 {
        self.g.slots_per_page
    }

    pub fn counters(&self) -> NandCounters {
        NandCounters { soft_decodes: self.soft.soft_decodes, decoder_wait: self.soft.decoder_wait.as_ps(), ..self.counters }
    }

    /// Time `bytes` take on a channel.
    pub fn transfer_time(&self, bytes: u64) -> SimDuration {
        self.channel_rate.time(bytes)
    }

    /// tR of a page.
    pub fn read_time(&self, page: u32) -> SimDuration {
        self.read[self.read_kinds.remainder(page) as usize]
    }

    /// tPROG of a page.
    pub fn program_time(&self, page: u32) -> SimDuration {
        self.program[self.program_kinds.remainder(page) as usize]
    }

    /// How many times `block` has been erased here (a program queued before an erase is
    /// dropped, and never marks its page programmed).
    pub fn erasures(&self, block: BlockId) -> u64 {
        u64::from(self.gen[block.index()])
    }

    /// Whether page `page` of `block` holds programmed data (else it is still in the buffer).
    pub fn is_programmed(&self, block: BlockId, page: u32) -> bool {
        page < u32::from(self.programmed[block.index()])
    }

    /// Marks the first `pages` pages of `block` programmed (after preconditioning).
    pub fn set_programmed(&mut self, block: BlockId, pages: u32) {
        self.programmed[block.index()] = pages.min(u32::from(u16::MAX)) as u16;
    }

    /// The plane (within its die) of a block.
    fn plane_of(&self, block: BlockId) -> usize {
        self.shape.plane_in_die(block) as usize
    }

    /// Bytes a read moves out of the die.
    fn read_bytes(&self, w: Work) -> u64 {
        match w {
            Work::HostRead { bytes, .. } | Work::Prefetch { bytes, .. } => u64::from(bytes),
            _ => self.g.page_size,
        }
    }

    /// Adds `erases` P/E cycles to `block` (those preconditioning did).
    pub fn add_wear(&mut self, block: BlockId, erases: u32) {
        self.wear[block.index()] += erases;
    }

    /// Retry steps of one read of `block` at `now`: geometric with mean `read_retry_per_kpe`
    /// per 1000 P/E cycles plus `read_retry_per_decade` per decade of its data's age beyond an
    /// hour (each further step with probability m / (1 + m)), at most `read_retry_max`. A
    /// translation page's wear and age are the drive's (`pe_cycles`, `data_age_days`): its place is
    /// nominal.
    fn retries(&mut self, op: &Op, now: SimTime) -> u32 {
        if self.retry_per_pe <= 0.0 && !self.retention.on() {
            // Off: no lookup of the block's wear on every read.
            return 0;
        }
        let map = matches!(op.work, Work::MapLoad { .. });
        let wear = if map { self.pe_base } else { self.wear[op.block.index()] };
        let written = if map { None } else { self.retention.written_at(op.block) };
        let mean = self.retry_per_pe * f64::from(wear) + self.retention.steps(written, now);
        if mean <= 0.0 {
            return 0;
        }
        let more = mean / (1.0 + mean);
        let mut k = 0;
        while k < self.retry_max && self.rng.random_bool(more) {
            k += 1;
        }
        k
    }

    /// Busy time of each die, in picoseconds.
    pub fn die_busy(&self) -> Vec<u64> {
        self.dies.iter().map(|d| d.busy.as_ps()).collect()
    }

    /// Busy time of all dies together, and the part of it given to GC work (committed as
    /// operations start), in picoseconds.
    pub fn busy_totals(&self) -> (SimDuration, SimDuration) {
        (self.totals.busy, self.totals.gc)
    }

    /// Busy time of each channel, in picoseconds.
    pub fn channel_busy(&self) -> Vec<u64> {
        self.channels.iter().map(|c| c.busy().as_ps()).collect()
    }

    /// Queues an FTL operation.
    pub fn submit_flash(&mut self, op: FlashOp, now: SimTime, out: &mut Vec<Output>) {
        let op = match op {
            FlashOp::ProgramPlanes { block, page, gc, planes } => {
                for p in 0..planes {
                    let b = BlockId(block.0 + p * self.g.blocks_per_plane);
                    self.retention.written(b, page, now);
                    self.enqueue(Op::new(Work::Program { gc, gen: self.gen[b.index()] }, b, page), now);
                }
                self.kick(self.shape.die_of(block), false, now, out);
                return;
            }
            FlashOp::Program { block, page, gc } => {
                self.retention.written(block, page, now);
                Op::new(Work::Program { gc, gen: self.gen[block.index()] }, block, page)
            }
            FlashOp::Read { block, page } => Op::new(Work::GcRead, block, page),
            FlashOp::Erase { block } => {
                // From here on the block is a new incarnation: nothing of it is programmed.
                let b = block.index();
                self.gen[b] = self.gen[b].wrapping_add(1);
                self.programmed[b] = 0;
                self.wear[b] += 1;
                Op::new(Work::Erase, block, 0)
            }
            FlashOp::MapRead { tpage } | FlashOp::MapMerge { tpage } => {
                let (block, page) = self.map_place(tpage);
                Op::new(Work::MapLoad { token: None }, block, page)
            }
            FlashOp::MapWrite { tpage } => {
                let (block, page) = self.map_place(tpage);
                Op::new(Work::MapProgram, block, page)
            }
        };
        self.submit(op, now, out);
    }

    /// Where translation page `tpage` lives: spread over the dies, then planes, then pages (the
    /// block is the plane's first; only its die, plane and page type matter for timing).
    fn map_place(&self, tpage: u64) -> (BlockId, u32) {
        let (dies, planes) = (u64::from(self.g.dies()), u64::from(self.g.planes));
        let plane = (tpage % dies) * planes + (tpage / dies) % planes;
        let page = (tpage / (dies * planes)) % u64::from(self.g.pages_per_block);
        (BlockId(plane as u32 * self.g.blocks_per_plane), page as u32)
    }

    /// Translation-page loads move `bytes` out of the die (at most a page) rather than the
    /// whole page.
    pub fn set_map_read_bytes(&mut self, bytes: u32) {
        self.map_read_bytes = bytes.clamp(1, self.g.page_size as u32);
    }

    /// Queues the load `token` of translation page `tpage`, which host reads wait for.
    pub fn submit_map_load(&mut self, token: u32, tpage: u64, now: SimTime, out: &mut Vec<Output>) {
        let (block, page) = self.map_place(tpage);
        self.submit(Op::new(Work::MapLoad { token: Some(token) }, block, page), now, out);
    }

    /// Queues a read-ahead of `bytes` from `page` of `block` into DRAM, behind host reads.
    pub fn submit_prefetch(&mut self, token: u32, block: BlockId, page: u32, bytes: u32, now: SimTime, out: &mut Vec<Output>) {
        self.submit(Op::new(Work::Prefetch { token, bytes }, block, page), now, out);
    }

    fn submit(&mut self, op: Op, now: SimTime, out: &mut Vec<Output>) {
        let die = self.enqueue(op, now);
        self.kick(die, op.work.is_urgent(), now, out);
    }

    /// Queues the page reads of host command `cmd` (block, page, bytes, where they go) before
    /// any of them starts, so that reads of one page offset on a die's planes can go together.
    pub fn submit_reads(&mut self, cmd: CmdId, reads: impl Iterator<Item = (BlockId, u32, u32, u32)> + Clone, now: SimTime, out: &mut Vec<Output>) {
        for (block, page, bytes, at) in reads.clone() {
            self.enqueue(Op::new(Work::HostRead { cmd, bytes, at }, block, page), now);
        }
        for (block, ..) in reads {
            self.kick(self.shape.die_of(block), true, now, out);
        }
    }

    /// Puts `op` in its die's queue; returns the die.
    fn enqueue(&mut self, mut op: Op, now: SimTime) -> DieId {
        let die = self.shape.die_of(op.block);
        let d = &mut self.dies[die.index()];
        op.queued = now;
        op.gc = d.gc_clock(now);
        if let Some(sh) = &self.share {
            // Every op is charged to its pool's share of the die; translation pages to none.
            op.pool = if matches!(op.work, Work::MapLoad { .. } | Work::MapProgram) { NO_POOL } else { sh.owner(op.block) as u16 };
        }
        if op.work.is_urgent() && self.read_first {
            d.reads.push_back(op);
        } else {
            if let Some(sh) = &mut self.share {
                sh.enqueued(die, usize::from(op.pool));
            }
            let index = (self.multiplane && matches!(op.work, Work::Program { .. })).then(|| self.shape.plane_in_die(op.block));
            d.other.push_back(op, index);
        }
        die
    }

    /// Lets `die` act on a new op: start it if idle, or suspend a program or erase for an
    /// urgent read (`host_read`).
    fn kick(&mut self, die: DieId, host_read: bool, now: SimTime, out: &mut Vec<Output>) {
        let d = &self.dies[die.index()];
        match d.running {
            None => {
                if d.suspended.is_none() {
                    self.start(die, now, out);
                }
            }
            Some(r) if host_read && self.read_first && r.phase == Phase::Array && !r.op.work.is_read() => {
                // A program or erase is in the array: suspend it for the read, if allowed.
                if let Some(s) = self.suspend {
                    if r.end > now {
                        let d = &mut self.dies[die.index()];
                        d.gen = d.gen.wrapping_add(1);
                        let left = r.end.since(now);
                        d.busy = d.busy - left;
                        self.totals.busy = self.totals.busy - left;
                        if r.op.work.is_gc() {
                            d.gc_busy = d.gc_busy - left;
                            self.totals.gc = self.totals.gc - left;
                            if d.gc_until == r.end {
                                d.gc_until = now;
                            }
                        }
                        d.suspended = Some((r, r.end.since(now)));
                        d.running = None;
                        self.counters.suspends += 1;
                        out.push(Output::At(now + s, Event::Start { die }));
                    }
                }
            }
            Some(_) => {}
        }
    }

    /// Handles a NAND event.
    pub fn handle(&mut self, ev: Event, now: SimTime, out: &mut Vec<Output>) {
        match ev {
            Event::Start { die } => self.start(die, now, out),
            Event::ArrayDone { die, gen } => {
                let d = &mut self.dies[die.index()];
                if d.gen != gen {
                    return;
                }
                let Some(mut r) = d.running else { return };
                match r.op.work {
                    Work::HostRead { cmd, bytes, at } if self.cache_read => {
                        self.cached_read_out(die, Target::Host(cmd, at, r.op.gc), bytes, r.service, now, out);
                    }
                    Work::Prefetch { token, bytes } if self.cache_read => {
                        self.cached_read_out(die, Target::Prefetch(token), bytes, r.service, now, out);
                    }
                    Work::GcRead if self.cache_read => {
                        self.counters.gc_reads += 1;
                        self.cached_read_out(die, Target::Gc, self.g.page_size as u32, r.service, now, out);
                    }
                    Work::MapLoad { token } if self.cache_read => {
                        self.cached_read_out(die, Target::Map(token), self.map_read_bytes, r.service, now, out);
                    }
                    Work::MapLoad { .. } => self.transfer_out(die, &mut r, u64::from(self.map_read_bytes), now, out),
                    Work::MapProgram => {
                        self.counters.map_programs += 1;
                        self.release_power(die, now, out);
                        self.dies[die.index()].running = None;
                        self.start(die, now, out);
                    }
                    Work::HostRead { bytes, .. } | Work::Prefetch { bytes, .. } => {
                        self.transfer_out(die, &mut r, u64::from(bytes), now, out);
                    }
                    Work::GcRead => {
                        self.counters.gc_reads += 1;
                        self.transfer_out(die, &mut r, self.g.page_size, now, out);
                    }
                    Work::Program { .. } => {
                        self.release_power(die, now, out);
                        self.finish_program(r.op, out);
                        let merged = std::mem::take(&mut self.dies[die.index()].merged);
                        for &o in &merged {
                            self.finish_program(o, out);
                        }
                        self.dies[die.index()].merged = merged;
                        self.dies[die.index()].merged.clear();
                        self.dies[die.index()].running = None;
                        self.start(die, now, out);
                    }
                    Work::Erase => {
                        self.counters.erases += 1;
                        self.release_power(die, now, out);
                        self.dies[die.index()].running = None;
                        self.start(die, now, out);
                    }
                }
            }
            Event::TransferDone { die } => {
                let d = &mut self.dies[die.index()];
                let Some(r) = d.running.take() else { return };
                match r.op.work {
                    Work::HostRead { cmd, bytes, at } => self.read_out(Target::Host(cmd, at, r.op.gc), bytes, r.service, now, out),
                    Work::Prefetch { token, bytes } => self.read_out(Target::Prefetch(token), bytes, r.service, now, out),
                    Work::MapLoad { token } => self.read_out(Target::Map(token), 0, r.service, now, out),
                    _ => {}
                }
                // A multi-plane read: the next plane's data goes out; its media time is the
                // shared sensing and its own transfer.
                if matches!(r.op.work, Work::HostRead { .. }) && self.dies[die.index()].merged.first().is_some_and(|o| matches!(o.work, Work::HostRead { .. })) {
                    let o = self.dies[die.index()].merged.remove(0);
                    let sensed = r.service - self.transfer_time(self.read_bytes(r.op.work));
                    let mut next = Running { op: o, end: now, phase: Phase::Array, service: sensed };
                    self.transfer_out(die, &mut next, self.read_bytes(o.work), now, out);
                    return;
                }
                self.start(die, now, out);
            }
            Event::ReadOut { die } => {
                let Some((target, bytes, service)) = self.dies[die.index()].outgoing.pop_front() else { return };
                self.read_out(target, bytes, service, now, out);
            }
            Event::Decoded => {
                if let Some((target, bytes, service)) = self.decoding.pop_front() {
                    self.deliver(target, bytes, service, out);
                }
            }
            Event::SoftDecoded => {
                if let Some((target, bytes, service)) = self.soft_decoding.pop_front() {
                    self.deliver(target, bytes, service, out);
                }
            }
            Event::ProgramDone { die } => {
                self.release_power(die, now, out);
                let mut ops = self.dies[die.index()].in_array.pop_front().unwrap_or_default();
                for &o in &ops {
                    self.finish_program(o, out);
                }
                ops.clear();
                self.dies[die.index()].spare_lists.push(ops);
            }
        }
    }

    /// A read's data has left the die: it goes through the ECC engine (when decoding takes
    /// time), then on.
    fn read_out(&mut self, target: Target, bytes: u32, service: SimDuration, now: SimTime, out: &mut Vec<Output>) {
        let soft = self.soft.draw(u64::from(bytes), now + self.ecc);
        if soft > SimDuration::ZERO {
            let t = self.ecc + soft;
            self.soft_decoding.push_back((target, bytes, service + t));
            out.push(Output::At(now + t, Event::SoftDecoded));
        } else if self.ecc > SimDuration::ZERO {
            self.decoding.push_back((target, bytes, service + self.ecc));
            out.push(Output::At(now + self.ecc, Event::Decoded));
        } else {
            self.deliver(target, bytes, service, out);
        }
    }

    /// A read's data is decoded: to its host command, the read-ahead buffer, the GC buffer or
    /// the map cache.
    fn deliver(&mut self, target: Target, bytes: u32, service: SimDuration, out: &mut Vec<Output>) {
        match target {
            Target::Host(cmd, at, gc) => {
                self.counters.host_reads += 1;
                out.push(Output::ReadReady { cmd, bytes, at, service, gc });
            }
            Target::Prefetch(token) => {
                self.counters.prefetch_reads += 1;
                out.push(Output::Prefetched { token });
            }
            Target::Map(token) => {
                self.counters.map_reads += 1;
                if let Some(token) = token {
                    out.push(Output::MapLoaded { token });
                }
            }
            Target::Gc => {}
        }
    }

    /// Cache read: the die is free for its next operation, whose command goes on the channel
    /// first; this page's data follows it out of the cache register.
    fn cached_read_out(&mut self, die: DieId, cmd: Target, bytes: u32, service: SimDuration, now: SimTime, out: &mut Vec<Output>) {
        self.dies[die.index()].running = None;
        self.start(die, now, out);
        let ch = self.shape.channel_of_die(die) as usize;
        let t = self.transfer_time(u64::from(bytes));
        let g = self.channels[ch].reserve(now, t);
        let service = service + g.end.since(g.start);
        self.dies[die.index()].outgoing.push_back((cmd, bytes, service));
        out.push(Output::At(g.end, Event::ReadOut { die }));
    }

    fn transfer_out(&mut self, die: DieId, r: &mut Running, bytes: u64, now: SimTime, out: &mut Vec<Output>) {
        let ch = self.shape.channel_of_die(die) as usize;
        let t = self.transfer_time(bytes);
        let g = self.channels[ch].reserve(now, t);
        r.phase = Phase::Transfer;
        r.service += g.end.since(g.start);
        let d = &mut self.dies[die.index()];
        d.occupy(&mut self.totals, r.op.work, now, g.end);
        d.running = Some(*r);
        out.push(Output::At(g.end, Event::TransferDone { die }));
    }

    /// A page's program ended: it counts as programmed, or, with one-shot programming, its
    /// data waits in the latches until its word line's last page programs them all.
    fn finish_program(&mut self, op: Op, out: &mut Vec<Output>) {
        if let Some((k, _)) = self.one_shot.filter(|_| matches!(op.work, Work::Program { .. })) {
            if !(op.page + 1).is_multiple_of(k) {
                self.latched.entry(op.block).or_default().push(op);
                return;
            }
            for o in self.latched.remove(&op.block).unwrap_or_default() {
                self.programmed_page(o, out);
            }
        }
        self.programmed_page(op, out);
    }

    fn programmed_page(&mut self, op: Op, out: &mut Vec<Output>) {
        self.counters.programs += 1;
        if let Work::Program { gc, gen } = op.work {
            let b = op.block.index();
            if gen == self.gen[b] {
                self.programmed[b] = self.programmed[b].max((op.page + 1).min(u32::from(u16::MAX)) as u16);
            }
            if gc {
                self.counters.gc_programs += 1;
            } else {
                out.push(Output::Programmed { block: op.block, page: op.page, units: self.g.slots_per_page });
            }
        }
    }
}
