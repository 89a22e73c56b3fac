//! Servers that slow down when busy: Gunther's Universal Scalability Law (USL) as a multiplier
//! of a request's service time.
//!
//! The USL says a system with `N` requests in service serves `X(N) = N / (S m(N))` a second,
//! `S` the service time of a request alone and `m(N) = 1 + sigma (N - 1) + kappa N (N - 1)`:
//! `sigma` is contention (a serialised share of the work: a lock, one database connection),
//! `kappa` coherency (crosstalk between every pair: cache lines, lock state, replicas kept
//! consistent). Gunther shows it is the throughput of a machine-repairman queue whose service
//! rate depends on the number in service (N. J. Gunther, "Guerrilla Capacity Planning",
//! Springer 2007; the `usl` R package). Past `N* = sqrt((1 - sigma) / kappa)` more concurrency
//! serves fewer requests: the retrograde throughput that lets timeouts and retries hold a
//! service in collapse.
//!
//! **Sample at start.** A request's work is its service-time draw times `m(N)`, with `N` the
//! requests in service at its service when its work starts, itself included, fixed from then
//! on. The alternative, processor sharing, recomputes every in-service request's completion
//! whenever `N` changes: O(N) work and a rescheduled event per request at every arrival and
//! departure, where a request's completion is otherwise one event pushed once. Sampling at start
//! is what M. Brooker's `simple_collapse_sim` does (service time `1 s + 10 ms x concurrency`,
//! the new request counted, fixed at admission: here `sigma = 0.01 / 1.01`, `kappa = 0`, a base
//! of 1.01 s), and it is exact whenever `N` stays put while a request works, as in a closed loop
//! without think time or network delay, where the throughput is the USL's `X(N)` itself
//! (`tests/integration/scalability.rs`). When `N` moves during a request's work, the request
//! keeps the slowdown of the moment it started: as load rises the slowdown lags it by about a
//! service time, and as load falls the requests started in the rush finish at the rush's pace.
//!
//! **What is counted.** `N` is the requests the service's workers hold, whatever they are doing
//! with them: their own work, or waiting on the downstream calls a request makes (a worker is
//! held until its last call returns, as a thread-per-request server holds its thread, and a
//! thread blocked on a call still holds its share of the locks, memory and connections the
//! USL's terms stand for). Queued requests hold no worker and are not counted, nor are workers
//! paying for rejections (`rejection_cost`), which serve no request. So `N` is at most the
//! workers available, except just after capacity falls, while the requests already in service
//! finish. A request leaves the count when its worker lets it go: answered, failed, cancelled
//! (`cancellation`) or reset by a crash.

/// A service's slowdown with the requests in service, as configured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContentionModel {
    /// The serialised share of the work, 0 up to (not including) 1.
    pub sigma: f64,
    /// The cost of each pair of requests in service keeping coherent, at least 0 and finite.
    pub kappa: f64,
}

impl ContentionModel {
    /// `m(N) = 1 + sigma (N - 1) + kappa N (N - 1)`: how many times its drawn service time the
    /// work of a request takes when it starts with `in_service` requests in service, itself
    /// included (at least 1). Exactly 1 with `sigma = kappa = 0`, and finite however large
    /// `kappa` is (the largest finite number rather than infinity).
    #[inline]
    pub fn multiplier(&self, in_service: u64) -> f64 {
        let n = in_service as f64;
        (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0)).min(f64::MAX)
    }
}

impl ContentionModel {
    /// The most requests `workers` serve at once in the time one request alone takes: the
    /// greatest `N / m(N)` over the concurrencies `N` they allow, 1 to `workers`, which is at
    /// `N*` rounded when `workers` allow it, else at `workers`. Times the requests a worker
    /// serves a second alone, it is the service's capacity (`capacity_rps`): at full
    /// concurrency past the peak, it serves less.
    pub fn most_served(&self, workers: u64) -> f64 {
        if workers == 0 {
            return 0.0;
        }
        let peak = if self.kappa > 0.0 {
            ((1.0 - self.sigma) / self.kappa).sqrt()
        } else {
            f64::INFINITY
        };
        let below = (peak.floor() as u64).clamp(1, workers);
        let above = (peak.ceil().min(u64::MAX as f64) as u64).clamp(1, workers);
        [below, above]
            .into_iter()
            .map(|n| n as f64 / self.multiplier(n))
            .fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The USL's multiplier at a few points: 1 alone, then the contention and coherency terms;
    /// Brooker's `1 s + 10 ms x concurrency` with a base of 1.01 s; nothing at all with both
    /// terms zero; and finite for the largest `kappa`.
    #[test]
    fn the_multiplier_is_the_usl_denominator() {
        let usl = ContentionModel {
            sigma: 0.05,
            kappa: 0.002,
        };
        assert_eq!(usl.multiplier(1), 1.0);
        assert!((usl.multiplier(22) - (1.0 + 0.05 * 21.0 + 0.002 * 22.0 * 21.0)).abs() < 1e-12);
        assert!((usl.multiplier(80) - 17.59).abs() < 1e-12);
        let brooker = ContentionModel {
            sigma: 0.01 / 1.01,
            kappa: 0.0,
        };
        for concurrency in [1, 2, 10, 100] {
            let seconds = 1.01 * brooker.multiplier(concurrency);
            let expected = 1.0 + 0.01 * concurrency as f64;
            assert!(
                (seconds - expected).abs() < 1e-12,
                "{seconds} vs {expected}"
            );
        }
        let off = ContentionModel {
            sigma: 0.0,
            kappa: 0.0,
        };
        for n in [1, 2, 1000, 10_000_000] {
            assert_eq!(off.multiplier(n), 1.0);
        }
        let huge = ContentionModel {
            sigma: 0.5,
            kappa: f64::MAX,
        };
        assert_eq!(huge.multiplier(10_000_000), f64::MAX);
        assert_eq!(0.0 * huge.multiplier(10_000_000), 0.0);
    }

    /// The most served is the greatest `N / m(N)` up to the workers, found by brute force.
    #[test]
    fn the_most_served_is_at_the_peak_or_the_workers() {
        for (sigma, kappa) in [
            (0.05, 0.002),
            (0.02, 0.0005),
            (0.3, 0.0),
            (0.0, 0.0),
            (0.0, 0.1),
        ] {
            let usl = ContentionModel { sigma, kappa };
            for workers in [1, 2, 5, 21, 22, 23, 44, 45, 200, 1000] {
                let brute = (1..=workers)
                    .map(|n| n as f64 / usl.multiplier(n))
                    .fold(0.0, f64::max);
                let most = usl.most_served(workers);
                assert!(
                    (most - brute).abs() < 1e-9,
                    "{sigma} {kappa} {workers}: {most} vs {brute}"
                );
            }
        }
        assert_eq!(
            ContentionModel {
                sigma: 0.1,
                kappa: 0.1
            }
            .most_served(0),
            0.0
        );
    }

    /// Past the peak `N* = sqrt((1 - sigma) / kappa)` throughput `N / m(N)` falls.
    #[test]
    fn throughput_peaks_at_n_star_and_then_falls() {
        let usl = ContentionModel {
            sigma: 0.05,
            kappa: 0.002,
        };
        let throughput = |n: u64| n as f64 / usl.multiplier(n);
        let peak = ((1.0f64 - 0.05) / 0.002).sqrt();
        assert!((21.0..22.0).contains(&peak), "{peak}");
        let best = (1..200).max_by(|&a, &b| throughput(a).total_cmp(&throughput(b)));
        assert_eq!(best, Some(22));
        assert!(throughput(80) < throughput(22));
        assert!(throughput(40) < throughput(22));
    }
}
