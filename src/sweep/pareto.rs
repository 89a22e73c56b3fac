//! A sweep's Pareto front as a chart: one metric of the front against another, every point of
//! the grid a dot, the points that meet the requirements ringed, the front filled, and the
//! recommended point (or the closest) marked and named.
//!
//! The front is found over every metric of the requirements and the one minimised; two of
//! them are drawn, so with three or more a point of the front may look beaten in the two
//! shown (it is better in another). The requirements on the metrics drawn are lines.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::heatmap::cell_text;
use crate::output::charts::{
    CAPACITY, CHART_SIZE, ChartError, FONT, Format, PALETTE, Picture, chart_error, render_picture,
};
use crate::vocabulary::metric::{Better, NamedMetric};

/// The front on two of its metrics.
#[derive(Debug, Clone)]
pub struct ParetoData {
    /// Scenario name, for the title.
    pub scenario: String,
    /// The tuned policy.
    pub policy: String,
    /// The metric across (the first requirement's).
    pub x: NamedMetric,
    /// The metric up (the one minimised).
    pub y: NamedMetric,
    /// Each point's means of `x` and `y`.
    pub points: Vec<(f64, f64)>,
    /// Whether each point meets the requirements.
    pub meets: Vec<bool>,
    /// The points of the front.
    pub front: Vec<usize>,
    /// The recommended point, or the closest.
    pub chosen: Option<usize>,
    /// Requirements on `x` and `y`: their bounds and how they read (`success_rate >= 0.97`).
    pub bounds: Vec<(Axis, f64, String)>,
}

/// Which axis a requirement bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// Across.
    X,
    /// Up.
    Y,
}

/// Draws the chart in `format` and returns the file's bytes.
pub fn render(data: &ParetoData, format: Format) -> Result<Vec<u8>, ChartError> {
    render_picture(data, CHART_SIZE, format, "pareto")
}

impl Picture for ParetoData {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError> {
        draw(root, self).map_err(chart_error)
    }
}

/// The front's colour (Okabe-Ito blue) and the chosen point's (vermillion).
const FRONT: RGBColor = PALETTE[0];
const CHOSEN: RGBColor = PALETTE[1];

fn axis_label(metric: &NamedMetric) -> String {
    match metric.better {
        Better::Higher => format!("{} (mean; higher is better)", metric.name),
        Better::Lower => format!("{} (mean; lower is better)", metric.name),
        Better::Neither => format!("{} (mean)", metric.name),
    }
}

/// An axis label: as a cell writes the number, without trailing zeros (`0.55`, `4.5`).
fn tick(value: &f64) -> String {
    let text = cell_text(*value);
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// `low..high` of the finite values, widened by a twentieth on each side (by 1 if they are
/// all equal), so that no dot sits on the frame.
fn range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (low, high) = values
        .filter(|value| value.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), value| {
            (low.min(value), high.max(value))
        });
    if !low.is_finite() {
        return 0.0..1.0;
    }
    let margin = if high > low { (high - low) / 20.0 } else { 1.0 };
    low - margin..high + margin
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &ParetoData,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    root.draw(&Text::new(
        format!(
            "{}: Pareto front of policy \"{}\", {} against {}",
            data.scenario, data.policy, data.y.name, data.x.name
        ),
        (16, 12),
        (FONT, 26.0).into_font().style(FontStyle::Bold),
    ))?;
    let hidden = data
        .points
        .iter()
        .filter(|(x, y)| !x.is_finite() || !y.is_finite())
        .count();
    let font = (FONT, 16.0).into_font();
    if hidden > 0 {
        root.draw(&Text::new(
            format!(
                "{hidden} point{} with an undefined or never value not drawn",
                if hidden == 1 { "" } else { "s" }
            ),
            (16, 48),
            font.clone(),
        ))?;
    }
    let (header, plot) = root.split_vertically(100);
    draw_legend(&header, data)?;
    let mut chart = ChartBuilder::on(&plot)
        .margin_left(26)
        .margin_right(40)
        .margin_top(8)
        .x_label_area_size(56)
        .y_label_area_size(100)
        .build_cartesian_2d(
            range(data.points.iter().map(|p| p.0)),
            range(data.points.iter().map(|p| p.1)),
        )?;
    chart
        .configure_mesh()
        .x_desc(axis_label(&data.x))
        .y_desc(axis_label(&data.y))
        .label_style(font.clone())
        .axis_desc_style((FONT, 18.0).into_font())
        .light_line_style(RGBColor(240, 240, 240))
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .draw()?;
    let (x_range, y_range) = (chart.x_range(), chart.y_range());
    // A label right of its mark in the left half of the plot, left of it in the right half,
    // so that none runs off the edge; `(dx, dy)` is its offset on the right.
    let middle = (x_range.start + x_range.end) / 2.0;
    let beside = |x: f64, (dx, dy): (i32, i32), style: TextStyle<'static>| {
        if x > middle {
            ((-dx, dy), style.pos(Pos::new(HPos::Right, VPos::Center)))
        } else {
            ((dx, dy), style.pos(Pos::new(HPos::Left, VPos::Center)))
        }
    };
    // A requirement's line across the plot, labelled at its lower (left) end.
    for (axis, bound, label) in &data.bounds {
        let (from, to) = match axis {
            Axis::X => ((*bound, y_range.start), (*bound, y_range.end)),
            Axis::Y => ((x_range.start, *bound), (x_range.end, *bound)),
        };
        if !(x_range.start..=x_range.end).contains(&from.0)
            || !(y_range.start..=y_range.end).contains(&from.1)
        {
            continue;
        }
        chart.draw_series([PathElement::new(vec![from, to], CAPACITY.stroke_width(2))])?;
        chart.draw_series([EmptyElement::at(from)
            + Text::new(label.clone(), (6, -24), font.clone().color(&CAPACITY))])?;
    }
    let finite = |point: &usize| {
        let (x, y) = data.points[*point];
        x.is_finite() && y.is_finite()
    };
    let mut on_front = vec![false; data.points.len()];
    for &point in &data.front {
        on_front[point] = true;
    }
    let all = 0..data.points.len();
    let others = all
        .clone()
        .filter(finite)
        .filter(|&point| !data.meets[point] && !on_front[point]);
    chart.draw_series(
        others.map(|point| Circle::new(data.points[point], 4, RGBColor(170, 170, 170).filled())),
    )?;
    let meeting = all.filter(finite).filter(|point| data.meets[*point]);
    chart.draw_series(
        meeting.map(|point| Circle::new(data.points[point], 7, FRONT.stroke_width(2))),
    )?;
    let front: Vec<usize> = data.front.iter().copied().filter(finite).collect();
    chart.draw_series(
        front
            .iter()
            .map(|&point| Circle::new(data.points[point], 6, FRONT.filled())),
    )?;
    // The front's points by number, when few enough to read; points at one place share a
    // label, and the chosen point has its own.
    if front.len() <= 25 {
        let mut labels: Vec<((f64, f64), Vec<String>)> = Vec::new();
        for &point in front.iter().filter(|&&point| Some(point) != data.chosen) {
            let at = data.points[point];
            match labels.iter_mut().find(|(place, _)| *place == at) {
                Some((_, names)) => names.push(point.to_string()),
                None => labels.push((at, vec![point.to_string()])),
            }
        }
        for (at, names) in labels {
            let (offset, style) = beside(at.0, (10, -10), font.clone().color(&FRONT));
            chart
                .draw_series([EmptyElement::at(at) + Text::new(names.join(", "), offset, style)])?;
        }
    }
    if let Some(point) = data.chosen.filter(finite) {
        let label = format!(
            "{} (point {point})",
            if data.meets[point] {
                "recommended"
            } else {
                "closest"
            }
        );
        let at = data.points[point];
        let (offset, style) = beside(at.0, (18, 10), font.color(&CHOSEN));
        chart.draw_series([EmptyElement::at(at)
            + Circle::new((0, 0), 13, CHOSEN.stroke_width(3))
            + Text::new(label, offset, style)])?;
    }
    Ok(())
}

/// What each mark means, in a strip above the plot.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    data: &ParetoData,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let font = (FONT, 16.0).into_font();
    let y = 80;
    let chosen = if data.chosen.is_some_and(|point| data.meets[point]) {
        "recommended"
    } else {
        "closest"
    };
    let entries: [(&str, ShapeStyle, i32); 4] = [
        ("another point", RGBColor(170, 170, 170).filled(), 4),
        ("meets the requirements", FRONT.stroke_width(2), 7),
        ("on the front", FRONT.filled(), 6),
        (chosen, CHOSEN.stroke_width(3), 13),
    ];
    let mut x = 40;
    for (label, style, radius) in entries {
        area.draw(&Circle::new((x, y), radius, style))?;
        area.draw(&Text::new(label, (x + 20, y - 9), font.clone()))?;
        x += 60 + 9 * label.len() as i32;
    }
    Ok(())
}
