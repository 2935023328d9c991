//! Binding of `ssdlab_core::units`: the one parser of sizes and times, for the values
//! the Python side reads itself (fio job files, command-line options). Errors are `ValueError`
//! with the core's message; callers add which option and where.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use ssdlab_core::sim::SimDuration;
use ssdlab_core::units;

/// Bytes from a size. `fio=False`: the config convention (`4KiB` = `4k` = 4096, `4kB` = 4000);
/// `fio=True`: fio job files (`4k` = `4kB` = `4KiB` = 4096, any case).
#[pyfunction]
#[pyo3(signature = (text, fio=false))]
pub fn parse_size(text: &str, fio: bool) -> PyResult<u64> {
    let parsed = if fio { units::parse_fio_size(text) } else { units::parse_size(text) };
    parsed.map_err(PyValueError::new_err)
}

/// Picoseconds from a time. `fio=False`: the config convention (a unit is required: `48ns`,
/// `1.5us`); `fio=True`: fio job files, where a bare number counts in `fio_unit` (`s`, `ms`,
/// `us`) and `m` is minutes.
#[pyfunction]
#[pyo3(signature = (text, fio=false, fio_unit="s"))]
pub fn parse_time(text: &str, fio: bool, fio_unit: &str) -> PyResult<u64> {
    let parsed = if fio {
        let bare = units::parse_time(&format!("1{fio_unit}")).map_err(|e| PyValueError::new_err(format!("fio_unit {fio_unit:?}: {e}")))?;
        units::parse_fio_time(text, bare)
    } else {
        units::parse_time(text)
    };
    parsed.map(SimDuration::as_ps).map_err(PyValueError::new_err)
}
