//! Simulated time as integer picoseconds.
//!
//! `SimTime` is an instant since the start of a run, `SimDuration` a span. Both are `u64`
//! picoseconds: 2^64 ps is about 213 days of simulated time, far beyond any run, and integer
//! arithmetic keeps every result exact and bit-for-bit reproducible. Units appear only at the
//! edges (config parsing, reports).
//!
//! Time cannot overflow unnoticed. Each time a config value gives (a latency, or cycles at a
//! clock) is at most [`MAX_PARAM`], checked when the config is validated, so that sums of
//! many of them still fit. Arithmetic saturates instead of wrapping, and the event loop stops
//! with [`crate::Error::TimeOverflow`] when an event falls at or past [`LIMIT`]: a saturated
//! time is never reported as a result.

use std::fmt;
use std::ops::{Add, AddAssign, Mul, Sub};

/// Picoseconds per nanosecond, microsecond, millisecond and second.
pub const PS_PER_NS: u64 = 1_000;
pub const PS_PER_US: u64 = 1_000_000;
pub const PS_PER_MS: u64 = 1_000_000_000;
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// The longest span one config value may give: 10^6 s (11.6 days), 1/18 of what 64 bits hold.
pub const MAX_PARAM: SimDuration = SimDuration(1_000_000 * PS_PER_S);

/// The latest instant a run may reach: 2^63 ps (107 days). An event at or past it means that
/// some arithmetic on time saturated.
pub const LIMIT: SimTime = SimTime(1 << 63);

/// An instant of simulated time, in picoseconds since the run started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);

    /// The span from `earlier` to `self`, or zero if `earlier` is later.
    #[inline]
    pub fn since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);

    pub const fn from_ps(ps: u64) -> Self {
        SimDuration(ps)
    }
    pub const fn from_ns(ns: u64) -> Self {
        SimDuration(ns * PS_PER_NS)
    }
    pub const fn from_us(us: u64) -> Self {
        SimDuration(us * PS_PER_US)
    }
    pub const fn from_ms(ms: u64) -> Self {
        SimDuration(ms * 1000 * PS_PER_US)
    }
    /// `n` cycles of a clock at `hz` hertz, rounded to the nearest picosecond.
    pub fn cycles(n: u64, hz: u64) -> Self {
        if hz == 0 {
            return SimDuration::ZERO;
        }
        let ps = (u128::from(n) * u128::from(PS_PER_S) + u128::from(hz) / 2) / u128::from(hz);
        SimDuration(u64::try_from(ps).unwrap_or(u64::MAX))
    }
    pub fn as_ps(self) -> u64 {
        self.0
    }
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / PS_PER_NS as f64
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / PS_PER_US as f64
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
}

/// A clock rate, for turning cycle counts into durations on a hot path: where a cycle is a
/// whole number of picoseconds (1 GHz, 250 MHz, ...) the conversion is a multiplication, not
/// [`SimDuration::cycles`]'s division; the results are the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    hz: u64,
    /// Picoseconds per cycle when exact, else 0.
    ps_per_cycle: u64,
}

impl Clock {
    pub fn new(hz: u64) -> Self {
        let exact = hz > 0 && PS_PER_S.is_multiple_of(hz);
        Clock { hz, ps_per_cycle: if exact { PS_PER_S / hz } else { 0 } }
    }

    /// `n` cycles of this clock (as [`SimDuration::cycles`]).
    #[inline]
    pub fn cycles(self, n: u64) -> SimDuration {
        if self.ps_per_cycle > 0 {
            SimDuration(n.saturating_mul(self.ps_per_cycle))
        } else {
            SimDuration::cycles(n, self.hz)
        }
    }
}

/// A transfer rate in picoseconds per byte, for turning byte counts into durations on a hot
/// path: `bytes × ps_per_byte` rounded to the nearest picosecond. Where the rate is a whole
/// number of picoseconds over a small power of two (an 800 MB/s channel: 1250 ps a byte; a
/// 16 GB/s bus: 125/2) and the count is below 2^33, the product is integer arithmetic; the
/// results are the same, as the float product of such numbers is exact (below 2^53) and its
/// rounding half away from zero is the shift below.
///
/// One word, so that it costs its owners no more room than the `f64` it stands for: such a
/// rate is kept as its numerator and the power of two with the top bit set, any other as its
/// `f64` bits (a rate whose sign bit is set, negative or a NaN, gives 0 ps for every count, as
/// +0 does, and is kept as +0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByteRate(u64);

impl ByteRate {
    /// Marks an exact rate; its power of two sits in the bits from `SHIFT`, its numerator below.
    const EXACT: u64 = 1 << 63;
    const SHIFT: u32 = 56;
    /// The largest numerator taken exactly, the largest power of two (2^`POW_MAX`) under it,
    /// and the largest count: the product of count and numerator stays below 2^53.
    const NUM_MAX: u64 = 1 << 20;
    /// The bits that hold an exact rate's numerator.
    const NUM_MASK: u64 = Self::NUM_MAX * 2 - 1;
    const POW_MAX: u32 = 8;
    const BYTES_MAX: u64 = 1 << 33;

    pub fn new(ps_per_byte: f64) -> Self {
        for k in 0..=Self::POW_MAX {
            // Exact: a scaling by a power of two.
            let num = ps_per_byte * f64::from(1u32 << k);
            if (1.0..=Self::NUM_MAX as f64).contains(&num) && num.fract() == 0.0 {
                return ByteRate(Self::EXACT | u64::from(k) << Self::SHIFT | num as u64);
            }
        }
        if ps_per_byte.is_sign_negative() {
            ByteRate(0.0f64.to_bits())
        } else {
            ByteRate(ps_per_byte.to_bits())
        }
    }

    /// The rate, in picoseconds per byte.
    pub fn ps_per_byte(self) -> f64 {
        if self.0 & Self::EXACT != 0 {
            self.num() as f64 / f64::from(1u32 << self.pow())
        } else {
            f64::from_bits(self.0)
        }
    }

    fn num(self) -> u64 {
        self.0 & Self::NUM_MASK
    }

    fn pow(self) -> u32 {
        ((self.0 & !Self::EXACT) >> Self::SHIFT) as u32
    }

    /// The time `bytes` take at this rate.
    #[inline]
    pub fn time(self, bytes: u64) -> SimDuration {
        if self.0 & Self::EXACT != 0 && bytes < Self::BYTES_MAX {
            let k = self.pow();
            SimDuration((bytes * self.num() + ((1 << k) >> 1)) >> k)
        } else {
            SimDuration::from_ps((bytes as f64 * self.ps_per_byte()).round() as u64)
        }
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}
impl AddAssign<SimDuration> for SimTime {
    #[inline]
    fn add_assign(&mut self, d: SimDuration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Add for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn add(self, d: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(d.0))
    }
}
impl AddAssign for SimDuration {
    #[inline]
    fn add_assign(&mut self, d: SimDuration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn sub(self, d: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(d.0))
    }
}
impl Mul<u64> for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn mul(self, n: u64) -> SimDuration {
        SimDuration(self.0.saturating_mul(n))
    }
}

/// Formats with the largest unit that represents the value exactly (`1.5us`, `48ns`, `0ps`).
impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        for (unit, scale) in [("s", PS_PER_S), ("ms", PS_PER_MS), ("us", PS_PER_US), ("ns", PS_PER_NS)] {
            if ps >= scale {
                // Up to three decimals, if that is exact.
                let milli = scale / 1000;
                if ps.is_multiple_of(milli) {
                    let whole = ps / scale;
                    let frac = (ps % scale) / milli;
                    return if frac == 0 {
                        write!(f, "{whole}{unit}")
                    } else {
                        let s = format!("{frac:03}");
                        write!(f, "{whole}.{}{unit}", s.trim_end_matches('0'))
                    };
                }
            }
        }
        write!(f, "{ps}ps")
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}", SimDuration(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_picks_exact_unit() {
        assert_eq!(SimDuration::from_ns(48).to_string(), "48ns");
        assert_eq!(SimDuration(1_500_000).to_string(), "1.5us");
        assert_eq!(SimDuration(1_234).to_string(), "1.234ns");
        assert_eq!(SimDuration(1_234_567).to_string(), "1234.567ns");
        assert_eq!(SimDuration(999).to_string(), "999ps");
        assert_eq!(SimDuration(0).to_string(), "0ps");
        assert_eq!(SimDuration(3 * PS_PER_S).to_string(), "3s");
    }

    #[test]
    fn cycles_round_to_nearest_ps() {
        // 250 MHz: 4 ns per cycle.
        assert_eq!(SimDuration::cycles(10, 250_000_000), SimDuration::from_ns(40));
        // 3 GHz: 333.33 ps per cycle -> 3 cycles = 1000 ps exactly.
        assert_eq!(SimDuration::cycles(3, 3_000_000_000), SimDuration(1000));
        assert_eq!(SimDuration::cycles(1, 3_000_000_000), SimDuration(333));
    }

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(SimTime(u64::MAX) + SimDuration(5), SimTime(u64::MAX));
        assert!(SimTime(u64::MAX) >= LIMIT);
        assert_eq!(SimDuration::cycles(u64::MAX, 1), SimDuration(u64::MAX));
        // A clock's conversion is the same, exact or not.
        for hz in [0, 1, 250_000_000, 1_000_000_000, 1_200_000_000, 3_000_000_000, PS_PER_S, 2 * PS_PER_S] {
            for n in [0, 1, 3, 10, 1_000_003, u64::MAX / 1000, u64::MAX] {
                assert_eq!(Clock::new(hz).cycles(n), SimDuration::cycles(n, hz), "{n} cycles at {hz} Hz");
            }
        }
        assert_eq!(SimTime(5).since(SimTime(9)), SimDuration::ZERO);
    }

    #[test]
    fn byte_rates_take_the_time_the_float_product_gives() {
        // Exact rates (an ONFI channel, a 16 GB/s bus at 62.5 ps, 1/256 ps) take the integer
        // way; the others, and counts past its bound, the float one. Both must give the float
        // formula's picosecond, halves rounded away from zero; odd counts past the bound would
        // lose their low bits in the float product if the integer way took them.
        let rates = [
            1250.0,
            62.5,
            100.0,
            1.0,
            0.5,
            1.0 / 256.0,
            1.0 / 512.0,
            333.25,
            1e12 / 1.6e9,
            1e12 / 3e9,
            1e12 / 19.2e9,
            0.3,
            1e12 / 8e8,
            1e12 / 16e9,
            (1u64 << 20) as f64,
            ((1u64 << 20) + 1) as f64,
            0.0,
            -0.0,
            -2.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
        ];
        for p in rates {
            let r = ByteRate::new(p);
            assert_eq!(r.ps_per_byte().to_bits(), if p.is_sign_negative() { 0.0f64.to_bits() } else { p.to_bits() }, "{p}");
            for bytes in (0..5000u64).chain([4096, 16384, 32768, 1 << 20, (1 << 33) - 1, 1 << 33, (1 << 33) + 1, 1 << 40, (1 << 53) + 1, u64::MAX]) {
                let want = SimDuration::from_ps((bytes as f64 * p).round() as u64);
                assert_eq!(r.time(bytes), want, "{bytes} bytes at {p} ps a byte");
            }
        }
        for (p, exact) in [(1250.0, true), (62.5, true), (1.0 / 256.0, true), (1.0 / 512.0, false), (1e12 / 3e9, false), (f64::NAN, false)] {
            assert_eq!(ByteRate::new(p).0 & ByteRate::EXACT != 0, exact, "{p}");
        }
        assert_eq!(std::mem::size_of::<ByteRate>(), 8);
    }
}
