//! Running a scenario: every policy simulated on the same arrivals, in parallel.
//!
//! Each policy is one single-threaded simulation of its own [`Model`] (the scenario as that
//! policy sees it); rayon runs the policies side by side and the results come back in the
//! scenario's policy order, so the output is the same bytes whatever the number of threads.
//! What a run will cost is estimated beforehand, from the scenario alone ([`cost`]).

pub mod cost;
pub mod forecast;

use std::time::{Duration as WallDuration, Instant};

use rayon::prelude::*;

use crate::engine::counters::Measurements;
use crate::engine::{Observer, Stalled, simulate};
use crate::model::Model;
use crate::scenario::{Overrides, Policy, Scenario};
use crate::vocabulary::metric::{ServiceSummary, Summary};

/// One policy's results.
#[derive(Debug)]
pub struct PolicyRun {
    /// The policy's name.
    pub name: String,
    /// What was simulated.
    pub model: Model,
    /// Everything measured.
    pub measurements: Measurements,
    /// The summary of the measurements.
    pub summary: Summary,
    /// Each service's summary, in the model's order.
    pub services: Vec<ServiceSummary>,
    /// Wall-clock time of the simulation.
    pub wall: WallDuration,
}

/// A whole scenario's results.
#[derive(Debug)]
pub struct ScenarioRun {
    /// The scenario, as simulated.
    pub scenario: Scenario,
    /// The scenario's topology as written, without any policy's overrides: the capacity and
    /// incidents the charts draw.
    pub model: Model,
    /// One entry per policy, in the scenario's order.
    pub policies: Vec<PolicyRun>,
}

impl ScenarioRun {
    /// Whether the scenario is a topology of several services (then per-service files and
    /// charts are written).
    pub fn has_topology(&self) -> bool {
        self.model.services.len() > 1
    }

    /// Whether the users of some policy retry by hand (its `manual_retry`): then results are
    /// told per intent too, and a duplicate write is one of an intent.
    pub fn has_manual_retries(&self) -> bool {
        self.scenario
            .policy
            .iter()
            .any(|policy| policy.manual_retry.is_some())
    }
}

/// Simulates one model and summarises it; an error names the policy whose simulated time
/// stopped advancing.
pub fn run_model(
    name: String,
    model: Model,
    observer: &mut impl Observer,
) -> Result<PolicyRun, Stalled> {
    let started = Instant::now();
    let measurements = simulate(&model, observer).map_err(|stalled| Stalled {
        policy: name.clone(),
        ..stalled
    })?;
    let wall = started.elapsed();
    Ok(PolicyRun {
        name,
        summary: measurements.summary(model.incident()),
        services: measurements.service_summaries(),
        measurements,
        model,
        wall,
    })
}

/// Simulates every policy of `scenario`, each watched by its observer (one per policy, in
/// order); the observers come back with the results. An error is the first policy's, in the
/// scenario's order, whose simulated time stopped advancing.
pub fn run_scenario<O: Observer + Send>(
    scenario: &Scenario,
    observers: Vec<O>,
) -> Result<(ScenarioRun, Vec<O>), Stalled> {
    assert_eq!(
        observers.len(),
        scenario.policy.len(),
        "one observer per policy"
    );
    let runs: Vec<Result<(PolicyRun, O), Stalled>> = scenario
        .policy
        .par_iter()
        .zip(observers)
        .map(|(policy, mut observer)| {
            let model = Model::new(scenario, policy);
            let run = run_model(policy.name.get_ref().clone(), model, &mut observer)?;
            Ok((run, observer))
        })
        .collect();
    let (policies, observers): (Vec<PolicyRun>, Vec<O>) = runs
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    let as_written = Policy {
        overrides: Overrides::default(),
        ..scenario.policy[0].clone()
    };
    let run = ScenarioRun {
        scenario: scenario.clone(),
        model: Model::new(scenario, &as_written),
        policies,
    };
    Ok((run, observers))
}
