//! Division by a runtime divisor as a multiply and a shift (`fast_divmod`).
//!
//! An integer division is a long instruction sequence on the GPU (tens of cycles); dividing
//! by a value that is fixed for the whole launch (a number of tiles, a row length) can use a
//! multiplier and a shift the host derives once, before the launch (Granlund and Montgomery's
//! round-up method). For a dividend `n < 2³¹` and a divisor `1 <= d < 2³¹`, with
//! `s = ⌈log₂ d⌉` and `m = ⌊2³² · (2ˢ − d) / d⌋ + 1`:
//!
//! `n / d = (mulhi(n, m) + n) >> s`
//!
//! where `mulhi` is the upper 32 bits of the 64-bit product (the sum cannot overflow 32 bits
//! because `n < 2³¹`). The kernel receives `m` and `s` packed in one 64-bit parameter:
//! multiplier in the low 32 bits, shift in the high ones.

/// The largest divisor (and dividend) the method covers.
pub const MAX_FAST_DIVISOR: i64 = i32::MAX as i64;

/// The packed multiplier and shift for dividing by `d`, or why `d` cannot be a divisor.
pub fn fast_divisor_bits(d: i64) -> Result<u64, String> {
    if !(1..=MAX_FAST_DIVISOR).contains(&d) {
        return Err(format!(
            "is {d}; a fast divisor must be between 1 and {MAX_FAST_DIVISOR}"
        ));
    }
    let d = d as u64;
    let shift = 64 - (d - 1).leading_zeros() as u64; // ⌈log₂ d⌉, 0 for d = 1
    let magic = (((1u64 << shift) - d) << 32) / d + 1;
    debug_assert!(magic <= u32::MAX as u64);
    Ok(magic | (shift << 32))
}

/// `n / d` through the packed multiplier and shift of `d`, as the kernel computes it.
pub fn fast_divide(n: u32, bits: u64) -> u32 {
    let (magic, shift) = (bits & 0xffff_ffff, bits >> 32);
    let hi = (n as u64 * magic) >> 32;
    ((hi + n as u64) as u32) >> shift
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(n: u32, d: i64) {
        let bits = fast_divisor_bits(d).unwrap();
        assert_eq!(fast_divide(n, bits) as i64, n as i64 / d, "{n} / {d}");
    }

    #[test]
    fn divides_exactly_at_the_edges_and_on_random_pairs() {
        let edges = [
            0u32,
            1,
            2,
            3,
            7,
            8,
            9,
            1 << 30,
            (1 << 31) - 2,
            (1 << 31) - 1,
        ];
        for d in (1..=4100i64).chain([1 << 20, (1 << 30) + 1, (1 << 31) - 2, (1 << 31) - 1]) {
            for &n in &edges {
                check(n, d);
            }
            // around every multiple boundary near the top of the range
            let top = ((1u64 << 31) - 1) / d as u64 * d as u64;
            for n in [top.saturating_sub(1), top, top + 1] {
                if n < 1 << 31 {
                    check(n as u32, d);
                }
            }
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (x as u32) >> 1;
            let d = ((x >> 32) as u32 >> (1 + (x % 31) as u32)).max(1);
            check(n, d as i64);
        }
    }

    #[test]
    fn refuses_divisors_out_of_range() {
        assert!(fast_divisor_bits(0).is_err());
        assert!(fast_divisor_bits(-3).is_err());
        assert!(fast_divisor_bits(1 << 31).is_err());
        assert_eq!(fast_divisor_bits(1).unwrap(), 1);
    }
}
