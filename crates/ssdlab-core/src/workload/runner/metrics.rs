//! The runner's metrics: fio's depth buckets of each job.
//!
//! Each is declared once here; the runner publishes it and readers look it up by this constant.

use crate::stats::Metric;

pub const HOST_IODEPTH_LEVEL: Metric = Metric::counter("host.iodepth_level", "I/Os", "per job (7 each): I/Os by the job's depth when issued, in fio's buckets 1, 2, 4, 8, 16, 32, >=64");
