//! Heatmaps of a sweep: one metric over two numeric grid keys, faceted by a third.
//!
//! The first two grid keys whose values are all numbers or durations become the x and y axes;
//! one more varying key, if there is one, gives one panel per value, side by side, on a shared
//! colour scale. Each cell shows the mean over seeds, printed in the cell. The colours are
//! viridis (ordered, colour-blind safe, readable in greyscale), turned so that yellow is always
//! the better end: reversed for a metric where lower is better. An undefined mean is left grey
//! (`n/a`), a recovery that never came is hatched (`never`); cells that meet the requirements
//! are outlined, the recommended one (or the closest, if none meets them) thickly.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::SweepSpec;
use crate::output::charts::{
    ChartError, FONT, Format, Picture, chart_error, render_picture, viridis,
};
use crate::vocabulary::metric::{Better, NamedMetric};

/// Size of a heatmap sheet, in pixels.
pub const HEATMAP_SIZE: (u32, u32) = (1600, 900);

/// Which grid keys a heatmap shows, and where each point's cell is.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    x: (String, Vec<String>),
    y: (String, Vec<String>),
    facet: Option<(String, Vec<String>)>,
    /// (x, y, facet) cell of each point.
    cells: Vec<(usize, usize, usize)>,
}

impl Layout {
    /// The layout for a sweep's grid, if it has two numeric keys that vary and at most one
    /// other varying key.
    pub fn of(spec: &SweepSpec) -> Option<Layout> {
        let varying: Vec<usize> = (0..spec.axes.len())
            .filter(|&i| spec.axes[i].values.len() > 1)
            .collect();
        let numeric: Vec<usize> = varying
            .iter()
            .copied()
            .filter(|&i| spec.axes[i].numbers().is_some())
            .collect();
        let (&x, &y) = (numeric.first()?, numeric.get(1)?);
        let others: Vec<usize> = varying
            .iter()
            .copied()
            .filter(|&i| i != x && i != y)
            .collect();
        if others.len() > 1 {
            return None;
        }
        let facet = others.first().copied();
        let axis = |i: usize| (spec.axes[i].key.clone(), spec.axes[i].values.clone());
        let position = |i: usize, value: &str| {
            spec.axes[i]
                .values
                .iter()
                .position(|v| v == value)
                .expect("a grid value")
        };
        let cells = (0..spec.point_count())
            .map(|point| {
                let values = spec.point_values(point);
                (
                    position(x, values[x]),
                    position(y, values[y]),
                    facet.map_or(0, |f| position(f, values[f])),
                )
            })
            .collect();
        Some(Layout {
            x: axis(x),
            y: axis(y),
            facet: facet.map(axis),
            cells,
        })
    }
}

/// One heatmap: a metric's mean at every point of a sweep.
#[derive(Debug, Clone)]
pub struct HeatmapData {
    /// Scenario name, for the title.
    pub scenario: String,
    /// The tuned policy.
    pub policy: String,
    /// The metric shown; which way it is better turns the colours.
    pub metric: NamedMetric,
    /// Where each point goes.
    pub layout: Layout,
    /// The metric's mean at each point (NaN undefined, infinity for "never").
    pub means: Vec<f64>,
    /// Whether each point meets the requirements.
    pub meets: Vec<bool>,
    /// The recommended point, or the closest.
    pub chosen: Option<usize>,
}

impl HeatmapData {
    /// Where `value` sits on the colour scale from 0 (purple) to 1 (yellow), which is the
    /// better end, given the finite means' range `low..=high`: the middle when they are all
    /// equal; NaN for a value that is not finite.
    fn position(&self, value: f64, low: f64, high: f64) -> f64 {
        if !value.is_finite() {
            return f64::NAN;
        }
        let share = if high > low {
            (value - low) / (high - low)
        } else {
            0.5
        };
        match self.metric.better {
            Better::Lower => 1.0 - share,
            Better::Higher | Better::Neither => share,
        }
    }
}

/// A mean as a cell (or an axis) shows it: short, `never`, `n/a`.
pub(super) fn cell_text(value: f64) -> String {
    if value.is_nan() {
        "n/a".into()
    } else if value.is_infinite() {
        "never".into()
    } else if value.abs() >= 100.0 || value == value.round() {
        format!("{value:.0}")
    } else if value.abs() >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.4}")
    }
}

/// The name of `metric`'s heatmap file without its extension: `heatmap-p99_ms`,
/// `heatmap-success_rate.op-pay` for `success_rate:pay`, `heatmap-amplification.at-db` for
/// `amplification@db` ([`NamedMetric::in_file_name`]: a safe file name, and a relative URL
/// with no scheme, for every metric, and another for every other).
pub fn file_stem(metric: &NamedMetric) -> String {
    format!("heatmap-{}", metric.in_file_name())
}

/// Draws a heatmap in `format` and returns the file's bytes.
pub fn render(data: &HeatmapData, format: Format) -> Result<Vec<u8>, ChartError> {
    // The file's name in the glyphs' ids, so that the heatmaps inlined in one page share none:
    // an XML name has no `~`, and a file's name no upper-case letter to confuse with `E`.
    let prefix = file_stem(&data.metric).replace('~', "E");
    render_picture(data, HEATMAP_SIZE, format, &prefix)
}

impl Picture for HeatmapData {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError> {
        draw(root, self).map_err(chart_error)
    }
}

/// Width of the strip on the right that holds the colour scale and the legend, in pixels.
const LEGEND_WIDTH: u32 = 250;
/// Grey of an undefined mean.
const UNDEFINED: RGBColor = RGBColor(200, 200, 200);

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &HeatmapData,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let better = match data.metric.better {
        Better::Higher => "; higher is better: yellow",
        Better::Lower => "; lower is better: yellow",
        Better::Neither => "",
    };
    root.draw(&Text::new(
        format!(
            "{}: {} of policy \"{}\" (mean over seeds{better})",
            data.scenario, data.metric.name, data.policy
        ),
        (16, 12),
        (FONT, 30.0).into_font().style(FontStyle::Bold),
    ))?;
    let finite: Vec<f64> = data
        .means
        .iter()
        .copied()
        .filter(|value| value.is_finite())
        .collect();
    let low = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let high = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (_, body) = root.split_vertically(64);
    let (panels, legend) = body.split_horizontally(HEATMAP_SIZE.0 - LEGEND_WIDTH);
    let facets = data
        .layout
        .facet
        .as_ref()
        .map_or(1, |(_, values)| values.len());
    for (facet, area) in panels.split_evenly((1, facets)).iter().enumerate() {
        draw_panel(area, data, facet, (low, high))?;
    }
    draw_legend(&legend, data, low, high)
}

/// A cell's corners in pixels of `area`: left, top, right, bottom.
type CellPixels = (i32, i32, i32, i32);

/// An outline `width` pixels wide just inside `cell`, black, with a white line inside it so
/// that it shows on dark and light colours alike.
fn outline<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (left, top, right, bottom): CellPixels,
    width: i32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for (inset, thickness, colour) in [(1, width, BLACK), (1 + width, 2, WHITE)] {
        let (l, t, r, b) = (left + inset, top + inset, right - inset, bottom - inset);
        for band in [
            [(l, t), (r, t + thickness)],
            [(l, b - thickness), (r, b)],
            [(l, t), (l + thickness, b)],
            [(r - thickness, t), (r, b)],
        ] {
            area.draw(&Rectangle::new(band, colour.filled()))?;
        }
    }
    Ok(())
}

/// A cell of a recovery that never came: white, hatched with diagonal lines.
fn hatch<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (left, top, right, bottom): CellPixels,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    area.draw(&Rectangle::new(
        [(left, top), (right, bottom)],
        WHITE.filled(),
    ))?;
    let (width, height) = (right - left, bottom - top);
    let step = 16;
    // Lines from bottom left to top right, (x - left) - (bottom - y) = offset, cut to the cell.
    let mut offset = -height + step / 2;
    while offset < width {
        let from = (left + offset.max(0), bottom - (-offset).max(0));
        let run = (width - offset.max(0)).min(height - (-offset).max(0));
        let to = (from.0 + run, from.1 - run);
        area.draw(&PathElement::new(
            vec![from, to],
            RGBColor(110, 110, 110).stroke_width(2),
        ))?;
        offset += step;
    }
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    data: &HeatmapData,
    facet: usize,
    (low, high): (f64, f64),
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let layout = &data.layout;
    let (nx, ny) = (layout.x.1.len(), layout.y.1.len());
    let title = match &layout.facet {
        Some((key, values)) => format!("{key} = {}", values[facet]),
        None => String::new(),
    };
    let chart = ChartBuilder::on(area)
        .caption(title, (FONT, 22.0).into_font())
        .margin(12)
        .x_label_area_size(56)
        .y_label_area_size(110)
        .build_cartesian_2d(0.0..nx as f64, 0.0..ny as f64)?;
    let label_font = (FONT, 16.0).into_font();
    let centred = |h, v| TextStyle::from(label_font.clone()).pos(Pos::new(h, v));
    let origin = area.get_base_pixel();
    let local = |(px, py): (i32, i32)| (px - origin.0, py - origin.1);
    let mut marked = Vec::new();
    for (point, &(x, y, f)) in layout.cells.iter().enumerate() {
        if f != facet {
            continue;
        }
        let value = data.means[point];
        let (x0, y0) = (x as f64, y as f64);
        let (left, bottom) = local(chart.backend_coord(&(x0, y0)));
        let (right, top) = local(chart.backend_coord(&(x0 + 1.0, y0 + 1.0)));
        let cell = (left, top, right, bottom);
        let position = data.position(value, low, high);
        if value.is_infinite() {
            hatch(area, cell)?;
        } else {
            let colour = if value.is_nan() {
                UNDEFINED
            } else {
                viridis(position)
            };
            area.draw(&Rectangle::new(
                [(left, top), (right, bottom)],
                colour.filled(),
            ))?;
        }
        let centre = ((left + right) / 2, (top + bottom) / 2);
        if value.is_infinite() {
            // The label on white, above the hatching.
            area.draw(&Rectangle::new(
                [
                    (centre.0 - 28, centre.1 - 12),
                    (centre.0 + 28, centre.1 + 12),
                ],
                WHITE.filled(),
            ))?;
        }
        let text_colour = if position < 0.6 { WHITE } else { BLACK };
        area.draw(&Text::new(
            cell_text(value),
            centre,
            centred(HPos::Center, VPos::Center).color(&text_colour),
        ))?;
        if data.meets[point] || data.chosen == Some(point) {
            marked.push((point, cell));
        }
    }
    // Outlines after every cell, so that no neighbour covers one; the chosen cell's last.
    marked.sort_by_key(|&(point, _)| data.chosen == Some(point));
    for (point, cell) in marked {
        outline(area, cell, if data.chosen == Some(point) { 6 } else { 2 })?;
    }
    // Category labels under and beside the cells, and the keys' names.
    for (index, value) in layout.x.1.iter().enumerate() {
        let (px, py) = local(chart.backend_coord(&(index as f64 + 0.5, 0.0)));
        area.draw(&Text::new(
            value.clone(),
            (px, py + 8),
            centred(HPos::Center, VPos::Top),
        ))?;
    }
    let (px, py) = local(chart.backend_coord(&(nx as f64 / 2.0, 0.0)));
    area.draw(&Text::new(
        layout.x.0.clone(),
        (px, py + 32),
        centred(HPos::Center, VPos::Top),
    ))?;
    for (index, value) in layout.y.1.iter().enumerate() {
        let (px, py) = local(chart.backend_coord(&(0.0, index as f64 + 0.5)));
        area.draw(&Text::new(
            value.clone(),
            (px - 8, py),
            centred(HPos::Right, VPos::Center),
        ))?;
    }
    let (_, py) = local(chart.backend_coord(&(0.0, ny as f64)));
    area.draw(&Text::new(
        layout.y.0.clone(),
        (12, py - 8),
        centred(HPos::Left, VPos::Bottom),
    ))?;
    Ok(())
}

/// The colour scale, yellow (the better end) at the top with the mean drawn there, and what
/// the outlines, the hatching and grey mean.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    data: &HeatmapData,
    low: f64,
    high: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (top, bottom, left) = (80, 480, 20);
    let steps = 100;
    for step in 0..steps {
        let t = 1.0 - step as f64 / steps as f64;
        let y = top + (bottom - top) * step / steps;
        area.draw(&Rectangle::new(
            [(left, y), (left + 30, y + (bottom - top) / steps + 1)],
            viridis(t).filled(),
        ))?;
    }
    let font = (FONT, 16.0).into_font();
    area.draw(&Text::new(
        data.metric.name.to_string(),
        (left, top - 52),
        font.clone(),
    ))?;
    let (better_end, worse_end) = match data.metric.better {
        Better::Higher | Better::Lower => ("better", "worse"),
        Better::Neither => ("higher", "lower"),
    };
    area.draw(&Text::new(better_end, (left, top - 28), font.clone()))?;
    area.draw(&Text::new(worse_end, (left, bottom + 8), font.clone()))?;
    if low.is_finite() {
        let (at_top, at_bottom) = match data.metric.better {
            Better::Lower => (low, high),
            Better::Higher | Better::Neither => (high, low),
        };
        area.draw(&Text::new(
            cell_text(at_top),
            (left + 38, top - 8),
            font.clone(),
        ))?;
        area.draw(&Text::new(
            cell_text(at_bottom),
            (left + 38, bottom - 8),
            font.clone(),
        ))?;
    }
    // Swatches 40 x 28, each with its meaning beside it: the outlines, then the hatching and
    // the grey if some cell has them.
    let chosen = if data.chosen.is_some_and(|point| data.meets[point]) {
        "recommended"
    } else {
        "closest"
    };
    // (label, outline width, fill colour; none: hatched)
    let mut swatches = vec![
        ("meets the requirements", Some(2), Some(viridis(0.5))),
        (chosen, Some(6), Some(viridis(0.5))),
    ];
    if data.means.iter().any(|value| value.is_infinite()) {
        swatches.push(("never", None, None));
    }
    if data.means.iter().any(|value| value.is_nan()) {
        swatches.push(("undefined (n/a)", None, Some(UNDEFINED)));
    }
    for (index, (label, outlined, fill)) in swatches.into_iter().enumerate() {
        let y = bottom + 50 + 44 * index as i32;
        let cell = (left, y, left + 40, y + 28);
        match fill {
            Some(colour) => area.draw(&Rectangle::new(
                [(cell.0, cell.1), (cell.2, cell.3)],
                colour.filled(),
            ))?,
            None => hatch(area, cell)?,
        }
        if let Some(width) = outlined {
            outline(area, cell, width)?;
        }
        area.draw(&Text::new(label, (left + 50, y + 6), font.clone()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yellow (1) is the better end whichever way the metric is better: the lowest latency,
    /// the highest success; a metric with no better direction keeps viridis as it is, and a
    /// value that is not finite has no colour of the scale.
    #[test]
    fn yellow_is_always_the_better_end() {
        let spec = SweepSpec {
            scenario_path: String::new(),
            scenario_text: String::new(),
            fixed: vec![],
            axes: vec!["a=1,2".parse().unwrap(), "b=1ms,2ms".parse().unwrap()],
            seeds: 1,
            policy: String::new(),
            requirements: vec![],
            minimize: None,
            maximize: None,
            configs: Default::default(),
        };
        let of = |name: &str| HeatmapData {
            scenario: String::new(),
            policy: String::new(),
            metric: crate::vocabulary::metric::NamedMetric::of_run(
                crate::vocabulary::metric::metric(name).unwrap(),
            ),
            layout: Layout::of(&spec).unwrap(),
            means: vec![],
            meets: vec![],
            chosen: None,
        };
        let (latency, success, operations) = (of("p99_ms"), of("success_rate"), of("operations"));
        assert_eq!(latency.position(100.0, 100.0, 300.0), 1.0);
        assert_eq!(latency.position(250.0, 100.0, 300.0), 0.25);
        assert_eq!(success.position(0.99, 0.9, 0.99), 1.0);
        assert_eq!(success.position(0.9, 0.9, 0.99), 0.0);
        assert_eq!(operations.position(300.0, 100.0, 300.0), 1.0);
        assert_eq!(latency.position(7.0, 7.0, 7.0), 0.5);
        assert!(latency.position(f64::INFINITY, 100.0, 300.0).is_nan());
        assert!(latency.position(f64::NAN, 100.0, 300.0).is_nan());
    }

    #[test]
    fn cells_print_short_numbers() {
        assert_eq!(cell_text(0.99512), "0.9951");
        assert_eq!(cell_text(12.345), "12.35");
        assert_eq!(cell_text(1234.5), "1234");
        assert_eq!(cell_text(f64::INFINITY), "never");
    }
}
