//! The emulated drive's data: what the host wrote, so that reads return it. Sparse, in 4 KiB
//! chunks: in memory up to a limit, then in a spill file (at each chunk's own offset, so the
//! file is sparse too). A chunk never written, trimmed or zeroed reads as zeroes. With
//! checksums on (integrity mode), every chunk keeps a hash of its bytes, checked on each read.
//!
//! Leaves out: persistence across runs (the spill file is scratch, removed on drop).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};

/// Bytes per chunk.
pub const CHUNK: u64 = 4096;

/// Where a chunk's bytes are.
enum Place {
    Memory(Box<[u8]>),
    /// In the spill file at `index × CHUNK`.
    File,
}

struct Chunk {
    place: Place,
    /// The hash of the chunk's bytes (integrity mode), else 0.
    sum: u64,
}

/// What the store holds and what its checks found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoreStats {
    /// Chunks holding data (not zeroes), in memory and in the spill file.
    pub chunks_in_memory: u64,
    pub chunks_in_file: u64,
    /// Chunks read and checked against their checksum (integrity mode), and those whose bytes
    /// did not match it.
    pub checked: u64,
    pub corrupt: u64,
}

/// A sparse byte store of `capacity` bytes.
pub struct Store {
    capacity: u64,
    chunks: FxHashMap<u64, Chunk>,
    /// Chunks that may stay in memory; past them new chunks go to the spill file.
    memory_chunks: u64,
    spill_dir: PathBuf,
    spill: Option<(File, PathBuf)>,
    checksums: bool,
    stats: StoreStats,
}

impl Store {
    /// A store of `capacity` bytes keeping up to `memory_limit` bytes in memory and the rest in
    /// a spill file created in `spill_dir` when first needed.
    pub fn new(capacity: u64, memory_limit: u64, spill_dir: &Path, checksums: bool) -> Self {
        Store { capacity, chunks: FxHashMap::default(), memory_chunks: memory_limit / CHUNK, spill_dir: spill_dir.to_path_buf(), spill: None, checksums, stats: StoreStats::default() }
    }

    pub fn stats(&self) -> StoreStats {
        self.stats
    }

    /// Whether `len` bytes at `offset` lie inside the store.
    pub fn contains(&self, offset: u64, len: u64) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= self.capacity)
    }

    /// Copies the bytes at `offset` into `buf`.
    pub fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.check_range(offset, buf.len() as u64)?;
        for (index, within, done, n) in pieces(offset, buf.len()) {
            let out = &mut buf[done..done + n];
            match self.chunks.get(&index) {
                None => out.fill(0),
                Some(c) => {
                    let mut whole = [0u8; CHUNK as usize];
                    match &c.place {
                        Place::Memory(b) => whole.copy_from_slice(b),
                        Place::File => self.read_spill(index, &mut whole)?,
                    }
                    if self.checksums {
                        self.stats.checked += 1;
                        if hash(&whole) != c.sum {
                            self.stats.corrupt += 1;
                        }
                    }
                    out.copy_from_slice(&whole[within..within + n]);
                }
            }
        }
        Ok(())
    }

    /// Stores `data` at `offset`.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        self.check_range(offset, data.len() as u64)?;
        for (index, within, done, n) in pieces(offset, data.len()) {
            let mut whole = [0u8; CHUNK as usize];
            if n < CHUNK as usize {
                self.whole_chunk(index, &mut whole)?;
            }
            whole[within..within + n].copy_from_slice(&data[done..done + n]);
            self.put(index, &whole)?;
        }
        Ok(())
    }

    /// Zeroes `len` bytes at `offset` (a trim or a write of zeroes): whole chunks are dropped.
    pub fn zero(&mut self, offset: u64, len: u64) -> Result<()> {
        self.check_range(offset, len)?;
        let end = offset + len;
        let mut at = offset;
        while at < end {
            let (index, within) = (at / CHUNK, at % CHUNK);
            let n = (CHUNK - within).min(end - at);
            if n == CHUNK {
                if let Some(c) = self.chunks.remove(&index) {
                    self.count(&c.place, -1);
                }
            } else if self.chunks.contains_key(&index) {
                let mut whole = [0u8; CHUNK as usize];
                self.whole_chunk(index, &mut whole)?;
                whole[within as usize..(within + n) as usize].fill(0);
                self.put(index, &whole)?;
            }
            at += n;
        }
        Ok(())
    }

    fn check_range(&self, offset: u64, len: u64) -> Result<()> {
        if self.contains(offset, len) {
            Ok(())
        } else {
            Err(Error::workload("emulate.request", format!("{len} bytes at {offset}"), format!("past the end of the drive ({} bytes)", self.capacity)))
        }
    }

    /// The bytes of chunk `index` (zeroes if it holds none).
    fn whole_chunk(&self, index: u64, out: &mut [u8; CHUNK as usize]) -> Result<()> {
        match self.chunks.get(&index).map(|c| &c.place) {
            None => out.fill(0),
            Some(Place::Memory(b)) => out.copy_from_slice(b),
            Some(Place::File) => self.read_spill(index, out)?,
        }
        Ok(())
    }

    /// Sets chunk `index` to `bytes`: in memory if it is there or there is room, else in the
    /// spill file. A chunk of zeroes is dropped.
    fn put(&mut self, index: u64, bytes: &[u8; CHUNK as usize]) -> Result<()> {
        if bytes.iter().all(|&b| b == 0) {
            if let Some(c) = self.chunks.remove(&index) {
                self.count(&c.place, -1);
            }
            return Ok(());
        }
        let sum = if self.checksums { hash(bytes) } else { 0 };
        match self.chunks.get_mut(&index) {
            Some(Chunk { place: Place::Memory(b), sum: s }) => {
                b.copy_from_slice(bytes);
                *s = sum;
                return Ok(());
            }
            Some(Chunk { place: Place::File, sum: s }) => {
                *s = sum;
                return self.write_spill(index, bytes);
            }
            None => {}
        }
        let place = if self.stats.chunks_in_memory < self.memory_chunks {
            Place::Memory(Box::from(&bytes[..]))
        } else {
            self.write_spill(index, bytes)?;
            Place::File
        };
        self.count(&place, 1);
        self.chunks.insert(index, Chunk { place, sum });
        Ok(())
    }

    fn count(&mut self, place: &Place, by: i64) {
        let n = match place {
            Place::Memory(_) => &mut self.stats.chunks_in_memory,
            Place::File => &mut self.stats.chunks_in_file,
        };
        *n = n.saturating_add_signed(by);
    }

    fn write_spill(&mut self, index: u64, bytes: &[u8]) -> Result<()> {
        if self.spill.is_none() {
            // Unique per store: several may share a directory and a process.
            static STORES: AtomicU64 = AtomicU64::new(0);
            let n = STORES.fetch_add(1, Ordering::Relaxed);
            let path = self.spill_dir.join(format!("ssdlab-serve-{}-{n}.data", std::process::id()));
            let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).map_err(|e| io_error(&path, &e))?;
            self.spill = Some((f, path));
        }
        match &self.spill {
            Some((f, path)) => f.write_all_at(bytes, index * CHUNK).map_err(|e| io_error(path, &e)),
            None => Ok(()),
        }
    }

    fn read_spill(&self, index: u64, out: &mut [u8]) -> Result<()> {
        match &self.spill {
            Some((f, path)) => f.read_exact_at(out, index * CHUNK).map_err(|e| io_error(path, &e)),
            None => Err(io_error(&self.spill_dir, &std::io::Error::other("a chunk is marked spilled but no spill file was made"))),
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some((_, path)) = self.spill.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The chunks `len` bytes at `offset` touch: (chunk index, offset within it, bytes before it,
/// bytes in it).
fn pieces(offset: u64, len: usize) -> impl Iterator<Item = (u64, usize, usize, usize)> {
    let mut done = 0usize;
    std::iter::from_fn(move || {
        (done < len).then(|| {
            let at = offset + done as u64;
            let (index, within) = (at / CHUNK, (at % CHUNK) as usize);
            let n = (CHUNK as usize - within).min(len - done);
            let piece = (index, within, done, n);
            done += n;
            piece
        })
    })
}

fn io_error(path: &Path, e: &std::io::Error) -> Error {
    Error::Io { path: path.display().to_string(), message: format!("the data store's spill file: {e}") }
}

/// FNV-1a over the bytes, 64 bits (a checksum, not a defence against an adversary).
fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(seed: u8, n: usize) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) | 1).collect()
    }

    /// Checked against a byte-for-byte model: a plain vector.
    #[test]
    fn reads_return_what_was_written_in_memory_and_past_the_limit() {
        let dir = std::env::temp_dir();
        let cap = 1 << 20;
        // Room for 8 chunks in memory: the rest spill.
        let mut s = Store::new(cap, 8 * CHUNK, &dir, true);
        let mut model = vec![0u8; cap as usize];
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for round in 0..400 {
            let len = 1 + next() % 20_000;
            let off = next() % (cap - len);
            match next() % 4 {
                0 | 1 => {
                    let data = pattern(round as u8, len as usize);
                    s.write(off, &data).unwrap();
                    model[off as usize..(off + len) as usize].copy_from_slice(&data);
                }
                2 => {
                    s.zero(off, len).unwrap();
                    model[off as usize..(off + len) as usize].fill(0);
                }
                _ => {
                    let mut buf = vec![7u8; len as usize];
                    s.read(off, &mut buf).unwrap();
                    assert_eq!(buf, &model[off as usize..(off + len) as usize], "round {round}");
                }
            }
        }
        let mut all = vec![0u8; cap as usize];
        s.read(0, &mut all).unwrap();
        assert_eq!(all, model);
        let st = s.stats();
        assert!(st.chunks_in_memory <= 8 && st.chunks_in_file > 0, "{st:?}");
        assert_eq!(st.corrupt, 0);
        assert!(st.checked > 0);
    }

    #[test]
    fn a_request_past_the_end_is_refused_and_changes_nothing() {
        let mut s = Store::new(8192, 1 << 20, &std::env::temp_dir(), false);
        s.write(0, &[1u8; 4096]).unwrap();
        assert!(s.write(8000, &[2u8; 200]).is_err());
        assert!(s.zero(u64::MAX - 10, 20).is_err());
        let mut buf = [0u8; 4096];
        assert!(s.read(4097, &mut buf).is_err());
        s.read(0, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 1));
    }
}
