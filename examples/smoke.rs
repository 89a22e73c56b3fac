fn main() {
    let path = std::env::args().nth(1).unwrap();
    let scenario = retrystorm::scenario::load(std::path::Path::new(&path), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let (run, _) = retrystorm::run::run_scenario(
        &scenario,
        vec![retrystorm::engine::Quiet; scenario.policy.len()],
    );
    for p in &run.policies {
        println!(
            "{} {:?} events={} wall={:?}",
            p.name, p.summary, p.measurements.events, p.wall
        );
        for (i, b) in p.measurements.buckets.iter().enumerate() {
            println!(
                "  {i} att={} first={} retr={} ok={} 503={} reset={} to={} succ={} fail={} q={} w={}",
                b.attempts,
                b.first_attempts,
                b.retries,
                b.ok,
                b.rejected_503,
                b.resets,
                b.timeouts,
                b.succeeded,
                b.failed,
                b.queue_len,
                b.workers_available
            );
        }
    }
}
