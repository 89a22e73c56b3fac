//! The statistics of replications: intervals for a probability estimated from N runs, for a
//! mean over runs and for a whole distribution function; Latin hypercube samples of uncertain
//! inputs; and the rank correlation that orders inputs by their influence.
//!
//! They are written here rather than taken from a statistics crate for the reason the samplers
//! are ([`super::random`]): an output must not change when a dependency does, and every
//! transcendental function comes from `libm`, so that a result is the same on every machine.
//! Each function names its formula and its source; the tests check them against published
//! tables or against the equations that define them.
//!
//! - A share of runs with some outcome: exact Clopper-Pearson ([`clopper_pearson`]), which
//!   never covers less than it claims, and Wilson's score interval ([`wilson`]), narrower and
//!   closed-form. Both stay inside [0, 1] and neither collapses to a point at 0 or N of N.
//! - A mean over runs: Student's t ([`mean_interval`], [`t_quantile`]).
//! - An empirical distribution function: the Dvoretzky-Kiefer-Wolfowitz band
//!   ([`dkw_half_width`]), which covers the whole true distribution function at once.
//! - Uncertain inputs: a Latin hypercube ([`latin_hypercube`]), and Spearman's rank
//!   correlation ([`spearman`]) of each input with an outcome.
//!
//! The special functions under them: the standard normal quantile ([`normal_quantile`]) and the
//! regularized incomplete beta function and its inverse ([`incomplete_beta`],
//! [`inverse_incomplete_beta`]), of which the binomial tails and Student's t are cases.

use super::random::{Purpose, Random, Stream};

/// The standard normal quantile, the inverse of its distribution function, for `p` in (0, 1):
/// Wichura's algorithm AS 241 (PPND16; Applied Statistics 37:477-484, 1988), three rational
/// approximations of degree 7 (the centre, `|p - 1/2| <= 0.425`; then in
/// `r = sqrt(-ln(min(p, 1 - p)))`, up to 5 and beyond), relative error about 1e-16. NaN
/// outside (0, 1), and -/+ infinity at 0 and 1.
// The coefficients as Wichura published them, more digits than a double keeps, so that they
// can be checked against the paper.
#[allow(clippy::excessive_precision)]
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 8] = [
        3.387_132_872_796_366_608,
        1.331_416_678_917_843_774_5e2,
        1.971_590_950_306_551_442_7e3,
        1.373_169_376_550_946_112_5e4,
        4.592_195_393_154_987_145_7e4,
        6.726_577_092_700_870_085_3e4,
        3.343_057_558_358_812_810_5e4,
        2.509_080_928_730_122_672_7e3,
    ];
    const B: [f64; 8] = [
        1.0,
        4.231_333_070_160_091_125_2e1,
        6.871_870_074_920_579_083e2,
        5.394_196_021_424_751_107_7e3,
        2.121_379_430_158_659_586_7e4,
        3.930_789_580_009_271_061e4,
        2.872_908_573_572_194_267_4e4,
        5.226_495_278_852_854_561e3,
    ];
    const C: [f64; 8] = [
        1.423_437_110_749_683_577_34,
        4.630_337_846_156_545_295_9,
        5.769_497_221_460_691_405_5,
        3.647_848_324_763_204_605_04,
        1.270_458_252_452_368_382_58,
        2.417_807_251_774_506_117_7e-1,
        2.272_384_498_926_918_458_33e-2,
        7.745_450_142_783_414_076_4e-4,
    ];
    const D: [f64; 8] = [
        1.0,
        2.053_191_626_637_758_821_87,
        1.676_384_830_183_803_849_4,
        6.897_673_349_851_000_045_5e-1,
        1.481_039_764_274_800_745_9e-1,
        1.519_866_656_361_645_719_66e-2,
        5.475_938_084_995_344_946e-4,
        1.050_750_071_644_416_843_24e-9,
    ];
    const E: [f64; 8] = [
        6.657_904_643_501_103_777_2,
        5.463_784_911_164_114_369_9,
        1.784_826_539_917_291_335_8,
        2.965_605_718_285_048_912_3e-1,
        2.653_218_952_657_612_309_3e-2,
        1.242_660_947_388_078_438_6e-3,
        2.711_555_568_743_487_578_15e-5,
        2.010_334_399_292_288_132_65e-7,
    ];
    const F: [f64; 8] = [
        1.0,
        5.998_322_065_558_879_376_9e-1,
        1.369_298_809_227_358_053_1e-1,
        1.487_536_129_085_061_485_25e-2,
        7.868_691_311_456_132_591e-4,
        1.846_318_317_510_054_681_8e-5,
        1.421_511_758_316_445_888_7e-7,
        2.044_263_103_389_939_785_64e-15,
    ];
    /// `numerator(x) / denominator(x)`, both by Horner's rule, constant term first.
    fn rational(numerator: &[f64; 8], denominator: &[f64; 8], x: f64) -> f64 {
        let horner = |c: &[f64; 8]| c.iter().rev().fold(0.0, |sum, &c| sum * x + c);
        horner(numerator) / horner(denominator)
    }

    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        return q * rational(&A, &B, 0.180_625 - q * q);
    }
    let tail = if q < 0.0 { p } else { 1.0 - p };
    if tail == 0.0 {
        return f64::INFINITY.copysign(q);
    }
    let r = libm::sqrt(-libm::log(tail));
    let value = if r <= 5.0 {
        rational(&C, &D, r - 1.6)
    } else {
        rational(&E, &F, r - 5.0)
    };
    value.copysign(q)
}

/// `ln B(a, b) = ln Γ(a) + ln Γ(b) - ln Γ(a + b)`, through Stirling's formula with its
/// remainders ([`stirling_remainder`]) so that the large parts cancel exactly:
/// `ln B = ln(2 pi)/2 - ln(s)/2 + (a - 1/2) ln(a/s) + (b - 1/2) ln(b/s) + δ(a) + δ(b) - δ(s)`,
/// `s = a + b`. Summing the three `ln Γ` would lose their magnitude's share of the
/// precision: with b = 5e11 that is 1e-3, enough to make Student's t wrong in the fifth
/// digit (the approach of Didonato & Morris's TOMS 708, `betaln`).
fn ln_beta(a: f64, b: f64) -> f64 {
    let s = a + b;
    // ln(x / s), where s - x is `other`: by log1p where x is the larger share.
    let ln_share = |x: f64, other: f64| {
        if x >= other {
            libm::log1p(-other / s)
        } else {
            libm::log(x / s)
        }
    };
    0.5 * libm::log(std::f64::consts::TAU) - 0.5 * libm::log(s)
        + (a - 0.5) * ln_share(a, b)
        + (b - 0.5) * ln_share(b, a)
        + stirling_remainder(a)
        + stirling_remainder(b)
        - stirling_remainder(s)
}

/// `δ(x) = ln Γ(x) - ((x - 1/2) ln x - x + ln(2 pi)/2)`, Stirling's remainder: its
/// asymptotic series `1/12x - 1/360x^3 + 1/1260x^5 - 1/1680x^7` from x = 10 on (the next
/// term, `1/1188x^9`, is below 1e-12 there and 1e-16 of δ), and the difference itself below
/// (where `ln Γ` is small and loses nothing).
fn stirling_remainder(x: f64) -> f64 {
    if x < 10.0 {
        return libm::lgamma(x)
            - ((x - 0.5) * libm::log(x) - x + 0.5 * libm::log(std::f64::consts::TAU));
    }
    let inverse_square = 1.0 / (x * x);
    (1.0 / 12.0
        - inverse_square
            * (1.0 / 360.0 - inverse_square * (1.0 / 1260.0 - inverse_square / 1680.0)))
        / x
}

/// The regularized incomplete beta function `I_x(a, b)` (a, b > 0; 0 below x = 0, 1 above
/// x = 1): `x^a (1 - x)^b / (a B(a, b))` times a continued fraction, evaluated by the modified
/// Lentz method where it converges fast (`x < (a + 1) / (a + b + 2)`), and through
/// `I_x(a, b) = 1 - I_{1-x}(b, a)` elsewhere (Press et al., Numerical Recipes, 3rd ed., 6.4,
/// `betai` and `betacf`; the fraction is Abramowitz & Stegun 26.5.8).
///
/// The binomial tail is one of its cases: `P(X >= k)` for X binomial(n, p) is
/// `I_p(k, n - k + 1)`; so is Student's t: `P(|T| > t)` with df degrees of freedom is
/// `I_{df/(df + t^2)}(df/2, 1/2)`.
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x.is_nan() || a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = libm::exp(a * libm::log(x) + b * libm::log1p(-x) - ln_beta(a, b));
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of [`incomplete_beta`], `1 / (1 + d1 / (1 + d2 / (1 + ...)))` with
/// `d(2m+1) = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1))` and
/// `d(2m) = m (b - m) x / ((a + 2m - 1)(a + 2m))`, by the modified Lentz method until a step
/// changes it by less than the precision of a double. It converges in O(sqrt(max(a, b)))
/// steps where it is used.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    /// Keeps a denominator off zero (Lentz's trick).
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut fraction = d;
    for m in 1..100_000 {
        let m = f64::from(m);
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        fraction *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        fraction *= step;
        if (step - 1.0).abs() <= f64::EPSILON {
            break;
        }
    }
    fraction
}

/// The x in [0, 1] where `I_x(a, b) = p`: Newton's method on [`incomplete_beta`] (its
/// derivative is the Beta density `x^(a-1) (1-x)^(b-1) / B(a, b)`) from the starting value of
/// Numerical Recipes' `invbetai` (3rd ed., 6.4), kept inside a bracket that every step
/// narrows, by a bisection whenever a step would leave it, until a step moves x by less than
/// 1e-13 of its distance from 0 or 1, whichever is nearer (the error after the last Newton
/// step is far smaller), or the bracket is a few doubles wide. 0 for p <= 0, 1 for p >= 1.
pub fn inverse_incomplete_beta(a: f64, b: f64, p: f64) -> f64 {
    if p.is_nan() || a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    let ln_b = ln_beta(a, b);
    let (mut low, mut high) = (0.0_f64, 1.0_f64);
    let mut x = inverse_beta_start(a, b, p).clamp(f64::MIN_POSITIVE, 1.0 - f64::EPSILON / 2.0);
    for _ in 0..1_000 {
        let excess = incomplete_beta(a, b, x) - p;
        if excess == 0.0 {
            return x;
        }
        if excess < 0.0 {
            low = x;
        } else {
            high = x;
        }
        let density = libm::exp((a - 1.0) * libm::log(x) + (b - 1.0) * libm::log1p(-x) - ln_b);
        let newton = x - excess / density;
        let next = if newton > low && newton < high {
            newton
        } else {
            0.5 * (low + high)
        };
        // Converged when the step is below 1e-13 of x's distance from the nearer end, or the
        // bracket is down to a few doubles (near 1, where that distance is below their spacing).
        if (next - x).abs() <= 1e-13 * next.min(1.0 - next) || high - low <= 4.0 * f64::EPSILON {
            return next;
        }
        x = next;
    }
    x
}

/// Numerical Recipes' first guess at the inverse of `I_x(a, b)` (3rd ed., 6.4, `invbetai`):
/// for a, b >= 1 a normal approximation (Abramowitz & Stegun 26.5.22), otherwise the leading
/// powers of the two tails.
fn inverse_beta_start(a: f64, b: f64, p: f64) -> f64 {
    if a >= 1.0 && b >= 1.0 {
        let tail = if p < 0.5 { p } else { 1.0 - p };
        let t = libm::sqrt(-2.0 * libm::log(tail));
        let mut z = (2.307_53 + t * 0.270_61) / (1.0 + t * (0.992_29 + t * 0.044_81)) - t;
        if p < 0.5 {
            z = -z;
        }
        let al = (z * z - 3.0) / 6.0;
        let h = 2.0 / (1.0 / (2.0 * a - 1.0) + 1.0 / (2.0 * b - 1.0));
        let w = z * libm::sqrt(al + h) / h
            - (1.0 / (2.0 * b - 1.0) - 1.0 / (2.0 * a - 1.0)) * (al + 5.0 / 6.0 - 2.0 / (3.0 * h));
        a / (a + b * libm::exp(2.0 * w))
    } else {
        let ln_a = libm::log(a / (a + b));
        let ln_b = libm::log(b / (a + b));
        let t = libm::exp(a * ln_a) / a;
        let u = libm::exp(b * ln_b) / b;
        let w = t + u;
        if p < t / w {
            libm::pow(a * w * p, 1.0 / a)
        } else {
            1.0 - libm::pow(b * w * (1.0 - p), 1.0 / b)
        }
    }
}

/// The probability in each tail of a two-sided interval at `confidence`: `(1 - confidence) / 2`.
fn tail(confidence: f64) -> f64 {
    (1.0 - confidence) / 2.0
}

/// The two-sided exact interval of a binomial proportion (Clopper & Pearson 1934, Biometrika
/// 26:404) from `successes` of `trials` at `confidence` (0.95 for 95%): the p under which
/// seeing `successes` or more (the low bound), or `successes` or fewer (the high bound), has
/// probability `(1 - confidence) / 2`. They are Beta quantiles, low
/// `B^-1(alpha/2; k, n - k + 1)` and high `B^-1(1 - alpha/2; k + 1, n - k)`; 0 successes give
/// low 0, all of them high 1, and no trials (0, 1). Its coverage is never below `confidence`.
/// `successes` above `trials` count as `trials`.
pub fn clopper_pearson(successes: u64, trials: u64, confidence: f64) -> (f64, f64) {
    if trials == 0 {
        return (0.0, 1.0);
    }
    let successes = successes.min(trials);
    let (k, n, alpha_2) = (successes as f64, trials as f64, tail(confidence));
    let low = if successes == 0 {
        0.0
    } else {
        inverse_incomplete_beta(k, n - k + 1.0, alpha_2)
    };
    let high = if successes == trials {
        1.0
    } else {
        inverse_incomplete_beta(k + 1.0, n - k, 1.0 - alpha_2)
    };
    (low, high)
}

/// The fewest trials whose Clopper-Pearson lower bound at `confidence` can be above `p` (0 < p
/// < 1): even all of `n` trials succeeding give a lower bound of `(alpha / 2)^(1/n)`, so a
/// claim that something happens with probability above `p` needs `n > ln(alpha / 2) / ln p`.
pub fn fewest_trials_above(p: f64, confidence: f64) -> u64 {
    (tail(confidence).ln() / p.ln()).floor() as u64 + 1
}

/// Wilson's (1927, JASA 22:209) score interval of a binomial proportion from `successes` of
/// `trials` at `confidence`, without continuity correction: [`wilson_score`] with
/// `z = normal_quantile(1 - (1 - confidence) / 2)`. No trials give (0, 1); `successes` above
/// `trials` count as `trials`.
pub fn wilson(successes: u64, trials: u64, confidence: f64) -> (f64, f64) {
    if trials == 0 {
        return (0.0, 1.0);
    }
    let z = normal_quantile(1.0 - tail(confidence));
    wilson_score(successes.min(trials) as f64, trials as f64, z)
}

/// Wilson's score interval with the normal quantile `z` given, for counts that arrive as
/// floating-point sums: with `p = successes / trials`,
/// `(p + z^2/2n -/+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)`. Never [p, p] at 0 or at
/// `trials` as the normal approximation is: for 0 of n it is [0, z^2 / (n + z^2)]. The bound
/// at 0 or at `trials` is exactly 0 or 1, where the formula would leave a rounding error.
/// No trials give (0, 1).
pub fn wilson_score(successes: f64, trials: f64, z: f64) -> (f64, f64) {
    if trials <= 0.0 {
        return (0.0, 1.0);
    }
    let (p, z2) = (successes / trials, z * z);
    let denominator = 1.0 + z2 / trials;
    let center = (p + z2 / (2.0 * trials)) / denominator;
    let half = z * (p * (1.0 - p) / trials + z2 / (4.0 * trials * trials)).sqrt() / denominator;
    let low = if successes <= 0.0 { 0.0 } else { center - half };
    let high = if successes >= trials {
        1.0
    } else {
        center + half
    };
    (low.max(0.0), high.min(1.0))
}

/// Student's t two-sided quantile `t_{1 - (1 - confidence)/2, df}`, for `df >= 1` (NaN for 0):
/// measured within 1e-11 at 95% and 1e-8 at 1 - 2e-9 for df from 1 to 1e12, far inside the
/// 1e-6 asked.
///
/// With `x = df / (df + t^2)`, `P(|T| > t) = I_x(df/2, 1/2)` ([`incomplete_beta`]), so t
/// comes from the inverse at `alpha = 1 - confidence`. Where x is above 1/2 (t^2 < df),
/// `y = 1 - x = t^2 / (df + t^2)` is solved for instead, from `I_y(1/2, df/2) = confidence`,
/// so that t is not lost in the rounding of `1 - x`. Beyond [`T_SERIES_FROM`] degrees of
/// freedom the incomplete beta function itself works with `1 - y`, within 1e-5 of 1, and
/// loses digits, while the Cornish-Fisher series around the normal quantile z (Abramowitz & Stegun
/// 26.7.5, four terms) is exact to far below 1e-12 there.
pub fn t_quantile(df: u64, confidence: f64) -> f64 {
    if df == 0 {
        return f64::NAN;
    }
    let df = df as f64;
    let alpha = 1.0 - confidence;
    if df > T_SERIES_FROM {
        return cornish_fisher(normal_quantile(1.0 - alpha / 2.0), df);
    }
    // x < 1/2 exactly when the tail beyond t = sqrt(df) is more than alpha.
    if incomplete_beta(df / 2.0, 0.5, 0.5) > alpha {
        let x = inverse_incomplete_beta(df / 2.0, 0.5, alpha);
        libm::sqrt(df * (1.0 - x) / x)
    } else {
        let y = inverse_incomplete_beta(0.5, df / 2.0, confidence);
        libm::sqrt(df * y / (1.0 - y))
    }
}

/// The degrees of freedom beyond which [`t_quantile`] sums the series: the exact route is
/// within about 1e-12 of it here (at 95%), and the series' first omitted term, of order `z^11 / df^5`, is
/// below 1e-20 from here on for any z under 10.
const T_SERIES_FROM: f64 = 1e6;

/// Student's t quantile with `df` degrees of freedom at the normal quantile `z`, by the
/// Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5): `z + g1/df + g2/df^2 + g3/df^3 +
/// g4/df^4`, with `g1 = (z^3 + z)/4`, `g2 = (5z^5 + 16z^3 + 3z)/96`,
/// `g3 = (3z^7 + 19z^5 + 17z^3 - 15z)/384` and
/// `g4 = (79z^9 + 776z^7 + 1482z^5 - 1920z^3 - 945z)/92160`.
fn cornish_fisher(z: f64, df: f64) -> f64 {
    let z2 = z * z;
    let g1 = z * (z2 + 1.0) / 4.0;
    let g2 = z * ((5.0 * z2 + 16.0) * z2 + 3.0) / 96.0;
    let g3 = z * (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) / 384.0;
    let g4 = z * ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) / 92160.0;
    z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df
}

/// The half-width of the Dvoretzky-Kiefer-Wolfowitz band around the empirical distribution
/// function of `n` independent values, with Massart's tight constant (Annals of Probability
/// 18:1269, 1990): `P(sup |F_n - F| > eps) <= 2 exp(-2 n eps^2)`, so
/// `eps = sqrt(ln(2 / alpha) / (2n))` with `alpha = 1 - confidence`. The band `F_n -/+ eps`
/// covers the whole true distribution function at once with probability at least
/// `confidence`, for any continuous F. Infinite for no values.
pub fn dkw_half_width(n: usize, confidence: f64) -> f64 {
    let alpha = 1.0 - confidence;
    libm::sqrt(libm::log(2.0 / alpha) / (2.0 * n as f64))
}

/// The mean of `values` and its standard error, `s / sqrt(n)` with the sample variance
/// `s^2 = sum (v - mean)^2 / (n - 1)`: NaN for no values, and a NaN standard error for one.
pub fn mean_and_standard_error(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, f64::NAN);
    }
    let variance = values
        .iter()
        .map(|value| (value - mean).powi(2))
        .sum::<f64>()
        / (n - 1) as f64;
    (mean, (variance / n as f64).sqrt())
}

/// The mean of `values` and the half-width of its two-sided Student's t interval at
/// `confidence`: `t_{1-alpha/2, n-1} s / sqrt(n)` ([`mean_and_standard_error`],
/// [`t_quantile`]). It assumes the values independent and their mean near normal. The
/// half-width is NaN for fewer than 2 values, and both are for none.
pub fn mean_interval(values: &[f64], confidence: f64) -> (f64, f64) {
    let (mean, standard_error) = mean_and_standard_error(values);
    if standard_error.is_nan() {
        return (mean, f64::NAN);
    }
    let df = values.len() as u64 - 1;
    (mean, t_quantile(df, confidence) * standard_error)
}

/// A Latin hypercube sample (McKay, Beckman & Conover 1979, Technometrics 21:239): `n` points
/// in `dimensions` dimensions, in (0, 1), as `result[point][dimension]`. In every dimension
/// exactly one point falls in each of the n strata `[i/n, (i+1)/n)`, uniformly within it, and
/// the strata are permuted independently per dimension; so each input's n values cover its
/// whole range evenly, where n independent draws would leave gaps and clusters, and the
/// estimate of a mean over them has a variance below simple random sampling's for any
/// function monotone in each input (McKay et al., theorem 1).
///
/// Dimension d is drawn from its own stream, `Stream::owned(seed, UncertainInputs, d)`: first
/// its permutation of the strata (Fisher-Yates, from the last place down), then the n
/// offsets within them, point after point. So the sample is a function of (n, dimensions,
/// seed), and its first k dimensions are the same however many are asked for: adding an
/// uncertain input does not reshuffle the others.
///
/// # Panics
///
/// With more than 65,536 dimensions, the number of streams a purpose has.
pub fn latin_hypercube(n: usize, dimensions: usize, seed: u64) -> Vec<Vec<f64>> {
    let columns: Vec<Vec<f64>> = (0..dimensions)
        .map(|dimension| {
            let owner = u16::try_from(dimension).expect("at most 65,536 dimensions");
            stratified(
                n,
                &mut Stream::owned(seed, Purpose::UncertainInputs, owner.into()),
            )
        })
        .collect();
    (0..n)
        .map(|point| columns.iter().map(|column| column[point]).collect())
        .collect()
}

/// One dimension of [`latin_hypercube`]: point i in the stratum `strata[i]` of a random
/// permutation, at `(strata[i] + u_i) / n` for `u_i` uniform in (0, 1).
fn stratified(n: usize, random: &mut Stream) -> Vec<f64> {
    let mut strata: Vec<usize> = (0..n).collect();
    for place in (1..n).rev() {
        let other = random.index(place as u64 + 1) as usize;
        strata.swap(place, other);
    }
    let size = n as f64;
    strata
        .into_iter()
        .map(|stratum| {
            // Uniform in (0, 1): the word's high 53 bits, centred in their cell.
            let offset = ((random.word() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64);
            let value = (stratum as f64 + offset) / size;
            // Rounding can carry a value onto the stratum's upper edge, the next stratum's.
            let edge = (stratum + 1) as f64 / size;
            if value >= edge {
                edge.next_down()
            } else {
                value
            }
        })
        .collect()
}

/// The ranks of `values`, 1 for the smallest, tied values each getting the mean of the ranks
/// they span (so the ranks always sum to n(n+1)/2). NaN sorts above every number
/// (`f64::total_cmp`).
pub fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let value = values[order[start]];
        let end = start
            + order[start..]
                .iter()
                .take_while(|&&i| values[i].total_cmp(&value).is_eq())
                .count();
        // Places start..end hold ranks start + 1 to end; their mean:
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// Spearman's rank correlation (1904, Am J Psychol 15:72): Pearson's correlation of the
/// average ranks ([`ranks`]), `sum (rx - m)(ry - m) / sqrt(sum (rx - m)^2 sum (ry - m)^2)`
/// with `m = (n + 1)/2`; with ties this is the exact coefficient, where the textbook
/// `1 - 6 sum d^2 / (n (n^2 - 1))` is not. In [-1, 1]: 1 when y increases with x, -1 when it
/// decreases, whatever the shape. `None` when the lengths differ, with fewer than 3 values,
/// or when either side is constant (no ordering to correlate).
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 3 {
        return None;
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let mean = (x.len() + 1) as f64 / 2.0;
    let (mut xy, mut xx, mut yy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        let (a, b) = (a - mean, b - mean);
        xy += a * b;
        xx += a * a;
        yy += b * b;
    }
    if xx == 0.0 || yy == 0.0 {
        return None;
    }
    Some((xy / (xx * yy).sqrt()).clamp(-1.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    /// P(X >= k) for X binomial(n, p), summed term by term: the definition the exact interval
    /// is checked against, independent of the incomplete beta function. The terms go by
    /// `P(j + 1) = P(j) (n - j) p / ((j + 1)(1 - p))` from `P(0) = (1 - p)^n`, in logarithms,
    /// since `P(0)` underflows for large n.
    fn binomial_at_least(k: u64, n: u64, p: f64) -> f64 {
        let mut ln_term = n as f64 * (-p).ln_1p();
        let mut sum = 0.0;
        for j in 0..=n {
            if j >= k {
                sum += ln_term.exp();
            }
            ln_term += ((n - j) as f64 / (j + 1) as f64 * p / (1.0 - p)).ln();
        }
        sum
    }

    /// Newcombe (1998), "Two-sided confidence intervals for the single proportion: comparison
    /// of seven methods", Statistics in Medicine 17:857-872, table I: 95% intervals by method 3
    /// (Wilson's score, no continuity correction) and method 5 (exact, Clopper-Pearson), to
    /// four decimals. The same figures come out of an independent 40-digit computation
    /// (mpmath: bisection on the regularized incomplete beta, and Wilson's closed form).
    #[test]
    fn intervals_match_newcombes_table() {
        for (k, n, wilson_expected, exact_expected) in [
            (81, 263, (0.2553, 0.3662), (0.2527, 0.3676)),
            (15, 148, (0.0624, 0.1605), (0.0578, 0.1617)),
            (0, 20, (0.0, 0.1611), (0.0, 0.1684)),
            (1, 29, (0.0061, 0.1718), (0.0009, 0.1776)),
            (29, 29, (0.8830, 1.0), (0.8806, 1.0)),
        ] {
            let (low, high) = wilson(k, n, 0.95);
            assert!(close(low, wilson_expected.0, 5e-5), "{k}/{n}: {low}");
            assert!(close(high, wilson_expected.1, 5e-5), "{k}/{n}: {high}");
            let (low, high) = clopper_pearson(k, n, 0.95);
            assert!(close(low, exact_expected.0, 5e-5), "{k}/{n}: {low}");
            assert!(close(high, exact_expected.1, 5e-5), "{k}/{n}: {high}");
        }
        // The ends are exact, and no trials say nothing.
        assert_eq!(clopper_pearson(0, 20, 0.95).0, 0.0);
        assert_eq!(clopper_pearson(29, 29, 0.95).1, 1.0);
        assert_eq!(wilson(0, 20, 0.95).0, 0.0);
        assert_eq!(wilson(29, 29, 0.95).1, 1.0);
        assert_eq!(clopper_pearson(0, 0, 0.95), (0.0, 1.0));
        assert_eq!(wilson(0, 0, 0.95), (0.0, 1.0));
    }

    /// The exact interval's definition (Clopper & Pearson 1934): at the low bound, seeing k or
    /// more of n has probability alpha/2; at the high bound, seeing k or fewer does. Checked
    /// by the binomial sum itself, for small and large n, rare and common outcomes, and 95%
    /// and 99%. For 0 of n the high bound is also closed-form: `1 - (alpha/2)^(1/n)`.
    #[test]
    fn exact_bounds_solve_the_binomial_tail_equations() {
        for (k, n) in [
            (1, 1),
            (1, 10),
            (3, 10),
            (9, 10),
            (81, 263),
            (5, 1000),
            (500, 1000),
        ] {
            for confidence in [0.95, 0.99] {
                let alpha_2 = (1.0 - confidence) / 2.0;
                let (low, high) = clopper_pearson(k, n, confidence);
                assert!(low < k as f64 / n as f64 && high > k as f64 / n as f64 || k == n);
                let above = binomial_at_least(k, n, low);
                assert!(close(above, alpha_2, 1e-10), "{k}/{n} low {low}: {above}");
                if k < n {
                    let below = 1.0 - binomial_at_least(k + 1, n, high);
                    assert!(close(below, alpha_2, 1e-10), "{k}/{n} high {high}: {below}");
                }
            }
        }
        for n in [1, 7, 50, 3000] {
            let high = clopper_pearson(0, n, 0.95).1;
            let closed = 1.0 - 0.025_f64.powf(1.0 / n as f64);
            assert!(close(high, closed, 1e-12), "0/{n}: {high} vs {closed}");
        }
    }

    /// Standard normal quantiles to full precision (the 97.5% and 90% points as R's `qnorm`
    /// and every table give them to 16 digits), its symmetry, and the far tail that AS 241's
    /// third approximation covers: 1e-20 gives -9.262340089798153 (40-digit mpmath,
    /// `sqrt(2) erfinv(2p - 1)`; to 1e-12 here).
    /// All of n trials succeeding give a lower bound of 0.025^(1/n) at 95%: 72 trials are the
    /// fewest above 0.95 (0.025^(1/71) = 0.94937, 0.025^(1/72) = 0.95006), 368 above 0.99
    /// (0.025^(1/367) = 0.98999).
    #[test]
    fn the_fewest_trials_above_a_probability_are_the_exact_bound() {
        assert_eq!(fewest_trials_above(0.95, 0.95), 72);
        assert_eq!(fewest_trials_above(0.99, 0.95), 368);
        for p in [0.5, 0.8, 0.9, 0.95, 0.99] {
            let n = fewest_trials_above(p, 0.95);
            assert!(clopper_pearson(n, n, 0.95).0 > p, "{p}: {n}");
            assert!(clopper_pearson(n - 1, n - 1, 0.95).0 <= p, "{p}: {n}");
        }
    }

    #[test]
    fn normal_quantiles_are_known_values() {
        assert!(close(normal_quantile(0.975), 1.959_963_984_540_054, 1e-15));
        assert!(close(normal_quantile(0.9), 1.281_551_565_544_600_4, 1e-15));
        assert_eq!(normal_quantile(0.5), 0.0);
        // Where 1 - p is exact, so that both sides ask the same question.
        for p in [2f64.powi(-40), 2f64.powi(-10), 0.0625, 0.25, 0.375] {
            assert_eq!(normal_quantile(p), -normal_quantile(1.0 - p), "{p}");
        }
        assert!(close(normal_quantile(1e-20), -9.262_340_089_798_153, 1e-12));
        assert!(normal_quantile(1.5).is_nan() && normal_quantile(f64::NAN).is_nan());
        assert_eq!(normal_quantile(0.0), f64::NEG_INFINITY);
    }

    /// Student's t 97.5% points as the standard tables print them to four decimals (e.g.
    /// Abramowitz & Stegun table 26.10; NIST/SEMATECH e-Handbook 1.3.6.7.2), and the normal
    /// quantile as the limit; 99% for df 1 is 63.6567. For df 1 the quantile is closed-form,
    /// `tan(pi c / 2)` (Cauchy), and for df 2 `sqrt(2 / (1 - c^2) - 2)`, both
    /// checked to 1e-9.
    #[test]
    fn t_quantiles_match_the_table() {
        for (df, expected) in [
            (1, 12.7062),
            (2, 4.3027),
            (5, 2.5706),
            (10, 2.2281),
            (30, 2.0423),
            (100, 1.9840),
        ] {
            let t = t_quantile(df, 0.95);
            assert!(close(t, expected, 5e-5), "df {df}: {t}");
        }
        assert!(close(t_quantile(1, 0.99), 63.6567, 5e-5));
        for confidence in [0.5, 0.9, 0.95, 0.999] {
            let cauchy = (std::f64::consts::PI * confidence / 2.0).tan();
            assert!(close(t_quantile(1, confidence), cauchy, 1e-9 * cauchy));
            let two = (2.0 / (1.0 - confidence * confidence) - 2.0).sqrt();
            assert!(close(t_quantile(2, confidence), two, 1e-9 * two));
        }
        // Many degrees of freedom: the normal quantile in the limit, and the Cornish-Fisher
        // series, exact to 1e-12 at df 1000 (its first omitted term is of order z^11/df^5),
        // agrees with the exact route up to the point where the series takes over.
        let z = normal_quantile(0.975);
        assert!(close(t_quantile(1_000_000_000_000, 0.95), z, 1e-11));
        for df in [1_000, 100_000, 1_000_000] {
            let series = cornish_fisher(z, df as f64);
            assert!(close(t_quantile(df, 0.95), series, 1e-11), "{df}");
        }
        assert!(t_quantile(0, 0.95).is_nan());
    }

    /// The incomplete beta function's closed forms: `I_x(a, 1) = x^a`, `I_x(1, b) =
    /// 1 - (1 - x)^b`, `I_x(1/2, 1/2) = (2/pi) asin(sqrt x)`, and `I_{1/2}(a, a) = 1/2`; and
    /// its inverse undoes it.
    #[test]
    fn incomplete_beta_has_its_closed_forms() {
        for x in [1e-6, 0.1, 0.37, 0.5, 0.9, 0.999] {
            for s in [0.5, 1.0, 3.0, 40.0] {
                assert!(close(incomplete_beta(s, 1.0, x), x.powf(s), 1e-14));
                assert!(close(
                    incomplete_beta(1.0, s, x),
                    1.0 - (1.0 - x).powf(s),
                    1e-14
                ));
                assert!(close(incomplete_beta(s, s, 0.5), 0.5, 1e-14));
            }
            let arcsine = 2.0 / std::f64::consts::PI * x.sqrt().asin();
            assert!(close(incomplete_beta(0.5, 0.5, x), arcsine, 1e-14));
        }
        for (a, b) in [
            (0.5, 0.5),
            (0.5, 200.0),
            (2.0, 3.0),
            (81.0, 183.0),
            (0.5, 1e4),
            (1e4, 1e4),
        ] {
            // To 1e-11 of p: x is found to within a few doubles, and near 1 one double moves
            // I_x by some 1e-14 (not nearer 1 than that: the x that solves it may lie between
            // two doubles).
            for p in [1e-9, 0.025, 0.5, 0.975] {
                let x = inverse_incomplete_beta(a, b, p);
                let back = incomplete_beta(a, b, x);
                assert!(close(back, p, 1e-11 * p), "{a} {b} {p}: {x} {back}");
            }
        }
        assert_eq!(inverse_incomplete_beta(2.0, 3.0, 0.0), 0.0);
        assert_eq!(inverse_incomplete_beta(2.0, 3.0, 1.0), 1.0);
    }

    /// The DKW band's coverage, simulated: 2000 samples of n = 50 uniforms, each covered when
    /// `D = sup |F_n - F| <= eps`, with `D = max_i max(i/n - u_(i), u_(i) - (i-1)/n)` over the
    /// sorted sample and F(u) = u. If the band covers with probability p >= 0.95 (Massart's
    /// bound), the covered count is binomial(2000, p) and falls below
    /// `0.95 - 3 sqrt(0.95 x 0.05 / 2000)` = 93.54% with probability about 0.1% (three
    /// standard errors; p(1 - p) only shrinks above 0.95). The test can fail: a band half as
    /// wide covers with probability near Kolmogorov's limit K(sqrt(50) eps/2) = K(0.679) =
    /// 0.25, and that is asserted below 50%, 25 standard errors away.
    #[test]
    fn dkw_band_covers_as_it_claims() {
        let (n, trials) = (50, 2000);
        let eps = dkw_half_width(n, 0.95);
        assert!(close(eps, (40.0_f64.ln() / 100.0).sqrt(), 1e-15));
        let mut stream = Stream::new(2026, Purpose::UncertainInputs);
        let distances: Vec<f64> = (0..trials)
            .map(|_| {
                let mut sample: Vec<f64> = (0..n).map(|_| stream.unit()).collect();
                sample.sort_by(f64::total_cmp);
                sample
                    .iter()
                    .enumerate()
                    .map(|(i, u)| ((i + 1) as f64 / n as f64 - u).max(u - i as f64 / n as f64))
                    .fold(0.0, f64::max)
            })
            .collect();
        let coverage =
            |eps: f64| distances.iter().filter(|&&d| d <= eps).count() as f64 / trials as f64;
        let floor = 0.95 - 3.0 * (0.95 * 0.05 / trials as f64).sqrt();
        assert!(coverage(eps) >= floor, "{} < {floor}", coverage(eps));
        assert!(coverage(eps / 2.0) < 0.5, "{}", coverage(eps / 2.0));
    }

    /// Sorted, a dimension's values fall one in each stratum [i/n, (i+1)/n).
    fn assert_stratified(column: &mut [f64]) {
        let n = column.len() as f64;
        column.sort_by(f64::total_cmp);
        for (i, &value) in column.iter().enumerate() {
            assert!(value > 0.0 && value < 1.0, "{value}");
            assert!(
                i as f64 / n <= value && value < (i + 1) as f64 / n,
                "{i}: {value}"
            );
        }
    }

    /// McKay, Beckman & Conover's construction, exactly: in every dimension one point per
    /// stratum; the same sample for the same (n, dimensions, seed) and another for another
    /// seed; the first dimensions the same whatever the number asked for; and dimensions that
    /// differ from one another (their permutations are independent).
    #[test]
    fn latin_hypercube_is_stratified_and_stable() {
        for (n, dimensions) in [(1, 1), (2, 3), (10, 4), (97, 2), (1000, 5)] {
            let sample = latin_hypercube(n, dimensions, 7);
            assert_eq!(sample.len(), n);
            for dimension in 0..dimensions {
                let mut column: Vec<f64> = sample.iter().map(|point| point[dimension]).collect();
                assert_stratified(&mut column);
            }
        }
        let sample = latin_hypercube(50, 3, 11);
        assert_eq!(sample, latin_hypercube(50, 3, 11));
        assert_ne!(sample, latin_hypercube(50, 3, 12));
        let wider = latin_hypercube(50, 6, 11);
        for (point, wide) in sample.iter().zip(&wider) {
            assert_eq!(point[..], wide[..3]);
        }
        let strata = |d: usize| -> Vec<usize> {
            sample
                .iter()
                .map(|point| (point[d] * 50.0) as usize)
                .collect()
        };
        assert_ne!(strata(0), strata(1));
        assert!(latin_hypercube(0, 3, 1).is_empty());
    }

    /// Ranks by hand: [10, 20, 20, 5, 20] has 5 first, 10 second, and the three 20s share
    /// ranks 3, 4 and 5, so each gets 4.
    #[test]
    fn ties_get_their_mean_rank() {
        assert_eq!(
            ranks(&[10.0, 20.0, 20.0, 5.0, 20.0]),
            [2.0, 4.0, 4.0, 1.0, 4.0]
        );
        assert_eq!(ranks(&[3.0, 1.0, 2.0]), [3.0, 1.0, 2.0]);
        assert!(ranks(&[]).is_empty());
    }

    /// Spearman's coefficient by hand, with ties: x = [1, 2, 3, 4, 5], y = [2, 1, 4, 4, 5]
    /// have ranks 1 to 5 and [2, 1, 3.5, 3.5, 5]; centred on 3 they are [-2, -1, 0, 1, 2] and
    /// [-1, -2, 0.5, 0.5, 2], whose products sum to 2 + 2 + 0 + 0.5 + 4 = 8.5 and squares to
    /// 10 and 9.5, so rho = 8.5 / sqrt(95) = 0.87208. Any increasing y gives 1 and any
    /// decreasing -1,
    /// however curved; a constant side, differing lengths or fewer than 3 values give None.
    #[test]
    fn spearman_by_hand() {
        let rho = spearman(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 1.0, 4.0, 4.0, 5.0]).unwrap();
        assert!(close(rho, 8.5 / 95f64.sqrt(), 1e-15), "{rho}");
        let x: Vec<f64> = (1..=20).map(f64::from).collect();
        let cubed: Vec<f64> = x.iter().map(|v| v.powi(3)).collect();
        let falling: Vec<f64> = x.iter().map(|v| (-v).exp()).collect();
        assert_eq!(spearman(&x, &cubed), Some(1.0));
        assert_eq!(spearman(&x, &falling), Some(-1.0));
        assert_eq!(spearman(&x, &[4.0; 20]), None);
        assert_eq!(spearman(&[4.0; 20], &x), None);
        assert_eq!(spearman(&x, &x[1..]), None);
        assert_eq!(spearman(&[1.0, 2.0], &[2.0, 1.0]), None);
    }

    /// A t-interval by hand: [2, 4, 4, 4, 5, 5, 7, 9] has mean 5 and squared deviations
    /// summing to 32, so s^2 = 32/7 and the standard error sqrt(32/7/8) = sqrt(4/7); the 95%
    /// half-width is t(0.975; 7) = 2.364624 (tables: 2.3646) times it, 1.787488. One value
    /// has no half-width, none has no mean.
    #[test]
    fn mean_interval_by_hand() {
        let (mean, half) = mean_interval(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], 0.95);
        assert_eq!(mean, 5.0);
        assert!(
            close(half, 2.364_624_252 * (4.0_f64 / 7.0).sqrt(), 1e-8),
            "{half}"
        );
        assert!(close(half, 1.787_488, 5e-6), "{half}");
        let (mean, half) = mean_interval(&[3.0], 0.95);
        assert_eq!(mean, 3.0);
        assert!(half.is_nan());
        assert!(mean_interval(&[], 0.95).0.is_nan());
    }
}
