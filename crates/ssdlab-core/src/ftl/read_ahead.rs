//! Controller read-ahead: sequential streams detected per queue, pages read ahead into DRAM.
//!
//! A queue's read that starts where its previous read ended marks the queue sequential. The
//! controller then keeps `depth` bytes past the read in flight or in DRAM: when less than half
//! of that is left, it reads the rest of the window, ending on a page boundary, as whole-page
//! reads queued behind host reads on their dies. A host read whose unit is in DRAM is served
//! from there; one whose unit is still being read waits for that page read. A unit written
//! meanwhile is dropped (its data is stale); a stream that stops being sequential drops what it
//! read ahead and never used.
//!
//! Leaves out: detection across queues or by namespace, strides, adaptive depth, and a DRAM
//! budget shared with the write buffer.

use rustc_hash::FxHashMap;

use crate::ids::CmdId;
use crate::ids::{JobId, Lpn};
use crate::sim::div_ceil;

/// A unit read ahead: still being read by page read `token`, or in DRAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Pending(u32),
    Ready,
}

/// A read-ahead page read: the units it brings, and the host reads waiting for them
/// (`(cmd, bytes, byte of the I/O)`).
#[derive(Default)]
struct PageRead {
    lpns: std::ops::Range<u64>,
    waiters: Vec<(CmdId, u32, u32)>,
}

/// What a queue has read and read ahead.
#[derive(Clone, Copy, Default)]
struct Stream {
    /// Byte where a sequential read would start.
    next: u64,
    /// Units read ahead up to here (exclusive).
    ahead_to: u64,
}

/// How a host read's unit is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// In DRAM now.
    Hit,
    /// Being read: served when its page read lands.
    Waiting,
    /// Not read ahead.
    Miss,
}

/// The read-ahead engine of the flash controller.
pub struct ReadAhead {
    /// Units kept ahead of a stream (0 = off).
    depth: u64,
    /// Units per flash page (windows end on multiples of it).
    per_page: u64,
    streams: Vec<Stream>,
    units: FxHashMap<u64, Unit>,
    reads: Vec<PageRead>,
    free: Vec<u32>,
    pub hits: u64,
    pub waits: u64,
    pub dropped: u64,
    pub pages: u64,
}

impl ReadAhead {
    pub fn new(depth_bytes: u64, unit: u64, per_page: u32) -> Self {
        ReadAhead {
            depth: depth_bytes / unit.max(1),
            per_page: u64::from(per_page.max(1)),
            streams: Vec::new(),
            units: FxHashMap::default(),
            reads: Vec::new(),
            free: Vec::new(),
            hits: 0,
            waits: 0,
            dropped: 0,
            pages: 0,
        }
    }

    pub fn enabled(&self) -> bool {
        self.depth > 0
    }

    /// A host read of unit `lpn` (`bytes` of it, at byte `at` of command `cmd`).
    pub fn lookup(&mut self, lpn: Lpn, cmd: CmdId, bytes: u32, at: u32) -> Lookup {
        match self.units.get(&lpn.0).copied() {
            Some(Unit::Ready) => {
                self.units.remove(&lpn.0);
                self.hits += 1;
                Lookup::Hit
            }
            Some(Unit::Pending(token)) => {
                self.units.remove(&lpn.0);
                self.waits += 1;
                self.reads[token as usize].waiters.push((cmd, bytes, at));
                Lookup::Waiting
            }
            None => Lookup::Miss,
        }
    }

    /// Queue `job` reads `[offset, offset + len)`: returns the units to read ahead, if any.
    pub fn on_read(&mut self, job: JobId, offset: u64, len: u64, unit: u64) -> Option<std::ops::Range<u64>> {
        if !self.enabled() {
            return None;
        }
        if job.index() >= self.streams.len() {
            self.streams.resize(job.index() + 1, Stream::default());
        }
        let st = self.streams[job.index()];
        let end_lpn = div_ceil(offset + len, unit);
        let sequential = offset == st.next && offset > 0;
        self.streams[job.index()].next = offset + len;
        if !sequential {
            // The stream broke: what it read ahead and did not use is dropped.
            let from = div_ceil(st.next, unit);
            for lpn in from..st.ahead_to {
                if self.units.get(&lpn) == Some(&Unit::Ready) {
                    self.units.remove(&lpn);
                    self.dropped += 1;
                }
            }
            self.streams[job.index()].ahead_to = 0;
            return None;
        }
        let ahead_to = st.ahead_to.max(end_lpn);
        if ahead_to - end_lpn > self.depth / 2 {
            return None;
        }
        let to = (end_lpn + self.depth).div_ceil(self.per_page) * self.per_page;
        self.streams[job.index()].ahead_to = to;
        (to > ahead_to).then_some(ahead_to..to)
    }

    /// Whether unit `lpn` is read ahead already.
    pub fn has(&self, lpn: u64) -> bool {
        self.units.contains_key(&lpn)
    }

    /// Starts a page read of units `lpns`; returns its token.
    pub fn start(&mut self, lpns: std::ops::Range<u64>) -> u32 {
        let token = self.free.pop().unwrap_or_else(|| {
            self.reads.push(PageRead::default());
            (self.reads.len() - 1) as u32
        });
        for lpn in lpns.clone() {
            self.units.insert(lpn, Unit::Pending(token));
        }
        self.reads[token as usize] = PageRead { lpns, waiters: Vec::new() };
        self.pages += 1;
        token
    }

    /// Page read `token` landed in DRAM: its units are ready; returns the reads that waited.
    pub fn landed(&mut self, token: u32) -> Vec<(CmdId, u32, u32)> {
        let r = std::mem::take(&mut self.reads[token as usize]);
        for lpn in r.lpns {
            if let Some(u) = self.units.get_mut(&lpn) {
                if *u == Unit::Pending(token) {
                    *u = Unit::Ready;
                }
            }
        }
        self.free.push(token);
        r.waiters
    }

    /// The host wrote unit `lpn`: a copy read ahead is stale.
    pub fn written(&mut self, lpn: Lpn) {
        if !self.units.is_empty() && self.units.remove(&lpn.0).is_some() {
            self.dropped += 1;
        }
    }
}
