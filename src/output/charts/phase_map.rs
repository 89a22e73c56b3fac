//! The phase map: over two settings, where a system recovers from an incident and where it
//! stays down, one panel per policy.
//!
//! It is the picture metastability papers draw by hand. A system with a metastable failure mode
//! recovers from a small trigger and stays down after a large one; between the two lies an edge,
//! and a control (jitter, a retry budget, a breaker) is worth what it moves that edge. So each
//! cell is coloured by the share of its replications that recovered, on a diverging scale
//! centred on one half (blue recovers, red stays down, both ends safe for the common forms of
//! colour blindness), and the edge itself is drawn as a thick dark line along every cell side
//! that separates a cell recovering at least half the time from one that does not
//! ([`boundary_edges`]). Panels share their axes, so the edges can be compared at a glance.
//! Cells print their share and, where there is room, their number of runs: adaptive refinement
//! spends more runs near the edge, so `n` says how sure a cell is. A run unhealthy before its
//! incident (load above what the system serves) did not recover, but no storm kept it down
//! either: a cell holding such runs is hatched and counts them (`3 u.b.`), so that a region of
//! the map that was never healthy is not read as one that tipped.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{ChartError, FONT, Format, Picture, chart_error, ramp, render_picture};

/// One axis of the map: the `--set` key and its values as labels, low to high.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapAxis {
    pub key: String,
    pub labels: Vec<String>,
}

/// A cell's outcome over its replications.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseCell {
    pub runs: u32,
    pub recovered: u32,
    /// Runs unhealthy before the incident: among those that did not recover.
    pub unhealthy_before: u32,
    pub median_recovery_s: Option<f64>,
}

impl PhaseCell {
    /// The share of its runs that recovered; `None` without runs.
    pub fn probability(&self) -> Option<f64> {
        (self.runs > 0).then(|| f64::from(self.recovered) / f64::from(self.runs))
    }

    /// Whether it recovers at least half the time (exactly, in whole runs); `None` without runs.
    pub fn recovers(&self) -> Option<bool> {
        (self.runs > 0).then(|| 2 * u64::from(self.recovered) >= u64::from(self.runs))
    }
}

/// One policy's panel; `cells[y * x_len + x]`.
#[derive(Debug, Clone, PartialEq)]
pub struct PhasePanel {
    pub policy: String,
    pub cells: Vec<PhaseCell>,
}

/// A phase map: a panel per policy over the same two axes.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseMap {
    /// The heading.
    pub title: String,
    /// The line under the heading (what was run, how many replications).
    pub subtitle: String,
    pub x: MapAxis,
    pub y: MapAxis,
    pub panels: Vec<PhasePanel>,
}

/// A side between two adjacent cells of a panel, both with runs, one recovering at least half
/// the time and the other not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Edge {
    /// Between cell (x, y) and (x + 1, y): a vertical segment.
    Right { x: usize, y: usize },
    /// Between cell (x, y) and (x, y + 1): a horizontal segment.
    Up { x: usize, y: usize },
}

/// The boundary of a panel of `x_len` by `y_len` cells (`cells[y * x_len + x]`): every side
/// between a cell that recovers ([`PhaseCell::recovers`]) and a neighbour that does not, row by
/// row from the bottom, each cell's right side before its upper one. A cell without runs is on
/// neither side, so it makes no boundary; the panel's border is none either.
pub fn boundary_edges(x_len: usize, y_len: usize, cells: &[PhaseCell]) -> Vec<Edge> {
    let side = |x: usize, y: usize| cells.get(y * x_len + x).and_then(PhaseCell::recovers);
    let differ = |a: Option<bool>, b: Option<bool>| matches!((a, b), (Some(a), Some(b)) if a != b);
    let mut edges = Vec::new();
    for y in 0..y_len {
        for x in 0..x_len {
            if x + 1 < x_len && differ(side(x, y), side(x + 1, y)) {
                edges.push(Edge::Right { x, y });
            }
            if y + 1 < y_len && differ(side(x, y), side(x, y + 1)) {
                edges.push(Edge::Up { x, y });
            }
        }
    }
    edges
}

/// The sheet's width, in pixels, whatever the number of panels.
const WIDTH: u32 = 1600;
/// The heading and the subtitle above the panels.
const HEADER: u32 = 96;
/// The strip on the right that holds the colour bar and the key.
const LEGEND_WIDTH: u32 = 250;
/// The strip on the left of each row that holds the y key, turned upright.
const Y_KEY_WIDTH: u32 = 34;
/// Above each panel's cells: its title.
const PANEL_TITLE: u32 = 36;
/// Below each panel's cells: the tick labels and the x key.
const PANEL_BOTTOM: u32 = 64;
/// Right of each panel's cells, before the next panel.
const PANEL_GAP: u32 = 20;
/// The least height of a sheet, so that the colour bar and the key fit beside one row.
const MIN_HEIGHT: u32 = 600;
/// Font sizes, in pixels.
const TICK_SIZE: f64 = 15.0;
const KEY_SIZE: f64 = 17.0;

/// The grey of a cell without runs.
const NO_RUNS: RGBColor = RGBColor(200, 200, 200);
/// The colour of the boundary.
const BOUNDARY: RGBColor = RGBColor(20, 20, 20);
const MUTED: RGBColor = RGBColor(90, 90, 90);

/// Rows and columns of `panels` panels: one row up to three, then rows of at most three.
fn grid(panels: usize) -> (usize, usize) {
    let rows = panels.max(1).div_ceil(3);
    (rows, panels.max(1).div_ceil(rows))
}

/// The height of the cells of one row of panels, for `columns` panels side by side: about
/// as high as a panel is wide, so that a square grid has square cells.
fn cells_height(columns: usize) -> u32 {
    let panel = (WIDTH - LEGEND_WIDTH - Y_KEY_WIDTH) / columns as u32;
    panel.saturating_sub(90).clamp(260, 620)
}

/// The size of a phase map of `panels` panels, in pixels: 1600 wide, as high as its rows need.
pub fn phase_map_size(panels: usize) -> (u32, u32) {
    let (rows, columns) = grid(panels);
    let row = PANEL_TITLE + cells_height(columns) + PANEL_BOTTOM;
    (WIDTH, (HEADER + rows as u32 * row + 16).max(MIN_HEIGHT))
}

/// Draws `map` in `format` and returns the file's bytes; an error if a panel's cells do not
/// fill its axes, or if an axis has no values.
pub fn render_phase_map(map: &PhaseMap, format: Format) -> Result<Vec<u8>, ChartError> {
    let cells = map.x.labels.len() * map.y.labels.len();
    if cells == 0 {
        return Err(ChartError(format!(
            "a phase map needs values on both axes; {} has {} and {} has {}",
            map.x.key,
            map.x.labels.len(),
            map.y.key,
            map.y.labels.len()
        )));
    }
    if let Some(panel) = map.panels.iter().find(|panel| panel.cells.len() != cells) {
        return Err(ChartError(format!(
            "the phase map of {:?} has {} cells, not {} ({} values of {} by {} of {})",
            panel.policy,
            panel.cells.len(),
            cells,
            map.x.labels.len(),
            map.x.key,
            map.y.labels.len(),
            map.y.key
        )));
    }
    render_picture(map, phase_map_size(map.panels.len()), format, "phase-map")
}

impl Picture for PhaseMap {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError> {
        draw(root, self).map_err(chart_error)
    }
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The colour of a share `p` of runs that recovered: ColorBrewer's RdBu (colour-blind safe),
/// red at 0, near white at one half, blue at 1.
fn share_colour(p: f64) -> RGBColor {
    ramp(
        &[
            (178, 24, 43),
            (214, 96, 77),
            (244, 165, 130),
            (253, 219, 199),
            (247, 247, 247),
            (209, 229, 240),
            (146, 197, 222),
            (67, 147, 195),
            (33, 102, 172),
        ],
        p,
    )
}

/// Black or white, whichever reads on `background` (by its relative luminance).
fn ink_on(background: RGBColor) -> RGBColor {
    let RGBColor(r, g, b) = background;
    let luminance = 0.2126 * f64::from(r) + 0.7152 * f64::from(g) + 0.0722 * f64::from(b);
    if luminance > 140.0 { BLACK } else { WHITE }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, map: &PhaseMap) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    root.draw(&Text::new(
        map.title.clone(),
        (16, 12),
        (FONT, 30.0).into_font().style(FontStyle::Bold),
    ))?;
    root.draw(&Text::new(
        map.subtitle.clone(),
        (16, 56),
        (FONT, 18.0).into_font().color(&MUTED),
    ))?;
    let (width, _) = root.dim_in_pixel();
    let (_, body) = root.split_vertically(HEADER);
    let (panels, legend) = body.split_horizontally(width - LEGEND_WIDTH);
    let (rows, columns) = grid(map.panels.len());
    let row_height = PANEL_TITLE + cells_height(columns) + PANEL_BOTTOM;
    let geometry = Geometry::of(&panels, map, columns);
    for (row, chunk) in map.panels.chunks(columns).enumerate().take(rows) {
        let top = row as u32 * row_height;
        let (_, below) = panels.split_vertically(top);
        let (area, _) = below.split_vertically(row_height);
        draw_y_key(&area, &map.y.key)?;
        let (_, area) = area.split_horizontally(Y_KEY_WIDTH);
        let slots = area.split_evenly((1, columns));
        for (slot, panel) in slots.iter().zip(chunk) {
            draw_panel(slot, map, panel, &geometry)?;
        }
    }
    let cells = || map.panels.iter().flat_map(|panel| &panel.cells);
    let empty = cells().any(|cell| cell.runs == 0);
    let unhealthy = cells().any(|cell| cell.unhealthy_before > 0);
    draw_legend(&legend, &geometry, empty, unhealthy)
}

/// `font`, placed by the point of its text at (`h`, `v`).
fn anchored(font: FontDesc<'_>, h: HPos, v: VPos) -> TextStyle<'_> {
    TextStyle::from(font).pos(Pos::new(h, v))
}

/// The y key, turned upright, centred on the cells of a row.
fn draw_y_key<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, key: &str) -> DrawResult<DB> {
    let middle = (PANEL_TITLE + cells_height_of(area) / 2) as i32;
    area.draw(&Text::new(
        key.to_string(),
        (8, middle),
        anchored(
            (FONT, KEY_SIZE)
                .into_font()
                .transform(FontTransform::Rotate270),
            HPos::Center,
            VPos::Top,
        ),
    ))
}

/// The cells' height in a row's `area`.
fn cells_height_of<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>) -> u32 {
    area.dim_in_pixel().1 - PANEL_TITLE - PANEL_BOTTOM
}

/// What every panel shares: where the cells go in a panel's slot, which ticks are labelled,
/// and how large the text in a cell is (none where cells are too small for it).
struct Geometry {
    /// Left of the cells in a slot: room for the y tick labels.
    left: u32,
    x_len: usize,
    y_len: usize,
    /// The width and height of a cell, in pixels (fractional: cells tile the plot exactly).
    cell: (f64, f64),
    x_ticks: Vec<usize>,
    y_ticks: Vec<usize>,
    /// The font size of a cell's share and of its runs; `None` where they do not fit.
    share_size: Option<f64>,
    runs_size: Option<f64>,
}

impl Geometry {
    fn of<DB: DrawingBackend>(
        panels: &DrawingArea<DB, Shift>,
        map: &PhaseMap,
        columns: usize,
    ) -> Geometry {
        let width_of = |text: &str, size: f64| {
            panels
                .estimate_text_size(text, &TextStyle::from((FONT, size).into_font()))
                .map_or(text.len() as u32 * size as u32, |(width, _)| width)
        };
        let widest = |labels: &[String]| {
            labels
                .iter()
                .map(|label| width_of(label, TICK_SIZE))
                .max()
                .unwrap_or(0)
        };
        let slot = (panels.dim_in_pixel().0 - Y_KEY_WIDTH) / columns as u32;
        let left = widest(&map.y.labels) + 12;
        let (x_len, y_len) = (map.x.labels.len(), map.y.labels.len());
        // No wider than half as wide again as high: a single panel is not a long strip.
        let height = cells_height(columns);
        let width = (slot - left - PANEL_GAP).min(height * 3 / 2);
        let cell = (
            f64::from(width) / x_len as f64,
            f64::from(height) / y_len as f64,
        );
        let x_ticks = tick_indices(x_len, f64::from(widest(&map.x.labels) + 14) / cell.0);
        let y_ticks = tick_indices(y_len, (TICK_SIZE + 6.0) / cell.1);
        // The share as wide as it prints ("100%"), on one line or over the runs ("n=123", and
        // "n=123, 45 u.b." where some were unhealthy before the incident).
        let cells = || map.panels.iter().flat_map(|panel| &panel.cells);
        let most_runs = cells().map(|c| c.runs).max().unwrap_or(0);
        let most_unhealthy = cells().map(|c| c.unhealthy_before).max().unwrap_or(0);
        let runs_text = runs_label(most_runs, most_unhealthy);
        let fits = |share: f64, runs: Option<f64>| {
            let lines = share + runs.unwrap_or(0.0) * 1.1;
            let wide =
                width_of("100%", share).max(runs.map_or(0, |size| width_of(&runs_text, size)));
            f64::from(wide) + 6.0 <= cell.0 && lines + 6.0 <= cell.1
        };
        let sizes = [16.0, 15.0, 14.0, 13.0, 12.0, 11.0];
        let share_size = sizes.into_iter().find(|&size| fits(size, None));
        let runs_size = share_size.and_then(|share| {
            let runs = (share * 0.75).round().max(10.0);
            fits(share, Some(runs)).then_some(runs)
        });
        Geometry {
            left,
            x_len,
            y_len,
            cell,
            x_ticks,
            y_ticks,
            share_size,
            runs_size,
        }
    }

    /// Cell (x, y)'s corners in pixels of its slot: left, top, right, bottom (row 0 at the
    /// bottom). Neighbours share their sides exactly.
    fn cell_pixels(&self, x: usize, y: usize) -> (i32, i32, i32, i32) {
        let column = |x: usize| self.left as i32 + (x as f64 * self.cell.0).round() as i32;
        let row =
            |y: usize| PANEL_TITLE as i32 + ((self.y_len - y) as f64 * self.cell.1).round() as i32;
        (column(x), row(y + 1), column(x + 1), row(y))
    }
}

/// The ticks to label among `count` values when a label needs `span` cells: every k-th from
/// the first, k the least whole number at least `span`, and the last, which replaces the
/// labelled one before it if they are closer than k.
fn tick_indices(count: usize, span: f64) -> Vec<usize> {
    let every = (span.ceil() as usize).max(1);
    let mut ticks: Vec<usize> = (0..count).step_by(every).collect();
    if let Some(last) = count.checked_sub(1).filter(|last| !ticks.contains(last)) {
        if ticks.len() > 1 && last - ticks[ticks.len() - 1] < every {
            ticks.pop();
        }
        ticks.push(last);
    }
    ticks
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    map: &PhaseMap,
    panel: &PhasePanel,
    geometry: &Geometry,
) -> DrawResult<DB> {
    let (left, top, right, bottom) = {
        let (l, _, _, b) = geometry.cell_pixels(0, 0);
        let (_, t, r, _) = geometry.cell_pixels(geometry.x_len - 1, geometry.y_len - 1);
        (l, t, r, b)
    };
    area.draw(&Text::new(
        panel.policy.clone(),
        ((left + right) / 2, 6),
        anchored(
            (FONT, 20.0).into_font().style(FontStyle::Bold),
            HPos::Center,
            VPos::Top,
        ),
    ))?;
    for y in 0..geometry.y_len {
        for x in 0..geometry.x_len {
            draw_cell(
                area,
                &panel.cells[y * geometry.x_len + x],
                geometry.cell_pixels(x, y),
                geometry,
            )?;
        }
    }
    area.draw(&Rectangle::new(
        [(left, top), (right, bottom)],
        RGBColor(150, 150, 150).stroke_width(1),
    ))?;
    let half = 2;
    for edge in boundary_edges(geometry.x_len, geometry.y_len, &panel.cells) {
        let (from, to) = match edge {
            Edge::Right { x, y } => {
                let (_, t, r, b) = geometry.cell_pixels(x, y);
                ((r, t), (r, b))
            }
            Edge::Up { x, y } => {
                let (l, t, r, _) = geometry.cell_pixels(x, y);
                ((l, t), (r, t))
            }
        };
        // A filled bar past both ends by its half width, so that segments meet in clean corners.
        area.draw(&Rectangle::new(
            [(from.0 - half, from.1 - half), (to.0 + half, to.1 + half)],
            BOUNDARY.filled(),
        ))?;
    }
    let tick = TextStyle::from((FONT, TICK_SIZE).into_font());
    for &x in &geometry.x_ticks {
        let (l, _, r, _) = geometry.cell_pixels(x, 0);
        area.draw(&PathElement::new(
            vec![((l + r) / 2, bottom), ((l + r) / 2, bottom + 4)],
            BLACK.stroke_width(1),
        ))?;
        area.draw(&Text::new(
            map.x.labels[x].clone(),
            ((l + r) / 2, bottom + 7),
            tick.pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    for &y in &geometry.y_ticks {
        let (_, t, _, b) = geometry.cell_pixels(0, y);
        area.draw(&PathElement::new(
            vec![(left - 4, (t + b) / 2), (left, (t + b) / 2)],
            BLACK.stroke_width(1),
        ))?;
        area.draw(&Text::new(
            map.y.labels[y].clone(),
            (left - 7, (t + b) / 2),
            tick.pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    area.draw(&Text::new(
        map.x.key.clone(),
        ((left + right) / 2, bottom + 32),
        anchored((FONT, KEY_SIZE).into_font(), HPos::Center, VPos::Top),
    ))
}

/// A cell's runs as printed under its share: `n=12`, and `n=12, 3 u.b.` when some of them were
/// unhealthy before the incident.
fn runs_label(runs: u32, unhealthy_before: u32) -> String {
    if unhealthy_before > 0 {
        format!("n={runs}, {unhealthy_before} u.b.")
    } else {
        format!("n={runs}")
    }
}

/// The hatch of a cell that holds runs unhealthy before the incident: lines rising to the
/// right, 8 pixels apart, each from the cell's left or bottom side to its top or right side.
fn hatch((left, top, right, bottom): (i32, i32, i32, i32)) -> Vec<[(i32, i32); 2]> {
    let (width, height) = (right - left, bottom - top);
    (1..)
        .map(|k| 8 * k)
        .take_while(|&d| d < width + height)
        .map(|d| {
            let from = if d <= height {
                (left, top + d)
            } else {
                (left + d - height, bottom)
            };
            let to = if d <= width {
                (left + d, top)
            } else {
                (right, top + d - width)
            };
            [from, to]
        })
        .collect()
}

/// A cell: its colour, its hatch if some runs were unhealthy before the incident, and its share
/// and runs where they fit.
fn draw_cell<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    cell: &PhaseCell,
    (left, top, right, bottom): (i32, i32, i32, i32),
    geometry: &Geometry,
) -> DrawResult<DB> {
    let (colour, share) = match cell.probability() {
        Some(p) => (share_colour(p), format!("{:.0}%", 100.0 * p)),
        None => (NO_RUNS, "n/a".to_string()),
    };
    area.draw(&Rectangle::new(
        [(left, top), (right, bottom)],
        colour.filled(),
    ))?;
    let ink = ink_on(colour);
    if cell.unhealthy_before > 0 {
        for line in hatch((left, top, right, bottom)) {
            area.draw(&PathElement::new(
                line.to_vec(),
                ink.mix(0.5).stroke_width(1),
            ))?;
        }
    }
    let Some(size) = geometry.share_size else {
        return Ok(());
    };
    let centre = ((left + right) / 2, (top + bottom) / 2);
    let runs = geometry.runs_size.filter(|_| cell.runs > 0);
    let share_at = match runs {
        Some(runs) => (centre.0, centre.1 - (runs * 0.55) as i32),
        None => centre,
    };
    area.draw(&Text::new(
        share,
        share_at,
        (FONT, size)
            .into_font()
            .color(&ink)
            .pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    if let Some(runs) = runs {
        area.draw(&Text::new(
            runs_label(cell.runs, cell.unhealthy_before),
            (centre.0, share_at.1 + (size * 0.55 + 1.0) as i32),
            (FONT, runs)
                .into_font()
                .color(&ink)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    Ok(())
}

/// The colour bar, recovering at the top, and the key to the boundary, the grey and the text.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    geometry: &Geometry,
    empty: bool,
    unhealthy: bool,
) -> DrawResult<DB> {
    let font = TextStyle::from((FONT, 16.0).into_font());
    let (left, top, bottom) = (20, 70, 330);
    area.draw(&Text::new(
        "probability of recovering",
        (left, top - 50),
        (FONT, 16.0).into_font().style(FontStyle::Bold),
    ))?;
    let steps = bottom - top;
    for step in 0..steps {
        let p = 1.0 - f64::from(step) / f64::from(steps - 1);
        area.draw(&Rectangle::new(
            [(left, top + step), (left + 30, top + step + 1)],
            share_colour(p).filled(),
        ))?;
    }
    area.draw(&Rectangle::new(
        [(left, top), (left + 30, bottom)],
        RGBColor(150, 150, 150).stroke_width(1),
    ))?;
    for (p, label) in [(1.0, "1 recovers"), (0.5, "0.5"), (0.0, "0 stays down")] {
        let y = top + ((1.0 - p) * f64::from(steps)) as i32;
        area.draw(&PathElement::new(
            vec![(left + 30, y), (left + 36, y)],
            BLACK.stroke_width(1),
        ))?;
        area.draw(&Text::new(
            label,
            (left + 40, y),
            font.pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    let mut y = bottom + 40;
    // The boundary's swatch: a cell of each side, and the line between them.
    let size = 24;
    area.draw(&Rectangle::new(
        [(left, y), (left + size, y + size)],
        share_colour(1.0).filled(),
    ))?;
    area.draw(&Rectangle::new(
        [(left + size, y), (left + 2 * size, y + size)],
        share_colour(0.0).filled(),
    ))?;
    area.draw(&Rectangle::new(
        [(left + size - 2, y - 2), (left + size + 2, y + size + 2)],
        BOUNDARY.filled(),
    ))?;
    for (line, text) in [
        "boundary: at least",
        "half the runs recover",
        "on its blue side",
    ]
    .into_iter()
    .enumerate()
    {
        area.draw(&Text::new(
            text,
            (left + 2 * size + 10, y - 6 + 19 * line as i32),
            font.clone(),
        ))?;
    }
    y += 70;
    if empty {
        area.draw(&Rectangle::new(
            [(left, y), (left + 2 * size, y + size)],
            NO_RUNS.filled(),
        ))?;
        area.draw(&Text::new(
            "n/a: no runs",
            (left + 2 * size + 10, y + 5),
            font.clone(),
        ))?;
        y += 44;
    }
    if unhealthy {
        let swatch = (left, y, left + 2 * size, y + size);
        area.draw(&Rectangle::new(
            [(swatch.0, swatch.1), (swatch.2, swatch.3)],
            share_colour(0.0).filled(),
        ))?;
        for line in hatch(swatch) {
            area.draw(&PathElement::new(
                line.to_vec(),
                ink_on(share_colour(0.0)).mix(0.5).stroke_width(1),
            ))?;
        }
        for (line, text) in [
            "hatched, u.b.: runs",
            "unhealthy before the",
            "incident, not a storm",
        ]
        .into_iter()
        .enumerate()
        {
            area.draw(&Text::new(
                text,
                (left + 2 * size + 10, y - 6 + 19 * line as i32),
                font.clone(),
            ))?;
        }
        y += 70;
    }
    let cell_text = match (geometry.share_size, geometry.runs_size) {
        (Some(_), Some(_)) => Some("cells: share recovered, n runs"),
        (Some(_), None) => Some("cells: share recovered"),
        _ => None,
    };
    if let Some(text) = cell_text {
        area.draw(&Text::new(text, (left, y), font.color(&MUTED)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(runs: u32, recovered: u32) -> PhaseCell {
        PhaseCell {
            runs,
            recovered,
            unhealthy_before: 0,
            median_recovery_s: None,
        }
    }

    /// One half is on the recovering side, exactly: 1 of 2 recovers, 4 of 9 does not; a
    /// cell without runs is on neither.
    #[test]
    fn half_the_runs_recover() {
        assert_eq!(cell(2, 1).recovers(), Some(true));
        assert_eq!(cell(9, 4).recovers(), Some(false));
        assert_eq!(cell(9, 5).recovers(), Some(true));
        assert_eq!(cell(0, 0).recovers(), None);
        assert_eq!(cell(4, 3).probability(), Some(0.75));
        assert_eq!(cell(0, 0).probability(), None);
    }

    /// A cell 16 wide and 8 high is hatched at offsets 8 and 16 (8 pixels apart, below
    /// 16 + 8): the first from its bottom-left corner to the top 8 pixels in, the second from
    /// the bottom 8 pixels in to its top-right corner.
    #[test]
    fn a_hatch_crosses_the_cell_from_side_to_side() {
        assert_eq!(
            hatch((100, 50, 116, 58)),
            [[(100, 58), (108, 50)], [(108, 58), (116, 50)]]
        );
        assert_eq!(runs_label(12, 0), "n=12");
        assert_eq!(runs_label(12, 3), "n=12, 3 u.b.");
    }

    /// A staircase on 3 x 3 (R recovers, D stays down, row 0 at the bottom):
    ///
    /// ```text
    /// y=2  D D D
    /// y=1  R D D
    /// y=0  R R D
    /// ```
    ///
    /// Its boundary: between (1,0) and (2,0), above (1,0), between (0,1) and (1,1), above
    /// (0,1); none on the border. Emptying (1,1) takes away the two sides it had with a cell
    /// that recovers; a cell without runs between two sides makes no boundary either.
    #[test]
    fn the_boundary_follows_a_staircase() {
        let (r, d, empty) = (cell(10, 9), cell(10, 2), cell(0, 0));
        let staircase = [r, r, d, r, d, d, d, d, d];
        assert_eq!(
            boundary_edges(3, 3, &staircase),
            [
                Edge::Right { x: 1, y: 0 },
                Edge::Up { x: 1, y: 0 },
                Edge::Right { x: 0, y: 1 },
                Edge::Up { x: 0, y: 1 },
            ]
        );
        let holed = [r, r, d, r, empty, d, d, d, d];
        assert_eq!(
            boundary_edges(3, 3, &holed),
            [Edge::Right { x: 1, y: 0 }, Edge::Up { x: 0, y: 1 }]
        );
        assert_eq!(boundary_edges(3, 1, &[r, empty, d]), []);
        assert_eq!(boundary_edges(1, 1, &[d]), []);
    }

    /// Twenty values with labels two cells wide: every other one from the first, and the last
    /// in place of the 18th, which would touch it.
    #[test]
    fn ticks_thin_out_and_keep_both_ends() {
        assert_eq!(tick_indices(20, 1.6), [0, 2, 4, 6, 8, 10, 12, 14, 16, 19]);
        assert_eq!(tick_indices(5, 0.4), [0, 1, 2, 3, 4]);
        assert_eq!(tick_indices(7, 3.0), [0, 3, 6]);
        assert_eq!(tick_indices(1, 5.0), [0]);
        assert_eq!(tick_indices(0, 1.0), Vec::<usize>::new());
    }
}
