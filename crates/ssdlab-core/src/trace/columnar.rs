//! The canonical Parquet trace (`ssdlab trace convert`), read back one row group at a time.
//!
//! Columns: `time_ns` (int64, from the time origin), `op` (`read`, `write`, `trim`, `flush`),
//! `offset` and `len` (uint64 bytes) and `dev` (the device's name, or a uint32 id). The file's
//! `ssdlab.trace` metadata (JSON) carries `schema_version`, the trace's `time_origin_ns` (added
//! back, so records keep the original's times) and the source format. Files written by another
//! tool with the same columns read too (origin 0).
//!
//! Leaves out: nested or repeated columns, and nulls (a null is an error naming the row).

use std::fs::File;
use std::path::Path;

use parquet::basic::Type as Physical;
use parquet::column::reader::ColumnReader;
use parquet::data_type::ByteArray;
use parquet::file::reader::{FileReader, SerializedFileReader};
use rustc_hash::FxHashMap;

use super::{Op, Record};
use crate::error::{Error, Result};

/// Rows reserved ahead of reading: a row group's row count comes from the file, which may lie
/// (a corrupt count of 8e8 rows reserved 6.4 GB).
const RESERVE: usize = 1 << 16;

/// The newest layout this reader knows.
pub const SCHEMA_VERSION: u64 = 2;

/// Whether `path` starts with Parquet's magic.
pub fn is_parquet(head: &[u8]) -> bool {
    head.starts_with(b"PAR1")
}

/// The records of one canonical Parquet file.
pub struct ParquetSource {
    name: String,
    reader: SerializedFileReader<File>,
    /// Column index of time_ns, op, offset, len, dev.
    cols: [usize; 5],
    origin: i128,
    group: usize,
    rows: Vec<Record>,
    pos: usize,
    /// Rows read before this group (for messages).
    before: u64,
    names: Vec<String>,
    ids: FxHashMap<Vec<u8>, u32>,
    /// The `dev` text is a numeric id.
    numeric: bool,
}

fn err(name: &str, reason: impl Into<String>) -> Error {
    Error::Trace { location: name.to_string(), text: String::new(), reason: reason.into() }
}

/// Runs `f`, turning a panic of the parquet crate into an error: it asserts on some malformed
/// metadata and pages of a corrupt file (found by fuzzing: "column start and length should not
/// be negative", "Decoder for dict should have been set").
fn guarded<T>(name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let why = p.downcast_ref::<String>().map(String::as_str).or_else(|| p.downcast_ref::<&str>().copied()).unwrap_or("?");
        Err(err(name, format!("a corrupt Parquet file (the reader failed: {why})")))
    })
}

impl ParquetSource {
    pub fn open(path: &Path) -> Result<Self> {
        guarded(&path.display().to_string(), || Self::open_unguarded(path))
    }

    fn open_unguarded(path: &Path) -> Result<Self> {
        let name = path.display().to_string();
        let f = File::open(path).map_err(|e| Error::Io { path: name.clone(), message: e.to_string() })?;
        let reader = SerializedFileReader::new(f).map_err(|e| err(&name, format!("not a readable Parquet file: {e}")))?;
        let meta = reader.metadata().file_metadata();
        let mut origin = 0i128;
        let mut names = Vec::new();
        let mut ids = FxHashMap::default();
        let mut numeric = false;
        if let Some(kv) = meta.key_value_metadata() {
            if let Some(v) = kv.iter().find(|k| k.key == "ssdlab.trace").and_then(|k| k.value.as_deref()) {
                let doc: serde_json::Value = serde_json::from_str(v).map_err(|e| err(&name, format!("metadata ssdlab.trace is not JSON: {e}")))?;
                let version = doc.get("schema_version").and_then(serde_json::Value::as_u64).unwrap_or(1);
                if version > SCHEMA_VERSION {
                    return Err(err(&name, format!("schema_version {version} is newer than this ssdlab reads ({SCHEMA_VERSION}); upgrade ssdlab")));
                }
                let o = doc.get("time_origin_ns");
                origin = o.and_then(serde_json::Value::as_i64).map(i128::from).or_else(|| o.and_then(serde_json::Value::as_u64).map(i128::from)).unwrap_or(0);
                // Device ids: the text is the id itself (`device_ids`, a format without names),
                // or the names' order in the metadata.
                numeric = doc.get("device_ids").and_then(serde_json::Value::as_bool).unwrap_or(false);
                if let Some(list) = doc.get("devices").and_then(serde_json::Value::as_array).filter(|_| !numeric) {
                    for d in list {
                        let Some(n) = d.as_str() else { continue };
                        if !ids.contains_key(n.as_bytes()) {
                            ids.insert(n.as_bytes().to_vec(), names.len() as u32);
                            names.push(n.to_string());
                        }
                    }
                }
            }
        }
        let schema = meta.schema_descr();
        let mut cols = [usize::MAX; 5];
        for (i, want) in ["time_ns", "op", "offset", "len", "dev"].iter().enumerate() {
            cols[i] = (0..schema.num_columns())
                .find(|&c| schema.column(c).name() == *want)
                .ok_or_else(|| err(&name, format!("no column {want:?} (the canonical trace has time_ns, op, offset, len, dev)")))?;
            let c = schema.column(cols[i]);
            if c.max_rep_level() > 0 {
                return Err(err(&name, format!("column {want:?} is repeated")));
            }
            let ok = match *want {
                "op" => c.physical_type() == Physical::BYTE_ARRAY,
                "dev" => matches!(c.physical_type(), Physical::BYTE_ARRAY | Physical::INT32 | Physical::INT64),
                _ => matches!(c.physical_type(), Physical::INT64 | Physical::INT32),
            };
            if !ok {
                return Err(err(&name, format!("column {want:?} has type {}", c.physical_type())));
            }
        }
        Ok(ParquetSource { name, reader, cols, origin, group: 0, rows: Vec::new(), pos: 0, before: 0, names, ids, numeric })
    }

    /// Device names in id order (ids interned in order of appearance).
    pub fn device_names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn ints(&self, rg: &dyn parquet::file::reader::RowGroupReader, col: usize, n: usize, what: &str) -> Result<Vec<i64>> {
        let bad = |e: parquet::errors::ParquetError| err(&self.name, format!("row group {}: column {what}: {e}", self.group));
        let mut values = Vec::with_capacity(n.min(RESERVE));
        let mut defs = Vec::with_capacity(n.min(RESERVE));
        match rg.get_column_reader(col).map_err(bad)? {
            ColumnReader::Int64ColumnReader(mut r) => {
                while values.len() < n {
                    let (recs, _, _) = r.read_records((n - values.len()).min(RESERVE), Some(&mut defs), None, &mut values).map_err(bad)?;
                    if recs == 0 {
                        break;
                    }
                }
            }
            ColumnReader::Int32ColumnReader(mut r) => {
                let mut v32: Vec<i32> = Vec::with_capacity(n.min(RESERVE));
                while v32.len() < n {
                    let (recs, _, _) = r.read_records((n - v32.len()).min(RESERVE), Some(&mut defs), None, &mut v32).map_err(bad)?;
                    if recs == 0 {
                        break;
                    }
                }
                // Unsigned 32-bit columns come back as i32 bit patterns.
                values = v32.into_iter().map(|x| i64::from(x as u32)).collect();
            }
            _ => return Err(err(&self.name, format!("column {what}: not an integer column"))),
        }
        self.check_full(values.len(), n, what)?;
        Ok(values)
    }

    fn strings(&self, rg: &dyn parquet::file::reader::RowGroupReader, col: usize, n: usize, what: &str) -> Result<Vec<ByteArray>> {
        let bad = |e: parquet::errors::ParquetError| err(&self.name, format!("row group {}: column {what}: {e}", self.group));
        let mut values = Vec::with_capacity(n.min(RESERVE));
        let mut defs = Vec::with_capacity(n.min(RESERVE));
        let ColumnReader::ByteArrayColumnReader(mut r) = rg.get_column_reader(col).map_err(bad)? else {
            return Err(err(&self.name, format!("column {what}: not a string column")));
        };
        while values.len() < n {
            let (recs, _, _) = r.read_records((n - values.len()).min(RESERVE), Some(&mut defs), None, &mut values).map_err(bad)?;
            if recs == 0 {
                break;
            }
        }
        self.check_full(values.len(), n, what)?;
        Ok(values)
    }

    /// A dictionary page states its value count, and the parquet crate reserves memory for that
    /// count before decoding (a corrupt count of 8e8 asked for 6.4 GB): refuse a count that
    /// the page's bytes cannot hold (every value takes at least a byte).
    fn check_dictionaries(&self, rg: &dyn parquet::file::reader::RowGroupReader) -> Result<()> {
        let bad = |e: parquet::errors::ParquetError| err(&self.name, format!("row group {}: {e}", self.group));
        for c in self.cols {
            if let Some(parquet::column::page::Page::DictionaryPage { buf, num_values, .. }) = rg.get_column_page_reader(c).map_err(bad)?.get_next_page().map_err(bad)? {
                if num_values as usize > buf.len() {
                    return Err(err(&self.name, format!("row group {}: a dictionary page of {num_values} values in {} bytes", self.group, buf.len())));
                }
            }
        }
        Ok(())
    }

    fn check_full(&self, got: usize, n: usize, what: &str) -> Result<()> {
        if got < n {
            // Fewer values than rows: nulls.
            return Err(err(&format!("{}:row {}", self.name, self.before + got as u64 + 1), format!("column {what} has a null")));
        }
        Ok(())
    }

    /// Loads the next row group; false at the end.
    fn load(&mut self) -> Result<bool> {
        let groups = self.reader.num_row_groups();
        while self.group < groups {
            let rg = self.reader.get_row_group(self.group).map_err(|e| err(&self.name, format!("row group {}: {e}", self.group)))?;
            let n = usize::try_from(rg.metadata().num_rows()).unwrap_or(0);
            let [ct, co, cf, cl, cd] = self.cols;
            self.check_dictionaries(rg.as_ref())?;
            let time = self.ints(rg.as_ref(), ct, n, "time_ns")?;
            let ops = self.strings(rg.as_ref(), co, n, "op")?;
            let off = self.ints(rg.as_ref(), cf, n, "offset")?;
            let len = self.ints(rg.as_ref(), cl, n, "len")?;
            let dev = if rg.metadata().column(cd).column_type() == Physical::BYTE_ARRAY { Err(self.strings(rg.as_ref(), cd, n, "dev")?) } else { Ok(self.ints(rg.as_ref(), cd, n, "dev")?) };
            drop(rg);
            let dev: Vec<u32> = match dev {
                Ok(ids) => ids.into_iter().map(|d| d as u32).collect(),
                Err(names) if self.numeric => {
                    let mut out = Vec::with_capacity(n);
                    for (i, b) in names.iter().enumerate() {
                        let id = std::str::from_utf8(b.data()).ok().and_then(|t| t.parse::<u32>().ok());
                        out.push(id.ok_or_else(|| Error::Trace {
                            location: format!("{}:row {}", self.name, self.before + self.rows.len() as u64 + i as u64 + 1),
                            text: String::from_utf8_lossy(b.data()).into_owned(),
                            reason: "dev must be a device id (the file's metadata says device_ids)".into(),
                        })?);
                    }
                    out
                }
                Err(names) => names.iter().map(|b| self.intern(b.data())).collect(),
            };
            self.before += self.rows.len() as u64;
            self.rows.clear();
            self.pos = 0;
            for i in 0..n {
                let row = self.before + i as u64 + 1;
                let at = || format!("{}:row {row}", self.name);
                let op = match ops[i].data() {
                    b"read" => Op::Read,
                    b"write" => Op::Write,
                    b"trim" => Op::Trim,
                    b"flush" => Op::Flush,
                    other => return Err(Error::Trace { location: at(), text: String::from_utf8_lossy(other).into_owned(), reason: "op must be read, write, trim or flush".into() }),
                };
                let t = self.origin + i128::from(time[i]);
                let time_ns = u64::try_from(t).map_err(|_| Error::Trace { location: at(), text: t.to_string(), reason: "time before 0 ns".into() })?;
                // uint64 columns come back as i64 bit patterns.
                self.rows.push(Record { time_ns, op, offset: off[i] as u64, len: len[i] as u64, dev: dev[i] });
            }
            self.group += 1;
            if n > 0 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn intern(&mut self, name: &[u8]) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(String::from_utf8_lossy(name).into_owned());
        self.ids.insert(name.to_vec(), id);
        id
    }

    /// The next record; `Ok(None)` at the end.
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        if self.pos >= self.rows.len() && !guarded(&self.name.clone(), || self.load())? {
            return Ok(None);
        }
        let r = self.rows[self.pos];
        self.pos += 1;
        Ok(Some(r))
    }
}
