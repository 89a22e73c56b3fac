//! Replicated studies: every policy of a scenario over many seeds, for probabilities
//! ([`replications`], `run --replications N`) and for the map of where a system tips
//! ([`map`], `retrystorm map`).
//!
//! A study is a set of cells (one for replications; one per pair of axis values for a map), and
//! each cell runs replications: one run of every policy of the scenario on one seed. Replication
//! `r` has the same seed, and the same draws of the `[uncertain]` inputs
//! ([`crate::scenario::uncertain`]), in
//! every cell and for every policy, so policies and cells are compared on common random
//! numbers: a difference between two policies is theirs, not the luck of their seeds.
//!
//! As with sweeps, each run is kept as the text of a row of `replications.csv` (or
//! `map-runs.csv`), and everything else is computed from that text, so that a study split with
//! `--shard K/N` (replications `r % N == K`, or cells `c % N == K` of a map) and merged gives
//! the same bytes as one run in one process, with any number of threads. A map decides how many
//! replications a cell gets from that cell's own rows only ([`map::settled`]), so its adaptive
//! refinement is sharded as exactly.

pub mod map;
mod page;
pub mod replications;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::base::text_file::{TextFileError, read_bytes};
use crate::claims::{describe, evaluate_each};
use crate::engine::Quiet;
use crate::output::csv_bytes;
use crate::run::cost::{Estimate, PolicyCost};
use crate::run::run_scenario;
use crate::scenario::risk::MapAxis;
use crate::scenario::uncertain::UncertainDraws;
use crate::scenario::{Override, Scenario, ScenarioError, load_with_configs};
use crate::sweep::check::check_metrics;
use crate::sweep::{MAX_MANIFEST_BYTES, MAX_SIMULATIONS, Shard, SweepConfigs, derive_seeds};
use crate::vocabulary::metric::NamedMetric;

/// A file to write: its name in the study's folder and its bytes.
pub type OutputFile = (String, Vec<u8>);

/// What a study is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StudyKind {
    /// `run --replications N`: probabilities of outcomes, per policy.
    Replications,
    /// `retrystorm map`: the probability of recovering over a plane of two settings.
    Map,
}

/// Everything that defines a study; written to `study.json` so that shards can be merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudySpec {
    /// Replications or a map.
    pub kind: StudyKind,
    /// The scenario file as given, for messages.
    pub scenario_path: String,
    /// The scenario file's text.
    pub scenario_text: String,
    /// `--set` overrides, fixed for every run.
    pub fixed: Vec<(String, String)>,
    /// A map's two axes, x then y; none for replications.
    pub axes: Vec<MapAxis>,
    /// The most replications of a cell (every replication's seed is derived from the
    /// scenario's).
    pub replications: u32,
    /// The replications every cell runs first; a map's cell gets more, doubling up to
    /// `replications`, while it is not settled. Equal to `replications` for replications.
    pub min_replications: u32,
    /// The texts of the configs and data files the scenario reads, as for sweeps.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub configs: BTreeMap<String, String>,
}

/// Why a study cannot start or go on.
#[derive(Debug, Clone, PartialEq)]
pub enum StudyError {
    /// The scenario (or a cell or replication of it) is not valid.
    Scenario(ScenarioError),
    /// Anything else.
    Definition(String),
}

impl fmt::Display for StudyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StudyError::Scenario(error) => error.fmt(f),
            StudyError::Definition(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for StudyError {}

/// One policy's run in one replication of one cell, as the rows of the study's CSV hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudyRow {
    /// The cell (0 for replications; `y * x_len + x` in a map).
    pub cell: usize,
    /// The replication, 0 to `replications - 1`.
    pub replication: usize,
    /// The policy's index in the scenario.
    pub policy: usize,
    /// Every metric, formatted, in the order of [`PreparedStudy::columns`].
    pub metrics: Vec<String>,
    /// Whether each claim of the scenario held on this replication, for the claims about this
    /// policy (`None` for the others' claims).
    pub claims: Vec<Option<bool>>,
}

/// A claim of the scenario, as a study reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyClaim {
    /// The policy it is about.
    pub policy: usize,
    /// In words.
    pub text: String,
    /// The probability it must hold with, if it states one.
    pub probability: Option<f64>,
    /// Why the lesson says so.
    pub why: Option<String>,
}

/// A study whose definition has been checked and whose every run can be built.
#[derive(Debug, Clone)]
pub struct PreparedStudy {
    /// The definition.
    pub spec: StudySpec,
    /// The scenario's name.
    pub name: String,
    /// The scenario's description.
    pub description: String,
    /// The seed of each replication.
    pub seeds: Vec<u64>,
    /// The policies' names, in the scenario's order.
    pub policies: Vec<String>,
    /// The metrics of every row.
    pub columns: Vec<NamedMetric>,
    /// The scenario's claims (replications only; a map judges its own).
    pub claims: Vec<StudyClaim>,
    /// The uncertain inputs drawn, each replication's draws of them, and the `[uncertain]`
    /// keys the study sets itself (an axis of a map, or `--set`), which are not drawn.
    pub uncertain: UncertainDraws,
    /// Whether the scenario has an incident to recover from.
    pub has_incident: bool,
    /// The claims of a map (`[[map.expect]]`), as the scenario wrote them.
    pub map_claims: Vec<crate::scenario::risk::MapExpect>,
    /// The cost of one run of every policy of each cell.
    pub costs: Vec<Vec<PolicyCost>>,
}

impl StudySpec {
    /// Cells of the study.
    pub fn cell_count(&self) -> usize {
        self.axes.iter().map(|axis| axis.values.len()).product()
    }

    /// The axis values of `cell`, x first.
    pub fn cell_values(&self, cell: usize) -> Vec<&str> {
        match self.axes.as_slice() {
            [x, y] => vec![
                x.values[cell % x.values.len()].as_str(),
                y.values[cell / x.values.len()].as_str(),
            ],
            _ => vec![],
        }
    }

    /// `key=value` of the axes of `cell`, for messages.
    pub fn describe_cell(&self, cell: usize) -> String {
        self.axes
            .iter()
            .zip(self.cell_values(cell))
            .map(|(axis, value)| format!("{}={value}", axis.label()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Whether shard `shard` runs replication `replication` of cell `cell`: replications
    /// round robin in a study of one cell, cells round robin in a map (so that a cell's
    /// adaptive refinement happens in one process).
    pub fn owns(&self, shard: Shard, cell: usize, replication: usize) -> bool {
        match self.kind {
            StudyKind::Replications => shard.owns(replication),
            StudyKind::Map => shard.owns(cell),
        }
    }

    /// The scenario of `cell` and `replication` (its seed and uncertain draws given), its
    /// configs pinned, or read while preparing.
    fn load(
        &self,
        cell: Option<usize>,
        draws: &[(String, String)],
        reading: Option<&Mutex<BTreeMap<String, String>>>,
    ) -> Result<Scenario, ScenarioError> {
        let mut overrides: Vec<Override> = self
            .fixed
            .iter()
            .map(|(key, value)| Override::set(key, value))
            .collect();
        if let Some(cell) = cell {
            for (axis, value) in self.axes.iter().zip(self.cell_values(cell)) {
                for key in &axis.keys {
                    overrides.push(Override {
                        flag: "[map]",
                        ..Override::set(key, value)
                    });
                }
            }
        }
        for (key, value) in draws {
            overrides.push(Override {
                flag: "[uncertain]",
                ..Override::set(key, value)
            });
        }
        let configs = SweepConfigs {
            pinned: &self.configs,
            reading,
        };
        load_with_configs(
            &self.scenario_text,
            &self.scenario_path,
            &overrides,
            &configs,
        )
    }

    /// Checks the study and every run it can make (every cell with the lowest and the highest
    /// draw of each uncertain input), reading the configs the scenario names once and pinning
    /// them; nothing runs.
    pub fn prepare_reading_configs(self) -> Result<PreparedStudy, StudyError> {
        let reading = Mutex::new(BTreeMap::new());
        let mut prepared = self.prepare_with(Some(&reading))?;
        let read = reading.into_inner().unwrap_or_else(PoisonError::into_inner);
        prepared.spec.configs.extend(read);
        let manifest = manifest_bytes(&prepared).len() as u64;
        if manifest > MAX_MANIFEST_BYTES {
            return Err(StudyError::Definition(format!(
                "the study's study.json would be {manifest} bytes, more than the {} merge reads; use fewer or smaller configs",
                crate::base::text_file::byte_size(MAX_MANIFEST_BYTES)
            )));
        }
        Ok(prepared)
    }

    /// [`StudySpec::prepare_reading_configs`] from the configs pinned, reading no file
    /// (`merge` prepares a shard's study so).
    pub fn prepare(self) -> Result<PreparedStudy, StudyError> {
        self.prepare_with(None)
    }

    fn prepare_with(
        self,
        reading: Option<&Mutex<BTreeMap<String, String>>>,
    ) -> Result<PreparedStudy, StudyError> {
        let definition = StudyError::Definition;
        if self.replications < 1
            || self.min_replications < 1
            || self.min_replications > self.replications
        {
            return Err(definition(format!(
                "replications {} and min_replications {}: expected 1 <= min_replications <= replications",
                self.replications, self.min_replications
            )));
        }
        let base = self
            .load(None, &[], reading)
            .map_err(StudyError::Scenario)?;
        // A key the study sets (an axis, or --set) is known in every run: it is not drawn.
        let set_by_study = |key: &str| {
            self.fixed.iter().any(|(fixed, _)| fixed == key)
                || self
                    .axes
                    .iter()
                    .any(|axis| axis.keys.iter().any(|axis_key| axis_key == key))
        };
        let uncertain = UncertainDraws::new(
            &base.uncertain,
            set_by_study,
            self.replications as usize,
            base.seed,
        );
        let simulations = self
            .cell_count()
            .saturating_mul(self.replications as usize)
            .saturating_mul(base.policy.len());
        if simulations > MAX_SIMULATIONS {
            return Err(definition(format!(
                "{} cell{} x {} replications x {} policies = {simulations} simulations; at most {MAX_SIMULATIONS}",
                self.cell_count(),
                if self.cell_count() == 1 { "" } else { "s" },
                self.replications,
                base.policy.len()
            )));
        }
        let services: Vec<&str> = base
            .services()
            .iter()
            .map(|service| service.name())
            .collect();
        let columns = NamedMetric::all(&services);
        // Every cell, and every uncertain input at its two extremes, must make a valid
        // scenario with the base's policies and services, so that no run fails later.
        let extremes = uncertain.extremes();
        let cells: Vec<Option<usize>> = match self.kind {
            StudyKind::Replications => vec![None],
            StudyKind::Map => (0..self.cell_count()).map(Some).collect(),
        };
        let costs = cells
            .par_iter()
            .map(|&cell| {
                let mut cost: Option<Vec<PolicyCost>> = None;
                for draws in &extremes {
                    let scenario = self.load(cell, draws, reading).map_err(|error| {
                        match cell {
                            Some(cell) => StudyError::Definition(format!(
                                "{error}\n  at cell {cell} ({}); every cell of a map must be a valid scenario",
                                self.describe_cell(cell)
                            )),
                            None => StudyError::Scenario(error),
                        }
                    })?;
                    let names: Vec<&str> =
                        scenario.services().iter().map(|service| service.name()).collect();
                    if names != services || scenario.policy.len() != base.policy.len() {
                        return Err(definition(format!(
                            "{}{}: the services or policies differ from the scenario's; an axis or uncertain input may not rename, add or remove them",
                            self.scenario_path,
                            cell.map(|cell| format!(" at cell {cell} ({})", self.describe_cell(cell))).unwrap_or_default()
                        )));
                    }
                    // The estimate bounds the cell at either end of every uncertain input.
                    let this = Estimate::of(&scenario, 1).policies;
                    cost = Some(match cost {
                        None => this,
                        Some(bound) => bound
                            .iter()
                            .zip(&this)
                            .map(|(bound, cost)| bound.spanning(cost))
                            .collect(),
                    });
                }
                Ok(cost.expect("at least one set of draws"))
            })
            .collect::<Result<Vec<_>, StudyError>>()?;
        let claims = match self.kind {
            StudyKind::Replications => base
                .expect
                .iter()
                .map(|claim| {
                    let claim = claim.get_ref();
                    StudyClaim {
                        policy: base
                            .policy
                            .iter()
                            .position(|policy| *policy.name.get_ref() == claim.policy)
                            .expect("validated: claims name policies"),
                        text: describe(claim),
                        probability: claim.probability.map(|p| p.get()),
                        why: claim.why.clone(),
                    }
                })
                .collect(),
            StudyKind::Map => vec![],
        };
        Ok(PreparedStudy {
            seeds: derive_seeds(base.seed, self.replications),
            name: base.name.to_string(),
            description: base.description.clone(),
            policies: base
                .policy
                .iter()
                .map(|policy| policy.name.get_ref().clone())
                .collect(),
            has_incident: crate::scenario::incident::window(&base).is_some(),
            map_claims: base
                .map
                .as_ref()
                .map(|map| {
                    map.get_ref()
                        .expect
                        .iter()
                        .map(|claim| claim.get_ref().clone())
                        .collect()
                })
                .unwrap_or_default(),
            columns,
            claims,
            uncertain,
            costs,
            spec: self,
        })
    }
}

impl PreparedStudy {
    /// What the seeds vary, for the summaries: the randomness, the `[uncertain]` inputs drawn,
    /// and those the study sets instead.
    pub fn what_seeds_vary(&self) -> String {
        let mut text = match self.uncertain.drawn_in_words("replication") {
            Some(drawn) => format!("seeds vary the randomness, and {drawn}"),
            None => "seeds vary the randomness only, not the scenario's settings".to_string(),
        };
        let setter = match self.spec.kind {
            StudyKind::Map => "an axis or --set",
            StudyKind::Replications => "--set",
        };
        if let Some(not_drawn) = self.uncertain.not_drawn_in_words(setter) {
            text += &format!("; {not_drawn}");
        }
        text
    }

    /// The scenario replication `replication` of `cell` runs: the cell's, with the
    /// replication's seed and uncertain draws.
    pub fn scenario_of_run(&self, cell: usize, replication: usize) -> Result<Scenario, StudyError> {
        let cell_key = (self.spec.kind == StudyKind::Map).then_some(cell);
        let mut scenario = self
            .spec
            .load(cell_key, &self.uncertain.of_run(replication), None)
            .map_err(StudyError::Scenario)?;
        scenario.seed = self.seeds[replication];
        Ok(scenario)
    }

    /// Runs replication `replication` of `cell`: every policy on its seed, one row each.
    pub fn run_replication(
        &self,
        cell: usize,
        replication: usize,
    ) -> Result<Vec<StudyRow>, StudyError> {
        let cell_key = (self.spec.kind == StudyKind::Map).then_some(cell);
        let scenario = self.scenario_of_run(cell, replication)?;
        let observers = vec![Quiet; scenario.policy.len()];
        let (run, _) = run_scenario(&scenario, observers).map_err(|stalled| {
            StudyError::Definition(format!(
                "{}replication {replication} (seed {}): {stalled}",
                cell_key
                    .map(|cell| format!("cell {cell} ({}), ", self.spec.describe_cell(cell)))
                    .unwrap_or_default(),
                self.seeds[replication]
            ))
        })?;
        let verdicts = match self.spec.kind {
            StudyKind::Replications => evaluate_each(&run),
            StudyKind::Map => vec![],
        };
        Ok(run
            .policies
            .iter()
            .enumerate()
            .map(|(index, policy)| StudyRow {
                cell,
                replication,
                policy: index,
                metrics: self
                    .columns
                    .iter()
                    .map(|metric| metric.text(&policy.summary, &policy.services))
                    .collect(),
                claims: self
                    .claims
                    .iter()
                    .zip(&verdicts)
                    .map(|(claim, verdict)| (claim.policy == index).then_some(verdict.held))
                    .collect(),
            })
            .collect())
    }

    /// Runs the replications of `shard`, in parallel, and returns their rows in order (cell,
    /// replication, policy); `done` counts finished runs of every policy, for a progress bar.
    pub fn run(&self, shard: Shard, done: &AtomicUsize) -> Result<Vec<StudyRow>, StudyError> {
        let cells: Vec<usize> = (0..self.spec.cell_count())
            .filter(|&cell| self.spec.kind == StudyKind::Replications || shard.owns(cell))
            .collect();
        let per_cell: Vec<Vec<StudyRow>> = cells
            .par_iter()
            .map(|&cell| self.run_cell(cell, shard, done))
            .collect::<Result<_, _>>()?;
        Ok(per_cell.into_iter().flatten().collect())
    }

    /// Runs one cell: replications `r` of `shard` up to `min_replications`, then, in a map,
    /// more in doubling batches until the cell is settled ([`map::settled`]).
    fn run_cell(
        &self,
        cell: usize,
        shard: Shard,
        done: &AtomicUsize,
    ) -> Result<Vec<StudyRow>, StudyError> {
        let mut rows: Vec<StudyRow> = Vec::new();
        let mut ran = 0;
        let mut upto = self.spec.min_replications as usize;
        loop {
            let batch: Vec<usize> = (ran..upto)
                .filter(|&replication| self.spec.owns(shard, cell, replication))
                .collect();
            let batch_rows: Vec<Vec<StudyRow>> = batch
                .par_iter()
                .map(|&replication| {
                    let rows = self.run_replication(cell, replication)?;
                    done.fetch_add(rows.len(), Ordering::Relaxed);
                    Ok(rows)
                })
                .collect::<Result<_, StudyError>>()?;
            rows.extend(batch_rows.into_iter().flatten());
            ran = upto;
            match next_batch_end(&self.spec, self.policies.len(), &rows, ran) {
                Some(end) => upto = end,
                None => return Ok(rows),
            }
        }
    }

    /// Runs of every policy the study will make at least and at most (in a map, before and
    /// after adaptive refinement), in `shard`.
    pub fn runs_bounds(&self, shard: Shard) -> (usize, usize) {
        let owned = |replications: u32| {
            (0..self.spec.cell_count())
                .flat_map(|cell| (0..replications as usize).map(move |r| (cell, r)))
                .filter(|&(cell, r)| self.spec.owns(shard, cell, r))
                .count()
                * self.policies.len()
        };
        (
            owned(self.spec.min_replications),
            owned(self.spec.replications),
        )
    }

    /// What the study's runs in `shard` will cost at most, `threads` at a time.
    pub fn estimate(&self, shard: Shard, threads: usize) -> Estimate {
        self.estimate_at(shard, threads, self.spec.replications)
    }

    /// What the study's runs in `shard` will cost with `replications` in every cell, in the
    /// order they run (cell, replication, policy), `threads` at a time.
    pub fn estimate_at(&self, shard: Shard, threads: usize, replications: u32) -> Estimate {
        let policies: Vec<PolicyCost> = (0..self.spec.cell_count())
            .flat_map(|cell| {
                (0..replications as usize)
                    .filter(move |&r| self.spec.owns(shard, cell, r))
                    .flat_map(move |_| self.costs[cell.min(self.costs.len() - 1)].iter().cloned())
            })
            .collect();
        Estimate {
            results_bytes: policies.len() as f64 * crate::run::cost::BYTES_PER_SWEEP_ROW,
            policies,
            threads: threads.max(1),
        }
    }
}

/// Where the next batch of a cell ends, given the rows of its first `ran` replications, or
/// `None` when the cell is done: replications run every replication at once; a map doubles
/// the replications of a cell that is not settled, up to the most.
pub fn next_batch_end(
    spec: &StudySpec,
    policies: usize,
    rows: &[StudyRow],
    ran: usize,
) -> Option<usize> {
    let most = spec.replications as usize;
    if spec.kind == StudyKind::Replications || ran >= most || map::settled(rows, policies) {
        return None;
    }
    Some((ran * 2).min(most))
}

/// The header of the study's CSV: cell, replication, seed, policy, the axes, the uncertain
/// inputs, the metrics and, for replications, one column per claim.
fn rows_header(prepared: &PreparedStudy) -> Vec<String> {
    let mut header: Vec<String> = ["cell", "replication", "seed", "policy"]
        .map(String::from)
        .to_vec();
    header.extend(prepared.spec.axes.iter().map(MapAxis::label));
    header.extend(
        prepared
            .uncertain
            .inputs
            .iter()
            .map(|input| input.key.clone()),
    );
    header.extend(prepared.columns.iter().map(|metric| metric.name.clone()));
    header.extend((1..=prepared.claims.len()).map(|number| format!("claim {number}")));
    header
}

/// The CSV of `rows`.
pub fn rows_csv(prepared: &PreparedStudy, rows: &[StudyRow]) -> Vec<u8> {
    let lines = rows.iter().map(|row| {
        let mut line = vec![
            row.cell.to_string(),
            row.replication.to_string(),
            prepared.seeds[row.replication].to_string(),
            prepared.policies[row.policy].clone(),
        ];
        line.extend(
            prepared
                .spec
                .cell_values(row.cell)
                .into_iter()
                .map(str::to_string),
        );
        line.extend(prepared.uncertain.draws[row.replication].iter().cloned());
        line.extend(row.metrics.iter().cloned());
        line.extend(row.claims.iter().map(|held| match held {
            Some(true) => "held".to_string(),
            Some(false) => "did not hold".to_string(),
            None => String::new(),
        }));
        line
    });
    csv_bytes(&rows_header(prepared), lines)
}

/// The name of the study's rows file.
pub fn rows_file(kind: StudyKind) -> &'static str {
    match kind {
        StudyKind::Replications => "replications.csv",
        StudyKind::Map => "map-runs.csv",
    }
}

/// `study.json`: the definition, and the seeds and draws it derives, for merging shards.
pub fn manifest_bytes(prepared: &PreparedStudy) -> Vec<u8> {
    #[derive(Serialize)]
    struct Manifest<'a> {
        #[serde(flatten)]
        spec: &'a StudySpec,
        seed_values: &'a [u64],
    }
    let mut bytes = serde_json::to_vec_pretty(&Manifest {
        spec: &prepared.spec,
        seed_values: &prepared.seeds,
    })
    .expect("the manifest serializes");
    bytes.push(b'\n');
    bytes
}

/// The files a shard writes: its rows, the manifest and which shard it is.
pub fn shard_files(prepared: &PreparedStudy, shard: Shard, rows: &[StudyRow]) -> Vec<OutputFile> {
    let mut shard_json = serde_json::to_vec_pretty(&shard).expect("a shard serializes");
    shard_json.push(b'\n');
    vec![
        (
            rows_file(prepared.spec.kind).to_string(),
            rows_csv(prepared, rows),
        ),
        ("study.json".to_string(), manifest_bytes(prepared)),
        ("shard.json".to_string(), shard_json),
    ]
}

/// The most bytes of a shard's `shard.json`.
const MAX_SHARD_JSON_BYTES: u64 = 1024;

/// The most bytes of one row of a study's CSV: its numbers, its values and the metrics.
fn max_row_bytes(prepared: &PreparedStudy) -> u64 {
    let header: u64 = rows_header(prepared)
        .iter()
        .map(|name| 2 * name.len() as u64 + 3)
        .sum();
    let policy = prepared
        .policies
        .iter()
        .map(|name| 2 * name.len() as u64 + 3)
        .max()
        .unwrap_or(0);
    let values: u64 = prepared
        .spec
        .axes
        .iter()
        .flat_map(|axis| axis.values.iter())
        .chain(prepared.uncertain.draws.iter().flatten())
        .map(|value| 2 * value.len() as u64 + 3)
        .sum();
    header
        + policy
        + values
        + 3 * 21
        + 64 * prepared.columns.len() as u64
        + 16 * prepared.claims.len() as u64
}

/// Reads `name` of `folder`, a regular file of at most `limit` bytes.
fn read_file(folder: &Path, name: &str, limit: u64) -> Result<Vec<u8>, String> {
    let path = folder.join(name);
    read_bytes(&path, limit).map_err(|error| match error {
        TextFileError::TooLarge(_) => format!(
            "{}: {error}, more than a study writes; the file was edited or is damaged",
            path.display()
        ),
        error => format!("{}: cannot read it: {error}", path.display()),
    })
}

/// Reads shard folders, checks that they are the shards of one study, each once, that every
/// row is one its shard runs and that together they hold every run the study makes, and
/// returns the study and its rows in order. No file beyond the shards' own is read.
pub fn merge(folders: &[&Path]) -> Result<(PreparedStudy, Vec<StudyRow>), String> {
    let mut first: Option<(Vec<u8>, PreparedStudy)> = None;
    let mut shards: Vec<Shard> = Vec::new();
    let mut rows: Vec<StudyRow> = Vec::new();
    for folder in folders {
        let manifest = read_file(folder, "study.json", MAX_MANIFEST_BYTES)?;
        let shard: Shard =
            serde_json::from_slice(&read_file(folder, "shard.json", MAX_SHARD_JSON_BYTES)?)
                .map_err(|error| error.to_string())
                .and_then(|shard: Shard| Shard::new(shard.index, shard.count))
                .map_err(|error| format!("{}: {error}", folder.join("shard.json").display()))?;
        if first.is_none() {
            let spec: StudySpec = serde_json::from_slice(&manifest)
                .map_err(|error| format!("{}: {error}", folder.join("study.json").display()))?;
            let prepared = spec
                .prepare()
                .map_err(|error| format!("{}: {error}", folder.join("study.json").display()))?;
            if manifest_bytes(&prepared) != manifest {
                return Err(format!(
                    "{}: the seeds are not the ones this study derives from its scenario; the file was edited or is damaged",
                    folder.join("study.json").display()
                ));
            }
            first = Some((manifest.clone(), prepared));
        }
        let (first_manifest, prepared) = first.as_ref().expect("set above");
        if manifest != *first_manifest {
            return Err(format!(
                "{} is not a shard of the study of {}: their study.json differ (another scenario, --set, axes or replications)",
                folder.display(),
                folders[0].display()
            ));
        }
        if shard.count != shards.first().map_or(shard.count, |s| s.count) || shards.contains(&shard)
        {
            return Err(format!(
                "{}: shard {shard} is given twice, or the shards were split in different counts",
                folder.display()
            ));
        }
        shards.push(shard);
        let name = rows_file(prepared.spec.kind);
        let most = prepared.spec.cell_count() as u64
            * u64::from(prepared.spec.replications)
            * prepared.policies.len() as u64;
        let bytes = read_file(folder, name, most.saturating_mul(max_row_bytes(prepared)))?;
        let read = read_rows(prepared, &bytes)
            .map_err(|error| format!("{}: {error}", folder.join(name).display()))?;
        if let Some(row) = read
            .iter()
            .find(|row| !prepared.spec.owns(shard, row.cell, row.replication))
        {
            return Err(format!(
                "{}: cell {} replication {} belongs to another shard than {shard}",
                folder.join(name).display(),
                row.cell,
                row.replication
            ));
        }
        rows.extend(read);
    }
    let (_, prepared) = first.ok_or("merge needs at least one shard folder")?;
    let count = shards[0].count;
    if shards.len() != count {
        let missing: Vec<String> = (0..count)
            .filter(|index| !shards.iter().any(|shard| shard.index == *index))
            .map(|index| format!("{index}/{count}"))
            .collect();
        return Err(format!("shards {} are missing", missing.join(", ")));
    }
    rows.sort_by_key(|row| (row.cell, row.replication, row.policy));
    check_complete(&prepared, &rows)?;
    Ok((prepared, rows))
}

/// Reads a study's CSV back into rows, checking each against the study.
fn read_rows(prepared: &PreparedStudy, bytes: &[u8]) -> Result<Vec<StudyRow>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(bytes);
    let header: Vec<String> = reader
        .headers()
        .map_err(|error| error.to_string())?
        .iter()
        .map(str::to_string)
        .collect();
    if header != rows_header(prepared) {
        return Err("its header is not the study's; the file was edited or is damaged".into());
    }
    let axes = prepared.spec.axes.len();
    let inputs = prepared.uncertain.inputs.len();
    let metrics = prepared.columns.len();
    let mut rows = Vec::new();
    for (line, record) in reader.records().enumerate() {
        let record = record.map_err(|error| error.to_string())?;
        let fields: Vec<String> = record.iter().map(str::to_string).collect();
        let at = |message: &str| {
            format!(
                "line {}: {message}; the file was edited or is damaged",
                line + 2
            )
        };
        let number = |index: usize| {
            fields[index]
                .parse::<usize>()
                .map_err(|_| at("not a number"))
        };
        let (cell, replication) = (number(0)?, number(1)?);
        if cell >= prepared.spec.cell_count() || replication >= prepared.seeds.len() {
            return Err(at("a cell or replication the study does not have"));
        }
        let policy = prepared
            .policies
            .iter()
            .position(|name| *name == fields[3])
            .ok_or_else(|| at("a policy the scenario does not have"))?;
        let mut expected = vec![
            prepared.seeds[replication].to_string(),
            prepared.policies[policy].clone(),
        ];
        expected.extend(
            prepared
                .spec
                .cell_values(cell)
                .into_iter()
                .map(str::to_string),
        );
        expected.extend(prepared.uncertain.draws[replication].iter().cloned());
        if fields[2..4 + axes + inputs] != expected[..] {
            return Err(at(
                "its seed, axis values or uncertain draws are not the study's",
            ));
        }
        let metric_texts = fields[4 + axes + inputs..4 + axes + inputs + metrics].to_vec();
        check_metrics(&metric_texts, &prepared.columns).map_err(|error| at(&error))?;
        let claims = fields[4 + axes + inputs + metrics..]
            .iter()
            .zip(&prepared.claims)
            .map(
                |(text, claim)| match (text.as_str(), claim.policy == policy) {
                    ("held", true) => Ok(Some(true)),
                    ("did not hold", true) => Ok(Some(false)),
                    ("", false) => Ok(None),
                    _ => Err(at("a claim's verdict is not one the study writes")),
                },
            )
            .collect::<Result<Vec<_>, String>>()?;
        rows.push(StudyRow {
            cell,
            replication,
            policy,
            metrics: metric_texts,
            claims,
        });
    }
    Ok(rows)
}

/// Checks that `rows` (sorted) are exactly the runs the study makes: every policy of every
/// replication of every cell, each once, and in a map as many replications as its rule gives.
fn check_complete(prepared: &PreparedStudy, rows: &[StudyRow]) -> Result<(), String> {
    let policies = prepared.policies.len();
    for cell in 0..prepared.spec.cell_count() {
        let of_cell: Vec<StudyRow> = rows
            .iter()
            .filter(|row| row.cell == cell)
            .cloned()
            .collect();
        let mut upto = prepared.spec.min_replications as usize;
        loop {
            let so_far: Vec<StudyRow> = of_cell
                .iter()
                .filter(|row| row.replication < upto)
                .cloned()
                .collect();
            match next_batch_end(&prepared.spec, policies, &so_far, upto) {
                Some(end) => upto = end,
                None => break,
            }
        }
        let expected: Vec<(usize, usize)> = (0..upto)
            .flat_map(|replication| (0..policies).map(move |policy| (replication, policy)))
            .collect();
        let found: Vec<(usize, usize)> = of_cell
            .iter()
            .map(|row| (row.replication, row.policy))
            .collect();
        if found != expected {
            return Err(format!(
                "the shards do not hold exactly the runs of cell {cell}{}: {} runs where the study makes {}; a shard is missing, repeated or damaged",
                if prepared.spec.axes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", prepared.spec.describe_cell(cell))
                },
                found.len(),
                expected.len()
            ));
        }
    }
    Ok(())
}
