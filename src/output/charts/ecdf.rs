//! The empirical distribution of an outcome over replications, one step curve per policy, each
//! with its confidence band.
//!
//! A mean over replications hides what matters about a retry storm: whether some runs never
//! recover at all, and how long the slow ones take. The empirical distribution function shows
//! both: the share of runs at or below every value, rising by 1/n at each run, and topping out
//! below 1 when some runs never reached an outcome (a recovery that never came), so that
//! "never" is read off the chart as the gap under the top. Around each curve a translucent band
//! of the half-width the caller gives (the Dvoretzky-Kiefer-Wolfowitz bound, for instance)
//! says how far the true distribution may be from the one measured, clipped to [0, 1].

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    CHART_SIZE, ChartError, FONT, Format, LEGEND_LEFT, Picture, Series, chart_error, draw_legend,
    legend_layout, policy_colour, render_picture, seconds_tick, titled, wrap,
};

/// One policy's outcomes over its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct EcdfSeries {
    pub policy: String,
    /// The finite outcomes of the runs, in any order.
    pub values: Vec<f64>,
    /// The runs whose outcome is infinite (a recovery that never came): the curve then tops
    /// out at (n - never) / n.
    pub never: usize,
    /// The half-width of the band drawn around the curve, as a share of runs (the caller
    /// computes it, e.g. the DKW bound).
    pub band: f64,
}

/// An ECDF chart: a curve per policy, in the policies' colours.
#[derive(Debug, Clone, PartialEq)]
pub struct EcdfChart {
    pub title: String,
    /// The x axis's label, with its unit.
    pub x_label: String,
    pub series: Vec<EcdfSeries>,
    /// A line under the chart: what the bands mean.
    pub note: String,
}

/// Draws `chart` in `format` and returns the file's bytes, [`CHART_SIZE`]; an error if a value
/// or a band is not finite, or a band is negative.
pub fn render_ecdf(chart: &EcdfChart, format: Format) -> Result<Vec<u8>, ChartError> {
    for series in &chart.series {
        if let Some(value) = series.values.iter().find(|value| !value.is_finite()) {
            return Err(ChartError(format!(
                "the outcomes of {:?} hold {value}; count a run without an outcome in `never`",
                series.policy
            )));
        }
        if !(series.band.is_finite() && series.band >= 0.0) {
            return Err(ChartError(format!(
                "the band of {:?} is {}, not a share of runs of 0 or more",
                series.policy, series.band
            )));
        }
    }
    render_picture(chart, CHART_SIZE, format, "ecdf")
}

impl Picture for EcdfChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError> {
        root.fill(&WHITE).map_err(chart_error)?;
        let body = titled(root, &self.title, 30)?;
        draw(&body, self).map_err(chart_error)
    }
}

/// The corners of the step curve of `sorted` (ascending, finite) out of `total` runs, from
/// `from` to `to` on the x axis: flat at 0 until the first value, up by its share of runs at
/// each value (runs of equal values in one step), flat after the last.
fn corners(sorted: &[f64], total: usize, from: f64, to: f64) -> Vec<(f64, f64)> {
    let share = |count: usize| count as f64 / total.max(1) as f64;
    let mut points = vec![(from, 0.0)];
    let mut below = 0;
    for equal in sorted.chunk_by(|a, b| a == b) {
        points.push((equal[0], share(below)));
        below += equal.len();
        points.push((equal[0], share(below)));
    }
    points.push((to, share(below)));
    points
}

/// The x axis's range: the finite values' least to greatest, widened by 5% of the span on
/// each side (by 5% of the value, or of 1, when they are all equal); 0 to 1 without values.
fn x_range(chart: &EcdfChart) -> (f64, f64) {
    let values = chart.series.iter().flat_map(|series| &series.values);
    let (low, high) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), &v| {
        (low.min(v), high.max(v))
    });
    if low > high {
        return (0.0, 1.0);
    }
    let span = if high > low {
        high - low
    } else {
        low.abs().max(1.0)
    };
    (low - 0.05 * span, high + 0.05 * span)
}

/// A series' legend label: its policy, its runs, and how many never reached an outcome.
fn label(series: &EcdfSeries) -> String {
    let runs = series.values.len() + series.never;
    let policy = &series.policy;
    match (runs, series.never) {
        (0, _) => format!("{policy}: no runs"),
        (runs, never) if never == runs => format!("{policy}: never recovered in all {runs} runs"),
        (runs, 0) => format!("{policy} (n = {runs})"),
        (runs, never) => format!("{policy} (n = {runs}; {never} of {runs} never)"),
    }
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, chart: &EcdfChart) -> DrawResult<DB> {
    let entries: Vec<Series> = chart
        .series
        .iter()
        .enumerate()
        .map(|(index, series)| Series {
            label: label(series),
            colour: policy_colour(index),
            dashed: false,
            reference: false,
            block: None,
            marked: false,
            points: Vec::new(),
        })
        .collect();
    // The legend above, the note below, the plot between.
    let rows = legend_layout(area, &entries, 1.0);
    let (legend, rest) = area.split_vertically(22 * rows.len() as u32 + 6);
    draw_legend(&legend, &entries, &rows, 1.0)?;
    let note_font = (FONT, 16.0).into_font().color(&RGBColor(90, 90, 90));
    let room = area
        .dim_in_pixel()
        .0
        .saturating_sub(LEGEND_LEFT as u32 + 24);
    let note = wrap(&chart.note, |line| {
        area.estimate_text_size(line, &note_font)
            .is_ok_and(|(width, _)| width <= room)
    });
    let height = rest.dim_in_pixel().1;
    let (plot, foot) = rest.split_vertically(height.saturating_sub(22 * note.len() as u32 + 16));
    for (row, line) in note.into_iter().enumerate() {
        foot.draw(&Text::new(
            line,
            (LEGEND_LEFT as i32, 22 * row as i32 + 4),
            note_font.clone(),
        ))?;
    }
    let (from, to) = x_range(chart);
    let mut plotted = ChartBuilder::on(&plot)
        .margin_left(26)
        .margin_right(24)
        .margin_top(8)
        .x_label_area_size(48)
        .y_label_area_size(100)
        .build_cartesian_2d(from..to, 0.0..1.04)?;
    plotted
        .configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc("share of runs at or below")
        .label_style((FONT, 15.0).into_font())
        .axis_desc_style((FONT, 18.0).into_font())
        .light_line_style(RGBColor(240, 240, 240))
        .x_label_formatter(&|value| seconds_tick(*value))
        .y_labels(6)
        .y_label_formatter(&|value| seconds_tick(*value))
        .draw()?;
    let curves: Vec<Option<Vec<(f64, f64)>>> = chart
        .series
        .iter()
        .map(|series| curve(series, from, to))
        .collect();
    // Every band under every curve, so that no band veils another policy's line.
    for (index, (series, points)) in chart.series.iter().zip(&curves).enumerate() {
        if let Some(points) = points {
            let outline = band_outline(points, series.band);
            let shade = policy_colour(index).mix(0.18).filled();
            plotted.draw_series([Polygon::new(outline, shade)])?;
        }
    }
    for (index, points) in curves.into_iter().enumerate() {
        if let Some(points) = points {
            let line = policy_colour(index).stroke_width(2);
            plotted.draw_series(LineSeries::new(points, line))?;
        }
    }
    Ok(())
}

/// The corners of `series`' curve from `from` to `to` ([`corners`]); `None` without a finite
/// value, which draws nothing.
fn curve(series: &EcdfSeries, from: f64, to: f64) -> Option<Vec<(f64, f64)>> {
    if series.values.is_empty() {
        return None;
    }
    let mut sorted = series.values.clone();
    sorted.sort_by(f64::total_cmp);
    Some(corners(&sorted, sorted.len() + series.never, from, to))
}

/// The outline of the band of half-width `band` around the curve through `points`, clipped to
/// [0, 1]: along the curve raised, then back along it lowered.
fn band_outline(points: &[(f64, f64)], band: f64) -> Vec<(f64, f64)> {
    let raised = points
        .iter()
        .map(|&(x, share)| (x, (share + band).min(1.0)));
    let lowered = points
        .iter()
        .rev()
        .map(|&(x, share)| (x, (share - band).max(0.0)));
    raised.chain(lowered).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four outcomes, two of them equal, and a run that never recovered: n = 5, so the curve
    /// steps by 1/5 (2/5 at the pair) and tops out at 4/5.
    #[test]
    fn the_curve_steps_by_a_run_and_tops_out_below_never() {
        assert_eq!(
            corners(&[1.0, 1.0, 2.0, 3.0], 5, 0.0, 4.0),
            [
                (0.0, 0.0),
                (1.0, 0.0),
                (1.0, 0.4),
                (2.0, 0.4),
                (2.0, 0.6),
                (3.0, 0.6),
                (3.0, 0.8),
                (4.0, 0.8)
            ]
        );
    }

    fn chart_of(values: &[&[f64]]) -> EcdfChart {
        EcdfChart {
            title: String::new(),
            x_label: String::new(),
            series: values
                .iter()
                .map(|values| EcdfSeries {
                    policy: "p".into(),
                    values: values.to_vec(),
                    never: 0,
                    band: 0.1,
                })
                .collect(),
            note: String::new(),
        }
    }

    /// The axis spans every series with 5% to spare on each side; equal values get 5% of
    /// themselves (or of 1 at 0), and no values 0 to 1.
    #[test]
    fn the_axis_spans_all_values() {
        assert_eq!(x_range(&chart_of(&[&[2.0, 4.0], &[12.0]])), (1.5, 12.5));
        assert_eq!(x_range(&chart_of(&[&[20.0, 20.0]])), (19.0, 21.0));
        assert_eq!(x_range(&chart_of(&[&[0.0]])), (-0.05, 0.05));
        assert_eq!(x_range(&chart_of(&[&[]])), (0.0, 1.0));
    }

    /// The band follows the steps a quarter above and below, cut at 0 and at 1.
    #[test]
    fn the_band_is_clipped_to_shares() {
        let points = corners(&[1.0, 2.0], 2, 0.0, 3.0);
        assert_eq!(
            band_outline(&points, 0.25),
            [
                (0.0, 0.25),
                (1.0, 0.25),
                (1.0, 0.75),
                (2.0, 0.75),
                (2.0, 1.0),
                (3.0, 1.0),
                (3.0, 0.75),
                (2.0, 0.75),
                (2.0, 0.25),
                (1.0, 0.25),
                (1.0, 0.0),
                (0.0, 0.0)
            ]
        );
    }

    #[test]
    fn the_legend_says_how_many_never() {
        let series = |values: usize, never: usize| EcdfSeries {
            policy: "jitter".into(),
            values: vec![1.0; values],
            never,
            band: 0.0,
        };
        assert_eq!(label(&series(100, 0)), "jitter (n = 100)");
        assert_eq!(label(&series(88, 12)), "jitter (n = 100; 12 of 100 never)");
        assert_eq!(
            label(&series(0, 100)),
            "jitter: never recovered in all 100 runs"
        );
        assert_eq!(label(&series(0, 0)), "jitter: no runs");
    }
}
