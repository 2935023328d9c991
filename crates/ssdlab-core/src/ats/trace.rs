//! DMA address trace readers, streaming in bounded memory.
//!
//! - Raw: little-endian u64 addresses, 8 bytes each (`.bin`, `.raw`, `.u64`).
//! - Text/CSV: one access per line; fields split by commas or white space; `#` starts a
//!   comment. Without a header the first field is the address. A header line names the
//!   columns: `addr` (required), `size`, `pasid` (or `vm`), `kind` (or `queue`, `dir`): kinds
//!   `sq`, `cq` and `pin` mark pinned translations; other columns are ignored. Addresses are
//!   decimal, or hex with a `0x` prefix.
//!
//! A malformed line (invalid UTF-8 included) is an error naming `file:line` and the text; with
//! `skip_bad` it is skipped and counted instead.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::{addresses, Access};
use crate::error::{Error, Result};

/// Trace layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Raw,
    Text,
}

impl Format {
    /// Guesses the layout from the file name.
    pub fn detect(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some("bin" | "raw" | "u64") => Format::Raw,
            _ => Format::Text,
        }
    }
}

fn open(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| Error::Io { path: path.display().to_string(), message: e.to_string() })
}

/// Streams a raw trace, a few MiB at a time.
pub struct RawReader {
    path: String,
    f: File,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
}

/// Bytes a raw reader reads at once.
const RAW_BLOCK: usize = 256 << 10;

impl RawReader {
    pub fn open(path: &Path) -> Result<Self> {
        let f = open(path)?;
        let len = f.metadata().map_or(0, |m| m.len());
        if len % 8 != 0 {
            return Err(Error::Trace {
                location: format!("{}:byte {}", path.display(), len - len % 8),
                text: format!("{} trailing bytes", len % 8),
                reason: "a raw trace is a sequence of 8-byte little-endian addresses".into(),
            });
        }
        Ok(RawReader { path: path.display().to_string(), f, buf: vec![0; RAW_BLOCK], pos: 0, len: 0 })
    }

    /// Reads the next block (whole addresses); false at the end of the file.
    fn refill(&mut self) -> std::io::Result<bool> {
        let keep = self.len - self.pos;
        self.buf.copy_within(self.pos..self.len, 0);
        let mut len = keep;
        while len < 8 || !len.is_multiple_of(8) {
            let n = self.f.read(&mut self.buf[len..])?;
            if n == 0 {
                break;
            }
            len += n;
        }
        self.pos = 0;
        self.len = len - len % 8;
        Ok(self.len > 0)
    }
}

impl RawReader {
    /// The same accesses, a block at a time (decoded straight from the read buffer).
    pub fn blocks(self) -> RawBlocks {
        RawBlocks(self)
    }
}

/// Appends the accesses of whole little-endian u64 addresses in `bytes` to `out`.
fn decode(bytes: &[u8], out: &mut Vec<Access>) {
    out.extend(addresses(bytes).map(|addr| Access { addr, size: 0, pasid: 0, pinned: false }));
}

/// A raw trace read a block at a time: see [`RawReader::blocks`].
pub struct RawBlocks(RawReader);

impl RawBlocks {
    /// The bytes of the next block's whole addresses; None at the end.
    fn next_bytes(&mut self) -> Result<Option<&[u8]>> {
        let r = &mut self.0;
        if r.pos + 8 > r.len && !r.refill().map_err(|e| Error::Io { path: r.path.clone(), message: e.to_string() })? {
            return Ok(None);
        }
        let (start, end) = (r.pos, r.len.min(r.pos + 8 * super::BLOCK));
        r.pos = end;
        Ok(Some(&r.buf[start..end]))
    }
}

impl super::Blocks for RawBlocks {
    fn next_block(&mut self, out: &mut Vec<Access>) -> Result<bool> {
        Ok(self.next_bytes()?.map(|b| decode(b, out)).is_some())
    }

    fn bare(&self) -> bool {
        true
    }

    fn next_addresses(&mut self) -> Result<Option<&[u8]>> {
        self.next_bytes()
    }
}

/// Addresses held in memory as little-endian u64s (a Parquet or Arrow column), handed over a
/// block at a time; a trailing partial address is ignored.
pub struct AddressBlocks<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> AddressBlocks<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        AddressBlocks { bytes, pos: 0 }
    }
}

impl AddressBlocks<'_> {
    /// The bytes of the next block's whole addresses; None at the end.
    fn next_bytes(&mut self) -> Option<&[u8]> {
        let whole = self.bytes.len() - self.bytes.len() % 8;
        let end = whole.min(self.pos + 8 * super::BLOCK);
        if self.pos >= end {
            return None;
        }
        let start = std::mem::replace(&mut self.pos, end);
        Some(&self.bytes[start..end])
    }
}

impl super::Blocks for AddressBlocks<'_> {
    fn next_block(&mut self, out: &mut Vec<Access>) -> Result<bool> {
        Ok(self.next_bytes().map(|b| decode(b, out)).is_some())
    }

    fn bare(&self) -> bool {
        true
    }

    fn next_addresses(&mut self) -> Result<Option<&[u8]>> {
        Ok(self.next_bytes())
    }
}

impl Iterator for RawReader {
    type Item = Result<Access>;
    #[inline]
    fn next(&mut self) -> Option<Result<Access>> {
        if self.pos + 8 > self.len {
            match self.refill() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(Err(Error::Io { path: self.path.clone(), message: e.to_string() })),
            }
        }
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.buf[self.pos..self.pos + 8]);
        self.pos += 8;
        Some(Ok(Access { addr: u64::from_le_bytes(b), size: 0, pasid: 0, pinned: false }))
    }
}

#[derive(Clone, Copy, Default)]
struct Columns {
    addr: usize,
    size: Option<usize>,
    pasid: Option<usize>,
    kind: Option<usize>,
}

/// Streams a text trace.
pub struct TextReader<R: BufRead> {
    name: String,
    r: R,
    line: u64,
    buf: Vec<u8>,
    cols: Option<Columns>,
    skip_bad: bool,
    /// Lines skipped as malformed (with `skip_bad`).
    pub skipped: u64,
}

impl TextReader<BufReader<File>> {
    pub fn open(path: &Path, skip_bad: bool) -> Result<Self> {
        Ok(TextReader::new(path.display().to_string(), BufReader::with_capacity(1 << 20, open(path)?), skip_bad))
    }
}

impl<R: BufRead> TextReader<R> {
    pub fn new(name: String, r: R, skip_bad: bool) -> Self {
        TextReader { name, r, line: 0, buf: Vec::new(), cols: None, skip_bad, skipped: 0 }
    }

    fn bad(&self, text: &str, reason: impl Into<String>) -> Error {
        Error::Trace { location: format!("{}:{}", self.name, self.line), text: text.to_string(), reason: reason.into() }
    }

    fn parse(&self, line: &str, cols: Columns) -> Result<Access> {
        let fields: Vec<&str> = line.split(|c: char| c == ',' || c.is_whitespace()).filter(|f| !f.is_empty()).collect();
        let field = |i: usize| fields.get(i).copied();
        let Some(a) = field(cols.addr) else { return Err(self.bad(line, "no address field")) };
        let addr = parse_u64(a).ok_or_else(|| self.bad(line, format!("{a:?} is not an address (decimal, or hex with 0x)")))?;
        let size = match cols.size.and_then(field) {
            Some(s) => u32::try_from(parse_u64(s).ok_or_else(|| self.bad(line, format!("{s:?} is not a size")))?).map_err(|_| self.bad(line, "size too large"))?,
            None => 0,
        };
        let pasid = match cols.pasid.and_then(field) {
            Some(s) => u32::try_from(parse_u64(s).ok_or_else(|| self.bad(line, format!("{s:?} is not a PASID")))?).map_err(|_| self.bad(line, "PASID too large"))?,
            None => 0,
        };
        let pinned = cols.kind.and_then(field).is_some_and(|k| matches!(k.to_ascii_lowercase().as_str(), "sq" | "cq" | "pin" | "pinned"));
        Ok(Access { addr, size, pasid, pinned })
    }
}

fn parse_u64(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(&h.replace('_', ""), 16).ok(),
        None => s.replace('_', "").parse().ok(),
    }
}

impl<R: BufRead> Iterator for TextReader<R> {
    type Item = Result<Access>;
    fn next(&mut self) -> Option<Result<Access>> {
        loop {
            self.buf.clear();
            match self.r.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(Error::Io { path: self.name.clone(), message: e.to_string() })),
            }
            self.line += 1;
            let text = match std::str::from_utf8(&self.buf) {
                Ok(t) => t.split('#').next().unwrap_or("").trim().to_string(),
                Err(e) => {
                    let bad = self.bad(String::from_utf8_lossy(&self.buf).trim_end(), format!("invalid UTF-8 at byte {} of the line", e.valid_up_to() + 1));
                    if self.skip_bad {
                        self.skipped += 1;
                        continue;
                    }
                    return Some(Err(bad));
                }
            };
            if text.is_empty() {
                continue;
            }
            let cols = if let Some(c) = self.cols {
                c
            } else {
                let names: Vec<String> = text.split(|c: char| c == ',' || c.is_whitespace()).filter(|f| !f.is_empty()).map(str::to_ascii_lowercase).collect();
                if names.is_empty() {
                    // Only separators (","): no address, reported below; not a header.
                    Columns::default()
                } else if parse_u64(&names[0]).is_some() {
                    self.cols = Some(Columns::default());
                    Columns::default()
                } else {
                    let find = |alts: &[&str]| names.iter().position(|n| alts.contains(&n.as_str()));
                    let Some(addr) = find(&["addr", "address", "dma_addr", "iova"]) else {
                        return Some(Err(self.bad(&text, "header has no addr column (expected addr, size, pasid, kind)")));
                    };
                    self.cols = Some(Columns { addr, size: find(&["size", "len", "bytes"]), pasid: find(&["pasid", "vm"]), kind: find(&["kind", "queue", "dir", "type"]) });
                    continue;
                }
            };
            match self.parse(&text, cols) {
                Ok(a) => return Some(Ok(a)),
                Err(_) if self.skip_bad => self.skipped += 1,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, skip: bool) -> (Vec<Result<Access>>, u64) {
        let mut r = TextReader::new("t.csv".into(), text.as_bytes(), skip);
        let v: Vec<_> = r.by_ref().collect();
        (v, r.skipped)
    }

    #[test]
    fn addresses_in_memory_come_in_blocks() {
        use crate::ats::Blocks as _;
        let n = crate::ats::BLOCK * 2 + 3;
        let mut bytes: Vec<u8> = (0..n as u64).flat_map(|a| (a << 12).to_le_bytes()).collect();
        bytes.push(7); // a torn last address is left out
        let mut src = AddressBlocks::new(&bytes);
        let (mut all, mut block, mut calls) = (Vec::new(), Vec::new(), 0);
        while src.next_block(&mut block).unwrap() {
            calls += 1;
            all.append(&mut block);
        }
        assert_eq!(calls, 3);
        assert_eq!(all.len(), n);
        assert!(all.iter().enumerate().all(|(i, a)| a.addr == (i as u64) << 12 && a.size == 0 && a.pasid == 0));
    }

    #[test]
    fn text_with_and_without_header() {
        let (v, _) = read("0x1000\n4096 # comment\n\n  8192\n", false);
        let addrs: Vec<u64> = v.into_iter().map(|a| a.unwrap().addr).collect();
        assert_eq!(addrs, vec![0x1000, 4096, 8192]);
        let (v, _) = read("kind,addr,size,pasid\nsq,0x10,64,1\ndata,0x2000,4096,2\n", false);
        let a: Vec<Access> = v.into_iter().map(Result::unwrap).collect();
        assert_eq!(a[0], Access { addr: 0x10, size: 64, pasid: 1, pinned: true });
        assert_eq!(a[1], Access { addr: 0x2000, size: 4096, pasid: 2, pinned: false });
    }

    #[test]
    fn bad_lines_name_file_and_line_or_are_skipped() {
        let (v, _) = read("0x10\nzebra\n0x20\n", false);
        let err = v.into_iter().find_map(Result::err).unwrap().to_string();
        assert!(err.starts_with("t.csv:2:") && err.contains("zebra"), "{err}");
        let (v, skipped) = read("0x10\nzebra\n0x20\n", true);
        assert_eq!((v.len(), skipped), (2, 1));
        // A line of separators only is a line without an address, not a header (it panicked).
        let (v, _) = read(",\n0x10\n", false);
        assert!(v[0].as_ref().unwrap_err().to_string().starts_with("t.csv:1:"), "{:?}", v[0]);
        assert_eq!(read(",\n0x10\n", true).1, 1);
        let (v, _) = read("foo,bar\n1,2\n", false);
        assert!(v[0].as_ref().unwrap_err().to_string().contains("no addr column"));
    }

    #[test]
    fn invalid_utf8_names_its_line_or_is_skipped() {
        let text: &[u8] = b"0x10\n0x2\xff0\n0x30\n";
        let mut r = TextReader::new("t.csv".into(), text, false);
        let err = r.by_ref().find_map(Result::err).unwrap().to_string();
        assert!(err.starts_with("t.csv:2:") && err.contains("invalid UTF-8"), "{err}");
        let mut r = TextReader::new("t.csv".into(), text, true);
        let addrs: Vec<u64> = r.by_ref().map(|a| a.unwrap().addr).collect();
        assert_eq!((addrs, r.skipped), (vec![0x10, 0x30], 1));
    }
}
