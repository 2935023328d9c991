//! Trace replay: records of a block trace become the jobs' I/Os.
//!
//! Times are rebased to the first record and multiplied by `time_scale`; a record earlier
//! than the one before it (Tencent's traces have them) arrives with the one before and is
//! counted as reordered, so memory stays bounded. Offsets are aligned down to 512 B and lengths
//! rounded up to it. Addresses beyond the region wrap, scale (the trace's highest byte is found
//! in a first pass) or stop the run, as chosen. Trims are issued as Dataset Management
//! deallocates (one larger than the region, as a discard of a whole disk is, trims the whole
//! region); flushes are counted and skipped.

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::{DeviceMap, Io, LbaMode, ReplayConfig, ReplayMode};
use crate::error::{Error, Result};
use crate::io::Op;
use crate::sim::{SimDuration, SimTime};
use crate::trace::{self, ReadOptions, TraceReader};

/// What a replay did, for the results.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReplaySummary {
    pub trace: String,
    pub format: String,
    pub mode: String,
    /// Records turned into I/Os.
    pub issued: u64,
    pub skipped_flushes: u64,
    /// Records whose address was wrapped or scaled into the region.
    pub remapped: u64,
    /// Records that were not 512 B aligned.
    pub realigned: u64,
    /// Records earlier than the one before (issued with it).
    pub reordered: u64,
    pub lines: u64,
    pub bad_lines: u64,
    pub zero_length: u64,
    /// Trace devices and the job each went to (timed replay with `devices = "jobs"`).
    pub devices: usize,
}

/// Two replays' summaries together (the traces named one after the other).
impl std::ops::AddAssign for ReplaySummary {
    fn add_assign(&mut self, x: Self) {
        self.trace = format!("{}, {}", self.trace, x.trace);
        self.issued += x.issued;
        self.skipped_flushes += x.skipped_flushes;
        self.remapped += x.remapped;
        self.realigned += x.realigned;
        self.reordered += x.reordered;
        self.lines += x.lines;
        self.bad_lines += x.bad_lines;
        self.zero_length += x.zero_length;
        self.devices += x.devices;
    }
}

/// The replay state of a run.
pub struct Replay {
    reader: TraceReader,
    timed: bool,
    scale: f64,
    lba: LbaMode,
    spread: bool,
    start: u64,
    region: u64,
    /// Scale mode: the trace's highest byte.
    span: u64,
    t0: Option<u64>,
    last: SimTime,
    dev_jobs: FxHashMap<u32, usize>,
    next_job: usize,
    jobs: usize,
    limit: Option<u64>,
    runtime: Option<SimTime>,
    summary: ReplaySummary,
    done: bool,
}

impl Replay {
    /// Opens the trace of `cfg` for `jobs` jobs addressing `[start, start + region)`.
    pub fn open(cfg: &ReplayConfig, jobs: usize, start: u64, region: u64, limit: Option<u64>, runtime: Option<SimDuration>) -> Result<Option<Self>> {
        let Some(path) = &cfg.trace else { return Ok(None) };
        let format =
            cfg.format.as_deref().map(str::parse::<trace::Format>).transpose().map_err(|e| Error::config("workload.replay.format", format!("{:?}", cfg.format.as_deref().unwrap_or("")), e))?;
        let opts = ReadOptions { format, strict: !cfg.lenient, ..ReadOptions::default() };
        let p = std::path::Path::new(path);
        let span = if cfg.lba == LbaMode::Scale {
            let mut r = TraceReader::open(p, &opts)?;
            let mut hi = 0u64;
            while let Some(rec) = r.next_record()? {
                hi = hi.max(rec.offset.saturating_add(rec.len));
            }
            hi
        } else {
            0
        };
        let reader = TraceReader::open(p, &opts)?;
        let summary = ReplaySummary { trace: path.clone(), format: reader.format.to_string(), mode: cfg.mode.to_string(), ..ReplaySummary::default() };
        Ok(Some(Replay {
            reader,
            timed: cfg.mode == ReplayMode::Timed,
            scale: cfg.time_scale,
            lba: cfg.lba,
            spread: cfg.devices == DeviceMap::Spread,
            start,
            region,
            span,
            t0: None,
            last: SimTime::ZERO,
            dev_jobs: FxHashMap::default(),
            next_job: 0,
            jobs: jobs.max(1),
            limit,
            runtime: runtime.map(|r| SimTime::ZERO + r),
            summary,
            done: false,
        }))
    }

    /// Whether the replay is open loop.
    pub fn timed(&self) -> bool {
        self.timed
    }

    /// Whether records may still be issued at `now`.
    pub fn may_issue(&self, now: SimTime) -> bool {
        !self.done && self.limit.is_none_or(|n| self.summary.issued < n) && self.runtime.is_none_or(|r| now < r)
    }

    /// The next I/O: the job that issues it (timed replay; closed loop ignores it) and its
    /// arrival time. `None` at the end of the trace or of the limits.
    pub fn next(&mut self, now: SimTime) -> Result<Option<(usize, Io, SimTime)>> {
        while self.may_issue(now) {
            let Some(rec) = self.reader.next_record()? else {
                self.done = true;
                break;
            };
            let op = rec.op;
            if op == Op::Flush {
                self.summary.skipped_flushes += 1;
                continue;
            }
            let io = self.place(op, rec.offset, rec.len)?;
            let t0 = *self.t0.get_or_insert(rec.time_ns);
            let at = if self.timed {
                let rel = rec.time_ns.checked_sub(t0).map(|d| SimTime::ZERO + SimDuration::from_ps((d as f64 * 1000.0 * self.scale).round() as u64));
                match rel {
                    Some(t) if t >= self.last => t,
                    _ => {
                        self.summary.reordered += 1;
                        self.last
                    }
                }
            } else {
                now
            };
            self.last = at;
            if self.runtime.is_some_and(|r| at >= r) {
                self.done = true;
                break;
            }
            let job = if self.spread {
                let j = self.next_job;
                self.next_job = (j + 1) % self.jobs;
                j
            } else {
                let n = self.dev_jobs.len();
                *self.dev_jobs.entry(rec.dev).or_insert(n % self.jobs)
            };
            self.summary.issued += 1;
            return Ok(Some((job, io, at)));
        }
        Ok(None)
    }

    /// The record's place in the region: aligned to 512 B, then wrapped, scaled or rejected.
    fn place(&mut self, op: Op, offset: u64, len: u64) -> Result<Io> {
        let aligned = offset & !511;
        let mut alen = (offset - aligned + len).div_ceil(512) * 512;
        if aligned != offset || alen != len {
            self.summary.realigned += 1;
        }
        if op == Op::Trim && alen > self.region {
            self.summary.remapped += 1;
            alen = self.region;
        }
        if alen > self.region {
            return Err(self.error(format!("a request of {alen} B does not fit the simulated region of {} B", self.region)));
        }
        let room = self.region - alen;
        let off = match self.lba {
            LbaMode::Scale if self.span > self.region => {
                self.summary.remapped += 1;
                ((u128::from(aligned) * u128::from(room) / u128::from(self.span)) as u64) & !511
            }
            _ if aligned <= room => aligned,
            LbaMode::Wrap | LbaMode::Scale => {
                self.summary.remapped += 1;
                (aligned % (room + 512)) & !511
            }
            LbaMode::Reject => return Err(self.error(format!("offset {aligned} + {alen} B is beyond the simulated region of {} B (set workload.replay.lba = \"wrap\" or \"scale\")", self.region))),
        };
        Ok(Io { op, offset: self.start + off.min(room), len: alen })
    }

    fn error(&self, reason: String) -> Error {
        Error::Trace { location: self.reader.location(), text: String::new(), reason }
    }

    /// Fraction of the limit done, when there is one.
    pub fn progress(&self) -> f64 {
        self.limit.map_or(0.0, |n| self.summary.issued as f64 / n.max(1) as f64)
    }

    pub fn summary(&self) -> ReplaySummary {
        let c = &self.reader.counts;
        ReplaySummary { lines: c.lines, bad_lines: c.bad_lines, zero_length: c.zero_length, devices: self.dev_jobs.len(), ..self.summary.clone() }
    }
}
