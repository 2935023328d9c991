//! The `PCIe` link between the host's root port and the device.
//!
//! Models: one independent FIFO timeline per direction (downstream host→device, upstream
//! device→host), serialisation at `lanes × lane rate × encoding efficiency`, per-TLP overhead
//! (3- or 4-DW header, sequence number + LCRC + framing, optional ECRC), payloads cut at Max
//! Payload Size, read requests cut at Max Read Request Size, read completions cut at the Read
//! Completion Boundary (or coalesced to MPS), ACK/flow-control DLLPs that the receiver sends
//! back (charged on the opposite direction, absorbed by its idle gaps), and a fixed one-way
//! propagation latency. Generation 6 uses FLIT mode: 236 of every 256 flit bytes carry TLPs and
//! the per-TLP sequence/LCRC/framing bytes disappear into the flit.
//!
//! Leaves out: flow-control credit exhaustion, replays (no bit errors), link power states,
//! switches, TLPs crossing a 4 KiB boundary (buffers are page-aligned), and the root complex's
//! internal contention (host memory is a fixed latency, see `host`).

mod config;
pub mod metrics;

pub use config::{CompletionSplit, PcieConfig};

use crate::cmd::Command;
use crate::ids::CmdId;
use crate::nvme::{CQE_BYTES, DOORBELL_BYTES, PRP_ENTRY_BYTES, SQE_BYTES, VIRTIO_COMPLETION_BYTES, VIRTIO_FETCH_BYTES};
use crate::sim::{div_rem, Grant, SimDuration, SimTime, Timeline};
use crate::stats::{Component, Metrics};
use metrics::{PCIE_BUSY, PCIE_TLPS, PCIE_WIRE_BYTES};

/// Bytes of one DLLP (ACK/NAK, `UpdateFC`) including its framing.
pub const DLLP_BYTES: f64 = 8.0;
/// Bytes of a 3-DW TLP header (completions, 32-bit requests).
pub const HDR_3DW: u64 = 12;
/// Bytes of a 4-DW TLP header (64-bit requests).
pub const HDR_4DW: u64 = 16;

/// Direction of travel on the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Host to device (doorbells, read completions carrying SQEs, PRP lists and write data).
    Down,
    /// Device to host (read requests, read data, CQEs, MSI-X).
    Up,
}

/// The cost of a group of TLPs: how many, how many bytes on the wire, how long those bytes
/// take to serialise (with no DLLPs owed ahead of them: the usual case, worked out once here
/// rather than on the direction's timeline), and the DLLP bytes the receiver sends back for
/// them on the other direction.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tlps {
    pub count: u64,
    pub wire_bytes: u64,
    pub time: SimDuration,
    pub dllp_bytes: f64,
}

/// Link parameters derived once from the config.
#[derive(Clone, Debug)]
pub struct LinkParams {
    /// Picoseconds to serialise one byte in one direction.
    pub ps_per_byte: f64,
    /// Per-TLP bytes besides the header (framing, sequence number, LCRC, ECRC).
    pub tlp_extra: u64,
    /// Header bytes of a memory request (4 DW with 64-bit addressing).
    pub req_header: u64,
    pub mps: u64,
    pub mrrs: u64,
    /// Payload bytes per read completion TLP.
    pub completion_piece: u64,
    pub dllps_per_tlp: f64,
    pub propagation: SimDuration,
    /// The fixed-size TLP groups every NVMe command sends, cut once: the SQ doorbell write, the
    /// SQE's read request and completion, the CQE write and the MSI-X.
    fixed: Fixed,
    /// How long a read request slipped between data TLPs waits at most: one MPS-sized write.
    one_tlp: SimDuration,
}

/// See [`LinkParams::fixed`].
#[derive(Clone, Copy, Debug, Default)]
struct Fixed {
    doorbell: Tlps,
    sqe_request: Tlps,
    sqe_completion: Tlps,
    cqe: Tlps,
    msi: Tlps,
}

impl LinkParams {
    pub fn new(c: &PcieConfig) -> Self {
        let (default_rate, efficiency, framing) = match c.gen {
            1 => (2.5e9, 0.8, 8),
            2 => (5e9, 0.8, 8),
            3 => (8e9, 128.0 / 130.0, 8),
            4 => (16e9, 128.0 / 130.0, 8),
            5 => (32e9, 128.0 / 130.0, 8),
            _ => (64e9, 236.0 / 256.0, 0),
        };
        let rate = c.lane_rate.map_or(default_rate, |r| r.0);
        let bytes_per_sec = rate * f64::from(c.lanes) * efficiency / 8.0;
        let mut p = LinkParams {
            ps_per_byte: 1e12 / bytes_per_sec,
            tlp_extra: framing + if c.ecrc { 4 } else { 0 },
            req_header: if c.addr64 { HDR_4DW } else { HDR_3DW },
            mps: c.mps.0,
            mrrs: c.mrrs.0,
            completion_piece: match c.completion_split {
                CompletionSplit::Rcb => c.rcb.0,
                CompletionSplit::Mps => c.mps.0,
            },
            dllps_per_tlp: c.dllps_per_tlp,
            propagation: c.propagation,
            // (Cut below, by the methods these parameters give.)
            fixed: Fixed::default(),
            one_tlp: SimDuration::ZERO,
        };
        p.fixed = Fixed {
            doorbell: p.writes(DOORBELL_BYTES),
            sqe_request: p.read_requests(SQE_BYTES),
            sqe_completion: p.completions(SQE_BYTES),
            cqe: p.writes(CQE_BYTES),
            msi: p.writes(crate::nvme::MSI_BYTES),
        };
        p.one_tlp = p.serialise((p.mps + p.req_header + p.tlp_extra) as f64);
        p
    }

    /// TLP bytes one direction carries per second.
    pub fn bytes_per_sec(&self) -> f64 {
        1e12 / self.ps_per_byte
    }

    /// Memory writes carrying `len` bytes (data, CQE, MSI-X, doorbell): cut at MPS.
    pub fn writes(&self, len: u64) -> Tlps {
        let count = pieces(len, self.mps);
        self.group(count, len + count * (self.req_header + self.tlp_extra))
    }

    /// Memory read requests for `len` bytes: cut at MRRS, no payload.
    pub fn read_requests(&self, len: u64) -> Tlps {
        let count = pieces(len, self.mrrs);
        self.group(count, count * (self.req_header + self.tlp_extra))
    }

    /// Completions returning `len` bytes: cut at the RCB (or MPS), 3-DW headers.
    pub fn completions(&self, len: u64) -> Tlps {
        let count = pieces(len, self.completion_piece);
        self.group(count, len + count * (HDR_3DW + self.tlp_extra))
    }

    /// `count` TLPs of `wire_bytes` in all.
    #[inline]
    pub fn group(&self, count: u64, wire_bytes: u64) -> Tlps {
        Tlps { count, wire_bytes, time: self.serialise(wire_bytes as f64), dllp_bytes: count as f64 * self.dllps_per_tlp * DLLP_BYTES }
    }

    /// Serialisation time of `bytes` on one direction.
    pub fn serialise(&self, bytes: f64) -> SimDuration {
        SimDuration::from_ps((bytes * self.ps_per_byte).round() as u64)
    }
}

/// TLPs that carry `len` bytes cut at `size`: at least one. (The sizes are powers of two, so
/// [`div_rem`] cuts by a shift, not a divide.)
#[inline]
fn pieces(len: u64, size: u64) -> u64 {
    let (n, rest) = div_rem(len, size);
    (n + u64::from(rest > 0)).max(1)
}

/// One direction of the link.
#[derive(Clone, Debug, Default)]
struct Direction {
    wire: Timeline,
    /// DLLP bytes owed to this direction by TLPs received on the other one.
    dllp_debt: f64,
    tlps: u64,
    wire_bytes: u64,
}

/// Traffic counters of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DirStats {
    pub tlps: u64,
    pub wire_bytes: u64,
    pub busy: SimDuration,
}

/// The link: parameters and both directions.
pub struct Link {
    pub params: LinkParams,
    down: Direction,
    up: Direction,
    /// Host memory latency: how long after a read request arrives its completion can leave.
    host_memory: SimDuration,
    /// The device presents virtio-blk virtqueues instead of NVMe queue pairs.
    virtio: bool,
    /// The bytes of the last read data sent up, and their TLPs (a run's pieces and codewords
    /// mostly have one size).
    last_out: (u64, Tlps),
    /// The last transfer through a mover: its data bytes, the mover's picoseconds per byte
    /// (as bits) and the time they take it.
    last_moved: (u64, u64, SimDuration),
}

/// A data mover in the device that a transfer's bytes pass on their way to or from the link (a
/// DMA engine, the controller's internal data path): one transfer at a time, each at least
/// `ps_per_byte` per byte of data.
pub struct Mover<'a> {
    pub line: &'a mut Timeline,
    pub ps_per_byte: f64,
}

/// What a transmission delivers, and when: the router carries the command on from there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The SQ tail doorbell reaches the controller at `at`.
    Doorbell { at: SimTime },
    /// A read request has reached host memory: its answer (`answer`, the completions carrying
    /// the data) can leave at `at`.
    Requested { at: SimTime, answer: Tlp },
    /// virtio-blk: a fetch read has brought what the next dependent read needs, which can go
    /// up at `at`.
    NextFetch { at: SimTime },
    /// Data the device read from host memory (`tlp`: the SQE, the PRP list or the write data)
    /// has arrived at `at`.
    Fetched { at: SimTime, tlp: Tlp },
    /// A piece of read data has left at `end`; `last` if it was the command's last.
    DataOut { end: SimTime, last: bool },
    /// The CQE has left at `end`.
    Cqe { end: SimTime },
}

impl Link {
    /// A link whose host side answers read requests after `host_memory`.
    pub fn new(c: &PcieConfig, host_memory: SimDuration) -> Self {
        let params = LinkParams::new(c);
        let last_out = (0, params.writes(0));
        Link { params, down: Direction::default(), up: Direction::default(), host_memory, virtio: false, last_out, last_moved: (0, 0.0f64.to_bits(), SimDuration::ZERO) }
    }

    /// The device presents virtio-blk virtqueues: fetches and completions move their bytes.
    pub fn set_virtio(&mut self) {
        self.virtio = true;
    }

    /// Puts `tlps` on direction `dir` at `now` (the moment they are ready to go). The grant
    /// ends when the last byte has left; add [`LinkParams::propagation`] for arrival.
    pub fn send(&mut self, dir: Dir, now: SimTime, tlps: Tlps) -> Grant {
        self.put(dir, now, tlps, false)
    }

    /// As [`Link::send`], for read requests: they are their own flow-control class, so the
    /// transmitter slips them between the TLPs of data already queued on the direction (they
    /// wait at most for the data TLP on the wire, and delay the data behind them).
    pub fn send_request(&mut self, dir: Dir, now: SimTime, tlps: Tlps) -> Grant {
        self.put(dir, now, tlps, true)
    }

    fn put(&mut self, dir: Dir, now: SimTime, tlps: Tlps, cut_in: bool) -> Grant {
        let p = &self.params;
        let (this, other) = match dir {
            Dir::Down => (&mut self.down, &mut self.up),
            Dir::Up => (&mut self.up, &mut self.down),
        };
        // DLLPs owed to this direction went out in its idle time before `now`, if there was any.
        // (Skipped when nothing is owed or there was no idle time: the result is the same.)
        let idle = now.since(this.wire.free_at());
        let debt = std::mem::take(&mut this.dllp_debt);
        let service = if debt == 0.0 || Self::paid(idle, debt, p.ps_per_byte) {
            tlps.time
        } else {
            let left = if idle > SimDuration::ZERO { (debt - idle.as_ps() as f64 / p.ps_per_byte).max(0.0) } else { debt };
            p.serialise(tlps.wire_bytes as f64 + left)
        };
        this.tlps += tlps.count;
        this.wire_bytes += tlps.wire_bytes;
        other.dllp_debt += tlps.dllp_bytes;
        if cut_in {
            return this.wire.cut_in(now, service, p.one_tlp);
        }
        this.wire.reserve(now, service)
    }

    /// Whether `idle` picoseconds surely carried all `debt` bytes of DLLPs (`idle / ps_per_byte`
    /// at least `debt`), tested by a product with a margin far above its rounding instead of the
    /// quotient. Where the quotient reaches `debt` but the margin hides it, the caller's exact
    /// path gets the same answer, zero bytes left.
    #[inline]
    fn paid(idle: SimDuration, debt: f64, ps_per_byte: f64) -> bool {
        idle > SimDuration::ZERO && idle.as_ps() as f64 >= debt * ps_per_byte * (1.0 + 1e-9)
    }

    /// Carries `tlp` of command `c`, ready at `now` (after waiting `translated` for its
    /// address translations), on its direction: through the controller's data `mover` when data
    /// goes through one (the transfer starts when both are free and holds the mover until its
    /// last byte has left, no sooner than the mover's own rate allows; the link is reserved when
    /// the mover frees, slightly ahead of other traffic arriving meanwhile: an approximation).
    /// Attributes the command's time up to the TLPs' arrival and returns what they deliver,
    /// and when.
    pub fn transmit(&mut self, now: SimTime, c: &mut Command, tlp: Tlp, translated: SimDuration, mover: Option<Mover<'_>>) -> Sent {
        if translated > SimDuration::ZERO && !matches!(tlp, Tlp::DataOut { .. }) {
            c.account(Component::Translation, now);
        }
        let p = &self.params;
        let prop = p.propagation;
        let (dir, tlps) = self.tlps(c, tlp);
        let g = match mover {
            Some(m) => {
                let start = now.max(m.line.free_at());
                let g = self.send(dir, start, tlps);
                // The data streams through the mover and the link at once: the slower decides.
                let data = match tlp {
                    Tlp::DataOut { len, .. } => u64::from(len),
                    _ => c.data_len(),
                };
                if (self.last_moved.0, self.last_moved.1) != (data, m.ps_per_byte.to_bits()) {
                    self.last_moved = (data, m.ps_per_byte.to_bits(), SimDuration::from_ps((data as f64 * m.ps_per_byte).round() as u64));
                }
                let end = g.end.max(g.start + self.last_moved.2);
                m.line.occupy(g.start, end);
                Grant { start: g.start, end, wait: g.start.since(now) }
            }
            None if matches!(tlp, Tlp::SqeRead | Tlp::PrpRead | Tlp::DataRead) => self.send_request(dir, now, tlps),
            None => self.send(dir, now, tlps),
        };
        let mem = self.host_memory;
        match tlp {
            Tlp::SqDoorbell => {
                c.account(Component::Queueing, g.start);
                c.account(Component::Doorbell, g.end + prop);
                Sent::Doorbell { at: g.end + prop }
            }
            Tlp::SqeRead | Tlp::PrpRead => {
                let (cat, answer) = if tlp == Tlp::SqeRead { (Component::Fetch, Tlp::SqeData) } else { (Component::Prp, Tlp::PrpData) };
                c.account(Component::Queueing, g.start);
                let back = g.end + prop + mem;
                c.account(cat, back);
                Sent::Requested { at: back, answer }
            }
            Tlp::SqeData if self.virtio && usize::from(c.fetch_stage) + 1 < VIRTIO_FETCH_BYTES.len() => {
                // virtio-blk: the next read depends on what this one brought.
                c.fetch_stage += 1;
                c.account(Component::Queueing, g.start);
                c.account(Component::Fetch, g.end + prop);
                Sent::NextFetch { at: g.end + prop }
            }
            Tlp::SqeData | Tlp::PrpData => {
                let cat = if tlp == Tlp::SqeData { Component::Fetch } else { Component::Prp };
                c.account(Component::Queueing, g.start);
                c.account(cat, g.end + prop);
                Sent::Fetched { at: g.end + prop, tlp }
            }
            Tlp::DataRead => {
                c.account(Component::Queueing, g.start);
                // The first request of a batch leaves one request's time after the batch starts
                // (every request of it is a header and its framing: `read_requests`).
                let one_request = self.params.serialise((self.params.req_header + self.params.tlp_extra) as f64);
                // Completions start once the first request has reached host memory; the rest
                // of the requests are smaller than their data and keep the stream busy.
                let back = g.start + one_request + prop + mem;
                c.account(Component::Transfer, back);
                Sent::Requested { at: back, answer: Tlp::DataIn }
            }
            Tlp::DataIn => {
                c.account(Component::Queueing, g.start);
                c.account(Component::Transfer, g.end + prop);
                Sent::Fetched { at: g.end + prop, tlp }
            }
            Tlp::DataOut { .. } => {
                c.pieces_left -= 1;
                let last = c.pieces_left == 0;
                if last {
                    // The link is FIFO, so the last piece sent is the last to finish: its path
                    // from translation to here is the command's critical path.
                    let media = c.crit_media;
                    let transfer = g.end.since(g.start);
                    let elapsed = g.end.since(c.mark);
                    let map = c.crit_map.min(elapsed - media - transfer - translated);
                    c.add(Component::Media, media);
                    c.add(Component::Transfer, transfer);
                    c.add(Component::Translation, translated);
                    c.add(Component::Map, map);
                    let waited = elapsed - media - transfer - translated - map;
                    let gc = c.crit_gc.min(waited);
                    c.add(Component::Gc, gc);
                    c.add(Component::Queueing, waited - gc);
                    c.mark = g.end;
                }
                Sent::DataOut { end: g.end, last }
            }
            Tlp::Cqe => {
                c.account(Component::Queueing, g.start);
                c.account(Component::Completion, g.end);
                Sent::Cqe { end: g.end }
            }
        }
    }

    /// The direction and TLPs of `tlp` for command `c`.
    #[inline]
    fn tlps(&mut self, c: &Command, tlp: Tlp) -> (Dir, Tlps) {
        let p = &self.params;
        match tlp {
            Tlp::SqDoorbell => (Dir::Down, p.fixed.doorbell),
            Tlp::SqeRead if !self.virtio => (Dir::Up, p.fixed.sqe_request),
            Tlp::SqeData if !self.virtio => (Dir::Down, p.fixed.sqe_completion),
            Tlp::SqeRead => (Dir::Up, p.read_requests(self.fetch_bytes(c.fetch_stage))),
            Tlp::SqeData => (Dir::Down, p.completions(self.fetch_bytes(c.fetch_stage))),
            Tlp::PrpRead => (Dir::Up, p.read_requests(c.prp_entries * PRP_ENTRY_BYTES)),
            Tlp::PrpData => (Dir::Down, p.completions(c.prp_entries * PRP_ENTRY_BYTES)),
            // Metadata (protection information) crosses the link with the data.
            Tlp::DataRead => (Dir::Up, p.read_requests(c.data_len() + c.md)),
            Tlp::DataIn => (Dir::Down, p.completions(c.data_len() + c.md)),
            Tlp::DataOut { len, .. } => {
                let md = if c.md == 0 { 0 } else { c.md * u64::from(len) / c.len.max(1) };
                let bytes = u64::from(len) + md;
                if self.last_out.0 != bytes {
                    self.last_out = (bytes, p.writes(bytes));
                }
                (Dir::Up, self.last_out.1)
            }
            Tlp::Cqe if self.virtio => {
                let (count, wire_bytes) = VIRTIO_COMPLETION_BYTES.iter().map(|&b| p.writes(b)).fold((0, 0), |(n, w), t| (n + t.count, w + t.wire_bytes));
                (Dir::Up, p.group(count, wire_bytes))
            }
            Tlp::Cqe => (Dir::Up, p.fixed.cqe),
        }
    }

    /// An MSI-X goes up at `now`; returns when it reaches the host.
    pub fn interrupt(&mut self, now: SimTime) -> SimTime {
        let t = self.params.fixed.msi;
        self.send(Dir::Up, now, t).end + self.params.propagation
    }

    /// The bytes of a command's fetch read at `stage`.
    fn fetch_bytes(&self, stage: u8) -> u64 {
        if self.virtio {
            VIRTIO_FETCH_BYTES[usize::from(stage).min(VIRTIO_FETCH_BYTES.len() - 1)]
        } else {
            SQE_BYTES
        }
    }

    /// The host's CQ head doorbell goes down at `now` (nothing waits for it; it uses the link).
    pub fn cq_doorbell(&mut self, now: SimTime) {
        if self.virtio {
            return; // virtio-blk drivers update the used event index in memory, not a register
        }
        let t = self.params.fixed.doorbell;
        self.send(Dir::Down, now, t);
    }

    /// The round trip of an ATS translation request: a read request up, the translation agent
    /// (host memory latency), an 8-byte completion down.
    pub fn translation_round_trip(&self) -> SimDuration {
        let p = &self.params;
        p.serialise(p.read_requests(8).wire_bytes as f64) + p.propagation + self.host_memory + p.serialise(p.completions(8).wire_bytes as f64) + p.propagation
    }

    /// Traffic and busy time of both directions, for statistics.
    pub fn publish(&self, m: &mut Metrics) {
        for (name, d) in [("up", &self.up), ("down", &self.down)] {
            m.count_of(&PCIE_TLPS, name, d.tlps);
            m.count_of(&PCIE_WIRE_BYTES, name, d.wire_bytes);
            m.count_of(&PCIE_BUSY, name, d.wire.busy().as_ps());
        }
    }

    pub fn stats(&self, dir: Dir) -> DirStats {
        let d = match dir {
            Dir::Down => &self.down,
            Dir::Up => &self.up,
        };
        DirStats { tlps: d.tlps, wire_bytes: d.wire_bytes, busy: d.wire.busy() }
    }
}

#[cfg(test)]
#[allow(clippy::many_single_char_names)]
mod tests {
    use super::*;
    use crate::units::Bytes;

    fn params(gen: u8, lanes: u32) -> LinkParams {
        LinkParams::new(&PcieConfig { gen, lanes, ..PcieConfig::default() })
    }

    #[test]
    fn tlps_are_counted_as_a_ceiling_division_at_least_one() {
        for size in [64, 128, 256, 4096, 100] {
            for len in (0..20_000).step_by(7) {
                assert_eq!(pieces(len, size), len.div_ceil(size).max(1), "{len} at {size}");
            }
        }
    }

    #[test]
    fn lane_rates_follow_generation_and_encoding() {
        // Gen1 x1: 2.5 GT/s, 8b/10b -> 250 MB/s.
        assert!((params(1, 1).bytes_per_sec() - 250e6).abs() < 1.0);
        // Gen3 x4: 4 x 8 GT/s x 128/130 / 8 = 3.938 GB/s.
        assert!((params(3, 4).bytes_per_sec() - 4.0 * 1e9 * 128.0 / 130.0).abs() < 10.0);
        // Gen5 x16: 16 x 32 GT/s x 128/130 / 8 = 63.0 GB/s.
        assert!((params(5, 16).bytes_per_sec() - 16.0 * 4e9 * 128.0 / 130.0).abs() < 100.0);
        // Gen6 x1: 64 GT/s, 236 TLP bytes per 256-byte flit.
        assert!((params(6, 1).bytes_per_sec() - 8e9 * 236.0 / 256.0).abs() < 10.0);
    }

    fn cw(t: Tlps) -> (u64, u64) {
        (t.count, t.wire_bytes)
    }

    #[test]
    fn tlp_cutting() {
        let p = params(4, 4); // MPS 256, MRRS 512, RCB 64, 4-DW requests, 8 B framing
        assert_eq!(cw(p.writes(4096)), (16, 4096 + 16 * 24));
        assert_eq!(cw(p.writes(16)), (1, 16 + 24));
        assert_eq!(cw(p.read_requests(4096)), (8, 8 * 24));
        assert_eq!(cw(p.read_requests(64)), (1, 24));
        assert_eq!(cw(p.completions(64)), (1, 64 + 20));
        assert_eq!(cw(p.completions(4096)), (64, 4096 + 64 * 20));
        let mps = LinkParams::new(&PcieConfig { completion_split: CompletionSplit::Mps, mps: Bytes(512), ..PcieConfig::default() });
        assert_eq!(mps.completions(4096).count, 8);
    }

    #[test]
    fn fixed_groups_are_cut_as_any_other() {
        for (gen, mps, ecrc, addr64) in [(3, 128, false, true), (4, 256, true, false), (6, 512, false, true)] {
            let p = LinkParams::new(&PcieConfig { gen, mps: Bytes(mps), ecrc, addr64, ..PcieConfig::default() });
            assert_eq!(p.fixed.doorbell, p.writes(DOORBELL_BYTES));
            assert_eq!(p.fixed.sqe_request, p.read_requests(SQE_BYTES));
            assert_eq!(p.fixed.sqe_completion, p.completions(SQE_BYTES));
            assert_eq!(p.fixed.cqe, p.writes(CQE_BYTES));
            assert_eq!(p.fixed.msi, p.writes(crate::nvme::MSI_BYTES));
            assert_eq!(p.one_tlp, p.serialise((mps + p.req_header + p.tlp_extra) as f64));
        }
    }

    #[test]
    fn directions_are_independent_and_dllps_are_absorbed_when_idle() {
        let mut link = Link::new(&PcieConfig::default(), SimDuration::ZERO);
        let t = link.params.writes(4096);
        let a = link.send(Dir::Up, SimTime(0), t);
        let b = link.send(Dir::Down, SimTime(0), t);
        assert_eq!(a.start, SimTime(0));
        assert_eq!(b.start, SimTime(0), "the other direction is not blocked");
        // Down owes 16 DLLPs to Up and vice versa; back-to-back sends pay them...
        let c = link.send(Dir::Up, a.end, link.params.writes(16));
        assert_eq!(c.end.since(c.start), link.params.serialise(40.0 + 16.0 * 8.0));
        // ...but an idle gap longer than their serialisation absorbs them.
        link.send(Dir::Down, b.end, link.params.writes(16)); // Up now owes 8 B
        let late = SimTime(c.end.0 + 1_000_000);
        let d = link.send(Dir::Up, late, link.params.writes(16));
        assert_eq!(d.end.since(d.start), link.params.serialise(40.0));
    }

    /// Read data going up reuses the last size's TLPs; each piece must still be cut as its own
    /// size (with its share of the metadata) would be.
    #[test]
    fn read_data_is_cut_by_its_own_size() {
        use crate::ids::{JobId, TenantId};
        let mut link = Link::new(&PcieConfig { mps: Bytes(128), ..PcieConfig::default() }, SimDuration::ZERO);
        let mut c = Command::new(TenantId(0), JobId(0), crate::io::Op::Read, 0, 16384, SimTime(0));
        for (len, md) in [(4096, 0), (4096, 0), (512, 0), (0, 0), (4096, 0), (512, 64), (512, 64), (4096, 64), (16384, 64)] {
            c.md = md;
            let (dir, t) = link.tlps(&c, Tlp::DataOut { len, at: 0 });
            let bytes = u64::from(len) + md * u64::from(len) / 16384;
            assert_eq!((dir, t), (Dir::Up, link.params.writes(bytes)), "{len} bytes, {md} of metadata");
        }
    }

    /// A transfer through a data mover ends when the slower of the link and the mover has
    /// carried it; the mover's time is kept for the last size and rate, and must follow each.
    #[test]
    fn a_mover_holds_each_transfer_for_its_own_size_at_its_own_rate() {
        use crate::ids::{JobId, TenantId};
        let mut link = Link::new(&PcieConfig::default(), SimDuration::ZERO);
        let mut engine = Timeline::default();
        let c = &mut Command::new(TenantId(0), JobId(0), crate::io::Op::Read, 0, 1 << 20, SimTime(0));
        c.pieces_left = 100;
        let mut now = SimTime(0);
        for (len, ps_per_byte) in [(4096u32, 500.0), (4096, 500.0), (512, 500.0), (512, 0.1), (4096, 0.1), (4096, 500.0), (0, 500.0), (512, 500.0)] {
            let Sent::DataOut { end, .. } = link.transmit(now, c, Tlp::DataOut { len, at: 0 }, SimDuration::ZERO, Some(Mover { line: &mut engine, ps_per_byte })) else { panic!("read data") };
            // Both are idle at `now` (the upstream direction owes no DLLPs: only it is used).
            let wire = link.params.writes(u64::from(len)).time;
            let mover = SimDuration::from_ps((f64::from(len) * ps_per_byte).round() as u64);
            assert_eq!(end, now + wire.max(mover), "{len} bytes at {ps_per_byte} ps/B");
            assert_eq!(engine.free_at(), end);
            now = end;
        }
    }

    /// A group's serialisation time is worked out when it is cut; a send whose owed DLLPs the
    /// idle time carried uses it, and otherwise adds what is left of them. Both must give, to
    /// the picosecond, what the direct formula gives, near the edge where idle time just pays
    /// the debt as well as far from it.
    #[test]
    fn sends_take_the_time_the_direct_formula_gives() {
        use rand::{RngExt, SeedableRng};
        let direct = |p: &LinkParams, idle: u64, debt: f64, wire: u64| {
            let left = if debt > 0.0 && idle > 0 { (debt - idle as f64 / p.ps_per_byte).max(0.0) } else { debt };
            p.serialise(wire as f64 + left)
        };
        let mut rng = crate::sim::Rng::from_seed(crate::sim::stream_seed(7, 0).to_le_bytes());
        let mut edges = 0;
        for (gen, lanes) in [(3, 4), (4, 4), (5, 8), (6, 16), (1, 1)] {
            let params = params(gen, lanes);
            for _ in 0..20_000 {
                let tlps = params.writes(rng.random_range(0..9000));
                let debt = f64::from(rng.random_range(0..40)) * 8.0 * params.dllps_per_tlp / 4.0;
                let exact = (debt * params.ps_per_byte).round() as u64;
                // Idle times around the debt's own serialisation time, and some far off it.
                let idle = match rng.random_range(0..4) {
                    0 => exact.saturating_sub(2) + rng.random_range(0..5),
                    1 => 0,
                    _ => rng.random_range(0..4 * exact + 10),
                };
                edges += u64::from(idle.abs_diff(exact) <= 2);
                let mut link = Link::new(&PcieConfig { gen, lanes, ..PcieConfig::default() }, SimDuration::ZERO);
                link.up.wire.reserve(SimTime(0), SimDuration::from_ps(1000));
                link.up.dllp_debt = debt;
                let g = link.send(Dir::Up, SimTime(1000 + idle), tlps);
                assert_eq!(g.end.since(g.start), direct(&params, idle, debt, tlps.wire_bytes), "gen {gen} x{lanes}: idle {idle} ps, debt {debt} B, {tlps:?}");
            }
        }
        assert!(edges > 10_000, "the edge was tried {edges} times");
    }
}

/// What a TLP (or group of TLPs) carries; each kind has a fixed direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tlp {
    /// Host → device: SQ tail doorbell write.
    SqDoorbell,
    /// Device → host: read request for the SQE.
    SqeRead,
    /// Host → device: completion carrying the SQE.
    SqeData,
    /// Device → host: read request for the PRP list.
    PrpRead,
    /// Host → device: completions carrying the PRP list.
    PrpData,
    /// Device → host: read requests for write data.
    DataRead,
    /// Host → device: completions carrying write data.
    DataIn,
    /// Device → host: memory writes carrying `len` bytes of read data, from byte `at` of the I/O.
    DataOut { len: u32, at: u32 },
    /// Device → host: the CQE (and, if due, the MSI-X after it).
    Cqe,
}

/// Link events: a command's TLPs are ready to go on their direction.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    Send {
        cmd: CmdId,
        tlp: Tlp,
    },
    /// The TLPs waited `wait_ps` picoseconds for their address translations (ATS) and now go.
    Translated {
        cmd: CmdId,
        tlp: Tlp,
        wait_ps: u32,
    },
}
