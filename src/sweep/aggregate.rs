//! Per point of a sweep: each metric's mean and 95% interval over the point's seeds, and
//! whether the point meets the requirements. What `aggregate.csv`, the recommendation and the
//! report are written from.

use std::collections::BTreeMap;

use super::interval::{Interval, interval};
use super::{PreparedSweep, ResultRow};
use crate::vocabulary::metric::{NamedMetric, parse_metric};

/// A mean or a bound as `aggregate.csv` writes it: six decimals, `never`, or empty.
pub(super) fn aggregate_text(value: f64) -> String {
    if value.is_nan() {
        String::new()
    } else if value.is_infinite() {
        "never".to_string()
    } else {
        format!("{value:.6}")
    }
}

/// Per point: mean and 95% interval of each metric, by the metric's [`Method`].
pub(super) struct Aggregate {
    /// `[point * columns + metric]`, metrics in the order of the columns.
    values: Vec<Interval>,
    /// Each metric's position among the columns, by name.
    index: BTreeMap<String, usize>,
}

impl Aggregate {
    /// From `rows` ordered by point (as [`merge`] and [`PreparedSweep::run`] return them) of the
    /// metrics `columns`, in one pass over them: a million points cost a million steps, not a
    /// million passes.
    pub(super) fn new(columns: &[NamedMetric], points: usize, rows: &[ResultRow]) -> Aggregate {
        debug_assert!(rows.is_sorted_by_key(|row| row.point));
        let mut groups = rows.chunk_by(|a, b| a.point == b.point).peekable();
        let index: BTreeMap<String, usize> = columns
            .iter()
            .enumerate()
            .map(|(index, metric)| (metric.name.clone(), index))
            .collect();
        let mut values = Vec::with_capacity(points * columns.len());
        for point in 0..points {
            let of_point = groups
                .next_if(|group| group[0].point == point)
                .unwrap_or_default();
            let column = |position: usize| -> Vec<f64> {
                of_point
                    .iter()
                    .map(|row| parse_metric(&row.metrics[position]).expect("checked when read"))
                    .collect()
            };
            for (position, metric) in columns.iter().enumerate() {
                values.push(interval(metric, &column(position), |name| {
                    column(index[name])
                }));
            }
        }
        Aggregate { values, index }
    }

    /// Each metric's mean and interval at `point`, in the order of the columns.
    pub(super) fn of_point(&self, point: usize) -> &[Interval] {
        let width = self.index.len();
        &self.values[point * width..(point + 1) * width]
    }

    /// The mean of `metric` at `point`.
    pub(super) fn mean(&self, point: usize, metric: &str) -> f64 {
        self.interval(point, metric).mean
    }

    /// The mean of `metric` at `point` and its 95% interval.
    pub(super) fn interval(&self, point: usize, metric: &str) -> Interval {
        let index = self.index[metric];
        self.of_point(point)[index]
    }
}

/// Whether `point` meets every requirement.
pub(super) fn meets(prepared: &PreparedSweep, aggregate: &Aggregate, point: usize) -> bool {
    prepared
        .requirements
        .iter()
        .all(|requirement| requirement.holds(aggregate.mean(point, &requirement.metric)))
}
