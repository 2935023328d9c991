//! Configuration: typed structs per hardware block, unit parsing, presets, `extends`, and one
//! validation pass that reports every problem.
//!
//! A config is TOML. It may start with `extends = "<preset or path>"`; the named config is
//! loaded first and this one's keys override it, table by table. Loading converts every key
//! (collecting each type error and unknown key), then [`Config::validate`] checks every value
//! rule and every cross-field rule. Any problem makes the whole load fail with
//! [`Error::Config`], listing all of them.

pub mod memory;
mod plan;
pub mod presets;
mod tenants;

pub use tenants::TenantLayout;

use std::path::Path;

use sha2::{Digest, Sha256};
use toml::{Table, Value};

use crate::config_struct;
use crate::ctrl::CtrlConfig;
use crate::error::{ConfigIssue, Error, Result};
use crate::ftl::FtlConfig;
use crate::host::HostConfig;
use crate::media::MediaConfig;
use crate::nvme::NvmeConfig;
use crate::pcie::PcieConfig;
use crate::schema::{Describe, FromToml, Issues, KeyDoc};
use crate::stats::StatsConfig;
use crate::units;
use crate::workload::WorkloadConfig;

config_struct! {
    /// A whole simulated system: the host, the link, the device and the workload.
    pub struct Config {
        /// One line saying what this config models (shown by `ssdlab presets`).
        description: String = String::new(),
        host: HostConfig = HostConfig::default(),
        pcie: PcieConfig = PcieConfig::default(),
        nvme: NvmeConfig = NvmeConfig::default(),
        ctrl: CtrlConfig = CtrlConfig::default(),
        media: MediaConfig = MediaConfig::default(),
        /// The flash translation layer (used with `media.kind = "nand"`).
        ftl: FtlConfig = FtlConfig::default(),
        /// PCIe ATS and the device's Address Translation Cache.
        ats: crate::ats::AtsConfig = crate::ats::AtsConfig::default(),
        workload: WorkloadConfig = WorkloadConfig::default(),
        /// The tenants sharing the drive (`[[tenants]]`); none: one tenant, `default`.
        tenants: Vec<crate::tenant::TenantConfig> = Vec::new(),
        stats: StatsConfig = StatsConfig::default(),
    }
}

/// How many `extends` links may be followed before we call it a cycle.
const MAX_EXTENDS_DEPTH: usize = 16;

impl Config {
    /// Loads a preset by name, or a TOML file by path.
    pub fn load(name_or_path: &str) -> Result<Config> {
        Config::from_table(resolve(name_or_path, 0)?)
    }

    /// Loads TOML text; `origin` names it in error messages and resolves relative `extends`.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Config> {
        Config::from_table(resolve_text(text, origin, 0)?)
    }

    /// Converts a fully resolved table (no `extends` left) and validates it.
    pub fn from_table(table: Table) -> Result<Config> {
        let mut issues = Issues::default();
        let Some(config) = Config::from_toml(&Value::Table(table), "", &mut issues) else {
            return Err(Error::Config(issues.0));
        };
        // Every rule runs even after type errors (bad fields hold valid defaults), so that all
        // problems are reported at once; a rule between fields skips itself when one of its
        // fields is flagged, so it never quotes a stand-in default.
        config.validate(&mut issues);
        if issues.is_empty() {
            Ok(config)
        } else {
            Err(Error::Config(issues.0))
        }
    }

    /// Every rule: the value rules of every block, then the rules that relate blocks.
    pub fn validate(&self, issues: &mut Issues) {
        self.validate_values(issues);
        self.validate_relations(issues);
    }

    fn validate_values(&self, issues: &mut Issues) {
        self.host.validate(issues);
        self.pcie.validate(issues);
        self.nvme.validate(issues);
        self.ctrl.validate(issues);
        self.media.validate(issues);
        if self.media.kind == crate::media::MediaKind::Nand {
            self.ftl.validate(issues);
        }
        self.workload.validate(issues, self.host_block());
        self.validate_tenants(issues);
        self.stats.validate(issues);
        if self.ats.enabled {
            self.ats.validate(issues);
        }
    }

    /// Rules between fields. A rule is skipped when one of its fields (or a table holding it,
    /// or a key inside it) already has a problem of its own, a wrong type or a broken value
    /// rule, so that it never quotes a value that is wrong for another reason.
    fn validate_relations(&self, issues: &mut Issues) {
        let w = &self.workload;
        let flagged: Vec<String> = issues.0.iter().map(|i| i.path.clone()).collect();
        let within = |inner: &str, outer: &str| inner.strip_prefix(outer).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']));
        let ok = |paths: &[&str]| !paths.iter().any(|p| flagged.iter().any(|f| within(f, p) || within(p, f)));
        // Too many jobs to list (a value rule refused them): 2^28 jobs took 178 GB here.
        let max = crate::workload::MAX_NUMJOBS;
        if w.numjobs > max || self.tenants.iter().any(|t| t.numjobs > max) || w.jobs.len() as u64 * u64::from(w.numjobs) > u64::from(crate::workload::MAX_JOBS) {
            return;
        }
        let jobs = self.jobs();
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
        if self.nvme.interface == crate::nvme::Interface::VirtioBlk {
            // What virtio-blk lacks: NVMe's arbitration classes, interrupt coalescing, its
            // write-family commands, zones, placement, metadata; ATS maps NVMe rings.
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
        if self.nvme.metadata_size.0 > 0 && ok(&["nvme.metadata_size", "nvme.lba_size"]) {
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
                for (_, path, job, _) in &jobs {
                    if [job.min_bs(), job.max_bs(), job.offset.0].iter().any(|s| !s.is_multiple_of(lba)) {
                        issues.push(&format!("{path}.bs"), units::format_size(job.min_bs()), format!("sizes and offsets must be whole blocks of nvme.lba_size = {}", self.nvme.lba_size));
                        break;
                    }
                }
            }
        }
        if let Some(z) = self.ftl.zone_size.filter(|_| !self.tenants.is_empty() && ok(&["ftl.zone_size", "tenants"])) {
            issues.push("ftl.zone_size", z, "zoned namespaces are modelled without [[tenants]]");
        }
        let mut seen = std::collections::HashSet::new();
        for (_, path, job, _) in &jobs {
            if !seen.insert(path.clone()) {
                continue;
            }
            let at = |key: &str| format!("{path}.{key}");
            let pids_ok = ok(&[&at("placement_ids"), "ftl.placement", "ftl.fdp_handles"]);
            if let Some(&pid) = job.placement_ids.iter().find(|&&p| pids_ok && (self.ftl.placement != crate::ftl::Placement::Fdp || p >= self.ftl.fdp_handles)) {
                issues.push(
                    &format!("{path}.placement_ids"),
                    pid,
                    format!("must name one of the drive's ftl.fdp_handles = {} reclaim unit handles (with ftl.placement = \"fdp\")", self.ftl.fdp_handles),
                );
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
                } else if job.rw.is_random() && job.blockalign.map_or(job.min_bs(), |a| a.0) % largest != 0 {
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
        // The capacity reads the NAND geometry and the LBA format: out of range, they overflow.
        let nand = self.media.kind == crate::media::MediaKind::Nand;
        if !ok(&["workload.offset", "workload.size", "workload.bs", "workload.bssplit", "media.capacity", "ftl.op_ratio", "ftl.mapping_unit", "nvme.lba_size", "nvme.metadata_size"])
            || (nand && !ok(crate::ftl::SPARE_RULE_KEYS))
        {
            return;
        }
        let cap = self.host_capacity();
        let mut seen = std::collections::HashSet::new();
        for (_, path, job, _) in &jobs {
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

    /// Bytes exported to the host: `media.capacity` for NVM; for NAND, the raw array less
    /// `ftl.op_ratio`, in whole mapping units.
    pub fn exported_capacity(&self) -> u64 {
        match self.media.kind {
            crate::media::MediaKind::Nvm => self.media.capacity.0,
            crate::media::MediaKind::Nand => {
                let g = crate::media::nand::Geometry::new(&self.media.nand, self.ftl.mapping_unit.0);
                crate::ftl::exported_units(&g, self.ftl.op_ratio) * self.ftl.mapping_unit.0
            }
        }
    }

    /// Bytes of one logical block as the host addresses it: 512, or with an extended LBA
    /// format (`nvme.extended_lba`) the block's data and its metadata.
    pub fn host_block(&self) -> u64 {
        if self.nvme.extended_lba && self.nvme.metadata_size.0 > 0 {
            self.nvme.lba_size.0 + self.nvme.metadata_size.0
        } else {
            512
        }
    }

    /// Bytes the host addresses: the exported capacity, counting each block's metadata with
    /// an extended LBA format.
    pub fn host_capacity(&self) -> u64 {
        let cap = self.exported_capacity();
        if self.host_block() == 512 {
            cap
        } else {
            cap / self.nvme.lba_size.0 * self.host_block()
        }
    }

    /// Bytes of the region each job of the base workload addresses.
    pub fn region_size(&self) -> u64 {
        self.region_size_of(&self.workload)
    }

    /// Bytes of the region a job addresses.
    pub fn region_size_of(&self, w: &WorkloadConfig) -> u64 {
        w.size.map_or_else(|| self.host_capacity().saturating_sub(w.offset.0), |s| s.0)
    }

    /// The resolved config as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_else(|e| format!("# cannot render config: {e}\n"))
    }

    /// A short stable hash of the resolved config (first 16 hex digits of SHA-256 of its TOML).
    pub fn hash(&self) -> String {
        use std::fmt::Write;
        let digest = Sha256::digest(self.to_toml().as_bytes());
        digest.iter().take(8).fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    }
}

/// Every key a config accepts, in declaration order, with what it takes, its default and its
/// documentation: the configuration reference.
pub fn reference() -> Vec<KeyDoc> {
    let mut out = vec![KeyDoc {
        key: "extends".into(),
        kind: "string".into(),
        default: String::new(),
        doc: "A preset name or a TOML file (relative to this one) loaded first; this config's keys override it, table by table.".into(),
    }];
    Config::keys("", &mut out);
    out
}

/// The largest config file read (the largest preset is a few KiB).
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// Resolves a preset name or a file path to a table with every `extends` applied.
fn resolve(name_or_path: &str, depth: usize) -> Result<Table> {
    if let Some(text) = presets::get(name_or_path) {
        return resolve_text(text, &format!("preset:{name_or_path}"), depth);
    }
    let path = Path::new(name_or_path);
    if path.extension().is_none() && !path.exists() {
        return Err(Error::config("extends", format!("{name_or_path:?}"), format!("no preset or file by that name (presets: {})", presets::names().join(", "))));
    }
    let io = |message: String| Error::Io { path: name_or_path.to_string(), message };
    // Only a regular file of sensible size: `extends = "/dev/zero"` would read forever.
    let meta = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
    if !meta.is_file() {
        return Err(io("not a regular file (a config is a TOML file)".into()));
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(io(format!("{} B is more than a config may be ({MAX_CONFIG_BYTES} B)", meta.len())));
    }
    let bytes = std::fs::read(path).map_err(|e| io(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = e.as_bytes()[..e.utf8_error().valid_up_to()].split(|&b| b == b'\n').count();
        Error::Config(vec![ConfigIssue { path: format!("{name_or_path}:{line}"), value: String::new(), rule: "invalid UTF-8: a config is TOML, in UTF-8".into() }])
    })?;
    resolve_text(&text, name_or_path, depth)
}

fn resolve_text(text: &str, origin: &str, depth: usize) -> Result<Table> {
    if depth > MAX_EXTENDS_DEPTH {
        return Err(Error::config(format!("{origin}: extends"), "", format!("more than {MAX_EXTENDS_DEPTH} levels of extends (a cycle?)")));
    }
    let mut table: Table = parse_toml(text, origin)?;
    let Some(base) = table.remove("extends") else {
        return Ok(table);
    };
    let Value::String(base_name) = &base else {
        return Err(Error::config(format!("{origin}: extends"), base.to_string(), "must be a preset name or a file path"));
    };
    // A relative path is relative to the file that names it.
    let base_ref = match Path::new(origin).parent() {
        Some(dir) if !origin.starts_with("preset:") && presets::get(base_name).is_none() && !Path::new(base_name).is_absolute() => dir.join(base_name).to_string_lossy().into_owned(),
        _ => base_name.clone(),
    };
    let mut merged = resolve(&base_ref, depth + 1)?;
    merge(&mut merged, table);
    Ok(merged)
}

/// Parses TOML text, reporting a syntax error as `origin:line:column`.
pub fn parse_toml(text: &str, origin: &str) -> Result<Table> {
    text.parse::<Table>().map_err(|e| {
        let pos = e.span().map(|s| line_col(text, s.start)).map_or(String::new(), |(l, c)| format!(":{l}:{c}"));
        Error::Config(vec![ConfigIssue { path: format!("{origin}{pos}"), value: String::new(), rule: format!("TOML syntax error: {}", e.message()) }])
    })
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Overlays `top` on `base`: tables merge key by key, anything else replaces.
pub fn merge(base: &mut Table, top: Table) {
    for (k, v) in top {
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(t)) => merge(b, t),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Sets a dotted key (`workload.bs`) from command-line text. The text is read as a TOML value
/// when it is one (`8`, `true`, `"x"`, `[1, 2]`) and as a string otherwise (`4k`, `randread`).
pub fn set_dotted(table: &mut Table, key: &str, text: &str) -> Result<()> {
    let value = format!("v = {text}").parse::<Table>().ok().and_then(|mut t| t.remove("v")).unwrap_or_else(|| Value::String(text.to_string()));
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(Error::config(key, text, "is not a dotted key such as workload.bs"));
    }
    let mut cur = table;
    for p in &parts[..parts.len() - 1] {
        let entry = cur.entry((*p).to_string()).or_insert_with(|| Value::Table(Table::new()));
        cur = match entry {
            Value::Table(t) => t,
            other => return Err(Error::config(key, other.to_string(), format!("`{p}` is a value, not a table"))),
        };
    }
    cur.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

/// Builds a config from a base (preset name, path, or none for `default`), a table of
/// overrides (applied over the base) and dotted `key=value` settings (applied last).
pub fn build(base: Option<&str>, overrides: Option<Table>, settings: &[(String, String)]) -> Result<Config> {
    let table = resolve(base.unwrap_or(presets::DEFAULT), 0)?;
    build_on(table, overrides, settings)
}

/// Like [`build`], on a base given as TOML text (for example a resolved config).
pub fn build_on_text(text: &str, origin: &str, overrides: Option<Table>, settings: &[(String, String)]) -> Result<Config> {
    build_on(resolve_text(text, origin, 0)?, overrides, settings)
}

fn build_on(mut table: Table, overrides: Option<Table>, settings: &[(String, String)]) -> Result<Config> {
    if let Some(mut o) = overrides {
        if let Some(ext) = o.remove("extends") {
            let Value::String(name) = &ext else {
                return Err(Error::config("extends", ext.to_string(), "must be a preset name or a file path"));
            };
            table = resolve(name, 0)?;
        }
        merge(&mut table, o);
    }
    for (k, v) in settings {
        set_dotted(&mut table, k, v)?;
    }
    Config::from_table(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_lists_every_key_once_with_its_default_and_doc() {
        let keys = reference();
        let find = |k: &str| keys.iter().find(|d| d.key == k).unwrap_or_else(|| panic!("{k} is not in the reference"));
        let mut names: Vec<&str> = keys.iter().map(|d| d.key.as_str()).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "a key is listed twice");
        for top in Config::FIELDS {
            assert_eq!(find(top).default, "", "{top} is a table or unset");
        }
        let lanes = find("pcie.lanes");
        assert_eq!(lanes.kind, "integer");
        assert_eq!(lanes.default, PcieConfig::default().lanes.to_string());
        assert!(!lanes.doc.is_empty());
        assert!(find("media.nand.page_size").kind.starts_with("size"));
        assert!(find("ctrl.mode").kind.starts_with("one of \"firmware\""));
        assert_eq!(find("tenants").kind, "array of tables");
        find("tenants[].weight");
        find("workload.jobs[].bs");
        // Every key the reference lists is one a config accepts.
        for d in keys.iter().filter(|d| !d.key.contains("[]") && d.kind != "table" && d.key != "extends" && !d.default.is_empty()) {
            let mut t = Table::new();
            set_dotted(&mut t, &d.key, &d.default).expect("dotted");
            let mut issues = Issues::default();
            Config::from_toml(&Value::Table(t), "", &mut issues);
            assert!(issues.0.iter().all(|i| i.path != d.key), "{} = {}: {:?}", d.key, d.default, issues.0);
        }
    }
}
