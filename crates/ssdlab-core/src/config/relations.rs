//! The rules between a config's blocks: every relation that one block's value sets for
//! another's (jobs and queue pairs, NVMe-only features, metadata formats, placement and write
//! modes, trims and zones, atomic writes, ATS pins, the NAND geometry, the capacity).
//!
//! A rule is skipped when one of its fields (or a table holding it, or a key inside it)
//! already has a problem of its own, a wrong type or a broken value rule, so that it never
//! quotes a value that is wrong for another reason.

use std::collections::HashSet;

use super::{units, Config};
use crate::schema::Issues;
use crate::workload::WorkloadConfig;

/// Every job of a config: its name, config path, workload and tenant.
type Jobs = [(String, String, WorkloadConfig, String)];

/// The paths that had problems of their own before the relations were checked.
struct Flagged(Vec<String>);

impl Flagged {
    /// Whether none of `paths` (nor a table holding one, nor a key inside one) is flagged.
    fn ok(&self, paths: &[&str]) -> bool {
        let within = |inner: &str, outer: &str| inner.strip_prefix(outer).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']));
        !paths.iter().any(|p| self.0.iter().any(|f| within(f, p) || within(p, f)))
    }
}

impl Config {
    /// Rules between fields (see the module's doc).
    pub(super) fn validate_relations(&self, issues: &mut Issues) {
        let w = &self.workload;
        let flagged = Flagged(issues.0.iter().map(|i| i.path.clone()).collect());
        // Too many jobs to list (a value rule refused them): 2^28 jobs took 178 GB here.
        let max = crate::workload::MAX_NUMJOBS;
        if w.numjobs > max || self.tenants.iter().any(|t| t.numjobs > max) || w.jobs.len() as u64 * u64::from(w.numjobs) > u64::from(crate::workload::MAX_JOBS) {
            return;
        }
        let jobs = self.jobs();
        let ok = |paths: &[&str]| flagged.ok(paths);
        self.queue_rules(issues, &flagged, &jobs);
        if self.nvme.interface == crate::nvme::Interface::VirtioBlk {
            self.virtio_rules(issues, &flagged, &jobs);
        }
        if self.nvme.metadata_size.0 > 0 && ok(&["nvme.metadata_size", "nvme.lba_size"]) {
            self.metadata_rules(issues, &jobs);
        }
        if let Some(z) = self.ftl.zone_size.filter(|_| !self.tenants.is_empty() && ok(&["ftl.zone_size", "tenants"])) {
            issues.push("ftl.zone_size", z, "zoned namespaces are modelled without [[tenants]]");
        }
        let mut seen = HashSet::new();
        for (_, path, job, _) in &jobs {
            if seen.insert(path.clone()) {
                self.job_rules(issues, &flagged, path, job);
                self.engine_rules(issues, &flagged, path, job);
            }
        }
        let ats_keys = ["ats.lines", "ats.ways", "ats.stu", "host.vms", "host.memory", "host.buffer_pool", "workload.numjobs", "workload.bs", "workload.bssplit", "nvme.io_queues"];
        if self.ats.enabled && self.ats.pin_rings && ok(&ats_keys) {
            let need = self.host_memory(jobs.len()).ring_pages(self.ats.stu_exponent());
            let most = if self.ats.ways == 0 { self.ats.lines } else { self.ats.ways };
            issues.check(
                need <= most as usize,
                "ats.lines",
                self.ats.lines,
                format!("the pinned SQ/CQ translations need {need} lines at this STU (one ring pair per job): raise ats.lines or set ats.pin_rings = false"),
            );
        }
        if self.media.kind == crate::media::MediaKind::Nand {
            self.nand_rules(issues, &flagged);
        }
        self.capacity_rules(issues, &flagged, &jobs);
    }

    /// More jobs (CPUs) than queue pairs: consecutive jobs share a queue (blk-mq), which ATS,
    /// tenants and the queues' depth must allow.
    fn queue_rules(&self, issues: &mut Issues, flagged: &Flagged, jobs: &Jobs) {
        let w = &self.workload;
        let ok = |paths: &[&str]| flagged.ok(paths);
        if ok(&["workload.numjobs", "workload.iodepth", "workload.jobs", "tenants", "ats.enabled", "nvme.io_queues", "nvme.queue_depth"]) && jobs.len() as u64 > u64::from(self.nvme.io_queues) {
            // More jobs (CPUs) than queue pairs: consecutive jobs share a queue (blk-mq).
            let map = crate::host::queue_map(jobs.len(), self.nvme.io_queues as usize);
            let why = format!("gives {} jobs on nvme.io_queues = {} queue pairs, so jobs share queues", jobs.len(), self.nvme.io_queues);
            if self.ats.enabled {
                issues.push(
                    "workload.numjobs",
                    w.numjobs,
                    format!("{why}; with ats.enabled each job needs a queue pair of its own (its rings' DMA addresses are per job): give nvme.io_queues >= {}", jobs.len()),
                );
            }
            for q in 0..crate::host::queues(jobs.len(), self.nvme.io_queues as usize) {
                let on: Vec<usize> = (0..jobs.len()).filter(|&j| map[j] == q).collect();
                if let Some(&other) = on.iter().find(|&&j| jobs[j].3 != jobs[on[0]].3) {
                    issues.push("workload.numjobs", w.numjobs, format!("{why}, and tenants {:?} and {:?} would share queue {q}: give nvme.io_queues >= {}", jobs[on[0]].3, jobs[other].3, jobs.len()));
                    break;
                }
                let depth: u64 = on.iter().map(|&j| u64::from(jobs[j].2.iodepth)).sum();
                if depth >= u64::from(self.nvme.queue_depth) {
                    issues.push(
                        "workload.numjobs",
                        w.numjobs,
                        format!("{why}, and the {} jobs on queue {q} have iodepth {depth} in all; must be <= nvme.queue_depth - 1 = {}", on.len(), self.nvme.queue_depth.saturating_sub(1)),
                    );
                    break;
                }
            }
        }
    }

    /// What virtio-blk lacks: NVMe's arbitration classes, interrupt coalescing, its
    /// write-family commands, zones, placement, metadata; ATS maps NVMe rings.
    fn virtio_rules(&self, issues: &mut Issues, flagged: &Flagged, jobs: &Jobs) {
        let ok = |paths: &[&str]| flagged.ok(paths);
        let nvme_only = [
            (self.nvme.arbitration == crate::nvme::Arbitration::Wrr, "nvme.arbitration"),
            (self.nvme.irq_coalesce_threshold > 0, "nvme.irq_coalesce_threshold"),
            (self.ats.enabled, "ats.enabled"),
            (self.ftl.zone_size.is_some(), "ftl.zone_size"),
            (self.ftl.placement == crate::ftl::Placement::Fdp, "ftl.placement"),
            (self.nvme.metadata_size.0 > 0, "nvme.metadata_size"),
            (jobs.iter().any(|j| j.2.write_mode.as_ref().is_some_and(|m| m.0.iter().any(|e| e.0 != crate::io::Kind::Write))), "workload.write_mode"),
        ];
        for (_, key) in nvme_only.iter().filter(|(on, key)| *on && ok(&["nvme.interface", key])) {
            issues.push(key, "set", "is an NVMe feature: leave it off with nvme.interface = \"virtio-blk\"");
        }
    }

    /// An LBA format with metadata: direct I/O of the config's own jobs, in whole blocks.
    fn metadata_rules(&self, issues: &mut Issues, jobs: &Jobs) {
        let why = "an LBA format with metadata is modelled for direct I/O of its own jobs: no tenants, traces, ATS, zbd or buffered I/O";
        let others = !self.tenants.is_empty() || self.ats.enabled || self.workload.replay.trace.is_some() || jobs.iter().any(|j| j.2.zbd || !j.2.direct);
        if others {
            issues.push("nvme.metadata_size", self.nvme.metadata_size, why);
        }
        let lba = self.nvme.lba_size.0;
        let unit = if self.media.kind == crate::media::MediaKind::Nand { self.ftl.mapping_unit.0 } else { lba };
        if !unit.is_multiple_of(lba) {
            issues.push("nvme.lba_size", self.nvme.lba_size, format!("must divide ftl.mapping_unit = {}", self.ftl.mapping_unit));
        }
        // Interleaved metadata makes the host's block lba + metadata (the value rules check
        // that); with a separate metadata buffer the host's sizes are whole data blocks.
        if !self.nvme.extended_lba {
            for (_, path, job, _) in jobs {
                if [job.min_bs(), job.max_bs(), job.offset.0].iter().any(|s| !s.is_multiple_of(lba)) {
                    issues.push(&format!("{path}.bs"), units::format_size(job.min_bs()), format!("sizes and offsets must be whole blocks of nvme.lba_size = {}", self.nvme.lba_size));
                    break;
                }
            }
        }
    }

    /// The rules of one job (one config path): placement identifiers, write modes, trims and
    /// zones, fio's zbd mode, atomic writes, and its depth against the queue's.
    fn job_rules(&self, issues: &mut Issues, flagged: &Flagged, path: &str, job: &WorkloadConfig) {
        let ok = |paths: &[&str]| flagged.ok(paths);
        let at = |key: &str| format!("{path}.{key}");
        let pids_ok = ok(&[&at("placement_ids"), "ftl.placement", "ftl.fdp_handles"]);
        if let Some(&pid) = job.placement_ids.iter().find(|&&p| pids_ok && (self.ftl.placement != crate::ftl::Placement::Fdp || p >= self.ftl.fdp_handles)) {
            issues.push(&format!("{path}.placement_ids"), pid, format!("must name one of the drive's ftl.fdp_handles = {} reclaim unit handles (with ftl.placement = \"fdp\")", self.ftl.fdp_handles));
        }
        let appends = job.write_mode.as_ref().is_some_and(|m| m.0.iter().any(|e| e.0 == crate::io::Kind::ZoneAppend));
        let modes_ok = ok(&[&at("write_mode"), &at("zbd"), &at("direct"), "media.kind", "ftl.zone_size"]);
        if let Some(mix) = job.write_mode.as_ref().filter(|_| modes_ok && appends) {
            if mix.0.len() > 1 || !job.zbd {
                issues.push(&format!("{path}.write_mode"), mix, "zone_append is modelled alone, for zbd jobs (workload.zbd) on a zoned drive");
            }
        } else if let Some(mix) = job.write_mode.as_ref().filter(|m| modes_ok && m.0.iter().any(|e| e.0 != crate::io::Kind::Write)) {
            let key = format!("{path}.write_mode");
            if self.media.kind != crate::media::MediaKind::Nand {
                issues.push(&key, mix, "Write Zeroes, Write Uncorrectable, Verify and Compare are modelled on flash drives (media.kind = \"nand\")");
            } else if self.ftl.zone_size.is_some() {
                issues.push(&key, mix, "a zoned namespace takes writes only at its write pointers");
            } else if !job.direct {
                issues.push(&key, mix, "these commands go to the drive directly (direct I/O)");
            }
        }
        let trims = job.rw.trims() && ok(&[&at("rw"), &at("zbd"), &at("bs"), &at("bssplit"), &at("bsrange"), &at("trim_ranges"), "media.kind", "ftl.zone_size"]);
        if trims && self.media.kind == crate::media::MediaKind::Nand && self.ftl.zone_size.is_some() {
            if !job.zbd {
                issues.push(
                    &format!("{path}.rw"),
                    job.rw,
                    "a zoned namespace frees space by zone resets, not by trims (Dataset Management deallocate); fio's zbd mode (workload.zbd) turns trims into zone resets",
                );
            } else if job.trim_ranges > 1 {
                issues.push(&format!("{path}.trim_ranges"), job.trim_ranges, "a zbd trim resets one zone");
            } else if matches!(job.rw, crate::workload::Rw::TrimWrite | crate::workload::Rw::RandTrimWrite) {
                issues.push(&format!("{path}.rw"), job.rw, "trims followed by writes are not modelled in zbd mode (trim or randtrim reset zones)");
            } else if let Some(zone) = self.ftl.zone_size.filter(|z| job.trim_choices() != [(z.0, 100)]) {
                let sizes: Vec<String> = job.trim_choices().iter().map(|t| units::format_size(t.0)).collect();
                issues.push(&format!("{path}.bs"), sizes.join("/"), format!("a zbd trim resets a whole zone: its size must be the zone size, {zone} (fio: trim block size is not the zone size)"));
            }
        }
        let zbd = job.zbd && ok(&[&at("zbd"), &at("direct"), &at("bs"), &at("bssplit"), &at("bsrange"), &at("replay"), "media.kind", "ftl.zone_size", "ftl.mapping_unit"]);
        if zbd && (self.media.kind != crate::media::MediaKind::Nand || self.ftl.zone_size.is_none()) {
            issues.push(&format!("{path}.zbd"), true, "fio's zonemode=zbd needs a zoned drive: a NAND device with ftl.zone_size");
        } else if zbd && (!job.direct || job.replay.trace.is_some()) {
            issues.push(&format!("{path}.zbd"), true, "zbd jobs write the zones directly: direct I/O, no replayed trace (fio: direct I/O is mandatory for writing to ZBD drives)");
        } else if zbd && !job.min_bs().is_multiple_of(self.ftl.mapping_unit.0) {
            issues.push(&format!("{path}.bs"), units::format_size(job.min_bs()), format!("zbd writes must be whole mapping units (ftl.mapping_unit = {})", self.ftl.mapping_unit));
        }
        let atomic_keys = [&at("atomic"), &at("rw"), &at("rwmixread"), &at("bs"), &at("bssplit"), &at("bsrange"), &at("direct"), &at("blockalign"), "nvme.atomic_write_unit"];
        if job.atomic && job.rw.read_percent(job.rwmixread) < 100 && ok(&atomic_keys) {
            // Linux's RWF_ATOMIC rules (block/fops.c, generic_atomic_write_valid): direct
            // I/O, a power-of-two length within the device's atomic unit, aligned to it.
            let unit = self.nvme.atomic_write_unit.0;
            let key = format!("{path}.atomic");
            let (_, writes) = job.size_choices();
            let sizes: Vec<u64> = match job.bsrange.filter(|_| job.bssplit.is_none()) {
                Some(r) => vec![r.write.0, r.write.1],
                None => writes.iter().map(|w| w.0).collect(),
            };
            let largest = sizes.iter().copied().max().unwrap_or(0);
            if !job.direct {
                issues.push(&key, true, "atomic writes need direct I/O (Linux refuses RWF_ATOMIC on buffered writes)");
            } else if let Some(bad) = sizes.iter().find(|&&b| !b.is_power_of_two() || b > unit) {
                issues.push(&key, true, format!("an atomic write of {} must be a power of two no larger than nvme.atomic_write_unit = {}", units::Bytes(*bad), self.nvme.atomic_write_unit));
            } else if job.rw.is_random() && !job.blockalign.map_or(job.min_bs(), |a| a.0).is_multiple_of(largest) {
                issues.push(&key, true, format!("random atomic writes of up to {} need offsets aligned to it: set blockalign", units::Bytes(largest)));
            }
        }
        let key = format!("{path}.iodepth");
        issues.check(
            !ok(&[&key, "nvme.queue_depth"]) || u64::from(job.iodepth) < u64::from(self.nvme.queue_depth),
            &key,
            job.iodepth,
            format!("must be <= nvme.queue_depth - 1 = {} (a queue holds one entry less than its size)", self.nvme.queue_depth.saturating_sub(1)),
        );
    }

    /// A job's I/O engine against its other keys and the host's block layer: a synchronous
    /// engine has one I/O in flight, polling is for direct I/O, and SPDK has no block layer
    /// (no page cache, scheduler, tag lock or cgroup controller).
    fn engine_rules(&self, issues: &mut Issues, flagged: &Flagged, path: &str, job: &WorkloadConfig) {
        use crate::host::{Engine, Scheduler, ShareMode, Tags};
        let key = format!("{path}.ioengine");
        let engine = job.ioengine.unwrap_or(self.host.engine);
        if !flagged.ok(&[&key, "host.engine"]) || engine == Engine::Kernel {
            return;
        }
        let h = &self.host;
        if engine.synchronous() && flagged.ok(&[&format!("{path}.iodepth")]) {
            issues.check(job.iodepth == 1, &format!("{path}.iodepth"), job.iodepth, format!("must be 1 with the synchronous engine {engine} (one I/O in flight per job)"));
        }
        if engine.polls() && !job.direct && flagged.ok(&[&format!("{path}.direct")]) {
            issues.push(&format!("{path}.direct"), false, format!("{engine} polls for completions: direct I/O only"));
        }
        if !engine.in_kernel() {
            let why = "must be the default with the spdk engine (a user-space driver has no kernel block layer)";
            issues.check(h.scheduler == Scheduler::None, "host.scheduler", h.scheduler, why);
            issues.check(h.tags == Tags::LockFree, "host.tags", h.tags, why);
            issues.check(h.share == ShareMode::None, "host.share", h.share, why);
        }
    }

    /// The NAND geometry against the mapping unit, the write cache, spare space, pools and FDP.
    fn nand_rules(&self, issues: &mut Issues, flagged: &Flagged) {
        let ok = |paths: &[&str]| flagged.ok(paths);
        let page = self.media.nand.page_size.0;
        let unit = self.ftl.mapping_unit.0;
        let divides = unit <= page && page.is_multiple_of(unit);
        issues.check(
            !ok(&["ftl.mapping_unit", "media.nand.page_size"]) || divides,
            "ftl.mapping_unit",
            self.ftl.mapping_unit,
            format!("must divide media.nand.page_size = {}", self.media.nand.page_size),
        );
        issues.check(
            self.ftl.write_cache || !ok(&["ftl.mapping_unit", "media.nand.page_size"]) || unit == page,
            "ftl.write_cache",
            self.ftl.write_cache,
            format!("off needs ftl.mapping_unit = media.nand.page_size ({}), so that a write's page never waits for other writes to fill it", self.media.nand.page_size),
        );
        issues.check(
            self.ftl.write_cache || self.media.nand.one_shot_program.is_none() || !ok(&["ftl.write_cache", "media.nand.one_shot_program"]),
            "ftl.write_cache",
            self.ftl.write_cache,
            "off cannot go with media.nand.one_shot_program: a word line programs once all its pages are written, so a write must not wait for its own page's program",
        );
        if divides && ok(crate::ftl::SPARE_RULE_KEYS) {
            self.ftl.validate_spare(&self.media.nand, issues);
            if !self.tenants.is_empty() && ok(&["tenants", "ftl.ops_split", "ftl.pools"]) {
                self.validate_pools(issues);
            }
            if self.ftl.placement == crate::ftl::Placement::Fdp {
                self.validate_fdp(issues);
            }
        }
    }

    /// Every job's region inside the exported capacity, and holding its largest block.
    fn capacity_rules(&self, issues: &mut Issues, flagged: &Flagged, jobs: &Jobs) {
        let ok = |paths: &[&str]| flagged.ok(paths);
        // The capacity reads the NAND geometry and the LBA format: out of range, they overflow.
        let nand = self.media.kind == crate::media::MediaKind::Nand;
        if !ok(&["workload.offset", "workload.size", "workload.bs", "workload.bssplit", "media.capacity", "ftl.op_ratio", "ftl.mapping_unit", "nvme.lba_size", "nvme.metadata_size"])
            || (nand && !ok(crate::ftl::SPARE_RULE_KEYS))
        {
            return;
        }
        let cap = self.host_capacity();
        let mut seen = std::collections::HashSet::new();
        for (_, path, job, _) in jobs {
            if !seen.insert(path.clone()) {
                continue;
            }
            let size = self.region_size_of(job);
            let end = job.offset.0.saturating_add(size);
            if job.offset.0 >= cap || end > cap {
                issues.push(
                    &format!("{path}.{}", if job.size.is_some() { "size" } else { "offset" }),
                    job.size.map_or_else(|| job.offset.to_string(), |s| s.to_string()),
                    format!("offset + size = {} must be <= the exported capacity = {}", units::format_size(end), units::format_size(cap)),
                );
            } else if size < job.max_bs() {
                issues.push(&format!("{path}.size"), units::format_size(size), format!("must hold at least one block of the largest block size ({})", units::format_size(job.max_bs())));
            }
        }
    }

    /// FDP: tenants to place, one shared pool, and spare blocks for every stream's open blocks.
    fn validate_fdp(&self, issues: &mut Issues) {
        let by_pid = self.ftl.fdp_handles > 0;
        let n = if by_pid { self.ftl.fdp_handles as usize } else { self.tenants.len() };
        if by_pid && !(2..=128).contains(&n) {
            issues.push("ftl.fdp_handles", n, "must be between 2 and 128 (or 0: a handle per tenant)");
            return;
        }
        if by_pid && self.ftl.ruh_type == crate::ftl::RuhType::Persistent {
            issues.push("ftl.ruh_type", "\"persistent\"", "handles picked by placement identifier are modelled initially isolated (GC would need each unit's handle)");
            return;
        }
        if n < 2 {
            issues.push("ftl.placement", "\"fdp\"", "places each tenant's data apart: name two or more [[tenants]]");
            return;
        }
        if self.ftl.pools == crate::ftl::PoolMode::Isolated {
            issues.push("ftl.placement", "\"fdp\"", "FDP shares one pool's spare space: use ftl.pools = \"shared\" with it");
            return;
        }
        let g = crate::media::nand::Geometry::new(&self.media.nand, self.ftl.mapping_unit.0);
        // A host stream per handle, and one GC stream or one per handle.
        let streams = n + if self.ftl.ruh_type == crate::ftl::RuhType::Persistent { n } else { 1 };
        let exported = crate::ftl::exported_units(&g, self.ftl.op_ratio);
        let spare = u64::from(g.blocks()).saturating_sub(exported.div_ceil(u64::from(g.slots_per_block())));
        let reclaim = (f64::from(g.blocks()) * self.ftl.gc_reclaim).ceil() as u32;
        let need = crate::ftl::spare_need(reclaim, streams, g.all_planes());
        issues.check(
            spare >= need,
            "ftl.op_ratio",
            self.ftl.op_ratio,
            format!("leaves {spare} spare blocks; FDP's {streams} write streams need at least {need} (ftl.gc_reclaim plus an open block per stream and plane)"),
        );
    }

    /// Isolated pools: each must hold its GC margin.
    fn validate_pools(&self, issues: &mut Issues) {
        let layout = match self.tenant_layout() {
            Ok(l) => l,
            Err(issue) => {
                issues.0.push(issue);
                return;
            }
        };
        let g = crate::media::nand::Geometry::new(&self.media.nand, self.ftl.mapping_unit.0);
        for (i, spec) in layout.pools.iter().flatten().enumerate() {
            if let Some(mut issue) = crate::ftl::pool_spare_issue(&g, spec) {
                issue.path = "ftl.ops_split".into();
                issue.value = format!("{} (tenant {:?}: {} blocks per plane, {:.2} % spare)", self.ftl.ops_split, layout.names[i], spec.blocks_per_plane, spec.op_ratio * 100.0);
                issue.rule = format!("gives this tenant's pool too little spare space: it {}", issue.rule);
                issues.0.push(issue);
            }
        }
    }
}
