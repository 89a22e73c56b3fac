//! Seeded randomness: draws addressed by the request they belong to, streams for the rest, and
//! the samplers built on both.
//!
//! # Draws addressed by their request
//!
//! Everything random about one request (whether the network loses it, its latency each way,
//! whether it hits the cache or draws an injected error, the jitter of the retry decision after
//! it, a closed-loop client's think time after its operation) is a pure function of the seed,
//! what the draw is for ([`Draw`]) and the request's [`Identity`]: words of a counter-based
//! generator ([`philox`], Philox4x64-10) at the counter
//! `(identity.call, identity.part | draw << 32, block, 0)` under the key `(seed, 0)`. Most draws
//! of a request take one word, so its first words for its four commonest draws are one block
//! ([`RequestWords`]), computed once as it is sent; a draw that needs more goes on in blocks of
//! its own purpose. A service's service times are one such sequence per service, in the order
//! its workers take requests ([`Draw::ServiceTime`] says why). No draw depends on the order in
//! which events happen, so:
//!
//! - a step whose outcome is known in advance can be handled early or folded into the one
//!   before it (the engine answers a refusal's caller as the refusal is made) without moving a
//!   single draw of any other request;
//! - under two policies the same operation's same attempt sees the same latencies, and a
//!   service's n-th request served the same service time (common random numbers), so a
//!   difference between policies is more the policies' and less the draws';
//! - a feature that draws for a new [`Draw`] cannot shift what any other draw gives, and a
//!   feature that is off draws nothing.
//!
//! A Philox block costs some 140 instructions where a ChaCha8 stream's word cost two or three
//! (`cargo bench --profile release --bench random`: an exponential drawn as its own request's
//! takes 14 ns against 5 from a stream); one block a request keeps that to a few percent of a
//! run.
//!
//! # Streams
//!
//! What belongs to no request is drawn from a ChaCha8 stream per purpose ([`Purpose`]), keyed
//! by the seed: when operations arrive and which client starts them, which endpoint each calls
//! (both the same under every policy compared, which consume them identically), a service's
//! adaptive concurrency limit, and the overload controls of the callers. Purposes that belong to
//! a service have one stream per service ([`Stream::owned`]), the purpose in the low 32 bits of
//! the stream number and the service's index above; service 0's streams are the purpose's own.
//!
//! The samplers are written here rather than taken from a distribution crate, so that outputs do
//! not change when such a crate changes, and the transcendental functions come from `libm`
//! (pure Rust) rather than the platform's C library, so that they are the same on every machine.
//!
//! A stream takes its words from the generator [`AHEAD`] at a time. Exponentials, most of a
//! run's draws, come from the ziggurat ([`ziggurat`]): a multiplication and a comparison almost
//! always, where `-ln(1 - u)` was a chain of fifty operations that the event waited for.

pub mod philox;
mod ziggurat;

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
    /// A service's adaptive concurrency limit (its probes and jittered windows).
    Limit = 8,
    /// The user clients' overload controls (adaptive throttling's local rejections).
    ClientControl = 10,
    /// The overload controls of a service calling the next one.
    CallerControl = 11,
    /// When a Markov-modulated arrival process changes state.
    ArrivalPhases = 12,
    /// The Latin hypercube of a scenario's uncertain inputs: one stream per input (its index
    /// as the owner of [`Stream::owned`]), its strata's permutation then its offsets.
    UncertainInputs = 13,
    /// The overload controls of one call of a service that has its own policy
    /// (`call_retry`): the owner is the calling instance, shifted 8 bits, and the policy.
    CallControl = 14,
}

/// What a draw addressed by its request is for; the discriminant is part of the counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Draw {
    /// The request's latency to its service: it starts from the first of its
    /// [`RequestWords`].
    Request = 1,
    /// Whether it is a cache hit: the second.
    Cache = 2,
    /// Its response's latency back: from the third.
    Response = 3,
    /// The retry decision after it: its jitter (the fourth), then Retry-After's.
    Retry = 4,
    /// The four words above, one block for the request.
    RequestWords = 5,
    /// Whether the network loses the request.
    RequestLoss = 6,
    /// Whether the network loses the response.
    ResponseLoss = 7,
    /// An optimistic row's two network delays: the answer to the read, then the write.
    RowTrip = 8,
    /// A service's service times, in the order its workers take requests: one sequence per
    /// service (the identity's call is 0, its part the service's index), not per request.
    /// The service time belongs to the order of service so that the work a server does is the
    /// same sequence under every policy compared: measured over 20 seeds of the standard
    /// benchmark, a service time drawn per request made the difference between two policies'
    /// success rates 270 times as variable, since the requests a server serves differ from one
    /// policy to the next.
    ServiceTime = 9,
    /// Whether the request draws a load-independent error.
    Error = 10,
    /// A closed-loop client's think time after its operation.
    Think = 11,
    /// The identity of a call a service makes on behalf of a request ([`Identity::call`]).
    CallName = 12,
    /// The instance of a fleet a request goes to, and a caller's first round-robin position.
    Host = 13,
    /// Whether a user who gave up on an operation starts it again, and after how long: the
    /// identity is the intent's first operation and the press.
    ManualRetry = 14,
    /// Whether a caller that retries with a probability (`retry_probability`) retries after
    /// this request failed: drawn only when the decision allows a retry and the probability
    /// is below 1.
    RetryChance = 15,
}

/// Who a draw belongs to: a call (a user operation, or one service's call to the next made on
/// behalf of a request) and a part of it (which attempt, or which decision).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// The call: a user operation's number, or [`Identity::call_made_by`] of the request that
    /// made it.
    pub call: u64,
    /// The part of the call, as its caller numbers them (an attempt's index and kind).
    pub part: u32,
}

impl Identity {
    /// The generator's counter for block `block` of the draws for `draw` of this identity.
    #[inline(always)]
    fn counter(self, draw: Draw, block: u64) -> [u64; 4] {
        [
            self.call,
            u64::from(self.part) | u64::from(draw as u32) << 32,
            block,
            0,
        ]
    }

    /// The identity of call number `number` made on behalf of this request: a name that
    /// depends on nothing but the request and the number (Philox under the key zero, a
    /// bijection of the counter, cut to 63 bits), with the top bit set so that it is never a
    /// user operation's number. Two of a run's calls share a name with a chance of about
    /// `n^2 / 2^64`: for a hundred million calls, one run in two thousand; sharing one would
    /// make two calls draw alike, nothing worse.
    pub fn call_made_by(self, number: u8) -> u64 {
        philox::philox4x64(
            self.counter(Draw::CallName, u64::from(number)),
            &philox::RoundKeys::new([0, 0]),
        )[0] | 1 << 63
    }
}

/// The key of every draw addressed by its request in one run: the seed.
#[derive(Debug, Clone, Copy)]
pub struct Keyed {
    key: [u64; 2],
    /// The round keys of `key`, for the block every request draws.
    keys: philox::RoundKeys,
}

/// The first words of a request's draws, one generator block: its latency to the service
/// ([`Draw::Request`]), whether it hits the cache ([`Draw::Cache`]), its response's latency
/// back ([`Draw::Response`]) and the jitter of the retry decision after it ([`Draw::Retry`]),
/// in this order. Most draws of a request are one word each, so one block serves them all: it is
/// computed as the request is sent, and the words still to be used travel with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestWords(pub [u64; 4]);

impl RequestWords {
    /// The first word of the request's latency to its service.
    #[inline]
    pub fn request(self) -> u64 {
        self.0[0]
    }

    /// The word of its cache's hit or miss.
    #[inline]
    pub fn cache(self) -> u64 {
        self.0[1]
    }

    /// The first word of its response's latency back.
    #[inline]
    pub fn response(self) -> u64 {
        self.0[2]
    }

    /// The first word of the retry decision after it (its jitter).
    #[inline]
    pub fn retry(self) -> u64 {
        self.0[3]
    }
}

impl Keyed {
    /// The draws of a run seeded with `seed`.
    pub fn new(seed: u64) -> Keyed {
        Keyed {
            key: [seed, 0],
            keys: philox::RoundKeys::new([seed, 0]),
        }
    }

    /// The first words of `identity`'s draws.
    #[inline(always)]
    pub fn request_words(&self, identity: Identity) -> RequestWords {
        RequestWords(philox::philox4x64(
            identity.counter(Draw::RequestWords, 0),
            &self.keys,
        ))
    }

    /// The draws for `draw` of `identity`, from the first. Nothing is computed until one is
    /// taken.
    #[inline]
    pub fn draws(&self, draw: Draw, identity: Identity) -> Draws {
        Draws {
            key: self.key,
            counter: identity.counter(draw, 0),
            first: None,
            block: [0; 4],
            taken: WORDS_PER_BLOCK,
        }
    }

    /// The draws for `draw` of `identity` whose first word is `first` (its word of
    /// [`RequestWords`]), the words after it from `draw`'s own blocks; with no `first` (a
    /// draw that takes no word, such as a constant latency's, needs none), from those blocks
    /// alone.
    #[inline]
    pub fn draws_from(&self, draw: Draw, identity: Identity, first: Option<u64>) -> Draws {
        Draws {
            first,
            ..self.draws(draw, identity)
        }
    }
}

/// Words of 64 bits in one Philox block.
const WORDS_PER_BLOCK: u8 = 4;

/// The draws of one request for one purpose, in order: a given first word, if any, then
/// block after block of the generator.
#[derive(Debug, Clone)]
pub struct Draws {
    key: [u64; 2],
    counter: [u64; 4],
    first: Option<u64>,
    block: [u64; 4],
    /// Words of `block` already taken.
    taken: u8,
}

impl Random for Draws {
    #[inline(always)]
    fn word(&mut self) -> u64 {
        if let Some(first) = self.first.take() {
            return first;
        }
        if self.taken == WORDS_PER_BLOCK {
            self.block = philox::philox4x64(self.counter, &philox::RoundKeys::new(self.key));
            self.counter[2] += 1;
            self.taken = 0;
        }
        let word = self.block[usize::from(self.taken)];
        self.taken += 1;
        word
    }
}

/// A word's high 53 bits as a uniform draw from `[0, 1)`.
#[inline(always)]
fn unit(word: u64) -> f64 {
    (word >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A source of uniform 64-bit words, and the draws made from them.
pub trait Random {
    /// The next word.
    fn word(&mut self) -> u64;

    /// A uniform draw from `[0, 1)` with 53 random bits.
    #[inline]
    fn unit(&mut self) -> f64 {
        unit(self.word())
    }

    /// True with probability `p`; draws nothing when `p` is zero.
    #[inline]
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// A uniform index in `0..n` (n > 0), by Lemire's multiply-shift; its bias is below
    /// `n / 2^64`, far under anything a simulation can observe.
    #[inline]
    fn index(&mut self, n: u64) -> u64 {
        ((u128::from(self.word()) * u128::from(n)) >> 64) as u64
    }

    /// An exponential draw with the given mean, by the ziggurat ([`ziggurat`]).
    #[inline(always)]
    fn exponential(&mut self, mean: f64) -> f64 {
        ziggurat::standard_exponential(|| self.word()) * mean
    }

    /// A standard normal draw (Box-Muller, one of the pair).
    fn standard_normal(&mut self) -> f64 {
        let radius = libm::sqrt(-2.0 * libm::log(1.0 - self.unit()));
        radius * libm::cos(std::f64::consts::TAU * self.unit())
    }
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
}

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
        }
    }

    /// The stream for `purpose` of service number `owner` under `seed`: owner 0's is
    /// [`Stream::new`]'s.
    pub fn owned(seed: u64, purpose: Purpose, owner: u32) -> Stream {
        let mut stream = Stream::new(seed, purpose);
        stream
            .generator
            .set_stream(purpose as u64 | u64::from(owner) << 32);
        stream
    }

    /// Takes the next batch of words from the generator.
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
    }
}

impl Random for Stream {
    #[inline]
    fn word(&mut self) -> u64 {
        if self.next == AHEAD {
            self.refill();
        }
        let word = self.words[self.next];
        self.next += 1;
        word
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
        assert_ne!(draws(7, Purpose::Arrivals), draws(7, Purpose::Limit));
        assert_ne!(draws(7, Purpose::Arrivals), draws(8, Purpose::Arrivals));
        let owned = |owner| {
            let mut stream = Stream::owned(7, Purpose::Limit, owner);
            (0..4).map(|_| stream.unit()).collect::<Vec<_>>()
        };
        assert_eq!(owned(0), draws(7, Purpose::Limit));
        assert_ne!(owned(1), owned(0));
        assert_ne!(owned(1), owned(2));
    }

    /// Words taken in bulk are the generator's words one by one, batch after batch.
    #[test]
    fn bulk_words_are_the_generators_words() {
        let mut stream = Stream::owned(42, Purpose::Limit, 3);
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
        let mut stream = Stream::new(1, Purpose::Limit);
        check_samplers(&mut stream);
        let identity = Identity { call: 5, part: 0 };
        check_samplers(&mut Keyed::new(1).draws(Draw::Think, identity));
    }

    fn check_samplers(random: &mut impl Random) {
        check_moments(|| random.unit(), 0.5, 1.0 / 12.0);
        check_moments(|| random.exponential(3.0), 3.0, 9.0);
        check_moments(|| random.standard_normal(), 0.0, 1.0);
        check_moments(|| random.index(10) as f64, 4.5, 99.0 / 12.0);
        check_moments(|| f64::from(u8::from(random.chance(0.3))), 0.3, 0.21);
    }

    /// A draw depends on the seed, its purpose and its request alone: taking other draws
    /// before it, in any order, changes nothing, and changing any of the three changes it.
    #[test]
    fn keyed_draws_are_addressed_not_sequenced() {
        let keyed = Keyed::new(42);
        let first = |draw, call, part| {
            let mut draws = keyed.draws(draw, Identity { call, part });
            (0..6).map(|_| draws.word()).collect::<Vec<_>>()
        };
        let reference = first(Draw::Cache, 7, 1);
        for _ in 0..3 {
            first(Draw::Error, 7, 1);
            first(Draw::Cache, 8, 1);
        }
        assert_eq!(first(Draw::Cache, 7, 1), reference);
        assert_ne!(first(Draw::Error, 7, 1), reference);
        assert_ne!(first(Draw::Cache, 8, 1), reference);
        assert_ne!(first(Draw::Cache, 7, 2), reference);
        assert_ne!(first(Draw::Cache, 7 | 1 << 40, 1), reference);
        let mut other_seed = Keyed::new(43).draws(Draw::Cache, Identity { call: 7, part: 1 });
        assert_ne!(other_seed.word(), reference[0]);
        // The words are Philox's, block after block.
        let purpose = (Draw::Cache as u64) << 32;
        let keys = philox::RoundKeys::new([42, 0]);
        let block = philox::philox4x64([7, 1 | purpose, 0, 0], &keys);
        let next = philox::philox4x64([7, 1 | purpose, 1, 0], &keys);
        assert_eq!(reference[..4], block);
        assert_eq!(reference[4..], next[..2]);
    }

    /// A request's first words are one block of their own, and a draw given its first word
    /// goes on in its purpose's own blocks: the latency's second word (a ziggurat's rare
    /// second try) is not the service time's first.
    #[test]
    fn request_words_start_each_purpose() {
        let keyed = Keyed::new(9);
        let identity = Identity { call: 3, part: 0 };
        let words = keyed.request_words(identity);
        let purpose = (Draw::RequestWords as u64) << 32;
        let keys = philox::RoundKeys::new([9, 0]);
        assert_eq!(words.0, philox::philox4x64([3, purpose, 0, 0], &keys));
        let mut latency = keyed.draws_from(Draw::Request, identity, Some(words.0[0]));
        assert_eq!(latency.word(), words.0[0]);
        let own = keyed.draws(Draw::Request, identity).word();
        assert_eq!(latency.word(), own);
        assert!(!words.0.contains(&own));
    }

    /// A call's name depends on the request that made it and its number, never on the seed,
    /// and is never a user operation's number.
    #[test]
    fn call_names_are_distinct_and_marked() {
        let request = Identity { call: 3, part: 0 };
        let names: Vec<u64> = (0..4).map(|number| request.call_made_by(number)).collect();
        assert!(names.iter().all(|name| name >> 63 == 1));
        for (i, a) in names.iter().enumerate() {
            assert!(names[i + 1..].iter().all(|b| a != b));
        }
        assert_ne!(Identity { call: 3, part: 1 }.call_made_by(0), names[0]);
        assert_eq!(request.call_made_by(2), names[2]);
    }
}
