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
mod relations;
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
        /// The host: its CPUs' software costs, block layer, page cache, cgroup controller.
        host: HostConfig = HostConfig::default(),
        /// The PCIe link between the root port and the drive.
        pcie: PcieConfig = PcieConfig::default(),
        /// The NVMe interface: queue pairs, arbitration, interrupts, the LBA format.
        nvme: NvmeConfig = NvmeConfig::default(),
        /// The drive's controller: firmware cores or hardware engines, tags, data movers.
        ctrl: CtrlConfig = CtrlConfig::default(),
        /// The storage medium: byte-addressable NVM or NAND flash.
        media: MediaConfig = MediaConfig::default(),
        /// The flash translation layer (used with `media.kind = "nand"`).
        ftl: FtlConfig = FtlConfig::default(),
        /// PCIe ATS and the device's Address Translation Cache.
        ats: crate::ats::AtsConfig = crate::ats::AtsConfig::default(),
        /// What the host's jobs ask of the drive, in fio's vocabulary (or a replayed trace).
        workload: WorkloadConfig = WorkloadConfig::default(),
        /// The tenants sharing the drive (`[[tenants]]`); none: one tenant, `default`.
        tenants: Vec<crate::tenant::TenantConfig> = Vec::new(),
        /// What the run reports: percentiles, the time series, the steady-state check.
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

    /// The resolved config as JSON text: the tables, keys and values of [`Config::to_toml`]'s
    /// TOML, for readers that parse JSON faster than TOML (Python's `json` is native code, its
    /// `tomllib` is not: a third of a short `ssdlab run`'s start went to parsing the TOML).
    pub fn to_json(&self) -> Result<String> {
        let invariant = |e: &dyn std::fmt::Display| Error::Invariant { component: "config", detail: format!("cannot render the config as JSON: {e}") };
        let value = toml::Value::try_from(self).map_err(|e| invariant(&e))?;
        serde_json::to_string(&value).map_err(|e| invariant(&e))
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
    // A job's or a tenant's workload keys are `[workload]`'s, for that job or tenant alone.
    for prefix in ["workload.jobs[].", "tenants[].workload."] {
        for i in 0..out.len() {
            if let Some(name) = out[i].key.strip_prefix(prefix).filter(|_| out[i].doc.is_empty()) {
                let base = format!("workload.{name}");
                if out.iter().any(|k| k.key == base) {
                    out[i].doc = format!("As `{base}`, for this {} alone.", if prefix.starts_with("tenants") { "tenant's jobs" } else { "job" });
                }
            }
        }
    }
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
        for top in ["host", "pcie", "nvme", "ctrl", "media", "ftl", "ats", "workload", "stats"] {
            assert_eq!(find(top).kind, "table", "{top}");
            assert_eq!(find(top).default, "", "{top} is a table: its keys have the defaults");
        }
        assert_eq!(find("description").default, "\"\"");
        assert_eq!(find("workload.jobs[].bs").doc, "As `workload.bs`, for this job alone.");
        let undocumented: Vec<&str> = keys.iter().filter(|k| k.doc.is_empty()).map(|k| k.key.as_str()).collect();
        assert!(undocumented.is_empty(), "keys without a doc comment: {undocumented:?}");
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
