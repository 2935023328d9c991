//! Division by a divisor a geometry fixes (units per page, chunk size, banks): a shift and a
//! mask when it is a power of two, as it usually is, else a division. The results are the
//! same either way; a 64-bit division costs tens of cycles on the hottest paths of the FTL and
//! the NVM array.

/// `x / d` and `x % d`.
#[inline]
pub fn div_rem(x: u64, d: u64) -> (u64, u64) {
    if d.is_power_of_two() {
        (x >> d.trailing_zeros(), x & (d - 1))
    } else {
        (x / d, x % d)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_plain_division() {
        for d in [1u64, 2, 3, 4, 6, 64, 96, 1024, 1536, 4096, 1 << 31] {
            for x in [0u64, 1, 2, 3, 5, 63, 64, 65, 1023, 1024, 1025, 4095, 123_456_789, u64::from(u32::MAX), u64::MAX] {
                assert_eq!(div_rem(x, d), (x / d, x % d), "{x} / {d}");
                if let (Ok(d32), Ok(x32)) = (u32::try_from(d), u32::try_from(x)) {
                    assert_eq!(divides(d32, x32), x32.is_multiple_of(d32), "{d} divides {x}");
                }
            }
        }
    }
}
