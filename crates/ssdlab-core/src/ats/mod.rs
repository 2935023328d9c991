//! Address translation: the device's Address Translation Cache (ATC) under PCIe ATS, as a
//! trace-driven study tool.
//!
//! Every DMA address maps to a translation key: its STU page (STU `k` covers 2^k × 4 KiB, as the
//! ATS field encodes it: 2 MiB is STU 9), tagged by PASID so that different address spaces never
//! share a translation. Keys are interned to dense ids once per STU, so every model works on
//! arrays; where a study is set-associative LRU curves alone (no pins, no OPT) over bare
//! addresses, the pages themselves are the keys and no ids are made. The study replays one
//! stream through many caches at once:
//! - fully associative LRU for every size in one pass (stack distances, [`curve::FaLruCurve`]);
//! - set-associative LRU for every associativity at each set count in one pass
//!   ([`curve::SetLruCurve`]);
//! - FIFO/round robin, random, tree-PLRU and Belady's OPT by per-size simulation
//!   ([`sim::CacheSim`]), in parallel.
//!
//! Pinned translations (SQ/CQ rings, given as address ranges or tagged in the trace) always hit
//! and take lines: a fully associative cache of `C` lines with `P` pins behaves as `C - P` lines
//! for the rest, and a pinned set loses its pinned ways. Sizes too small to hold the pins have
//! no pinned point; a study where no size holds them is an error. With `pin_dedicated` the pins
//! sit in entries of their own and every line serves the rest.
//!
//! In the simulated device ([`Atc`]), every DMA looks its translation up in one such cache;
//! a miss costs an ATS translation round trip, plus an IOMMU walk when the IOMMU's IOTLB misses.
//!
//! Leaves out: invalidations (translations never change), page-request services (PRI), and
//! the link traffic of translation requests (their latency is counted, their bytes are not).

mod config;
pub mod curve;
mod device;
mod keys;
pub mod metrics;
pub mod sim;
pub mod synth;
pub mod trace;

use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
pub use config::AtsConfig;
pub use device::{Atc, Translator};
use keys::Keys;
pub use sim::Policy;

/// One DMA access of a trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    pub addr: u64,
    /// Bytes accessed; an access spanning several STU pages looks each of them up.
    pub size: u32,
    /// Address space (PASID or VM); 0 when the trace has none.
    pub pasid: u32,
    /// Tagged in the trace as a pinned translation (SQ/CQ).
    pub pinned: bool,
}

/// A source of accesses read a block at a time, so that a study makes one call per block rather
/// than one per access. Every iterator of accesses is one; [`trace::RawReader::blocks`] decodes
/// its buffer in place.
pub trait Blocks {
    /// Appends the next block of accesses (at most [`BLOCK`]) to `out`; false at the end.
    fn next_block(&mut self, out: &mut Vec<Access>) -> Result<bool>;

    /// Appends the lookups of the next block, (address space, STU page) for every page each
    /// access touches, to `out` (`scratch` holds the block meanwhile); false at the end. A
    /// study keys a source of bare addresses from [`Blocks::next_addresses`] instead.
    fn next_lookups(&mut self, shift: u32, scratch: &mut Vec<Access>, out: &mut Vec<(u32, u64)>) -> Result<bool> {
        if !self.next_block(scratch)? {
            return Ok(false);
        }
        for a in scratch.iter() {
            let (first, last) = page_span(a, shift);
            out.push((a.pasid, first));
            // Most accesses touch one page: no range iterator for them.
            if last > first {
                out.extend((first + 1..=last).map(|page| (a.pasid, page)));
            }
        }
        scratch.clear();
        Ok(true)
    }

    /// Whether the source holds bare addresses only (no sizes, address space 0), which it
    /// hands over through [`Blocks::next_addresses`].
    fn bare(&self) -> bool {
        false
    }

    /// A source of bare addresses: the next block's addresses as they are, little-endian u64s
    /// (at most [`BLOCK`]), so that a study keys them without building lookups; None at the
    /// end. Called only where [`Blocks::bare`] holds: other sources have none to give.
    fn next_addresses(&mut self) -> Result<Option<&[u8]>> {
        Ok(None)
    }
}

/// The whole little-endian u64 addresses in `bytes`.
pub(crate) fn addresses(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
}

/// Accesses per block (24 KiB: a block stays in the L1 cache while it is keyed).
pub const BLOCK: usize = 1024;

impl<I: Iterator<Item = Result<Access>>> Blocks for I {
    fn next_block(&mut self, out: &mut Vec<Access>) -> Result<bool> {
        for a in self.by_ref().take(BLOCK) {
            out.push(a?);
        }
        Ok(!out.is_empty())
    }
}

/// Cache organisation: fully associative, or `ways`-way set associative.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Assoc {
    Full,
    Ways(u32),
}

/// What to study.
#[derive(Clone, Debug)]
pub struct Study {
    /// STU exponents (0 = 4 KiB, 9 = 2 MiB).
    pub stus: Vec<u32>,
    pub policies: Vec<Policy>,
    pub assocs: Vec<Assoc>,
    /// Cache sizes in lines.
    pub lines: Vec<u32>,
    /// Address ranges `[start, end)` whose translations are pinned (SQ/CQ rings).
    pub pin_ranges: Vec<(u64, u64)>,
    /// Also pin the translations of accesses tagged as pinned in the trace.
    pub pin_tagged: bool,
    /// Pinned translations live in dedicated entries beside the cache (as the seed's "SQ/CQ
    /// caches") instead of taking its lines.
    pub pin_dedicated: bool,
    pub seed: u64,
}

/// One point of a hit-rate curve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub stu_bytes: u64,
    pub policy: Policy,
    pub sets: u32,
    pub ways: u32,
    pub lines: u32,
    pub pinned: bool,
    pub accesses: u64,
    pub hits: u64,
    pub hit_rate: f64,
}

impl Study {
    pub fn validate(&self) -> Result<()> {
        let mut issues = Vec::new();
        let mut bad = |path: &str, value: String, rule: &str| issues.push(crate::ConfigIssue { path: path.into(), value, rule: rule.into() });
        if self.stus.is_empty() || self.stus.iter().any(|&s| s > 40) {
            bad("stu", format!("{:?}", self.stus), "give at least one STU, each from 0 (4 KiB) to 40");
        }
        if self.policies.is_empty() {
            bad("policy", String::new(), "give at least one policy");
        }
        if self.lines.is_empty() || self.lines.iter().any(|&l| l == 0 || l > 1 << 24) {
            bad("lines", format!("{:?}", self.lines), "sizes must be 1 to 16777216 lines");
        }
        for a in &self.assocs {
            if let Assoc::Ways(w) = *a {
                if w == 0 || w > 64 {
                    bad("assoc", w.to_string(), "set-associative caches need 1 to 64 ways");
                }
                for &l in &self.lines {
                    if l >= w && (l % w != 0 || !(l / w).is_power_of_two()) {
                        bad("lines", l.to_string(), &format!("a {w}-way cache needs lines = {w} x a power of two sets"));
                    }
                }
            }
        }
        for &(s, e) in &self.pin_ranges {
            if e <= s {
                bad("pin", format!("{s:#x}-{e:#x}"), "a pinned range must end after it starts");
            }
        }
        if issues.is_empty() {
            Ok(())
        } else {
            Err(Error::Config(issues))
        }
    }
}

/// The key stream of one STU, in chunks. The reading thread fills the set-index bits of each
/// lookup and, unless the lookups are bare pages of address space 0 (whose set bits are the
/// pages themselves), its (address space, page); the models' thread turns them into dense ids
/// where a model needs them.
struct Chunk {
    /// The lookups are bare pages (`set_bits` alone).
    bare: bool,
    lookups: Vec<(u32, u64)>,
    set_bits: Vec<u64>,
    ids: Vec<u32>,
}

impl Chunk {
    /// Every stream fills the set bits; the lookups and the ids grow only in a stream that
    /// uses them (chunks are reused, so they grow once).
    fn new() -> Self {
        Chunk { bare: false, lookups: Vec::new(), set_bits: Vec::with_capacity(CHUNK), ids: Vec::new() }
    }

    /// The chunk's dense ids, from its lookups or its bare pages.
    fn key(&mut self, keys: &mut Keys) {
        if self.bare {
            keys.ids_of_pages(0, &self.set_bits, &mut self.ids);
        } else {
            keys.ids_into(&self.lookups, &mut self.ids);
        }
    }

    fn clear(&mut self) {
        self.lookups.clear();
        self.set_bits.clear();
        self.ids.clear();
    }
}

/// Set-index bits of a page: the page number, with the PASID mixed in so that address spaces
/// spread over the sets.
#[inline]
fn set_bits(pasid: u32, page: u64) -> u64 {
    page ^ u64::from(pasid).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

enum Model {
    FaLru { curve: curve::FaLruCurve, pinned: bool },
    SetLru { curve: curve::SetLruCurve, sets: u32, pinned: bool },
    Sim { sim: sim::CacheSim, sets: u32, ways: u32, pinned: bool },
}

/// Runs a study over `source`, which must yield the same accesses each time it is called
/// (it is read once, or twice when pinned translations are tagged in the trace or OPT is
/// asked for). `pin_count` reports the pinned lines per STU for the caller's tables.
pub fn run_study<F, S>(study: &Study, mut source: F) -> Result<Vec<Point>>
where
    F: FnMut() -> Result<S>,
    S: Blocks,
{
    study.validate()?;
    let mut points = Vec::new();
    for &stu in &study.stus {
        points.extend(run_stu(study, stu, &mut source)?);
    }
    Ok(points)
}

/// Lookups handed to the models at once (12 bytes each: the chunks stay in the cores' L2).
const CHUNK: usize = 1 << 14;

fn run_stu<F, S>(study: &Study, stu: u32, source: &mut F) -> Result<Vec<Point>>
where
    F: FnMut() -> Result<S>,
    S: Blocks,
{
    let mut keys = Keys::new(stu);
    let pinning = !study.pin_ranges.is_empty() || study.pin_tagged;
    pin(study, &mut keys, source)?;
    let pinned_keys = keys.pinned_keys();
    let pin_total = pinned_keys.len() as u32;
    // Dedicated pins take no lines of the cache studied.
    let pinned_keys = if study.pin_dedicated { Vec::new() } else { pinned_keys };
    let pin_lines = if study.pin_dedicated { 0 } else { pin_total };
    let variants: &[bool] = if pinning { &[false, true] } else { &[false] };
    let mut models = models(study, &pinned_keys, variants);
    let want_opt = study.policies.contains(&Policy::Opt);
    let (lookups, all_ids, all_bits) = stream(&mut keys, &mut models, want_opt, source)?;
    if lookups == 0 {
        return Err(Error::workload("trace", "", "the trace has no accesses"));
    }

    let stu_bytes = 4096u64 << stu;
    let mut points = Vec::new();
    let mut push = |policy, sets, ways, lines, pinned, hits: u64| {
        points.push(Point { stu_bytes, policy, sets, ways, lines, pinned, accesses: lookups, hits, hit_rate: hits as f64 / lookups as f64 });
    };
    for m in &models {
        match m {
            Model::FaLru { curve, pinned } => {
                let p = if *pinned { pin_lines } else { 0 };
                let extra = curve_pinned_hits(*pinned, lookups, curve.accesses());
                for &l in &study.lines {
                    if l >= p {
                        let hits = if l > p { curve.hits((l - p) as usize) } else { 0 } + extra;
                        push(Policy::Lru, 1, l, l, *pinned, hits);
                    }
                }
            }
            Model::SetLru { curve, sets, pinned } => {
                let extra = curve_pinned_hits(*pinned, lookups, curve.accesses());
                for assoc in &study.assocs {
                    if let Assoc::Ways(w) = *assoc {
                        for &l in &study.lines {
                            if l >= w && l / w == *sets && pin_layout(*assoc, &pinned_keys, *sets, w, *pinned).is_some() {
                                push(Policy::Lru, *sets, w, l, *pinned, curve.hits(w as usize) + extra);
                            }
                        }
                    }
                }
            }
            Model::Sim { sim, sets, ways, pinned } => push(sim.policy(), *sets, *ways, sets * ways, *pinned, sim.hits),
        }
    }
    if want_opt {
        for (sim, sets, ways, pinned) in belady(study, &keys, &pinned_keys, variants, &all_ids, &all_bits)? {
            push(Policy::Opt, sets, ways, sets * ways, pinned, sim.hits);
        }
    }
    if pinning && !points.iter().any(|p| p.pinned) {
        return Err(Error::config("pin", pin_total.to_string(), format!("{pin_total} pinned translations at STU {stu} exceed every cache size asked for")));
    }
    Ok(points)
}

/// Marks the pinned keys first: the pinned ranges, and the accesses the trace tags as pinned
/// (a pass over the source).
fn pin<F, S>(study: &Study, keys: &mut Keys, source: &mut F) -> Result<()>
where
    F: FnMut() -> Result<S>,
    S: Blocks,
{
    for &(s, e) in &study.pin_ranges {
        for page in (s >> keys.shift)..=((e - 1) >> keys.shift) {
            keys.pin(0, page);
        }
    }
    if study.pin_tagged {
        let mut src = source()?;
        let mut block = Vec::with_capacity(BLOCK);
        let mut since_check = 0;
        while src.next_block(&mut block)? {
            since_check += block.len();
            if since_check >= CHUNK {
                since_check = 0;
                crate::cancel::checkpoint()?;
            }
            for a in block.drain(..).filter(|a| a.pinned) {
                for page in pages(&a, keys.shift) {
                    keys.pin(a.pasid, page);
                }
            }
        }
    }
    Ok(())
}

/// The models of a study, without and (`variants`) with pins: one-pass curves for LRU, a
/// simulator per size for the other policies (OPT aside: it needs the whole stream first).
fn models(study: &Study, pinned_keys: &[(u32, u64)], variants: &[bool]) -> Vec<Model> {
    let max_lines = *study.lines.iter().max().unwrap_or(&1) as usize;
    let mut models = Vec::new();
    for &pinned in variants {
        for &assoc in &study.assocs {
            for &policy in &study.policies {
                if policy == Policy::Opt {
                    continue;
                }
                match (assoc, policy) {
                    (Assoc::Full, Policy::Lru) => models.push(Model::FaLru { curve: curve::FaLruCurve::new(max_lines), pinned }),
                    (Assoc::Ways(w), Policy::Lru) => {
                        let mut set_counts: Vec<u32> = study.lines.iter().filter(|&&l| l >= w).map(|&l| l / w).collect();
                        set_counts.sort_unstable();
                        set_counts.dedup();
                        for sets in set_counts {
                            let per_set = pins_per_set(pinned_keys, sets, pinned);
                            models.push(Model::SetLru { curve: curve::SetLruCurve::new(sets as usize, w as usize, per_set), sets, pinned });
                        }
                    }
                    (assoc, policy) => {
                        for &l in &study.lines {
                            let (sets, ways) = geometry(assoc, l);
                            if sets == 0 {
                                continue;
                            }
                            let Some(per_set) = pin_layout(assoc, pinned_keys, sets, ways, pinned) else { continue };
                            models.push(Model::Sim { sim: sim::CacheSim::new(policy, sets as usize, ways as usize, &per_set, study.seed), sets, ways, pinned });
                        }
                    }
                }
            }
        }
    }
    models
}

/// Streams the accesses through every model, a chunk at a time: this thread reads the source
/// while another keys the previous chunk and feeds it to the models (in parallel across
/// models). Reading (the copy out of the page cache, the decoding) and keying cost about the
/// same per lookup, so each thread takes one. Keys found during the stream are never pinned.
/// Returns the lookups, and for OPT (`keep`) every key and its set bits in stream order.
fn stream<F, S>(keys: &mut Keys, models: &mut [Model], keep: bool, source: &mut F) -> Result<(u64, Vec<u32>, Vec<u64>)>
where
    F: FnMut() -> Result<S>,
    S: Blocks,
{
    let pinned_flags = keys.pinned_flags().to_vec();
    let shift = keys.shift;
    // Set-associative curves only need keys that tell translations apart: where every model
    // is one (no pins, no OPT), bare pages are their own keys and no ids are made.
    let ids_needed = keep || !models.iter().all(|m| matches!(m, Model::SetLru { pinned: false, .. }));
    let (tx, rx) = std::sync::mpsc::sync_channel::<Chunk>(2);
    let (back_tx, back_rx) = std::sync::mpsc::channel::<Chunk>();
    let mut lookups = 0u64;
    let (all_ids, all_bits) = std::thread::scope(|scope| -> Result<(Vec<u32>, Vec<u64>)> {
        let consumer = scope.spawn(move || {
            let (mut ids, mut bits) = (Vec::new(), Vec::new());
            for mut chunk in rx {
                let by_page = chunk.bare && !ids_needed;
                if !by_page {
                    chunk.key(keys);
                }
                feed(models, &chunk, &pinned_flags, by_page);
                if keep {
                    ids.extend_from_slice(&chunk.ids);
                    bits.extend_from_slice(&chunk.set_bits);
                }
                chunk.clear();
                // The producer may have finished: a chunk nobody takes back is dropped.
                let _ = back_tx.send(chunk);
            }
            (ids, bits)
        });
        let mut chunk = Chunk::new();
        let streamed = (|| -> Result<()> {
            let mut src = source()?;
            let mut block = Vec::with_capacity(BLOCK);
            let bare = src.bare();
            loop {
                chunk.bare = bare;
                if bare {
                    // Bare addresses are pages of address space 0: their set bits are the pages.
                    let Some(bytes) = src.next_addresses()? else { break };
                    chunk.set_bits.extend(addresses(bytes).map(|a| set_bits(0, a >> shift)));
                } else {
                    let from = chunk.lookups.len();
                    if !src.next_lookups(shift, &mut block, &mut chunk.lookups)? {
                        break;
                    }
                    chunk.set_bits.extend(chunk.lookups[from..].iter().map(|&(pasid, page)| set_bits(pasid, page)));
                }
                if chunk.set_bits.len() >= CHUNK {
                    crate::cancel::checkpoint()?;
                    lookups += chunk.set_bits.len() as u64;
                    let next = back_rx.try_recv().unwrap_or_else(|_| Chunk::new());
                    if tx.send(std::mem::replace(&mut chunk, next)).is_err() {
                        break;
                    }
                }
            }
            Ok(())
        })();
        lookups += chunk.set_bits.len() as u64;
        let _ = tx.send(chunk);
        drop(tx);
        let out = consumer.join().map_err(|_| Error::workload("trace", "", "the ATC models' thread failed"))?;
        streamed.map(|()| out)
    })?;
    Ok((lookups, all_ids, all_bits))
}

/// Belady's OPT over the whole stream (`ids`, `bits`): each access's next use from one
/// backward pass, then the stream a chunk at a time through every simulator, in parallel.
fn belady(study: &Study, keys: &Keys, pinned_keys: &[(u32, u64)], variants: &[bool], ids: &[u32], bits: &[u64]) -> Result<Vec<(sim::CacheSim, u32, u32, bool)>> {
    let mut next = vec![u64::MAX; ids.len()];
    let mut seen = vec![u64::MAX; keys.len()];
    for i in (0..ids.len()).rev() {
        let k = ids[i] as usize;
        next[i] = seen[k];
        seen[k] = i as u64;
    }
    let mut sims = Vec::new();
    for &pinned in variants {
        for &assoc in &study.assocs {
            for &l in &study.lines {
                let (sets, ways) = geometry(assoc, l);
                if sets == 0 {
                    continue;
                }
                let Some(per_set) = pin_layout(assoc, pinned_keys, sets, ways, pinned) else { continue };
                sims.push((sim::CacheSim::new(Policy::Opt, sets as usize, ways as usize, &per_set, study.seed), sets, ways, pinned));
            }
        }
    }
    for start in (0..ids.len()).step_by(CHUNK) {
        let end = (start + CHUNK).min(ids.len());
        sims.par_iter_mut().for_each(|(sim, _, _, pinned)| {
            for i in start..end {
                let id = ids[i];
                if *pinned && keys.is_pinned(id) {
                    sim.pinned_hit();
                } else {
                    sim.access(id, bits[i], next[i]);
                }
            }
        });
        crate::cancel::checkpoint()?;
    }
    Ok(sims)
}

/// Pinned lines per set for a cache, or `None` if the pins do not fit in it.
fn pin_layout(assoc: Assoc, pinned_keys: &[(u32, u64)], sets: u32, ways: u32, on: bool) -> Option<Vec<u16>> {
    let per_set = if assoc == Assoc::Full { vec![if on { u16::try_from(pinned_keys.len()).unwrap_or(u16::MAX) } else { 0 }] } else { pins_per_set(pinned_keys, sets, on) };
    per_set.iter().all(|&p| u32::from(p) <= ways).then_some(per_set)
}

/// Curves in the pinned variant skip pinned lookups; each of those is a hit.
fn curve_pinned_hits(pinned: bool, lookups: u64, fed: u64) -> u64 {
    if pinned {
        lookups - fed
    } else {
        0
    }
}

/// Sets × ways of a cache of `lines` lines (sets = 0 if it cannot be built).
fn geometry(assoc: Assoc, lines: u32) -> (u32, u32) {
    match assoc {
        Assoc::Full => (1, lines),
        Assoc::Ways(w) if lines >= w => (lines / w, w),
        Assoc::Ways(_) => (0, 0),
    }
}

fn pins_per_set(pinned: &[(u32, u64)], sets: u32, on: bool) -> Vec<u16> {
    let mut per = vec![0u16; sets as usize];
    if on {
        for &(pasid, page) in pinned {
            let s = (set_bits(pasid, page) as usize) & (sets as usize - 1);
            per[s] = per[s].saturating_add(1);
        }
    }
    per
}

/// Whether key `id` is pinned (keys first seen during the stream are not).
#[inline]
fn is_pinned(pinned: &[bool], id: u32) -> bool {
    pinned.get(id as usize).copied().unwrap_or(false)
}

/// Feeds a chunk to every model: by dense id, or (`by_page`, set-associative curves only) by
/// the bare pages.
fn feed(models: &mut [Model], chunk: &Chunk, pinned: &[bool], by_page: bool) {
    models.par_iter_mut().for_each(|m| match m {
        Model::FaLru { curve, pinned: on } => {
            for &id in &chunk.ids {
                if !(*on && is_pinned(pinned, id)) {
                    curve.access(id);
                }
            }
        }
        Model::SetLru { curve, pinned: on, .. } => {
            if by_page {
                curve.feed(&chunk.set_bits, &chunk.set_bits, |_| false);
            } else if *on {
                curve.feed(&chunk.ids, &chunk.set_bits, |id| is_pinned(pinned, id));
            } else {
                curve.feed(&chunk.ids, &chunk.set_bits, |_| false);
            }
        }
        Model::Sim { sim, pinned: on, .. } => {
            for (i, &id) in chunk.ids.iter().enumerate() {
                if *on && is_pinned(pinned, id) {
                    sim.pinned_hit();
                } else {
                    sim.access(id, chunk.set_bits[i], u64::MAX);
                }
            }
        }
    });
}

/// The STU pages an access touches.
fn pages(a: &Access, shift: u32) -> std::ops::RangeInclusive<u64> {
    let (first, last) = page_span(a, shift);
    first..=last
}

/// The first and last STU page an access touches.
#[inline]
fn page_span(a: &Access, shift: u32) -> (u64, u64) {
    (a.addr >> shift, a.addr.saturating_add(u64::from(a.size.max(1)) - 1) >> shift)
}
