//! The controller's metrics: busy time of its cores or engines, fetch waits and overlap waits.
//!
//! Each is declared once here; the block publishes it and readers look it up by this constant.

use crate::stats::Metric;

pub const CTRL_BUSY: Metric = Metric::counter("ctrl.busy", "ps", "busy time summed over firmware cores (or hardware engines)");
pub const CTRL_UNITS: Metric = Metric::gauge("ctrl.units", "units", "firmware cores (firmware mode) or step engines (hardware mode)");
pub const CTRL_FETCH_WAITS: Metric = Metric::counter("ctrl.fetch.waits", "fetches", "reads of host memory (SQE, PRP list, write data) that waited for a fetch engine");
pub const CTRL_OVERLAP_WAITS: Metric = Metric::counter("ctrl.overlap.waits", "commands", "commands held back by the overlap check until an earlier command on the same unit completed");
