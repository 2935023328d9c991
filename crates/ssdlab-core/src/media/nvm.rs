//! Byte-addressable non-volatile memory (PCM, MRAM, 3D XPoint, DRAM) as memory controllers
//! with banks, on an interconnect, interleaved by chunk.
//!
//! Chunk `k` of the device lives on controller `k mod d` of its group (`d` = interleaving
//! degree; each group of `d` controllers holds its own contiguous part of the capacity) and on
//! bank `(k / d) mod banks` there. An access is cut at chunk boundaries; each piece occupies its
//! bank (FIFO) for a whole-chunk access whatever its size, and a write of part of a chunk reads
//! and writes it (read-modify-write). Pieces cross the interconnect: one shared bus, a shared
//! ring with per-hop latency, or a crossbar port per controller. Start-gap wear levelling moves
//! the gap (one chunk read and written) every ψ writes to a controller.
//!
//! A read moves whole ECC codewords (`media.ecc.codeword`, at most the chunk) over the
//! interconnect, because the decoder sits in the controller: a piece of part of a codeword
//! costs the codeword's transfer. With `media.nvm.cut_through`, the bank streams its whole
//! chunk out and each codeword of it the read needs goes on to the host link once it has
//! crossed (a read that needs soft decoding waits for its whole piece; the controller's
//! transfer engine, `ctrl.transfer_window`, holds a piece's place until its last part leaves).
//!
//! A bank may hold partitions (`media.nvm.partitions`) that share its access path, and a
//! partition may need time to recover after a read (`media.nvm.read_recovery`) before it is
//! read again. The read's data does not wait for the recovery and the bank serves other
//! partitions meanwhile, so a lone read does not see it, and reads of one chunk back to back
//! do. A read waiting for its partition does not queue at the bank: it takes the bank once the
//! partition has recovered, and reads of other partitions go ahead of it meanwhile.
//!
//! What emerges rather than being coded per workload: sub-chunk accesses cost whole chunks,
//! unaligned accesses touch two chunks, concurrent accesses to one chunk serialise at its bank,
//! bandwidth saturates at the interleaving degree, reads and writes contend for banks.
//!
//! A chunk read whose codeword exceeds the hard decoder's limit takes the soft-decoding path
//! on its way to the link ([`super::ecc`]), the source of read tails at low load.
//!
//! With a write buffer (`media.nvm.write_buffer`, power-loss protected), a write completes
//! once its data has arrived and holds one slot per chunk until that chunk's media write ends;
//! the media writes still take the interconnect and the banks, so they contend with reads
//! behind the host's back. A write that finds too few free slots waits, in arrival order.
//!
//! Leaves out: reads served from the write buffer (a read of a chunk still waiting there goes
//! to its bank like any other), row-buffer hits (every access is a full chunk access), refresh, bank
//! conflicts inside a controller's scheduler (banks are FIFO), a partition's recovery after a write.

use super::ecc::Ecc;
use std::collections::VecDeque;

use super::metrics::{MEDIA_BUS_BUSY, MEDIA_BUS_UNITS, MEDIA_ECC_DECODER_WAIT, MEDIA_ECC_SOFT_DECODES, MEDIA_UNITS, MEDIA_UNITS_BUSY, NVM_BUFFER_WAITS, NVM_START_GAP_MOVES};
use super::{Interconnect, MediaConfig, Medium, Out};
use crate::ctrl::transfer::Transfer;
use crate::ids::CmdId;
use crate::io::Kind;
use crate::sim::{div_rem, ByteRate, Grant, SimDuration, SimTime, Timeline};
use crate::stats::{Component, Metrics};

/// The most codewords per chunk whose crossing times are kept in a table (256 with 512-byte
/// codewords in a 128 KiB chunk); larger chunks work each out as it streams.
const CODEWORD_TABLE: u64 = 256;

/// The array's view of the simulation while it handles an input.
type Ctx<'a> = super::Ctx<'a, Event>;

/// A piece of an access that falls within one chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Bank index over the whole array (`controller * banks + bank`).
    pub unit: u32,
    pub len: u32,
    /// The piece covers only part of its chunk.
    pub partial: bool,
}

/// Write-buffer slots (chunks; 0 = no buffer), those in use, the writes waiting for slots (in
/// arrival order) and how many writes waited.
#[derive(Debug, Default)]
struct WriteBuffer {
    slots: u32,
    used: u32,
    waiters: VecDeque<CmdId>,
    waits: u64,
}

/// The NVM array.
pub struct NvmArray {
    banks: Vec<Timeline>,
    banks_per_controller: u32,
    controllers: u32,
    degree: u64,
    group_bytes: u64,
    chunk: u64,
    /// Bytes a read moves to the controller's ECC decoder at least: the codeword, at most the
    /// chunk.
    codeword: u64,
    /// Codewords go on to the link one by one (`media.nvm.cut_through`).
    cut_through: bool,
    read_latency: SimDuration,
    write_latency: SimDuration,
    /// Partitions that recover after reads (`None` without recovery; boxed: it keeps the
    /// media enum's variants of similar size).
    parts: Option<Box<Partitions>>,
    interconnect: Interconnect,
    links: Vec<Timeline>,
    bus_rate: ByteRate,
    /// With cut-through, how long after a chunk starts to stream each of its codewords has
    /// crossed ([`NvmArray::bus_time`] of its end), worked out once; empty when a chunk holds
    /// more than [`CODEWORD_TABLE`] of them (then each is worked out as it streams).
    cw_crossed: Vec<SimDuration>,
    hop_latency: SimDuration,
    gap_interval: u32,
    /// Per controller: writes since its gap last moved, and the bank the gap moves on next.
    gap: Vec<(u32, u32)>,
    /// Start-gap moves done.
    pub gap_moves: u64,
    /// The write buffer (boxed: it keeps the media enum's variants of similar size).
    buffer: Box<WriteBuffer>,
    /// Which chunk reads need soft-decision decoding (boxed: rarely touched, and it keeps the
    /// media enum's variants of similar size).
    ecc: Box<Ecc>,
}

impl NvmArray {
    pub fn new(c: &MediaConfig, seed: u64) -> Self {
        let n = &c.nvm;
        let degree = if n.interleave == 0 { n.controllers } else { n.interleave };
        let groups = u64::from(n.controllers / degree.max(1)).max(1);
        let mut a = NvmArray {
            banks: vec![Timeline::default(); (n.controllers * n.banks) as usize],
            banks_per_controller: n.banks,
            controllers: n.controllers,
            degree: u64::from(degree.max(1)),
            group_bytes: c.capacity.0.div_ceil(groups).max(n.chunk.0),
            chunk: n.chunk.0,
            codeword: c.ecc.codeword.0.min(n.chunk.0).max(1),
            cut_through: n.cut_through,
            read_latency: n.read_latency,
            write_latency: n.write_latency,
            parts: (n.read_recovery > SimDuration::ZERO).then(|| {
                Box::new(Partitions { per_bank: u64::from(n.partitions.max(1)), recovery: n.read_recovery, free: vec![SimTime(0); (n.controllers * n.banks * n.partitions.max(1)) as usize] })
            }),
            interconnect: n.interconnect,
            links: vec![Timeline::default(); if n.interconnect == Interconnect::Crossbar { n.controllers as usize } else { 1 }],
            bus_rate: ByteRate::new(1e12 / n.bus_bandwidth.0),
            hop_latency: n.hop_latency,
            gap_interval: n.start_gap_interval,
            gap: vec![(0, 0); n.controllers as usize],
            gap_moves: 0,
            buffer: Box::new(WriteBuffer { slots: (n.write_buffer.0 / n.chunk.0.max(1)) as u32, ..WriteBuffer::default() }),
            ecc: Box::new(Ecc::new(&c.ecc, seed)),
            cw_crossed: Vec::new(),
        };
        let codewords = a.chunk.div_ceil(a.codeword);
        if a.cut_through && codewords <= CODEWORD_TABLE {
            a.cw_crossed = (1..=codewords).map(|k| a.bus_time((k * a.codeword).min(a.chunk))).collect();
        }
        a
    }

    /// Controller and bank of the chunk holding byte `addr`.
    #[inline]
    fn place(&self, addr: u64) -> (u32, u32) {
        let (group, within) = div_rem(addr, self.group_bytes);
        let k = div_rem(within, self.chunk).0;
        let (k_hi, k_lo) = div_rem(k, self.degree);
        let controller = group * self.degree + k_lo;
        let bank = div_rem(k_hi, u64::from(self.banks_per_controller)).1;
        (controller as u32, bank as u32)
    }

    /// Index over the whole array of the partition of bank `unit` that holds byte `addr`.
    #[inline]
    fn partition(&self, per_bank: u64, unit: u32, addr: u64) -> usize {
        let k = div_rem(div_rem(addr, self.group_bytes).1, self.chunk).0;
        let within = div_rem(div_rem(k, self.degree * u64::from(self.banks_per_controller)).0, per_bank).1;
        (u64::from(unit) * per_bank + within) as usize
    }

    /// When the partition of bank `unit` holding byte `addr` can next be read (`None` without
    /// recovery).
    #[inline]
    fn partition_free(&self, unit: u32, addr: u64) -> Option<SimTime> {
        let p = self.parts.as_ref()?;
        Some(p.free[self.partition(p.per_bank, unit, addr)])
    }

    /// Cuts `[offset, offset + len)` into per-chunk pieces, in address order.
    pub fn cut(&self, offset: u64, len: u64) -> impl Iterator<Item = Piece> + '_ {
        let end = offset + len;
        let mut at = offset;
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let next = ((div_rem(at, self.chunk).0 + 1) * self.chunk).min(end);
            let (c, b) = self.place(at);
            let piece = Piece { unit: c * self.banks_per_controller + b, len: (next - at) as u32, partial: next - at < self.chunk };
            at = next;
            Some(piece)
        })
    }

    /// Number of pieces an access is cut into.
    pub fn piece_count(&self, offset: u64, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        div_rem(offset + len - 1, self.chunk).0 - div_rem(offset, self.chunk).0 + 1
    }

    /// Occupies bank `unit` for a chunk read, or a write (read-modify-write if `partial`); every
    /// `start_gap_interval` writes to a controller the gap moves on it too.
    #[inline]
    pub fn access(&mut self, unit: u32, now: SimTime, write: bool, partial: bool) -> Grant {
        let t = self.access_time(write, partial);
        let g = self.banks[unit as usize].reserve(now, t);
        if write && self.gap_interval > 0 {
            let c = (unit / self.banks_per_controller) as usize;
            let (writes, next) = &mut self.gap[c];
            *writes += 1;
            if *writes >= self.gap_interval {
                *writes = 0;
                // The gap line moves: its neighbour is read and written into it.
                let bank = c as u32 * self.banks_per_controller + *next;
                *next = (*next + 1) % self.banks_per_controller;
                let t = self.read_latency + self.write_latency;
                self.banks[bank as usize].reserve(now, t);
                self.gap_moves += 1;
            }
        }
        g
    }

    /// Time a bank is busy for one access.
    pub fn access_time(&self, write: bool, partial: bool) -> SimDuration {
        match (write, partial) {
            (false, _) => self.read_latency,
            (true, false) => self.write_latency,
            (true, true) => self.read_latency + self.write_latency,
        }
    }

    /// Time `len` bytes take on the interconnect, without hop latency.
    pub fn bus_time(&self, len: u64) -> SimDuration {
        self.bus_rate.time(len)
    }

    /// Hop latency between the host interface and bank `unit`'s controller.
    pub fn hops(&self, unit: u32) -> SimDuration {
        if self.interconnect != Interconnect::Ring {
            return SimDuration::ZERO;
        }
        let c = u64::from(unit / self.banks_per_controller);
        let n = u64::from(self.controllers);
        self.hop_latency * (c + 1).min(n - c)
    }

    /// Moves `len` bytes between bank `unit`'s controller and the host interface. The grant
    /// ends when the data has arrived (serialisation, then the ring's hops).
    #[inline]
    pub fn transfer(&mut self, unit: u32, now: SimTime, len: u64) -> Grant {
        let link = if self.interconnect == Interconnect::Crossbar { (unit / self.banks_per_controller) as usize } else { 0 };
        let t = self.bus_time(len);
        let hops = self.hops(unit);
        let g = self.links[link].reserve(now, t);
        Grant { start: g.start, end: g.end + hops, wait: g.wait }
    }

    /// Busy time summed over banks, and of the interconnect links.
    pub fn busy(&self) -> (SimDuration, SimDuration) {
        (self.banks.iter().fold(SimDuration::ZERO, |a, u| a + u.busy()), self.links.iter().fold(SimDuration::ZERO, |a, u| a + u.busy()))
    }

    /// Banks over the whole array.
    pub fn unit_count(&self) -> usize {
        self.banks.len()
    }

    /// Interconnect links (1, or one per controller for a crossbar).
    pub fn link_count(&self) -> usize {
        self.links.len()
    }
}

#[cfg(test)]
#[allow(clippy::many_single_char_names)]
mod tests {
    use super::*;
    use crate::media::NvmConfig;
    use crate::units::Bytes;

    #[test]
    fn pieces_split_at_chunks_and_interleave_over_controllers_and_banks() {
        let c = MediaConfig { nvm: NvmConfig { controllers: 4, banks: 2, chunk: Bytes(4096), ..NvmConfig::default() }, capacity: Bytes(1 << 30), ..MediaConfig::default() };
        let m = NvmArray::new(&c, 1);
        let p: Vec<Piece> = m.cut(4096 * 3 + 512, 8192).collect();
        // Chunks 3, 4, 5: controllers 3, 0, 1; banks 0, 1, 1.
        assert_eq!(p, vec![Piece { unit: 6, len: 3584, partial: true }, Piece { unit: 1, len: 4096, partial: false }, Piece { unit: 3, len: 512, partial: true }]);
        assert_eq!(m.piece_count(4096 * 3 + 512, 8192), 3);
        // Degree 2: the first half of the capacity lives on controllers 0-1, the second on 2-3.
        let c2 = MediaConfig { nvm: NvmConfig { controllers: 4, interleave: 2, ..NvmConfig::default() }, capacity: Bytes(1 << 30), ..MediaConfig::default() };
        let m2 = NvmArray::new(&c2, 1);
        let units: Vec<u32> = (0..4).map(|k| m2.cut(k * 4096, 4096).next().unwrap().unit).collect();
        assert_eq!(units, vec![0, 1, 0, 1]);
        assert_eq!(m2.cut(1 << 29, 4096).next().unwrap().unit, 2);
    }

    #[test]
    fn banks_are_fifo_partial_writes_read_modify_write_and_rings_add_hops() {
        let c = MediaConfig { nvm: NvmConfig { interconnect: Interconnect::Ring, controllers: 8, hop_latency: SimDuration::from_ns(10), ..NvmConfig::default() }, ..MediaConfig::default() };
        let mut m = NvmArray::new(&c, 1);
        let a = m.access(0, SimTime(0), false, true);
        let b = m.access(0, SimTime(0), false, false);
        assert_eq!((a.end, b.start), (SimTime(48_000), a.end), "sub-chunk reads still take a whole access");
        assert_eq!(m.access(1, SimTime(0), true, true).end, SimTime(198_000), "read-modify-write");
        assert_eq!(m.access(2, SimTime(0), true, false).end, SimTime(150_000));
        assert_eq!(m.hops(0), SimDuration::from_ns(10));
        assert_eq!(m.hops(7), SimDuration::from_ns(10));
        assert_eq!(m.hops(4), SimDuration::from_ns(40));
        let g = m.transfer(4, SimTime(0), 4096);
        assert_eq!(g.end, SimTime(256_000 + 40_000));
    }

    #[test]
    fn codewords_cross_when_the_bus_has_carried_them() {
        use crate::media::ecc::EccConfig;
        let cfg = |chunk: u64, codeword: u64| MediaConfig {
            nvm: NvmConfig { chunk: Bytes(chunk), cut_through: true, bus_bandwidth: crate::units::Bandwidth(1.5e9), ..NvmConfig::default() },
            ecc: EccConfig { codeword: Bytes(codeword), ..EccConfig::default() },
            ..MediaConfig::default()
        };
        // 4 KiB in 512-byte codewords (the P4800X's layout); a chunk that is no whole number of
        // codewords ends with a short one.
        for (chunk, codeword) in [(4096, 512), (3072, 2048), (65536, 512)] {
            let m = NvmArray::new(&cfg(chunk, codeword), 1);
            let ends: Vec<u64> = (1..=chunk.div_ceil(codeword)).map(|k| (k * codeword).min(chunk)).collect();
            assert_eq!(m.cw_crossed, ends.iter().map(|&e| SimDuration::from_ps((e as f64 * 1e12 / 1.5e9).round() as u64)).collect::<Vec<_>>());
        }
        assert!(NvmArray::new(&cfg(256 << 10, 512), 1).cw_crossed.is_empty(), "512 codewords: worked out as they stream");
        assert!(NvmArray::new(&MediaConfig::default(), 1).cw_crossed.is_empty(), "store and forward needs no table");
    }

    #[test]
    fn start_gap_moves_cost_bank_time() {
        let c = MediaConfig { nvm: NvmConfig { controllers: 1, start_gap_interval: 4, ..NvmConfig::default() }, ..MediaConfig::default() };
        let mut m = NvmArray::new(&c, 1);
        for _ in 0..8 {
            m.access(0, SimTime(0), true, false);
        }
        assert_eq!(m.gap_moves, 2);
        assert_eq!(m.busy().0, SimDuration::from_ns(8 * 150 + 2 * (48 + 150)));
    }
}

/// Partitions per bank, each one's recovery after a read, and when each can next be read.
struct Partitions {
    per_bank: u64,
    recovery: SimDuration,
    free: Vec<SimTime>,
}

/// NVM array events.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A read piece's partition has recovered: the piece takes its bank.
    ReadPart { cmd: CmdId, unit: u32, len: u32, at: u32 },
    /// A read piece leaves its unit for the internal bus.
    ReadBus { cmd: CmdId, unit: u32, len: u32, at: u32 },
    /// A write piece reaches its unit.
    WriteUnit { cmd: CmdId, unit: u32, len: u32 },
    /// A buffered write piece reaches its unit (its command is already done).
    FlushUnit { unit: u32, len: u32 },
    /// A buffered piece is written: its slot frees.
    SlotFree,
}

impl NvmArray {
    /// Starts the piece of `cmd` that begins at byte `at`: occupies its bank, then the bus.
    #[inline]
    fn start_piece(&mut self, ctx: &mut Ctx, cmd: CmdId, at: u32) -> Option<u32> {
        let c = &ctx.cmds[cmd];
        let addr = c.offset + u64::from(at);
        let piece = self.cut(addr, c.len - u64::from(at)).next()?;
        if let Some(free) = self.partition_free(piece.unit, addr) {
            // The read waits for its partition to recover before it takes the bank, which
            // serves other partitions meanwhile.
            if free > ctx.now {
                ctx.at(free, Out::Wake(Event::ReadPart { cmd, unit: piece.unit, len: piece.len, at }));
                return Some(piece.len);
            }
        }
        self.read_unit(ctx, cmd, piece.unit, piece.len, at);
        Some(piece.len)
    }

    /// A read piece takes its bank (its partition, if they recover, is free now), then the bus.
    fn read_unit(&mut self, ctx: &mut Ctx, cmd: CmdId, unit: u32, len: u32, at: u32) {
        let g = self.access(unit, ctx.now, false, u64::from(len) < self.chunk);
        if let Some(per_bank) = self.parts.as_ref().map(|p| p.per_bank) {
            // The partition recovers once the access is done.
            let i = self.partition(per_bank, unit, ctx.cmds[cmd].offset + u64::from(at));
            if let Some(p) = self.parts.as_mut() {
                p.free[i] = g.end + p.recovery;
            }
        }
        ctx.at(g.end, Out::Wake(Event::ReadBus { cmd, unit, len, at }));
    }

    /// A write piece reached its bank: it is written (read-modify-write for part of a chunk);
    /// the command's last piece to finish sets its media time.
    fn write_unit(&mut self, ctx: &mut Ctx, id: CmdId, unit: u32, len: u32) {
        let chunk = self.chunk;
        let g = self.access(unit, ctx.now, true, u64::from(len) < chunk);
        // Bus (with the ring's hops), then the bank.
        let media_time = |m: &NvmArray, l: u64| m.bus_time(l) + m.hops(unit) + m.access_time(true, l < chunk);
        let c = &mut ctx.cmds[id];
        if g.end >= c.crit_end {
            c.crit_end = g.end;
            c.crit_len = u64::from(len);
        }
        c.pieces_left -= 1;
        if c.pieces_left == 0 {
            let crit_media = media_time(self, c.crit_len);
            let end = c.crit_end;
            let elapsed = end.since(c.mark);
            c.add(Component::Media, crit_media);
            c.add(Component::Queueing, elapsed - crit_media);
            c.mark = end;
            ctx.at(end, Out::Done { cmd: id });
        }
    }
}

impl NvmArray {
    /// Cut-through: bank `unit` streams its whole chunk onto the interconnect from `start`,
    /// and each codeword that holds bytes of the piece (`len` bytes from `within` in the chunk,
    /// at byte `at` of `cmd`) goes on to the link once it has crossed. Returns how many parts
    /// the piece's data now arrives in.
    fn stream_codewords(&mut self, ctx: &mut Ctx, cmd: CmdId, unit: u32, start: SimTime, (within, len, at): (u64, u32, u32)) -> u32 {
        let hops = self.hops(unit);
        let end = within + u64::from(len);
        let mut sent = 0;
        let mut latest = start;
        let mut cw = 0;
        let mut k = 0;
        while cw < self.chunk {
            let next = (cw + self.codeword).min(self.chunk);
            let (a, b) = (cw.max(within), next.min(end));
            if a < b {
                let crossed = self.cw_crossed.get(k).copied().unwrap_or_else(|| self.bus_time(next));
                let arrives = start + crossed + hops;
                ctx.at(arrives, Out::Data { cmd, len: (b - a) as u32, at: at + (a - within) as u32 });
                latest = arrives;
                sent += 1;
            }
            cw = next;
            k += 1;
        }
        // The command's data now arrives in `sent` parts where one was counted, and its media
        // time ends with the last codeword it needs, not with the chunk.
        let c = &mut ctx.cmds[cmd];
        c.pieces_left += u64::from(sent) - 1;
        c.crit_media = self.access_time(false, false) + latest.since(start);
        sent
    }

    /// Whether a write of `pieces` chunks finds its slots free (one larger than the whole
    /// buffer goes in alone).
    fn fits(&self, pieces: u64) -> bool {
        self.buffer.used == 0 || u64::from(self.buffer.used) + pieces <= u64::from(self.buffer.slots)
    }

    /// Write `id`'s data is in the buffer: it completes now (its wait for slots, if any, is
    /// queueing), and each chunk goes on to its bank in the background.
    fn admit_write(&mut self, ctx: &mut Ctx, id: CmdId) {
        let now = ctx.now;
        let c = &mut ctx.cmds[id];
        let waited = now.since(c.mark);
        c.add(Component::Queueing, waited);
        c.mark = now;
        let (offset, len) = (c.offset, c.len);
        let mut at = offset;
        while at < offset + len {
            let Some(piece) = self.cut(at, offset + len - at).next() else { break };
            self.buffer.used += 1;
            let g = self.transfer(piece.unit, now, u64::from(piece.len));
            ctx.at(g.end, Out::Wake(Event::FlushUnit { unit: piece.unit, len: piece.len }));
            at += u64::from(piece.len);
        }
        ctx.at(now, Out::Done { cmd: id });
    }
}

impl Medium for NvmArray {
    type Event = Event;

    fn pieces(&self, offset: u64, len: u64) -> u64 {
        self.piece_count(offset, len)
    }

    fn uses_transfer_engine(&self) -> bool {
        true
    }

    #[inline]
    fn read(&mut self, ctx: &mut Ctx, id: CmdId, xfer: &mut Transfer) {
        let c = &mut ctx.cmds[id];
        c.pieces_left = c.pieces;
        let (offset, len) = (c.offset, c.len);
        if xfer.enabled() {
            xfer.enqueue(ctx.cmds, id);
            self.pump(ctx, xfer);
            return;
        }
        let mut at = 0u32;
        while u64::from(at) < len {
            let Some(n) = self.start_piece(ctx, id, at) else { break };
            at += n;
        }
        debug_assert_eq!(u64::from(at), len, "pieces of [{offset}, +{len}) cover it");
    }

    fn pump(&mut self, ctx: &mut Ctx, xfer: &mut Transfer) {
        xfer.pump(ctx, |ctx, id, at| self.start_piece(ctx, id, at));
    }

    fn write(&mut self, ctx: &mut Ctx, id: CmdId) {
        if ctx.cmds[id].kind == Kind::Flush {
            // The write buffer is power-loss protected: what it holds is durable already.
            ctx.at(ctx.now, Out::Done { cmd: id });
            return;
        }
        if ctx.cmds[id].kind == Kind::Deallocate {
            // Cells written in place have no map to change: a trim is a hint the array
            // ignores, done once the controller has taken it.
            ctx.at(ctx.now, Out::Done { cmd: id });
            return;
        }
        if self.buffer.slots > 0 {
            if self.buffer.waiters.is_empty() && self.fits(ctx.cmds[id].pieces) {
                self.admit_write(ctx, id);
            } else {
                self.buffer.waits += 1;
                self.buffer.waiters.push_back(id);
            }
            return;
        }
        let c = &mut ctx.cmds[id];
        c.pieces_left = c.pieces;
        c.crit_end = SimTime::ZERO;
        let (offset, len) = (c.offset, c.len);
        let now = ctx.now;
        let mut at = offset;
        while at < offset + len {
            let Some(piece) = self.cut(at, offset + len - at).next() else { break };
            let g = self.transfer(piece.unit, now, u64::from(piece.len));
            ctx.at(g.end, Out::Wake(Event::WriteUnit { cmd: id, unit: piece.unit, len: piece.len }));
            at += u64::from(piece.len);
        }
    }

    #[inline]
    fn handle(&mut self, ctx: &mut Ctx, ev: Event, xfer: &mut Transfer) {
        match ev {
            Event::ReadPart { cmd, unit, len, at } => {
                // Another read may have taken the partition first: wait for it again.
                let free = self.partition_free(unit, ctx.cmds[cmd].offset + u64::from(at)).unwrap_or(ctx.now);
                if free > ctx.now {
                    ctx.at(free, Out::Wake(Event::ReadPart { cmd, unit, len, at }));
                } else {
                    self.read_unit(ctx, cmd, unit, len, at);
                }
            }
            Event::ReadBus { cmd, unit, len, at } => {
                // The decoder in the controller needs whole codewords: the bytes the piece
                // needs, widened to codeword boundaries, cross the interconnect.
                let within = div_rem(ctx.cmds[cmd].offset + u64::from(at), self.chunk).1;
                let (first, last) = if self.cut_through {
                    // The bank streams its whole chunk out; the decoder takes it codeword by
                    // codeword as it arrives.
                    (0, self.chunk)
                } else {
                    let (cw, end) = (div_rem(within, self.codeword), div_rem(within + u64::from(len), self.codeword));
                    (cw.0 * self.codeword, ((end.0 + u64::from(end.1 > 0)) * self.codeword).min(self.chunk))
                };
                let g = self.transfer(unit, ctx.now, last - first);
                // The whole chunk is read and decoded, whatever part of it the piece needs.
                let soft = self.ecc.draw(self.chunk, g.end);
                ctx.cmds[cmd].crit_media = self.access_time(false, false) + g.end.since(g.start) + soft;
                if !self.cut_through || soft > SimDuration::ZERO || self.codeword >= self.chunk {
                    ctx.at(g.end + soft, Out::Data { cmd, len, at });
                } else {
                    let sent = self.stream_codewords(ctx, cmd, unit, g.start, (within, len, at));
                    // The transfer engine's slot for the piece is held until its last part
                    // has left: each part frees one.
                    xfer.split(sent - 1);
                }
            }
            Event::WriteUnit { cmd, unit, len } => self.write_unit(ctx, cmd, unit, len),
            Event::FlushUnit { unit, len } => {
                let g = self.access(unit, ctx.now, true, u64::from(len) < self.chunk);
                ctx.at(g.end, Out::Wake(Event::SlotFree));
            }
            Event::SlotFree => {
                self.buffer.used -= 1;
                while let Some(&next) = self.buffer.waiters.front() {
                    if !self.fits(ctx.cmds[next].pieces) {
                        break;
                    }
                    self.buffer.waiters.pop_front();
                    self.admit_write(ctx, next);
                }
            }
        }
    }

    fn publish(&self, m: &mut Metrics) {
        let (banks, bus) = self.busy();
        m.count(&MEDIA_UNITS_BUSY, banks.as_ps());
        m.gauge(&MEDIA_UNITS, self.unit_count() as f64);
        m.count(&MEDIA_BUS_BUSY, bus.as_ps());
        m.gauge(&MEDIA_BUS_UNITS, self.link_count() as f64);
        m.count(&MEDIA_ECC_SOFT_DECODES, self.ecc.soft_decodes);
        m.count(&MEDIA_ECC_DECODER_WAIT, self.ecc.decoder_wait.as_ps());
        m.count(&NVM_START_GAP_MOVES, self.gap_moves);
        m.count(&NVM_BUFFER_WAITS, self.buffer.waits);
    }

    fn utilisation(&self, m: &Metrics, window: SimDuration) -> (f64, f64) {
        let sim = window.as_secs_f64();
        let frac = |busy: u64, n: f64| if sim > 0.0 { SimDuration::from_ps(busy).as_secs_f64() / sim / n.max(1.0) } else { 0.0 };
        (frac(m.int(&MEDIA_UNITS_BUSY), m.value(&MEDIA_UNITS)), frac(m.int(&MEDIA_BUS_BUSY), m.value(&MEDIA_BUS_UNITS)))
    }
}
