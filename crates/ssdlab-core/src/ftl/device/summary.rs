//! What the flash device reports: the metrics it publishes (FTL, NAND array, write buffer,
//! map cache, read-ahead), and the flash section of a run's results built from them.

use super::FlashDevice;
use crate::ftl::metrics::{
    FTL_BUFFER_HITS, FTL_ERASES, FTL_ERASE_COUNT_MAX, FTL_ERASE_COUNT_MEAN, FTL_ERASE_COUNT_MIN, FTL_FDP_BLOCKS_WITH_DATA, FTL_FDP_MIXED_BLOCKS, FTL_FREE_BLOCKS, FTL_GC_BG_VICTIMS, FTL_GC_RUNS,
    FTL_GC_UNITS_MOVED, FTL_GC_VICTIMS, FTL_HOST_WRITES, FTL_MAP_CACHE_HITS, FTL_MAP_CACHE_MISSES, FTL_MAP_CACHE_WRITEBACKS, FTL_MAP_HEAP_BYTES, FTL_OPS_MOVED_BLOCKS, FTL_POOL_BLOCKS,
    FTL_POOL_FREE_BLOCKS, FTL_READ_AHEAD_DROPPED, FTL_READ_AHEAD_HITS, FTL_READ_AHEAD_PAGES, FTL_READ_AHEAD_WAITS, FTL_READ_COALESCED, FTL_RMW_READS, FTL_TENANT_GC_MOVED, FTL_TENANT_GC_PAID_OTHERS,
    FTL_TENANT_GC_PAID_OWN, FTL_TENANT_HOST_WRITES, FTL_TENANT_POOLS, FTL_TRIMS, FTL_UNMAPPED_READS, FTL_WL_MOVES, FTL_ZONE_RESETS, MEDIA_BUS_BUSY, MEDIA_BUS_UNITS, MEDIA_ECC_SOFT_DECODES,
    MEDIA_UNITS, MEDIA_UNITS_BUSY, NAND_CHANNELS_BUSY, NAND_DIES_BUSY, NAND_DIES_GC_BUSY, NAND_ERASES, NAND_GC_PROGRAMS, NAND_GC_READS, NAND_HOST_READS, NAND_MAP_PROGRAMS, NAND_MAP_READS,
    NAND_MULTIPLANE_PROGRAMS, NAND_MULTIPLANE_READS, NAND_POWER_WAITS, NAND_PREFETCH_READS, NAND_PROGRAMS, NAND_READ_RETRIES, NAND_REGISTER_HITS, NAND_SUSPENDS,
};
use crate::ftl::{FtlCounters, IntegrityCounts};
use crate::media::metrics::MEDIA_ECC_DECODER_WAIT;
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
        let n = self.array.counters();
        m.count(&FTL_HOST_WRITES, c.host_writes);
        // GC's moves and erases count when the dies perform them: a moved unit when its page
        // is programmed, an erase when it ends (the FTL books them as it decides them, ahead
        // of the dies by the queues' depth).
        m.count(&FTL_GC_UNITS_MOVED, n.gc_programs * u64::from(self.array.slots_per_page()));
        m.count(&FTL_ERASES, n.erases);
        m.count(&FTL_GC_VICTIMS, c.gc_victims);
        m.count(&FTL_GC_RUNS, c.gc_runs);
        m.count(&FTL_GC_BG_VICTIMS, c.bg_victims);
        m.count(&FTL_TRIMS, c.trims);
        m.count(&FTL_WL_MOVES, c.wl_moves);
        m.count(&FTL_BUFFER_HITS, self.buffer_hits);
        m.count(&FTL_UNMAPPED_READS, self.unmapped_reads);
        m.gauge(&FTL_FREE_BLOCKS, f64::from(self.ftl.free_blocks()));
        let (emin, emax, emean) = self.ftl.erase_spread();
        m.gauge(&FTL_ERASE_COUNT_MIN, f64::from(emin));
        m.gauge(&FTL_ERASE_COUNT_MAX, f64::from(emax));
        m.gauge(&FTL_ERASE_COUNT_MEAN, emean);
        m.gauge(&FTL_MAP_HEAP_BYTES, self.ftl.heap_bytes() as f64);
        if let Some(a) = self.ftl.attribution() {
            let n = a.tenants();
            let own: Vec<u64> = (0..n).map(|t| a.moved_by(t, t)).collect();
            let others: Vec<u64> = (0..n).map(|t| (0..n).filter(|&o| o != t).map(|o| a.moved_by(t, o)).sum()).collect();
            let moved: Vec<u64> = (0..n).map(|o| (0..=n).map(|p| a.moved_by(p, o)).sum()).collect();
            m.counts(&FTL_TENANT_HOST_WRITES, &a.host);
            m.counts(&FTL_TENANT_GC_PAID_OWN, &own);
            m.counts(&FTL_TENANT_GC_PAID_OTHERS, &others);
            m.counts(&FTL_TENANT_GC_MOVED, &moved);
            if self.ftl.placement_handles() > 1 {
                let (with_data, mixed) = self.ftl.mixed_blocks();
                m.gauge(&FTL_FDP_BLOCKS_WITH_DATA, with_data as f64);
                m.gauge(&FTL_FDP_MIXED_BLOCKS, mixed as f64);
            }
            let free: Vec<u64> = (0..self.ftl.pool_count()).map(|p| u64::from(self.ftl.pool_free_blocks(p))).collect();
            if free.len() == n {
                m.gauge(&FTL_TENANT_POOLS, n as f64);
                for (t, f) in free.iter().enumerate() {
                    m.gauge_of(&FTL_POOL_FREE_BLOCKS, t, *f as f64);
                    m.gauge_of(&FTL_POOL_BLOCKS, t, f64::from(self.ftl.pool_blocks(t)));
                }
                m.count(&FTL_OPS_MOVED_BLOCKS, self.sizer.as_ref().map_or(0, |s| s.moved));
            }
        }
        m.count(&NAND_HOST_READS, n.host_reads);
        m.count(&NAND_GC_READS, n.gc_reads);
        m.count(&NAND_PROGRAMS, n.programs);
        m.count(&NAND_GC_PROGRAMS, n.gc_programs);
        m.count(&NAND_MULTIPLANE_PROGRAMS, n.multiplane_programs);
        m.count(&NAND_REGISTER_HITS, n.register_hits);
        m.count(&NAND_MULTIPLANE_READS, n.multiplane_reads);
        m.count(&NAND_ERASES, n.erases);
        m.count(&NAND_SUSPENDS, n.suspends);
        m.count(&NAND_PREFETCH_READS, n.prefetch_reads);
        m.count(&NAND_READ_RETRIES, n.read_retries);
        m.count(&MEDIA_ECC_SOFT_DECODES, n.soft_decodes);
        m.count(&MEDIA_ECC_DECODER_WAIT, n.decoder_wait);
        m.count(&NAND_MAP_READS, n.map_reads);
        m.count(&NAND_MAP_PROGRAMS, n.map_programs);
        if self.array.has_power_budget() {
            m.count(&NAND_POWER_WAITS, self.array.power_waits);
        }
        let mc = self.ftl.map_cache_counters();
        m.count(&FTL_MAP_CACHE_HITS, mc.hits);
        m.count(&FTL_MAP_CACHE_MISSES, mc.misses);
        m.count(&FTL_MAP_CACHE_WRITEBACKS, mc.writebacks);
        m.count(&FTL_ZONE_RESETS, self.ftl.zone_resets());
        m.count(&FTL_READ_COALESCED, self.coalesced);
        m.count(&FTL_RMW_READS, self.rmw_reads);
        m.count(&FTL_READ_AHEAD_HITS, self.ahead.hits);
        m.count(&FTL_READ_AHEAD_WAITS, self.ahead.waits);
        m.count(&FTL_READ_AHEAD_PAGES, self.ahead.pages);
        m.count(&FTL_READ_AHEAD_DROPPED, self.ahead.dropped);
        let dies = self.array.die_busy();
        let channels = self.array.channel_busy();
        m.count(&MEDIA_UNITS_BUSY, dies.iter().sum());
        m.gauge(&MEDIA_UNITS, dies.len() as f64);
        m.count(&MEDIA_BUS_BUSY, channels.iter().sum());
        m.gauge(&MEDIA_BUS_UNITS, channels.len() as f64);
        m.counts(&NAND_DIES_BUSY, &dies);
        m.count(&NAND_DIES_GC_BUSY, self.array.busy_totals().1.as_ps());
        m.counts(&NAND_CHANNELS_BUSY, &channels);
    }

    /// The flash section of the results, from the metrics it published (reset to the
    /// measurement window).
    pub fn flash_summary(&self, m: &Metrics, window: SimDuration) -> FlashSummary {
        let ftl = FtlCounters {
            host_writes: m.int(&FTL_HOST_WRITES),
            gc_writes: m.int(&FTL_GC_UNITS_MOVED),
            erases: m.int(&FTL_ERASES),
            gc_victims: m.int(&FTL_GC_VICTIMS),
            gc_runs: m.int(&FTL_GC_RUNS),
            trims: m.int(&FTL_TRIMS),
            wl_moves: m.int(&FTL_WL_MOVES),
            bg_victims: m.int(&FTL_GC_BG_VICTIMS),
        };
        let nand = NandCounters {
            host_reads: m.int(&NAND_HOST_READS),
            gc_reads: m.int(&NAND_GC_READS),
            programs: m.int(&NAND_PROGRAMS),
            gc_programs: m.int(&NAND_GC_PROGRAMS),
            multiplane_programs: m.int(&NAND_MULTIPLANE_PROGRAMS),
            erases: m.int(&NAND_ERASES),
            suspends: m.int(&NAND_SUSPENDS),
            prefetch_reads: m.int(&NAND_PREFETCH_READS),
            map_reads: m.int(&NAND_MAP_READS),
            map_programs: m.int(&NAND_MAP_PROGRAMS),
            read_retries: m.int(&NAND_READ_RETRIES),
            multiplane_reads: m.int(&NAND_MULTIPLANE_READS),
            register_hits: m.int(&NAND_REGISTER_HITS),
            soft_decodes: m.int(&MEDIA_ECC_SOFT_DECODES),
            decoder_wait: m.int(&MEDIA_ECC_DECODER_WAIT),
        };
        let t = window.as_ps().max(1) as f64;
        FlashSummary {
            waf: ftl.waf(),
            ftl,
            nand,
            free_blocks: m.value(&FTL_FREE_BLOCKS) as u32,
            erase_count_min: m.value(&FTL_ERASE_COUNT_MIN) as u32,
            erase_count_max: m.value(&FTL_ERASE_COUNT_MAX) as u32,
            erase_count_mean: m.value(&FTL_ERASE_COUNT_MEAN),
            buffer_hits: m.int(&FTL_BUFFER_HITS),
            read_ahead_hits: m.int(&FTL_READ_AHEAD_HITS) + m.int(&FTL_READ_AHEAD_WAITS),
            unmapped_reads: m.int(&FTL_UNMAPPED_READS),
            mapping_heap_bytes: m.value(&FTL_MAP_HEAP_BYTES) as u64,
            precondition: self.precondition.clone(),
            die_utilisation: m.ints(&NAND_DIES_BUSY).iter().map(|&b| b as f64 / t).collect(),
            free_blocks_over_time: Vec::new(),
            ops_over_time: self.sizer.as_ref().map_or_else(Vec::new, |s| s.rows.clone()),
            integrity: self.ftl.integrity_counts().map(|reads| IntegrityReport { reads, mapped: self.ftl.mapped_units(), violation: self.ftl.verify().err() }),
        }
    }
}
