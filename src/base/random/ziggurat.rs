//! Exponential draws by the ziggurat method of Marsaglia and Tsang, "The Ziggurat Method for
//! Generating Random Variables" (Journal of Statistical Software 5(8), 2000), with 256 layers.
//!
//! An exponential is most of a run's draws (latencies, service times, think times), and
//! `-ln(1 - u)` is a chain of some fifty dependent operations that the event waits for. The
//! ziggurat covers the density with 256 layers of equal area: a word picks a layer (its low
//! eight bits) and a point along it (its high 53); 98.9% of the time the point lies under the
//! layer above, inside the density, and is the draw, one multiplication and one comparison.
//! Otherwise it is tested against the density itself, or, in the base layer, drawn from the
//! tail beyond `R` as `R - ln(u)` (the exponential forgets where it starts). Every draw is an
//! exact exponential; the tables are built once from `libm`, the same on every machine.

use std::sync::LazyLock;

/// Layers.
const LAYERS: usize = 256;
/// Where the tail starts: the right edge of the lowest layer but the base.
const R: f64 = 7.697_117_470_131_05;
/// The area of each layer, the base (a rectangle and the tail) included.
const AREA: f64 = 0.003_949_659_822_581_557;

/// The layers' right edges `x` (from the base's virtual width down to 0) and the density there.
struct Tables {
    x: [f64; LAYERS + 1],
    density: [f64; LAYERS + 1],
}

static TABLES: LazyLock<Tables> = LazyLock::new(|| {
    let mut x = [0.0; LAYERS + 1];
    x[0] = AREA / libm::exp(-R);
    x[1] = R;
    for i in 1..LAYERS - 1 {
        x[i + 1] = -libm::log(AREA / x[i] + libm::exp(-x[i]));
    }
    x[LAYERS] = 0.0;
    let density = x.map(|x| libm::exp(-x));
    Tables { x, density }
});

/// A standard exponential draw (mean 1) from the words `word` gives, one word 98.9% of the
/// time.
#[inline(always)]
pub(super) fn standard_exponential(mut word: impl FnMut() -> u64) -> f64 {
    let tables = &*TABLES;
    let bits = word();
    let layer = (bits & 0xff) as usize;
    let x = super::unit(bits) * tables.x[layer];
    if x < tables.x[layer + 1] {
        return x;
    }
    outside_the_layer_above(tables, layer, x, word)
}

/// The rest of [`standard_exponential`] when the point `x` of `layer` is not under the layer
/// above: the tail, a test against the density, or a new point.
#[cold]
#[inline(never)]
fn outside_the_layer_above(
    tables: &Tables,
    mut layer: usize,
    mut x: f64,
    mut word: impl FnMut() -> u64,
) -> f64 {
    loop {
        if layer == 0 {
            return R - libm::log(1.0 - super::unit(word()));
        }
        let (top, bottom) = (tables.density[layer + 1], tables.density[layer]);
        if top + (bottom - top) * super::unit(word()) < libm::exp(-x) {
            return x;
        }
        let bits = word();
        layer = (bits & 0xff) as usize;
        x = super::unit(bits) * tables.x[layer];
        if x < tables.x[layer + 1] {
            return x;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layers close: built down from `R` with the published `AREA`, the last edge lands
    /// on zero (to the table's precision), and every layer has the same area.
    #[test]
    fn the_layers_have_equal_areas_and_close() {
        let tables = &*TABLES;
        // Layer i (1 <= i < 255) is the rectangle of width x[i] between density[i] and
        // density[i + 1].
        for i in 1..LAYERS - 1 {
            let area = tables.x[i] * (tables.density[i + 1] - tables.density[i]);
            assert!((area - AREA).abs() < 1e-12, "layer {i}: {area}");
        }
        // The top layer: from x[255] to 0, density from density[255] to 1.
        assert!(tables.x[LAYERS - 1] < 1e-1 && tables.x[LAYERS - 1] > 0.0);
        // The base: a rectangle R wide and exp(-R) high, and the tail beyond R (area exp(-R)).
        let base = R * libm::exp(-R) + libm::exp(-R);
        assert!((base - AREA).abs() < 1e-15);
        let top = tables.x[LAYERS - 1] * (1.0 - tables.density[LAYERS - 1]);
        assert!((top - AREA).abs() < 1e-9, "top layer {top}");
    }

    /// The empirical distribution of a million draws against the exponential's CDF, at
    /// quantiles from the median out to the tail beyond R: each count within 5 standard
    /// deviations of its binomial expectation.
    #[test]
    fn draws_follow_the_exponential_distribution() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut word = || {
            // SplitMix64: a plain sequence, enough to test the transformation.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let n = 1_000_000;
        let draws: Vec<f64> = (0..n).map(|_| standard_exponential(&mut word)).collect();
        for threshold in [0.01, 0.1, 0.5, 0.693, 1.0, 2.0, 4.0, 7.0, R, 9.0] {
            let p = libm::exp(-threshold);
            let above = draws.iter().filter(|&&x| x > threshold).count() as f64;
            let expected = n as f64 * p;
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (above - expected).abs() < 5.0 * sd + 1.0,
                "above {threshold}: {above} against {expected} ± {}",
                5.0 * sd
            );
        }
    }
}
