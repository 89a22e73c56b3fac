//! Criterion benchmark of a draw: from a stream in order, against one addressed by its request.
//!
//! The engine once drew every request's latencies and service time from streams shared by all
//! requests, in event order, a batch of words at a time ([`Stream`]); it now addresses each draw
//! by its request ([`Keyed`], Philox4x64-10), a block of four words a request. An exponential
//! (a ziggurat draw, one word almost always) is most of a run's draws. `keyed` starts a new
//! request for each draw, the worst case: a whole block for one word. Measured here: 14 ns
//! against 5 (`cargo bench --profile release --bench random`).

use criterion::{Criterion, criterion_group, criterion_main};
use retrystorm::base::random::{Draw, Identity, Keyed, Purpose, Random, Stream};
use std::hint::black_box;

fn exponential(c: &mut Criterion) {
    let mut group = c.benchmark_group("exponential draw");
    let mut stream = Stream::new(1, Purpose::Arrivals);
    group.bench_function("stream, in order", |bench| {
        bench.iter(|| black_box(stream.exponential(1000.0)))
    });
    let keyed = Keyed::new(1);
    let mut call = 0u64;
    group.bench_function("keyed, a request each", |bench| {
        bench.iter(|| {
            call += 1;
            let identity = Identity { call, part: 0 };
            black_box(
                keyed
                    .draws(Draw::Request, black_box(identity))
                    .exponential(1000.0),
            )
        })
    });
    group.finish();
}

// No plots: criterion's plotting backend needs a system font, and nothing here may.
criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = exponential
}
criterion_main!(benches);
