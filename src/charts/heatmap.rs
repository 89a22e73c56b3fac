//! Heatmaps of a sweep: one metric over two numeric grid keys, faceted by a third.
//!
//! The first two grid keys whose values are all numbers or durations become the x and y axes;
//! one more varying key, if there is one, gives one panel per value, side by side, on a shared
//! colour scale. Each cell shows the mean over seeds, printed in the cell. The colours are
//! viridis (ordered, colour-blind safe, readable in greyscale); an undefined mean is left grey.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{ChartError, FONT, Format, Picture, chart_error, render_picture};
use crate::sweep::SweepSpec;
use crate::time::Duration;

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

fn is_numeric(value: &str) -> bool {
    value.parse::<f64>().is_ok() || value.parse::<Duration>().is_ok()
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
            .filter(|&i| spec.axes[i].values.iter().all(|value| is_numeric(value)))
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
    /// The metric shown.
    pub metric: &'static str,
    /// Where each point goes.
    pub layout: Layout,
    /// The metric's mean at each point (NaN undefined, infinity for "never").
    pub means: Vec<f64>,
}

/// Viridis, sampled at nine stops and interpolated linearly.
fn viridis(t: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 9] = [
        (68, 1, 84),
        (71, 44, 122),
        (59, 81, 139),
        (44, 113, 142),
        (33, 144, 141),
        (39, 173, 129),
        (92, 200, 99),
        (170, 220, 50),
        (253, 231, 37),
    ];
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) } * (STOPS.len() - 1) as f64;
    let low = (t.floor() as usize).min(STOPS.len() - 2);
    let fraction = t - low as f64;
    let mix =
        |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * fraction).round() as u8;
    let (a, b) = (STOPS[low], STOPS[low + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn cell_text(value: f64) -> String {
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

/// Draws a heatmap in `format` and returns the file's bytes.
pub fn render(data: &HeatmapData, format: Format) -> Result<Vec<u8>, ChartError> {
    render_picture(data, HEATMAP_SIZE, format, "heatmap")
}

impl Picture for HeatmapData {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError> {
        draw(root, self).map_err(chart_error)
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &HeatmapData,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    root.draw(&Text::new(
        format!(
            "{}: {} of policy \"{}\" (mean over seeds)",
            data.scenario, data.metric, data.policy
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
    let scale = |value: f64| {
        if value.is_infinite() {
            1.0
        } else if high > low {
            (value - low) / (high - low)
        } else {
            0.5
        }
    };
    let (_, body) = root.split_vertically(64);
    let (panels, legend) = body.split_horizontally(HEATMAP_SIZE.0 - 170);
    let facets = data
        .layout
        .facet
        .as_ref()
        .map_or(1, |(_, values)| values.len());
    for (facet, area) in panels.split_evenly((1, facets)).iter().enumerate() {
        draw_panel(area, data, facet, &scale)?;
    }
    draw_colour_scale(&legend, data.metric, low, high)
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    data: &HeatmapData,
    facet: usize,
    scale: &dyn Fn(f64) -> f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let layout = &data.layout;
    let (nx, ny) = (layout.x.1.len(), layout.y.1.len());
    let title = match &layout.facet {
        Some((key, values)) => format!("{key} = {}", values[facet]),
        None => String::new(),
    };
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 22.0).into_font())
        .margin(12)
        .x_label_area_size(56)
        .y_label_area_size(110)
        .build_cartesian_2d(0.0..nx as f64, 0.0..ny as f64)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .disable_y_axis()
        .draw()?;
    let label_font = (FONT, 16.0).into_font();
    let centred = |h, v| TextStyle::from(label_font.clone()).pos(Pos::new(h, v));
    for (point, &(x, y, f)) in layout.cells.iter().enumerate() {
        if f != facet {
            continue;
        }
        let value = data.means[point];
        let colour = if value.is_nan() {
            RGBColor(200, 200, 200)
        } else {
            viridis(scale(value))
        };
        let (x0, y0) = (x as f64, y as f64);
        chart.draw_series([Rectangle::new(
            [(x0, y0), (x0 + 1.0, y0 + 1.0)],
            colour.filled(),
        )])?;
        let dark = value.is_nan() || scale(value) < 0.6;
        let text_colour = if dark && !value.is_nan() {
            WHITE
        } else {
            BLACK
        };
        let (px, py) = chart.backend_coord(&(x0 + 0.5, y0 + 0.5));
        area.draw(&Text::new(
            cell_text(value),
            (px - area.get_base_pixel().0, py - area.get_base_pixel().1),
            centred(HPos::Center, VPos::Center).color(&text_colour),
        ))?;
    }
    // Category labels under and beside the cells, and the keys' names.
    let origin = area.get_base_pixel();
    let local = |(px, py): (i32, i32)| (px - origin.0, py - origin.1);
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

fn draw_colour_scale<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    metric: &str,
    low: f64,
    high: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (top, bottom, left) = (80, 700, 20);
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
        metric.to_string(),
        (left, top - 30),
        font.clone(),
    ))?;
    if low.is_finite() {
        area.draw(&Text::new(
            cell_text(high),
            (left + 38, top - 8),
            font.clone(),
        ))?;
        area.draw(&Text::new(cell_text(low), (left + 38, bottom - 8), font))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viridis_runs_from_purple_to_yellow() {
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        assert_eq!(viridis(f64::NAN), RGBColor(68, 1, 84));
    }

    #[test]
    fn cells_print_short_numbers() {
        assert_eq!(cell_text(0.99512), "0.9951");
        assert_eq!(cell_text(12.345), "12.35");
        assert_eq!(cell_text(1234.5), "1234");
        assert_eq!(cell_text(f64::INFINITY), "never");
    }
}
