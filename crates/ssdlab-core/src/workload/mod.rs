//! Workloads: what each host job asks of the device, and when.
//!
//! A synthetic job follows fio's semantics: `rw` picks direction and pattern, `bs`/`bssplit`
//! the sizes, random offsets are aligned to `blockalign` (default: the smallest block size) and
//! drawn uniformly, from fio's zones (`zoned:`), or from a Zipf or Pareto distribution whose
//! hot ranks are scattered over the region (as fio hashes them), sequential jobs wrap at the end of their region. A job stops after
//! `number_ios` I/Os, after `runtime`, or (with neither) after `size` bytes, as fio does.
//! Closed loop keeps `iodepth` I/Os in flight (each job pausing `thinktime` after a completion); open loop (`rate_iops`) issues at a fixed or
//! Poisson rate, holding arrivals that find `iodepth` I/Os in flight until one completes.
//!
//! A job may instead replay a block trace ([`replay`]).
//!
//! Trims (`trim`, `randtrim`, `trimwrite`, `randtrimwrite`) are Dataset Management deallocate
//! commands of one range each.
//!
//! Leaves out: `zoned_abs`, sequential runs in random jobs (fio job files are read in
//! the Python package and arrive here as `[[workload.jobs]]`).

mod config;
pub mod control;
pub mod replay;
pub mod runner;
mod values;
pub mod zbd;

pub use config::{DeviceMap, ExitScope, JobOverride, LbaMode, PlacementSelect, RateProcess, ReplayConfig, ReplayMode, WorkloadConfig, DEFAULT_TENANT, MAX_JOBS, MAX_NUMJOBS};
pub use values::{BlockSizes, BsRange, BsSplit, Distribution, IopsPair, PerDirection, Rates, Rw, WriteMix};

use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution as _, Exp, Zipf};

use crate::error::{Error, Result};
use crate::io::{Kind, Op};
use crate::sim::{div_rem, stream_seed, Rng, SimDuration, SimTime, PS_PER_S};

/// One I/O request: direction, byte offset and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Io {
    pub op: Op,
    pub offset: u64,
    pub len: u64,
}

/// A large prime, coprime with every region size we can see: rank × P mod N is a bijection
/// that scatters hot ranks over the region.
const SCATTER_PRIME: u128 = (1 << 61) - 1;

enum Offsets {
    Uniform,
    Zipf {
        dist: Zipf<f64>,
        ranks: u64,
    },
    Pareto {
        power: f64,
        ranks: u64,
    },
    /// Per zone: its share of the I/Os (percent) and its slots `lo..hi`.
    Zoned(Vec<(u32, u64, u64)>),
    /// fio's sequence: blocks in turn (per direction, by the I/Os issued in it), with stride.
    Sequence {
        blocks: Vec<u64>,
        stride: bool,
        issued: [u64; 3],
    },
}

/// How a job trims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trims {
    /// It does not.
    None,
    /// Every I/O is a trim.
    Only,
    /// Each trim is followed by a write of the block it trimmed (fio's `trimwrite`).
    ThenWrite,
}

/// The generator of one job.
pub struct JobGen {
    rng: Rng,
    read_percent: u32,
    random: bool,
    start: u64,
    region: u64,
    align: u64,
    next_seq: u64,
    /// Bytes skipped (or stepped back) after each sequential I/O.
    skip: i64,
    /// Strided zones: zone size and the skip after each zone, and bytes done in this zone.
    zone: Option<(u64, u64)>,
    zone_done: u64,
    reads: Vec<(u64, u32)>,
    writes: Vec<(u64, u32)>,
    trims: Vec<(u64, u32)>,
    trim_mode: Trims,
    /// `trimwrite`: the offset of the trim whose write comes next.
    trimmed: Option<u64>,
    /// Ranges a trim lists.
    trim_ranges: u32,
    /// fio's `bsrange` (when no `bssplit`): sizes drawn within it.
    ranges_bs: Option<BsRange>,
    offsets: Offsets,
    /// I/Os generated so far.
    pub generated: u64,
    /// Bytes generated so far.
    pub bytes: u64,
    limit_ios: Option<u64>,
    limit_bytes: Option<u64>,
    runtime: Option<SimTime>,
    rate: Option<(SimDuration, RateProcess)>,
    /// The job ended early (an error of its control loops, or its latency search is done).
    stopped: bool,
    /// The commands its writes are, with their shares (empty: all Writes).
    write_mix: Vec<(Kind, u32)>,
    /// FDP placement identifiers its writes name, the next in turn, and whether picked at random.
    placement: Vec<u16>,
    next_pid: usize,
    random_pid: bool,
}

impl JobGen {
    /// The generator of job `job` (its random stream is derived from the master seed).
    pub fn new(w: &WorkloadConfig, region_size: u64, job: u32) -> Result<Self> {
        let (reads, writes) = w.size_choices();
        let bs_range = if w.bssplit.is_none() { w.bsrange } else { None };
        let smallest = w.min_bs().max(512);
        let align = w.blockalign.map_or(smallest, |a| a.0.max(512));
        let max_bs = w.max_bs();
        let ranks = (region_size.saturating_sub(max_bs)) / align + 1;
        let offsets = match w.random_distribution.clone() {
            Distribution::Random => Offsets::Uniform,
            Distribution::Zipf(theta) => {
                Offsets::Zipf { dist: Zipf::new(ranks as f64, theta).map_err(|e| Error::workload("workload.random_distribution", format!("zipf:{theta}"), e.to_string()))?, ranks }
            }
            Distribution::Pareto(h) => Offsets::Pareto { power: h.ln() / (1.0 - h).ln(), ranks },
            Distribution::Zoned(zones) => {
                // Zone boundaries at the cumulative region shares, in whole slots (each zone
                // with accesses keeps at least one slot).
                let mut out = Vec::new();
                let mut cum = 0u64;
                for (access, region) in zones {
                    let lo = (u128::from(ranks) * u128::from(cum) / 100) as u64;
                    cum += u64::from(region);
                    let hi = ((u128::from(ranks) * u128::from(cum) / 100) as u64).max(lo + 1).min(ranks.max(lo + 1));
                    out.push((access, lo.min(ranks - 1), hi));
                }
                Offsets::Zoned(out)
            }
            Distribution::Sequence(blocks) => {
                if let Some(&b) = blocks.iter().find(|&&b| b >= ranks) {
                    return Err(Error::workload(
                        "workload.random_distribution",
                        format!("sequence:{}", blocks.iter().map(u64::to_string).collect::<Vec<_>>().join(",")),
                        format!("block {b} is beyond the job's {ranks} blocks (fio: sequence access block out of bounds)"),
                    ));
                }
                Offsets::Sequence { blocks, stride: w.random_sequence_stride, issued: [0; 3] }
            }
        };
        let rate = (w.rate_iops > 0).then(|| (SimDuration::from_ps(PS_PER_S / w.rate_iops), w.rate_process));
        let loops = u64::from(w.loops.max(1));
        let limit_bytes = (w.number_ios.is_none() && w.runtime.is_none()).then_some(region_size.saturating_mul(loops));
        Ok(JobGen {
            rng: Rng::from_seed(stream_seed(w.randseed, u64::from(job)).to_le_bytes()),
            read_percent: w.rw.read_percent(w.rwmixread),
            random: w.rw.is_random(),
            start: w.offset.0,
            region: region_size,
            align,
            next_seq: w.offset.0,
            skip: w.rw_skip,
            zone: w.zonesize.map(|z| (z.0, w.zoneskip.0)),
            zone_done: 0,
            reads,
            writes,
            trims: w.trim_choices(),
            trim_mode: match w.rw {
                Rw::Trim | Rw::RandTrim => Trims::Only,
                Rw::TrimWrite | Rw::RandTrimWrite => Trims::ThenWrite,
                _ => Trims::None,
            },
            trimmed: None,
            trim_ranges: w.trim_ranges.max(1),
            ranges_bs: bs_range,
            offsets,
            generated: 0,
            bytes: 0,
            limit_ios: w.number_ios.map(|n| n.saturating_mul(loops)),
            limit_bytes,
            runtime: w.runtime.map(|r| SimTime::ZERO + w.startdelay + r),
            stopped: false,
            placement: {
                // fio sorts the list (str_fdp_pli_cb).
                let mut ids: Vec<u16> = w.placement_ids.iter().map(|&p| p.min(u32::from(u16::MAX - 1)) as u16).collect();
                ids.sort_unstable();
                ids
            },
            next_pid: 0,
            write_mix: w.write_mode.as_ref().map_or_else(Vec::new, |m| m.0.clone()),
            random_pid: w.placement_select == config::PlacementSelect::Random,
            rate,
        })
    }

    /// The job's region: its first byte and its length.
    pub fn extent(&self) -> (u64, u64) {
        (self.start, self.region)
    }

    /// Whether the job issues writes.
    pub fn writes(&self) -> bool {
        self.read_percent < 100 && self.trim_mode != Trims::Only
    }

    /// Whether the job may still start an I/O at `now`.
    pub fn may_issue(&self, now: SimTime) -> bool {
        !self.stopped && self.limit_ios.is_none_or(|n| self.generated < n) && self.limit_bytes.is_none_or(|b| self.bytes < b) && self.runtime.is_none_or(|r| now < r)
    }

    /// A sequential job goes on after the I/O that ended at `end` (fio's `last_pos` after zbd
    /// moved the I/O).
    pub fn continue_at(&mut self, end: u64) {
        if !self.random {
            self.next_seq = end;
        }
    }

    /// Whether the job's offsets are random.
    pub fn random(&self) -> bool {
        self.random
    }

    /// The job starts at `now` (after waiting for others): its runtime counts from here.
    pub fn begin(&mut self, now: SimTime, runtime: Option<SimDuration>) {
        if let Some(r) = runtime {
            self.runtime = Some(now + r);
        }
    }

    /// The placement identifier of the job's next write (fio's `dp_fill_dspec_data`), if it
    /// names any.
    pub fn placement_id(&mut self) -> Option<u16> {
        if self.placement.is_empty() {
            return None;
        }
        let n = self.placement.len();
        let i = if self.random_pid {
            self.rng.random_range(0..n)
        } else {
            let i = self.next_pid;
            self.next_pid = (i + 1) % n;
            i
        };
        Some(self.placement[i])
    }

    /// Whether the job's writes are all Zone Appends (they take no zone write lock).
    pub fn appends(&self) -> bool {
        matches!(self.write_mix.as_slice(), [(Kind::ZoneAppend, _)])
    }

    /// The command of the job's next write (fio's `fio_ioring_cmd_prep_write_split` draw).
    pub fn write_kind(&mut self) -> Kind {
        if self.write_mix.is_empty() {
            return Kind::Write;
        }
        pick_weighted(&mut self.rng, &self.write_mix)
    }

    /// Ends the job: it issues nothing more.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Whether the job issues both reads and writes.
    pub fn mixed(&self) -> bool {
        self.read_percent > 0 && self.read_percent < 100
    }

    /// Whether the job is open loop.
    pub fn open_loop(&self) -> bool {
        self.rate.is_some()
    }

    /// The time of the arrival after one at `now` (open loop only).
    pub fn next_arrival(&mut self, now: SimTime) -> Option<SimTime> {
        let (interval, process) = self.rate?;
        let gap = match process {
            RateProcess::Linear => interval,
            RateProcess::Poisson => {
                let exp = Exp::new(1.0).ok()?;
                let x: f64 = exp.sample(&mut self.rng);
                SimDuration::from_ps((x * interval.as_ps() as f64).round() as u64)
            }
        };
        Some(now + gap)
    }

    /// fio's `__get_next_rand_offset_sequence`: the n-th I/O of a direction takes the list's
    /// (n mod length)-th block, a list's length further on per repetition with the stride; a
    /// striding job whose next repetition starts past its last block (`last`) is done.
    fn sequence_block(&mut self, op: Op, last: u64) -> u64 {
        let Offsets::Sequence { blocks, stride, issued } = &mut self.offsets else { return 0 };
        let n = &mut issued[op as usize];
        let k = blocks.len() as u64;
        let b = if *stride { *n / k * k + blocks[(*n % k) as usize] } else { blocks[(*n % k) as usize] };
        *n += 1;
        let next = *n / k * k + blocks[(*n % k) as usize];
        if *stride && next > last {
            self.stopped = true;
        }
        b.min(last)
    }

    fn pick_size(&mut self, op: Op) -> u64 {
        if let Some(r) = self.ranges_bs {
            // fio's draw: min + ⌊max × u⌋, aligned down to a multiple of min, capped at max.
            let (min, max) = if op == Op::Read { r.read } else { r.write };
            if min == max {
                return min;
            }
            let u: f64 = self.rng.random();
            let len = min + (max as f64 * u) as u64;
            let len = if min.is_power_of_two() { len & !(min - 1) } else { len - len % min };
            return len.min(max);
        }
        let list = match op {
            Op::Read => &self.reads,
            Op::Write => &self.writes,
            Op::Trim | Op::Flush => &self.trims,
        };
        pick_weighted(&mut self.rng, list)
    }

    /// The direction of the next I/O, drawn by the read/write mix (a trimming job's: a trim,
    /// or with `trimwrite` the write that follows one).
    pub fn draw_op(&mut self) -> Op {
        match self.trim_mode {
            Trims::Only => return Op::Trim,
            Trims::ThenWrite => return if self.trimmed.is_some() { Op::Write } else { Op::Trim },
            Trims::None => {}
        }
        if self.read_percent >= 100 || (self.read_percent > 0 && self.rng.random_range(0..100u32) < self.read_percent) {
            Op::Read
        } else {
            Op::Write
        }
    }

    /// The next I/O of this job.
    pub fn next_io(&mut self) -> Io {
        let op = self.draw_op();
        self.io_for(op)
    }

    /// The next I/O of this job, in direction `op`.
    pub fn io_for(&mut self, op: Op) -> Io {
        let len = self.pick_size(op);
        if op == Op::Write {
            if let Some(offset) = self.trimmed.take() {
                // fio's trimwrite: the write goes where the trim just went (fio keeps a
                // position per direction; with equal trim and write sizes they agree).
                self.generated += 1;
                self.bytes += len;
                return Io { op, offset: offset.min(self.start + self.region - len), len };
            }
        }
        let offset = self.offset_for(op, len);
        self.generated += 1;
        if op == Op::Trim && self.trim_mode == Trims::ThenWrite {
            // fio's io_bytes_exceeded counts a trimwrite job's writes only.
            self.trimmed = Some(offset);
        } else {
            self.bytes += len;
        }
        Io { op, offset, len }
    }

    /// A trim `first` goes to the drive: with `trim_ranges` > 1 (fio's `num_range`), the ranges
    /// it lists, `first` and the others each drawn as a trim of its own would be (fio's
    /// `fill_multi_range_io_u`), counted in the job's bytes; `None` for one range.
    pub fn trim_ranges(&mut self, first: Io) -> Option<Box<[(u64, u64)]>> {
        if first.op != Op::Trim || self.trim_ranges < 2 {
            return None;
        }
        let mut ranges = vec![(first.offset, first.len)];
        for _ in 1..self.trim_ranges {
            let len = self.pick_size(Op::Trim);
            let offset = self.offset_for(Op::Trim, len);
            self.bytes += len;
            ranges.push((offset, len));
        }
        Some(ranges.into_boxed_slice())
    }

    /// Where the next I/O of `len` bytes in direction `op` starts.
    fn offset_for(&mut self, op: Op, len: u64) -> u64 {
        if self.random {
            let last = div_rem(self.region - len, self.align).0;
            let slot = match &self.offsets {
                Offsets::Uniform => self.rng.random_range(0..=last),
                Offsets::Zipf { dist, ranks } => {
                    let rank = (dist.sample(&mut self.rng) as u64).clamp(1, *ranks) - 1;
                    scatter(rank, *ranks)
                }
                Offsets::Pareto { power, ranks } => {
                    let u: f64 = self.rng.random();
                    let rank = (((*ranks - 1) as f64) * u.powf(*power)) as u64;
                    scatter(rank.min(*ranks - 1), *ranks)
                }
                Offsets::Zoned(zones) => {
                    let mut roll = self.rng.random_range(0..100u32);
                    let mut pick = zones[zones.len() - 1];
                    for &z in zones {
                        if roll < z.0 {
                            pick = z;
                            break;
                        }
                        roll -= z.0;
                    }
                    self.rng.random_range(pick.1..pick.2.max(pick.1 + 1))
                }
                Offsets::Sequence { .. } => self.sequence_block(op, last),
            };
            self.start + slot.min(last) * self.align
        } else {
            if self.next_seq + len > self.start + self.region {
                self.next_seq = self.start;
            }
            let o = self.next_seq;
            let next = i128::from(o) + i128::from(len) + i128::from(self.skip);
            // Stepping back past the start wraps to the last whole block of the region.
            let last = self.start + (self.region - len) / self.align * self.align;
            self.next_seq = if next < i128::from(self.start) { last } else { u64::try_from(next).unwrap_or(self.start) };
            if let Some((size, skip)) = self.zone {
                // fio's zonemode=strided: after a zone's bytes, skip ahead (wrapping as above).
                self.zone_done += len;
                if self.zone_done >= size {
                    self.zone_done = 0;
                    self.next_seq = self.next_seq.saturating_add(skip);
                }
            }
            o
        }
    }

    /// Counts an I/O against the job's limits before it is generated (an open-loop arrival
    /// that must wait for a free slot); [`JobGen::next_reserved_io`] generates it later.
    pub fn reserve_one(&mut self) {
        self.generated += 1;
    }

    /// Generates an I/O that [`JobGen::reserve_one`] already counted.
    pub fn next_reserved_io(&mut self) -> Io {
        self.generated -= 1;
        self.next_io()
    }

    /// Fraction of the job's work done (for progress bars).
    pub fn progress(&self, now: SimTime) -> f64 {
        if let Some(n) = self.limit_ios {
            return self.generated as f64 / n as f64;
        }
        if let Some(r) = self.runtime {
            return (now.0 as f64 / r.0.max(1) as f64).min(1.0);
        }
        self.limit_bytes.map_or(0.0, |b| self.bytes as f64 / b.max(1) as f64)
    }
}

/// One of `list`'s values, drawn by their percentages (which add up to 100); a single value
/// draws nothing.
fn pick_weighted<T: Copy>(rng: &mut Rng, list: &[(T, u32)]) -> T {
    if let [(v, _)] = list {
        return *v;
    }
    let mut roll = rng.random_range(0..100u32);
    for &(v, pct) in list {
        if roll < pct {
            return v;
        }
        roll -= pct;
    }
    list[list.len() - 1].0
}

fn scatter(rank: u64, ranks: u64) -> u64 {
    ((u128::from(rank) * SCATTER_PRIME) % u128::from(ranks)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bytes;

    fn job(w: &WorkloadConfig, region: u64) -> JobGen {
        JobGen::new(w, region, 0).unwrap()
    }

    #[test]
    fn strided_zones_read_a_zone_then_skip() {
        // fio's disk-zone-profile pattern, scaled: 8 KiB zones every 32 KiB, in a 64 KiB region.
        let w = WorkloadConfig { rw: Rw::Read, bs: "4k".parse().unwrap(), zonesize: Some(Bytes(8192)), zoneskip: Bytes(24576), ..WorkloadConfig::default() };
        let mut g = job(&w, 65536);
        let offs: Vec<u64> = (0..6).map(|_| g.next_io().offset / 1024).collect();
        assert_eq!(offs, vec![0, 4, 32, 36, 0, 4]);
    }

    #[test]
    fn trimwrite_writes_each_block_it_trimmed_and_trims_take_their_own_size() {
        let w = WorkloadConfig { rw: Rw::TrimWrite, bs: "4k".parse().unwrap(), ..WorkloadConfig::default() };
        let mut g = job(&w, 16384);
        let ios: Vec<(Op, u64)> = (0..6).map(|_| g.next_io()).map(|io| (io.op, io.offset / 4096)).collect();
        assert_eq!(ios, vec![(Op::Trim, 0), (Op::Write, 0), (Op::Trim, 1), (Op::Write, 1), (Op::Trim, 2), (Op::Write, 2)]);
        let w = WorkloadConfig { rw: Rw::RandTrimWrite, bs: "4k".parse().unwrap(), ..WorkloadConfig::default() };
        let mut g = job(&w, 1 << 30);
        for _ in 0..100 {
            let (t, w) = (g.next_io(), g.next_io());
            assert_eq!((t.op, w.op, t.offset), (Op::Trim, Op::Write, w.offset));
        }
        // bs=read,write,trim: a trim job uses the third size.
        let w = WorkloadConfig { rw: Rw::RandTrim, bs: "4k,8k,64k".parse().unwrap(), ..WorkloadConfig::default() };
        let mut g = job(&w, 1 << 30);
        assert!((0..50).map(|_| g.next_io()).all(|io| io.op == Op::Trim && io.len == 65536 && io.offset % 4096 == 0));
        assert!(!g.writes(), "a trim-only job does not write");
    }

    #[test]
    fn sequential_wraps_and_random_stays_aligned_in_region() {
        let w = WorkloadConfig { rw: Rw::Read, bs: "4k".parse().unwrap(), offset: Bytes(8192), ..WorkloadConfig::default() };
        let mut g = job(&w, 12288);
        let offs: Vec<u64> = (0..4).map(|_| g.next_io().offset).collect();
        assert_eq!(offs, vec![8192, 12288, 16384, 8192]);

        let w = WorkloadConfig { rw: Rw::RandWrite, bs: "8k".parse().unwrap(), ..WorkloadConfig::default() };
        let mut g = job(&w, 1 << 20);
        for _ in 0..10_000 {
            let io = g.next_io();
            assert_eq!(io.op, Op::Write);
            assert_eq!(io.offset % 8192, 0);
            assert!(io.offset + io.len <= 1 << 20);
        }
    }

    #[test]
    fn rw_skip_leaves_holes_or_steps_back() {
        let w = WorkloadConfig { rw: Rw::Read, bs: "4k".parse().unwrap(), rw_skip: 4096, ..WorkloadConfig::default() };
        let mut g = job(&w, 32768);
        let offs: Vec<u64> = (0..5).map(|_| g.next_io().offset).collect();
        assert_eq!(offs, vec![0, 8192, 16384, 24576, 0]);
        let w = WorkloadConfig { rw: Rw::Read, bs: "4k".parse().unwrap(), rw_skip: -8192, offset: Bytes(8192), ..WorkloadConfig::default() };
        let mut g = job(&w, 16384);
        let offs: Vec<u64> = (0..6).map(|_| g.next_io().offset).collect();
        assert_eq!(offs, vec![8192, 20480, 16384, 12288, 8192, 20480], "backwards within [8k, 24k), wrapping to its last block");
    }

    #[test]
    fn mix_and_split_follow_their_percentages() {
        let w = WorkloadConfig { rw: Rw::RandRw, rwmixread: 70, bssplit: Some("4k/25:64k/75".parse().unwrap()), ..WorkloadConfig::default() };
        let mut g = job(&w, 1 << 30);
        let n = 100_000;
        let ios: Vec<Io> = (0..n).map(|_| g.next_io()).collect();
        let reads = ios.iter().filter(|i| i.op == Op::Read).count() as f64 / f64::from(n);
        let small = ios.iter().filter(|i| i.len == 4096).count() as f64 / f64::from(n);
        assert!((reads - 0.70).abs() < 0.01, "read share {reads}");
        assert!((small - 0.25).abs() < 0.01, "4k share {small}");
    }

    #[test]
    fn zipf_and_pareto_concentrate_accesses() {
        for dist in ["zipf:1.2", "pareto:0.2"] {
            let w = WorkloadConfig { random_distribution: dist.parse().unwrap(), ..WorkloadConfig::default() };
            let mut g = job(&w, 1 << 30);
            let mut counts = std::collections::HashMap::new();
            for _ in 0..50_000 {
                *counts.entry(g.next_io().offset).or_insert(0u32) += 1;
            }
            let mut c: Vec<u32> = counts.into_values().collect();
            c.sort_unstable_by(|a, b| b.cmp(a));
            let top: u32 = c.iter().take(c.len() / 100 + 1).sum();
            assert!(f64::from(top) / 50_000.0 > 0.3, "{dist}: top 1% of blocks got only {top} of 50000");
        }
    }

    #[test]
    fn zoned_puts_each_share_of_ios_in_its_share_of_the_region() {
        // JESD219's zones: 50 % of I/Os in the first 5 %, 30 % in the next 15 %, 20 % in the rest.
        let w = WorkloadConfig { random_distribution: "zoned:50/5:30/15:20/80".parse().unwrap(), ..WorkloadConfig::default() };
        let region = 1u64 << 30;
        let mut g = job(&w, region);
        let n = 100_000;
        let mut zone = [0u32; 3];
        for _ in 0..n {
            let o = g.next_io().offset;
            zone[if o < region / 20 {
                0
            } else if o < region / 5 {
                1
            } else {
                2
            }] += 1;
        }
        for (got, want) in zone.iter().zip([0.5, 0.3, 0.2]) {
            assert!((f64::from(*got) / f64::from(n) - want).abs() < 0.01, "{zone:?}");
        }
        for bad in ["zoned:50/5:30/15", "zoned:50/5:50/0", "zoned:x/5:100/95"] {
            assert!(bad.parse::<Distribution>().is_err(), "{bad}");
        }
        assert_eq!("zoned:50/5:30/15:20/80".parse::<Distribution>().unwrap().to_string(), "zoned:50/5:30/15:20/80");
        // fio's example leaves the last region empty: the rest of the region.
        assert_eq!("zoned:50/5:30/15:20/".parse::<Distribution>().unwrap().to_string(), "zoned:50/5:30/15:20/80");
        assert!("zoned:50/5:50/95,100/100".parse::<Distribution>().unwrap_err().contains("writes"));
    }

    #[test]
    fn a_sequence_visits_its_blocks_in_turn_and_strides_to_the_end() {
        let mut w = WorkloadConfig { random_distribution: "sequence:2,0,1".parse().unwrap(), ..WorkloadConfig::default() };
        let mut g = job(&w, 6 * 4096);
        let blocks: Vec<u64> = (0..6).map(|_| g.next_io().offset / 4096).collect();
        assert_eq!(blocks, [2, 0, 1, 2, 0, 1]);
        w.random_sequence_stride = true;
        let mut g = job(&w, 6 * 4096);
        let mut blocks = vec![];
        while g.may_issue(SimTime::ZERO) {
            blocks.push(g.next_io().offset / 4096);
        }
        assert_eq!(blocks, [2, 0, 1, 5, 3, 4], "fio's t/sequence.py stride pattern, ending at the region's end");
        let bad = WorkloadConfig { random_distribution: "sequence:9".parse().unwrap(), ..WorkloadConfig::default() };
        assert!(JobGen::new(&bad, 6 * 4096, 0).is_err());
    }

    #[test]
    fn blockalign_aligns_random_offsets_of_every_size() {
        let w = WorkloadConfig { bssplit: Some("512/50:4k/50".parse().unwrap()), blockalign: Some(crate::units::Bytes(4096)), ..WorkloadConfig::default() };
        let mut g = job(&w, 1 << 30);
        let ios: Vec<Io> = (0..10_000).map(|_| g.next_io()).collect();
        assert!(ios.iter().all(|i| i.offset % 4096 == 0));
        assert!(ios.iter().any(|i| i.len == 512));
        let unaligned = WorkloadConfig { blockalign: None, ..w };
        let mut g = job(&unaligned, 1 << 30);
        assert!((0..10_000).map(|_| g.next_io()).any(|i| i.offset % 4096 != 0), "without blockalign, 512 B alignment");
    }

    #[test]
    fn bsrange_draws_sizes_as_fio_does() {
        // fio: 4k + ⌊16k × u⌋ aligned down to 4k and capped at 16k: 4, 8, 12 and 16 KiB, a
        // quarter each (the cap takes 16-20 KiB).
        let w = WorkloadConfig { bsrange: Some("4k-16k".parse().unwrap()), ..WorkloadConfig::default() };
        assert_eq!((w.min_bs(), w.max_bs()), (4096, 16384));
        let mut g = job(&w, 1 << 30);
        let n = 40_000;
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..n {
            *counts.entry(g.next_io().len).or_insert(0u32) += 1;
        }
        assert_eq!(counts.keys().copied().collect::<Vec<_>>(), vec![4096, 8192, 12288, 16384]);
        assert!(counts.values().all(|&c| (f64::from(c) / f64::from(n) - 0.25).abs() < 0.01), "{counts:?}");
        let same = WorkloadConfig { bsrange: Some("4k-4k".parse().unwrap()), ..WorkloadConfig::default() };
        let mut g = job(&same, 1 << 30);
        assert!((0..100).all(|_| g.next_io().len == 4096));
        assert!("16k-4k".parse::<BsRange>().is_err() && "4k".parse::<BsRange>().is_err());
    }

    #[test]
    fn loops_repeat_the_work_of_a_job() {
        let w = WorkloadConfig { number_ios: Some(100), loops: 3, ..WorkloadConfig::default() };
        let mut g = job(&w, 1 << 30);
        let mut n = 0;
        while g.may_issue(SimTime::ZERO) {
            g.next_io();
            n += 1;
        }
        assert_eq!(n, 300);
        let by_size = WorkloadConfig { rw: Rw::Read, loops: 2, ..WorkloadConfig::default() };
        let mut g = job(&by_size, 1 << 20);
        let mut bytes = 0;
        while g.may_issue(SimTime::ZERO) {
            bytes += g.next_io().len;
        }
        assert_eq!(bytes, 2 << 20, "two passes over a 1 MiB region");
    }

    #[test]
    fn same_seed_same_stream_other_job_other_stream() {
        let w = WorkloadConfig::default();
        let a: Vec<u64> = (0..100)
            .map({
                let mut g = job(&w, 1 << 30);
                move |_| g.next_io().offset
            })
            .collect();
        let b: Vec<u64> = (0..100)
            .map({
                let mut g = job(&w, 1 << 30);
                move |_| g.next_io().offset
            })
            .collect();
        let mut other = JobGen::new(&w, 1 << 30, 1).unwrap();
        let c: Vec<u64> = (0..100).map(|_| other.next_io().offset).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
