//! Binding of `ssdlab_core::trace`: the stats pass, and records in column batches for Python
//! (pyarrow builds its arrays from the bytes without copying them again).

use std::path::Path;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use ssdlab_core::trace::{stats, Format, ReadOptions, TraceReader};

use crate::error::PyCoreError;
use crate::exceptions;

fn options(format: Option<&str>, strict: bool, blk_action: &str) -> PyResult<ReadOptions> {
    let format = format.map(str::parse::<Format>).transpose().map_err(exceptions::InputError::new_err)?;
    let blk_action = match blk_action.as_bytes() {
        [c] if c.is_ascii_uppercase() => *c,
        _ => return Err(exceptions::InputError::new_err(format!("blkparse action {blk_action:?}: one capital letter, e.g. D (issue) or Q (queue)"))),
    };
    Ok(ReadOptions { format, strict, blk_action })
}

/// The trace formats, by name.
#[pyfunction]
pub fn trace_formats() -> Vec<&'static str> {
    Format::ALL.iter().map(|(_, n)| *n).chain(std::iter::once("parquet")).collect()
}

/// One stats pass: `(format, json)`. `progress(records)` is called now and then; Ctrl-C stops.
#[pyfunction]
#[pyo3(signature = (path, format=None, strict=true, blk_action="D", devices=10, progress=None))]
pub fn trace_stats(py: Python<'_>, path: &str, format: Option<&str>, strict: bool, blk_action: &str, devices: usize, progress: Option<Py<PyAny>>) -> PyResult<(String, String)> {
    let opts = options(format, strict, blk_action)?;
    let mut last = 0u64;
    let (f, s) = py
        .detach(|| {
            stats::stats_file(Path::new(path), &opts, devices, |n| {
                if n - last < 1 << 19 {
                    return true;
                }
                last = n;
                Python::attach(|py| {
                    if let Some(cb) = &progress {
                        if cb.call1(py, (n,)).is_err() {
                            return false;
                        }
                    }
                    py.check_signals().is_ok()
                })
            })
        })
        .map_err(|e| match e {
            ssdlab_core::Error::Cancelled => pyo3::exceptions::PyKeyboardInterrupt::new_err("interrupted"),
            e => PyCoreError(e).into(),
        })?;
    Ok((f.name().to_string(), serde_json::to_string(&s).map_err(|e| exceptions::SimulationError::new_err(e.to_string()))?))
}

/// A trace read in batches of columns.
#[pyclass(module = "ssdlab._core")]
pub struct TraceBatches {
    reader: TraceReader,
}

#[pymethods]
impl TraceBatches {
    #[new]
    #[pyo3(signature = (path, format=None, strict=true, blk_action="D"))]
    fn new(py: Python<'_>, path: &str, format: Option<&str>, strict: bool, blk_action: &str) -> PyResult<Self> {
        let opts = options(format, strict, blk_action)?;
        let reader = py.detach(|| TraceReader::open(Path::new(path), &opts)).map_err(PyCoreError)?;
        Ok(TraceBatches { reader })
    }

    /// The format being read.
    #[getter]
    fn format(&self) -> &'static str {
        self.reader.format.name()
    }

    /// Up to `n` records as little-endian columns `time_ns` (u64), `op` (u8: 0 read, 1 write,
    /// 2 trim, 3 flush), `offset` (u64), `len` (u64), `dev` (u32); `None` at the end.
    fn next_batch<'py>(&mut self, py: Python<'py>, n: usize) -> PyResult<Option<Bound<'py, PyDict>>> {
        let n = n.clamp(1, 1 << 24);
        let reader = &mut self.reader;
        let recs = py
            .detach(|| -> ssdlab_core::Result<Vec<ssdlab_core::trace::Record>> {
                let mut v = Vec::with_capacity(n.min(1 << 20));
                while v.len() < n {
                    match reader.next_record()? {
                        Some(r) => v.push(r),
                        None => break,
                    }
                }
                Ok(v)
            })
            .map_err(PyCoreError)?;
        py.check_signals()?;
        if recs.is_empty() {
            return Ok(None);
        }
        let n = recs.len();
        let (mut time_ns, mut op, mut offset, mut len, mut dev) = (Vec::with_capacity(8 * n), Vec::with_capacity(n), Vec::with_capacity(8 * n), Vec::with_capacity(8 * n), Vec::with_capacity(4 * n));
        for r in &recs {
            time_ns.extend_from_slice(&r.time_ns.to_le_bytes());
            op.push(r.op as u8);
            offset.extend_from_slice(&r.offset.to_le_bytes());
            len.extend_from_slice(&r.len.to_le_bytes());
            dev.extend_from_slice(&r.dev.to_le_bytes());
        }
        let d = PyDict::new(py);
        d.set_item("time_ns", PyBytes::new(py, &time_ns))?;
        d.set_item("op", PyBytes::new(py, &op))?;
        d.set_item("offset", PyBytes::new(py, &offset))?;
        d.set_item("len", PyBytes::new(py, &len))?;
        d.set_item("dev", PyBytes::new(py, &dev))?;
        Ok(Some(d))
    }

    /// Lines read, malformed lines skipped (and the first), zero-length requests dropped: JSON.
    fn counts(&self) -> PyResult<String> {
        serde_json::to_string(&self.reader.counts).map_err(|e| exceptions::SimulationError::new_err(e.to_string()))
    }

    /// Device names, for formats that name devices (MSR host_disk, fio file names).
    fn device_names(&self) -> Vec<String> {
        self.reader.device_names()
    }
}
