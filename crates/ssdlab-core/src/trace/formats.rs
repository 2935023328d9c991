//! One line parser per trace format. Field layouts, units and pitfalls follow
//! `../shared/data/traces/FORMATS.md`; each parser says which section it implements.

use rustc_hash::FxHashMap;

use super::{Format, Op, Record};

/// What a line is: an I/O, something that is not one (a header, a comment, an open/close, a
/// blkparse event of another action), or malformed (with the reason).
pub(crate) type LineResult = Result<Option<Record>, String>;

/// State a format needs across lines: names interned to device ids, fio v2's clock.
#[derive(Default)]
pub(crate) struct Parser {
    pub format: Option<Format>,
    names: FxHashMap<Vec<u8>, u32>,
    /// fio v2: the time of the next I/O, advanced by `wait` lines (ns).
    clock_ns: u64,
    /// blkparse: the trailing summary block has started.
    in_summary: bool,
    /// blkparse: the action whose events are the I/Os (`D` issue, or `Q` queue).
    pub blk_action: u8,
    /// CSV formats: the first data line may be a header.
    seen_data: bool,
}

fn uint(f: &[u8]) -> Option<u64> {
    if f.is_empty() || f.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in f {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

fn float(f: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(f).ok()?;
    let v: f64 = s.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v)
}

/// `seconds.fraction` as nanoseconds, exactly for up to 9 decimals.
fn secs_ns(f: &[u8]) -> Option<u64> {
    let (int, frac) = match f.iter().position(|&c| c == b'.') {
        Some(i) => (&f[..i], &f[i + 1..]),
        None => (f, &b""[..]),
    };
    let s = uint(int)?;
    let mut ns: u64 = 0;
    let mut scale = 100_000_000u64;
    for &c in frac.iter().take(9) {
        if !c.is_ascii_digit() {
            return None;
        }
        ns += u64::from(c - b'0') * scale;
        scale /= 10;
    }
    if frac.len() > 9 && !frac[9..].iter().all(u8::is_ascii_digit) {
        return None;
    }
    s.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// A one-letter read/write field (`R`/`r` or `W`/`w`).
fn rw_letter(f: &[u8], what: &str) -> Result<Op, String> {
    match f {
        b"R" | b"r" => Ok(Op::Read),
        b"W" | b"w" => Ok(Op::Write),
        other => Err(format!("{what} {:?} is not R or W", String::from_utf8_lossy(other))),
    }
}

fn trim(f: &[u8]) -> &[u8] {
    f.trim_ascii()
}

fn need<T>(v: Option<T>, what: &str, field: &[u8]) -> Result<T, String> {
    v.ok_or_else(|| format!("{what} {:?} is not valid", String::from_utf8_lossy(field)))
}

/// Up to `MAX_FIELDS` fields of a line, without allocating; `len` counts every field.
const MAX_FIELDS: usize = 12;

struct Fields<'a> {
    f: [&'a [u8]; MAX_FIELDS],
    len: usize,
}

impl<'a> std::ops::Index<usize> for Fields<'a> {
    type Output = &'a [u8];
    fn index(&self, i: usize) -> &&'a [u8] {
        &self.f[i.min(MAX_FIELDS - 1)]
    }
}

impl<'a> Fields<'a> {
    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, i: usize) -> Option<&'a [u8]> {
        (i < self.len.min(MAX_FIELDS)).then(|| self.f[i])
    }

    fn push(&mut self, x: &'a [u8]) {
        if self.len < MAX_FIELDS {
            self.f[self.len] = x;
        }
        self.len += 1;
    }

    /// Whitespace-separated fields.
    fn ws(line: &'a [u8]) -> Self {
        let mut out = Fields { f: [&[]; MAX_FIELDS], len: 0 };
        for x in line.split(u8::is_ascii_whitespace).filter(|f| !f.is_empty()) {
            out.push(x);
        }
        out
    }

    /// Comma-separated fields, each trimmed.
    fn csv(line: &'a [u8]) -> Self {
        let mut out = Fields { f: [&[]; MAX_FIELDS], len: 0 };
        for x in line.split(|&c| c == b',') {
            out.push(trim(x));
        }
        out
    }
}

impl Parser {
    pub fn new(format: Format) -> Self {
        Parser { format: Some(format), blk_action: b'D', ..Default::default() }
    }

    fn intern(&mut self, name: &[u8]) -> u32 {
        let n = self.names.len() as u32;
        *self.names.entry(name.to_vec()).or_insert(n)
    }

    /// The device names seen (for formats that name devices), in id order.
    pub fn device_names(&self) -> Vec<String> {
        let mut v: Vec<(u32, String)> = self.names.iter().map(|(k, &i)| (i, String::from_utf8_lossy(k).into_owned())).collect();
        v.sort_unstable();
        v.into_iter().map(|(_, s)| s).collect()
    }

    /// A CSV header line (letters where the first number belongs) is skipped once, at the top.
    fn csv_header(&mut self, first: &[u8]) -> bool {
        let header = !self.seen_data && !first.is_empty() && first.iter().any(u8::is_ascii_alphabetic);
        self.seen_data = true;
        header
    }

    pub fn parse(&mut self, line: &[u8]) -> LineResult {
        let line = trim(line);
        if line.is_empty() {
            return Ok(None);
        }
        match self.format.unwrap_or(Format::Mqsim) {
            Format::Msr => self.msr(line),
            Format::Spc => self.spc(line),
            Format::Fiu => Self::fiu(line),
            Format::Alibaba => self.alibaba(line),
            Format::Tencent => self.tencent(line),
            Format::Blkparse => self.blkparse(line),
            Format::FioV2 => self.fio(line, false),
            Format::FioV3 => self.fio(line, true),
            Format::Mqsim => Self::mqsim(line),
            Format::Disksim => Self::disksim(line),
            Format::Parquet => Err("Parquet is not a text format".into()),
        }
    }

    /// FORMATS.md 1.1: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`; filetime
    /// (100 ns), bytes; device = hostname + disk.
    fn msr(&mut self, line: &[u8]) -> LineResult {
        let f = Fields::csv(line);
        if self.csv_header(f[0]) {
            return Ok(None);
        }
        if f.len() < 6 {
            return Err(format!("{} fields; MSR Cambridge has 7 (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime)", f.len()));
        }
        let t = need(uint(f[0]), "timestamp", f[0])?;
        let op = match f[3] {
            b"Read" | b"read" | b"R" => Op::Read,
            b"Write" | b"write" | b"W" => Op::Write,
            other => return Err(format!("type {:?} is not Read or Write", String::from_utf8_lossy(other))),
        };
        let mut key = f[1].to_vec();
        key.push(b'_');
        key.extend_from_slice(f[2]);
        let dev = self.intern(&key);
        Ok(Some(Record { time_ns: need(t.checked_mul(100), "timestamp", f[0])?, op, offset: need(uint(f[4]), "offset", f[4])?, len: need(uint(f[5]), "size", f[5])?, dev }))
    }

    /// FORMATS.md 1.2 (SPC, UMass): `ASU,LBA,Size,Opcode,Timestamp[,...]`; LBA in 512 B sectors,
    /// size in bytes, seconds. A space inside the timestamp (the spec's own typo) is an error.
    fn spc(&mut self, line: &[u8]) -> LineResult {
        let f = Fields::csv(line);
        if self.csv_header(f[0]) {
            return Ok(None);
        }
        if f.len() < 5 {
            return Err(format!("{} fields; SPC has at least 5 (ASU,LBA,Size,Opcode,Timestamp)", f.len()));
        }
        let op = rw_letter(f[3], "opcode")?;
        let asu = need(uint(f[0]), "ASU", f[0])?;
        Ok(Some(Record {
            time_ns: need(secs_ns(f[4]), "timestamp", f[4])?,
            op,
            offset: need(uint(f[1]).and_then(|l| l.checked_mul(512)), "LBA", f[1])?,
            len: need(uint(f[2]), "size", f[2])?,
            dev: need(u32::try_from(asu).ok(), "ASU", f[0])?,
        }))
    }

    /// FORMATS.md 1.3 (FIU): `ts_ns pid process lba size_sectors R|W major minor md5...`.
    fn fiu(line: &[u8]) -> LineResult {
        let f = Fields::ws(line);
        if f.len() < 8 {
            return Err(format!("{} fields; FIU has at least 8 (ts pid process lba size op major minor)", f.len()));
        }
        let op = rw_letter(f[5], "op")?;
        let major = need(uint(f[6]), "major", f[6])?;
        let minor = need(uint(f[7]), "minor", f[7])?;
        Ok(Some(Record {
            time_ns: need(uint(f[0]), "timestamp", f[0])?,
            op,
            offset: need(uint(f[3]).and_then(|l| l.checked_mul(512)), "lba", f[3])?,
            len: need(uint(f[4]).and_then(|l| l.checked_mul(512)), "size", f[4])?,
            dev: ((major as u32) << 20) | (minor as u32 & 0xF_FFFF),
        }))
    }

    /// FORMATS.md 1.4 (Alibaba 2020): `device_id,opcode,offset,length,timestamp`; bytes, µs.
    fn alibaba(&mut self, line: &[u8]) -> LineResult {
        let f = Fields::csv(line);
        if self.csv_header(f[0]) {
            return Ok(None);
        }
        if f.len() != 5 {
            return Err(format!("{} fields; Alibaba has 5 (device_id,opcode,offset,length,timestamp)", f.len()));
        }
        let op = rw_letter(f[1], "opcode")?;
        let dev = need(uint(f[0]).and_then(|d| u32::try_from(d).ok()), "device_id", f[0])?;
        Ok(Some(Record { time_ns: need(uint(f[4]).and_then(|t| t.checked_mul(1000)), "timestamp", f[4])?, op, offset: need(uint(f[2]), "offset", f[2])?, len: need(uint(f[3]), "length", f[3])?, dev }))
    }

    /// FORMATS.md 1.5 (Tencent CBS): `Timestamp,Offset,Size,IOType,VolumeID`; Unix seconds,
    /// sectors, 0 = read, 1 = write. Timestamps are not monotonic.
    fn tencent(&mut self, line: &[u8]) -> LineResult {
        let f = Fields::csv(line);
        if self.csv_header(f[0]) {
            return Ok(None);
        }
        if f.len() != 5 {
            return Err(format!("{} fields; Tencent CBS has 5 (Timestamp,Offset,Size,IOType,VolumeID)", f.len()));
        }
        let op = match f[3] {
            b"0" => Op::Read,
            b"1" => Op::Write,
            other => return Err(format!("IOType {:?} is not 0 (read) or 1 (write)", String::from_utf8_lossy(other))),
        };
        Ok(Some(Record {
            time_ns: need(uint(f[0]).and_then(|t| t.checked_mul(1_000_000_000)), "timestamp", f[0])?,
            op,
            offset: need(uint(f[1]).and_then(|l| l.checked_mul(512)), "offset", f[1])?,
            len: need(uint(f[2]).and_then(|l| l.checked_mul(512)), "size", f[2])?,
            dev: need(uint(f[4]).and_then(|d| u32::try_from(d).ok()), "VolumeID", f[4])?,
        }))
    }

    /// FORMATS.md 1.6 (blkparse default text): `maj,min cpu seq secs.ns pid action rwbs sector + n ...`.
    /// Only events of `blk_action` (default `D`, issue) are I/Os; `#` headers, other actions and
    /// the trailing summary block are not.
    fn blkparse(&mut self, line: &[u8]) -> LineResult {
        if line[0] == b'#' || self.in_summary {
            return Ok(None);
        }
        let f = Fields::ws(line);
        let devf = f[0];
        let Some(comma) = devf.iter().position(|&c| c == b',') else {
            if [&b"CPU"[..], b"Total", b"Throughput", b"Events", b"Skips", b"Input file"].iter().any(|p| line.starts_with(p)) {
                self.in_summary = true;
                return Ok(None);
            }
            return Err("not a blkparse event (want `maj,min cpu seq time pid action rwbs ...`)".into());
        };
        if f.len() < 7 {
            return Err(format!("{} fields; a blkparse event has at least 7", f.len()));
        }
        let major = need(uint(&devf[..comma]), "major", devf)?;
        let minor = need(uint(&devf[comma + 1..]), "minor", devf)?;
        let time_ns = need(secs_ns(f[3]), "time", f[3])?;
        if f[5] != [self.blk_action] {
            return Ok(None);
        }
        let rwbs = f[6];
        let op = if rwbs.contains(&b'D') {
            Op::Trim
        } else if rwbs.contains(&b'W') {
            Op::Write
        } else if rwbs.contains(&b'R') {
            Op::Read
        } else if rwbs.contains(&b'F') {
            Op::Flush
        } else {
            return Ok(None);
        };
        let (offset, len) = if f.len() >= 10 && f[8] == b"+" {
            (need(uint(f[7]).and_then(|s| s.checked_mul(512)), "sector", f[7])?, need(uint(f[9]).and_then(|n| n.checked_mul(512)), "sectors", f[9])?)
        } else if op == Op::Flush {
            (0, 0)
        } else {
            return Err("an I/O event without `sector + count`".into());
        };
        Ok(Some(Record { time_ns, op, offset, len, dev: ((major as u32) << 20) | (minor as u32 & 0xF_FFFF) }))
    }

    /// FORMATS.md 1.7 (fio iolog v2/v3): `[usec] filename action [offset length]`, bytes. v2's
    /// `wait` advances a clock by its microseconds (values under 100 are ignored, as fio does).
    fn fio(&mut self, line: &[u8], v3: bool) -> LineResult {
        if line.starts_with(b"fio version") {
            return Ok(None);
        }
        let f = Fields::ws(line);
        let (t, skip) = if v3 {
            if f.len() < 3 {
                return Err(format!("{} fields; a v3 iolog line is `usec filename action [offset length]`", f.len()));
            }
            (Some(need(uint(f[0]).and_then(|u| u.checked_mul(1000)), "timestamp", f[0])?), 1)
        } else {
            if f.len() < 2 {
                return Err(format!("{} fields; a v2 iolog line is `filename action [offset length]`", f.len()));
            }
            (None, 0)
        };
        let n = f.len() - skip;
        let rest = |i: usize| f.get(i + skip).unwrap_or(b"");
        let op = match rest(1) {
            b"add" | b"open" | b"close" => return Ok(None),
            b"read" => Op::Read,
            b"write" => Op::Write,
            b"trim" => Op::Trim,
            b"sync" | b"datasync" => Op::Flush,
            b"wait" if !v3 => {
                let us = need(uint(rest(2)), "wait", rest(2))?;
                if us >= 100 {
                    self.clock_ns = self.clock_ns.saturating_add(us.saturating_mul(1000));
                }
                return Ok(None);
            }
            other => return Err(format!("action {:?} is not add, open, close, read, write, trim, sync, datasync{}", String::from_utf8_lossy(other), if v3 { "" } else { " or wait" })),
        };
        let (offset, len) = if op == Op::Flush && n < 4 {
            (0, 0)
        } else {
            if n < 4 {
                return Err("an I/O line needs offset and length".into());
            }
            (need(uint(rest(2)), "offset", rest(2))?, need(uint(rest(3)), "length", rest(3))?)
        };
        let dev = self.intern(rest(0));
        Ok(Some(Record { time_ns: t.unwrap_or(self.clock_ns), op, offset, len, dev }))
    }

    /// FORMATS.md 1.8 (MQSim ASCII): `time_ns device lba_sectors size_sectors type`, type 0 = write.
    fn mqsim(line: &[u8]) -> LineResult {
        let f = Fields::ws(line);
        if f.len() != 5 {
            return Err(format!("{} fields; MQSim has 5 (time device lba size type)", f.len()));
        }
        let op = match f[4] {
            b"0" => Op::Write,
            b"1" => Op::Read,
            other => return Err(format!("type {:?} is not 0 (write) or 1 (read)", String::from_utf8_lossy(other))),
        };
        Ok(Some(Record {
            time_ns: need(uint(f[0]), "time", f[0])?,
            op,
            offset: need(uint(f[2]).and_then(|l| l.checked_mul(512)), "lba", f[2])?,
            len: need(uint(f[3]).and_then(|l| l.checked_mul(512)), "size", f[3])?,
            dev: need(uint(f[1]).and_then(|d| u32::try_from(d).ok()), "device", f[1])?,
        }))
    }

    /// FORMATS.md 1.9 (DiskSim ASCII): `time_ms devno blkno bcount flags`; float ms, 512 B
    /// blocks, hex flags with bit 0 = read.
    fn disksim(line: &[u8]) -> LineResult {
        let f = Fields::ws(line);
        if f.len() != 5 {
            return Err(format!("{} fields; DiskSim has 5 (time devno blkno bcount flags)", f.len()));
        }
        let ms = need(float(f[0]), "time", f[0])?;
        let hex = f[4].strip_prefix(b"0x").unwrap_or(f[4]);
        let flags = need(std::str::from_utf8(hex).ok().and_then(|s| u64::from_str_radix(s, 16).ok()), "flags", f[4])?;
        Ok(Some(Record {
            time_ns: (ms * 1e6).round() as u64,
            op: if flags & 1 == 1 { Op::Read } else { Op::Write },
            offset: need(uint(f[2]).and_then(|l| l.checked_mul(512)), "blkno", f[2])?,
            len: need(uint(f[3]).and_then(|l| l.checked_mul(512)), "bcount", f[3])?,
            dev: need(uint(f[1]).and_then(|d| u32::try_from(d).ok()), "devno", f[1])?,
        }))
    }
}
