//! The device ATC's metrics: lookups, hits and misses.
//!
//! Each is declared once here; the block publishes it and readers look it up by this constant.

use crate::stats::Metric;

pub const ATS_LOOKUPS: Metric = Metric::counter("ats.lookups", "lookups", "ATC lookups (one per STU page a DMA touches)");
pub const ATS_HITS: Metric = Metric::counter("ats.hits", "lookups", "ATC hits, pinned ones included");
pub const ATS_PINNED_HITS: Metric = Metric::counter("ats.pinned_hits", "lookups", "hits on pinned SQ/CQ translations");
pub const ATS_IOTLB_MISSES: Metric = Metric::counter("ats.iotlb_misses", "lookups", "ATC misses that also missed the IOMMU's IOTLB (a page walk)");
