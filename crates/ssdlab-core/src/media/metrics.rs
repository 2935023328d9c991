//! The NVM array's metrics: busy time of its banks and interconnect, soft decodes and start-gap moves.
//!
//! Each is declared once here; the block publishes it and readers look it up by this constant.

use crate::stats::Metric;

pub const MEDIA_UNITS_BUSY: Metric = Metric::counter("media.units.busy", "ps", "busy time summed over media units (NVM banks)");
pub const MEDIA_UNITS: Metric = Metric::gauge("media.units", "units", "media units (NVM banks over all memory controllers)");
pub const MEDIA_BUS_BUSY: Metric = Metric::counter("media.bus.busy", "ps", "busy time summed over the internal interconnect's links");
pub const MEDIA_BUS_UNITS: Metric = Metric::gauge("media.bus.units", "links", "internal interconnect links (1, or one per controller for a crossbar)");
pub const MEDIA_ECC_SOFT_DECODES: Metric = Metric::counter("media.ecc.soft_decodes", "reads", "reads with a codeword beyond hard-decision decoding (soft-decision path)");
pub const MEDIA_ECC_DECODER_WAIT: Metric = Metric::counter("media.ecc.decoder_wait", "ps", "time slow-path reads waited for a free soft-decision decoder, summed");
pub const NVM_BUFFER_WAITS: Metric = Metric::counter("nvm.write_buffer.waits", "writes", "writes that waited for free slots of the NVM write buffer");
pub const NVM_START_GAP_MOVES: Metric = Metric::counter("nvm.start_gap.moves", "moves", "start-gap wear-levelling gap moves (each reads and writes one chunk)");
