//! The device side of address translation: the ATC every DMA of the simulated drive looks its
//! translations up in (with the IOMMU's IOTLB behind it), and the translator on the DMA path
//! that logs each access and charges the wait for its translations.

use super::metrics::{ATS_HITS, ATS_IOTLB_MISSES, ATS_LOOKUPS, ATS_PINNED_HITS};
use super::{pages, pin_layout, set_bits, sim, Access, Assoc, AtsConfig, Keys, Policy};
use crate::sim::SimDuration;
use crate::stats::Metrics;

/// The device's address translation on its DMA path: the ATC (with `ats.enabled`) and a log
/// of every DMA (when one is kept).
#[derive(Default)]
pub struct Translator {
    pub atc: Option<Atc>,
    pub log: Option<Vec<Access>>,
    /// Scratch: the accesses of one group of TLPs.
    accesses: Vec<Access>,
}

impl Translator {
    /// A translator with `atc` (or none), keeping no log.
    pub fn new(atc: Option<Atc>) -> Self {
        Translator { atc, log: None, accesses: Vec::new() }
    }

    /// Whether DMA addresses matter at all (an ATC to look them up in, or a log to keep).
    pub fn active(&self) -> bool {
        self.atc.is_some() || self.log.is_some()
    }

    /// The wait of a group of TLPs whose DMA accesses `fill` lists: each access is logged and
    /// looked up, and the group waits for its slowest translation.
    pub fn translate(&mut self, fill: impl FnOnce(&mut Vec<Access>)) -> SimDuration {
        let mut list = std::mem::take(&mut self.accesses);
        list.clear();
        fill(&mut list);
        let mut wait = SimDuration::ZERO;
        for a in &list {
            if let Some(log) = &mut self.log {
                log.push(*a);
            }
            if let Some(atc) = &mut self.atc {
                wait = wait.max(atc.lookup(a.pasid, a.addr, a.size));
            }
        }
        self.accesses = list;
        wait
    }
}

/// The ATC of the simulated device, with the IOMMU's IOTLB behind it.
pub struct Atc {
    keys: Keys,
    cache: sim::CacheSim,
    iotlb_keys: Keys,
    iotlb: sim::CacheSim,
    sets: u32,
    round_trip: SimDuration,
    walk: SimDuration,
    /// Lookups, hits (pinned included), pinned hits, IOTLB misses.
    pub lookups: u64,
    pub hits: u64,
    pub pinned_hits: u64,
    pub iotlb_misses: u64,
}

impl Atc {
    /// An ATC for `cfg`; `pins` are the ring ranges `(pasid, start, end)` it keeps; a miss costs
    /// `round_trip` (an ATS request and its completion over the link) plus the walk.
    pub fn new(cfg: &AtsConfig, pins: &[(u32, u64, u64)], round_trip: SimDuration, seed: u64) -> Self {
        let stu = cfg.stu_exponent();
        let mut keys = Keys::new(stu);
        let mut pinned = Vec::new();
        if cfg.pin_rings {
            for &(pasid, s, e) in pins {
                for page in (s >> keys.shift)..=((e - 1) >> keys.shift) {
                    if keys.pin(pasid, page) {
                        pinned.push((pasid, page));
                    }
                }
            }
        }
        let (sets, ways) = match cfg.lines.checked_div(cfg.ways) {
            Some(sets) => (sets, cfg.ways),
            None => (1, cfg.lines),
        };
        let assoc = if cfg.ways == 0 { Assoc::Full } else { Assoc::Ways(ways) };
        // Pins that do not fit leave no line for the rest: the cache then misses on everything
        // else (the config check keeps that from being silent).
        let per_set = pin_layout(assoc, &pinned, sets, ways, true).unwrap_or_else(|| vec![u16::try_from(ways).unwrap_or(u16::MAX); sets as usize]);
        let policy = cfg.policy;
        Atc {
            keys,
            cache: sim::CacheSim::new(policy, sets as usize, ways as usize, &per_set, seed),
            iotlb_keys: Keys::new(stu),
            iotlb: sim::CacheSim::new(Policy::Lru, 1, cfg.iotlb_entries as usize, &[0], seed),
            sets,
            round_trip,
            walk: cfg.iommu_walk,
            lookups: 0,
            hits: 0,
            pinned_hits: 0,
            iotlb_misses: 0,
        }
    }

    /// Looks up the translations of a DMA of `size` bytes at `addr`; returns the time the
    /// DMA waits for them (zero on a hit). Misses of one DMA share one translation request.
    pub fn lookup(&mut self, pasid: u32, addr: u64, size: u32) -> SimDuration {
        let a = Access { addr, size, pasid, pinned: false };
        let (mut miss, mut walk) = (false, false);
        for page in pages(&a, self.keys.shift) {
            self.lookups += 1;
            let id = self.keys.id(pasid, page);
            if self.keys.is_pinned(id) {
                self.hits += 1;
                self.pinned_hits += 1;
                continue;
            }
            if self.cache.access(id, set_bits(pasid, page), u64::MAX) {
                self.hits += 1;
            } else {
                miss = true;
                let t = self.iotlb_keys.id(pasid, page);
                if !self.iotlb.access(t, 0, u64::MAX) {
                    self.iotlb_misses += 1;
                    walk = true;
                }
            }
        }
        match (miss, walk) {
            (false, _) => SimDuration::ZERO,
            (true, false) => self.round_trip,
            (true, true) => self.round_trip + self.walk,
        }
    }

    pub fn sets(&self) -> u32 {
        self.sets
    }

    /// Lookups, hits and misses so far, for statistics.
    pub fn publish(&self, m: &mut Metrics) {
        m.count(&ATS_LOOKUPS, self.lookups);
        m.count(&ATS_HITS, self.hits);
        m.count(&ATS_PINNED_HITS, self.pinned_hits);
        m.count(&ATS_IOTLB_MISSES, self.iotlb_misses);
    }
}
