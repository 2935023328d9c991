use crate::host::Engine;
use crate::schema::Issues;
use crate::sim::SimDuration;
use crate::units::Bytes;
use crate::{config_enum, config_struct};

use super::values::{BlockSizes, BsRange, BsSplit, Distribution, IopsPair, Rates, Rw, WriteMix};

config_enum! {
    /// How arrivals are spaced when `rate_iops` is set (fio's `rate_process`).
    pub enum RateProcess {
        /// Evenly spaced.
        Linear = "linear",
        /// Exponential inter-arrival times (a Poisson process).
        Poisson = "poisson",
    }
}

config_enum! {
    /// How a job picks the placement identifier of each write (fio's `fdp_pli_select`).
    pub enum PlacementSelect {
        /// Each in turn.
        RoundRobin = "roundrobin",
        /// One at random.
        Random = "random",
    }
}

config_enum! {
    /// Which jobs stop when a job ends (fio's `exitall` with `exit_what`).
    pub enum ExitScope {
        /// None: the job's end stops nothing else.
        None = "none",
        /// The jobs of its reporting group (`group`).
        Group = "group",
        /// Every job running (fio's `stonewall`: every job of this run).
        Stonewall = "stonewall",
        /// Every job, including those of later groups (which then never start).
        All = "all",
    }
}

config_enum! {
    /// How a trace is replayed.
    pub enum ReplayMode {
        /// Open loop: each record arrives at its trace time (times `time_scale`); arrivals that
        /// find `iodepth` I/Os in flight wait for a slot.
        Timed = "timed",
        /// Closed loop: as fast as the device allows, `iodepth` I/Os in flight per job; a job
        /// whose I/O completes takes the trace's next record.
        Depth = "qd",
    }
}

config_enum! {
    /// What to do with trace addresses beyond the simulated region.
    pub enum LbaMode {
        /// Take them modulo the region.
        Wrap = "wrap",
        /// Scale the trace's address space (its highest byte, found in a first pass) onto the region.
        Scale = "scale",
        /// Stop with an error naming the record's line.
        Reject = "reject",
    }
}

config_enum! {
    /// Timed replay: which job (queue pair, tenant) issues a record.
    pub enum DeviceMap {
        /// The trace's k-th device (volume, disk, file) in order of appearance goes to job k mod jobs.
        Jobs = "jobs",
        /// Records are dealt to the jobs in turn, whatever their device.
        Spread = "spread",
    }
}

config_struct! {
    /// Replay of a block trace instead of the synthetic workload (`workload.replay.trace`).
    /// Jobs keep their `iodepth`; `number_ios` limits the I/Os of all jobs together.
    pub struct ReplayConfig {
        /// Trace file (plain, .gz or .bz2) in a format `ssdlab trace` reads. Default: unset.
        trace: Option<String> = None,
        /// Its format (msr, spc, fiu, alibaba, tencent, blkparse, fio-v2, fio-v3, mqsim,
        /// disksim). Default: unset (detected from the first lines).
        format: Option<String> = None,
        /// `"timed"` (open loop at trace times) or `"qd"` (closed loop). Default: `"timed"`.
        mode: ReplayMode = ReplayMode::Timed,
        /// Timed: trace times are multiplied by this (0.5 replays twice as fast). Default: `1.0`.
        time_scale: f64 = 1.0,
        /// Addresses beyond the region: `"wrap"`, `"scale"` or `"reject"`. Default: `"wrap"`.
        lba: LbaMode = LbaMode::Wrap,
        /// Timed: `"jobs"` (device k to job k mod jobs) or `"spread"`. Default: `"jobs"`.
        devices: DeviceMap = DeviceMap::Jobs,
        /// Skip malformed lines and count them instead of stopping. Default: `false`.
        lenient: bool = false,
    }
}

config_struct! {
    /// A synthetic workload in fio's vocabulary. Each of `numjobs` jobs is a host thread on a
    /// CPU of its own, with its own NVMe queue pair while the drive has enough of them.
    pub struct WorkloadConfig {
        /// `read`, `write`, `randread`, `randwrite`, `randrw`, `rw`/`readwrite`, or with trims
        /// (NVMe Dataset Management, deallocate) `trim`, `randtrim`, `trimwrite` (each trim
        /// followed by a write of its block) or `randtrimwrite`. Default: `"randread"`.
        rw: Rw = Rw::RandRead,
        /// Percentage of reads in mixed workloads (0-100). Default: `50`.
        rwmixread: u32 = 50,
        /// Block size, or `read,write[,trim]` sizes; multiples of 512 B. Default: `"4KiB"`.
        bs: BlockSizes = BlockSizes { read: 4096, write: 4096, trim: 4096 },
        /// Weighted block sizes, e.g. `"4k/60:64k/40"`; overrides `bs`. Default: unset.
        bssplit: Option<BsSplit> = None,
        /// Block sizes drawn from a range as fio draws them (`"4k-64k"`, or read,write ranges):
        /// the minimum plus a uniform fraction of the maximum, aligned down to a multiple of the
        /// minimum and capped at the maximum; overrides `bs`. Default: unset.
        bsrange: Option<BsRange> = None,
        /// Times each job goes through its work (fio's `loops`): `number_ios` I/Os, or `size`
        /// bytes, per loop. Default: `1`.
        loops: u32 = 1,
        /// I/Os each job keeps in flight. Default: `1`.
        iodepth: u32 = 1,
        /// The job's I/O engine (fio's `ioengine`, with `hipri` and `sqthread_poll` as
        /// `"io_uring-hipri"` and `"io_uring-sqpoll"`): one of `host.engine`'s values.
        /// Default: unset (`host.engine`).
        ioengine: Option<Engine> = None,
        /// I/Os submitted by one system call when several are ready at once (fio's
        /// `iodepth_batch_submit`), 1 to `iodepth`. Default: `1`.
        iodepth_batch: u32 = 1,
        /// Jobs (threads); beyond `nvme.io_queues`, consecutive jobs share queue pairs. Default: `1`.
        numjobs: u32 = 1,
        /// Region size each job addresses, from `offset`. Default: unset (to the end of the device).
        size: Option<Bytes> = None,
        /// Start of the region, a multiple of 512 B. Default: `0`.
        offset: Bytes = Bytes(0),
        /// Boundary random offsets align to (fio's `blockalign`), a multiple of 512 B. Default:
        /// unset (the smallest block size).
        blockalign: Option<Bytes> = None,
        /// I/Os each job issues, at most 10^9. Default: unset (with no `runtime` either: `size`
        /// bytes per job).
        number_ios: Option<u64> = None,
        /// Simulated time after which jobs stop issuing. Default: unset.
        runtime: Option<SimDuration> = None,
        /// Simulated time at the start whose I/Os are left out of the statistics. Default: `0`.
        ramp_time: SimDuration = SimDuration::ZERO,
        /// Offsets of random I/O: `random`, `zipf:θ`, `pareto:h`, fio's `zoned:A/R:...` or
        /// `sequence:B,B,...` (block numbers in turn). Default: `"random"`.
        random_distribution: Distribution = Distribution::Random,
        /// `sequence`: each repetition of the list moves a list's length of blocks on, and the
        /// job ends past its region (fio's `random_sequence_stride`). Default: `false`.
        random_sequence_stride: bool = false,
        /// Open-loop arrival rate per job in I/O per second (0 = closed loop). Default: `0`.
        rate_iops: u64 = 0,
        /// Spacing of open-loop arrivals: `linear` or `poisson`. Default: `"linear"`.
        rate_process: RateProcess = RateProcess::Linear,
        /// Bandwidth cap per direction (fio's `rate`): `"10MiB/s"` for both, `"10MiB/s,5MiB/s"`
        /// for reads and writes, `",5MiB/s"` for writes only. The job keeps `iodepth` in flight
        /// while it is behind its schedule (bytes issued / cap), and when it is ahead it lets the
        /// queue drain and waits, as fio does. Default: unset (no cap).
        rate: Option<Rates> = None,
        /// Bandwidth each direction must keep (fio's `rate_min`), checked from two seconds
        /// into the job over spans of at least `rate_cycle`; below it the job ends with an
        /// error. Default: unset.
        rate_min: Option<Rates> = None,
        /// I/Os per second each direction must keep (fio's `rate_iops_min`), checked as
        /// `rate_min`. Default: unset.
        rate_iops_min: Option<IopsPair> = None,
        /// The shortest span the minimum rates are measured over (fio's `rate_cycle`).
        /// Default: `"1s"`.
        rate_cycle: SimDuration = SimDuration::from_ps(crate::sim::PS_PER_S),
        /// The job starts once every job of this name (and its `numjobs` copies, named
        /// `NAME.N`) has ended (fio's `wait_for`); its `runtime` counts from then. Default:
        /// unset.
        wait_for: Option<String> = None,
        /// Simulated time before the job starts (fio's `startdelay`); its `runtime` counts from
        /// its start. Default: `0`.
        startdelay: SimDuration = SimDuration::ZERO,
        /// fio's latency target: the job searches for the deepest queue (up to `iodepth`) at
        /// which `latency_percentile` of the I/Os of each `latency_window` finish within this
        /// latency (0: off). Default: `0`.
        latency_target: SimDuration = SimDuration::ZERO,
        /// The window the latency target is judged over. Default: `0` (every completion).
        latency_window: SimDuration = SimDuration::ZERO,
        /// The share of a window's I/Os, in per cent, that must meet the target. Default: `100.0`.
        latency_percentile: f64 = 100.0,
        /// Keep searching until the job ends (fio's `latency_run`); otherwise, once the depth
        /// settles, the job's statistics restart for one last window at that depth and the job
        /// ends. Default: `false`.
        latency_run: bool = false,
        /// Writes are `RWF_ATOMIC` (fio's `atomic`): Linux takes only power-of-two sizes up to
        /// `nvme.atomic_write_unit`, at offsets aligned to their size, with direct I/O, and never
        /// splits them; the drive then writes each whole or not at all, at no extra cost.
        /// Default: `false`.
        atomic: bool = false,
        /// Ranges a trim lists (fio's `num_range`): each trim is one Dataset Management command
        /// with this many ranges of the trim size, at offsets drawn one after another as a
        /// trim's are; fio counts it as one I/O of their total length. 1 to 256 (the NVMe
        /// limit). Default: `1`.
        trim_ranges: u32 = 1,
        /// The NVMe commands the job's writes are (fio's `write_mode`): `write`, `zeroes`
        /// (Write Zeroes: the drive deallocates), `uncor` (Write Uncorrectable), `verify` (the
        /// drive reads and checks the media, no data moves), `compare` (data in, compared with
        /// the media) or `compare-block` (one 512 B block in, compared with every block: SCSI
        /// VERIFY with BYTCHK = 11b), alone or as shares such as `"write/60:zeroes/40"`; or
        /// `zone_append` alone (zbd jobs on a zoned drive: Zone Append, no zone write lock). fio counts them
        /// all as writes. Default: unset (every write a Write).
        write_mode: Option<WriteMix> = None,
        /// FDP placement identifiers the job's writes name (fio's `fdp_pli`/`plids`), each an
        /// index into the drive's `ftl.fdp_handles`. Default: `[]` (none: handle 0).
        placement_ids: Vec<u32> = Vec::new(),
        /// How a write picks among them: `"roundrobin"` or `"random"`. Default: `"roundrobin"`.
        placement_select: PlacementSelect = PlacementSelect::RoundRobin,
        /// fio's reporting group (`groupid`: `new_group` starts one without waiting, as
        /// `stonewall` does after waiting); `exit_scope = "group"` stops the jobs of the same
        /// group. Default: `0`.
        group: u32 = 0,
        /// When this job ends, these jobs stop too (fio's `exitall` and `exit_what`). Default:
        /// `"none"`.
        exit_scope: ExitScope = ExitScope::None,
        /// `exit_scope` applies only when the job ends with an error (fio's `exitall_on_error`).
        /// Default: `false`.
        exit_on_error: bool = false,
        /// Master seed for every random choice of the run. Default: `1`.
        randseed: u64 = 1,
        /// Sequential jobs: bytes skipped after each I/O (fio's `rw=read:4k`); negative values
        /// step back (`rw=read:-8k` with 4 KiB blocks reads backwards). Default: `0`.
        rw_skip: i64 = 0,
        /// Sequential jobs, fio's strided zones (`zonemode=strided`): after `zonesize` bytes the
        /// job skips `zoneskip` bytes. Default: unset (no zones).
        zonesize: Option<Bytes> = None,
        /// Bytes skipped after each zone of `zonesize` bytes. Default: `0`.
        zoneskip: Bytes = Bytes(0),
        /// fio's `zonemode=zbd` on a zoned drive (`ftl.zone_size`): writes go to their zone's
        /// write pointer (a full zone is reset first), reads stay below it. Default: `false`.
        zbd: bool = false,
        /// zbd: zones written at once, among all jobs (fio's `max_open_zones`; 0: the drive's
        /// `ftl.max_active_zones`). Default: `0`.
        max_open_zones: u32 = 0,
        /// zbd: reads may go past the write pointer (fio's `read_beyond_wp`). Default: `false`.
        read_beyond_wp: bool = false,
        /// zbd: once the job's zones hold this share of its size, every 1/`zone_reset_frequency`
        /// -th write resets its zone first (fio's `zone_reset_threshold`). Default: `0`.
        zone_reset_threshold: f64 = 0.0,
        /// zbd: see `zone_reset_threshold` (0: off). Default: `0`.
        zone_reset_frequency: f64 = 0.0,
        /// Closed loop: a job waits this long after an I/O completes before issuing the next
        /// (fio's `thinktime` with `thinktime_blocks = 1`). Default: `0`.
        thinktime: SimDuration = SimDuration::ZERO,
        /// `O_DIRECT`: I/O goes to the device from the application's buffers. `false` is
        /// buffered I/O through the host's page cache (`host.page_cache`), fio's default; a
        /// config's default is direct, as a device study wants. Default: `true`.
        direct: bool = true,
        /// fio's `flow`: the job's weight in token-based flow control among the jobs of its
        /// `flow_id`; a job issues only while its share of the group's I/Os is at most its share
        /// of the group's weight (0: not in a flow). Default: `0`.
        flow: u32 = 0,
        /// The flow group (fio's `flow_id`). Default: `0`.
        flow_id: u32 = 0,
        /// How long a job held back by its flow waits before it looks again (fio's
        /// `flow_sleep`; 0: as soon as another job of the group issues). Default: `0`.
        flow_sleep: SimDuration = SimDuration::ZERO,
        /// fsync after every this many writes (fio's `fsync`; 0: never). Default: `0`.
        fsync: u32 = 0,
        /// fsync when the job's I/O is done (fio's `end_fsync`). Default: `false`.
        end_fsync: bool = false,
        /// Jobs that differ from the above (fio's job sections): each entry overrides some keys
        /// for `numjobs` jobs of its own. Empty: `numjobs` jobs as above. Default: `[]`.
        jobs: Vec<JobOverride> = Vec::new(),
        /// Replay a block trace instead (see [`ReplayConfig`]). Default: no trace.
        replay: ReplayConfig = ReplayConfig::default(),
    }
}

config_struct! {
    /// Keys one job (or group of `numjobs` jobs) sets differently from `[workload]`.
    pub struct JobOverride {
        /// A name for results (default: `job<i>`).
        name: Option<String> = None,
        /// The tenant the job belongs to: jobs naming the same tenant share it. Default: unset
        /// (the job belongs to the tenant `default`).
        tenant: Option<String> = None,
        rw: Option<Rw> = None,
        rwmixread: Option<u32> = None,
        bs: Option<BlockSizes> = None,
        bssplit: Option<BsSplit> = None,
        bsrange: Option<BsRange> = None,
        loops: Option<u32> = None,
        iodepth: Option<u32> = None,
        ioengine: Option<Engine> = None,
        iodepth_batch: Option<u32> = None,
        size: Option<Bytes> = None,
        offset: Option<Bytes> = None,
        blockalign: Option<Bytes> = None,
        number_ios: Option<u64> = None,
        runtime: Option<SimDuration> = None,
        random_distribution: Option<Distribution> = None,
        random_sequence_stride: Option<bool> = None,
        rate_iops: Option<u64> = None,
        rate_process: Option<RateProcess> = None,
        rate: Option<Rates> = None,
        rate_min: Option<Rates> = None,
        rate_iops_min: Option<IopsPair> = None,
        rate_cycle: Option<SimDuration> = None,
        startdelay: Option<SimDuration> = None,
        wait_for: Option<String> = None,
        latency_target: Option<SimDuration> = None,
        latency_window: Option<SimDuration> = None,
        latency_percentile: Option<f64> = None,
        latency_run: Option<bool> = None,
        atomic: Option<bool> = None,
        trim_ranges: Option<u32> = None,
        placement_ids: Option<Vec<u32>> = None,
        write_mode: Option<WriteMix> = None,
        placement_select: Option<PlacementSelect> = None,
        group: Option<u32> = None,
        exit_scope: Option<ExitScope> = None,
        exit_on_error: Option<bool> = None,
        thinktime: Option<SimDuration> = None,
        rw_skip: Option<i64> = None,
        direct: Option<bool> = None,
        flow: Option<u32> = None,
        flow_id: Option<u32> = None,
        flow_sleep: Option<SimDuration> = None,
        zonesize: Option<Bytes> = None,
        zoneskip: Option<Bytes> = None,
        zbd: Option<bool> = None,
        max_open_zones: Option<u32> = None,
        read_beyond_wp: Option<bool> = None,
        zone_reset_threshold: Option<f64> = None,
        zone_reset_frequency: Option<f64> = None,
        fsync: Option<u32> = None,
        end_fsync: Option<bool> = None,
        /// In a tenant's workload only: the tenant's jobs replay this trace over its
        /// namespace (`[tenants.workload.replay]`, the keys of `workload.replay`).
        replay: Option<ReplayConfig> = None,
    }
}

/// The tenant of jobs that name none.
pub const DEFAULT_TENANT: &str = "default";

/// Block sizes with their weights in percent.
pub type SizeChoices = Vec<(u64, u32)>;

/// The most jobs (host threads) a `numjobs` may ask for, as for a tenant: each has its own
/// state and histograms, and every job is listed while the config is checked.
pub const MAX_NUMJOBS: u32 = 1024;
/// The most jobs a workload may have in all (its sections times `numjobs`).
pub const MAX_JOBS: u32 = 4096;
/// The most I/Os a job may be asked for (`number_ios`): 10^9, about a quarter of an hour of
/// simulation at a million I/Os a second. More is refused rather than run until killed.
pub const MAX_NUMBER_IOS: u64 = 1_000_000_000;

impl WorkloadConfig {
    /// Every job, as `(name, config path, workload)`: `numjobs` copies of each `[[workload.jobs]]`
    /// entry merged over the base, or `numjobs` copies of the base.
    pub fn job_configs(&self) -> Vec<(String, String, WorkloadConfig)> {
        let mut base = self.clone();
        base.jobs.clear();
        if self.jobs.is_empty() {
            return (0..self.numjobs).map(|j| (format!("job{j}"), "workload".to_string(), base.clone())).collect();
        }
        let mut out = Vec::new();
        for (i, o) in self.jobs.iter().enumerate() {
            let mut w = base.clone();
            macro_rules! take {
                ($($f:ident),*) => {$( if let Some(v) = &o.$f { w.$f = v.clone().into(); } )*};
            }
            take!(rw, rwmixread, bs, iodepth, number_ios, random_distribution, rate_iops, rate_process, thinktime, rw_skip, loops, direct, fsync, end_fsync, flow, flow_id, flow_sleep);
            take!(rate_cycle, startdelay, latency_target, latency_window, latency_percentile, latency_run, atomic, group, exit_scope, exit_on_error);
            take!(random_sequence_stride, placement_ids, placement_select, trim_ranges, iodepth_batch);
            if o.ioengine.is_some() {
                w.ioengine = o.ioengine;
            }
            take!(zbd, max_open_zones, read_beyond_wp, zone_reset_threshold, zone_reset_frequency);
            for (dst, src) in [(&mut w.rate, o.rate), (&mut w.rate_min, o.rate_min)] {
                if src.is_some() {
                    *dst = src;
                }
            }
            if o.write_mode.is_some() {
                w.write_mode.clone_from(&o.write_mode);
            }
            if o.wait_for.is_some() {
                w.wait_for.clone_from(&o.wait_for);
            }
            if o.rate_iops_min.is_some() {
                w.rate_iops_min = o.rate_iops_min;
            }
            if let Some(v) = &o.bssplit {
                w.bssplit = Some(v.clone());
            }
            if let Some(v) = o.bsrange {
                w.bsrange = Some(v);
            }
            if let Some(v) = o.size {
                w.size = Some(v);
            }
            if let Some(v) = o.offset {
                w.offset = v;
            }
            if let Some(v) = o.blockalign {
                w.blockalign = Some(v);
            }
            if let Some(v) = o.runtime {
                w.runtime = Some(v);
            }
            if let Some(v) = o.zonesize {
                w.zonesize = Some(v);
            }
            if let Some(v) = o.zoneskip {
                w.zoneskip = v;
            }
            for k in 0..self.numjobs {
                let name = o.name.clone().unwrap_or_else(|| format!("job{i}"));
                let name = if self.numjobs > 1 { format!("{name}.{k}") } else { name };
                out.push((name, format!("workload.jobs[{i}]"), w.clone()));
            }
        }
        out
    }

    /// The tenant of every job, in the order of [`WorkloadConfig::job_configs`].
    pub fn job_tenants(&self) -> Vec<String> {
        if self.jobs.is_empty() {
            return vec![DEFAULT_TENANT.to_string(); self.numjobs as usize];
        }
        self.jobs.iter().flat_map(|o| std::iter::repeat_n(o.tenant.clone().unwrap_or_else(|| DEFAULT_TENANT.to_string()), self.numjobs as usize)).collect()
    }

    /// The block sizes in use, with weights in percent, for reads and for writes.
    pub fn size_choices(&self) -> (SizeChoices, SizeChoices) {
        match &self.bssplit {
            Some(s) => (s.read.clone(), s.write.clone()),
            None => (vec![(self.bs.read, 100)], vec![(self.bs.write, 100)]),
        }
    }

    /// The sizes of trims: `bs`'s trim value (with `bssplit` or `bsrange`, the writes' sizes).
    pub fn trim_choices(&self) -> SizeChoices {
        if self.bssplit.is_some() || self.bsrange.is_some() {
            self.size_choices().1
        } else {
            vec![(self.bs.trim, 100)]
        }
    }

    /// Every size the workload can issue: reads', writes' and (when it trims) trims'.
    fn all_sizes(&self) -> impl Iterator<Item = u64> {
        let (r, w) = self.size_choices();
        let t = if self.rw.trims() { self.trim_choices() } else { Vec::new() };
        r.into_iter().chain(w).chain(t).map(|e| e.0)
    }

    /// The largest block size this workload can issue.
    pub fn max_bs(&self) -> u64 {
        if let (Some(r), None) = (self.bsrange, &self.bssplit) {
            return r.read.1.max(r.write.1);
        }
        self.all_sizes().max().unwrap_or(0)
    }

    /// The smallest block size this workload can issue.
    pub fn min_bs(&self) -> u64 {
        if let (Some(r), None) = (self.bsrange, &self.bssplit) {
            return r.read.0.min(r.write.0);
        }
        self.all_sizes().min().unwrap_or(512)
    }

    /// The value rules; sizes and offsets must be whole host blocks of `block` bytes (512 B, or
    /// the namespace's logical block with its metadata when that is interleaved).
    pub fn validate(&self, issues: &mut Issues, block: u64) {
        self.validate_at("workload", issues, block);
        for (i, o) in self.jobs.iter().enumerate() {
            if o.replay.is_some() {
                issues.push(&format!("workload.jobs[{i}].replay"), "set", "a trace per job belongs to a tenant: use [tenants.workload.replay] (or workload.replay for every job)");
            }
        }
        if self.numjobs > MAX_NUMJOBS {
            return; // refused above; too many jobs to list
        }
        let total = self.jobs.len() as u64 * u64::from(self.numjobs);
        if total > u64::from(MAX_JOBS) {
            let shown = format!("{} sections x numjobs {}", self.jobs.len(), self.numjobs);
            issues.push("workload.jobs", shown, format!("gives {total} jobs; at most {MAX_JOBS} (each a host thread)"));
            return;
        }
        let before: Vec<(String, String)> = issues.0.iter().map(|i| (i.rule.clone(), i.value.clone())).collect();
        for (_, path, w) in self.job_configs().into_iter().filter(|(_, p, _)| p != "workload") {
            let mut job = Issues::default();
            w.validate_at(&path, &mut job, block);
            // A problem the base already has is reported once, at the base.
            issues.0.extend(job.0.into_iter().filter(|i| !before.contains(&(i.rule.clone(), i.value.clone()))));
        }
    }

    /// The value rules, reporting keys under `prefix`.
    pub fn validate_at(&self, prefix: &str, issues: &mut Issues, block: u64) {
        let many = format!("block sizes must be positive multiples of {block}B");
        // A size of whole thousands that misses the block is most likely 4kB meant as fio's 4k.
        let si = |size: u64| size > 0 && size.is_multiple_of(1000) && !size.is_multiple_of(block);
        let many_si = format!("{many} (config values are SI/IEC: 4kB is 4000 B, 4KiB is 4096 B; `-w` options and job files use fio's units, where 4k is 4096 B)");
        let key = |k: &str| format!("{prefix}.{k}");
        issues.check(self.rwmixread <= 100, &key("rwmixread"), self.rwmixread, "must be between 0 and 100");
        let sizes = [self.bs.read, self.bs.write, self.bs.trim];
        if sizes.iter().any(|&size| size == 0 || !size.is_multiple_of(block)) {
            issues.push(&key("bs"), self.bs, if sizes.iter().any(|&s| si(s)) { &many_si } else { &many });
        }
        if let Some(split) = &self.bssplit {
            if split.read.iter().chain(split.write.iter()).any(|e| e.0 == 0 || e.0 % block != 0) {
                issues.push(&key("bssplit"), split, &many);
            }
        }
        if let Some(r) = self.bsrange {
            if [r.read.0, r.read.1, r.write.0, r.write.1].iter().any(|&b| b == 0 || b % block != 0) {
                issues.push(&key("bsrange"), r, &many);
            }
            if self.bssplit.is_some() {
                issues.push(&key("bsrange"), r, "give bsrange or bssplit, not both");
            }
        }
        issues.check(self.loops >= 1, &key("loops"), self.loops, "must be at least 1");
        issues.check((1..=256).contains(&self.trim_ranges), &key("trim_ranges"), self.trim_ranges, "must be between 1 and 256 (ranges a Dataset Management command lists)");
        if self.trim_ranges > 1 && matches!(self.rw, Rw::TrimWrite | Rw::RandTrimWrite) {
            issues.push(&key("trim_ranges"), self.trim_ranges, "trims followed by writes take one range each (fio: trimwrite cannot be used with multiple ranges)");
        } else if self.trim_ranges > 1 && (!self.rw.trims() || self.replay.trace.is_some()) {
            issues.push(&key("trim_ranges"), self.trim_ranges, "applies to jobs that trim (rw = trim or randtrim), not to reads, writes or a replayed trace");
        }
        issues.check(self.iodepth >= 1, &key("iodepth"), self.iodepth, "must be at least 1");
        issues.check((1..=self.iodepth.max(1)).contains(&self.iodepth_batch), &key("iodepth_batch"), self.iodepth_batch, "must be between 1 and iodepth");
        issues.check((1..=MAX_NUMJOBS).contains(&self.numjobs), &key("numjobs"), self.numjobs, format!("must be between 1 and {MAX_NUMJOBS}"));
        issues.check(self.offset.0.is_multiple_of(block), &key("offset"), self.offset, format!("must be a multiple of {block}B"));
        if let Some(a) = self.blockalign {
            issues.check(a.0 > 0 && a.0.is_multiple_of(block), &key("blockalign"), a, format!("must be a positive multiple of {block}B"));
        }
        if let Some(size) = self.size {
            issues.check(size.0 > 0, &key("size"), size, "must be greater than zero");
        }
        if let Some(n) = self.number_ios {
            issues.check((1..=MAX_NUMBER_IOS).contains(&n), &key("number_ios"), n, format!("must be between 1 and {MAX_NUMBER_IOS} (10^9 I/Os a job)"));
        }
        let r = &self.replay;
        issues.check(r.time_scale.is_finite() && r.time_scale > 0.0, &key("replay.time_scale"), r.time_scale, "must be greater than zero");
        if let Some(f) = &r.format {
            if let Err(e) = f.parse::<crate::trace::Format>() {
                issues.push(&key("replay.format"), format!("{f:?}"), e);
            }
        }
        if let Some(z) = self.zonesize {
            issues.check(z.0 > 0 && z.0.is_multiple_of(512), &key("zonesize"), z, "must be a positive multiple of 512B");
            if self.rw.is_random() {
                issues.push(&key("zonesize"), z, "strided zones apply to sequential jobs (read, write, rw)");
            }
        }
        issues.check(self.zoneskip.0.is_multiple_of(512), &key("zoneskip"), self.zoneskip, "must be a multiple of 512B");
        issues.check(self.rw_skip % 512 == 0, &key("rw_skip"), self.rw_skip, "must be a multiple of 512B");
        if self.rw_skip != 0 && self.rw.is_random() {
            issues.push(&key("rw_skip"), self.rw_skip, "applies to sequential jobs (read, write, rw)");
        }
        self.validate_control(prefix, issues);
        if let Some(rt) = self.runtime {
            issues.check(rt > SimDuration::ZERO, &key("runtime"), rt, "must be greater than zero");
            issues.check(self.ramp_time < rt, &key("ramp_time"), self.ramp_time, format!("must be shorter than workload.runtime = {rt}"));
        }
    }

    /// The rules of fio's control loops under `prefix`: think time, rates and their
    /// minimums, flow groups, the latency-target search, against each other and a trace.
    fn validate_control(&self, prefix: &str, issues: &mut Issues) {
        let key = |k: &str| format!("{prefix}.{k}");
        let r = &self.replay;
        if self.thinktime > SimDuration::ZERO && self.rate_iops > 0 {
            issues.push(&key("thinktime"), self.thinktime, "applies to closed-loop jobs; leave it at 0 with rate_iops");
        }
        if r.trace.is_some() && self.rate_iops > 0 {
            issues.push(&key("rate_iops"), self.rate_iops, "a replayed trace sets its own arrival times; leave rate_iops at 0");
        }
        if self.flow > 0 && (self.rate_iops > 0 || r.trace.is_some()) {
            issues.push(&key("flow"), self.flow, "flow control applies to closed-loop jobs (no rate_iops, no trace)");
        }
        if r.trace.is_some() && !self.direct {
            issues.push(&key("direct"), self.direct, "a replayed trace is block I/O below the page cache; leave direct at true");
        }
        issues.check(self.rate_iops <= 1_000_000_000, &key("rate_iops"), self.rate_iops, "must be at most 1000000000 (one I/O per picosecond)");
        if let Some(cap) = self.rate {
            if self.rate_iops > 0 {
                issues.push(&key("rate"), cap, "give rate or rate_iops, not both (fio: rate and rate_iops are mutually exclusive)");
            }
            if r.trace.is_some() || self.flow > 0 {
                issues.push(&key("rate"), cap, "applies to a job that generates its own I/O (no trace, no flow)");
            }
            if let Some(min) = self.rate_min {
                if (cap.read > 0 && min.read > cap.read) || (cap.write > 0 && min.write > cap.write) {
                    issues.push(&key("rate_min"), min, format!("must not exceed {prefix}.rate = {cap} (fio: minimum rate exceeds rate)"));
                }
            }
        }
        if self.rate_min.is_some() && self.rate_iops_min.is_some() {
            issues.push(&key("rate_iops_min"), self.rate_iops_min.unwrap_or_default(), "give rate_min or rate_iops_min, not both");
        }
        for (k, v) in [("zone_reset_threshold", self.zone_reset_threshold), ("zone_reset_frequency", self.zone_reset_frequency)] {
            issues.check((0.0..=1.0).contains(&v), &key(k), v, "must be between 0 and 1");
        }
        issues.check(self.rate_cycle > SimDuration::ZERO, &key("rate_cycle"), self.rate_cycle, "must be greater than zero");
        issues.check(
            self.latency_percentile.is_finite() && self.latency_percentile > 0.0 && self.latency_percentile <= 100.0,
            &key("latency_percentile"),
            self.latency_percentile,
            "must be above 0 and at most 100",
        );
        if self.latency_target > SimDuration::ZERO && (self.rate_iops > 0 || r.trace.is_some()) {
            issues.push(&key("latency_target"), self.latency_target, "the depth search applies to closed-loop jobs (no rate_iops, no trace)");
        }
    }
}
