//! Parameter sweeps: which settings meet the targets, and how sure are we.
//!
//! A sweep takes one scenario and one of its policies, and a grid of values for dotted keys
//! (`policy.base=50ms,100ms,200ms`, `policy.max_attempts=2..6`). Every point of the grid (the
//! cartesian product, first key slowest) is simulated with N seeds derived from the scenario's
//! seed; every (point, seed) simulation is independent, single-threaded, and run in parallel
//! with rayon. Every point is built and validated, exactly as `run --set` would, before any
//! simulation starts, so a bad grid costs nothing.
//!
//! A scenario's `[uncertain]` inputs are drawn as replications draw them
//! ([`crate::scenario::uncertain`]): a Latin hypercube over the seeds, from the scenario's
//! seed, so that seed `s` of every point runs with the same draw `s` (common random numbers:
//! two points differ by their settings, not by their luck). A key the sweep sets itself (a
//! grid key, `--set`) is not drawn. Every point is validated with every input at both ends of
//! its range, and `results.csv` says what each seed drew.
//!
//! Results are kept as the text that `results.csv` holds, and everything else (the aggregate,
//! the recommendation, the heatmaps) is computed from that text ([`report`]). That is what makes
//! sharding exact: `--shard K/N` runs only the points `p` with `p % N == K`, and `merge`
//! rebuilds, from the shards' `results.csv`, the same bytes a single run writes.

mod aggregate;
pub mod analysis;
pub mod check;
pub mod heatmap;
pub mod interval;
pub mod pareto;
pub mod recommendation;
pub mod report;
pub mod requirement;
pub mod tie;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::base::time::Duration;
use crate::engine::Quiet;
use crate::import::{ImportError, Imported, import_fleet_text_of, import_text_of, read_config};
use crate::model::Model;
use crate::run::cost::{BYTES_PER_SWEEP_ROW, Estimate, PolicyCost};
use crate::run::run_model;
use crate::scenario::uncertain::UncertainDraws;
use crate::scenario::{
    ConfigSource, ImportPart, ImportedFleet, Override, Scenario, ScenarioError, load_with_configs,
    read_data_file,
};
use crate::vocabulary::metric::{Better, METRICS, NamedMetric, ServiceShape};

pub use crate::vocabulary::metric::parse_metric;
pub use requirement::Requirement;

/// At most this many (point, seed) simulations in one sweep.
pub const MAX_SIMULATIONS: usize = 1_000_000;

/// One key of the grid and its values, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Axis {
    /// Dotted path, as for `--set`.
    pub key: String,
    /// Values as written (a TOML value, or a bare string such as `250ms`).
    pub values: Vec<String>,
}

impl FromStr for Axis {
    type Err = String;

    /// `KEY=V1,V2,...` or an inclusive integer range `KEY=2..6` (also `2..=6`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let Some((key, values)) = text.split_once('=') else {
            return Err(format!(
                "{text:?} is not KEY=V1,V2,...; write for example policy.base=50ms,100ms or policy.max_attempts=2..6"
            ));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("{text:?} has no key before '='"));
        }
        let values = values.trim();
        let values: Vec<String> = match integer_range(values) {
            Some(range) => range?,
            None => values
                .split(',')
                .map(|value| value.trim().to_string())
                .collect(),
        };
        if values.iter().any(String::is_empty) {
            return Err(format!(
                "--grid {text}: a value is empty; give at least one value, separated by commas"
            ));
        }
        Ok(Axis {
            key: key.to_string(),
            values,
        })
    }
}

impl Axis {
    /// The values as numbers, if every one is a finite number or a duration (in seconds): a
    /// key a heatmap can use as an axis, and whose values have a smallest and a largest.
    pub fn numbers(&self) -> Option<Vec<f64>> {
        self.values.iter().map(|value| number(value)).collect()
    }
}

/// A grid value as a number: a finite number, or a duration in seconds.
pub fn number(value: &str) -> Option<f64> {
    value
        .parse::<f64>()
        .ok()
        .filter(|number| number.is_finite())
        .or_else(|| value.parse::<Duration>().ok().map(Duration::as_secs_f64))
}

/// `A..B` or `A..=B`, both inclusive; `None` if `text` is not a range at all. Only text whose
/// two sides are both numbers or durations is a range (`2..6`, and `1.5..3` or `1s..3s`, which
/// are refused as not integer ranges); anything else with `..` in it is a list of values, as
/// `../a.json,b.json`, a path up one folder.
fn integer_range(text: &str) -> Option<Result<Vec<String>, String>> {
    let (low, high) = text.split_once("..")?;
    let high = high.strip_prefix('=').unwrap_or(high);
    let (low, high) = (low.trim(), high.trim());
    let number = |side: &str| side.parse::<f64>().is_ok() || side.parse::<Duration>().is_ok();
    if !(number(low) && number(high)) {
        return None;
    }
    let (Ok(low), Ok(high)) = (low.parse::<i64>(), high.parse::<i64>()) else {
        return Some(Err(format!(
            "{text:?} is not an integer range; write for example 2..6 (2 to 6 inclusive)"
        )));
    };
    // In i128, so that the extremes of i64 cannot overflow the length.
    if low > high || i128::from(high) - i128::from(low) >= 10_000 {
        return Some(Err(format!(
            "{text:?} is empty or longer than 10,000 values; write LOW..HIGH with LOW <= HIGH"
        )));
    }
    Some(Ok((low..=high).map(|value| value.to_string()).collect()))
}

/// `K/N`: shard K (0-based) of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, 0 to N - 1.
    pub index: usize,
    /// Shards in all.
    pub count: usize,
}

/// The most shards a sweep may be split into: more than any job array needs, few enough that
/// merging checks every one of them in no time.
pub const MAX_SHARDS: usize = 10_000;

impl Shard {
    /// The whole sweep in one piece.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`, checked: `1 <= count <= MAX_SHARDS` and `index < count`.
    pub fn new(index: usize, count: usize) -> Result<Shard, String> {
        if (1..=MAX_SHARDS).contains(&count) && index < count {
            Ok(Shard { index, count })
        } else {
            Err(format!(
                "shard {index}/{count}: expected K/N with 1 <= N <= {MAX_SHARDS} and 0 <= K < N (shards count from 0, like a Kubernetes completion index)"
            ))
        }
    }

    /// Whether point `point` belongs to this shard (round robin, so that shards get a fair mix
    /// of cheap and expensive points).
    pub fn owns(self, point: usize) -> bool {
        point % self.count == self.index
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let parsed = text.split_once('/').and_then(|(k, n)| {
            Some((
                k.trim().parse::<usize>().ok()?,
                n.trim().parse::<usize>().ok()?,
            ))
        });
        match parsed {
            Some((index, count)) => {
                Shard::new(index, count).map_err(|message| format!("--shard {text:?}: {message}"))
            }
            None => Err(format!(
                "--shard {text:?}: expected K/N, two integers (shards count from 0, like a Kubernetes completion index)"
            )),
        }
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Everything that defines a sweep; written to `sweep.json` so that shards can be merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// The scenario file as given, for messages.
    pub scenario_path: String,
    /// The scenario file's text.
    pub scenario_text: String,
    /// `--set` overrides, fixed for every point.
    pub fixed: Vec<(String, String)>,
    /// The grid.
    pub axes: Vec<Axis>,
    /// Seeds per point.
    pub seeds: u32,
    /// The policy tuned (its name in the scenario).
    pub policy: String,
    /// Requirements, as written.
    pub requirements: Vec<String>,
    /// The metric to minimise, if any.
    pub minimize: Option<String>,
    /// The metric to maximise, if any (not with `minimize`); left out of `sweep.json` when
    /// there is none, which keeps the manifests of sweeps without it as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximize: Option<String>,
    /// The text of every config that an `import` of the scenario or of a point names, and of
    /// every data file a distribution names, by the path it was read at (the scenario's folder
    /// joined with the `import` or the file's name), each read once when the sweep was prepared
    /// ([`SweepSpec::prepare_reading_configs`]): every point, every shard and `merge` build the
    /// scenario from these texts, so that shards run against different files cannot merge, and
    /// `merge` reads no path a shard names. Left out of `sweep.json` when there are none, which
    /// keeps the manifests of sweeps without imports as they were.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub configs: BTreeMap<String, String>,
}

/// The configs a sweep's (or a replicated study's) scenarios import: the texts the sweep pinned, and, only while the sweep
/// is prepared from the files, those files, each read once and then pinned.
pub struct SweepConfigs<'a> {
    /// The texts pinned, by the path they were read at.
    pub pinned: &'a BTreeMap<String, String>,
    /// The configs read so far while preparing; `None` once prepared (running, merging).
    pub reading: Option<&'a Mutex<BTreeMap<String, String>>>,
}

impl ConfigSource for SweepConfigs<'_> {
    fn import(&self, path: &Path, part: Option<&ImportPart>) -> Result<Imported, String> {
        let text = self.text(path, |path| {
            read_config(path).map_err(|error| error.to_string())
        })?;
        import_text_of(path, &text, part).map_err(|error| error.to_string())
    }

    fn import_fleet(&self, path: &Path) -> Result<ImportedFleet, String> {
        let text = self.text(path, |path| {
            read_config(path).map_err(|error| error.to_string())
        })?;
        import_fleet_text_of(path, &text).map_err(|error| error.to_string())
    }

    fn data_file(&self, path: &Path) -> Result<String, String> {
        self.text(path, read_data_file)
    }
}

impl SweepConfigs<'_> {
    /// The text of the config or data file at `path`: pinned, or read once (by `read`) while
    /// preparing.
    fn text(
        &self,
        path: &Path,
        read: impl Fn(&Path) -> Result<String, String>,
    ) -> Result<String, String> {
        let key = path.display().to_string();
        if let Some(text) = self.pinned.get(&key) {
            return Ok(text.clone());
        }
        let Some(reading) = self.reading else {
            return Err(ImportError {
                file: key,
                field: String::new(),
                message: "this sweep's sweep.json does not hold the config (a sweep keeps every config it imports and every data file it reads, and merge reads no file a shard names); the shard was written by an older retrystorm or edited: run it again".into(),
            }
            .to_string());
        };
        // Read under the lock, so that every point sees the one text read.
        let mut read_so_far = reading.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(text) = read_so_far.get(&key) {
            return Ok(text.clone());
        }
        let text = read(path)?;
        read_so_far.insert(key, text.clone());
        Ok(text)
    }
}

/// The most bytes a shard's `sweep.json` may have: what a sweep writes is held to it when the
/// sweep is prepared ([`SweepSpec::prepare_reading_configs`]), and `merge` reads no more. A
/// scenario (at most 4 MiB, up to twice that written as JSON) and the few configs it imports
/// fit with room to spare.
pub const MAX_MANIFEST_BYTES: u64 = 32 * 1024 * 1024;

/// Why a sweep cannot start.
#[derive(Debug, Clone, PartialEq)]
pub enum SweepError {
    /// The base scenario is not a valid scenario.
    Scenario(ScenarioError),
    /// A grid point is not a valid scenario although the base scenario is: the combination of
    /// its values is what is wrong (a `cap` below the point's `base`).
    Point {
        /// The point's number.
        point: usize,
        /// Its values, as `key=value` pairs.
        values: String,
        /// What is wrong with it.
        error: ScenarioError,
        /// The `[uncertain]` draws it was built with, in words (`with the [uncertain] inputs at
        /// their lowest (upstream.workers=5)`); empty without.
        uncertain: Box<str>,
    },
    /// Anything else about the sweep's definition.
    Definition(String),
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::Scenario(error) => error.fmt(f),
            SweepError::Point {
                point,
                values,
                error,
                uncertain,
            } if uncertain.is_empty() => write!(
                f,
                "{error}\n  at point {point} ({values}); every point of a grid must be a valid scenario: drop the values that clash, or sweep them in separate sweeps"
            ),
            SweepError::Point {
                point,
                values,
                error,
                uncertain,
            } => write!(
                f,
                "{error}\n  at point {point} ({values}) {uncertain}; every point of a grid must be a valid scenario with every [uncertain] input at either end of its range: drop the grid values that clash, or narrow the input's range"
            ),
            SweepError::Definition(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for SweepError {}

/// A sweep whose every point has been built and validated. The points' scenarios are built
/// again when they run rather than kept (a scenario takes kilobytes; a million-point grid
/// kept them all in gigabytes); what the sweep needs of each beforehand is its cost.
#[derive(Debug, Clone)]
pub struct PreparedSweep {
    /// The definition.
    pub spec: SweepSpec,
    /// The scenario's name.
    pub name: String,
    /// The seeds, in order.
    pub seeds: Vec<u64>,
    /// The cost of one simulation of each point.
    pub costs: Vec<PolicyCost>,
    /// Parsed requirements, each naming one of `columns`.
    pub requirements: Vec<Requirement>,
    /// The metric to minimise or maximise, its `better` the direction asked for (lower for
    /// `--minimize`, higher for `--maximize`), which for a metric with a direction is its own.
    pub objective: Option<NamedMetric>,
    /// Every metric of a point's runs, in the order of `results.csv`: the run's, then with a
    /// topology each service's ([`NamedMetric::all`]).
    pub columns: Vec<NamedMetric>,
    /// The `[uncertain]` inputs drawn, each seed's draws of them (the same at every point),
    /// and those the sweep sets itself (a grid key, `--set`), which are not drawn.
    pub uncertain: UncertainDraws,
}

/// The seeds of a sweep: the scenario's own seed first, then SplitMix64 steps from it, so
/// that seeds never collide and do not depend on the number asked for.
pub fn derive_seeds(base: u64, count: u32) -> Vec<u64> {
    let mut state = base;
    (0..count)
        .map(|index| {
            if index == 0 {
                return base;
            }
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
        .collect()
}

impl SweepSpec {
    /// Number of grid points; `usize::MAX` for a grid of more (64 axes of two values), which
    /// no sweep may have.
    pub fn point_count(&self) -> usize {
        self.axes.iter().fold(1, |count: usize, axis| {
            count.saturating_mul(axis.values.len())
        })
    }

    /// The position of point `point`'s value in each axis's values (first axis slowest).
    pub fn value_indices(&self, point: usize) -> Vec<usize> {
        let mut rest = point;
        let mut indices: Vec<usize> = self
            .axes
            .iter()
            .rev()
            .map(|axis| {
                let index = rest % axis.values.len();
                rest /= axis.values.len();
                index
            })
            .collect();
        indices.reverse();
        indices
    }

    /// The values of point `point`, one per axis (first axis slowest).
    pub fn point_values(&self, point: usize) -> Vec<&str> {
        self.axes
            .iter()
            .zip(self.value_indices(point))
            .map(|(axis, index)| axis.values[index].as_str())
            .collect()
    }

    /// `key=value` for every axis of a point, for messages.
    pub fn describe_point(&self, point: usize) -> String {
        self.axes
            .iter()
            .zip(self.point_values(point))
            .map(|(axis, value)| format!("{}={value}", axis.key))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The `retrystorm run` command that runs point `point` as the sweep ran it, on the scenario
    /// file as it is: every `--set` of the sweep, the point's grid values and the `[uncertain]`
    /// `draws` of the seed, as the sweep applied them (a key of every policy as the tuned
    /// policy's, in a scenario of several), each quoted for a POSIX shell where it needs to be.
    pub fn run_command(&self, point: usize, draws: &[(String, String)]) -> String {
        let mut words = vec![
            "retrystorm".to_string(),
            "run".to_string(),
            shell_word(&self.scenario_path),
        ];
        for set in self.overrides(Some(point), draws) {
            words.push("--set".to_string());
            words.push(shell_word(&format!("{}={}", set.key, set.value)));
        }
        words.join(" ")
    }

    /// The overrides of `point` (none for the base scenario) and of a seed's `draws`.
    fn overrides(&self, point: Option<usize>, draws: &[(String, String)]) -> Vec<Override> {
        let names = self.policy_names();
        let tuned = (names.len() > 1)
            .then(|| names.iter().position(|name| *name == self.policy))
            .flatten();
        let key = |key: &str| match (tuned, key.strip_prefix("policy.")) {
            // `policy.base` sets every policy; only the tuned one runs, so only it is set (the
            // others might not even be valid with the value, as a policy without backoff).
            (Some(index), Some(field)) if selected_policy(&names, field).is_none() => {
                format!("policy.{index}.{field}")
            }
            _ => key.to_string(),
        };
        let mut overrides: Vec<Override> = self
            .fixed
            .iter()
            .map(|(name, value)| Override::set(&key(name), value))
            .collect();
        if let Some(point) = point {
            for (axis, value) in self.axes.iter().zip(self.point_values(point)) {
                overrides.push(Override {
                    flag: "--grid",
                    ..Override::set(&key(&axis.key), value)
                });
            }
        }
        for (name, value) in draws {
            overrides.push(Override {
                flag: "[uncertain]",
                ..Override::set(&key(name), value)
            });
        }
        overrides
    }

    /// The names of the scenario's `[[policy]]` tables, in order (none if it has none).
    fn policy_names(&self) -> Vec<String> {
        let table: Option<toml::Table> = toml::from_str(&self.scenario_text).ok();
        let policies = table
            .as_ref()
            .and_then(|table| table.get("policy"))
            .and_then(toml::Value::as_array);
        policies
            .into_iter()
            .flatten()
            .map(|policy| {
                let name = policy.get("name").and_then(toml::Value::as_str);
                name.unwrap_or_default().to_string()
            })
            .collect()
    }

    /// The seeds of the sweep, derived from the scenario's seed (after `--set`).
    pub fn seed_values(&self) -> Result<Vec<u64>, SweepError> {
        Ok(derive_seeds(self.base_scenario()?.seed, self.seeds))
    }

    /// Each seed's draws of the `[uncertain]` inputs, derived from the scenario (after `--set`)
    /// as [`SweepSpec::prepare`] derives them.
    pub fn uncertain(&self) -> Result<UncertainDraws, SweepError> {
        Ok(self.uncertain_of(&self.base_scenario()?))
    }

    /// The `[uncertain]` inputs of `base` that neither a grid key nor `--set` sets (the exact
    /// key), drawn for each seed from `base`'s seed.
    fn uncertain_of(&self, base: &Scenario) -> UncertainDraws {
        let set_by_sweep = |key: &str| {
            self.fixed.iter().any(|(fixed, _)| fixed == key)
                || self.axes.iter().any(|axis| axis.key == key)
        };
        UncertainDraws::new(
            &base.uncertain,
            set_by_sweep,
            self.seeds as usize,
            base.seed,
        )
    }

    /// The scenario with the fixed `--set` values and none of the grid's.
    fn base_scenario(&self) -> Result<Scenario, SweepError> {
        self.load(None, &[], None).map_err(SweepError::Scenario)
    }

    /// The scenario with the fixed `--set` values and, for a point, its grid values and a
    /// seed's `[uncertain]` draws, its configs from the pinned texts and, while preparing,
    /// from the files (`reading`).
    fn load(
        &self,
        point: Option<usize>,
        draws: &[(String, String)],
        reading: Option<&Mutex<BTreeMap<String, String>>>,
    ) -> Result<Scenario, ScenarioError> {
        let configs = SweepConfigs {
            pinned: &self.configs,
            reading,
        };
        load_with_configs(
            &self.scenario_text,
            &self.scenario_path,
            &self.overrides(point, draws),
            &configs,
        )
    }

    /// The grid keys (their axes' indices) whose value at `point` changes the scenario as it is
    /// (with the fixed `--set` values): each key set alone, the resolved scenario compared with
    /// the base's, so that a value written as the scenario has it (`0.1s` for `100ms`) is no
    /// change. A key that cannot be set alone (the scenario is not valid with it) counts as a
    /// change. What [`tie::choose`] counts among points the seeds cannot tell apart.
    pub fn changed_keys(&self, point: usize) -> Result<Vec<usize>, SweepError> {
        let configs = SweepConfigs {
            pinned: &self.configs,
            reading: None,
        };
        let resolved = |overrides: &[Override]| {
            load_with_configs(
                &self.scenario_text,
                &self.scenario_path,
                overrides,
                &configs,
            )
            .map(|scenario| scenario.to_resolved_toml())
        };
        let fixed = self.overrides(None, &[]);
        let base = resolved(&fixed).map_err(SweepError::Scenario)?;
        // The point's overrides are the fixed ones, then one per axis, in order.
        let of_point = self.overrides(Some(point), &[]);
        Ok((0..self.axes.len())
            .filter(|&axis| {
                let mut alone = fixed.clone();
                alone.push(of_point[fixed.len() + axis].clone());
                resolved(&alone).map_or(true, |text| text != base)
            })
            .collect())
    }

    /// The scenario of a point, reduced to the tuned policy, with the `[uncertain]` inputs as
    /// the scenario file writes them (a seed's draws are [`PreparedSweep::scenario_of_run`]'s).
    pub fn scenario_for(&self, point: usize) -> Result<Scenario, SweepError> {
        self.point_scenario(point, (&[], ""), None)
    }

    /// [`SweepSpec::scenario_for`] with `draws` of the `[uncertain]` inputs (and those draws in
    /// words, for errors), reading configs not yet pinned from `reading`'s files.
    fn point_scenario(
        &self,
        point: usize,
        (draws, drawn): (&[(String, String)], &str),
        reading: Option<&Mutex<BTreeMap<String, String>>>,
    ) -> Result<Scenario, SweepError> {
        let mut scenario =
            self.load(Some(point), draws, reading)
                .map_err(|error| SweepError::Point {
                    point,
                    values: self.describe_point(point),
                    error,
                    uncertain: drawn.into(),
                })?;
        scenario
            .policy
            .retain(|policy| *policy.name.get_ref() == self.policy);
        // The claims compare the scenario's policies, which the point no longer has; a sweep
        // does not check them (its requirements play their part).
        scenario.expect.clear();
        if scenario.policy.len() != 1 {
            return Err(SweepError::Definition(format!(
                "{}: point {} ({}) has no policy named {:?}; a grid may not rename the tuned policy",
                self.scenario_path,
                point,
                self.describe_point(point),
                self.policy
            )));
        }
        Ok(scenario)
    }

    /// Builds and validates every point, before anything runs, from the configs the sweep
    /// pinned, reading no file (`merge` prepares a shard's sweep so).
    pub fn prepare(self) -> Result<PreparedSweep, SweepError> {
        self.prepare_with(None)
    }

    /// [`SweepSpec::prepare`] for a new sweep: the configs its `import`s name are read from
    /// their files, each once, and pinned in the sweep ([`SweepSpec::configs`]); refused if its
    /// `sweep.json` would be over [`MAX_MANIFEST_BYTES`].
    pub fn prepare_reading_configs(self) -> Result<PreparedSweep, SweepError> {
        let reading = Mutex::new(BTreeMap::new());
        let mut prepared = self.prepare_with(Some(&reading))?;
        let read = reading.into_inner().unwrap_or_else(PoisonError::into_inner);
        prepared.spec.configs.extend(read);
        let manifest = report::manifest_bytes(&prepared).len() as u64;
        if manifest > MAX_MANIFEST_BYTES {
            return Err(SweepError::Definition(format!(
                "the sweep's sweep.json would be {manifest} bytes (the scenario, {} bytes of the configs it imports, and the grid), more than the {} merge reads; sweep a smaller grid, or fewer or smaller configs",
                prepared
                    .spec
                    .configs
                    .values()
                    .map(String::len)
                    .sum::<usize>(),
                crate::base::text_file::byte_size(MAX_MANIFEST_BYTES)
            )));
        }
        Ok(prepared)
    }

    fn prepare_with(
        self,
        reading: Option<&Mutex<BTreeMap<String, String>>>,
    ) -> Result<PreparedSweep, SweepError> {
        let definition = |message: String| SweepError::Definition(message);
        if self.axes.is_empty() {
            return Err(definition(
                "a sweep needs at least one --grid KEY=V1,V2,...".into(),
            ));
        }
        for (index, axis) in self.axes.iter().enumerate() {
            if self.axes[..index]
                .iter()
                .any(|earlier| earlier.key == axis.key)
            {
                return Err(definition(format!("--grid {} is given twice", axis.key)));
            }
        }
        if self.seeds == 0 {
            return Err(definition("--seeds must be at least 1".into()));
        }
        let simulations = self.point_count().saturating_mul(self.seeds as usize);
        if simulations == usize::MAX {
            let sizes: Vec<String> = self
                .axes
                .iter()
                .map(|axis| axis.values.len().to_string())
                .collect();
            return Err(definition(format!(
                "the grid has {} points x {} seeds, more simulations than can be counted; at most {MAX_SIMULATIONS}",
                sizes.join(" x "),
                self.seeds
            )));
        }
        if simulations > MAX_SIMULATIONS {
            return Err(definition(format!(
                "the grid has {} points x {} seeds = {simulations} simulations; at most {MAX_SIMULATIONS}",
                self.point_count(),
                self.seeds
            )));
        }
        let requirements = self
            .requirements
            .iter()
            .map(|text| {
                text.parse::<Requirement>()
                    .map_err(|error| definition(format!("--require: {error}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let base = self
            .load(None, &[], reading)
            .map_err(SweepError::Scenario)?;
        let uncertain = self.uncertain_of(&base);
        let services = service_names(&base);
        let sizes = tuned_sizes(&base, &self.policy);
        let shapes = shapes_of(&sizes);
        let operations = base.operation_names();
        for (requirement, text) in requirements.iter().zip(&self.requirements) {
            NamedMetric::resolve(&requirement.metric, &shapes, &operations)
                .map_err(|error| definition(format!("--require {text}: {error}")))?;
        }
        let objective = self.objective(&shapes, &operations)?;
        let asked = asked_columns(&self.asked_names(), &shapes, &operations);
        if let Some(tuned) = base
            .policy
            .iter()
            .find(|policy| *policy.name.get_ref() == self.policy)
            && let Some(axis) = self.axes.iter().find(|axis| {
                topology_keys(&base, &axis.key).is_some_and(|keys| {
                    keys.iter()
                        .any(|key| tuned.overrides.entries.contains_key(key))
                })
            })
        {
            return Err(definition(format!(
                "--grid {}: policy {:?} overrides {} for its own run, so the grid would change nothing; tune another policy, or remove the override",
                axis.key, self.policy, axis.key
            )));
        }
        let names = self.policy_names();
        let other = self.axes.iter().find_map(|axis| {
            let index = selected_policy(&names, axis.key.strip_prefix("policy.")?)?;
            let name = names.get(index).filter(|name| **name != self.policy)?;
            Some((axis, name))
        });
        if let Some((axis, name)) = other {
            return Err(definition(format!(
                "--grid {}: the key selects policy {name:?}, but the sweep tunes {:?} alone, so the grid would change nothing; write policy.{} or name the tuned policy",
                axis.key,
                self.policy,
                axis.key
                    .strip_prefix("policy.")
                    .and_then(|field| field.split_once('.'))
                    .map_or("", |(_, rest)| rest)
            )));
        }
        // Built in parallel; the first invalid point in grid order is the one reported. Each
        // point is built with every uncertain input at its lowest, then at its highest, so
        // that no seed's draws fail later.
        let extremes: Vec<(Vec<(String, String)>, String)> = uncertain
            .extremes()
            .into_iter()
            .zip(["lowest", "highest"])
            .map(|(draws, end)| {
                let drawn = extreme_words(&draws, end);
                (draws, drawn)
            })
            .collect();
        let built: Vec<Result<PolicyCost, SweepError>> = (0..self.point_count())
            .into_par_iter()
            .map(|point| {
                let costs = extremes
                    .iter()
                    .map(|(draws, drawn)| {
                        self.check_point(point, (draws, drawn), (&services, &asked), reading)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                // The estimate bounds the point at either end of every uncertain input.
                Ok(costs
                    .iter()
                    .skip(1)
                    .fold(costs[0].clone(), |bound, cost| bound.spanning(cost)))
            })
            .collect();
        let costs = built.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(PreparedSweep {
            seeds: derive_seeds(base.seed, self.seeds),
            name: base.name.to_string(),
            spec: self,
            costs,
            requirements,
            objective,
            columns: NamedMetric::all(&services)
                .into_iter()
                .chain(asked)
                .collect(),
            uncertain,
        })
    }

    /// Builds point `point` with `draws` of the `[uncertain]` inputs (`drawn` in words), checks
    /// that it has the base's `services` and the instances and operations the `asked` metrics
    /// name, and
    /// returns the cost of one simulation of it.
    fn check_point(
        &self,
        point: usize,
        (draws, drawn): (&[(String, String)], &str),
        (services, asked): (&[&str], &[NamedMetric]),
        reading: Option<&Mutex<BTreeMap<String, String>>>,
    ) -> Result<PolicyCost, SweepError> {
        let definition = |message: String| SweepError::Definition(message);
        let scenario = self.point_scenario(point, (draws, drawn), reading)?;
        let at = format!(
            "point {point} ({}){}{drawn}",
            self.describe_point(point),
            if drawn.is_empty() { "" } else { " " }
        );
        // Every point has the base's services, so that its rows have the same columns.
        if service_names(&scenario) != services {
            return Err(definition(format!(
                "{at} has the services {}, the scenario {}; a grid may not rename, add or remove services",
                service_names(&scenario).join(", "),
                services.join(", ")
            )));
        }
        // And the instances the asked metrics name (a grid may resize a fleet).
        let sizes = tuned_sizes(&scenario, &self.policy);
        let operations = scenario.operation_names();
        for metric in asked {
            NamedMetric::resolve(&metric.name, &shapes_of(&sizes), &operations).map_err(
                |error| {
                    definition(format!(
                        "{at}: {error}; every point must have the fleets, instances and operations the requirements and the objective name"
                    ))
                },
            )?;
        }
        let mut cost = Estimate::of(&scenario, 1).policies;
        Ok(cost.pop().expect("a point has the tuned policy"))
    }

    /// Every metric of a point's runs, in the order of `results.csv`, as [`SweepSpec::prepare`]
    /// lists them.
    pub fn columns(&self) -> Result<Vec<NamedMetric>, SweepError> {
        let base = self.base_scenario()?;
        let sizes = tuned_sizes(&base, &self.policy);
        let asked = asked_columns(
            &self.asked_names(),
            &shapes_of(&sizes),
            &base.operation_names(),
        );
        Ok(NamedMetric::all(&service_names(&base))
            .into_iter()
            .chain(asked)
            .collect())
    }

    /// The metrics the requirements and the objective name, in that order.
    fn asked_names(&self) -> Vec<String> {
        self.requirements
            .iter()
            .filter_map(|text| text.parse::<Requirement>().ok())
            .map(|requirement| requirement.metric)
            .chain(self.minimize.iter().chain(&self.maximize).cloned())
            .collect()
    }

    /// The metric of `--minimize` or `--maximize`, with the direction asked for. A metric
    /// better the other way is refused: minimising the success rate recommends the worst
    /// point. A metric without a direction (`operations`, `served@db`) takes the flag's.
    fn objective(
        &self,
        services: &[ServiceShape],
        operations: &[&str],
    ) -> Result<Option<NamedMetric>, SweepError> {
        let (flag, name, better) = match (&self.minimize, &self.maximize) {
            (Some(_), Some(_)) => {
                return Err(SweepError::Definition(
                    "--minimize and --maximize are exclusive: a sweep optimises one metric; give one of them, and --require for the others".into(),
                ));
            }
            (Some(name), None) => ("--minimize", name, Better::Lower),
            (None, Some(name)) => ("--maximize", name, Better::Higher),
            (None, None) => return Ok(None),
        };
        let metric = NamedMetric::resolve(name, services, operations)
            .map_err(|error| SweepError::Definition(format!("{flag}: {error}")))?;
        let (way, other) = match metric.better {
            Better::Higher => ("higher", "--maximize"),
            Better::Lower => ("lower", "--minimize"),
            Better::Neither => {
                let mut metric = metric;
                metric.better = better;
                return Ok(Some(metric));
            }
        };
        if metric.better != better {
            return Err(SweepError::Definition(format!(
                "{flag} {name}: {way} is better for {name} ({}), so {flag} would recommend the worst point; use {other} {name}",
                metric.meaning().trim_end_matches('.')
            )));
        }
        Ok(Some(metric))
    }
}

/// `with the [uncertain] inputs at their lowest (upstream.workers=5 clients.rate=0.6)`, for
/// errors: `draws` at `end` (`lowest`, `highest`); empty without draws.
fn extreme_words(draws: &[(String, String)], end: &str) -> String {
    if draws.is_empty() {
        return String::new();
    }
    format!(
        "with the [uncertain] inputs at their {end} ({})",
        pairs_text(draws)
    )
}

/// `upstream.workers=5 clients.rate=0.6`: `draws` as `key=value` pairs.
fn pairs_text(draws: &[(String, String)]) -> String {
    let pairs: Vec<String> = draws
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    pairs.join(" ")
}

/// `word` as a POSIX shell reads it back: as it is if no character of it means anything to a
/// shell, else in single quotes (a quote inside written `'\''`).
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:,@%+".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The metrics of `names` that a sweep records only when asked
/// ([`NamedMetric::only_when_asked`]: a fleet's, an instance's, an intent's, an operation's),
/// each once, in the order named, each followed by the counts its interval pools over the seeds
/// and its operations (an operation's `success_rate:pay`, Wilson's on `succeeded:pay` of
/// `operations:pay`: [`interval::pooled_names`]); names that do not resolve are left out (the sweep refused them
/// when it was prepared).
fn asked_columns(
    names: &[String],
    services: &[ServiceShape],
    operations: &[&str],
) -> Vec<NamedMetric> {
    let mut asked: Vec<NamedMetric> = Vec::new();
    for name in names {
        let Ok(metric) = NamedMetric::resolve(name, services, operations) else {
            continue;
        };
        if !metric.only_when_asked() {
            continue;
        }
        let mut pooled = interval::pooled_names(&metric.name);
        pooled.push(interval::operations_of(&metric.name));
        let pooled = pooled
            .into_iter()
            .filter_map(|name| NamedMetric::resolve(&name, services, operations).ok())
            // The run's own (`operations` beside `refused@api#0`) are columns already.
            .filter(NamedMetric::only_when_asked);
        for metric in std::iter::once(metric).chain(pooled) {
            if !asked.iter().any(|known| known.name == metric.name) {
                asked.push(metric);
            }
        }
    }
    asked
}

/// Each service's name and instances as `policy` runs the scenario (its overrides applied; the
/// scenario as it is if it has no such policy).
fn tuned_sizes(scenario: &Scenario, policy: &str) -> Vec<(String, u64)> {
    let tuned = scenario
        .policy
        .iter()
        .find(|candidate| *candidate.name.get_ref() == policy);
    let run = match tuned {
        Some(tuned) => scenario.for_policy(tuned),
        None => std::borrow::Cow::Borrowed(scenario),
    };
    run.service_shapes()
        .iter()
        .map(|shape| (shape.name.to_string(), shape.instances))
        .collect()
}

/// `sizes` as the shapes a metric's name is resolved against.
fn shapes_of(sizes: &[(String, u64)]) -> Vec<ServiceShape<'_>> {
    sizes
        .iter()
        .map(|(name, instances)| ServiceShape {
            name,
            instances: *instances,
        })
        .collect()
}

/// The names of a scenario's services, in its order.
fn service_names(scenario: &Scenario) -> Vec<&str> {
    scenario
        .services()
        .iter()
        .map(|service| service.name())
        .collect()
}

/// The policy that the rest of a `policy.` key selects, as `--set` reads it: an index
/// (`1.base`), or a name before a further key (`full jitter.base`); `None` for a key of every
/// policy (`base`).
fn selected_policy(names: &[String], field: &str) -> Option<usize> {
    let (first, rest) = field.split_once('.')?;
    match first.parse::<usize>() {
        Ok(index) => Some(index),
        Err(_) => names
            .iter()
            .position(|name| name == first)
            .filter(|_| !rest.is_empty()),
    }
}

/// The keys of a policy's `overrides` that a grid (or `--set`) key of the topology amounts to,
/// as `overrides` spells them (by the service's name): `upstream.workers` and
/// `service.api.workers` as they are, `service.1.workers` by the name of service 1, and
/// `service.workers` (every service) once for each service. `None` for a key outside the
/// topology (`policy.base`, `clients.count`), which a policy's `overrides` cannot hold.
pub fn topology_keys(scenario: &Scenario, key: &str) -> Option<Vec<String>> {
    if key.starts_with("upstream.") {
        return Some(vec![key.to_string()]);
    }
    let rest = key.strip_prefix("service.")?;
    let names: Vec<&str> = scenario
        .services()
        .iter()
        .map(|service| service.name())
        .collect();
    let named = |name: &str, inner: &str| format!("service.{name}.{inner}");
    // As `--set` selects a table of an array: an index, else a name, before a further key.
    match rest.split_once('.') {
        Some((first, inner)) => match first.parse::<usize>() {
            Ok(index) => names.get(index).map(|name| vec![named(name, inner)]),
            Err(_) if names.contains(&first) => Some(vec![key.to_string()]),
            Err(_) => Some(names.iter().map(|name| named(name, rest)).collect()),
        },
        None => Some(names.iter().map(|name| named(name, rest)).collect()),
    }
}

/// Picks the tuned policy's name: the one asked for, or the scenario's only policy.
pub fn choose_policy(scenario: &Scenario, asked: Option<&str>) -> Result<String, SweepError> {
    let names: Vec<&str> = scenario
        .policy
        .iter()
        .map(|policy| policy.name.get_ref().as_str())
        .collect();
    match asked {
        Some(name) if names.contains(&name) => Ok(name.to_string()),
        Some(name) => Err(SweepError::Definition(format!(
            "--policy {name:?}: the scenario has no such policy; it has {}",
            names
                .iter()
                .map(|name| format!("{name:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None if names.len() == 1 => Ok(names[0].to_string()),
        None => Err(SweepError::Definition(format!(
            "the scenario has {} policies; choose the one to tune with --policy (one of {})",
            names.len(),
            names
                .iter()
                .map(|name| format!("{name:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// One simulation's results: the point, the seed and every metric as `results.csv` writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultRow {
    /// Grid point index.
    pub point: usize,
    /// Index of the seed in the sweep's seed list.
    pub seed_index: usize,
    /// Metric values in the order of [`PreparedSweep::columns`], formatted.
    pub metrics: Vec<String>,
}

impl PreparedSweep {
    /// Runs the (point, seed) simulations of `shard`, in parallel; `done` counts finished
    /// simulations, for a progress bar. Rows come back ordered by point, then seed. A point is
    /// built again from the scenario's text and the configs pinned when the sweep was
    /// prepared, as it was then, so it does not fail now.
    pub fn run(&self, shard: Shard, done: &AtomicUsize) -> Result<Vec<ResultRow>, SweepError> {
        let jobs: Vec<(usize, usize)> = (0..self.costs.len())
            .filter(|&point| shard.owns(point))
            .flat_map(|point| (0..self.seeds.len()).map(move |seed_index| (point, seed_index)))
            .collect();
        jobs.par_iter()
            .map(|&(point, seed_index)| {
                let scenario = self.scenario_of_run(point, seed_index)?;
                let mut model = Model::new(&scenario, &scenario.policy[0]);
                model.seed = self.seeds[seed_index];
                let run = run_model(scenario.policy[0].name.get_ref().clone(), model, &mut Quiet)
                    .map_err(|stalled| {
                    SweepError::Definition(format!(
                        "point {point} ({}), seed {}: {stalled}",
                        self.spec.describe_point(point),
                        self.seeds[seed_index]
                    ))
                })?;
                done.fetch_add(1, Ordering::Relaxed);
                Ok(ResultRow {
                    point,
                    seed_index,
                    metrics: self
                        .columns
                        .iter()
                        .map(|metric| metric.text(&run.summary, &run.services))
                        .collect(),
                })
            })
            .collect()
    }

    /// The scenario of point `point` as seed `seed_index` runs it: reduced to the tuned policy,
    /// with the seed's draws of the `[uncertain]` inputs (its seed is set by the run).
    pub fn scenario_of_run(&self, point: usize, seed_index: usize) -> Result<Scenario, SweepError> {
        let draws = self.uncertain.of_run(seed_index);
        let drawn = if draws.is_empty() {
            String::new()
        } else {
            format!(
                "with seed {}'s [uncertain] draws ({})",
                self.seeds[seed_index],
                pairs_text(&draws)
            )
        };
        self.spec.point_scenario(point, (&draws, &drawn), None)
    }

    /// The metric called `name`, one of [`PreparedSweep::columns`] (as every requirement's
    /// and the objective's are, checked when the sweep was prepared).
    pub fn column(&self, name: &str) -> &NamedMetric {
        self.columns
            .iter()
            .find(|metric| metric.name == name)
            .expect("checked when the sweep was prepared")
    }

    /// What the simulations of `shard` will cost, `threads` at a time.
    pub fn estimate(&self, shard: Shard, threads: usize) -> Estimate {
        let policies: Vec<PolicyCost> = (0..self.costs.len())
            .filter(|&point| shard.owns(point))
            .flat_map(|point| std::iter::repeat_n(self.costs[point].clone(), self.seeds.len()))
            .collect();
        Estimate {
            // A row of the run's metrics; a topology's columns add to it in proportion.
            results_bytes: policies.len() as f64 * BYTES_PER_SWEEP_ROW * self.columns.len() as f64
                / METRICS.len() as f64,
            policies,
            threads: threads.max(1),
        }
    }

    /// Simulations in `shard`.
    pub fn simulations(&self, shard: Shard) -> usize {
        (0..self.costs.len())
            .filter(|&point| shard.owns(point))
            .count()
            * self.seeds.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_take_lists_and_inclusive_ranges() {
        let list: Axis = "policy.base=50ms, 100ms,200ms".parse().unwrap();
        assert_eq!(list.values, ["50ms", "100ms", "200ms"]);
        let huge = "policy.max_attempts=-9000000000000000000..9000000000000000000";
        assert!(
            huge.parse::<Axis>()
                .unwrap_err()
                .contains("longer than 10,000")
        );
        let range: Axis = "policy.max_attempts=2..6".parse().unwrap();
        assert_eq!(range.values, ["2", "3", "4", "5", "6"]);
        let inclusive: Axis = "policy.max_attempts=2..=3".parse().unwrap();
        assert_eq!(inclusive.values, ["2", "3"]);
        assert!(
            "policy.base="
                .parse::<Axis>()
                .unwrap_err()
                .contains("empty")
        );
        assert!(
            "policy.base=1,,2"
                .parse::<Axis>()
                .unwrap_err()
                .contains("empty")
        );
        assert!(
            "policy.max_attempts=6..2"
                .parse::<Axis>()
                .unwrap_err()
                .contains("LOW <= HIGH")
        );
        assert!("nokey".parse::<Axis>().unwrap_err().contains("KEY=V1,V2"));
        for not_integers in ["policy.base=1.5..3", "policy.base=100ms..1s"] {
            let error = not_integers.parse::<Axis>().unwrap_err();
            assert!(error.contains("not an integer range"), "{error}");
        }
    }

    /// `..` makes a range only between two numbers or durations: a list of paths, one of them
    /// up a folder, is a list (issue 23: `--grid policy.import=../a.json,b.json` was refused as
    /// "not an integer range").
    #[test]
    fn paths_with_two_dots_are_values_not_ranges() {
        let axis: Axis = "policy.import=../a.json,b.json".parse().unwrap();
        assert_eq!(axis.values, ["../a.json", "b.json"]);
        let axis: Axis = "policy.import=../../configs/x.yaml".parse().unwrap();
        assert_eq!(axis.values, ["../../configs/x.yaml"]);
        let axis: Axis = "policy.name=a..b".parse().unwrap();
        assert_eq!(axis.values, ["a..b"]);
    }

    #[test]
    fn shards_split_points_round_robin() {
        let shard: Shard = "1/3".parse().unwrap();
        assert_eq!(
            (0..7).filter(|&p| shard.owns(p)).collect::<Vec<_>>(),
            [1, 4]
        );
        assert!("3/3".parse::<Shard>().is_err());
        assert!("0/0".parse::<Shard>().is_err());
        assert!("a/2".parse::<Shard>().is_err());
    }

    #[test]
    fn points_enumerate_the_grid_first_key_slowest() {
        let spec = SweepSpec {
            scenario_path: String::new(),
            scenario_text: String::new(),
            fixed: vec![],
            axes: vec!["a=1,2".parse().unwrap(), "b=x,y,z".parse().unwrap()],
            seeds: 1,
            policy: String::new(),
            requirements: vec![],
            minimize: None,
            maximize: None,
            configs: Default::default(),
        };
        assert_eq!(spec.point_count(), 6);
        assert_eq!(spec.point_values(0), ["1", "x"]);
        assert_eq!(spec.point_values(2), ["1", "z"]);
        assert_eq!(spec.point_values(3), ["2", "x"]);
        assert_eq!(spec.describe_point(5), "a=2 b=z");
    }

    /// 64 keys of two values make more points than a `usize` counts: the count saturates
    /// and the grid is refused, instead of a multiplication that overflows.
    #[test]
    fn a_grid_too_large_to_count_is_refused() {
        let spec = SweepSpec {
            scenario_path: String::new(),
            scenario_text: String::new(),
            fixed: vec![],
            axes: (0..64)
                .map(|key| format!("k{key}=a,b").parse().unwrap())
                .collect(),
            seeds: 1,
            policy: String::new(),
            requirements: vec![],
            minimize: None,
            maximize: None,
            configs: Default::default(),
        };
        assert_eq!(spec.point_count(), usize::MAX);
        let error = spec.prepare().unwrap_err().to_string();
        assert!(
            error.starts_with(&format!(
                "the grid has {} points x 1 seeds, more simulations than can be counted",
                vec!["2"; 64].join(" x ")
            )),
            "{error}"
        );
        assert!(error.ends_with("at most 1000000"), "{error}");
    }

    #[test]
    fn seeds_start_with_the_scenarios_and_do_not_depend_on_how_many() {
        let five = derive_seeds(42, 5);
        assert_eq!(five[0], 42);
        assert_eq!(&derive_seeds(42, 3)[..], &five[..3]);
        let mut unique = five.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 5);
    }

    /// A value a shell would split or expand is quoted, a quote inside it written `'\''`, so
    /// that the reproducing command runs as printed; plain keys and values stay as they are.
    #[test]
    fn the_reproducing_command_is_quoted_for_the_shell() {
        assert_eq!(shell_word("policy.base=800ms"), "policy.base=800ms");
        assert_eq!(
            shell_word("service.edge.retry.controls=[]"),
            "'service.edge.retry.controls=[]'"
        );
        assert_eq!(
            shell_word("policy.full jitter.base=1s"),
            "'policy.full jitter.base=1s'"
        );
        assert_eq!(shell_word("name=it's"), "'name=it'\\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn metrics_round_trip_through_text() {
        for (name, value, text) in [
            ("operations", 12.0, "12"),
            ("p99_ms", 1.5, "1.500000"),
            ("p99_ms", f64::NAN, ""),
            ("recovery_s", f64::INFINITY, "never"),
        ] {
            let metric = crate::vocabulary::metric::metric(name).expect("a known metric");
            assert_eq!(
                crate::vocabulary::metric::format_metric(metric, value),
                text
            );
            let back = parse_metric(text).unwrap();
            assert!(back == value || (back.is_nan() && value.is_nan()));
        }
    }
}
