//! Block I/O traces in the formats storage people keep: MSR Cambridge, SPC/UMass, FIU,
//! Alibaba 2020, Tencent CBS, blkparse text, fio iolog v2/v3, MQSim and DiskSim ASCII.
//!
//! Every format is read into one canonical [`Record`] (time in ns, op, byte offset and length,
//! device id), streaming, with bounded memory; plain, gzip, bzip2, xz and zstd files alike, and
//! the canonical Parquet that `ssdlab trace convert` writes ([`columnar`]). The format is
//! detected from the first lines that parse unless given. Malformed lines are errors naming
//! `file:line` and the text; in lenient mode they are skipped and counted. So is a request
//! whose last byte lies beyond 64-bit byte addresses. Zero-length reads, writes and
//! trims are dropped and counted. Times keep the trace's own origin (absolute for MSR, Alibaba
//! and Tencent); consumers rebase them and handle non-monotonic times (Tencent's are).
//!
//! Leaves out: blktrace binaries, camelab `.revised` traces and Windows ETW text (no sample to
//! test against), and the MSR response-time column (a latency of the original system).

pub mod columnar;
mod formats;
pub mod stats;

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::io::Op;
use formats::Parser;

/// One I/O of a trace, in canonical units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Issue time in ns from the trace's own origin.
    pub time_ns: u64,
    pub op: Op,
    /// Byte offset on its device.
    pub offset: u64,
    /// Bytes (0 only for flushes).
    pub len: u64,
    /// Device, volume or file, as a small id (names are interned in order of appearance).
    pub dev: u32,
}

/// The trace formats ssdlab reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Msr,
    Spc,
    Fiu,
    Alibaba,
    Tencent,
    Blkparse,
    FioV2,
    FioV3,
    Mqsim,
    Disksim,
    /// The canonical Parquet (recognised by its magic, never by detection from lines).
    Parquet,
}

impl Format {
    /// Names as the CLI takes them; also the order detection tries them in.
    pub const ALL: [(Format, &'static str); 10] = [
        (Format::FioV3, "fio-v3"),
        (Format::FioV2, "fio-v2"),
        (Format::Blkparse, "blkparse"),
        (Format::Msr, "msr"),
        (Format::Alibaba, "alibaba"),
        (Format::Spc, "spc"),
        (Format::Tencent, "tencent"),
        (Format::Fiu, "fiu"),
        (Format::Mqsim, "mqsim"),
        (Format::Disksim, "disksim"),
    ];

    pub fn name(self) -> &'static str {
        if self == Format::Parquet {
            return "parquet";
        }
        Format::ALL.iter().find(|(f, _)| *f == self).map_or("?", |(_, n)| n)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        if s == "parquet" {
            return Ok(Format::Parquet);
        }
        Format::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(f, _)| *f)
            .ok_or_else(|| format!("unknown trace format {s:?} (known: {}, parquet)", Format::ALL.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ")))
    }
}

/// Read buffer size.
const BUF: usize = 1 << 20;

/// The first bytes of a file.
fn head(path: &Path) -> Result<([u8; 6], usize)> {
    let io = |e: std::io::Error| Error::Io { path: path.display().to_string(), message: e.to_string() };
    let mut f = File::open(path).map_err(io)?;
    let mut magic = [0u8; 6];
    let mut n = 0;
    while n < magic.len() {
        let k = f.read(&mut magic[n..]).map_err(io)?;
        if k == 0 {
            break;
        }
        n += k;
    }
    Ok((magic, n))
}

/// Opens a file, undoing gzip, bzip2, xz or zstd compression (recognised by magic bytes).
fn open_stream(path: &Path) -> Result<Box<dyn BufRead + Send + Sync>> {
    let io = |e: std::io::Error| Error::Io { path: path.display().to_string(), message: e.to_string() };
    let (magic, n) = head(path)?;
    let f = File::open(path).map_err(io)?;
    let raw = BufReader::with_capacity(BUF, f);
    Ok(if n >= 2 && magic[..2] == [0x1f, 0x8b] {
        Box::new(BufReader::with_capacity(BUF, flate2::read::MultiGzDecoder::new(raw)))
    } else if n >= 3 && &magic[..3] == b"BZh" {
        Box::new(BufReader::with_capacity(BUF, bzip2::read::MultiBzDecoder::new(raw)))
    } else if n >= 6 && magic == [0xfd, b'7', b'z', b'X', b'Z', 0] {
        Box::new(BufReader::with_capacity(BUF, lzma_rust2::XzReader::new(raw, true)))
    } else if n >= 4 && magic[..4] == [0x28, 0xb5, 0x2f, 0xfd] {
        Box::new(BufReader::with_capacity(BUF, zstd::stream::read::Decoder::with_buffer(raw).map_err(io)?))
    } else {
        Box::new(raw)
    })
}

/// Lines used to detect a format.
const DETECT_LINES: usize = 64;

/// Picks the format under which the first lines parse with no error and give the most I/Os;
/// if none parses them all, the one under which they give the most I/Os (more than malformed
/// lines), then the fewest malformed lines (Parquet by its magic). So a malformed line does not
/// hide the format: reading reports it under its own number, or skips it in lenient mode.
pub fn detect(path: &Path) -> Result<Format> {
    if columnar::is_parquet(&head(path)?.0) {
        return Ok(Format::Parquet);
    }
    let mut src = open_stream(path)?;
    let mut lines = Vec::new();
    let mut buf = Vec::new();
    while lines.len() < DETECT_LINES {
        buf.clear();
        let n = src.read_until(b'\n', &mut buf).map_err(|e| Error::Io { path: path.display().to_string(), message: e.to_string() })?;
        if n == 0 {
            break;
        }
        lines.push(buf.clone());
    }
    let mut best: Option<(Format, usize, usize)> = None;
    for (format, _) in Format::ALL {
        let mut p = Parser::new(format);
        let (mut ios, mut bad) = (0, 0);
        for l in &lines {
            match p.parse(l) {
                Ok(Some(_)) => ios += 1,
                Ok(None) => {}
                Err(_) => bad += 1,
            }
        }
        let rank = |ios: usize, bad: usize| (bad == 0, ios, std::cmp::Reverse(bad));
        if ios > bad && best.is_none_or(|(_, i, b)| rank(ios, bad) > rank(i, b)) {
            best = Some((format, ios, bad));
        }
    }
    best.map(|(f, _, _)| f).ok_or_else(|| Error::Trace {
        location: format!("{}:1", path.display()),
        text: lines.first().map(|l| String::from_utf8_lossy(l).trim_end().to_string()).unwrap_or_default(),
        reason: "no known trace format parses the first lines; name one with --format".into(),
    })
}

/// Options of a [`TraceReader`].
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// `None`: detect from the first lines.
    pub format: Option<Format>,
    /// Stop at the first malformed line (else skip it and count it).
    pub strict: bool,
    /// blkparse: the action whose events are I/Os (`D` issue, or `Q` queue).
    pub blk_action: u8,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { format: None, strict: true, blk_action: b'D' }
    }
}

/// What a reader met besides records.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReadCounts {
    pub lines: u64,
    /// Malformed lines skipped (lenient mode).
    pub bad_lines: u64,
    /// The first malformed line skipped: `file:line: reason: text`.
    pub first_bad: Option<String>,
    /// Reads, writes or trims of zero bytes, dropped.
    pub zero_length: u64,
}

/// Where a reader's records come from.
enum Input {
    /// Lines of text, parsed one by one.
    Text { src: Box<dyn BufRead + Send + Sync>, parser: Box<Parser>, buf: Vec<u8> },
    /// Row groups of the canonical Parquet.
    Parquet(Box<columnar::ParquetSource>),
}

/// Streams the records of one trace file.
pub struct TraceReader {
    name: String,
    input: Input,
    strict: bool,
    pub format: Format,
    pub counts: ReadCounts,
}

impl TraceReader {
    pub fn open(path: &Path, opts: &ReadOptions) -> Result<Self> {
        let format = match opts.format {
            Some(f) => f,
            None => detect(path)?,
        };
        let is_parquet = columnar::is_parquet(&head(path)?.0);
        let input = match (format, is_parquet) {
            (Format::Parquet, true) => Input::Parquet(Box::new(columnar::ParquetSource::open(path)?)),
            (Format::Parquet, false) => {
                return Err(Error::Trace { location: path.display().to_string(), text: String::new(), reason: "--format parquet: the file is not Parquet (no PAR1 magic)".into() })
            }
            (_, true) => {
                return Err(Error::Trace { location: path.display().to_string(), text: String::new(), reason: format!("the file is Parquet, not {format} text: leave --format out or give parquet") })
            }
            (f, false) => {
                let mut parser = Parser::new(f);
                parser.blk_action = opts.blk_action;
                Input::Text { src: open_stream(path)?, parser: Box::new(parser), buf: Vec::with_capacity(256) }
            }
        };
        Ok(TraceReader { name: path.display().to_string(), input, strict: opts.strict, format, counts: ReadCounts::default() })
    }

    /// Reads text from any byte stream (tests, stdin); `name` is used in messages.
    pub fn from_reader(name: &str, src: Box<dyn BufRead + Send + Sync>, format: Format, strict: bool) -> Self {
        TraceReader { name: name.into(), input: Input::Text { src, parser: Box::new(Parser::new(format)), buf: Vec::new() }, strict, format, counts: ReadCounts::default() }
    }

    /// `file:line` of the line read last.
    pub fn location(&self) -> String {
        format!("{}:{}", self.name, self.counts.lines)
    }

    /// Device names for formats that name devices (MSR host_disk, fio file names).
    pub fn device_names(&self) -> Vec<String> {
        match &self.input {
            Input::Text { parser, .. } => parser.device_names(),
            Input::Parquet(p) => p.device_names(),
        }
    }

    /// The next record; `Ok(None)` at the end.
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        let (src, parser, buf) = match &mut self.input {
            Input::Text { src, parser, buf } => (src, parser, buf),
            Input::Parquet(p) => loop {
                let r = p.next_record()?;
                if let Some(r) = r {
                    self.counts.lines += 1;
                    if r.len == 0 && r.op != Op::Flush {
                        self.counts.zero_length += 1;
                        continue;
                    }
                }
                return Ok(r);
            },
        };
        loop {
            buf.clear();
            let n = src.read_until(b'\n', buf).map_err(|e| Error::Io { path: self.name.clone(), message: e.to_string() })?;
            if n == 0 {
                return Ok(None);
            }
            self.counts.lines += 1;
            let parsed = parser.parse(buf).and_then(|r| match r {
                Some(r) if r.offset.checked_add(r.len.saturating_sub(1)).is_none() => Err(format!("offset {} + length {} is beyond 64-bit byte addresses", r.offset, r.len)),
                r => Ok(r),
            });
            match parsed {
                Ok(Some(r)) => {
                    if r.len == 0 && r.op != Op::Flush {
                        self.counts.zero_length += 1;
                        continue;
                    }
                    return Ok(Some(r));
                }
                Ok(None) => {}
                Err(reason) => {
                    let location = format!("{}:{}", self.name, self.counts.lines);
                    let text = String::from_utf8_lossy(buf).trim_end().chars().take(200).collect::<String>();
                    let reason = format!("{reason} ({} trace)", self.format);
                    if self.strict {
                        return Err(Error::Trace { location, text, reason });
                    }
                    self.counts.bad_lines += 1;
                    if self.counts.first_bad.is_none() {
                        self.counts.first_bad = Some(format!("{location}: {reason}: {text:?}"));
                    }
                }
            }
        }
    }
}

impl Iterator for TraceReader {
    type Item = Result<Record>;
    fn next(&mut self) -> Option<Result<Record>> {
        self.next_record().transpose()
    }
}
