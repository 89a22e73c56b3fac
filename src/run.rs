//! Running a scenario: every policy simulated on the same arrivals, in parallel.
//!
//! Each policy is one single-threaded simulation; rayon runs the policies side by side and the
//! results come back in the scenario's policy order, so the output is the same bytes whatever
//! the number of threads.

use std::time::{Duration as WallDuration, Instant};

use rayon::prelude::*;

use crate::capacity::CapacityCurve;
use crate::engine::{Observer, simulate};
use crate::metrics::{Measurements, RecoveryWindow, Summary};
use crate::scenario::Scenario;

/// One policy's results.
#[derive(Debug)]
pub struct PolicyRun {
    /// The policy's name.
    pub name: String,
    /// Everything measured.
    pub measurements: Measurements,
    /// The summary of the measurements.
    pub summary: Summary,
    /// Wall-clock time of the simulation.
    pub wall: WallDuration,
}

/// A whole scenario's results.
#[derive(Debug)]
pub struct ScenarioRun {
    /// The scenario, as simulated.
    pub scenario: Scenario,
    /// The incident window recovery is measured from.
    pub window: RecoveryWindow,
    /// Mean service time in microseconds, to turn workers into requests per second.
    pub service_mean_us: f64,
    /// One entry per policy, in the scenario's order.
    pub policies: Vec<PolicyRun>,
}

/// The window recovery is measured in: from the end of the scenario's incident (the later of
/// the times the capacity curve and the load curve return to their starting level) to the end
/// of arrivals.
pub fn recovery_window(scenario: &Scenario) -> RecoveryWindow {
    let upstream = &scenario.upstream;
    let capacity = CapacityCurve::new(upstream.workers.get(), &upstream.capacity).incident_end();
    let load = CapacityCurve::new(1, &scenario.clients.load).incident_end();
    RecoveryWindow {
        incident_end: capacity.max(load),
        duration: scenario.duration.get_ref().micros(),
    }
}

/// Simulates every policy of `scenario`, each watched by its observer (one per policy, in
/// order); the observers come back with the results.
pub fn run_scenario<O: Observer + Send>(
    scenario: &Scenario,
    observers: Vec<O>,
) -> (ScenarioRun, Vec<O>) {
    assert_eq!(
        observers.len(),
        scenario.policy.len(),
        "one observer per policy"
    );
    let upstream = &scenario.upstream;
    let window = recovery_window(scenario);
    let (policies, observers): (Vec<PolicyRun>, Vec<O>) = scenario
        .policy
        .par_iter()
        .zip(observers)
        .map(|(policy, mut observer)| {
            let started = Instant::now();
            let measurements = simulate(scenario, policy, &mut observer);
            let wall = started.elapsed();
            let run = PolicyRun {
                name: policy.name.get_ref().clone(),
                summary: measurements.summary(window),
                measurements,
                wall,
            };
            (run, observer)
        })
        .unzip();
    let run = ScenarioRun {
        scenario: scenario.clone(),
        window,
        service_mean_us: upstream.service_time.mean_micros(),
        policies,
    };
    (run, observers)
}
