//! fio's value syntaxes in a workload's keys: `rw`, `random_distribution`, `bs` and
//! `bssplit`/`bsrange`, per-direction rates and IOPS, and `write_mode`; each parses from and
//! prints back to fio's own spelling.

use std::fmt;

use serde::{Serialize, Serializer};
use toml::Value;

use crate::schema::{FromToml, IsNone, Issues};
use crate::units::{format_size, parse_size};

/// fio's `rw`: direction and pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rw {
    Read,
    Write,
    RandRead,
    RandWrite,
    RandRw,
    /// Sequential mixed reads and writes (`rw` or `readwrite`).
    ReadWrite,
    /// Sequential trims (NVMe Dataset Management, deallocate).
    Trim,
    /// Random trims.
    RandTrim,
    /// Sequential trims, each followed by a write of the block it trimmed (fio's `trimwrite`).
    TrimWrite,
    /// Random trims, each followed by a write of the block it trimmed.
    RandTrimWrite,
}

impl Rw {
    pub const NAMES: &'static [&'static str] = &["read", "write", "randread", "randwrite", "randrw", "rw", "readwrite", "trim", "randtrim", "trimwrite", "randtrimwrite"];

    pub fn as_str(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
            Rw::RandRw => "randrw",
            Rw::ReadWrite => "rw",
            Rw::Trim => "trim",
            Rw::RandTrim => "randtrim",
            Rw::TrimWrite => "trimwrite",
            Rw::RandTrimWrite => "randtrimwrite",
        }
    }

    pub fn is_random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim | Rw::RandTrimWrite)
    }

    /// Whether the job issues trims.
    pub fn trims(self) -> bool {
        matches!(self, Rw::Trim | Rw::RandTrim | Rw::TrimWrite | Rw::RandTrimWrite)
    }

    /// Percentage of reads given fio's `rwmixread`.
    pub fn read_percent(self, rwmixread: u32) -> u32 {
        match self {
            Rw::Read | Rw::RandRead => 100,
            Rw::Write | Rw::RandWrite | Rw::Trim | Rw::RandTrim | Rw::TrimWrite | Rw::RandTrimWrite => 0,
            Rw::RandRw | Rw::ReadWrite => rwmixread,
        }
    }
}

impl std::str::FromStr for Rw {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "read" => Rw::Read,
            "write" => Rw::Write,
            "randread" => Rw::RandRead,
            "randwrite" => Rw::RandWrite,
            "randrw" => Rw::RandRw,
            "rw" | "readwrite" => Rw::ReadWrite,
            "trim" => Rw::Trim,
            "randtrim" => Rw::RandTrim,
            "trimwrite" => Rw::TrimWrite,
            "randtrimwrite" => Rw::RandTrimWrite,
            _ => return Err(format!("must be one of: {}", Rw::NAMES.join(", "))),
        })
    }
}

/// A random-offset distribution in fio's spelling.
#[derive(Clone, Debug, PartialEq)]
pub enum Distribution {
    /// Uniform over the region.
    Random,
    /// Zipf with exponent θ > 0 (`zipf:1.2`).
    Zipf(f64),
    /// fio's Pareto with power h in (0, 1) (`pareto:0.2`).
    Pareto(f64),
    /// fio's zoned: `(access %, region %)` in order from the region's start, each zone uniform
    /// within (`zoned:50/5:30/15:20/80`: half the I/Os in the first 5 %).
    Zoned(Vec<(u32, u32)>),
    /// fio's sequence (`sequence:2,0,1`): the blocks of the list in turn, repeated (with
    /// `random_sequence_stride`, each repetition a list's length further on).
    Sequence(Vec<u64>),
}

impl std::str::FromStr for Distribution {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let num = |t: &str| t.parse::<f64>().map_err(|_| format!("{t:?} is not a number"));
        match s.split_once(':') {
            None if s == "random" => Ok(Distribution::Random),
            Some(("zipf", t)) => {
                let v = num(t)?;
                if v > 0.0 && v.is_finite() {
                    Ok(Distribution::Zipf(v))
                } else {
                    Err("zipf:θ needs θ > 0".into())
                }
            }
            Some(("pareto", t)) => {
                let v = num(t)?;
                if v > 0.0 && v < 1.0 {
                    Ok(Distribution::Pareto(v))
                } else {
                    Err("pareto:h needs 0 < h < 1".into())
                }
            }
            Some(("sequence", t)) => {
                let blocks: Vec<u64> = t.split(',').map(|b| b.trim().parse::<u64>().map_err(|_| format!("sequence: {b:?} is not a block number"))).collect::<Result<_, _>>()?;
                if blocks.is_empty() || blocks.len() > 64 {
                    return Err("sequence: give 1 to 64 block numbers (fio's FIO_SEQ_MAX)".into());
                }
                Ok(Distribution::Sequence(blocks))
            }
            Some(("zoned", t)) => {
                if t.contains(',') {
                    return Err("zoned: separate zones for writes (after a comma) are not modelled; give one list".into());
                }
                let items: Vec<&str> = t.split(':').map(str::trim).filter(|i| !i.is_empty()).collect();
                let mut zones = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let (a, r) = item.split_once('/').ok_or_else(|| format!("zoned: {item:?} should be access%/region%"))?;
                    let pct = |x: &str| x.trim().parse::<u32>().map_err(|_| format!("zoned: {x:?} is not a whole percentage"));
                    // As in fio, the last zone's region may be left empty: the rest of it.
                    let region = if r.trim().is_empty() && i + 1 == items.len() { 100u32.saturating_sub(zones.iter().map(|z: &(u32, u32)| z.1).sum()) } else { pct(r)? };
                    zones.push((pct(a)?, region));
                }
                let (access, region): (u32, u32) = zones.iter().fold((0, 0), |(a, r), z| (a + z.0, r + z.1));
                if zones.is_empty() || access != 100 || region != 100 || zones.iter().any(|z| z.1 == 0 && z.0 > 0) {
                    return Err(format!("zoned: access and region percentages must each add up to 100 (they add up to {access} and {region}), and a zone with accesses needs some region"));
                }
                Ok(Distribution::Zoned(zones))
            }
            _ => Err("must be random, zipf:θ, pareto:h or zoned:access%/region%:…".into()),
        }
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Distribution::Random => f.write_str("random"),
            Distribution::Zipf(t) => write!(f, "zipf:{t}"),
            Distribution::Pareto(h) => write!(f, "pareto:{h}"),
            Distribution::Zoned(z) => write!(f, "zoned:{}", z.iter().map(|(a, r)| format!("{a}/{r}")).collect::<Vec<_>>().join(":")),
            Distribution::Sequence(b) => write!(f, "sequence:{}", b.iter().map(u64::to_string).collect::<Vec<_>>().join(",")),
        }
    }
}

/// fio's `bs`: one size for all, or `read,write[,trim]` (an empty or missing value takes the
/// one before it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockSizes {
    pub read: u64,
    pub write: u64,
    pub trim: u64,
}

impl std::str::FromStr for BlockSizes {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = s.split(',').map(str::trim);
        let read = parse_size(parts.next().unwrap_or_default())?;
        let write = match parts.next() {
            Some("") | None => read,
            Some(w) => parse_size(w)?,
        };
        let trim = match parts.next() {
            Some("") | None => write,
            Some(t) => parse_size(t)?,
        };
        if parts.next().is_some() {
            return Err("expected at most read,write,trim sizes".into());
        }
        Ok(BlockSizes { read, write, trim })
    }
}

impl fmt::Display for BlockSizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.read == self.write && self.write == self.trim {
            f.write_str(&format_size(self.read))
        } else if self.write == self.trim {
            write!(f, "{},{}", format_size(self.read), format_size(self.write))
        } else {
            write!(f, "{},{},{}", format_size(self.read), format_size(self.write), format_size(self.trim))
        }
    }
}

/// fio's `bsrange`: `min-max`, or `min-max,min-max` for reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsRange {
    pub read: (u64, u64),
    pub write: (u64, u64),
}

impl std::str::FromStr for BsRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let one = |t: &str| -> Result<(u64, u64), String> {
            let (a, b) = t.trim().split_once('-').ok_or_else(|| format!("{t:?} should be min-max"))?;
            let (a, b) = (parse_size(a)?, parse_size(b)?);
            if a > b {
                return Err(format!("{t:?}: the minimum is above the maximum"));
            }
            Ok((a, b))
        };
        let mut parts = s.split(',');
        let read = one(parts.next().unwrap_or_default())?;
        let write = match parts.next() {
            Some(w) if !w.trim().is_empty() => one(w)?,
            _ => read,
        };
        if parts.next().is_some() {
            return Err("expected at most read,write ranges".into());
        }
        Ok(BsRange { read, write })
    }
}

/// A value per direction in fio's `read,write` form: `"X"` for both, `"X,Y"`, `"X,"` (reads
/// only) or `",Y"` (writes only); a missing value is 0 (none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PerDirection<const RATE: bool> {
    pub read: u64,
    pub write: u64,
}

/// Bytes per second per direction (`"10MiB/s,5MiB/s"`).
pub type Rates = PerDirection<true>;
/// I/Os per second per direction (`"100,50"`).
pub type IopsPair = PerDirection<false>;

impl<const RATE: bool> std::str::FromStr for PerDirection<RATE> {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let one = |t: &str| -> Result<u64, String> {
            let t = t.trim();
            if t.is_empty() {
                return Ok(0);
            }
            if RATE {
                let v = crate::units::parse_rate(t)?;
                if !(v.is_finite() && (0.0..1e18).contains(&v)) {
                    return Err(format!("{t:?} is not a rate between 0 and 1 EB/s"));
                }
                Ok(v.round() as u64)
            } else {
                t.parse::<u64>().map_err(|_| format!("{t:?} is not a whole number of I/Os per second"))
            }
        };
        let parts: Vec<&str> = s.split(',').collect();
        match parts.as_slice() {
            [both] => Ok(PerDirection { read: one(both)?, write: one(both)? }),
            [r, w] => Ok(PerDirection { read: one(r)?, write: one(w)? }),
            _ => Err("expected a value, or read,write values".into()),
        }
    }
}

impl<const RATE: bool> fmt::Display for PerDirection<RATE> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one = |v: u64| {
            if v == 0 {
                String::new()
            } else if RATE {
                format!("{v}B/s")
            } else {
                v.to_string()
            }
        };
        if self.read == self.write {
            f.write_str(&one(self.read))
        } else {
            write!(f, "{},{}", one(self.read), one(self.write))
        }
    }
}

impl fmt::Display for BsRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one = |r: (u64, u64)| format!("{}-{}", format_size(r.0), format_size(r.1));
        if self.read == self.write {
            f.write_str(&one(self.read))
        } else {
            write!(f, "{},{}", one(self.read), one(self.write))
        }
    }
}

/// The commands a job's writes are, with their shares (fio's `write_mode`, io_uring_cmd):
/// `write`, `zeroes`, `uncor`, `verify` or `compare`, alone or as `write/60:zeroes/40`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteMix(pub Vec<(crate::io::Kind, u32)>);

impl std::str::FromStr for WriteMix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let kind = |k: &str| {
            crate::io::Kind::NAMES.iter().find(|(_, n)| *n == k.trim()).map(|(kind, _)| *kind).ok_or_else(|| {
                let names: Vec<&str> = crate::io::Kind::NAMES.iter().map(|(_, n)| *n).collect();
                format!("{:?} is not {}", k.trim(), names.join(", "))
            })
        };
        let items: Vec<&str> = s.split(':').map(str::trim).filter(|i| !i.is_empty()).collect();
        if let [one] = items.as_slice() {
            if !one.contains('/') {
                return Ok(WriteMix(vec![(kind(one)?, 100)]));
            }
        }
        let mut parts: Vec<(crate::io::Kind, Option<u32>)> = Vec::new();
        for item in &items {
            let (k, p) = item.split_once('/').unwrap_or((item, ""));
            let share = if p.trim().is_empty() { None } else { Some(p.trim().parse::<u32>().map_err(|_| format!("{p:?} is not a whole percentage"))?) };
            parts.push((kind(k)?, share));
        }
        // As fio: entries without a share split what the others leave.
        let given: u32 = parts.iter().filter_map(|e| e.1).sum();
        let blanks = parts.iter().filter(|e| e.1.is_none()).count() as u32;
        if parts.is_empty() || given > 100 || (blanks == 0 && given != 100) {
            return Err(format!("shares must add up to 100 (they add up to {given})"));
        }
        let (each, mut extra) = (100 - given).checked_div(blanks).map_or((0, 0), |each| (each, (100 - given) % blanks));
        let out = parts
            .into_iter()
            .map(|(k, p)| {
                let share = p.unwrap_or_else(|| {
                    let one = u32::from(extra > 0);
                    extra -= one;
                    each + one
                });
                (k, share)
            })
            .collect();
        Ok(WriteMix(out))
    }
}

impl fmt::Display for WriteMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, p)| format!("{}/{p}", k.name())).collect();
        f.write_str(&parts.join(":"))
    }
}

/// fio's `bssplit`: `size/percent:size/percent…`, optionally `,` and a separate write list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BsSplit {
    pub read: Vec<(u64, u32)>,
    pub write: Vec<(u64, u32)>,
}

fn parse_split_list(s: &str) -> Result<Vec<(u64, u32)>, String> {
    let mut out = Vec::new();
    for item in s.split(':').map(str::trim).filter(|i| !i.is_empty()) {
        let (size, pct) = item.split_once('/').ok_or_else(|| format!("{item:?} should be size/percent"))?;
        let pct: u32 = pct.trim().parse().map_err(|_| format!("{pct:?} is not a whole percentage"))?;
        out.push((parse_size(size)?, pct));
    }
    if out.is_empty() {
        return Err("needs at least one size/percent entry".into());
    }
    let total: u32 = out.iter().map(|e| e.1).sum();
    if total != 100 {
        return Err(format!("percentages must add up to 100 (they add up to {total})"));
    }
    Ok(out)
}

impl std::str::FromStr for BsSplit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (r, w) = match s.split_once(',') {
            Some((r, w)) => (r, Some(w)),
            None => (s, None),
        };
        let read = parse_split_list(r)?;
        let write = match w {
            Some(w) if !w.trim().is_empty() => parse_split_list(w)?,
            _ => read.clone(),
        };
        Ok(BsSplit { read, write })
    }
}

impl fmt::Display for BsSplit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |l: &[(u64, u32)]| l.iter().map(|(s, p)| format!("{}/{p}", format_size(*s))).collect::<Vec<_>>().join(":");
        if self.read == self.write {
            f.write_str(&list(&self.read))
        } else {
            write!(f, "{},{}", list(&self.read), list(&self.write))
        }
    }
}

macro_rules! string_typed {
    ($($t:ty: $want:literal),*) => {$(
        impl FromToml for $t {
            fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self> {
                let text = match v {
                    Value::String(s) => s.clone(),
                    Value::Integer(i) => i.to_string(),
                    _ => {
                        issues.push(path, v, format!("must be {}, not a {}", $want, v.type_str()));
                        return None;
                    }
                };
                match text.parse() {
                    Ok(x) => Some(x),
                    Err(e) => {
                        issues.push(path, v, e);
                        None
                    }
                }
            }
        }
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl IsNone for $t {}
        impl crate::schema::Describe for $t {
            fn kind() -> String {
                $want.into()
            }
        }
    )*};
}

impl fmt::Display for Rw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

string_typed!(
    Rw: "a string such as \"randread\"",
    Distribution: "a string such as \"zipf:1.2\"",
    BlockSizes: "a size such as \"4k\" or \"4k,64k\"",
    BsSplit: "a string such as \"4k/50:64k/50\"",
    BsRange: "a string such as \"4k-64k\" or \"4k-16k,8k-64k\"",
    WriteMix: "a string such as \"zeroes\" or \"write/60:zeroes/40\"",
    Rates: "a rate such as \"10MiB/s\", or read,write rates such as \"10MiB/s,5MiB/s\"",
    IopsPair: "a number of I/Os per second, or read,write numbers such as \"100,50\""
);
