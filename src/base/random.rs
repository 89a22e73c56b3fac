//! Seeded random streams, one per purpose, and the samplers built on them.
//!
//! Every random number in a simulation comes from a ChaCha8 stream keyed by the scenario seed.
//! Each purpose (arrivals, operation choice, network, service, jitter, errors) has its own
//! stream number, so drawing more of one never shifts another: every policy compared in one
//! scenario consumes the arrival and operation streams identically and therefore sees exactly
//! the same arrivals and operations, however differently it retries. Purposes that belong to a
//! service (its service times, its errors, its retries toward the services it calls) have one
//! stream per service ([`Stream::owned`]), the purpose in the low 32 bits of the stream number
//! and the service's index above; service 0's streams are the purpose's own, so a scenario with
//! one service draws exactly what it drew before topologies existed.
//!
//! The samplers are written here rather than taken from a distribution crate, so that outputs do
//! not change when such a crate changes, and the transcendental functions come from `libm`
//! (pure Rust) rather than the platform's C library, so that they are the same on every machine.
//!
//! A stream takes its words from the generator [`AHEAD`] at a time. Most streams draw nothing
//! but exponentials (a service's service times, the network's latencies), and an exponential's
//! logarithm, computed where it is needed, is a chain of some fifty dependent operations that
//! the event waits for: a tenth of a run went to waiting on them. So once a batch of words has
//! gone to exponentials alone, the next batch's logarithms are computed together as it is
//! taken, where they overlap one another, and each exponential draw then costs a
//! multiplication. The words are the same and are used in the same order whatever is drawn, so
//! every draw is the value it always was; only where its logarithm is computed moves.

mod ln;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// What a stream is used for; the discriminant is the ChaCha stream number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum Purpose {
    /// When operations start and which client starts them.
    Arrivals = 1,
    /// Which endpoint an operation calls.
    Operations = 2,
    /// Latency and loss of each message.
    Network = 3,
    /// Service time of each request.
    Service = 4,
    /// Jitter of each retry delay.
    Jitter = 5,
    /// Load-independent errors.
    Errors = 6,
    /// Jitter of the retry delays of a service calling the next one.
    CallerJitter = 7,
    /// A service's adaptive concurrency limit (its probes and jittered windows).
    Limit = 8,
    /// A service's cache: hit or miss.
    Cache = 9,
    /// The user clients' overload controls (adaptive throttling's local rejections).
    ClientControl = 10,
    /// The overload controls of a service calling the next one.
    CallerControl = 11,
}

/// Words a stream takes from its generator at a time.
pub const AHEAD: usize = 32;

/// One random stream.
#[derive(Debug, Clone)]
pub struct Stream {
    generator: ChaCha8Rng,
    /// Words taken from the generator, used from `next` on.
    words: [u64; AHEAD],
    next: usize,
    /// `ln(1 - unit(word))` of each word, computed with the batch when `logs_ready`.
    logs: [f64; AHEAD],
    logs_ready: bool,
    /// Whether a word of the batch went to something other than an exponential.
    mixed: bool,
}

use ln::{ln_one_minus, ln_one_minus_all, unit as to_unit};

impl Stream {
    /// The stream for `purpose` under `seed`. The seed fills the first eight bytes of the
    /// ChaCha key, little-endian; this mapping is part of the output format and must not change.
    pub fn new(seed: u64, purpose: Purpose) -> Stream {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        let mut generator = ChaCha8Rng::from_seed(key);
        generator.set_stream(purpose as u64);
        Stream {
            generator,
            words: [0; AHEAD],
            next: AHEAD,
            logs: [0.0; AHEAD],
            logs_ready: false,
            mixed: false,
        }
    }

    /// The stream for `purpose` of service number `owner` under `seed`: owner 0's is
    /// [`Stream::new`]'s.
    pub fn owned(seed: u64, purpose: Purpose, owner: u16) -> Stream {
        let mut stream = Stream::new(seed, purpose);
        stream
            .generator
            .set_stream(purpose as u64 | u64::from(owner) << 32);
        stream
    }

    /// Takes the next batch of words from the generator, with their logarithms if the last
    /// batch went to exponentials alone.
    #[cold]
    fn refill(&mut self) {
        // In bulk: the generator's bytes, little-endian, are its words in order (each word is
        // two of its 32-bit outputs, the first low), as `next_u64` would give them one by one.
        let mut bytes = [0u8; AHEAD * 8];
        self.generator.fill_bytes(&mut bytes);
        for (word, bytes) in self.words.iter_mut().zip(bytes.chunks_exact(8)) {
            *word = u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
        }
        self.next = 0;
        self.logs_ready = !self.mixed;
        self.mixed = false;
        if self.logs_ready {
            ln_one_minus_all(&self.words, &mut self.logs);
        }
    }

    /// The index of the next word of the batch, taken (with a new batch if this one is used up).
    #[inline]
    fn take(&mut self) -> usize {
        if self.next == AHEAD {
            self.refill();
        }
        let index = self.next;
        self.next += 1;
        index
    }

    /// The next word, for any draw but an exponential.
    #[inline]
    fn word(&mut self) -> u64 {
        let index = self.take();
        self.mixed = true;
        self.words[index]
    }

    /// A uniform draw from `[0, 1)` with 53 random bits.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        to_unit(self.word())
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// A uniform index in `0..n` (n > 0), by Lemire's multiply-shift; its bias is below
    /// `n / 2^64`, far under anything a simulation can observe.
    #[inline]
    pub fn index(&mut self, n: u64) -> u64 {
        ((u128::from(self.word()) * u128::from(n)) >> 64) as u64
    }

    /// An exponential draw with the given mean: `-ln(1 - u) * mean`.
    #[inline]
    pub fn exponential(&mut self, mean: f64) -> f64 {
        let index = self.take();
        let log = if self.logs_ready {
            self.logs[index]
        } else {
            ln_one_minus(self.words[index])
        };
        -log * mean
    }

    /// A standard normal draw (Box-Muller, one of the pair).
    pub fn standard_normal(&mut self) -> f64 {
        let radius = libm::sqrt(-2.0 * libm::log(1.0 - self.unit()));
        radius * libm::cos(std::f64::consts::TAU * self.unit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let draws = |seed, purpose| {
            let mut stream = Stream::new(seed, purpose);
            (0..4).map(|_| stream.unit()).collect::<Vec<_>>()
        };
        assert_eq!(draws(7, Purpose::Arrivals), draws(7, Purpose::Arrivals));
        assert_ne!(draws(7, Purpose::Arrivals), draws(7, Purpose::Service));
        assert_ne!(draws(7, Purpose::Arrivals), draws(8, Purpose::Arrivals));
        let owned = |owner| {
            let mut stream = Stream::owned(7, Purpose::Service, owner);
            (0..4).map(|_| stream.unit()).collect::<Vec<_>>()
        };
        assert_eq!(owned(0), draws(7, Purpose::Service));
        assert_ne!(owned(1), owned(0));
        assert_ne!(owned(1), owned(2));
    }

    /// Words taken in bulk are the generator's words one by one, batch after batch.
    #[test]
    fn bulk_words_are_the_generators_words() {
        let mut stream = Stream::owned(42, Purpose::Network, 3);
        let mut generator = stream.generator.clone();
        for _ in 0..3 * AHEAD + 5 {
            assert_eq!(stream.word(), generator.next_u64());
        }
    }

    #[test]
    fn the_stream_format_is_pinned() {
        // Changing the key layout or the generator would change every committed output.
        let mut stream = Stream::new(42, Purpose::Arrivals);
        assert_eq!(stream.word(), PINNED_FIRST_DRAW);
    }
    const PINNED_FIRST_DRAW: u64 = 14_330_608_400_789_313_726;

    /// Mean and variance of n draws, against theory with a 5-sigma margin.
    fn check_moments(mut draw: impl FnMut() -> f64, mean: f64, variance: f64) {
        let n = 200_000;
        let samples: Vec<f64> = (0..n).map(|_| draw()).collect();
        let sample_mean = samples.iter().sum::<f64>() / n as f64;
        let sample_variance = samples
            .iter()
            .map(|x| (x - sample_mean).powi(2))
            .sum::<f64>()
            / (n - 1) as f64;
        let mean_tolerance = 5.0 * (variance / n as f64).sqrt();
        assert!(
            (sample_mean - mean).abs() < mean_tolerance,
            "mean {sample_mean} vs {mean} ± {mean_tolerance}"
        );
        // The variance of a sample variance is (μ4 - σ⁴) / n; μ4 = 9σ⁴ for the exponential,
        // the heaviest-tailed of these, and less for the others.
        let variance_tolerance = 5.0 * (8.0 * variance * variance / n as f64).sqrt();
        assert!(
            (sample_variance - variance).abs() < variance_tolerance,
            "variance {sample_variance} vs {variance} ± {variance_tolerance}"
        );
    }

    #[test]
    fn samplers_have_the_right_moments() {
        let mut stream = Stream::new(1, Purpose::Service);
        check_moments(|| stream.unit(), 0.5, 1.0 / 12.0);
        check_moments(|| stream.exponential(3.0), 3.0, 9.0);
        check_moments(|| stream.standard_normal(), 0.0, 1.0);
        check_moments(|| stream.index(10) as f64, 4.5, 99.0 / 12.0);
        check_moments(|| f64::from(u8::from(stream.chance(0.3))), 0.3, 0.21);
    }
}
