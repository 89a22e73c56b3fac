//! `ln(1 - u)` for a batch of uniform draws, bit for bit `libm::log`'s, and quicker.
//!
//! Exponential draws are most of a run's draws, and each needs the logarithm of `1 - u`, where
//! `u` is a word's 53 random bits as a fraction: always in `(2^-53, 1]`. `libm::log` (fdlibm's
//! `e_log.c`, ported by musl and the `libm` crate) first sorts out zero, negative, subnormal,
//! infinite and NaN arguments and the argument 1, then computes the general case. None of the
//! special arguments can occur here, and for 1 the general case gives the same `+0.0`. So this
//! is the general case alone, the same operations in the same order (IEEE arithmetic is exact
//! to the bit, and Rust does not reassociate it or fuse it), with nothing to branch on: a batch
//! of them is compiled to vector instructions, several logarithms at once. A test holds it to
//! `libm::log` on millions of arguments and on the edges of its argument reduction.
//!
//! The constants (as their bits, which fdlibm gives beside their decimals) and the method are
//! fdlibm's, under its notice:
//!
//! > Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
//! >
//! > Developed at SunSoft, a Sun Microsystems, Inc. business. Permission to use, copy, modify,
//! > and distribute this software is freely granted, provided that this notice is preserved.

const LN2_HI: f64 = f64::from_bits(0x3fe62e42_fee00000);
const LN2_LO: f64 = f64::from_bits(0x3dea39ef_35793c76);
const LG1: f64 = f64::from_bits(0x3fe55555_55555593);
const LG2: f64 = f64::from_bits(0x3fd99999_9997fa04);
const LG3: f64 = f64::from_bits(0x3fd24924_94229359);
const LG4: f64 = f64::from_bits(0x3fcc71c5_1d8e78af);
const LG5: f64 = f64::from_bits(0x3fc74664_96cb03de);
const LG6: f64 = f64::from_bits(0x3fc39a09_d078c69f);
const LG7: f64 = f64::from_bits(0x3fc2f112_df3e5244);

/// A word as a uniform draw from `[0, 1)` with 53 random bits.
#[inline(always)]
pub(super) fn unit(word: u64) -> f64 {
    (word >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// `ln(1 - unit(word))`, as `libm::log(1.0 - unit(word))` gives it.
#[inline(always)]
pub(super) fn ln_one_minus(word: u64) -> f64 {
    let x = 1.0 - unit(word);
    // Reduce x into [sqrt(2)/2, sqrt(2)]: x = 2^k (1 + f).
    let bits = x.to_bits();
    let high = ((bits >> 32) as u32) + (0x3ff00000 - 0x3fe6a09e);
    let k = ((high >> 20) as i32) - 0x3ff;
    let high = (high & 0x000fffff) + 0x3fe6a09e;
    let x = f64::from_bits((u64::from(high) << 32) | (bits & 0xffffffff));
    let f = x - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    let dk = f64::from(k);
    s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI
}

/// [`ln_one_minus`] of every word, into `logs`.
#[inline]
pub(super) fn ln_one_minus_all<const N: usize>(words: &[u64; N], logs: &mut [f64; N]) {
    for (log, &word) in logs.iter_mut().zip(words) {
        *log = ln_one_minus(word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    fn libm(word: u64) -> f64 {
        libm::log(1.0 - unit(word))
    }

    /// Bit for bit `libm::log` on four million random words.
    #[test]
    fn matches_libm_on_random_words() {
        let mut generator = ChaCha8Rng::seed_from_u64(7);
        let mut words = [0u64; 64];
        let mut logs = [0f64; 64];
        for _ in 0..4_000_000 / 64 {
            for word in &mut words {
                *word = generator.next_u64();
            }
            ln_one_minus_all(&words, &mut logs);
            for (&word, &log) in words.iter().zip(&logs) {
                assert_eq!(log.to_bits(), libm(word).to_bits(), "word {word:#x}");
            }
        }
    }

    /// Bit for bit `libm::log` at the ends of the range (u = 0, where the logarithm is +0, and
    /// the largest u), around every power of two the argument can be, and around the argument
    /// reduction's cut at sqrt(2)/2 of each.
    #[test]
    fn matches_libm_on_the_edges() {
        let word_of = |one_minus: f64| (((1.0 - one_minus) * (1u64 << 53) as f64) as u64) << 11;
        let mut words = vec![0, u64::MAX, 1 << 11, u64::MAX - (1 << 11)];
        for exponent in 1..=53 {
            let power = 0.5f64.powi(exponent);
            for x in [power, power * std::f64::consts::FRAC_1_SQRT_2, power * 1.5] {
                let word = word_of(x);
                for delta in 0..64u64 {
                    words.push(word.wrapping_add(delta << 11));
                    words.push(word.wrapping_sub(delta << 11));
                }
            }
        }
        for word in words {
            assert_eq!(
                ln_one_minus(word).to_bits(),
                libm(word).to_bits(),
                "word {word:#x}"
            );
        }
    }
}
