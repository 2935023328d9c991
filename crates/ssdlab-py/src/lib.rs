//! `ssdlab._core`: the Python binding of ssdlab-core. Conversions only: every decision is made
//! in the core, every presentation choice in the Python package.
#![allow(clippy::needless_pass_by_value)] // pyo3 hands extracted arguments over by value

mod error;
mod exceptions;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use ssdlab_core::config::{self, presets};
use ssdlab_core::stats::Component;

use crate::error::PyCoreError;

/// Events processed between two checks for Ctrl-C and progress reports.
const EVENTS_PER_SLICE: u64 = 250_000;

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
        return Ok(toml::Value::String(v.extract()?));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, val) in d.iter() {
            let key: String = k.str()?.extract()?;
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
struct Config {
    inner: ssdlab_core::Config,
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
}

/// One simulation run.
#[pyclass(module = "ssdlab._core")]
struct Simulation {
    inner: ssdlab_core::Simulation,
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (config, keep_io_log=false))]
    fn new(config: &Config, keep_io_log: bool) -> PyResult<Self> {
        let mut inner = ssdlab_core::Simulation::new(config.inner.clone()).map_err(PyCoreError)?;
        if keep_io_log {
            inner.keep_io_log();
        }
        Ok(Simulation { inner })
    }

    /// Runs to the end without holding the GIL; calls `progress(fraction)` between slices and
    /// raises KeyboardInterrupt on Ctrl-C (the run can be resumed by calling `run` again).
    /// Returns the summary as JSON.
    #[pyo3(signature = (progress=None))]
    fn run(&mut self, py: Python<'_>, progress: Option<Py<PyAny>>) -> PyResult<String> {
        loop {
            let sim = &mut self.inner;
            let done = py.detach(|| sim.run_events(EVENTS_PER_SLICE)).map_err(PyCoreError)?;
            py.check_signals()?;
            if let Some(cb) = &progress {
                cb.call1(py, (if done { 1.0 } else { self.inner.progress() },))?;
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

    /// Fraction of the work done.
    fn progress(&self) -> f64 {
        self.inner.progress()
    }

    /// Per-I/O columns as little-endian byte buffers (numpy.frombuffer reads them), or None.
    fn io_log<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(log) = self.inner.io_log() else { return Ok(None) };
        let d = PyDict::new(py);
        let u64s = |v: &[u64]| PyBytes::new(py, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>());
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
#[pyfunction]
fn components() -> Vec<&'static str> {
    Component::ALL.iter().map(|c| c.name()).collect()
}

/// Names of the benchmark scenarios.
#[pyfunction]
fn bench_scenarios() -> Vec<&'static str> {
    ssdlab_core::bench::SCENARIOS.iter().map(|s| s.name).collect()
}

/// Runs one benchmark scenario (I/O count scaled by `scale`) without the GIL; returns JSON.
#[pyfunction]
#[pyo3(signature = (name, scale=1.0))]
fn bench_run(py: Python<'_>, name: &str, scale: f64) -> PyResult<String> {
    let Some(s) = ssdlab_core::bench::SCENARIOS.iter().find(|s| s.name == name) else {
        return Err(exceptions::SsdlabError::new_err(format!("no benchmark scenario named {name:?}")));
    };
    let r = py.detach(|| ssdlab_core::bench::run_scenario(s, scale)).map_err(PyCoreError)?;
    serde_json::to_string(&r).map_err(|e| exceptions::SimulationError::new_err(e.to_string()))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", ssdlab_core::VERSION)?;
    m.add_class::<Config>()?;
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(presets_list, m)?)?;
    m.add_function(wrap_pyfunction!(preset_text, m)?)?;
    m.add_function(wrap_pyfunction!(components, m)?)?;
    m.add_function(wrap_pyfunction!(bench_scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(bench_run, m)?)?;
    m.add("SsdlabError", py.get_type::<exceptions::SsdlabError>())?;
    m.add("ConfigError", py.get_type::<exceptions::ConfigError>())?;
    m.add("WorkloadError", py.get_type::<exceptions::WorkloadError>())?;
    m.add("InputError", py.get_type::<exceptions::InputError>())?;
    m.add("SimulationError", py.get_type::<exceptions::SimulationError>())?;
    Ok(())
}
