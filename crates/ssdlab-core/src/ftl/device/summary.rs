//! What the flash device reports: the metrics it publishes (FTL, NAND array, write buffer,
//! map cache, read-ahead), and the flash section of a run's results built from them.

use super::FlashDevice;
use crate::ftl::{FtlCounters, IntegrityCounts};
use crate::media::nand::NandCounters;
use crate::sim::SimDuration;
use crate::stats::Metrics;

/// The state preconditioning left the drive in.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PreconditionReport {
    pub state: String,
    /// Drive writes of random overwrites done by `aged`.
    pub drive_writes: f64,
    /// WAF of the last stretch of preconditioning writes.
    pub waf: f64,
    pub free_blocks: u32,
    /// Mean valid fraction of full blocks.
    pub valid_fraction: f64,
    pub wall_s: f64,
}

/// Flash results: FTL and array counters over the measurement window.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FlashSummary {
    pub waf: f64,
    pub ftl: FtlCounters,
    pub nand: NandCounters,
    pub free_blocks: u32,
    pub erase_count_min: u32,
    pub erase_count_max: u32,
    pub erase_count_mean: f64,
    pub buffer_hits: u64,
    /// Read units served by read-ahead: found in DRAM, or waiting for their page read.
    pub read_ahead_hits: u64,
    pub unmapped_reads: u64,
    pub mapping_heap_bytes: u64,
    pub precondition: PreconditionReport,
    /// Busy fraction of each die.
    pub die_utilisation: Vec<f64>,
    /// Free blocks over time: `[seconds, blocks]` at the start and after erases (host-driven),
    /// thinned to a bounded number of points.
    pub free_blocks_over_time: Vec<(f64, u32)>,
    /// Dynamic OPS (`ftl.ops_interval`): every tenant's pool at every controller step.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ops_over_time: Vec<crate::ftl::ops::OpsRow>,
    /// Integrity mode (`ftl.integrity`): what the checks found over the whole run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integrity: Option<IntegrityReport>,
}

/// Integrity mode's findings: the checks of host reads, and the check of every invariant at
/// the end of the run.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct IntegrityReport {
    #[serde(flatten)]
    pub reads: IntegrityCounts,
    /// Units mapped at the end, each checked against its last written version.
    pub mapped: u64,
    /// The first broken invariant at the end (mapping, back pointers, valid counts, free
    /// blocks), if any.
    pub violation: Option<String>,
}

impl FlashDevice {
    /// Publishes the FTL's, the array's and the write buffer's counters and gauges.
    pub(super) fn publish_metrics(&self, m: &mut Metrics) {
        let c = self.ftl.counters();
        m.count("ftl.host_writes", "units", "mapping units written by the host", c.host_writes);
        m.count("ftl.gc.units_moved", "units", "mapping units moved by garbage collection", c.gc_writes);
        m.count("ftl.erases", "blocks", "blocks erased", c.erases);
        m.count("ftl.gc.victims", "blocks", "victim blocks reclaimed by garbage collection", c.gc_victims);
        m.count("ftl.gc.runs", "activations", "foreground GC activations (free blocks fell to the trigger)", c.gc_runs);
        m.count("ftl.gc.bg_victims", "blocks", "victim blocks reclaimed by background (idle) GC", c.bg_victims);
        m.count("ftl.trims", "units", "mapping units trimmed", c.trims);
        m.count("ftl.wl.moves", "blocks", "victims chosen by static wear levelling", c.wl_moves);
        m.count("ftl.buffer.hits", "units", "read units served from the DRAM write buffer", self.buffer_hits);
        m.count("ftl.unmapped_reads", "units", "read units never written (zeroes, no flash access)", self.unmapped_reads);
        m.gauge("ftl.free_blocks", "blocks", "erased blocks ready for writing", f64::from(self.ftl.free_blocks()));
        let (emin, emax, emean) = self.ftl.erase_spread();
        m.gauge("ftl.erase_count.min", "erases", "fewest erases of any block", f64::from(emin));
        m.gauge("ftl.erase_count.max", "erases", "most erases of any block", f64::from(emax));
        m.gauge("ftl.erase_count.mean", "erases", "mean erases per block", emean);
        m.gauge("ftl.map.heap_bytes", "B", "memory held by the mapping tables", self.ftl.heap_bytes() as f64);
        if let Some(a) = self.ftl.attribution() {
            let n = a.tenants();
            let own: Vec<u64> = (0..n).map(|t| a.moved_by(t, t)).collect();
            let others: Vec<u64> = (0..n).map(|t| (0..n).filter(|&o| o != t).map(|o| a.moved_by(t, o)).sum()).collect();
            let moved: Vec<u64> = (0..n).map(|o| (0..=n).map(|p| a.moved_by(p, o)).sum()).collect();
            m.counts("ftl.tenant.host_writes", "units", "mapping units each tenant wrote", &a.host);
            m.counts("ftl.tenant.gc_paid_own", "units", "units GC moved on behalf of each tenant's writes that were its own", &own);
            m.counts("ftl.tenant.gc_paid_others", "units", "units GC moved on behalf of each tenant's writes that belonged to other tenants", &others);
            m.counts("ftl.tenant.gc_moved", "units", "units of each tenant that GC moved, whoever's writes (or idle time) paid", &moved);
            if self.ftl.placement_handles() > 1 {
                let (with_data, mixed) = self.ftl.mixed_blocks();
                m.gauge("ftl.fdp.blocks_with_data", "blocks", "blocks holding valid data", with_data as f64);
                m.gauge("ftl.fdp.mixed_blocks", "blocks", "blocks holding valid data of more than one tenant (reclaim unit handle)", mixed as f64);
            }
            let free: Vec<u64> = (0..self.ftl.pool_count()).map(|p| u64::from(self.ftl.pool_free_blocks(p))).collect();
            if free.len() == n {
                m.gauge("ftl.tenant.pools", "pools", "isolated pools (one per tenant)", n as f64);
                for (t, f) in free.iter().enumerate() {
                    m.gauge(&format!("ftl.pool{t}.free_blocks"), "blocks", "erased blocks of one tenant's pool", *f as f64);
                    m.gauge(&format!("ftl.pool{t}.blocks"), "blocks", "blocks of one tenant's pool (dynamic OPS moves them)", f64::from(self.ftl.pool_blocks(t)));
                }
                m.count("ftl.ops.moved_blocks", "blocks", "free blocks the dynamic OPS controller moved between pools", self.sizer.as_ref().map_or(0, |s| s.moved));
            }
        }
        let n = self.array.counters();
        m.count("nand.host_reads", "reads", "page reads for the host", n.host_reads);
        m.count("nand.gc_reads", "reads", "page reads for garbage collection", n.gc_reads);
        m.count("nand.programs", "programs", "page programs", n.programs);
        m.count("nand.multiplane_programs", "programs", "programs that joined a multi-plane program", n.multiplane_programs);
        m.count("nand.register_hits", "reads", "reads served from a plane's page register without a tR", n.register_hits);
        m.count("nand.multiplane_reads", "reads", "host reads that sensed two or more planes of a die at once", n.multiplane_reads);
        m.count("nand.erases", "erases", "block erases on the dies", n.erases);
        m.count("nand.suspends", "suspends", "program or erase suspensions for reads", n.suspends);
        m.count("nand.prefetch_reads", "reads", "page reads for read-ahead", n.prefetch_reads);
        m.count("nand.read_retries", "steps", "read-retry steps: pages sensed again with shifted read voltages", n.read_retries);
        m.count("media.ecc.soft_decodes", "reads", "reads with a codeword beyond hard-decision decoding (soft-decision path)", n.soft_decodes);
        m.count("nand.map_reads", "reads", "translation-page reads (map cache misses)", n.map_reads);
        m.count("nand.map_programs", "programs", "translation-page write-backs (dirty map cache evictions)", n.map_programs);
        let mc = self.ftl.map_cache_counters();
        m.count("ftl.map_cache.hits", "lookups", "map lookups and updates that found their translation page cached", mc.hits);
        m.count("ftl.map_cache.misses", "lookups", "map lookups and updates that loaded their translation page", mc.misses);
        m.count("ftl.map_cache.writebacks", "pages", "changed translation pages written back on eviction", mc.writebacks);
        m.count("ftl.zone_resets", "zones", "zones reset by the host (a zoned namespace)", self.ftl.zone_resets());
        m.count("ftl.read_coalesced", "units", "read units that joined another host read's page read of the same bytes", self.coalesced);
        m.count("ftl.read_ahead.hits", "units", "read units found in DRAM, read ahead", self.ahead.hits);
        m.count("ftl.read_ahead.waits", "units", "read units that waited for their read-ahead page read", self.ahead.waits);
        m.count("ftl.read_ahead.pages", "reads", "read-ahead page reads issued", self.ahead.pages);
        m.count("ftl.read_ahead.dropped", "units", "units read ahead and dropped unused (stream broke, or overwritten)", self.ahead.dropped);
        let dies = self.array.die_busy();
        let channels = self.array.channel_busy();
        m.count("media.units.busy", "ps", "busy time summed over media units (NAND dies)", dies.iter().sum());
        m.gauge("media.units", "units", "media units (NAND dies)", dies.len() as f64);
        m.count("media.bus.busy", "ps", "busy time summed over the internal bus (ONFI channels)", channels.iter().sum());
        m.gauge("media.bus.units", "channels", "ONFI channels", channels.len() as f64);
        m.counts("nand.dies.busy", "ps", "busy time of each die", &dies);
        m.count("nand.dies.gc_busy", "ps", "busy time summed over the dies given to GC work (page moves and erases)", self.array.busy_totals().1.as_ps());
        m.counts("nand.channels.busy", "ps", "busy time of each channel", &channels);
    }

    /// The flash section of the results, from the metrics it published (reset to the
    /// measurement window).
    pub fn flash_summary(&self, m: &Metrics, window: SimDuration) -> FlashSummary {
        let ftl = FtlCounters {
            host_writes: m.int("ftl.host_writes"),
            gc_writes: m.int("ftl.gc.units_moved"),
            erases: m.int("ftl.erases"),
            gc_victims: m.int("ftl.gc.victims"),
            gc_runs: m.int("ftl.gc.runs"),
            trims: m.int("ftl.trims"),
            wl_moves: m.int("ftl.wl.moves"),
            bg_victims: m.int("ftl.gc.bg_victims"),
        };
        let nand = NandCounters {
            host_reads: m.int("nand.host_reads"),
            gc_reads: m.int("nand.gc_reads"),
            programs: m.int("nand.programs"),
            multiplane_programs: m.int("nand.multiplane_programs"),
            erases: m.int("nand.erases"),
            suspends: m.int("nand.suspends"),
            prefetch_reads: m.int("nand.prefetch_reads"),
            map_reads: m.int("nand.map_reads"),
            map_programs: m.int("nand.map_programs"),
            read_retries: m.int("nand.read_retries"),
            multiplane_reads: m.int("nand.multiplane_reads"),
            register_hits: m.int("nand.register_hits"),
            soft_decodes: m.int("media.ecc.soft_decodes"),
        };
        let t = window.as_ps().max(1) as f64;
        FlashSummary {
            waf: ftl.waf(),
            ftl,
            nand,
            free_blocks: m.value("ftl.free_blocks") as u32,
            erase_count_min: m.value("ftl.erase_count.min") as u32,
            erase_count_max: m.value("ftl.erase_count.max") as u32,
            erase_count_mean: m.value("ftl.erase_count.mean"),
            buffer_hits: m.int("ftl.buffer.hits"),
            read_ahead_hits: m.int("ftl.read_ahead.hits") + m.int("ftl.read_ahead.waits"),
            unmapped_reads: m.int("ftl.unmapped_reads"),
            mapping_heap_bytes: m.value("ftl.map.heap_bytes") as u64,
            precondition: self.precondition.clone(),
            die_utilisation: m.ints("nand.dies.busy").iter().map(|&b| b as f64 / t).collect(),
            free_blocks_over_time: Vec::new(),
            ops_over_time: self.sizer.as_ref().map_or_else(Vec::new, |s| s.rows.clone()),
            integrity: self.ftl.integrity_counts().map(|reads| IntegrityReport { reads, mapped: self.ftl.mapped_units(), violation: self.ftl.verify().err() }),
        }
    }
}
