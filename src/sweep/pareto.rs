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
    // A requirement's line across the plot.
    let bounds: Vec<&(Axis, f64, String)> = data
        .bounds
        .iter()
        .filter(|(axis, bound, _)| match axis {
            Axis::X => x_range.contains(bound),
            Axis::Y => y_range.contains(bound),
        })
        .collect();
    for (axis, bound, _) in &bounds {
        let (from, to) = match axis {
            Axis::X => ((*bound, y_range.start), (*bound, y_range.end)),
            Axis::Y => ((x_range.start, *bound), (x_range.end, *bound)),
        };
        chart.draw_series([PathElement::new(vec![from, to], CAPACITY.stroke_width(2))])?;
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
    let chosen = data.chosen.filter(finite);
    if let Some(point) = chosen {
        chart.draw_series([Circle::new(data.points[point], 13, CHOSEN.stroke_width(3))])?;
    }
    // The labels, placed where they cover no mark and no other label.
    let pixel = |(x, y): (f64, f64)| chart.backend_coord(&(x, y));
    let (columns, rows) = chart.plotting_area().get_pixel_range();
    let plot = (columns.start, rows.start, columns.end, rows.end);
    let text_style = TextStyle::from(font.clone());
    let measure = |text: &str| {
        root.estimate_text_size(text, &text_style)
            .map_or((8 * text.len() as i32, 16), |(w, h)| (w as i32, h as i32))
    };
    let line = |(axis, bound): (Axis, f64)| match axis {
        Axis::X => (pixel((bound, y_range.start)), pixel((bound, y_range.end))),
        Axis::Y => (pixel((x_range.start, bound)), pixel((x_range.end, bound))),
    };
    let placed = layout(data, &pixel, &measure, &line, plot);
    let unlabelled: Vec<String> = placed
        .iter()
        .filter(|label| label.at.is_none())
        .map(|label| label.text.clone())
        .collect();
    for label in placed {
        let Some(at) = label.at else {
            continue;
        };
        let colour = match label.kind {
            LabelKind::Front => FRONT,
            LabelKind::Chosen => CHOSEN,
            LabelKind::Requirement => CAPACITY,
        };
        if let Some(mark) = label.leader {
            root.draw(&PathElement::new(
                vec![mark, nearest(at, mark)],
                colour.stroke_width(1),
            ))?;
        }
        root.draw(&Text::new(
            label.text,
            (at.0, at.1),
            font.clone()
                .color(&colour)
                .pos(Pos::new(HPos::Left, VPos::Top)),
        ))?;
    }
    // What the plot leaves out, in a line under the title.
    let mut left_out = Vec::new();
    if hidden > 0 {
        left_out.push(format!(
            "{hidden} point{} with an undefined or never value not drawn",
            if hidden == 1 { "" } else { "s" }
        ));
    }
    if !unlabelled.is_empty() {
        left_out.push(format!(
            "not labelled, for lack of room: {}",
            unlabelled.join("; ")
        ));
    }
    if !left_out.is_empty() {
        root.draw(&Text::new(left_out.join("; "), (16, 48), font))?;
    }
    Ok(())
}

/// A point on the page, in pixels.
type Pixel = (i32, i32);

/// A box on the page, in pixels: left, top, right, bottom.
type PixelBox = (i32, i32, i32, i32);

fn overlap(a: PixelBox, b: PixelBox) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// The point of `label` nearest to `mark`: where a leader line from the mark ends.
fn nearest(label: PixelBox, mark: Pixel) -> Pixel {
    (
        mark.0.clamp(label.0, label.2),
        mark.1.clamp(label.1, label.3),
    )
}

/// What a label names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LabelKind {
    /// The recommended (or closest) point.
    Chosen,
    /// Points of the front at one place.
    Front,
    /// A requirement's line.
    Requirement,
}

/// A label as laid out: its text, where it goes (`None`: nowhere free), and the mark a leader
/// line runs to when it stands away from it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PlacedLabel {
    kind: LabelKind,
    text: String,
    at: Option<PixelBox>,
    leader: Option<Pixel>,
}

/// The radius of each mark as drawn: another point, one that meets the requirements, one of
/// the front, the chosen one's ring.
const RADIUS_OTHER: i32 = 4;
const RADIUS_MEETS: i32 = 7;
const RADIUS_FRONT: i32 = 6;
const RADIUS_CHOSEN: i32 = 13;

/// Points of the front whose marks lie closer than this many pixels share a label.
const SHARED_LABEL_PX: i32 = 10;

/// Where every label of the chart goes, given where a value is on the page (`pixel`), how
/// large a text is (`measure`), where a requirement's line runs (`line`), and the plot's box:
/// the chosen point's first, then the front's (points whose marks touch share one label, as
/// "13, 8"), then the requirements'. Each takes the first place, nearest its mark first (or
/// along its line), that lies in the plot and covers no mark and no label placed before it; a
/// label that finds none is left out, and the chart names it above the plot.
fn layout(
    data: &ParetoData,
    pixel: &dyn Fn((f64, f64)) -> Pixel,
    measure: &dyn Fn(&str) -> (i32, i32),
    line: &dyn Fn((Axis, f64)) -> (Pixel, Pixel),
    plot: PixelBox,
) -> Vec<PlacedLabel> {
    let finite =
        |point: usize| data.points[point].0.is_finite() && data.points[point].1.is_finite();
    let mut on_front = vec![false; data.points.len()];
    for &point in &data.front {
        on_front[point] = true;
    }
    let chosen = data.chosen.filter(|&point| finite(point));
    // Every mark, as the box of its circle.
    let mut taken: Vec<PixelBox> = (0..data.points.len())
        .filter(|&point| finite(point))
        .map(|point| {
            let radius = if Some(point) == chosen {
                RADIUS_CHOSEN
            } else if data.meets[point] {
                RADIUS_MEETS
            } else if on_front[point] {
                RADIUS_FRONT
            } else {
                RADIUS_OTHER
            };
            let (x, y) = pixel(data.points[point]);
            (x - radius, y - radius, x + radius, y + radius)
        })
        .collect();
    let mut labels: Vec<PlacedLabel> = Vec::new();
    let mut place = |kind: LabelKind,
                     text: String,
                     mark: Option<(Pixel, i32)>,
                     candidates: Vec<Pixel>,
                     taken: &mut Vec<PixelBox>| {
        let (width, height) = measure(&text);
        let free = candidates
            .into_iter()
            .map(|(x, y)| (x, y, x + width, y + height))
            .find(|&candidate| {
                candidate.0 >= plot.0
                    && candidate.1 >= plot.1
                    && candidate.2 <= plot.2
                    && candidate.3 <= plot.3
                    && !taken.iter().any(|&box_| overlap(candidate, box_))
            });
        let leader = match (free, mark) {
            (Some(at), Some((centre, radius))) => {
                let end = nearest(at, centre);
                let far =
                    (end.0 - centre.0).pow(2) + (end.1 - centre.1).pow(2) > (radius + 6).pow(2);
                far.then_some(centre)
            }
            _ => None,
        };
        if let Some(at) = free {
            taken.push(at);
        }
        labels.push(PlacedLabel {
            kind,
            text,
            at: free,
            leader,
        });
    };
    if let Some(point) = chosen {
        let text = format!(
            "{} (point {point})",
            if data.meets[point] {
                "recommended"
            } else {
                "closest"
            }
        );
        let centre = pixel(data.points[point]);
        let size = measure(&text);
        place(
            LabelKind::Chosen,
            text,
            Some((centre, RADIUS_CHOSEN)),
            around(centre, RADIUS_CHOSEN, size),
            &mut taken,
        );
    }
    // The front's points by number, when few enough to read; touching marks share a label.
    let front: Vec<usize> = data
        .front
        .iter()
        .copied()
        .filter(|&point| finite(point) && Some(point) != chosen)
        .collect();
    if data.front.len() <= 25 {
        let mut groups: Vec<(Pixel, Vec<usize>)> = Vec::new();
        for point in front {
            let at = pixel(data.points[point]);
            let near = |(x, y): Pixel| {
                (x - at.0).abs() < SHARED_LABEL_PX && (y - at.1).abs() < SHARED_LABEL_PX
            };
            match groups.iter_mut().find(|(place, _)| near(*place)) {
                Some((_, points)) => points.push(point),
                None => groups.push((at, vec![point])),
            }
        }
        for (centre, mut points) in groups {
            points.sort_unstable();
            let text = points
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let size = measure(&text);
            place(
                LabelKind::Front,
                text,
                Some((centre, RADIUS_FRONT)),
                around(centre, RADIUS_FRONT, size),
                &mut taken,
            );
        }
    }
    for (axis, bound, text) in &data.bounds {
        let (start, end) = line((*axis, *bound));
        if !(plot.0..=plot.2).contains(&start.0) || !(plot.1..=plot.3).contains(&start.1) {
            continue;
        }
        let size = measure(text);
        place(
            LabelKind::Requirement,
            text.clone(),
            None,
            along(*axis, (start, end), size),
            &mut taken,
        );
    }
    labels
}

/// Places for a label of `size` around a mark at `centre` of `radius`, nearest first: right,
/// left, above, below and the four corners, then the same farther out, step by step.
fn around(centre: Pixel, radius: i32, (width, height): (i32, i32)) -> Vec<Pixel> {
    let (x, y) = centre;
    (0..8)
        .flat_map(|step| {
            let gap = radius + 4 + 16 * step;
            [
                (x + gap, y - height / 2),
                (x - gap - width, y - height / 2),
                (x - width / 2, y - gap - height),
                (x - width / 2, y + gap),
                (x + gap, y - gap - height),
                (x - gap - width, y - gap - height),
                (x + gap, y + gap),
                (x - gap - width, y + gap),
            ]
        })
        .collect()
}

/// Places for a requirement's label of `size` beside its line from `start` (its lower or left
/// end) to `end`: right of (or above) the line, then left of (or below) it, sliding from the
/// start along the line.
fn along(axis: Axis, (start, end): (Pixel, Pixel), (width, height): (i32, i32)) -> Vec<Pixel> {
    let steps = 24;
    (0..=steps)
        .flat_map(|step| {
            let x = start.0 + (end.0 - start.0) * step / steps;
            let y = start.1 + (end.1 - start.1) * step / steps;
            match axis {
                Axis::X => [(x + 6, y - height - 4), (x - 6 - width, y - height - 4)],
                Axis::Y => [(x + 6, y - height - 4), (x + 6, y + 4)],
            }
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::metric::NamedMetric;

    fn metric(name: &str) -> NamedMetric {
        let metric = crate::vocabulary::metric::METRICS
            .iter()
            .find(|metric| metric.name == name)
            .expect("a run's metric");
        NamedMetric::of_run(metric)
    }

    /// A crowded front, as thundering-herd's sweep gives (its labels once read "37" over
    /// "39" and "13B"): three points at one place, two a pixel apart on the chosen point,
    /// one more a few pixels from them, and the requirement's line through them.
    fn crowded() -> ParetoData {
        let mut points = vec![(0.80, 0.7), (0.86, 0.93), (0.97, 0.31), (0.9983, 0.375)];
        let front_at = [
            (0.9983, 0.0617),
            (0.9983, 0.0617),
            (0.9983, 0.0617),
            (0.99851, 0.0),
            (0.99849, 0.0),
            (0.9960, 0.02),
            (0.9985, 0.0),
        ];
        points.extend(front_at);
        let front: Vec<usize> = (4..points.len()).collect();
        ParetoData {
            scenario: "thundering-herd".into(),
            policy: "full jitter".into(),
            x: metric("success_rate"),
            y: metric("recovery_s"),
            meets: (0..points.len()).map(|point| point >= 3).collect(),
            chosen: Some(points.len() - 1),
            front,
            points,
            bounds: vec![(Axis::X, 0.998, "success_rate >= 0.998".into())],
        }
    }

    /// Every label finds a place in the plot that covers no mark and no other label, points
    /// whose marks touch share one, and every point of the front is named.
    #[test]
    fn crowded_labels_do_not_overlap() {
        let data = crowded();
        let plot: PixelBox = (126, 110, 1240, 664);
        // success_rate 0.78..1.01 across, recovery_s -0.05..1 up, as the chart's ranges.
        let pixel = |(x, y): (f64, f64)| {
            (
                plot.0 + ((x - 0.78) / 0.23 * f64::from(plot.2 - plot.0)) as i32,
                plot.3 - ((y + 0.05) / 1.05 * f64::from(plot.3 - plot.1)) as i32,
            )
        };
        let measure = |text: &str| (9 * text.len() as i32, 19);
        let line = |(axis, bound): (Axis, f64)| match axis {
            Axis::X => (pixel((bound, -0.05)), pixel((bound, 1.0))),
            Axis::Y => (pixel((0.78, bound)), pixel((1.01, bound))),
        };
        let labels = layout(&data, &pixel, &measure, &line, plot);
        assert_eq!(labels[0].kind, LabelKind::Chosen);
        assert_eq!(labels[0].text, "recommended (point 10)");
        let boxes: Vec<PixelBox> = labels
            .iter()
            .map(|label| {
                label
                    .at
                    .unwrap_or_else(|| panic!("{} has no place", label.text))
            })
            .collect();
        for (index, a) in boxes.iter().enumerate() {
            assert!(a.0 >= plot.0 && a.1 >= plot.1 && a.2 <= plot.2 && a.3 <= plot.3);
            for b in &boxes[index + 1..] {
                assert!(!overlap(*a, *b), "{a:?} overlaps {b:?}: {labels:?}");
            }
            for point in 0..data.points.len() {
                let (x, y) = pixel(data.points[point]);
                let mark = (x - 6, y - 6, x + 6, y + 6);
                assert!(!overlap(*a, mark), "{a:?} covers point {point}: {labels:?}");
            }
        }
        let named: Vec<&str> = labels
            .iter()
            .filter(|label| label.kind == LabelKind::Front)
            .flat_map(|label| label.text.split(", "))
            .collect();
        let mut expected: Vec<String> = (4..10).map(|point| point.to_string()).collect();
        expected.sort();
        let mut named: Vec<String> = named.into_iter().map(str::to_string).collect();
        named.sort();
        assert_eq!(named, expected);
        // The three at one place share a label; the two a pixel apart share another.
        assert!(
            labels.iter().any(|label| label.text == "4, 5, 6"),
            "{labels:?}"
        );
        assert!(
            labels.iter().any(|label| label.text == "7, 8"),
            "{labels:?}"
        );
        assert!(
            labels
                .iter()
                .any(|label| label.text == "success_rate >= 0.998")
        );
    }

    /// With no room at all, a label is left out rather than drawn over another.
    #[test]
    fn a_label_without_room_is_left_out() {
        let data = crowded();
        let plot: PixelBox = (0, 0, 40, 40);
        let pixel = |_: (f64, f64)| (20, 20);
        let measure = |text: &str| (9 * text.len() as i32, 19);
        let line = |_: (Axis, f64)| ((20, 0), (20, 40));
        let labels = layout(&data, &pixel, &measure, &line, plot);
        assert!(labels.iter().all(|label| label.at.is_none()), "{labels:?}");
    }
}
