//! A forecast a user can plan with: "about 6 min, 110 MiB", from a short pilot, printed before
//! a long run, sweep or study starts.
//!
//! The cost bounds ([`super::cost`]) guard the machine: they come from the scenario alone, so
//! they must hold whatever the dynamics do, and span from every operation ended at once to
//! every send allowed, often three orders of magnitude. What a run costs between them depends on
//! what the simulation does: how many retries a storm makes, how fast the engine goes on this
//! topology. Only simulating tells, so the forecast simulates a sample of the job and
//! extrapolates.
//!
//! **What the pilot simulates.** The job's first simulation of each policy, as it will run
//! (for `run`, every policy of the scenario; for a sweep, the first seed of as many points as
//! run at once, spread from the grid's first to its last, since its corners differ most; for a
//! map or replications, every policy of the first cell's first replication), in parallel as the
//! job runs them, each from the start for as long as it takes or [`PILOT_SECONDS`] of wall time,
//! whichever ends first. Two cheaper pilots were measured and refused:
//!
//! - *Fewer clients over the whole run* keeps the incident in but not the load: the storm is a
//!   matter of load against capacity, and with a tenth of the clients `metastable` made 3.0
//!   events per operation against 12.3 at full size. A pilot that never overloads forecasts
//!   the quiet run.
//! - *A slice of the simulated time at full size* keeps the load, but the incident comes
//!   mid-run, after the slice.
//!
//! So the pilot runs whole simulations at full size, and is cut short only where one would take
//! more than [`PILOT_SECONDS`]: a run of a few simulations of minutes each. A pilot cut at
//! simulated time `t` stands for the share of the run's operations that start before `t`
//! ([`super::cost::expected_arrivals_by`], which follows the load curve); what happens after,
//! an incident's storm, it cannot see, and the forecast is low by what the storm adds. The
//! bounds still hold, and the progress lines re-estimate as the run goes.
//!
//! **The extrapolation** ([`Forecast::of`]): each simulation of the job takes the wall time of
//! the pilot of its policy (a sweep's: of the nearest point sampled), scaled by its expected operations against the pilot's (a sweep's
//! point of twice the clients takes twice as long); they are dealt in order to the threads,
//! each to the first free, as rayon's workers take them; the forecast is the time the last
//! ends, plus the time already spent (the command's start, the pilot) and a measured allowance
//! for writing the files and charts ([`Files`]). The memory is the process's peak during the
//! pilot (`VmHWM`: the program, and the pilot's simulations running at once as the job's will),
//! its simulations' part scaled by the bound's memory of the job's largest simulations at once
//! against the pilot's, plus the results kept and the charts.
//!
//! The wall time is this machine's, now: another process sharing the cores slows the job after
//! the pilot as it slowed the pilot, or not. A forecast is printed on stderr only, never written
//! to a file: the results stay the same bytes.

use std::cell::Cell;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::cost::{Estimate, expected_arrivals_by};
use crate::base::time::Micros;
use crate::engine::{Observer, Stalled, simulate};
use crate::model::Model;
use crate::scenario::Scenario;

/// The most wall time a pilot simulation runs before it stops where it is: a few seconds, a
/// small share of a run long enough to need a forecast.
pub const PILOT_SECONDS: f64 = 3.0;

const MIB: f64 = 1024.0 * 1024.0;

/// What writing a job's files costs besides the simulations, measured on the bundled scenarios
/// (`run` with and without `--no-charts`): 0.1 to 0.3 s for the tables and the report, 0.2 to
/// 0.6 s and 8 MiB more for the charts in both formats.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Files {
    /// Wall time.
    pub seconds: f64,
    /// Memory beyond the simulations'.
    pub bytes: f64,
}

impl Files {
    /// The files of a job drawing charts in `formats` formats.
    pub fn with_charts(formats: usize) -> Files {
        Files {
            seconds: 0.2 + 0.2 * formats as f64,
            bytes: if formats > 0 { 8.0 * MIB } else { 0.0 },
        }
    }
}

/// One simulation of the job that the pilot runs: `policy` of `scenario`, on `seed`.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The scenario as the job runs it (a sweep's point, a map's cell).
    pub scenario: Scenario,
    /// The policy's index in the scenario.
    pub policy: usize,
    /// The seed the job runs it on.
    pub seed: u64,
    /// Its index among the job's simulations (in [`Estimate::policies`]).
    pub job_index: usize,
}

impl Sample {
    /// Each policy of `scenario` on its own seed, as a run (or a study's first replication)
    /// simulates them, the `i`th policy the job's simulation `i`.
    pub fn every_policy(scenario: &Scenario) -> Vec<Sample> {
        (0..scenario.policy.len())
            .map(|policy| Sample {
                scenario: scenario.clone(),
                policy,
                seed: scenario.seed,
                job_index: policy,
            })
            .collect()
    }
}

/// What a pilot simulation measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PilotRun {
    /// Wall time it ran.
    pub seconds: f64,
    /// The share of its run it stands for: 1 if it ran to the end, else the share of the
    /// operations expected to start before the simulated time it reached.
    pub share: f64,
}

/// Watches a pilot simulation's wall time and stops it at its budget.
struct Budget {
    started: Instant,
    budget: Duration,
    reached: Micros,
    stopped: Cell<bool>,
}

impl Observer for Budget {
    fn hears_attempts(&self) -> bool {
        false
    }

    fn progress(&mut self, now: Micros) {
        self.reached = now;
    }

    fn stop(&self) -> bool {
        let over = self.started.elapsed() >= self.budget;
        self.stopped.set(over);
        over
    }
}

/// Runs the samples in parallel, each until it ends or for `budget` of wall time; an error is
/// a simulation that stalled, which the job would report as well.
pub fn pilot(samples: &[Sample], budget: Duration) -> Result<Vec<PilotRun>, Stalled> {
    samples
        .par_iter()
        .map(|sample| {
            let policy = &sample.scenario.policy[sample.policy];
            let mut model = Model::new(&sample.scenario, policy);
            model.seed = sample.seed;
            let mut watch = Budget {
                started: Instant::now(),
                budget,
                reached: 0,
                stopped: Cell::new(false),
            };
            simulate(&model, &mut watch)?;
            let seconds = watch.started.elapsed().as_secs_f64();
            let share = if watch.stopped.get() {
                let seen = sample.scenario.for_policy(policy);
                let all = expected_arrivals_by(&seen, policy, u64::MAX);
                let before = expected_arrivals_by(&seen, policy, watch.reached);
                if all > 0.0 {
                    (before / all).max(1e-3)
                } else {
                    1.0
                }
            } else {
                1.0
            };
            Ok(PilotRun { seconds, share })
        })
        .collect()
}

/// The forecast of a job: its wall time from the command's start, and its peak memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Forecast {
    /// Wall time from the command's start to its end.
    pub seconds: f64,
    /// Peak resident memory of the process.
    pub bytes: f64,
}

/// The process's peak resident memory before and after the pilot (`VmHWM`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PilotMemory {
    /// Before the pilot started: the program and what it loaded.
    pub before: f64,
    /// After it ended: that, and the pilot's simulations at their largest.
    pub after: f64,
}

impl Forecast {
    /// The forecast of the job `estimate` (its simulations, in the order they are dealt to its
    /// threads) from the pilot of `samples`, which `runs` measured; `sample_of` names the
    /// sample that stands for each of the job's simulations. `elapsed` is the wall time spent
    /// so far (the command's start and the pilot).
    pub fn of(
        estimate: &Estimate,
        samples: &[(usize, PilotRun)],
        sample_of: impl Fn(usize) -> usize,
        memory: PilotMemory,
        files: Files,
        elapsed: f64,
    ) -> Forecast {
        let walls: Vec<f64> = estimate
            .policies
            .iter()
            .enumerate()
            .map(|(index, cost)| {
                let (sampled, run) = samples[sample_of(index)];
                let operations = estimate.policies[sampled].operations;
                let scale = if operations > 0.0 {
                    cost.operations / operations
                } else {
                    1.0
                };
                run.seconds / run.share * scale
            })
            .collect();
        let at_once = |memories: &mut Vec<f64>, count: usize| {
            memories.sort_by(|a, b| b.total_cmp(a));
            memories.iter().take(count).sum::<f64>()
        };
        let job_memory = at_once(
            &mut estimate.policies.iter().map(|c| c.memory_bytes).collect(),
            estimate.threads,
        );
        let pilot_memory = at_once(
            &mut samples
                .iter()
                .map(|&(index, _)| estimate.policies[index].memory_bytes)
                .collect(),
            estimate.threads,
        );
        let least_share = samples.iter().map(|(_, run)| run.share).fold(1.0, f64::min);
        let simulations = (memory.after - memory.before).max(0.0) / least_share * job_memory
            / pilot_memory.max(1.0);
        Forecast {
            seconds: elapsed + makespan(&walls, estimate.threads) + files.seconds,
            bytes: memory.before + simulations + estimate.results_bytes + files.bytes,
        }
    }
}

/// When the last of `walls` ends, dealt in order to `threads` threads, each to the first free.
pub fn makespan(walls: &[f64], threads: usize) -> f64 {
    let mut free_at: Vec<f64> = vec![0.0; threads.max(1)];
    for wall in walls {
        let first = free_at
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map_or(0, |(index, _)| index);
        free_at[first] += wall;
    }
    free_at.into_iter().fold(0.0, f64::max)
}

/// The peak resident memory of this process so far, in bytes, from Linux's /proc (`VmHWM`).
pub fn peak_resident_bytes() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024.0)
}

/// `about 6.0 min, 110 MiB`: one figure of each, as the bounds' units.
pub fn about(forecast: &Forecast) -> String {
    let time = if forecast.seconds < 60.0 {
        format!("{:.1} s", forecast.seconds)
    } else {
        super::cost::duration(forecast.seconds)
    };
    format!("about {time}, {}", super::cost::bytes(forecast.bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::cost::PolicyCost;

    fn cost(operations: f64, memory_bytes: f64) -> PolicyCost {
        PolicyCost {
            operations,
            fewest_events: 0.0,
            most_events: 0.0,
            memory_bytes,
        }
    }

    /// Dealt in order to the first free thread: 3, 1, 1, 1 on two threads end at 3 (the
    /// three 1s share the second); 1, 1, 1 end at 2; four 2s on four threads at 2.
    #[test]
    fn simulations_are_dealt_to_the_first_free_thread() {
        assert_eq!(makespan(&[3.0, 1.0, 1.0, 1.0], 2), 3.0);
        assert_eq!(makespan(&[1.0, 1.0, 1.0], 2), 2.0);
        assert_eq!(makespan(&[2.0; 4], 4), 2.0);
        assert_eq!(makespan(&[], 2), 0.0);
    }

    /// A sweep of four simulations on two threads, points of 1,000 and 2,000 operations, from
    /// a pilot of the first that ran whole in 2 s: 2, 4, 2 and 4 s dealt in order to two
    /// threads (the first takes 2, the second 4, the first 2 more, and on the tie at 4 the
    /// first the last 4) end at 8 s; with 1 s spent and 0.6 s of files, 9.6 s. Memory: the pilot raised the peak from
    /// 10 to 30 MiB; the job's two largest at once are bounded at 2 + 2 MiB against the
    /// pilot's 1, so 80 MiB of simulations, and 1 MiB of rows and 8 MiB of charts.
    #[test]
    fn a_sweep_scales_its_pilot_by_operations_and_threads() {
        let estimate = Estimate {
            policies: vec![
                cost(1000.0, MIB),
                cost(2000.0, 2.0 * MIB),
                cost(1000.0, MIB),
                cost(2000.0, 2.0 * MIB),
            ],
            threads: 2,
            results_bytes: MIB,
        };
        let pilot = PilotRun {
            seconds: 2.0,
            share: 1.0,
        };
        let files = Files {
            seconds: 0.6,
            bytes: 8.0 * MIB,
        };
        let memory = PilotMemory {
            before: 10.0 * MIB,
            after: 30.0 * MIB,
        };
        let forecast = Forecast::of(&estimate, &[(0, pilot)], |_| 0, memory, files, 1.0);
        assert_eq!(forecast.seconds, 1.0 + 8.0 + 0.6);
        assert_eq!(forecast.bytes, (10.0 + 80.0 + 1.0 + 8.0) * MIB);
        assert_eq!(about(&forecast), "about 9.6 s, 99 MiB");
    }

    /// A pilot cut short at a quarter of its operations stands for four times its wall time,
    /// and four times its memory: a run of two policies, each its own pilot, 3 s each for a
    /// quarter of the run, on two threads: 12 s after the 3 s spent; 40 MiB above the 5 MiB
    /// before, times 4.
    #[test]
    fn a_pilot_cut_short_stands_for_its_share() {
        let estimate = Estimate {
            policies: vec![cost(100.0, MIB), cost(100.0, MIB)],
            threads: 2,
            results_bytes: 0.0,
        };
        let quarter = PilotRun {
            seconds: 3.0,
            share: 0.25,
        };
        let memory = PilotMemory {
            before: 5.0 * MIB,
            after: 45.0 * MIB,
        };
        let files = Files::with_charts(0);
        let forecast = Forecast::of(
            &estimate,
            &[(0, quarter), (1, quarter)],
            |index| index,
            memory,
            files,
            3.0,
        );
        assert_eq!(forecast.seconds, 3.0 + 12.0 + 0.2);
        assert_eq!(forecast.bytes, (5.0 + 160.0) * MIB);
        assert_eq!(about(&forecast), "about 15.2 s, 165 MiB");
        assert_eq!(
            about(&Forecast {
                seconds: 360.0,
                bytes: 110.0 * MIB
            }),
            "about 6.0 min, 110 MiB"
        );
    }
}
