//! Philox4x32-10 (Salmon, Moraes, Dror and Shaw, SC'11), the counter-based generator behind
//! `rand`, `randn` and `randint`: the interpreter computes it here, and the generated code
//! computes the same rounds in C (`codegen/arithmetic.rs`, `tilus_philox`), so that a seed
//! and an offset give the same bits on both. An element's random number is a pure function of
//! the seed (the key) and its offset (the counter's first word): no state to carry between
//! blocks or launches.

/// The rounds' multipliers.
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
/// The key's increments between rounds (the golden ratio and √3 − 1, in 32-bit fixed point).
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// The ten rounds on `counter` with `key`.
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = counter;
    let [mut k0, mut k1] = key;
    for _ in 0..10 {
        let p0 = u64::from(M0) * u64::from(c0);
        let p1 = u64::from(M1) * u64::from(c2);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        (c0, c1, c2, c3) = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0);
        k0 = k0.wrapping_add(W0);
        k1 = k1.wrapping_add(W1);
    }
    [c0, c1, c2, c3]
}

/// The four words for `seed` (the key: its low and high 32 bits, as a 64-bit value) at
/// `offset` (the counter's first word, its low 32 bits; the other words 0).
pub fn words(seed: i64, offset: i64) -> [u32; 4] {
    let s = seed as u64;
    philox4x32_10([offset as u32, 0, 0, 0], [s as u32, (s >> 32) as u32])
}

/// A word as a float in `[0, 1)`: its top 24 bits times 2^-24, exact in f32.
pub fn uniform(w: u32) -> f32 {
    (w >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// Two words as a standard normal value (Box-Muller, in f32): `sqrt(-2 ln u1) · cos(2π u2)`
/// with `u1` in `(0, 1]` from the first word and `u2` in `[0, 1)` from the second. The
/// logarithm and cosine are the host's here and the GPU's there: the values agree within a
/// few ulps, not bit for bit.
pub fn normal(w0: u32, w1: u32) -> f32 {
    let u1 = ((w0 >> 8) + 1) as f32 * (1.0 / 16_777_216.0);
    let u2 = uniform(w1);
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The known-answer vectors of the generator's authors (Random123's `kat_vectors`).
    #[test]
    fn the_rounds_give_the_published_answers() {
        assert_eq!(
            philox4x32_10([0; 4], [0; 2]),
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0]
            ),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn uniform_values_cover_zero_to_one_and_normal_values_are_standard() {
        assert_eq!(uniform(0), 0.0);
        assert_eq!(uniform(u32::MAX), 1.0 - 1.0 / 16_777_216.0);
        let n = 1 << 16;
        let xs: Vec<f32> = (0..n)
            .map(|i| {
                let w = words(12345, i);
                normal(w[0], w[1])
            })
            .collect();
        let mean = xs.iter().map(|&x| f64::from(x)).sum::<f64>() / n as f64;
        let var = xs
            .iter()
            .map(|&x| (f64::from(x) - mean).powi(2))
            .sum::<f64>()
            / n as f64;
        assert!(
            mean.abs() < 0.02 && (var - 1.0).abs() < 0.03,
            "{mean} {var}"
        );
        assert!(xs.iter().all(|x| x.is_finite()));
    }
}
