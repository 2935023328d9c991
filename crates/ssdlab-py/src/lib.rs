//! `ssdlab._core`: the Python binding of ssdlab-core. Conversions only: every decision is made
//! in the core, every presentation choice in the Python package.
#![allow(clippy::needless_pass_by_value)] // pyo3 hands extracted arguments over by value

mod alloc;
mod emulate;
mod error;
mod exceptions;
mod trace;
mod units;

use std::io::Write;

/// An allocation the system refuses is a clear error (exit code 2), not an abort.
#[global_allocator]
static ALLOCATOR: alloc::ClearOnRefusal = alloc::ClearOnRefusal;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use ssdlab_core::config::{self, presets};
use ssdlab_core::stats::Component;

use crate::error::PyCoreError;

/// Events processed between two checks for Ctrl-C and progress reports.
/// Events between two checks for Ctrl-C (and for the progress callback's turn).
const EVENTS_PER_SLICE: u64 = 25_000;
/// Wall time between two progress callbacks.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Runs core work without the GIL; Ctrl-C stops it within a fraction of a second (the core's
/// long loops check for it, see `ssdlab_core::cancel`) and raises KeyboardInterrupt.
fn interruptible<T: Send>(py: Python<'_>, work: impl FnOnce() -> ssdlab_core::Result<T> + Send) -> PyResult<T> {
    py.detach(|| ssdlab_core::cancel::with_check(|_| Python::attach(|py| py.check_signals().is_err()), work)).map_err(|e| PyCoreError(e).into())
}

/// [`interruptible`], calling `progress(fraction)` as the long loops report how far they are;
/// an exception the callback raises stops the work and is raised.
fn with_progress<T: Send>(py: Python<'_>, progress: Option<Py<PyAny>>, work: impl FnOnce() -> ssdlab_core::Result<T> + Send) -> PyResult<T> {
    let Some(cb) = progress else { return interruptible(py, work) };
    let failed: std::sync::Arc<std::sync::Mutex<Option<PyErr>>> = std::sync::Arc::default();
    let raised = failed.clone();
    let check = move |fraction: Option<f64>| {
        Python::attach(|py| {
            if let Some(f) = fraction {
                if let Err(e) = cb.call1(py, (f,)) {
                    *raised.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
                    return true;
                }
            }
            py.check_signals().is_err()
        })
    };
    let out = py.detach(|| ssdlab_core::cancel::with_check(check, work));
    if let Some(e) = failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
        return Err(e);
    }
    out.map_err(|e| PyCoreError(e).into())
}

/// Writes `path` through `write` into a temporary file beside it, renamed over `path` only on
/// success: an error or an interrupt leaves no partial file.
fn write_whole<T>(path: &str, write: impl FnOnce(&mut dyn Write) -> std::io::Result<T>) -> ssdlab_core::Result<T> {
    let io = |e: std::io::Error| ssdlab_core::Error::Io { path: path.to_string(), message: e.to_string() };
    let tmp = format!("{path}.partial-{}", std::process::id());
    let result = std::fs::File::create(&tmp).and_then(|f| {
        let mut w = std::io::BufWriter::new(f);
        let out = write(&mut w)?;
        w.flush()?;
        Ok(out)
    });
    match result.and_then(|out| std::fs::rename(&tmp, path).map(|()| out)) {
        Ok(out) => Ok(out),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(io(e))
        }
    }
}

/// Converts a Python value (dict, list, str, int, float, bool) into TOML.
fn to_toml(path: &str, v: &Bound<'_, PyAny>) -> PyResult<toml::Value> {
    let bad = |what: &str| PyCoreError(ssdlab_core::Error::config(path, what.to_string(), "cannot be expressed in TOML"));
    if v.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        let i: i64 = v.extract().map_err(|_| bad(&v.to_string()))?;
        return Ok(toml::Value::Integer(i));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        // A lone surrogate has no UTF-8 form.
        return Ok(toml::Value::String(v.extract().map_err(|_| bad(&v.repr().map_or_else(|_| "?".into(), |r| r.to_string())))?));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, val) in d.iter() {
            let key: String =
                k.str()?.extract().map_err(|_| PyCoreError(ssdlab_core::Error::config(path, k.repr().map_or_else(|_| "?".into(), |r| r.to_string()), "has a key that cannot be expressed in TOML")))?;
            let p = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            t.insert(key, to_toml(&p, &val)?);
        }
        return Ok(toml::Value::Table(t));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> = v.try_iter()?.collect::<PyResult<_>>()?;
        return Ok(toml::Value::Array(items.iter().enumerate().map(|(i, x)| to_toml(&format!("{path}[{i}]"), x)).collect::<PyResult<_>>()?));
    }
    Err(bad(&v.repr()?.to_string()).into())
}

/// A validated, fully resolved configuration.
#[pyclass(module = "ssdlab._core", frozen)]
pub(crate) struct Config {
    pub(crate) inner: ssdlab_core::Config,
}

#[pymethods]
impl Config {
    /// Builds a config: the base (`base_toml` text, else `base`, a preset name or TOML path;
    /// `None` = "default"), then the `overrides` table, then dotted `key=value` `settings`.
    #[new]
    #[pyo3(signature = (base=None, overrides=None, settings=Vec::new(), base_toml=None))]
    fn new(base: Option<&str>, overrides: Option<&Bound<'_, PyDict>>, settings: Vec<(String, String)>, base_toml: Option<&str>) -> PyResult<Self> {
        let table = match overrides {
            Some(d) => match to_toml("", d.as_any())? {
                toml::Value::Table(t) => Some(t),
                _ => None,
            },
            None => None,
        };
        let inner = match base_toml {
            Some(text) => config::build_on_text(text, "<config>", table, &settings),
            None => config::build(base, table, &settings),
        }
        .map_err(PyCoreError)?;
        Ok(Config { inner })
    }

    /// The resolved config as TOML.
    fn to_toml(&self) -> String {
        self.inner.to_toml()
    }

    /// The resolved config as JSON: the TOML's tables, keys and values.
    fn to_json(&self) -> PyResult<String> {
        self.inner.to_json().map_err(|e| PyCoreError(e).into())
    }

    /// A short stable hash of the resolved config.
    fn hash(&self) -> String {
        self.inner.hash()
    }

    #[getter]
    fn description(&self) -> String {
        self.inner.description.clone()
    }

    #[getter]
    fn seed(&self) -> u64 {
        self.inner.workload.randseed
    }

    /// Bytes exported to the host.
    #[getter]
    fn capacity(&self) -> u64 {
        self.inner.exported_capacity()
    }

    /// Advice on the config: settings that do nothing the user likely meant, as (path, value,
    /// why) triples.
    fn advisories(&self) -> Vec<(String, String, String)> {
        self.inner.advisories().into_iter().map(|i| (i.path, i.value, i.rule)).collect()
    }

    /// The host memory a run may take at its peak, by part, in bytes (with an I/O log:
    /// `io_log`), and the default limit it must stay under.
    #[pyo3(signature = (io_log=false))]
    fn memory_estimate(&self, io_log: bool) -> (Vec<(&'static str, u64)>, u64) {
        (self.inner.memory_estimate(io_log).parts, config::memory::default_limit())
    }
}

/// One simulation run.
#[pyclass(module = "ssdlab._core")]
struct Simulation {
    inner: ssdlab_core::Simulation,
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (config, keep_io_log=false, max_memory=None, progress=None))]
    fn new(py: Python<'_>, config: &Config, keep_io_log: bool, max_memory: Option<u64>, progress: Option<Py<PyAny>>) -> PyResult<Self> {
        let limit = max_memory.unwrap_or_else(ssdlab_core::config::memory::default_limit);
        // Building may age a drive, which takes a while: without the GIL, Ctrl-C stops it, and
        // `progress(fraction)` hears how far the ageing is.
        let config = config.inner.clone();
        let mut inner = with_progress(py, progress, move || ssdlab_core::Simulation::with_memory_limit(config, limit, keep_io_log))?;
        if keep_io_log {
            inner.keep_io_log();
        }
        Ok(Simulation { inner })
    }

    /// Runs to the end without holding the GIL; calls `progress(fraction)` every 100 ms of wall
    /// time and once at the end (1.0), and raises KeyboardInterrupt on Ctrl-C (the run can be
    /// resumed by calling `run` again). Returns the summary as JSON.
    #[pyo3(signature = (progress=None))]
    fn run(&mut self, py: Python<'_>, progress: Option<Py<PyAny>>) -> PyResult<String> {
        let mut last = std::time::Instant::now();
        loop {
            let sim = &mut self.inner;
            let done = py.detach(|| sim.run_events(EVENTS_PER_SLICE)).map_err(PyCoreError)?;
            py.check_signals()?;
            if let Some(cb) = &progress {
                if done {
                    cb.call1(py, (1.0,))?;
                } else if last.elapsed() >= PROGRESS_EVERY {
                    last = std::time::Instant::now();
                    cb.call1(py, (self.inner.progress(),))?;
                }
            }
            if done {
                break;
            }
        }
        self.summary()
    }

    /// The summary so far, as JSON.
    fn summary(&self) -> PyResult<String> {
        serde_json::to_string(&self.inner.summary()).map_err(|e| exceptions::SimulationError::new_err(e.to_string()))
    }

    /// Every metric this run reports, as `(name, unit, kind, description)`.
    fn metrics(&self) -> Vec<(String, &'static str, &'static str, &'static str)> {
        self.inner.metric_list().into_iter().map(|m| (m.name, m.unit, if m.kind == ssdlab_core::stats::Kind::Counter { "counter" } else { "gauge" }, m.description)).collect()
    }

    /// Fraction of the work done.
    fn progress(&self) -> f64 {
        self.inner.progress()
    }

    /// Records every device-initiated DMA during the run (call before `run`).
    fn keep_dma_log(&mut self) -> PyResult<()> {
        self.inner.keep_dma_log().map_err(|e| PyCoreError(e).into())
    }

    /// DMA accesses recorded so far.
    fn dma_log_len(&self) -> usize {
        self.inner.dma_log().map_or(0, <[_]>::len)
    }

    /// Writes the DMA log as a text trace (`kind,addr,size,pasid`); returns its accesses.
    /// Ctrl-C stops it, leaving no file.
    fn write_dma_log(&self, py: Python<'_>, path: &str) -> PyResult<usize> {
        let Some(log) = self.inner.dma_log() else { return Ok(0) };
        interruptible(py, || write_accesses(path, log.iter().copied()).map(|n| n as usize))
    }

    /// Per-I/O columns as little-endian byte buffers (numpy.frombuffer reads them), or None.
    fn io_log<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(log) = self.inner.io_log() else { return Ok(None) };
        let d = PyDict::new(py);
        let u64s = |v: &[u64]| PyBytes::new(py, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>());
        let u32s = |v: &[u32]| PyBytes::new(py, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>());
        d.set_item("job", u32s(&log.job))?;
        d.set_item("tenant", u32s(&log.tenant))?;
        d.set_item("op", PyBytes::new(py, &log.op))?;
        d.set_item("offset", u64s(&log.offset))?;
        d.set_item("len", u64s(&log.len))?;
        d.set_item("issued_ps", u64s(&log.issued_ps))?;
        d.set_item("latency_ps", u64s(&log.latency_ps))?;
        for c in Component::ALL {
            d.set_item(format!("{}_ps", c.name()), u64s(&log.breakdown_ps[c as usize]))?;
        }
        Ok(Some(d))
    }
}

/// `(name, description)` of every preset.
#[pyfunction]
fn presets_list() -> PyResult<Vec<(String, String)>> {
    presets::names()
        .into_iter()
        .map(|n| {
            let c = ssdlab_core::Config::load(n).map_err(PyCoreError)?;
            Ok((n.to_string(), c.description))
        })
        .collect()
}

/// The annotated TOML text of a preset.
#[pyfunction]
fn preset_text(name: &str) -> Option<&'static str> {
    presets::get(name)
}

/// Names of the latency breakdown components, in path order.
/// The names the core uses, by kind: the ATC's eviction policies, the host's buffer reuse and
/// DMA layouts, the kinds of request (`op`) and the directions I/O statistics count
/// (`direction`), each in the core's order, with every spelling the core accepts for it.
/// Python reads them from here rather than keeping lists of its own.
#[pyfunction]
fn names() -> Vec<(&'static str, Vec<&'static str>, Vec<&'static str>)> {
    use ssdlab_core::ats::synth::{BufferReuse, DmaLayout};
    use ssdlab_core::ats::Policy;
    use ssdlab_core::io::{Op, OPS};
    let ops: Vec<&str> = Op::ALL.iter().map(|o| o.as_str()).collect();
    let directions: Vec<&str> = OPS.iter().map(|o| o.as_str()).collect();
    vec![
        ("atc_policy", Policy::NAMES.to_vec(), Policy::SPELLINGS.to_vec()),
        ("buffer_reuse", BufferReuse::NAMES.to_vec(), BufferReuse::SPELLINGS.to_vec()),
        ("dma_layout", DmaLayout::NAMES.to_vec(), DmaLayout::SPELLINGS.to_vec()),
        ("op", ops.clone(), ops),
        ("direction", directions.clone(), directions),
    ]
}

/// Every config key: (key, kind, default as TOML text, documentation), in declaration order.
#[pyfunction]
fn config_schema() -> Vec<(String, String, String, String)> {
    config::reference().into_iter().map(|k| (k.key, k.kind, k.default, k.doc)).collect()
}

#[pyfunction]
fn components() -> Vec<&'static str> {
    Component::ALL.iter().map(|c| c.name()).collect()
}

/// Names of the benchmark scenarios (simulations, then ATC models).
#[pyfunction]
fn bench_scenarios() -> Vec<&'static str> {
    ssdlab_core::bench::SCENARIOS.iter().map(|s| s.name).chain(ssdlab_core::bench::STREAM_SCENARIOS.iter().copied()).collect()
}

/// Runs one benchmark scenario (I/O count scaled by `scale`) without the GIL; returns JSON.
#[pyfunction]
#[pyo3(signature = (name, scale=1.0))]
fn bench_run(py: Python<'_>, name: &str, scale: f64) -> PyResult<String> {
    let r = if ssdlab_core::bench::STREAM_SCENARIOS.contains(&name) {
        py.detach(|| ssdlab_core::bench::run_stream(name, scale)).map_err(PyCoreError)?
    } else {
        let Some(s) = ssdlab_core::bench::SCENARIOS.iter().find(|s| s.name == name) else {
            return Err(exceptions::SsdlabError::new_err(format!("no benchmark scenario named {name:?}")));
        };
        py.detach(|| ssdlab_core::bench::run_scenario(s, scale)).map_err(PyCoreError)?
    };
    serde_json::to_string(&r).map_err(|e| exceptions::SimulationError::new_err(e.to_string()))
}

fn synth_of(d: &Bound<'_, PyDict>) -> PyResult<ssdlab_core::ats::synth::Synth> {
    use ssdlab_core::ats::synth::Synth;
    let mut s = Synth::default();
    let shown = |v: &Bound<'_, PyAny>| v.repr().map_or_else(|_| "?".into(), |r| r.to_string());
    for (k, v) in d.iter() {
        let key: String = k.extract().map_err(|_| PyCoreError(ssdlab_core::Error::config("synth", shown(&k), "has a key that is not text")))?;
        let path = format!("synth.{key}");
        // A value of the wrong type (or a negative count) is a ConfigError naming its key.
        let bad = |rule: &str| PyErr::from(PyCoreError(ssdlab_core::Error::config(path.clone(), shown(&v), rule)));
        let whole = || if v.is_instance_of::<PyBool>() { None } else { v.extract::<u64>().ok() };
        match key.as_str() {
            "stack" | "reuse" => {
                let text: String = v.extract().map_err(|_| bad("must be text (UTF-8: no lone surrogates)"))?;
                let err = |e: String| PyErr::from(PyCoreError(ssdlab_core::Error::config(path.clone(), text.clone(), e)));
                if key == "stack" {
                    s.stack = text.parse().map_err(err)?;
                } else {
                    s.reuse = text.parse().map_err(err)?;
                }
            }
            "split" => s.split = v.extract().map_err(|_| bad("must be true or false"))?,
            "queues" | "vms" | "qd" => {
                let n = whole().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| bad("must be a whole number from 0 to 2^32 - 1"))?;
                *match key.as_str() {
                    "queues" => &mut s.queues,
                    "vms" => &mut s.vms,
                    _ => &mut s.qd,
                } = n;
            }
            "bs" | "ios" | "memory" | "buffer_pool" | "pool_chunk" | "seed" => {
                let n = whole().ok_or_else(|| bad("must be a whole number from 0 to 2^64 - 1"))?;
                *match key.as_str() {
                    "bs" => &mut s.bs,
                    "ios" => &mut s.ios,
                    "memory" => &mut s.memory,
                    "buffer_pool" => &mut s.buffer_pool,
                    "pool_chunk" => &mut s.pool_chunk,
                    _ => &mut s.seed,
                } = n;
            }
            _ => return Err(bad("unknown key")),
        }
    }
    if s.queues == 0 || s.vms == 0 || s.bs == 0 || s.buffer_pool == 0 || s.memory < 4096 {
        return Err(PyCoreError(ssdlab_core::Error::config("synth", format!("{s:?}"), "queues, vms, bs and buffer_pool must be positive and memory at least 4 KiB")).into());
    }
    Ok(s)
}

/// The SQ/CQ ring ranges of a synthesised stream: `[(pasid, start, end)]`.
#[pyfunction]
fn atc_synth_rings(synth: &Bound<'_, PyDict>) -> PyResult<Vec<(u32, u64, u64)>> {
    Ok(ssdlab_core::ats::synth::ring_ranges(&synth_of(synth)?))
}

/// Writes a synthesised stream as a text trace (`kind,addr,size,pasid`); returns accesses.
/// Ctrl-C stops it, leaving no file.
#[pyfunction]
fn atc_synth_write(py: Python<'_>, synth: &Bound<'_, PyDict>, path: &str) -> PyResult<u64> {
    let s = synth_of(synth)?;
    interruptible(py, || write_accesses(path, ssdlab_core::ats::synth::stream(&s)))
}

/// Accesses written between two checks for Ctrl-C.
const ACCESSES_PER_CHECK: u64 = 1 << 16;

/// Writes accesses as a text trace (`kind,addr,size,pasid`), whole or not at all; returns how
/// many. Checks for Ctrl-C as it goes.
fn write_accesses(path: &str, accesses: impl Iterator<Item = ssdlab_core::ats::Access>) -> ssdlab_core::Result<u64> {
    let mut cancelled = None;
    let n = write_whole(path, |w| {
        writeln!(w, "kind,addr,size,pasid")?;
        let mut n = 0;
        for a in accesses {
            if n % ACCESSES_PER_CHECK == 0 {
                if let Err(e) = ssdlab_core::cancel::checkpoint() {
                    cancelled = Some(e);
                    return Err(std::io::Error::other("interrupted"));
                }
            }
            writeln!(w, "{},{:#x},{},{}", if a.pinned { "pin" } else { "data" }, a.addr, a.size, a.pasid)?;
            n += 1;
        }
        Ok(n)
    });
    match cancelled {
        Some(e) => Err(e),
        None => n,
    }
}

/// Runs an ATC study over a trace file, raw little-endian addresses, or a synthesised stream.
/// Returns the points as JSON and the count of skipped trace lines.
#[pyfunction]
#[pyo3(signature = (stus, policies, assocs, lines, pins, pin_tagged, pin_dedicated, seed, trace=None, raw=None, skip_bad=false, addresses=None, synth=None, sim=None))]
#[allow(clippy::too_many_arguments)]
fn atc_study(
    py: Python<'_>,
    stus: Vec<u32>,
    policies: Vec<String>,
    assocs: Vec<u32>,
    lines: Vec<u32>,
    pins: Vec<(u64, u64)>,
    pin_tagged: bool,
    pin_dedicated: bool,
    seed: u64,
    trace: Option<String>,
    raw: Option<bool>,
    skip_bad: bool,
    addresses: Option<&[u8]>,
    synth: Option<&Bound<'_, PyDict>>,
    sim: Option<PyRef<'_, Simulation>>,
) -> PyResult<(String, u64)> {
    use ssdlab_core::ats::{self, trace as tr, Access, Assoc, Policy, Study};
    let policies =
        policies.iter().map(|p| p.parse::<Policy>().map_err(|e| PyCoreError(ssdlab_core::Error::config("policy", p.clone(), format!("unknown policy: {e}"))).into())).collect::<PyResult<Vec<_>>>()?;
    let assocs = assocs.into_iter().map(|w| if w == 0 { Assoc::Full } else { Assoc::Ways(w) }).collect();
    let study = Study { stus, policies, assocs, lines, pin_ranges: pins, pin_tagged, pin_dedicated, seed };
    let synth = synth.map(synth_of).transpose()?;
    let skipped = std::sync::atomic::AtomicU64::new(0);
    let log: Option<&[Access]> = sim.as_ref().and_then(|s| s.inner.dma_log());
    let points = interruptible(py, || -> ssdlab_core::Result<Vec<ats::Point>> {
        // Each source runs its own instance of the study, so reading an access is a direct
        // (inlined) call rather than a dynamic one per address.
        if let Some(log) = log {
            return ats::run_study(&study, || Ok(log.iter().copied().map(Ok)));
        }
        if let Some(s) = &synth {
            return ats::run_study(&study, || Ok(ats::synth::stream(s).map(Ok)));
        }
        if let Some(bytes) = addresses {
            return ats::run_study(&study, || Ok(tr::AddressBlocks::new(bytes)));
        }
        let path = std::path::PathBuf::from(trace.clone().unwrap_or_default());
        let format = match raw {
            Some(true) => tr::Format::Raw,
            Some(false) => tr::Format::Text,
            None => tr::Format::detect(&path),
        };
        match format {
            tr::Format::Raw => ats::run_study(&study, || tr::RawReader::open(&path).map(tr::RawReader::blocks)),
            tr::Format::Text => ats::run_study(&study, || Ok(CountSkips { inner: tr::TextReader::open(&path, skip_bad)?, total: &skipped })),
        }
    })?;
    let json = serde_json::to_string(&points).map_err(|e| exceptions::SimulationError::new_err(e.to_string()))?;
    Ok((json, skipped.load(std::sync::atomic::Ordering::Relaxed)))
}

/// Passes a text reader's accesses through and records how many lines it skipped.
struct CountSkips<'a> {
    inner: ssdlab_core::ats::trace::TextReader<std::io::BufReader<std::fs::File>>,
    total: &'a std::sync::atomic::AtomicU64,
}

impl Iterator for CountSkips<'_> {
    type Item = ssdlab_core::Result<ssdlab_core::ats::Access>;
    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next();
        if item.is_none() {
            self.total.store(self.inner.skipped, std::sync::atomic::Ordering::Relaxed);
        }
        item
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", ssdlab_core::VERSION)?;
    m.add_class::<Config>()?;
    m.add_class::<Simulation>()?;
    m.add_class::<emulate::Emulator>()?;
    m.add_function(wrap_pyfunction!(presets_list, m)?)?;
    m.add_function(wrap_pyfunction!(preset_text, m)?)?;
    m.add_function(wrap_pyfunction!(components, m)?)?;
    m.add_function(wrap_pyfunction!(config_schema, m)?)?;
    m.add_function(wrap_pyfunction!(names, m)?)?;
    m.add_function(wrap_pyfunction!(bench_scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(bench_run, m)?)?;
    m.add_function(wrap_pyfunction!(atc_study, m)?)?;
    m.add_function(wrap_pyfunction!(atc_synth_rings, m)?)?;
    m.add_function(wrap_pyfunction!(atc_synth_write, m)?)?;
    m.add_class::<trace::TraceBatches>()?;
    m.add_function(wrap_pyfunction!(trace::trace_formats, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_stats, m)?)?;
    m.add_function(wrap_pyfunction!(units::parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(units::parse_time, m)?)?;
    m.add("SsdlabError", py.get_type::<exceptions::SsdlabError>())?;
    m.add("ConfigError", py.get_type::<exceptions::ConfigError>())?;
    m.add("WorkloadError", py.get_type::<exceptions::WorkloadError>())?;
    m.add("InputError", py.get_type::<exceptions::InputError>())?;
    m.add("TraceError", py.get_type::<exceptions::TraceError>())?;
    m.add("SimulationError", py.get_type::<exceptions::SimulationError>())?;
    Ok(())
}
