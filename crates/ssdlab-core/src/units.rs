//! Quantities with units, as users write them in configs: sizes (`4KiB`, `4k`, `1.5GB`),
//! times (`48ns`, `1.5us`), data rates (`3.2GB/s`), frequencies (`800MHz`) and transfer
//! rates (`16GT/s`). Each parses from a TOML string (or, for sizes and counts, an integer)
//! and prints back in a form that parses to the same value.
//!
//! Size prefixes follow IEC and SI: `KiB`/`MiB`/`GiB`/`TiB` are powers of 1024 and
//! `kB`/`KB`/`MB`/`GB`/`TB` powers of 1000. Bare `k`/`M`/`G`/`T` (fio's habit, as in `bs=4k`)
//! are powers of 1024, as in fio's default `kb_base=1024`.
//!
//! fio job files follow fio's own, case-insensitive reading instead ([`parse_fio_size`],
//! [`parse_fio_time`]).

use std::fmt;

use serde::{Serialize, Serializer};

use crate::sim::{SimDuration, PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US};

/// Splits `"1.5 GiB"` into `(1.5, "GiB")`.
fn split_number(s: &str) -> Result<(f64, &str), String> {
    let s = s.trim();
    let end = s.char_indices().find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == '_')).map_or(s.len(), |(i, _)| i);
    let (num, unit) = s.split_at(end);
    if num.is_empty() {
        return Err(format!("expected a number before the unit in {s:?}"));
    }
    let num = num.replace('_', "");
    let value: f64 = num.parse().map_err(|_| format!("{num:?} is not a number"))?;
    if !value.is_finite() {
        return Err("must be finite".into());
    }
    Ok((value, unit.trim()))
}

fn to_integer(value: f64, what: &str) -> Result<u64, String> {
    if value < 0.0 {
        return Err(format!("{what} must not be negative"));
    }
    if value > u64::MAX as f64 / 2.0 {
        return Err(format!("{what} is too large"));
    }
    let r = value.round();
    if (value - r).abs() > 1e-6 * value.max(1.0) {
        return Err(format!("{what} must be a whole number of the base unit (got {value})"));
    }
    Ok(r as u64)
}

/// Parses a byte size such as `4096`, `4k`, `4KiB`, `1.5GB`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (v, unit) = split_number(s)?;
    let mult: f64 = match unit {
        "" | "B" | "b" => 1.0,
        "k" | "K" | "KiB" | "kiB" => 1024.0,
        "M" | "m" | "MiB" => 1024f64.powi(2),
        "G" | "g" | "GiB" => 1024f64.powi(3),
        "T" | "t" | "TiB" => 1024f64.powi(4),
        "P" | "p" | "PiB" => 1024f64.powi(5),
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "PB" => 1e15,
        _ => return Err(format!("unknown size unit {unit:?} (use B, KiB, MiB, GiB, TiB, k, M, G, kB, MB, GB, TB)")),
    };
    to_integer(v * mult, "a size in bytes")
}

/// Parses a byte size as ssdlab reads fio job files: fio's default `kb_base=1024`, where a
/// prefix `k`, `m`, `g`, `t` or `p` in either case, alone or followed by `B` or `iB`, is a power
/// of 1024. `4096`, `4k`, `4K`, `4kB`, `4KB` and `4KiB` are all 4096 bytes. (fio itself, in this
/// compatibility mode, reads the IEC forms such as `4KiB` as powers of 1000; ssdlab reads every
/// spelling of a prefix alike.)
pub fn parse_fio_size(s: &str) -> Result<u64, String> {
    let (v, unit) = split_number(s)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => Some(1),
        u => [("k", 1u64 << 10), ("m", 1 << 20), ("g", 1 << 30), ("t", 1 << 40), ("p", 1 << 50)]
            .into_iter()
            .find(|(prefix, _)| u.strip_prefix(prefix).is_some_and(|tail| matches!(tail, "" | "b" | "ib")))
            .map(|(_, mult)| mult),
    };
    let Some(mult) = mult else {
        return Err(format!("unknown size unit {unit:?} (use k, m, g, t or p, alone or followed by B or iB: powers of 1024 in job files)"));
    };
    to_integer(v * mult as f64, "a size in bytes")
}

/// Formats a byte count with the largest IEC unit that is exact (`4KiB`, `1536B`).
pub fn format_size(bytes: u64) -> String {
    for (unit, scale) in [("PiB", 1u64 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= scale && bytes.is_multiple_of(scale) {
            return format!("{}{unit}", bytes / scale);
        }
    }
    format!("{bytes}B")
}

/// Parses a time such as `48ns`, `1.5us`, `2ms`, `0`. A unit is required for non-zero values.
#[allow(clippy::float_cmp)] // an exact zero is the one unitless time
pub fn parse_time(s: &str) -> Result<SimDuration, String> {
    let (v, unit) = split_number(s)?;
    let scale = match unit {
        "ps" => 1,
        "ns" => PS_PER_NS,
        "us" | "µs" => PS_PER_US,
        "ms" => PS_PER_MS,
        "s" => PS_PER_S,
        "" if v == 0.0 => 1,
        "" => return Err("a time needs a unit: ps, ns, us, ms or s".into()),
        _ => return Err(format!("unknown time unit {unit:?} (use ps, ns, us, ms or s)")),
    };
    to_integer(v * scale as f64, "a time in picoseconds").map(SimDuration::from_ps)
}

/// Parses a time as fio job files write it: a bare number counts in `bare` units (fio: seconds
/// for `runtime` and `ramp_time`, microseconds for `thinktime`); the suffixes are `us`/`usec`,
/// `ms`/`msec`, `s`/`sec`, `m`/`min` (minutes), `h` and `d`, in either case.
pub fn parse_fio_time(s: &str, bare: SimDuration) -> Result<SimDuration, String> {
    let (v, unit) = split_number(s)?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" => bare.as_ps(),
        "us" | "usec" => PS_PER_US,
        "ms" | "msec" => PS_PER_MS,
        "s" | "sec" => PS_PER_S,
        "m" | "min" => 60 * PS_PER_S,
        "h" => 3_600 * PS_PER_S,
        "d" => 86_400 * PS_PER_S,
        _ => return Err(format!("unknown time unit {unit:?} (use us, ms, s, m, h or d)")),
    };
    to_integer(v * scale as f64, "a time in picoseconds").map(SimDuration::from_ps)
}

/// Parses a data rate such as `3.2GB/s`, `500MiB/s`.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let (v, unit) = split_number(s)?;
    let Some(prefix) = unit.strip_suffix("/s") else {
        return Err("a data rate needs a unit such as MB/s, GB/s, MiB/s or GiB/s".into());
    };
    let mult = match prefix {
        "B" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024f64.powi(2),
        "GiB" => 1024f64.powi(3),
        "TiB" => 1024f64.powi(4),
        _ => return Err(format!("unknown rate unit {unit:?} (use B/s, kB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s)")),
    };
    Ok(v * mult)
}

/// Parses a frequency such as `250MHz`, `1.2GHz`.
pub fn parse_freq(s: &str) -> Result<u64, String> {
    let (v, unit) = split_number(s)?;
    let mult = match unit {
        "Hz" => 1.0,
        "kHz" => 1e3,
        "MHz" => 1e6,
        "GHz" => 1e9,
        _ => return Err(format!("unknown frequency unit {unit:?} (use Hz, kHz, MHz or GHz)")),
    };
    to_integer(v * mult, "a frequency in Hz")
}

/// Parses a serial transfer rate such as `16GT/s`.
pub fn parse_transfer_rate(s: &str) -> Result<f64, String> {
    let (v, unit) = split_number(s)?;
    let mult = match unit {
        "GT/s" => 1e9,
        "MT/s" => 1e6,
        _ => return Err(format!("unknown transfer-rate unit {unit:?} (use GT/s or MT/s)")),
    };
    Ok(v * mult)
}

/// `v` in the largest of `units` that shows it exactly (to six decimals), so that the text
/// reads back as the same value.
fn format_decimal(v: f64, units: &[(&str, f64)]) -> String {
    for (i, &(unit, scale)) in units.iter().enumerate() {
        if v >= scale {
            let text = trim_float(v / scale);
            let exact = text.parse::<f64>().is_ok_and(|x| (x * scale - v).abs() <= v.abs() * 1e-15);
            if exact || i + 1 == units.len() {
                return format!("{text}{unit}");
            }
        }
    }
    format!("{}{}", trim_float(v / units.last().map_or(1.0, |u| u.1)), units.last().map_or("", |u| u.0))
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A byte count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(self.0))
    }
}

/// A data rate in bytes per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Bandwidth(pub f64);

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_decimal(self.0, &[("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3), ("B/s", 1.0)]))
    }
}

/// A clock frequency in hertz.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Frequency(pub u64);

impl fmt::Display for Frequency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_decimal(self.0 as f64, &[("GHz", 1e9), ("MHz", 1e6), ("kHz", 1e3), ("Hz", 1.0)]))
    }
}

/// A serial-link transfer rate in transfers (bits per lane) per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct TransferRate(pub f64);

impl fmt::Display for TransferRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_decimal(self.0, &[("GT/s", 1e9), ("MT/s", 1e6)]))
    }
}

macro_rules! serialize_as_display {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )*};
}
serialize_as_display!(Bytes, Bandwidth, Frequency, TransferRate, SimDuration);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("4 KiB").unwrap(), 4096);
        assert_eq!(parse_size("4kB").unwrap(), 4000);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("2TB").unwrap(), 2_000_000_000_000);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert!(parse_size("4 furlongs").unwrap_err().contains("unknown size unit"));
        assert!(parse_size("0.3B").is_err());
        assert!(parse_size("KiB").is_err());
        assert!(parse_size("-4k").is_err());
    }

    #[test]
    fn size_round_trip() {
        for b in [0, 1, 512, 4096, 1536, 1 << 30, 3 << 40, 4_000_000] {
            assert_eq!(parse_size(&format_size(b)).unwrap(), b);
        }
        assert_eq!(format_size(4096), "4KiB");
    }

    #[test]
    fn fio_sizes_are_powers_of_1024_in_every_spelling() {
        for text in ["4096", "4096B", "4096b", "4k", "4K", "4kb", "4kB", "4KB", "4KiB", "4kib", "4 KiB"] {
            assert_eq!(parse_fio_size(text).unwrap(), 4096, "{text}");
        }
        assert_eq!(parse_fio_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_fio_size("1MB").unwrap(), 1 << 20);
        assert_eq!(parse_fio_size("1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_fio_size("2TiB").unwrap(), 2 << 40);
        assert_eq!(parse_fio_size("1p").unwrap(), 1 << 50);
        assert_eq!(parse_fio_size("0").unwrap(), 0);
        for bad in ["10q", "4ib", "4kk", "4kbb", "4Bk", "k", "", "-4k", "0.5", "4µ"] {
            assert!(parse_fio_size(bad).is_err(), "{bad:?}");
        }
        assert!(parse_fio_size("10q").unwrap_err().contains("unknown size unit \"q\""));
        // The config convention differs for SI spellings; bare prefixes agree.
        assert_eq!(parse_size("4kB").unwrap(), 4000);
        assert_eq!(parse_size("4k").unwrap(), parse_fio_size("4k").unwrap());
    }

    #[test]
    fn fio_times_count_bare_numbers_in_the_given_unit() {
        let s = SimDuration(PS_PER_S);
        let us = SimDuration::from_us(1);
        assert_eq!(parse_fio_time("60", s).unwrap(), SimDuration(60 * PS_PER_S));
        assert_eq!(parse_fio_time("1.5", s).unwrap(), SimDuration(1_500 * PS_PER_MS));
        assert_eq!(parse_fio_time("100", us).unwrap(), SimDuration::from_us(100));
        assert_eq!(parse_fio_time("100us", s).unwrap(), SimDuration::from_us(100));
        assert_eq!(parse_fio_time("10USEC", s).unwrap(), SimDuration::from_us(10));
        assert_eq!(parse_fio_time("250ms", us).unwrap(), SimDuration(250 * PS_PER_MS));
        assert_eq!(parse_fio_time("2msec", us).unwrap(), SimDuration(2 * PS_PER_MS));
        assert_eq!(parse_fio_time("30s", us).unwrap(), SimDuration(30 * PS_PER_S));
        assert_eq!(parse_fio_time("30sec", us).unwrap(), SimDuration(30 * PS_PER_S));
        assert_eq!(parse_fio_time("2m", us).unwrap(), SimDuration(120 * PS_PER_S));
        assert_eq!(parse_fio_time("2min", us).unwrap(), SimDuration(120 * PS_PER_S));
        assert_eq!(parse_fio_time("1h", us).unwrap(), SimDuration(3_600 * PS_PER_S));
        assert_eq!(parse_fio_time("1d", us).unwrap(), SimDuration(86_400 * PS_PER_S));
        for bad in ["5 fortnights", "ns", "", "-1", "1e3", "1000d"] {
            assert!(parse_fio_time(bad, s).is_err(), "{bad:?}");
        }
        assert!(parse_fio_time("5x", s).unwrap_err().contains("unknown time unit \"x\""));
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("48ns").unwrap(), SimDuration::from_ns(48));
        assert_eq!(parse_time("1.5us").unwrap(), SimDuration(1_500_000));
        assert_eq!(parse_time("2ms").unwrap(), SimDuration(2 * PS_PER_MS));
        assert_eq!(parse_time("10ps").unwrap(), SimDuration(10));
        assert_eq!(parse_time("0").unwrap(), SimDuration(0));
        assert!(parse_time("5").unwrap_err().contains("needs a unit"));
        assert!(parse_time("5 fortnights").is_err());
        for d in [SimDuration(1_500_000), SimDuration(48_000), SimDuration(7), SimDuration(3 * PS_PER_S)] {
            assert_eq!(parse_time(&d.to_string()).unwrap(), d);
        }
    }

    #[test]
    fn rates_and_frequencies() {
        assert!((parse_rate("3.2GB/s").unwrap() - 3.2e9).abs() < 1.0);
        assert!((parse_rate("1MiB/s").unwrap() - 1_048_576.0).abs() < 1e-9);
        assert!(parse_rate("3.2GB").is_err());
        assert_eq!(parse_freq("250MHz").unwrap(), 250_000_000);
        assert_eq!(parse_freq("1.2GHz").unwrap(), 1_200_000_000);
        assert!((parse_transfer_rate("16GT/s").unwrap() - 16e9).abs() < 1.0);
        assert_eq!(Bandwidth(3.2e9).to_string(), "3.2GB/s");
        assert_eq!(Frequency(250_000_000).to_string(), "250MHz");
        assert!((parse_rate(&Bandwidth(7.5e9).to_string()).unwrap() - 7.5e9).abs() < 1e-3);
    }
}
