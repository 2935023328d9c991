//! Division by a divisor a geometry fixes (units per page, chunk size, banks, planes, dies):
//! a shift and a mask when it is a power of two, as it usually is, else a division. The
//! results are the same either way; a hardware division costs tens of cycles on the hottest
//! paths of the FTL, the NAND and the NVM arrays.

/// `x / d` and `x % d`.
#[inline]
pub fn div_rem(x: u64, d: u64) -> (u64, u64) {
    if d.is_power_of_two() {
        (x >> d.trailing_zeros(), x & (d - 1))
    } else {
        (x / d, x % d)
    }
}

/// `x / d` rounded up.
#[inline]
pub fn div_ceil(x: u64, d: u64) -> u64 {
    let (q, r) = div_rem(x, d);
    q + u64::from(r != 0)
}

/// Whether `d` divides `x`.
#[inline]
pub fn divides(d: u32, x: u32) -> bool {
    if d.is_power_of_two() {
        x & (d - 1) == 0
    } else {
        x.is_multiple_of(d)
    }
}

/// A 32-bit divisor fixed once (a geometry's blocks per plane, planes, channels, page
/// types): a shift and a mask when it is a power of two; else two multiplications (Lemire,
/// Kaser and Kurz, "Faster remainder by direct computation", 2019), exact for every `u32`
/// dividend. Either way the same quotient and remainder as `/` and `%`, without the hardware
/// division the NAND array would otherwise run about 30 times a simulated 4 KiB write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divisor {
    d: u32,
    /// `log2(d)` when `d` is a power of two, else `u32::MAX`.
    shift: u32,
    /// `ceil(2^64 / d)` (unused for a power of two).
    m: u64,
}

impl Divisor {
    /// Divides by `d`; 0 is taken as 1 (configs validate their divisors as positive).
    pub fn new(d: u32) -> Self {
        let d = d.max(1);
        if d.is_power_of_two() {
            Divisor { d, shift: d.trailing_zeros(), m: 0 }
        } else {
            Divisor { d, shift: u32::MAX, m: u64::MAX / u64::from(d) + 1 }
        }
    }

    /// `x / d`.
    #[inline]
    pub fn quotient(self, x: u32) -> u32 {
        if self.shift == u32::MAX {
            ((u128::from(self.m) * u128::from(x)) >> 64) as u32
        } else {
            x >> self.shift
        }
    }

    /// `x % d`.
    #[inline]
    pub fn remainder(self, x: u32) -> u32 {
        if self.shift == u32::MAX {
            let low = self.m.wrapping_mul(u64::from(x));
            ((u128::from(low) * u128::from(self.d)) >> 64) as u32
        } else {
            x & (self.d - 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_plain_division() {
        for d in [1u64, 2, 3, 4, 6, 64, 96, 1024, 1536, 4096, 1 << 31] {
            for x in [0u64, 1, 2, 3, 5, 63, 64, 65, 1023, 1024, 1025, 4095, 123_456_789, u64::from(u32::MAX), u64::MAX] {
                assert_eq!(div_rem(x, d), (x / d, x % d), "{x} / {d}");
                assert_eq!(div_ceil(x, d), x.div_ceil(d), "{x} / {d} rounded up");
                if let (Ok(d32), Ok(x32)) = (u32::try_from(d), u32::try_from(x)) {
                    assert_eq!(divides(d32, x32), x32.is_multiple_of(d32), "{d} divides {x}");
                }
            }
        }
    }

    #[test]
    fn divisor_matches_plain_division() {
        // Powers of two, small odd and even divisors (page types, planes, odd geometries),
        // divisors near 2^31 and 2^32, against edge dividends and a pseudo-random sweep.
        let mut ds: Vec<u32> = (1..=130).collect();
        ds.extend([255, 256, 257, 1000, 1536, 3000, 4095, 4096, 65_535, 65_536, 1 << 31, (1 << 31) - 1, (1 << 31) + 1, u32::MAX - 1, u32::MAX]);
        let mut xs: Vec<u32> = vec![0, 1, 2, 3, 4, 5, 6, 7, 127, 128, 129, 1 << 16, (1 << 31) - 1, 1 << 31, (1 << 31) + 1, u32::MAX - 1, u32::MAX];
        let mut x = 0x9E37_79B9u32;
        for _ in 0..2000 {
            // xorshift32
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            xs.push(x);
        }
        for &d in &ds {
            let v = Divisor::new(d);
            assert_eq!(v.d, d);
            for &x in xs.iter().chain(&[d - 1, d, d.wrapping_add(1), d.wrapping_mul(3), d.wrapping_mul(3).wrapping_sub(1)]) {
                assert_eq!((v.quotient(x), v.remainder(x)), (x / d, x % d), "{x} / {d}");
            }
        }
        assert_eq!(Divisor::new(0), Divisor::new(1));
    }
}
