//! The link's metrics: TLPs, wire bytes and busy time of each direction.
//!
//! Each is declared once here; the block publishes it and readers look it up by this constant.

use crate::stats::Metric;

pub const PCIE_TLPS: Metric = Metric::counter("pcie.{}.tlps", "TLPs", "TLPs sent on this direction");
pub const PCIE_WIRE_BYTES: Metric = Metric::counter("pcie.{}.wire_bytes", "B", "bytes on the wire on this direction (headers, framing and payload; DLLPs excluded)");
pub const PCIE_BUSY: Metric = Metric::counter("pcie.{}.busy", "ps", "time this direction spent serialising TLPs and DLLPs");
