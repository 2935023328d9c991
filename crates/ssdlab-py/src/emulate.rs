//! `ssdlab._core.Emulator`: the simulated drive served in real time (`ssdlab serve`).
//! Conversions only; every blocking call runs without the GIL, so the NBD server's threads
//! wait on their own requests in parallel.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use ssdlab_core::emulate::{self, Done, Options};

use crate::error::PyCoreError;

#[pyclass(module = "ssdlab._core", frozen)]
pub struct Emulator {
    inner: emulate::Emulator,
}

/// A reply's figures: simulated latency and lag, in microseconds.
fn figures(d: Done) -> (f64, f64) {
    (d.latency.as_ns_f64() / 1000.0, d.lag.as_ns_f64() / 1000.0)
}

#[pymethods]
impl Emulator {
    /// Builds the drive of `config` (ageing it first if the config says so: Ctrl-C stops that)
    /// and starts its engine.
    #[new]
    #[pyo3(signature = (config, time_scale, store_memory, spill_dir, checksums, max_memory=None))]
    fn new(py: Python<'_>, config: &crate::Config, time_scale: f64, store_memory: u64, spill_dir: &str, checksums: bool, max_memory: Option<u64>) -> PyResult<Self> {
        let limit = max_memory.unwrap_or_else(ssdlab_core::config::memory::default_limit);
        let config = config.inner.clone();
        let block = config.nvme.lba_size.0;
        let opts = Options { time_scale, store_memory, spill_dir: spill_dir.into(), checksums, block };
        let inner = crate::interruptible(py, move || {
            let sim = ssdlab_core::Simulation::with_memory_limit(config, limit, false)?;
            emulate::Emulator::start(sim, &opts)
        })?;
        Ok(Emulator { inner })
    }

    /// The exports, one per tenant (its namespace): (name, bytes).
    fn exports(&self) -> Vec<(String, u64)> {
        self.inner.exports()
    }

    /// Reads `length` bytes at `offset` of export `tenant`, on its queue `queue`: (data,
    /// latency us, lag us).
    fn read<'py>(&self, py: Python<'py>, tenant: usize, queue: usize, offset: u64, length: usize) -> PyResult<(Bound<'py, PyBytes>, f64, f64)> {
        let mut buf = vec![0u8; length];
        let done = py.detach(|| self.inner.read(tenant, queue, offset, &mut buf)).map_err(PyCoreError)?;
        let (lat, lag) = figures(done);
        Ok((PyBytes::new(py, &buf), lat, lag))
    }

    /// Writes `data` at `offset`: (latency us, lag us).
    fn write(&self, py: Python<'_>, tenant: usize, queue: usize, offset: u64, data: &[u8]) -> PyResult<(f64, f64)> {
        Ok(figures(py.detach(|| self.inner.write(tenant, queue, offset, data)).map_err(PyCoreError)?))
    }

    /// Trims (`trim`) or writes zeroes over `length` bytes at `offset`: (latency us, lag us).
    fn zero(&self, py: Python<'_>, tenant: usize, queue: usize, offset: u64, length: u64, trim: bool) -> PyResult<(f64, f64)> {
        Ok(figures(py.detach(|| self.inner.zero(tenant, queue, offset, length, trim)).map_err(PyCoreError)?))
    }

    /// Completes once every write before it has: (latency us, lag us).
    fn flush(&self, py: Python<'_>, tenant: usize, queue: usize) -> PyResult<(f64, f64)> {
        Ok(figures(py.detach(|| self.inner.flush(tenant, queue)).map_err(PyCoreError)?))
    }

    /// Stops serving: what is in flight completes, later requests are refused.
    fn stop(&self, py: Python<'_>) {
        py.detach(|| self.inner.stop());
    }

    /// The run's summary so far, as JSON (the same as `ssdlab run`'s).
    fn summary(&self, py: Python<'_>) -> PyResult<String> {
        let s = py.detach(|| self.inner.summary());
        serde_json::to_string(&s).map_err(|e| crate::exceptions::SimulationError::new_err(e.to_string()))
    }

    /// The emulation's own figures so far, as JSON.
    fn stats(&self, py: Python<'_>) -> PyResult<String> {
        let s = py.detach(|| self.inner.stats());
        serde_json::to_string(&s).map_err(|e| crate::exceptions::SimulationError::new_err(e.to_string()))
    }
}
