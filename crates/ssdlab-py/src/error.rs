//! The one place where core errors become Python exceptions.

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::PyErr;
use ssdlab_core::Error;

use crate::exceptions::{ConfigError, InputError, SimulationError, TraceError, WorkloadError};

/// A core error, ready to be raised in Python.
pub struct PyCoreError(pub Error);

impl From<Error> for PyCoreError {
    fn from(e: Error) -> Self {
        PyCoreError(e)
    }
}

impl From<PyCoreError> for PyErr {
    fn from(e: PyCoreError) -> PyErr {
        let message = e.0.to_string();
        match e.0 {
            Error::Config(issues) => {
                let list: Vec<std::collections::BTreeMap<&'static str, String>> = issues.into_iter().map(|i| [("path", i.path), ("value", i.value), ("rule", i.rule)].into_iter().collect()).collect();
                ConfigError::new_err((message, list))
            }
            Error::Workload { path, value, reason } => {
                let issue: std::collections::BTreeMap<&'static str, String> = [("path", path), ("value", value), ("rule", reason)].into_iter().collect();
                WorkloadError::new_err((message, vec![issue]))
            }
            Error::Io { .. } => InputError::new_err(message),
            Error::Trace { .. } => TraceError::new_err(message),
            Error::Cancelled => PyKeyboardInterrupt::new_err(message),
            Error::Invariant { .. } | Error::TimeOverflow { .. } => SimulationError::new_err(message),
        }
    }
}
