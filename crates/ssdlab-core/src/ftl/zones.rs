//! Zoned namespaces (NVMe ZNS, TP4053): the logical space is cut into zones that the host
//! writes sequentially, each at its write pointer, and resets before writing it again.
//!
//! Each zone being written (an active zone) has a write stream of its own, striped over every
//! plane as any stream is, so a zone's units share no block with another zone's. A reset
//! unmaps the zone and closes its stream's open blocks; its blocks then hold no valid unit,
//! and GC reclaims them with erases alone: a zoned drive moves nothing (WAF 1), and its
//! over-provisioning only holds the blocks waiting for their erase. A write that is not at its
//! zone's write pointer, or that would exceed the drive's active zones, is an error (the
//! drive's Zone Invalid Write and Too Many Active Zones statuses), never silently placed.
//!
//! Leaves out: a zone capacity below the zone size, zone append, explicit open, close and
//! finish, the read-only and offline states, and zones on a subset of the dies.

use super::pool::NIL;
use super::Ftl;
use crate::error::{Error, Result};

const IDLE: u32 = u32::MAX;

/// The zones of a zoned namespace.
#[derive(Clone, Debug)]
pub(super) struct Zones {
    /// Logical units per zone.
    units: u64,
    /// Per zone: units written (the write pointer, from the zone's start), and the stream
    /// writing it while it is active.
    wp: Vec<u64>,
    stream: Vec<u32>,
    /// Streams serving no zone.
    idle: Vec<u32>,
    max_active: u32,
    /// Zones reset so far.
    pub resets: u64,
    /// Units of partly filled pages that zones which filled up left unprogrammed (a stream
    /// that skipped a plane with no free block ends a zone mid-page): the write buffer drops
    /// them.
    dropped: u64,
}

impl Ftl {
    /// Makes the namespace zoned: zones of `units` logical units (the last partial zone is
    /// not exported), at most `max_active` of them partly written at once, each full if
    /// `full` (after a sequential fill) or else empty. Call after preconditioning.
    pub fn enable_zones(&mut self, units: u64, max_active: u32, full: bool) {
        let zones = (self.exported_units() / units.max(1)) as usize;
        let first = self.pools[0].streams.len() as u32;
        self.pools[0].add_streams(max_active as usize);
        self.zones = Some(Box::new(Zones {
            units,
            wp: vec![if full { units } else { 0 }; zones],
            stream: vec![IDLE; zones],
            idle: (first..first + max_active).rev().collect(),
            max_active,
            resets: 0,
            dropped: 0,
        }));
    }

    /// Zones of the namespace, and units per zone (`None` for a conventional namespace).
    pub fn zone_geometry(&self) -> Option<(usize, u64)> {
        self.zones.as_ref().map(|z| (z.wp.len(), z.units))
    }

    /// The unit at the write pointer of the zone holding unit `lpn`.
    pub fn zone_pointer(&self, lpn: u64) -> Option<u64> {
        let z = self.zones.as_ref()?;
        let zone = (lpn / z.units) as usize;
        z.wp.get(zone).map(|wp| zone as u64 * z.units + wp)
    }

    /// Zones reset since the counters were last reset.
    pub fn zone_resets(&self) -> u64 {
        self.zones.as_ref().map_or(0, |z| z.resets)
    }

    /// The stream a host write of `lpn` goes to: its zone's, which it opens if the zone was
    /// empty. Fails if `lpn` is not at the zone's write pointer or no stream is free.
    pub(super) fn zone_stream(&mut self, lpn: u64) -> Result<usize> {
        let Some(z) = self.zones.as_mut() else { return Ok(super::pool::HOST) };
        let zone = (lpn / z.units) as usize;
        let Some(&wp) = z.wp.get(zone) else {
            return Err(Error::workload("ftl.zone_size", format!("unit {lpn}"), "lies beyond the last whole zone of the zoned namespace"));
        };
        let at = zone as u64 * z.units + wp;
        if lpn != at {
            let why = if wp == z.units {
                format!("zone {zone} is full: reset it before writing it again")
            } else {
                format!("zone {zone}'s write pointer is at unit {at} (zones take sequential writes only)")
            };
            return Err(Error::workload("workload", format!("a write of unit {lpn}"), why));
        }
        if z.stream[zone] == IDLE {
            let Some(s) = z.idle.pop() else {
                return Err(Error::workload("ftl.max_active_zones", z.max_active.to_string(), format!("opening zone {zone} would exceed the drive's active zones (fill or reset one first)")));
            };
            z.stream[zone] = s;
        }
        Ok(z.stream[zone] as usize)
    }

    /// A unit of `lpn`'s zone was written: its write pointer moves on, and a full zone gives
    /// its stream back.
    pub(super) fn zone_written(&mut self, lpn: u64) {
        let Some(z) = self.zones.as_mut() else { return };
        let zone = (lpn / z.units) as usize;
        z.wp[zone] += 1;
        if z.wp[zone] == z.units {
            let s = std::mem::replace(&mut z.stream[zone], IDLE);
            z.idle.push(s);
            let dropped = self.seal(s as usize);
            if let Some(z) = self.zones.as_mut() {
                z.dropped += dropped;
            }
        }
    }

    /// Units of partly filled pages that full zones left unprogrammed since the last call.
    pub fn take_dropped_units(&mut self) -> u64 {
        self.zones.as_mut().map_or(0, |z| std::mem::take(&mut z.dropped))
    }

    /// Resets `zone`: its units are unmapped, its write pointer returns to its start, and its
    /// blocks, which hold nothing valid now, are erased (reported to `sink`), one in every
    /// plane for a full zone. Returns the units of its last, partly filled page, which never
    /// reach the flash (the write buffer drops them).
    pub fn reset_zone(&mut self, zone: usize, sink: &mut impl FnMut(super::FlashOp)) -> Result<u64> {
        let Some(z) = self.zones.as_mut() else {
            return Err(Error::workload("ftl.zone_size", "", "a zone reset needs a zoned namespace"));
        };
        let Some(&wp) = z.wp.get(zone) else {
            return Err(Error::workload("zone", zone.to_string(), format!("the namespace has {} zones", z.wp.len())));
        };
        let start = zone as u64 * z.units;
        z.wp[zone] = 0;
        z.resets += 1;
        let s = std::mem::replace(&mut z.stream[zone], IDLE);
        if s != IDLE {
            z.idle.push(s);
        }
        let spb = u64::from(self.g.slots_per_block());
        let mut blocks: Vec<u32> = (start..start + wp).filter_map(|lpn| self.l2p_slot(lpn)).map(|slot| (slot / spb) as u32).collect();
        blocks.dedup();
        for lpn in start..start + wp {
            self.trim(crate::ids::Lpn(lpn));
        }
        let dropped = if s == IDLE { 0 } else { self.seal(s as usize) };
        blocks.sort_unstable();
        blocks.dedup();
        for b in blocks {
            self.erase_if_empty(b, sink);
        }
        Ok(dropped)
    }

    /// Closes the open blocks of stream `s` (the next zone it serves starts on fresh blocks);
    /// returns the units of partly filled pages left unprogrammed.
    fn seal(&mut self, s: usize) -> u64 {
        let spp = self.g.slots_per_page;
        let mut dropped = 0;
        for plane in 0..self.order.len() {
            let st = &mut self.pools[0].streams[s];
            let block = st.active[plane];
            if block == NIL {
                continue;
            }
            dropped += u64::from(st.written[plane] % spp);
            st.active[plane] = NIL;
            st.written[plane] = 0;
            self.close(block);
        }
        self.pools[0].streams[s].cursor = 0;
        dropped
    }
}
