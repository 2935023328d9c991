//! The flash device behind the controller: the FTL's map and GC over the NAND array, with the
//! controller's DRAM write buffer and background (idle) garbage collection.
//!
//! Reads look each mapping unit up: unwritten units return zeroes at once, units still in the
//! write buffer are served from DRAM, and the rest go to their dies, one page read for the
//! units of a request that sit side by side in one page. Writes enter the write
//! buffer when it has room (oldest first, a write larger than the buffer alone when it is
//! empty) and complete from there; the FTL places them at once and the NAND array programs
//! them in the background, freeing buffer space as programs finish. Foreground GC runs inside
//! the FTL's writes; background GC reclaims victims after `ftl.bg_gc_idle` without host I/O.
//!
//! Sequential streams are read ahead ([`super::read_ahead`]).
//!
//! With a cached map (`ftl.map_cache`), a read whose translation page is not in DRAM (or is on
//! its way there) waits for that page's load before its page reads go to the dies; the loads and
//! write-backs that writes and GC moves cause run in the background. Units in the write buffer,
//! read ahead, or never written need no map entry from flash.
//!
//! The page reads of one command are queued together, so that those of one page offset on a
//! die's planes can be sensed at once (multi-plane read).
//!
//! With `ftl.read_coalesce`, a host read of bytes that a page read under way for another host
//! read brings joins that read and is served from the controller's buffer when it lands, so
//! many readers of one hot unit cost one sense and one channel transfer. A read that joins
//! needs no map lookup of its own: the read it joined has the unit's entry, so a cached map
//! counts no access for it.
//!
//! Leaves out: sharing a page read between requests that need different bytes of the page
//! (each senses the page again), and a read cache of pages that have landed.

use std::collections::VecDeque;
use std::time::Instant;

use rustc_hash::FxHashMap;

mod background;
mod flush;
mod summary;
mod write_buffer;

pub use summary::{FlashSummary, IntegrityReport, PreconditionReport};
use write_buffer::{Uncached, Waiting};

use super::read_ahead::{Lookup, ReadAhead};
use super::{FlashOp, Ftl, FtlConfig, MapCacheUnit, PoolSpec, Precondition};
use crate::cmd::PerCmd;
use crate::ctrl::transfer::Transfer;
use crate::error::Result;
use crate::ftl::metrics::{NAND_CHANNELS_BUSY, NAND_DIES_BUSY};
use crate::ids::CmdId;
use crate::ids::{BlockId, Lpn};
use crate::media::nand::{self, NandArray};
use crate::media::MediaConfig;
use crate::media::{Medium, Out};
use crate::sim::{div_rem, Runs, SimDuration, SimTime};
use crate::stats::{Component, Metrics, Record};

/// The flash device's view of the simulation while it handles an input.
pub(super) type Ctx<'a> = crate::media::Ctx<'a, Event>;

/// Flash device events.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A piece of a read served from DRAM (the write buffer, read-ahead) is ready.
    Buffered { cmd: CmdId, len: u32, at: u32 },
    /// Pieces that leave DRAM at the same instant, in order: run `run` of [`FlashDevice`]'s
    /// runs.
    BufferedRun { run: u32 },
    /// Check whether background GC should run.
    BackgroundGc,
    /// The dynamic OPS controller's step.
    OpsResize,
    /// NAND array events.
    Nand(nand::Event),
}

/// The FTL over the NAND array, with its write buffer.
pub struct FlashDevice {
    ftl: Ftl,
    array: NandArray,
    unit: u64,
    /// Integrity mode: host reads are checked against the FTL's shadow map.
    integrity: bool,
    /// The write buffer's parts (one, or one per pool with `ftl.buffer_split`): units each
    /// holds and units in use.
    buffer_units: Vec<u64>,
    buffer_used: Vec<u64>,
    buffer_latency: SimDuration,
    /// Per buffer part: writes waiting for space, oldest first.
    waiting: Vec<VecDeque<Waiting>>,
    ops: Vec<FlashOp>,
    out: Vec<nand::Output>,
    precondition: PreconditionReport,
    /// Dynamic OPS among isolated pools, and whether its next step is armed.
    sizer: Option<Box<super::ops::OpsSizer>>,
    ops_armed: bool,
    /// Per tenant: reads and writes that reached the flash device (the controller's IOPS).
    tenant_ios: Vec<u64>,
    /// Write cache off: the writes waiting for each page's program, and each write's pages
    /// still to be programmed.
    uncached: Option<Box<Uncached>>,
    /// Flushes waiting for programs, and the host units of padding flushes wrote.
    flushes: Vec<flush::PendingFlush>,
    padded_units: u64,
    /// Background GC: idle time that starts it (zero = off), its target, the last host
    /// activity, and whether a check is pending.
    bg_idle: SimDuration,
    /// A zone reset's time in the controller.
    zone_reset_latency: SimDuration,
    bg_target: f64,
    last_activity: SimTime,
    bg_armed: bool,
    /// Background GC is deferred by writes only (`ftl.bg_gc_defer = "writes"`), and has
    /// stopped because the host's workload has ended.
    bg_writes_only: bool,
    bg_stopped: bool,
    /// Erases seen so far (each new one is reported to the probe with the free blocks).
    last_erases: u64,
    buffer_hits: u64,
    unmapped_reads: u64,
    /// Scratch: the page reads of one command.
    page_reads: Vec<PageRead>,
    ahead: ReadAhead,
    /// Reads waiting for their translation pages (map cache misses): loads outstanding, since
    /// when they wait, and the page reads to issue after.
    map_wait: PerCmd<MapWait>,
    /// Reads issued after their map loads: how long they waited for them (the breakdown's
    /// `map`) and the page reads still to land.
    map_crit: PerCmd<(SimDuration, usize)>,
    /// Scratch: the flash operations of one command's map lookups.
    map_ops: Vec<FlashOp>,
    /// Translation-page loads that host reads wait for, by token (`None`: a free token), and
    /// the token of each page being loaded.
    loads: Vec<Option<Loading>>,
    loading: FxHashMap<u64, u32>,
    /// Emptied lists of a finished load's waiters and of a map wait's page reads, kept to be
    /// reused: a map cache miss then allocates nothing.
    spare_waiters: Vec<Vec<CmdId>>,
    spare_reads: Vec<Vec<PageRead>>,
    /// Read coalescing (`ftl.read_coalesce`): host page reads under way by (block, page), and
    /// each one's page by its `(cmd, byte of the command)`.
    coalesce: bool,
    shared: FxHashMap<(u32, u32), SharedRead>,
    shared_by_piece: FxHashMap<(CmdId, u32), (u32, u32)>,
    coalesced: u64,
    /// GC's moved units already reported to the controller (`Some` once it charges them).
    gc_reported: Option<u64>,
    /// Read-modify-write: writes waiting for the flash reads of units they cover in part (page
    /// reads left), and the units read so.
    rmw: PerCmd<u32>,
    rmw_reads: u64,
    /// Pieces of reads `(cmd, bytes, byte of the command)` scheduled together as one
    /// [`Event::BufferedRun`], by run.
    runs: Runs<(CmdId, u32, u32)>,
    /// Off: one event per piece, as before runs (to check that runs change no result).
    fold_runs: bool,
}

/// A host page read under way that reads of the same bytes join.
struct SharedRead {
    /// Device bytes it brings.
    bytes: std::ops::Range<u64>,
    /// Reads that joined it: `(cmd, bytes, byte of the command)`.
    joined: Vec<(CmdId, u32, u32)>,
}

/// Bytes a cached entry's miss reads of its translation page: the sector that holds it (MQSim's
/// mapping reads move one 512 B sector).
const MAP_SECTOR: u32 = 512;

/// A translation-page load and the reads that wait for it.
struct Loading {
    tpage: u64,
    waiters: Vec<CmdId>,
}

/// A read waiting for its translation pages: how many loads are left, since when it waits,
/// and its page reads, issued once they have all landed.
struct MapWait {
    loads: u32,
    since: SimTime,
    reads: Vec<PageRead>,
}

/// How a unit of a read is served without a flash read of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Served {
    /// Never written: zeroes, at once.
    Zeroes,
    /// From DRAM: the write buffer, or read ahead.
    WriteBuffer,
    ReadAhead,
}

/// Bytes of one command that one page read delivers: `bytes` from byte `at` of the command.
#[derive(Clone, Copy, Debug)]
struct PageRead {
    block: BlockId,
    page: u32,
    bytes: u32,
    at: u32,
}

/// The tenants as the flash device sees them: each one's namespace and, with isolated pools,
/// its pool; their weights and IOPS SLOs (which the dynamic OPS controller weighs).
#[derive(Clone, Debug, Default)]
pub struct Tenancy {
    pub names: Vec<String>,
    /// The first byte of each tenant's namespace, ascending.
    pub starts: Vec<u64>,
    pub pools: Option<Vec<PoolSpec>>,
    pub weights: Vec<f64>,
    pub slo_iops: Vec<Option<f64>>,
}

impl FlashDevice {
    /// The FTL of `cfg` over `media`'s geometry for `layout`'s tenants, preconditioned as
    /// `cfg` asks (without timing), with its counters reset; and what preconditioning left.
    fn preconditioned(media: &MediaConfig, cfg: &FtlConfig, layout: &Tenancy, seed: u64) -> Result<(Ftl, PreconditionReport)> {
        let g = super::Geometry::new(&media.nand, cfg.mapping_unit.0);
        let mut ftl = match &layout.pools {
            Some(specs) => Ftl::with_pools(g, cfg, seed, specs)?,
            None => Ftl::with_geometry(g, cfg, seed)?,
        };
        let unit = cfg.mapping_unit.0;
        ftl.set_tenants(layout.starts.iter().map(|s| s / unit).collect());
        if cfg.placement == super::Placement::Fdp {
            if cfg.fdp_handles > 0 {
                ftl.enable_handles(cfg.fdp_handles as usize);
            } else {
                ftl.enable_placement(cfg.ruh_type == super::RuhType::Persistent);
            }
        }
        if cfg.integrity {
            ftl.enable_integrity();
        }
        let t0 = Instant::now();
        let mut report = PreconditionReport { state: cfg.precondition.as_str().to_string(), waf: 1.0, ..PreconditionReport::default() };
        match cfg.precondition {
            Precondition::Clean => {}
            Precondition::Sequential => ftl.fill_sequential_part(cfg.precondition_fill)?,
            Precondition::Aged => {
                let (dw, waf) = ftl.precondition_aged(cfg.precondition_drive_writes, seed)?;
                report.drive_writes = dw;
                report.waf = waf;
            }
        }
        report.wall_s = t0.elapsed().as_secs_f64();
        report.free_blocks = ftl.free_blocks();
        report.valid_fraction = ftl.full_valid_fraction();
        ftl.reset_counters();
        if let Some(z) = cfg.zone_size {
            ftl.enable_zones(z.0 / unit, cfg.max_active_zones, cfg.precondition == Precondition::Sequential);
        }
        ftl.enable_map_cache();
        Ok((ftl, report))
    }

    /// The FTL (`cfg`) over the NAND array of `media`, shared by `tenants`, preconditioned as
    /// `cfg` asks (without timing); `seed` seeds every random choice.
    pub fn new(media: &MediaConfig, cfg: &FtlConfig, tenants: Tenancy, seed: u64) -> Result<Self> {
        let layout = tenants;
        let unit = cfg.mapping_unit.0;
        let (ftl, report) = Self::preconditioned(media, cfg, &layout, seed)?;
        let total = (cfg.write_buffer.0 / unit).max(1);
        let buffer_parts: Vec<u64> = match &layout.pools {
            Some(specs) if cfg.buffer_split => {
                // Split like the spare blocks: in proportion to each pool's share of them.
                let spare: Vec<f64> = specs.iter().map(|p| (p.op_ratio * f64::from(p.blocks_per_plane)).max(1e-9)).collect();
                crate::ftl::apportion(total, &spare).into_iter().map(|u| u.max(1)).collect()
            }
            _ => vec![total],
        };
        let g = ftl.geometry().clone();
        let mut array = NandArray::new(&media.nand, &media.ecc, g.clone(), seed);
        if cfg.map_cache_unit == MapCacheUnit::Entry {
            // A cached entry's miss reads the 512 B sector of its translation page that holds it.
            array.set_map_read_bytes(MAP_SECTOR);
        }
        for b in (0..g.blocks()).map(BlockId) {
            array.set_programmed(b, ftl.written_pages(b));
            array.add_wear(b, ftl.erases(b));
        }
        if layout.pools.is_some() {
            let owner = (0..g.blocks()).map(|b| ftl.pool_of_block(BlockId(b)) as u16).collect();
            array.set_pools(owner, layout.weights.clone());
        }
        let sizer = (layout.pools.is_some() && cfg.ops_interval > SimDuration::ZERO).then(|| {
            let nand = &media.nand;
            let xfer = array.transfer_time(nand.page_size.0);
            Box::new(super::ops::OpsSizer::new(
                cfg.ops_interval,
                cfg.ops_step,
                layout.names.clone(),
                layout.weights.clone(),
                layout.slo_iops.clone(),
                (nand.read_latency[0], nand.program_latency[0], xfer, nand.erase_latency),
                &g,
            ))
        });
        Ok(FlashDevice {
            sizer,
            ops_armed: false,
            tenant_ios: vec![0; layout.names.len()],
            uncached: (!cfg.write_cache).then(Box::default),
            flushes: Vec::new(),
            padded_units: 0,
            ftl,
            array,
            unit,
            integrity: cfg.integrity,
            buffer_units: buffer_parts.clone(),
            buffer_used: vec![0; buffer_parts.len()],
            buffer_latency: cfg.buffer_latency,
            waiting: vec![VecDeque::new(); buffer_parts.len()],
            ops: Vec::new(),
            out: Vec::new(),
            bg_idle: cfg.bg_gc_idle,
            zone_reset_latency: cfg.zone_reset_latency,
            bg_target: cfg.bg_gc_target,
            last_activity: SimTime::ZERO,
            bg_armed: false,
            bg_writes_only: cfg.bg_gc_defer == crate::ftl::BgGcDefer::Writes,
            bg_stopped: false,
            last_erases: 0,
            buffer_hits: 0,
            unmapped_reads: 0,
            page_reads: Vec::new(),
            map_wait: PerCmd::default(),
            map_crit: PerCmd::default(),
            map_ops: Vec::new(),
            loads: Vec::new(),
            loading: FxHashMap::default(),
            spare_waiters: Vec::new(),
            spare_reads: Vec::new(),
            coalesce: cfg.read_coalesce,
            shared: FxHashMap::default(),
            shared_by_piece: FxHashMap::default(),
            coalesced: 0,
            gc_reported: None,
            rmw: PerCmd::default(),
            rmw_reads: 0,
            runs: Runs::default(),
            fold_runs: true,
            ahead: ReadAhead::new(cfg.read_ahead.0, unit, g.slots_per_page),
            precondition: report,
        })
    }

    /// Queues the FTL's flash operations on the array.
    fn submit_ops(&mut self, now: SimTime) {
        for &op in &self.ops {
            self.array.submit_flash(op, now, &mut self.out);
        }
    }

    /// Resets zone `zone`: its units are unmapped and its blocks left to GC; false (the run
    /// fails) if the FTL refuses.
    fn reset_zone(&mut self, ctx: &mut Ctx, zone: u32) -> bool {
        let mut ops = std::mem::take(&mut self.ops);
        ops.clear();
        let reset = self.ftl.reset_zone(zone as usize, &mut |op| ops.push(op));
        self.ops = ops;
        self.submit_ops(ctx.now);
        self.apply(ctx);
        let ok = match reset {
            Ok(dropped) => {
                // The zone's last, partly filled page never reaches the flash.
                self.buffer_used[0] = self.buffer_used[0].saturating_sub(dropped);
                true
            }
            Err(e) => {
                ctx.fail(e);
                false
            }
        };
        self.admit_writes(ctx);
        ok
    }

    /// A trim (Dataset Management, deallocate): the firmware cleared the map entries of the
    /// whole mapping units inside its ranges in its translate step (a unit the range covers
    /// only in part keeps its data: deallocation is advisory). Their pages become invalid, so
    /// GC moves less; nothing reaches the flash, except that with a cached map each changed
    /// translation page is loaded and later written back like a write's (the trim does not
    /// wait for the load: the firmware logs the deallocation).
    fn deallocate(&mut self, ctx: &mut Ctx, id: CmdId) {
        let (now, c) = (ctx.now, &ctx.cmds[id]);
        if self.ftl.zone_geometry().is_some() {
            let why = "a zoned namespace frees space by zone resets, not by Dataset Management deallocate";
            ctx.fail(crate::error::Error::workload("workload", format!("a trim of {} B at byte {}", c.len, c.offset), why));
            return;
        }
        let extents = c.extents();
        let mut ops = std::mem::take(&mut self.ops);
        ops.clear();
        for (offset, len) in extents {
            for lpn in (offset.div_ceil(self.unit)..(offset + len) / self.unit).map(Lpn) {
                self.ahead.written(lpn);
                self.ftl.deallocate(lpn, &mut |op| ops.push(op));
            }
        }
        self.ops = ops;
        self.submit_ops(now);
        self.apply(ctx);
        ctx.at(now, Out::Done { cmd: id });
    }

    /// Makes read `id` wait for the translation page of `lpn`: the load under way, else a new
    /// one. `loads` counts the loads the read waits for.
    fn wait_for_map(&mut self, id: CmdId, lpn: u64, now: SimTime, loads: &mut u32) {
        let Some(tpage) = self.ftl.map_page(Lpn(lpn)) else { return };
        let token = if let Some(&t) = self.loading.get(&tpage) {
            t
        } else {
            let t = self.loads.iter().position(Option::is_none).unwrap_or_else(|| {
                self.loads.push(None);
                self.loads.len() - 1
            }) as u32;
            let waiters = self.spare_waiters.pop().unwrap_or_default();
            self.loads[t as usize] = Some(Loading { tpage, waiters });
            self.loading.insert(tpage, t);
            self.array.submit_map_load(t, tpage, now, &mut self.out);
            t
        };
        if let Some(l) = &mut self.loads[token as usize] {
            if !l.waiters.contains(&id) {
                l.waiters.push(id);
                *loads += 1;
            }
        }
    }

    /// Reads units `lpns` ahead, one page read per run of units that share a page (units read
    /// ahead already, unwritten, or still in the write buffer are skipped).
    fn read_ahead(&mut self, lpns: std::ops::Range<u64>, now: SimTime) {
        // The open run: block, page, and its units.
        let mut run: Option<(BlockId, u32, std::ops::Range<u64>)> = None;
        for lpn in lpns {
            let place = if self.ahead.has(lpn) { None } else { self.ftl.lookup(Lpn(lpn)).map(|slot| self.ftl.locate(slot)).filter(|&(b, p)| self.array.is_programmed(b, p)) };
            match (place, &mut run) {
                (Some((b, p)), Some((rb, rp, units))) if *rb == b && *rp == p && units.end == lpn => units.end += 1,
                _ => {
                    if let Some(r) = run.take() {
                        self.issue_read_ahead(r, now);
                    }
                    run = place.map(|(b, p)| (b, p, lpn..lpn + 1));
                }
            }
        }
        if let Some(r) = run {
            self.issue_read_ahead(r, now);
        }
    }

    fn issue_read_ahead(&mut self, (block, page, units): (BlockId, u32, std::ops::Range<u64>), now: SimTime) {
        let bytes = ((units.end - units.start) * self.unit) as u32;
        let token = self.ahead.start(units);
        self.array.submit_prefetch(token, block, page, bytes, now, &mut self.out);
    }

    /// Acts on what the NAND array reported.
    fn apply(&mut self, ctx: &mut Ctx) {
        let mut freed = false;
        // Outputs may submit more work (reads after their map loads): its outputs join the
        // list behind them and are handled in turn, in the order they came. (By index, in
        // place: `apply_one` only adds to the list. Moved out and back through the stack, the
        // list's header was reloaded over the narrower stores that had just written it, a
        // stall the store buffer does not forward.)
        let mut i = 0;
        while let Some(&o) = self.out.get(i) {
            i += 1;
            freed |= self.apply_one(ctx, o);
        }
        self.out.clear();
        if !self.flushes.is_empty() {
            self.flushes_progress(ctx);
        }
        if freed {
            self.admit_writes(ctx);
        }
    }

    /// Acts on one output of the array; true if it freed write-buffer space.
    fn apply_one(&mut self, ctx: &mut Ctx, o: nand::Output) -> bool {
        match o {
            nand::Output::At(t, e) => ctx.at(t, Out::Wake(Event::Nand(e))),
            nand::Output::ReadReady { cmd, .. } if self.rmw.contains(cmd) => return self.merged(ctx, cmd),
            nand::Output::ReadReady { cmd, bytes, at, service, gc } => {
                ctx.cmds[cmd].crit_map = SimDuration::ZERO;
                if let Some((map, left)) = self.map_crit.get_mut(cmd) {
                    ctx.cmds[cmd].crit_map = *map;
                    *left -= 1;
                    if *left == 0 {
                        self.map_crit.remove(cmd);
                    }
                }
                ctx.cmds[cmd].crit_media = service;
                ctx.cmds[cmd].crit_gc = gc;
                ctx.at(ctx.now, Out::Data { cmd, len: bytes, at });
                if let Some(s) = self.shared_by_piece.remove(&(cmd, at)).and_then(|key| self.shared.remove(&key)) {
                    self.buffered(ctx, &s.joined);
                }
            }
            nand::Output::Prefetched { token } => {
                let landed = self.ahead.landed(token);
                self.buffered(ctx, &landed);
            }
            nand::Output::MapLoaded { token } => {
                let Some(l) = self.loads.get_mut(token as usize).and_then(Option::take) else { return false };
                self.loading.remove(&l.tpage);
                let mut waiters = l.waiters;
                for &cmd in &waiters {
                    let Some(w) = self.map_wait.get_mut(cmd) else { continue };
                    w.loads -= 1;
                    if w.loads == 0 {
                        let w = self.map_wait.remove(cmd).unwrap_or_else(|| unreachable!("just found"));
                        self.map_crit.insert(cmd, (ctx.now.since(w.since), w.reads.len()));
                        self.array.submit_reads(cmd, w.reads.iter().map(|r| (r.block, r.page, r.bytes, r.at)), ctx.now, &mut self.out);
                        let mut reads = w.reads;
                        reads.clear();
                        self.spare_reads.push(reads);
                    }
                }
                waiters.clear();
                self.spare_waiters.push(waiters);
            }
            nand::Output::Programmed { block, page, units } => {
                if let Some(u) = self.uncached.as_mut() {
                    // Writes whose last page this was complete now: their media time ends here.
                    for id in u.by_page.remove(&(block.0, page)).unwrap_or_default() {
                        let left = u.pending.get_mut(id).map_or(0, |n| {
                            *n -= 1;
                            *n
                        });
                        if left == 0 {
                            u.pending.remove(id);
                            ctx.cmds[id].account(Component::Media, ctx.now);
                            ctx.at(ctx.now, Out::Done { cmd: id });
                        }
                    }
                }
                let part = if self.buffer_used.len() == 1 { 0 } else { self.ftl.pool_of_block(block) };
                self.buffer_used[part] = self.buffer_used[part].saturating_sub(u64::from(units));
                return true;
            }
        }
        false
    }
}

impl Medium for FlashDevice {
    type Event = Event;

    fn pieces(&self, offset: u64, len: u64) -> u64 {
        div_rem(offset + len - 1, self.unit).0 - div_rem(offset, self.unit).0 + 1
    }

    fn start(&mut self, ctx: &mut Ctx) {
        ctx.probe.record(ctx.now, Record::Reclaimed { erases: 0, free_blocks: self.precondition.free_blocks });
        self.arm_ops(ctx);
        if self.bg_writes_only {
            // Reads do not defer it: it may start before the first write.
            let bg = self.note_activity(ctx.now);
            Self::arm_background_gc(ctx, bg);
        }
    }

    /// Sends each unit of a read to the flash, the write buffer, or (unmapped) straight back.
    /// Units that lie next to each other in one flash page are one page read: one tR senses
    /// the page, and their bytes come out over the channel together.
    fn read(&mut self, ctx: &mut Ctx, id: CmdId, _xfer: &mut Transfer) {
        let now = ctx.now;
        let (offset, len) = (ctx.cmds[id].offset, ctx.cmds[id].len);
        let bg = if self.bg_writes_only { None } else { self.note_activity(now) };
        if let Some(n) = self.tenant_ios.get_mut(ctx.cmds[id].tenant.index()) {
            *n += 1;
        }
        self.arm_ops(ctx);
        let end = offset + len;
        let mut at = offset;
        let mut reads = std::mem::take(&mut self.page_reads);
        reads.clear();
        let mut immediate: Vec<(u32, u32, Served)> = Vec::new();
        let mut waiting = 0;
        let mut map_ops = std::mem::take(&mut self.map_ops);
        map_ops.clear();
        let mut loads = 0u32;
        while at < end {
            let lpn = div_rem(at, self.unit).0;
            let next = ((lpn + 1) * self.unit).min(end);
            let bytes = (next - at) as u32;
            let within = (at - offset) as u32;
            if self.integrity {
                self.ftl.check_read(Lpn(lpn));
            }
            let ahead = if self.ahead.enabled() { self.ahead.lookup(Lpn(lpn), id, bytes, within) } else { Lookup::Miss };
            match (ahead, self.ftl.lookup(Lpn(lpn))) {
                (Lookup::Hit, _) => immediate.push((bytes, within, Served::ReadAhead)),
                (Lookup::Waiting, _) => waiting += 1,
                (Lookup::Miss, None) => immediate.push((bytes, within, Served::Zeroes)),
                (Lookup::Miss, Some(slot)) => {
                    let (block, page) = self.ftl.locate(slot);
                    if !self.array.is_programmed(block, page) {
                        immediate.push((bytes, within, Served::WriteBuffer));
                        at = next;
                        continue;
                    }
                    if let Some(s) = self.shared.get_mut(&(block.0, page)).filter(|s| s.bytes.start <= at && next <= s.bytes.end) {
                        // Another host read is bringing these bytes: wait for it.
                        s.joined.push((id, bytes, within));
                        self.coalesced += 1;
                        waiting += 1;
                        at = next;
                        continue;
                    }
                    // To the flash: the controller needs the unit's map entry first.
                    if !self.ftl.translate(Lpn(lpn), &mut |op| map_ops.push(op)) || self.ftl.map_page(Lpn(lpn)).is_some_and(|t| self.loading.contains_key(&t)) {
                        self.wait_for_map(id, lpn, now, &mut loads);
                    }
                    if let Some(r) = reads.last_mut().filter(|r| r.block == block && r.page == page && r.at + r.bytes == within) {
                        r.bytes += bytes;
                    } else {
                        reads.push(PageRead { block, page, bytes, at: within });
                    }
                }
            }
            at = next;
        }
        ctx.cmds[id].pieces_left = (reads.len() + immediate.len() + waiting) as u64;
        // Map cache write-backs (and their merge reads) go to the dies; the loads were queued
        // by `wait_for_map`, and the page reads wait for them.
        for &op in &map_ops {
            if matches!(op, FlashOp::MapWrite { .. } | FlashOp::MapMerge { .. }) {
                self.array.submit_flash(op, now, &mut self.out);
            }
        }
        self.map_ops = map_ops;
        if self.coalesce {
            for r in &reads {
                let start = offset + u64::from(r.at);
                if let std::collections::hash_map::Entry::Vacant(e) = self.shared.entry((r.block.0, r.page)) {
                    e.insert(SharedRead { bytes: start..start + u64::from(r.bytes), joined: Vec::new() });
                    self.shared_by_piece.insert((id, r.at), (r.block.0, r.page));
                }
            }
        }
        if loads > 0 {
            let mut parked = self.spare_reads.pop().unwrap_or_default();
            parked.extend_from_slice(&reads);
            self.map_wait.insert(id, MapWait { loads, since: now, reads: parked });
        } else {
            self.array.submit_reads(id, reads.iter().map(|r| (r.block, r.page, r.bytes, r.at)), now, &mut self.out);
        }
        self.page_reads = reads;
        if let Some(lpns) = self.ahead.on_read(ctx.cmds[id].job, offset, len, self.unit) {
            self.read_ahead(lpns, now);
        }
        self.serve_at_once(ctx, id, immediate);
        self.apply(ctx);
        Self::arm_background_gc(ctx, bg);
    }

    /// Write data has arrived: into the write buffer if there is room, else wait for it.
    fn write(&mut self, ctx: &mut Ctx, id: CmdId) {
        match ctx.cmds[id].kind {
            crate::io::Kind::Deallocate => return self.deallocate(ctx, id),
            crate::io::Kind::Flush => return self.flush(ctx, id),
            crate::io::Kind::ZoneReset => {
                // Done once the controller has updated the zone's state (the reset latency).
                let zone = self.ftl.zone_geometry().map_or(0, |(_, units)| ctx.cmds[id].offset / self.unit / units.max(1));
                if self.reset_zone(ctx, zone as u32) {
                    let (now, latency) = (ctx.now, self.zone_reset_latency);
                    ctx.cmds[id].account(Component::Media, now + latency);
                    ctx.at(now + latency, Out::Done { cmd: id });
                }
                return;
            }
            _ => {}
        }
        if ctx.cmds[id].kind.deallocates() {
            // Write Zeroes or Write Uncorrectable: the controller unmaps the blocks (reads of
            // them return zeroes); nothing reaches the flash.
            let (now, c) = (ctx.now, &ctx.cmds[id]);
            let first = div_rem(c.offset, self.unit).0;
            for lpn in first..first + c.pieces {
                self.ahead.written(Lpn(lpn));
                self.ftl.trim(Lpn(lpn));
            }
            let c = &mut ctx.cmds[id];
            c.account(Component::Media, now + self.buffer_latency);
            ctx.at(now + self.buffer_latency, Out::Done { cmd: id });
            return;
        }
        let bg = self.note_activity(ctx.now);
        self.arm_ops(ctx);
        if self.read_modify_write(ctx, id) {
            Self::arm_background_gc(ctx, bg);
            return;
        }
        self.enqueue_write(ctx, id);
        Self::arm_background_gc(ctx, bg);
        self.admit_writes(ctx);
        self.report_gc(ctx);
    }

    fn charge_gc(&mut self) {
        self.gc_reported = Some(self.ftl.counters().gc_writes);
    }

    fn host_done(&mut self) {
        self.bg_stopped = true;
    }

    fn handle(&mut self, ctx: &mut Ctx, ev: Event, _xfer: &mut Transfer) {
        self.handle_event(ctx, ev);
        self.report_gc(ctx);
    }

    fn publish(&self, m: &mut Metrics) {
        self.publish_metrics(m);
    }

    fn utilisation(&self, m: &Metrics, window: SimDuration) -> (f64, f64) {
        let t = window.as_ps().max(1) as f64;
        let mean = |v: Vec<u64>| v.iter().map(|&b| b as f64).sum::<f64>() / t / v.len() as f64;
        (mean(m.ints(&NAND_DIES_BUSY)), mean(m.ints(&NAND_CHANNELS_BUSY)))
    }
}

impl FlashDevice {
    fn handle_event(&mut self, ctx: &mut Ctx, ev: Event) {
        match ev {
            Event::Buffered { cmd, len, at } => self.buffered_ready(ctx, cmd, len, at),
            Event::BufferedRun { run } => {
                let pieces = self.runs.take(run);
                for &(cmd, len, at) in &pieces {
                    self.buffered_ready(ctx, cmd, len, at);
                }
                self.runs.put_back(run, pieces);
            }
            Event::BackgroundGc => self.background_gc(ctx),
            Event::OpsResize => self.resize_ops(ctx),
            Event::Nand(e) => {
                self.array.handle(e, ctx.now, &mut self.out);
                self.apply(ctx);
            }
        }
    }

    /// Serves the pieces of read `id` that need no flash read: zeroes at once, the rest from
    /// DRAM (the write buffer, read-ahead) after the buffer's latency, in one run.
    fn serve_at_once(&mut self, ctx: &mut Ctx, id: CmdId, pieces: Vec<(u32, u32, Served)>) {
        let mut run = Vec::new();
        for (bytes, within, served) in pieces {
            if served == Served::Zeroes {
                // The pieces before go first, as they were written.
                self.buffered(ctx, &run);
                run.clear();
                // Never written: the controller returns zeroes without touching the flash.
                self.unmapped_reads += 1;
                ctx.cmds[id].crit_media = SimDuration::ZERO;
                ctx.cmds[id].crit_gc = SimDuration::ZERO;
                ctx.cmds[id].crit_map = SimDuration::ZERO;
                ctx.at(ctx.now, Out::Data { cmd: id, len: bytes, at: within });
                continue;
            }
            if served == Served::WriteBuffer {
                self.buffer_hits += 1;
            }
            run.push((id, bytes, within));
        }
        self.buffered(ctx, &run);
    }

    /// Schedules `pieces` of reads (`(cmd, bytes, byte of the command)`, in order), which
    /// leave DRAM after the buffer's latency: one event for one piece, one run for more.
    /// Events scheduled one after another for the same instant run one after another, with
    /// nothing between them, so a run handled in one event hands its pieces to the link
    /// exactly as they would have gone one event each.
    fn buffered(&mut self, ctx: &mut Ctx, pieces: &[(CmdId, u32, u32)]) {
        let t = ctx.now + self.buffer_latency;
        if pieces.len() > 1 && self.fold_runs {
            let run = self.runs.start(pieces.iter().copied());
            ctx.at(t, Out::Wake(Event::BufferedRun { run }));
        } else {
            for &(cmd, len, at) in pieces {
                ctx.at(t, Out::Wake(Event::Buffered { cmd, len, at }));
            }
        }
    }

    /// One event per piece of a read from DRAM, not one per run: the same results, more
    /// events (for tests that check so).
    pub fn unfold_runs(&mut self) {
        self.fold_runs = false;
    }

    /// A piece of a read served from DRAM is ready: it goes to the link.
    fn buffered_ready(&mut self, ctx: &mut Ctx, cmd: CmdId, len: u32, at: u32) {
        ctx.cmds[cmd].crit_media = self.buffer_latency;
        ctx.cmds[cmd].crit_gc = SimDuration::ZERO;
        ctx.cmds[cmd].crit_map = SimDuration::ZERO;
        ctx.at(ctx.now, Out::Data { cmd, len, at });
    }

    /// Reports the units GC moved since the last report, when the controller charges them.
    #[inline]
    fn report_gc(&mut self, ctx: &mut Ctx) {
        if let Some(seen) = self.gc_reported {
            let now = self.ftl.counters().gc_writes;
            if now > seen {
                ctx.at(ctx.now, Out::Firmware { units: now - seen });
                self.gc_reported = Some(now);
            }
        }
    }
}
