//! Charts that compare policies: load, latency, duplicate writes, goodput, and an overview.
//!
//! The charts read a finished [`ScenarioRun`] (its measurements and its scenario) and nothing
//! else; they never reach into the engine. Each is drawn once per format: PNG through plotters'
//! bitmap backend, encoded here with the `png` crate, and SVG through its SVG backend. Text is
//! drawn with DejaVu Sans, embedded in the binary and registered with plotters' `ab_glyph`
//! renderer, so a machine without any font installed draws the same pixels; in SVG the text
//! is drawn as the outlines of the same font ([`svg_text`]), so every viewer shows the same
//! picture. Rendering and encoding are deterministic: the same run gives the same bytes.
//!
//! Conventions, the same in every chart: one colour per policy, in scenario order, from the
//! Okabe-Ito palette (safe for the common forms of colour blindness); the upstream's capacity in
//! grey; the incident window (the scenario's, see [`crate::scenario::incident`]) shaded;
//! a service down after crashing under overload as a band in the policy's colour along the
//! bottom of the plot, one row per policy; units on every axis; legends in a strip of their
//! own above the plot, so they never cover data.

pub mod ecdf;
pub mod phase_map;
mod svg_text;

pub(crate) use svg_text::{outline_text, text_width};

use std::fmt;
use std::str::FromStr;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::base::spread::Spread;
use crate::base::time::{MICROS_PER_MS, MICROS_PER_SECOND, Micros};
use crate::engine::counters::ServiceMeasurements;
use crate::engine::downtime::merge_close;
use crate::model::ServiceModel;
use crate::run::ScenarioRun;
use crate::vocabulary::counts::ServiceBucket;
use crate::vocabulary::outcome::FailureReason;

/// Size of a single chart, in pixels.
pub const CHART_SIZE: (u32, u32) = (1280, 720);
/// Size of the overview sheet, in pixels.
pub const OVERVIEW_SIZE: (u32, u32) = (1920, 1080);

/// Okabe-Ito colours, without black (kept for text) and yellow (too pale on white) until the
/// others are used.
pub(crate) const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(230, 159, 0),   // orange
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(240, 228, 66),  // yellow
];
pub(crate) const CAPACITY: RGBColor = RGBColor(120, 120, 120);
/// Limits the scenario sets (a rate limit, a deadline), drawn where the data reaches them.
const LIMIT: RGBColor = RGBColor(180, 30, 30);
const INCIDENT: RGBColor = RGBColor(232, 232, 232);
/// The hatching of the drain.
const DRAIN: RGBColor = RGBColor(190, 190, 190);
/// The lines of a legend's key, which stand for a style in any policy's colour.
const KEY: RGBColor = RGBColor(60, 60, 60);
pub(crate) const FONT: &str = "sans-serif";

/// The colour of the policy at `index`.
pub fn policy_colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// Viridis (ordered, colour-blind safe, readable in greyscale) from purple at 0 to yellow at 1,
/// sampled at nine stops; NaN is purple.
pub(crate) fn viridis(t: f64) -> RGBColor {
    ramp(
        &[
            (68, 1, 84),
            (71, 44, 122),
            (59, 81, 139),
            (44, 113, 142),
            (33, 144, 141),
            (39, 173, 129),
            (92, 200, 99),
            (170, 220, 50),
            (253, 231, 37),
        ],
        t,
    )
}

/// The colour at `t` (0 to 1, clamped; NaN as 0) of a scale through equally spaced `stops`
/// (at least two), interpolated linearly.
pub(crate) fn ramp(stops: &[(u8, u8, u8)], t: f64) -> RGBColor {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) } * (stops.len() - 1) as f64;
    let low = (t.floor() as usize).min(stops.len() - 2);
    let fraction = t - low as f64;
    let mix =
        |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * fraction).round() as u8;
    let (a, b) = (stops[low], stops[low + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// An image format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    /// PNG, for slides and documents.
    Png,
    /// SVG, for the web and for scaling.
    Svg,
}

impl Format {
    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Svg => "svg",
        }
    }
}

/// A chart's files, `NAME.EXT` in each format asked for, and its SVG, which HTML pages embed.
pub struct DrawnChart {
    /// The files, by name.
    pub files: Vec<(String, Vec<u8>)>,
    /// The SVG, drawn whether or not a file of it is asked for.
    pub svg: Vec<u8>,
}

/// A chart drawn as SVG once and as the files of `formats`, `NAME.EXT`, which `render` draws
/// (the SVG file is the same bytes as the SVG embedded).
pub fn drawn_in_formats(
    name: &str,
    formats: &[Format],
    render: impl Fn(Format) -> Result<Vec<u8>, ChartError>,
) -> Result<DrawnChart, ChartError> {
    let svg = render(Format::Svg)?;
    let mut files = Vec::new();
    for &format in formats {
        let bytes = match format {
            Format::Svg => svg.clone(),
            format => render(format)?,
        };
        files.push((format!("{name}.{}", format.extension()), bytes));
    }
    Ok(DrawnChart { files, svg })
}

impl FromStr for Format {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "png" => Ok(Format::Png),
            "svg" => Ok(Format::Svg),
            other => Err(format!("unknown chart format {other:?}; valid: png, svg")),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension())
    }
}

/// The charts every run draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// Attempts per second reaching the upstream, with its capacity: the second wave.
    Load,
    /// p50 and p99 latency of successful operations, log scale.
    Latency,
    /// Cumulative duplicate writes and unknown results.
    Duplicates,
    /// Operations succeeded per second, and failures per second by reason.
    Goodput,
    /// The four above on one sheet, but those with nothing to show.
    Overview,
}

impl Chart {
    /// Every chart, in the order they are written.
    pub const ALL: [Chart; 5] = [
        Chart::Load,
        Chart::Latency,
        Chart::Duplicates,
        Chart::Goodput,
        Chart::Overview,
    ];

    /// The file name without extension.
    pub fn name(self) -> &'static str {
        match self {
            Chart::Load => "load",
            Chart::Latency => "latency",
            Chart::Duplicates => "duplicates",
            Chart::Goodput => "goodput",
            Chart::Overview => "overview",
        }
    }

    fn size(self) -> (u32, u32) {
        if self == Chart::Overview {
            OVERVIEW_SIZE
        } else {
            CHART_SIZE
        }
    }
}

/// A chart that could not be drawn or encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartError(String);

impl fmt::Display for ChartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot draw the chart: {}", self.0)
    }
}

impl std::error::Error for ChartError {}

pub(crate) fn chart_error(error: impl fmt::Debug) -> ChartError {
    ChartError(format!("{error:?}"))
}

/// A run's charts: what they are drawn from, read from the run once (per-bucket percentiles,
/// capacity lines: a few tens of millions of instructions for a minute of a bundled scenario),
/// then drawn as any chart in any format.
pub struct Charts {
    data: ChartData,
}

impl Charts {
    /// The charts of `run`.
    pub fn of(run: &ScenarioRun) -> Charts {
        Charts {
            data: ChartData::new(run),
        }
    }

    /// Draws `chart` in `format` and returns the file's bytes.
    pub fn render(&self, chart: Chart, format: Format) -> Result<Vec<u8>, ChartError> {
        render_picture(
            &SingleChart {
                chart,
                data: &self.data,
            },
            self.data.size(chart),
            format,
            chart.name(),
        )
    }

    /// Why `chart` has nothing to show (the sentence its picture holds instead of axes), or
    /// `None` if it has something: a page can say so in a line rather than show the picture.
    pub fn nothing_to_show(&self, chart: Chart) -> Option<String> {
        self.data.nothing_to_show(chart)
    }
}

/// Draws `chart` of `run` in `format` and returns the file's bytes: one chart of
/// [`Charts::of`], for a caller that wants only one.
pub fn render(run: &ScenarioRun, chart: Chart, format: Format) -> Result<Vec<u8>, ChartError> {
    Charts::of(run).render(chart, format)
}

/// Something that draws itself on any plotters backend: a chart, a heatmap, a Pareto front.
pub(crate) trait Picture {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError>;
}

struct SingleChart<'a> {
    chart: Chart,
    data: &'a ChartData,
}

impl Picture for SingleChart<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ChartError> {
        draw(root, self.chart, self.data)
    }
}

/// Draws `picture` at `size` in `format`: PNG encoded here, SVG as plotters writes it with its
/// text turned into glyph outlines ([`svg_text`]) whose ids start with `name`.
pub(crate) fn render_picture(
    picture: &impl Picture,
    (width, height): (u32, u32),
    format: Format,
    name: &str,
) -> Result<Vec<u8>, ChartError> {
    register_fonts();
    match format {
        Format::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
                picture.draw(&root)?;
                root.present().map_err(chart_error)?;
            }
            Ok(svg_text::outline_text(&svg, name).into_bytes())
        }
        Format::Png => {
            let mut pixels = vec![0u8; (width * height * 3) as usize];
            {
                let root =
                    BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
                picture.draw(&root)?;
                root.present().map_err(chart_error)?;
            }
            encode_png(&pixels, width, height)
        }
    }
}

fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, ChartError> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(chart_error)?;
    writer.write_image_data(rgb).map_err(chart_error)?;
    writer.finish().map_err(chart_error)?;
    Ok(bytes)
}

/// Registers the embedded DejaVu Sans with plotters, once per process.
fn register_fonts() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        let fonts = [
            (FontStyle::Normal, dejavu::sans::regular()),
            (FontStyle::Bold, dejavu::sans::bold()),
        ];
        for (style, bytes) in fonts {
            if plotters::style::register_font(FONT, style, bytes).is_err() {
                unreachable!("the embedded DejaVu Sans is a valid font");
            }
        }
    });
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: Chart,
    data: &ChartData,
) -> Result<(), ChartError> {
    root.fill(&WHITE).map_err(chart_error)?;
    let result = match chart {
        Chart::Overview => draw_overview(root, data),
        single => {
            let title = format!("{}: {}", data.scenario, chart_title(single, data));
            let body = titled(root, &title, 30)?;
            if single == Chart::Load && !data.fleets.is_empty() {
                draw_load_and_fleets(&body, data)
            } else {
                draw_body(&body, single, data, 1.0)
            }
        }
    };
    result.map_err(chart_error)
}

/// The load chart of a run with fleets: the load as without them, at the same size, then a
/// section per fleet below ([`draw_fleet`]).
fn draw_load_and_fleets<DB: DrawingBackend>(
    body: &DrawingArea<DB, Shift>,
    data: &ChartData,
) -> DrawResult<DB> {
    let height = body.dim_in_pixel().1;
    let (load, mut rest) = body.split_vertically(height - data.fleet_sections_height());
    draw_body(&load, Chart::Load, data, 1.0)?;
    for fleet in &data.fleets {
        let (section, below) = rest.split_vertically(fleet_section_height(data.policies.len()));
        draw_fleet(&section, fleet, data)?;
        rest = below;
    }
    Ok(())
}

fn chart_title(chart: Chart, data: &ChartData) -> &'static str {
    match chart {
        Chart::Load if !data.services.is_empty() => "requests reaching each service",
        Chart::Load => "attempts reaching the upstream",
        Chart::Latency => "latency of successful operations (p50 dashed, p99 solid)",
        Chart::Duplicates => "duplicate writes (solid) and unknown results (dashed), cumulative",
        Chart::Goodput => "goodput and failures",
        Chart::Overview => "overview",
    }
}

/// Draws a title at the top of `area` and returns the area below it.
fn titled<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    size: u32,
) -> Result<DrawingArea<DB, Shift>, ChartError> {
    let (_, height) = area.dim_in_pixel();
    let strip = size * 2;
    let (top, rest) = area.split_vertically(strip.min(height / 3));
    top.draw(&Text::new(
        title.to_string(),
        (12, (strip / 4) as i32),
        (FONT, size as f64).into_font().style(FontStyle::Bold),
    ))
    .map_err(chart_error)?;
    Ok(rest)
}

fn draw_overview<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &ChartData,
) -> DrawResult<DB> {
    let (_, rest) = root.split_vertically(96);
    root.draw(&Text::new(
        data.scenario.clone(),
        (16, 10),
        (FONT, 36.0).into_font().style(FontStyle::Bold),
    ))?;
    let lines = wrap(&data.description, |line| line.chars().count() <= 150);
    for (line, text) in lines.iter().take(2).enumerate() {
        root.draw(&Text::new(
            text.clone(),
            (16, 54 + 22 * line as i32),
            (FONT, 20.0).into_font(),
        ))?;
    }
    // The charts with something to show share the sheet: four in quarters, three as two
    // above one as wide as the sheet, two side by side; the others are named in a line.
    let mut shown = Vec::new();
    let mut left_out = Vec::new();
    for chart in [
        Chart::Load,
        Chart::Latency,
        Chart::Duplicates,
        Chart::Goodput,
    ] {
        match data.nothing_to_show(chart) {
            None => shown.push(chart),
            Some(why) => left_out.push(format!("{} ({why})", chart.name())),
        }
    }
    let rest = if left_out.is_empty() {
        rest
    } else {
        root.draw(&Text::new(
            format!("Not drawn, with nothing to show: {}.", left_out.join("; ")),
            (16, 100),
            (FONT, 18.0).into_font().color(&RGBColor(90, 90, 90)),
        ))?;
        rest.split_vertically(28).1
    };
    let areas = match shown.len() {
        4 => rest.split_evenly((2, 2)),
        3 => {
            let height = rest.dim_in_pixel().1;
            let (top, bottom) = rest.split_vertically(height / 2);
            let mut areas = top.split_evenly((1, 2));
            areas.push(bottom);
            areas
        }
        count => rest.split_evenly((1, count.max(1))),
    };
    for (area, chart) in areas.iter().zip(shown) {
        let area = area.margin(4, 4, 8, 8);
        area.draw(&Text::new(
            capitalised(chart_title(chart, data)),
            (4, 2),
            (FONT, 20.0).into_font().style(FontStyle::Bold),
        ))?;
        let (_, body) = area.split_vertically(28);
        draw_body(&body, chart, data, 0.8)?;
    }
    Ok(())
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Splits `text` into lines at spaces, each as long as `fits` allows (a word that does not
/// fit alone is a line of its own).
pub(crate) fn wrap(text: &str, fits: impl Fn(&str) -> bool) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if fits(&format!("{line} {word}")) => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

fn draw_body<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: Chart,
    data: &ChartData,
    scale: f64,
) -> DrawResult<DB> {
    match chart {
        Chart::Load if !data.services.is_empty() => {
            let panels = data.service_load_panels();
            let rows = area.split_evenly((panels.len(), 1));
            for (row, panel) in rows.iter().zip(&panels) {
                draw_panel(row, panel, scale)?;
            }
            Ok(())
        }
        Chart::Load => draw_panel(area, &data.load_panel(), scale),
        Chart::Latency => draw_panel(area, &data.latency_panel(), scale),
        Chart::Duplicates => draw_panel(area, &data.duplicates_panel(), scale),
        Chart::Goodput => {
            // Without failures the goodput takes the whole area, and says there were none.
            let failures = data.failures_panel();
            if failures.is_empty() {
                let goodput = Panel {
                    note: failures.empty_note,
                    ..data.goodput_panel()
                };
                return draw_panel(area, &goodput, scale);
            }
            let (_, height) = area.dim_in_pixel();
            let (top, bottom) = area.split_vertically(height / 2);
            draw_panel(&top, &data.goodput_panel(), scale)?;
            draw_panel(&bottom, &failures, scale)
        }
        Chart::Overview => unreachable!("the overview is drawn from the other charts"),
    }
}

/// A line's points in order of x, seconds; `None` breaks the line (no data there).
type Points = Vec<(f64, Option<f64>)>;

/// One line of a panel.
#[derive(Debug, Clone)]
struct Series {
    label: String,
    colour: RGBColor,
    dashed: bool,
    /// A reference line (a capacity), not data: see [`Panel::reference_headroom`].
    reference: bool,
    /// A legend entry for shading rather than a line (drawn as a block of that shading, with
    /// no points of its own).
    block: Option<Block>,
    /// Whether a line in a policy's colour is that policy's, marked with its marker (not a
    /// fleet's instance, whose colour is the instance's).
    marked: bool,
    /// Points in order of x; `None` breaks the line (no data in that bucket).
    points: Points,
}

/// A legend entry's block, for shading rather than a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// Filled in the entry's colour: a service down after a crash.
    Filled,
    /// Hatched in the entry's colour: the drain ([`Panel::drain`]).
    Hatched,
}

/// One plot: axes, shaded incident windows and lines.
#[derive(Debug, Clone)]
struct Panel {
    y_label: String,
    log_y: bool,
    /// Whether it draws its legend strip (panels stacked under one legend do not).
    legend: bool,
    /// Whether it labels its time axis (panels stacked above another do not).
    time_label: bool,
    /// If set, reference lines widen the y range to at most this multiple of the data's
    /// highest point, and are cut off above: a capacity far above the load leaves the load
    /// readable, and shows where it comes down to meet it.
    reference_headroom: Option<f64>,
    series: Vec<Series>,
    /// Time ranges to shade, seconds.
    incidents: Vec<(f64, f64)>,
    /// The drain, seconds: from the end of arrivals (`duration`) to the end of the plot, while
    /// the operations started before it finish. Only the slow ones are left, so latency climbs
    /// and load falls as in an incident: it is hatched and labelled as what it is.
    drain: Option<(f64, f64)>,
    /// When a service was down after crashing under overload, per policy.
    outages: Vec<Outage>,
    /// What to say instead of drawing empty axes, when no series has a value above zero.
    empty_note: Option<String>,
    /// A sentence under the legend: what the plot leaves out (lines at zero all run long).
    note: Option<String>,
    /// Legend entries that stand for a style rather than a line of their own (no points),
    /// after the lines' own entries: a key to what a colour or a dash means.
    key: Vec<Series>,
    /// Ranges shaded under the lines (linear panels only): a fleet's instances' spread.
    bands: Vec<Band>,
    /// The highest value of the panels drawn beside this one, so that all share a y axis.
    shared_max: Option<f64>,
}

/// A range shaded from a low line to a high one, in one colour.
#[derive(Debug, Clone)]
struct Band {
    colour: RGBColor,
    /// Points in order of x: x, low, high.
    points: Vec<(f64, f64, f64)>,
}

impl Panel {
    /// Whether no data series has a value above zero (reference lines do not count).
    fn is_empty(&self) -> bool {
        self.series
            .iter()
            .filter(|series| !series.reference && series.block.is_none())
            .flat_map(|series| series.points.iter())
            .all(|(_, value)| value.is_none_or(|value| value <= 0.0))
    }
}

/// A service down after a crash in one policy's run: a band in that policy's colour along the
/// bottom of the plot, one row per policy, so that every policy's crash loop can be told apart
/// (the incident shading belongs to the scenario, the same for every policy).
#[derive(Debug, Clone, Copy)]
struct Outage {
    policy: usize,
    start_s: f64,
    end_s: f64,
}

/// The height of one policy's row of outage bands, as a share of the plot's height.
const OUTAGE_ROW: f64 = 0.025;

/// The outage bands as drawn at a resolution of `pixel_s` seconds: per policy, those less than
/// a pixel apart are one block, so a crash loop draws at most a block per pixel of the plot's
/// width, however many crashes it had (the services' crashes merge in their policy's row).
fn merged_at(outages: &[Outage], pixel_s: f64) -> Vec<Outage> {
    let mut sorted = outages.to_vec();
    sorted.sort_by(|a, b| {
        (a.policy, a.start_s)
            .partial_cmp(&(b.policy, b.start_s))
            .expect("times are finite")
    });
    let mut merged = Vec::new();
    for row in sorted.chunk_by(|a, b| a.policy == b.policy) {
        let periods = row.iter().map(|outage| (outage.start_s, outage.end_s));
        merged.extend(
            merge_close(periods, |end, start| start - end < pixel_s)
                .into_iter()
                .map(|(start_s, end_s)| Outage {
                    policy: row[0].policy,
                    start_s,
                    end_s,
                }),
        );
    }
    merged
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    scale: f64,
) -> DrawResult<DB> {
    if let Some(note) = panel.empty_note.as_deref().filter(|_| panel.is_empty()) {
        // Empty axes would read as a broken chart: say why there is nothing to draw.
        let (width, height) = area.dim_in_pixel();
        let style = (FONT, font_size(22.0, scale))
            .into_font()
            .color(&RGBColor(90, 90, 90))
            .pos(Pos::new(HPos::Center, VPos::Center));
        area.draw(&Rectangle::new(
            [(0, 0), (width as i32 - 1, height as i32 - 1)],
            RGBColor(220, 220, 220).stroke_width(1),
        ))?;
        return area.draw(&Text::new(
            note.to_string(),
            (width as i32 / 2, height as i32 / 2),
            style,
        ));
    }
    let mut entries = panel.series.clone();
    entries.extend(panel.key.iter().cloned());
    if !panel.outages.is_empty() {
        entries.push(Series {
            label: "down after a crash (a row per policy)".into(),
            colour: CAPACITY,
            dashed: false,
            reference: false,
            block: Some(Block::Filled),
            marked: false,
            points: Vec::new(),
        });
    }
    if panel.drain.is_some() {
        entries.push(Series {
            label: "drain: operations started before the end finishing".into(),
            colour: DRAIN,
            dashed: false,
            reference: false,
            block: Some(Block::Hatched),
            marked: false,
            points: Vec::new(),
        });
    }
    let legend_rows = if panel.legend {
        legend_layout(area, &entries, scale)
    } else {
        Vec::new()
    };
    let row_height = (22.0 * scale) as u32;
    // The note, in lines as wide as the legend's rows.
    let note_font = (FONT, font_size(16.0, scale))
        .into_font()
        .color(&RGBColor(90, 90, 90));
    let room = area
        .dim_in_pixel()
        .0
        .saturating_sub((LEGEND_LEFT * scale) as u32);
    let note = panel.note.as_deref().map_or_else(Vec::new, |note| {
        wrap(note, |line| {
            area.estimate_text_size(line, &note_font)
                .is_ok_and(|(width, _)| width <= room)
        })
    });
    let rows = (legend_rows.len() + note.len()) as u32;
    let (legend, plot) = area.split_vertically(row_height * rows + 6);
    draw_legend(&legend, &entries, &legend_rows, scale)?;
    for (index, line) in note.into_iter().enumerate() {
        let row = (legend_rows.len() + index) as f64;
        legend.draw(&Text::new(
            line,
            (
                (LEGEND_LEFT * scale) as i32,
                (row * 22.0 * scale + 3.0 * scale) as i32,
            ),
            note_font.clone(),
        ))?;
    }
    let data = panel.plot_data();
    let x_end = data.x_end;
    let label_font = (FONT, font_size(18.0, scale)).into_font();
    let axis_font = (FONT, font_size(15.0, scale)).into_font();
    let mut builder = ChartBuilder::on(&plot);
    builder
        .margin_left((26.0 * scale) as u32)
        .margin_right((24.0 * scale) as u32)
        .margin_top((8.0 * scale) as u32)
        .x_label_area_size((48.0 * scale) as u32)
        .y_label_area_size((100.0 * scale) as u32);
    if panel.log_y {
        let (low, high) = data.log_range();
        let mut chart = builder.build_cartesian_2d(0.0..x_end, (low..high).log_scale())?;
        chart
            .configure_mesh()
            .x_desc(if panel.time_label { "time (s)" } else { "" })
            .y_desc(panel.y_label.as_str())
            .label_style(axis_font.clone())
            .axis_desc_style(label_font.clone())
            .light_line_style(RGBColor(240, 240, 240))
            .x_label_formatter(&|value| seconds_tick(*value))
            .y_label_formatter(&|value| compact(*value))
            .draw()?;
        for (start, end) in &data.incidents {
            chart.draw_series([Rectangle::new(
                [(*start, low), (*end, high)],
                INCIDENT.filled(),
            )])?;
        }
        if let Some(drain) = panel.drain {
            draw_drain(&chart, drain, low, scale)?;
        }
        let at = |share: f64| low * (high / low).powf(share);
        let pixel_s = x_end / f64::from(chart.plotting_area().dim_in_pixel().0.max(1));
        for outage in merged_at(&panel.outages, pixel_s) {
            let row = outage.policy as f64 * OUTAGE_ROW;
            chart.draw_series([Rectangle::new(
                [
                    (outage.start_s, at(row)),
                    (outage.end_s, at(row + OUTAGE_ROW)),
                ],
                policy_colour(outage.policy).filled(),
            )])?;
        }
        draw_series(&mut chart, &panel.series, scale)
    } else {
        let high = data.linear_top();
        let mut chart = builder.build_cartesian_2d(0.0..x_end, 0.0..high)?;
        let height = chart.plotting_area().dim_in_pixel().1;
        chart
            .configure_mesh()
            .x_desc(if panel.time_label { "time (s)" } else { "" })
            .y_desc(panel.y_label.as_str())
            .label_style(axis_font)
            .axis_desc_style(label_font)
            .light_line_style(RGBColor(240, 240, 240))
            .x_label_formatter(&|value| seconds_tick(*value))
            .y_labels(y_ticks(high, data.whole, height, scale))
            .y_label_formatter(&|value| compact(*value))
            .draw()?;
        for (start, end) in &data.incidents {
            chart.draw_series([Rectangle::new(
                [(*start, 0.0), (*end, high)],
                INCIDENT.filled(),
            )])?;
        }
        if let Some(drain) = panel.drain {
            draw_drain(&chart, drain, 0.0, scale)?;
        }
        for band in &panel.bands {
            let mut outline: Vec<(f64, f64)> =
                band.points.iter().map(|&(x, _, high)| (x, high)).collect();
            outline.extend(band.points.iter().rev().map(|&(x, low, _)| (x, low)));
            chart.draw_series([Polygon::new(outline, band.colour.filled())])?;
        }
        let pixel_s = x_end / f64::from(chart.plotting_area().dim_in_pixel().0.max(1));
        for outage in merged_at(&panel.outages, pixel_s) {
            let row = outage.policy as f64 * OUTAGE_ROW * high;
            chart.draw_series([Rectangle::new(
                [
                    (outage.start_s, row),
                    (outage.end_s, row + OUTAGE_ROW * high),
                ],
                policy_colour(outage.policy).filled(),
            )])?;
        }
        if panel.reference_headroom.is_some() {
            // Reference lines above the range are cut, not drawn along its top edge.
            let cut: Vec<Series> = panel
                .series
                .iter()
                .map(|line| Series {
                    points: line
                        .points
                        .iter()
                        .map(|&(x, y)| (x, y.filter(|&y| !line.reference || y <= high)))
                        .collect(),
                    ..line.clone()
                })
                .collect();
            return draw_series(&mut chart, &cut, scale);
        }
        draw_series(&mut chart, &panel.series, scale)
    }
}

/// A time axis's tick, in seconds: whole seconds without decimals (`20`, not `20.0`), others
/// with the few they need (`2.5`).
fn seconds_tick(seconds: f64) -> String {
    let text = format!("{seconds:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// How many ticks at most a linear y axis from 0 to `top`, `height` pixels high, asks plotters
/// for: plotters' default of 10, fewer where they would be closer than 30 pixels (at `scale`),
/// and, for values that are all whole (counts), no more than the whole numbers in the range:
/// plotters then steps by 1, 2, 5, ... and never puts a tick at 0.5 on a count.
fn y_ticks(top: f64, whole: bool, height: u32, scale: f64) -> usize {
    let fit = ((f64::from(height) / (30.0 * scale)) as usize).clamp(2, 10);
    if whole {
        (top.floor() as usize + 1).clamp(2, fit)
    } else {
        fit
    }
}

/// Hatches the drain, `start` to `end` seconds, over the whole height of `chart`'s plot, with a
/// line where it starts; `y` is any value of the y axis (only x is read).
fn draw_drain<DB, Y>(
    chart: &ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    (start, end): (f64, f64),
    y: f64,
    scale: f64,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64>,
{
    let area = chart.plotting_area();
    let (columns, rows) = area.get_pixel_range();
    let pixel = |seconds: f64| chart.backend_coord(&(seconds, y)).0 - columns.start;
    let plot = area.strip_coord_spec();
    let (left, right) = (pixel(start), pixel(end));
    let (top, bottom) = (0, rows.end - rows.start);
    hatch(&plot, (left, right), (top, bottom), scale, DRAIN)?;
    plot.draw(&PathElement::new(
        vec![(left, top), (left, bottom)],
        DRAIN.stroke_width(1),
    ))
}

/// Diagonal lines, rising to the right, `12 * scale` pixels apart, filling the box from
/// `left` to `right` and `top` to `bottom` (pixels of `area`) and no further.
fn hatch<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (left, right): (i32, i32),
    (top, bottom): (i32, i32),
    scale: f64,
    colour: RGBColor,
) -> DrawResult<DB> {
    let height = bottom - top;
    let step = ((12.0 * scale) as i32).max(4);
    // The line from (start, bottom) rises a pixel per pixel to the right: it is in the box
    // from `low` pixels up (where it crosses `left`, or the bottom) to `high` (where it
    // crosses `right`, or the top).
    let mut start = left - height;
    while start < right {
        let low = (left - start).max(0);
        let high = (right - start).min(height);
        if low < high {
            area.draw(&PathElement::new(
                vec![(start + low, bottom - low), (start + high, bottom - high)],
                colour.stroke_width(1),
            ))?;
        }
        start += step;
    }
    Ok(())
}

/// A font size scaled to whole pixels: fractional sizes space glyphs unevenly.
fn font_size(size: f64, scale: f64) -> f64 {
    (size * scale).round()
}

/// `12000` as `12k`, `2500000` as `2.5M`: axis labels that stay short.
fn compact(value: f64) -> String {
    let magnitude = value.abs();
    let (scaled, suffix) = if magnitude >= 1e6 {
        (value / 1e6, "M")
    } else if magnitude >= 1e4 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    let text = if scaled.fract() == 0.0 {
        format!("{scaled:.0}")
    } else if magnitude < 1.0 {
        format!("{scaled:.2}")
    } else {
        format!("{scaled:.1}")
    };
    format!("{text}{suffix}")
}

fn draw_series<DB, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    series: &[Series],
    scale: f64,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64>,
{
    let width = (2.0 * scale).max(1.0) as u32;
    for line in series {
        let style = line.colour.stroke_width(width);
        for segment in segments(&line.points) {
            if line.dashed {
                chart.draw_series(DashedLineSeries::new(segment, 8, 5, style))?;
            } else {
                chart.draw_series(LineSeries::new(segment, style))?;
            }
        }
        // Markers every few points, each policy its own shape and its own phase, so that
        // lines that coincide (two policies alike until an incident) can still be told apart.
        if let Some(policy) = line.policy() {
            let every = (line.points.len() / MARKERS_PER_LINE).max(1);
            let phase = policy * every / PALETTE.len();
            let points = line
                .points
                .iter()
                .skip(phase)
                .step_by(every)
                .filter_map(|&(x, y)| Some((x, y?)));
            let size = (4.0 * scale).max(2.0) as i32;
            for point in points {
                chart.plotting_area().draw(&marker::<DB, _>(
                    policy,
                    point,
                    size,
                    line.colour,
                    width,
                ))?;
            }
        }
    }
    Ok(())
}

/// Markers on each policy's line, about this many.
const MARKERS_PER_LINE: usize = 12;

/// The marker of policy `policy` at `at`: a disc, a triangle, a cross, a ring, by policy.
fn marker<DB: DrawingBackend, C: Copy + 'static>(
    policy: usize,
    at: C,
    size: i32,
    colour: RGBColor,
    width: u32,
) -> DynElement<'static, DB, C> {
    match policy % 4 {
        0 => Circle::new(at, size, colour.filled()).into_dyn(),
        1 => TriangleMarker::new(at, size + 1, colour.filled()).into_dyn(),
        2 => Cross::new(at, size, colour.stroke_width(width)).into_dyn(),
        _ => Circle::new(at, size, colour.stroke_width(width)).into_dyn(),
    }
}

impl Series {
    /// The policy whose data this line is (its colour is the policy's), if any.
    fn policy(&self) -> Option<usize> {
        if self.reference || self.block.is_some() || !self.marked {
            return None;
        }
        PALETTE.iter().position(|colour| *colour == self.colour)
    }
}

/// Runs of consecutive points that have a value.
fn segments(points: &[(f64, Option<f64>)]) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for &(x, y) in points {
        match y {
            Some(y) => runs.last_mut().expect("never empty").push((x, y)),
            None if runs.last().is_some_and(|run| !run.is_empty()) => runs.push(Vec::new()),
            None => {}
        }
    }
    runs.retain(|run| !run.is_empty());
    runs
}

/// Which legend entries go on which row, so that rows fit the width.
fn legend_layout<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
    scale: f64,
) -> Vec<Vec<usize>> {
    let (width, _) = area.dim_in_pixel();
    let start = (LEGEND_LEFT * scale) as u32;
    let mut rows: Vec<Vec<usize>> = vec![Vec::new()];
    let mut used = start;
    // A series without a label has no entry (stacked panels share one legend).
    for (index, line) in series
        .iter()
        .enumerate()
        .filter(|(_, line)| !line.label.is_empty())
    {
        let entry = legend_entry_width(area, &line.label, scale);
        if used + entry > width && !rows.last().expect("never empty").is_empty() {
            rows.push(Vec::new());
            used = start;
        }
        rows.last_mut().expect("never empty").push(index);
        used += entry;
    }
    rows
}

/// Where legend entries start, in unscaled pixels (in line with the plot's y axis).
const LEGEND_LEFT: f64 = 108.0;

/// The width a legend entry takes: its line sample, its label and the gap after it. Labels are
/// measured with the embedded font plus 15%, because an SVG viewer draws them with a font of
/// its own, which may be wider.
fn legend_entry_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    label: &str,
    scale: f64,
) -> u32 {
    let font = (FONT, font_size(16.0, scale)).into_font();
    let text_width = area
        .estimate_text_size(label, &TextStyle::from(font))
        .map_or(200, |(width, _)| width);
    (38.0 * scale) as u32 + (f64::from(text_width) * 1.15) as u32 + (24.0 * scale) as u32
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
    rows: &[Vec<usize>],
    scale: f64,
) -> DrawResult<DB> {
    let font = (FONT, font_size(16.0, scale)).into_font();
    let row_height = 22.0 * scale;
    for (row, entries) in rows.iter().enumerate() {
        let y = (row as f64 * row_height + row_height / 2.0 + 3.0) as i32;
        let mut x = (LEGEND_LEFT * scale) as i32;
        for &index in entries {
            let line = &series[index];
            let style = line.colour.stroke_width((2.0 * scale).max(1.0) as u32);
            let half = (5.0 * scale) as i32;
            let right = x + (30.0 * scale) as i32;
            match line.block {
                Some(Block::Filled) => {
                    area.draw(&Rectangle::new(
                        [(x, y - half), (right, y + half)],
                        line.colour.filled(),
                    ))?;
                }
                Some(Block::Hatched) => {
                    hatch(area, (x, right), (y - half, y + half), scale, line.colour)?;
                    area.draw(&Rectangle::new(
                        [(x, y - half), (right, y + half)],
                        line.colour.stroke_width(1),
                    ))?;
                }
                // Three dashes, so that the gaps show on both sides of a marker.
                None if line.dashed => {
                    for (from, to) in [(0.0, 7.0), (11.5, 18.5), (23.0, 30.0)] {
                        area.draw(&PathElement::new(
                            vec![(x + (from * scale) as i32, y), (x + (to * scale) as i32, y)],
                            style,
                        ))?;
                    }
                }
                None => area.draw(&PathElement::new(vec![(x, y), (right, y)], style))?,
            }
            if let Some(policy) = line.policy() {
                let size = (4.0 * scale).max(2.0) as i32;
                let centre = (x + (15.0 * scale) as i32, y);
                let width = (2.0 * scale).max(1.0) as u32;
                area.draw(&marker::<DB, _>(policy, centre, size, line.colour, width))?;
            }
            area.draw(&Text::new(
                line.label.clone(),
                (x + (38.0 * scale) as i32, y - (9.0 * scale) as i32),
                font.clone(),
            ))?;
            x += legend_entry_width(area, &line.label, scale) as i32;
        }
    }
    Ok(())
}

/// Ranges of a panel: where its data ends, its extremes and the incident windows.
struct PlotData {
    x_end: f64,
    max: f64,
    min_positive: f64,
    /// Every value of the data (not of reference lines) is a whole number: a count.
    whole: bool,
    incidents: Vec<(f64, f64)>,
}

impl PlotData {
    fn linear_top(&self) -> f64 {
        if self.max > 0.0 { self.max * 1.08 } else { 1.0 }
    }

    fn log_range(&self) -> (f64, f64) {
        if self.max <= 0.0 {
            return (0.1, 10.0);
        }
        let low = self.min_positive.min(self.max) / 1.5;
        (low.max(1e-3), self.max * 1.5)
    }
}

/// Everything the charts need, read once from the run.
struct ChartData {
    scenario: String,
    description: String,
    bucket_s: f64,
    /// Bucket start times, seconds.
    times: Vec<f64>,
    policies: Vec<PolicyData>,
    /// The entry service's capacity, requests per second, as a line through the corners of
    /// its curve ([`capacity_line`]); none where requests take no time.
    capacity_rps: Option<Points>,
    /// In a topology, every service's name and, for a service that calls nothing, its
    /// capacity (empty for a single service). A calling service's capacity is measured per
    /// policy ([`PolicyData::capacity`]).
    services: Vec<(String, Option<Points>)>,
    incidents: Vec<(f64, f64)>,
    /// The drain after the end of arrivals, seconds, if the run went on after it.
    drain: Option<(f64, f64)>,
    outages: Vec<Outage>,
    /// Whether any endpoint writes (is not idempotent): only then can a write be duplicated.
    writes: bool,
    /// The methods of the operations, each once, in the scenario's order.
    methods: Vec<String>,
    /// The entry service's rate limit for all clients together, requests per second.
    rate_limit_rps: Option<f64>,
    /// The services run as several instances in some policy's run, in the model's order.
    fleets: Vec<FleetData>,
}

/// A service run as several instances: the requests sent to each, per policy, for the load
/// chart's fleet panels ([`ChartData::fleet_panels`]).
struct FleetData {
    name: String,
    /// Its instances in each policy's run (1 where a policy's overrides make it one).
    instances: Vec<usize>,
    /// Per policy, in order.
    policies: Vec<InstanceLoad>,
}

/// The requests per second sent to a fleet's instances in one policy's run, per bucket.
enum InstanceLoad {
    /// Each instance's, for a fleet of at most [`MAX_INSTANCE_LINES`] instances in every
    /// policy.
    Lines(Vec<Vec<f64>>),
    /// The least loaded instance's, the median's and the most loaded's, for a larger fleet.
    Band(Vec<(f64, f64, f64)>),
}

/// A fleet of at most this many instances draws a line per instance; a larger one a band.
pub(crate) const MAX_INSTANCE_LINES: usize = 10;

/// The fleets of `run` ([`FleetData`]), requests counted per bucket of `bucket_s` seconds.
fn fleets_of(run: &ScenarioRun, bucket_s: f64) -> Vec<FleetData> {
    let services = run
        .policies
        .first()
        .map_or(0, |policy| policy.measurements.services.len());
    let per_second = |count: u64| count as f64 / bucket_s;
    (0..services)
        .filter_map(|index| {
            let measured: Vec<&ServiceMeasurements> = run
                .policies
                .iter()
                .map(|policy| &policy.measurements.services[index])
                .collect();
            if measured.iter().all(|service| service.instances.is_empty()) {
                return None;
            }
            let instances: Vec<usize> = measured
                .iter()
                .map(|service| service.instance_requests.len().max(1))
                .collect();
            let lines = instances.iter().all(|&count| count <= MAX_INSTANCE_LINES);
            let policies = measured
                .iter()
                .map(|service| {
                    // A policy that runs the service as one instance: its requests are its one
                    // instance's.
                    let whole: Vec<u64>;
                    let each: Vec<&[u64]> = if service.instance_requests.is_empty() {
                        whole = service
                            .buckets
                            .iter()
                            .map(ServiceBucket::requests)
                            .collect();
                        vec![&whole]
                    } else {
                        service
                            .instance_requests
                            .iter()
                            .map(Vec::as_slice)
                            .collect()
                    };
                    if lines {
                        return InstanceLoad::Lines(
                            each.iter()
                                .map(|counts| {
                                    counts.iter().map(|&count| per_second(count)).collect()
                                })
                                .collect(),
                        );
                    }
                    let buckets = each.iter().map(|counts| counts.len()).max().unwrap_or(0);
                    let mut sorted = Vec::with_capacity(each.len());
                    InstanceLoad::Band(
                        (0..buckets)
                            .map(|bucket| {
                                sorted.clear();
                                sorted.extend(
                                    each.iter()
                                        .map(|counts| counts.get(bucket).copied().unwrap_or(0)),
                                );
                                sorted.sort_unstable();
                                let middle = sorted.len() / 2;
                                let median = if sorted.len() % 2 == 1 {
                                    per_second(sorted[middle])
                                } else {
                                    (per_second(sorted[middle - 1]) + per_second(sorted[middle]))
                                        / 2.0
                                };
                                (
                                    per_second(sorted[0]),
                                    median,
                                    per_second(sorted[sorted.len() - 1]),
                                )
                            })
                            .collect(),
                    )
                })
                .collect();
            Some(FleetData {
                name: measured[0].name.clone(),
                instances,
                policies,
            })
        })
        .collect()
}

struct PolicyData {
    name: String,
    attempts: Vec<f64>,
    /// In a topology, the requests sent to each service per bucket.
    requests: Vec<Vec<f64>>,
    /// In a topology, each calling service's measured capacity per bucket (requests per
    /// second; `None` for a leaf, whose capacity is the scenario's), only in buckets where it
    /// means something ([`measured_capacity`]).
    capacity: Vec<Option<Vec<Option<f64>>>>,
    p50_ms: Vec<Option<f64>>,
    p99_ms: Vec<Option<f64>>,
    duplicate_writes: Vec<u64>,
    unknown_results: Vec<u64>,
    succeeded: Vec<u64>,
    failures: Vec<[u64; FailureReason::ALL.len()]>,
    /// The operation's deadline, if it has one of its own.
    deadline_ms: Option<f64>,
}

impl ChartData {
    fn new(run: &ScenarioRun) -> ChartData {
        let bucket = run.scenario.bucket.get_ref().micros();
        let bucket_s = bucket as f64 / MICROS_PER_SECOND as f64;
        let buckets = run
            .policies
            .iter()
            .map(|policy| policy.measurements.buckets.len())
            .max()
            .unwrap_or(0);
        let times = (0..buckets).map(|index| index as f64 * bucket_s).collect();
        let to_ms = |micros: f64| micros / MICROS_PER_MS as f64;
        let policies = run
            .policies
            .iter()
            .map(|policy| {
                let measurements = &policy.measurements;
                PolicyData {
                    name: policy.name.clone(),
                    attempts: measurements
                        .buckets
                        .iter()
                        .map(|b| b.attempts as f64)
                        .collect(),
                    requests: if run.has_topology() {
                        measurements
                            .services
                            .iter()
                            .map(|service| {
                                service
                                    .buckets
                                    .iter()
                                    .map(|b| b.requests() as f64)
                                    .collect()
                            })
                            .collect()
                    } else {
                        Vec::new()
                    },
                    capacity: if run.has_topology() {
                        measurements
                            .services
                            .iter()
                            .zip(&policy.model.services)
                            .map(|(service, model)| {
                                (!model.is_leaf()).then(|| {
                                    service
                                        .buckets
                                        .iter()
                                        .map(|b| measured_capacity(b, bucket))
                                        .collect()
                                })
                            })
                            .collect()
                    } else {
                        Vec::new()
                    },
                    p50_ms: measurements
                        .latency
                        .iter()
                        .map(|h| h.quantile(0.5).map(to_ms))
                        .collect(),
                    p99_ms: measurements
                        .latency
                        .iter()
                        .map(|h| h.quantile(0.99).map(to_ms))
                        .collect(),
                    duplicate_writes: measurements
                        .buckets
                        .iter()
                        .map(|b| b.duplicate_writes)
                        .collect(),
                    unknown_results: measurements
                        .buckets
                        .iter()
                        .map(|b| b.unknown_results)
                        .collect(),
                    succeeded: measurements.buckets.iter().map(|b| b.succeeded).collect(),
                    failures: measurements.buckets.iter().map(|b| b.failures).collect(),
                    deadline_ms: match policy.model.users.policy.deadline {
                        crate::model::Deadline::Budget(budget) => Some(to_ms(budget as f64)),
                        _ => None,
                    },
                }
            })
            .collect();
        // The end of the last bucket: the charts' time axis covers every bucket whole.
        let end_s = buckets as f64 * bucket_s;
        let end = buckets as u64 * bucket;
        let seconds = |micros: Micros| micros as f64 / MICROS_PER_SECOND as f64;
        // The incident the summary measures, one that does not end closed at the chart's end.
        let incidents: Vec<(f64, f64)> = run
            .model
            .incident
            .map(|(start, stop)| (seconds(start), seconds(stop.unwrap_or(end).max(start))))
            .into_iter()
            .collect();
        let outages = run
            .policies
            .iter()
            .enumerate()
            .flat_map(|(policy, run)| {
                run.measurements
                    .services
                    .iter()
                    .flat_map(|service| service.downtime.periods())
                    .map(move |&(down, up)| Outage {
                        policy,
                        start_s: seconds(down),
                        end_s: seconds(up),
                    })
            })
            .collect();
        ChartData {
            scenario: run.scenario.name.to_string(),
            description: run.scenario.description.clone(),
            bucket_s,
            times,
            policies,
            capacity_rps: capacity_line(run.model.entry_service(), end_s),
            services: if run.has_topology() {
                run.model
                    .services
                    .iter()
                    .map(|service| {
                        // A calling service's throughput depends on how long its calls take,
                        // so workers / own service time would overstate it: no line.
                        let leaf = service.calls.is_empty();
                        let line = leaf.then(|| capacity_line(service, end_s)).flatten();
                        (service.name.clone(), line)
                    })
                    .collect()
            } else {
                Vec::new()
            },
            incidents,
            drain: (end_s > seconds(run.model.duration))
                .then(|| (seconds(run.model.duration), end_s)),
            outages,
            writes: run
                .model
                .users
                .endpoints
                .iter()
                .any(|endpoint| !endpoint.idempotent_method),
            methods: run
                .scenario
                .clients
                .operations
                .iter()
                .map(|operation| operation.method.get_ref().clone())
                .fold(Vec::new(), |mut methods, method| {
                    if !methods.contains(&method) {
                        methods.push(method);
                    }
                    methods
                }),
            rate_limit_rps: run
                .model
                .entry_service()
                .rate_limit
                .as_ref()
                .filter(|limit| !limit.per_client)
                .map(|limit| limit.rate),
            fleets: fleets_of(run, bucket_s),
        }
    }

    /// The size of `chart`: the load chart grows by a section per fleet
    /// ([`fleet_section_height`]), every other chart has its fixed size.
    fn size(&self, chart: Chart) -> (u32, u32) {
        let (width, height) = chart.size();
        if chart != Chart::Load {
            return (width, height);
        }
        (width, height + self.fleet_sections_height())
    }

    /// The height of the load chart's fleet sections, all together.
    fn fleet_sections_height(&self) -> u32 {
        self.fleets.len() as u32 * fleet_section_height(self.policies.len())
    }

    /// The panels of `fleet`, one per policy: the requests per second sent to each instance,
    /// a line per instance in its colour ([`instance_colour`]), or, for a fleet of more than
    /// [`MAX_INSTANCE_LINES`], the range from its least to its most loaded instance shaded in
    /// the policy's colour, with the median instance's line. They share a y axis, so that the
    /// policies' balance compares at a glance; the time axis is labelled under the last row.
    fn fleet_panels(&self, fleet: &FleetData) -> Vec<Panel> {
        let highest = fleet
            .policies
            .iter()
            .flat_map(|load| match load {
                InstanceLoad::Lines(lines) => lines.iter().flatten().copied().collect::<Vec<_>>(),
                InstanceLoad::Band(band) => band.iter().map(|&(_, _, high)| high).collect(),
            })
            .fold(0.0, f64::max);
        let columns = fleet_columns(fleet.policies.len());
        fleet
            .policies
            .iter()
            .enumerate()
            .map(|(policy, load)| {
                let (series, bands) = match load {
                    InstanceLoad::Lines(lines) => (
                        lines
                            .iter()
                            .enumerate()
                            .map(|(instance, values)| Series {
                                dashed: instance >= PALETTE.len(),
                                marked: false,
                                ..self.series(
                                    String::new(),
                                    instance_colour(instance),
                                    false,
                                    values.iter().map(|&value| Some(value)),
                                )
                            })
                            .collect(),
                        Vec::new(),
                    ),
                    InstanceLoad::Band(band) => (
                        vec![Series {
                            marked: false,
                            ..self.series(
                                String::new(),
                                policy_colour(policy),
                                false,
                                band.iter().map(|&(_, median, _)| Some(median)),
                            )
                        }],
                        vec![Band {
                            colour: tint(policy_colour(policy)),
                            points: self
                                .times
                                .iter()
                                .zip(band)
                                .map(|(&x, &(low, _, high))| (x, low, high))
                                .collect(),
                        }],
                    ),
                };
                Panel {
                    legend: false,
                    time_label: policy + columns >= fleet.policies.len(),
                    outages: self
                        .outages
                        .iter()
                        .filter(|outage| outage.policy == policy)
                        .copied()
                        .collect(),
                    bands,
                    shared_max: Some(highest),
                    ..self.panel("requests/s", series)
                }
            })
            .collect()
    }

    /// The legend of `fleet`'s panels: each instance's line (`#K`, as `METRIC@SERVICE#K`
    /// names it), or what the band and its line are.
    fn fleet_legend(&self, fleet: &FleetData) -> Vec<Series> {
        let most = fleet.instances.iter().copied().max().unwrap_or(1);
        if matches!(fleet.policies.first(), Some(InstanceLoad::Band(_))) {
            return vec![
                Series {
                    block: Some(Block::Filled),
                    ..key_entry(
                        "shaded in the policy's colour: from the least to the most loaded instance",
                        tint(KEY),
                        false,
                    )
                },
                key_entry("line: the median instance", KEY, false),
            ];
        }
        (0..most)
            .map(|instance| {
                key_entry(
                    &format!("#{instance}"),
                    instance_colour(instance),
                    instance >= PALETTE.len(),
                )
            })
            .collect()
    }

    /// Why `chart` has nothing to show, in its sentence, or `None` if it has something.
    fn nothing_to_show(&self, chart: Chart) -> Option<String> {
        let panel = match chart {
            Chart::Latency => self.latency_panel(),
            Chart::Duplicates => self.duplicates_panel(),
            Chart::Load | Chart::Goodput | Chart::Overview => return None,
        };
        let empty = panel.is_empty();
        panel.empty_note.filter(|_| empty)
    }

    fn series(
        &self,
        label: String,
        colour: RGBColor,
        dashed: bool,
        values: impl Iterator<Item = Option<f64>>,
    ) -> Series {
        Series {
            label,
            colour,
            dashed,
            reference: false,
            block: None,
            marked: true,
            points: self.times.iter().copied().zip(values).collect(),
        }
    }

    /// A dashed reference line (a capacity) over the buckets.
    fn reference(
        &self,
        label: String,
        colour: RGBColor,
        values: impl Iterator<Item = Option<f64>>,
    ) -> Series {
        Series {
            reference: true,
            ..self.series(label, colour, true, values)
        }
    }

    fn per_second(&self, count: u64) -> f64 {
        count as f64 / self.bucket_s
    }

    /// One solid line per policy, labelled with its name: the counts `counts` picks, per second.
    fn rate_per_policy(&self, counts: impl Fn(&PolicyData) -> &[f64]) -> Vec<Series> {
        self.policies
            .iter()
            .enumerate()
            .map(|(index, policy)| {
                self.series(
                    policy.name.clone(),
                    policy_colour(index),
                    false,
                    counts(policy)
                        .iter()
                        .map(|count| Some(count / self.bucket_s)),
                )
            })
            .collect()
    }

    fn load_panel(&self) -> Panel {
        let mut series = self.rate_per_policy(|policy| &policy.attempts);
        // No line and no legend entry where the capacity has no bound (requests take no time).
        if let Some(points) = &self.capacity_rps {
            series.push(capacity_series("upstream capacity", points));
        }
        // A rate limit is drawn where it binds: where some policy's load reaches it.
        let peak = self
            .policies
            .iter()
            .flat_map(|policy| policy.attempts.iter())
            .fold(0.0, |peak: f64, count| peak.max(count / self.bucket_s));
        if let Some(limit) = self.rate_limit_rps.filter(|limit| peak >= 0.8 * limit) {
            series.push(self.reference(
                format!("rate limit ({limit:.0}/s)"),
                LIMIT,
                self.times.iter().map(|_| Some(limit)),
            ));
        }
        self.panel("attempts per second", series)
    }

    /// A panel of `series` with its time axis, legend, incidents, drain and outages, and
    /// nothing else: the panels below change what they need of it.
    fn panel(&self, y_label: impl Into<String>, series: Vec<Series>) -> Panel {
        Panel {
            y_label: y_label.into(),
            log_y: false,
            legend: true,
            time_label: true,
            reference_headroom: None,
            series,
            incidents: self.incidents.clone(),
            drain: self.drain,
            outages: self.outages.clone(),
            empty_note: None,
            note: None,
            key: Vec::new(),
            bands: Vec::new(),
            shared_max: None,
        }
    }

    /// In a topology, one panel per service: the requests its callers sent it per second, per
    /// policy, with its capacity, dashed: grey for a service that calls nothing, in the
    /// policy's colour for a calling service, whose capacity each policy's run measured (its
    /// workers are held for their calls) where it means something ([`measured_capacity`]).
    /// Only the first panel has the legend (the colours are the same in all), with a key to
    /// both kinds of capacity, and only the last the time axis's label.
    fn service_load_panels(&self) -> Vec<Panel> {
        let last = self.services.len().saturating_sub(1);
        let mut key = Vec::new();
        if self.services.iter().any(|(_, capacity)| capacity.is_some()) {
            key.push(key_entry(
                "capacity (workers / service time)",
                CAPACITY,
                true,
            ));
        }
        let measured = self.policies.iter().any(|policy| {
            policy
                .capacity
                .iter()
                .flatten()
                .any(|line| line.iter().any(Option::is_some))
        });
        if measured {
            key.push(key_entry(
                "in a policy's colour: a calling service's capacity as measured (workers / mean time held), where they were held at least half the time",
                KEY,
                true,
            ));
        }
        self.services
            .iter()
            .enumerate()
            .map(|(service, (name, capacity))| {
                let mut series = self.rate_per_policy(|policy| &policy.requests[service]);
                for (index, policy) in self.policies.iter().enumerate() {
                    if let Some(measured) = &policy.capacity[service] {
                        let colour = policy_colour(index);
                        series.push(self.reference(
                            String::new(),
                            colour,
                            measured.iter().copied(),
                        ));
                    }
                }
                if let Some(points) = capacity {
                    series.push(capacity_series("", points));
                }
                Panel {
                    legend: service == 0,
                    time_label: service == last,
                    reference_headroom: Some(2.0),
                    key: if service == 0 {
                        key.clone()
                    } else {
                        Vec::new()
                    },
                    ..self.panel(format!("{name}: requests/s"), series)
                }
            })
            .collect()
    }

    fn latency_panel(&self) -> Panel {
        let mut series = Vec::new();
        for (index, policy) in self.policies.iter().enumerate() {
            let colour = policy_colour(index);
            series.push(self.series(String::new(), colour, false, policy.p99_ms.iter().copied()));
            series.push(self.series(String::new(), colour, true, policy.p50_ms.iter().copied()));
        }
        let mut key = self.policy_key(0..self.policies.len(), ("p99", "p50"));
        // Each deadline where it binds: where some policy's p99 comes within half of it.
        let slowest = self
            .policies
            .iter()
            .flat_map(|policy| policy.p99_ms.iter().flatten())
            .fold(0.0, |slowest: f64, ms| slowest.max(*ms));
        let mut deadlines: Vec<f64> = self
            .policies
            .iter()
            .filter_map(|policy| policy.deadline_ms)
            .filter(|deadline| slowest >= 0.5 * deadline)
            .collect();
        deadlines.sort_by(f64::total_cmp);
        deadlines.dedup();
        for deadline in deadlines {
            let label = format!(
                "deadline ({})",
                crate::base::time::Duration((deadline * 1000.0) as u64)
            );
            key.push(key_entry(&label, LIMIT, true));
            series.push(self.reference(
                String::new(),
                LIMIT,
                self.times.iter().map(|_| Some(deadline)),
            ));
        }
        Panel {
            log_y: true,
            empty_note: Some("no operation succeeded in any policy".into()),
            key,
            ..self.panel("latency (ms, log scale)", series)
        }
    }

    fn duplicates_panel(&self) -> Panel {
        let cumulative = |counts: &[u64]| -> Vec<Option<f64>> {
            counts
                .iter()
                .scan(0u64, |total, count| {
                    *total += count;
                    Some(Some(*total as f64))
                })
                .collect()
        };
        // Lines that stay at zero all run long would hide each other along the axis: they are
        // named in a note instead of drawn.
        let mut series = Vec::new();
        let mut drawn = Vec::new();
        let mut at_zero: [Vec<String>; 2] = Default::default();
        for (index, policy) in self.policies.iter().enumerate() {
            let colour = policy_colour(index);
            let counts = [&policy.duplicate_writes, &policy.unknown_results];
            for (kind, counts) in counts.into_iter().enumerate() {
                if counts.iter().all(|count| *count == 0) {
                    at_zero[kind].push(format!("\"{}\"", policy.name));
                    continue;
                }
                series.push(self.series(
                    String::new(),
                    colour,
                    kind == 1,
                    cumulative(counts).into_iter(),
                ));
                if drawn.last() != Some(&index) {
                    drawn.push(index);
                }
            }
        }
        let key = self.policy_key(drawn.into_iter(), ("duplicate writes", "unknown results"));
        let zero: Vec<String> = ["duplicate writes", "unknown results"]
            .iter()
            .zip(&at_zero)
            .filter(|(_, policies)| !policies.is_empty())
            .map(|(what, policies)| format!("{what} of {}", policies.join(", ")))
            .collect();
        let note = (!zero.is_empty())
            .then(|| format!("at zero all run long, not drawn: {}", zero.join("; ")));
        let empty_note = if self.writes {
            "no duplicate writes and no unknown results in any policy".to_string()
        } else {
            format!(
                "nothing can be duplicated: every operation is a {}, which is idempotent, so no retry can write twice",
                self.methods.join(" or ")
            )
        };
        Panel {
            empty_note: Some(empty_note),
            note,
            key,
            ..self.panel("operations (cumulative)", series)
        }
    }

    /// The legend of a panel that draws two lines per policy, solid and dashed, for two
    /// measures (`solid`, `dashed`): one entry per policy of `policies` (its colour and
    /// marker) and a key to the two styles, instead of an entry per line, whose swatches would
    /// tell solid from dashed only by their dashes.
    fn policy_key(
        &self,
        policies: impl Iterator<Item = usize>,
        (solid, dashed): (&str, &str),
    ) -> Vec<Series> {
        let mut key: Vec<Series> = policies
            .map(|index| Series {
                label: self.policies[index].name.clone(),
                colour: policy_colour(index),
                dashed: false,
                reference: false,
                block: None,
                marked: true,
                points: Vec::new(),
            })
            .collect();
        key.push(key_entry(&format!("solid: {solid}"), KEY, false));
        key.push(key_entry(&format!("dashed: {dashed}"), KEY, true));
        key
    }

    fn goodput_panel(&self) -> Panel {
        let series = self
            .policies
            .iter()
            .enumerate()
            .map(|(index, policy)| {
                self.series(
                    format!("{} succeeded", policy.name),
                    policy_colour(index),
                    false,
                    policy
                        .succeeded
                        .iter()
                        .map(|count| Some(self.per_second(*count))),
                )
            })
            .collect();
        self.panel("succeeded per second", series)
    }

    /// Failures per second, one line per policy and reason that occurred.
    fn failures_panel(&self) -> Panel {
        let mut series = Vec::new();
        for (index, policy) in self.policies.iter().enumerate() {
            for (reason_index, reason) in FailureReason::ALL.iter().enumerate() {
                let counts: Vec<u64> = policy.failures.iter().map(|f| f[reason_index]).collect();
                if counts.iter().all(|count| *count == 0) {
                    continue;
                }
                // Solid for the reason that fails most operations overall, dashed for others.
                series.push(self.series(
                    format!("{}: {reason}", policy.name),
                    policy_colour(index),
                    reason_index != dominant_reason(&policy.failures),
                    counts.iter().map(|count| Some(self.per_second(*count))),
                ));
            }
        }
        Panel {
            empty_note: Some("no operation failed in any policy".into()),
            ..self.panel("failed per second", series)
        }
    }
}

/// A service's capacity from the scenario's curve ([`capacity_line`]), dashed grey, labelled
/// `label` in the legend (no entry if empty).
fn capacity_series(label: &str, points: &Points) -> Series {
    Series {
        label: label.to_string(),
        colour: CAPACITY,
        dashed: true,
        reference: true,
        block: None,
        marked: false,
        points: points.clone(),
    }
}

/// A legend entry that stands for a style: a line in `colour`, `dashed` or not, of no points.
fn key_entry(label: &str, colour: RGBColor, dashed: bool) -> Series {
    Series {
        label: label.to_string(),
        colour,
        dashed,
        reference: true,
        block: None,
        marked: false,
        points: Vec::new(),
    }
}

/// The colour of a fleet's instance `index` in its panels: the palette's, in order, dashed from
/// the eighth on ([`ChartData::fleet_panels`]).
fn instance_colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// `colour` a third as strong, on white: a band under lines of that colour.
fn tint(colour: RGBColor) -> RGBColor {
    let light = |channel: u8| ((u16::from(channel) + 2 * 255) / 3) as u8;
    RGBColor(light(colour.0), light(colour.1), light(colour.2))
}

/// The fleet panels' columns for `policies` panels: one row of up to three, two by two for
/// four, then rows of three.
fn fleet_columns(policies: usize) -> usize {
    match policies {
        0..=3 => policies.max(1),
        4 => 2,
        _ => 3,
    }
}

/// A fleet section's title strip, legend strip and row of panels, in pixels.
const FLEET_TITLE: u32 = 44;
const FLEET_LEGEND: u32 = 30;
const FLEET_ROW: u32 = 250;
/// The fleet panels' scale, as the overview's.
const FLEET_SCALE: f64 = 0.8;

/// The height of a fleet's section of the load chart, with a panel for each of `policies`.
fn fleet_section_height(policies: usize) -> u32 {
    let rows = policies.max(1).div_ceil(fleet_columns(policies)) as u32;
    FLEET_TITLE + FLEET_LEGEND + rows * FLEET_ROW
}

/// The title of `fleet`'s section: the fleet, its instances and how they are drawn.
fn fleet_title(fleet: &FleetData) -> String {
    let fewest = fleet.instances.iter().copied().min().unwrap_or(1);
    let most = fleet.instances.iter().copied().max().unwrap_or(1);
    let count = Spread::of(fewest.to_string(), most.to_string()).words("");
    let how = match fleet.policies.first() {
        Some(InstanceLoad::Band(_)) => "min to max over the instances (band) and the median (line)",
        _ => "a line per instance",
    };
    format!(
        "Fleet {}: requests/s sent to each of its {count} instances, {how}, per policy",
        fleet.name
    )
}

/// Draws `fleet`'s section of the load chart in `area`: its title, its legend and a panel per
/// policy, each under the policy's name.
fn draw_fleet<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    fleet: &FleetData,
    data: &ChartData,
) -> DrawResult<DB> {
    let (title, rest) = area.split_vertically(FLEET_TITLE);
    title.draw(&Text::new(
        fleet_title(fleet),
        (12, 12),
        (FONT, 22.0).into_font().style(FontStyle::Bold),
    ))?;
    let (legend, grid) = rest.split_vertically(FLEET_LEGEND);
    let entries = data.fleet_legend(fleet);
    let rows = legend_layout(&legend, &entries, 1.0);
    draw_legend(&legend, &entries, &rows, 1.0)?;
    let panels = data.fleet_panels(fleet);
    let columns = fleet_columns(panels.len());
    let cells = grid.split_evenly((panels.len().div_ceil(columns), columns));
    let caption = (FONT, font_size(17.0, 1.0))
        .into_font()
        .style(FontStyle::Bold);
    for ((cell, panel), policy) in cells.iter().zip(&panels).zip(&data.policies) {
        let (top, body) = cell.split_vertically(24);
        top.draw(&Text::new(
            policy.name.clone(),
            ((126.0 * FLEET_SCALE) as i32, 4),
            caption.clone(),
        ))?;
        draw_panel(&body, panel, FLEET_SCALE)?;
    }
    Ok(())
}

/// A service's capacity (available workers / mean service time, requests per second, the
/// workers counted by what they serve at best under contention) from 0
/// to `end_s` seconds, as a line through the corners of its curve of whole workers: a step is
/// drawn as a vertical step at the instant it happens, a ramp as the stairs of the workers it
/// adds or loses. `None` where requests take no time (no finite capacity, as `capacity_rps`
/// in the CSVs is empty there).
fn capacity_line(service: &ServiceModel, end_s: f64) -> Option<Points> {
    service.capacity_rps(0)?;
    let rps = |curve_workers: u64| service.capacity_rps(curve_workers);
    let end = (end_s * MICROS_PER_SECOND as f64).round() as Micros;
    let curve = &service.capacity;
    let mut workers = curve.available(0);
    let mut points = vec![(0.0, rps(workers))];
    let mut at = 0;
    while let Some(change) = curve.next_change(at).filter(|&change| change <= end) {
        let seconds = change as f64 / MICROS_PER_SECOND as f64;
        points.push((seconds, rps(workers)));
        workers = curve.available(change);
        points.push((seconds, rps(workers)));
        at = change;
    }
    points.push((end_s, rps(workers)));
    Some(points)
}

/// Below this share of its workers' time held, a calling service's measured capacity is not
/// drawn ([`measured_capacity`]).
const MEANINGFUL_BUSY: f64 = 0.5;

/// A calling service's capacity measured in one bucket of `width`: its available workers / the
/// mean time a worker held a request it let go of (its calls included), only where the
/// workers were held at least [`MEANINGFUL_BUSY`] of the bucket, so that this is a bound the
/// service may meet. In a bucket of little work the few requests let go of (fast failures,
/// slow stragglers) make the mean hold swing, and the capacity it gives lies far above
/// anything asked of the service: retry-layers' api, 8% to 34% busy after the brownout in one
/// policy, measured 11k to 18k requests a second against 3k offered, drawn as jagged pieces
/// cut off at the top.
fn measured_capacity(bucket: &ServiceBucket, width: Micros) -> Option<f64> {
    let held = bucket.held_us as f64 / (bucket.workers_available as f64 * width as f64);
    if held >= MEANINGFUL_BUSY {
        bucket.held_capacity_rps()
    } else {
        None
    }
}

/// The reason with the most failures over the run.
fn dominant_reason(failures: &[[u64; FailureReason::ALL.len()]]) -> usize {
    (0..FailureReason::ALL.len())
        .max_by_key(|&reason| {
            (
                failures.iter().map(|f| f[reason]).sum::<u64>(),
                std::cmp::Reverse(reason),
            )
        })
        .unwrap_or(0)
}

impl Panel {
    fn plot_data(&self) -> PlotData {
        let extremes = |reference: bool| {
            self.series
                .iter()
                .filter(|line| line.reference == reference || self.reference_headroom.is_none())
                .flat_map(|line| line.points.iter().filter_map(|(_, y)| *y))
                .fold((0.0f64, f64::INFINITY), |(max, min), y| {
                    (max.max(y), if y > 0.0 { min.min(y) } else { min })
                })
        };
        let (mut max, mut min_positive) = extremes(false);
        if let Some(headroom) = self.reference_headroom {
            max = max.max(extremes(true).0.min(headroom * max));
        }
        for &(_, low, high) in self.bands.iter().flat_map(|band| &band.points) {
            max = max.max(high);
            if low > 0.0 {
                min_positive = min_positive.min(low);
            }
        }
        if let Some(shared) = self.shared_max {
            max = max.max(shared);
        }
        let x_end = self
            .series
            .iter()
            .flat_map(|line| line.points.last().map(|(x, _)| *x))
            .chain(
                self.bands
                    .iter()
                    .flat_map(|band| band.points.last().map(|p| p.0)),
            )
            .chain(self.drain.map(|(_, end)| end))
            .fold(0.0, f64::max)
            .max(1e-3);
        let whole = self
            .series
            .iter()
            .filter(|line| !line.reference)
            .flat_map(|line| line.points.iter().filter_map(|(_, y)| *y))
            .all(|y| y.fract() == 0.0);
        PlotData {
            x_end,
            max,
            min_positive,
            whole,
            incidents: self.incidents.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viridis_runs_from_purple_to_yellow() {
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        assert_eq!(viridis(f64::NAN), RGBColor(68, 1, 84));
        // Halfway between the fifth stop and the sixth, rounded.
        assert_eq!(viridis(0.5625), RGBColor(36, 159, 135));
    }

    #[test]
    fn formats_parse() {
        assert_eq!("png".parse(), Ok(Format::Png));
        assert_eq!(" svg".parse(), Ok(Format::Svg));
        assert!(
            "jpeg"
                .parse::<Format>()
                .unwrap_err()
                .contains("valid: png, svg")
        );
    }

    #[test]
    fn lines_break_where_data_is_missing() {
        let points = [
            (0.0, Some(1.0)),
            (1.0, None),
            (2.0, Some(3.0)),
            (3.0, Some(4.0)),
            (4.0, None),
        ];
        assert_eq!(
            segments(&points),
            vec![vec![(0.0, 1.0)], vec![(2.0, 3.0), (3.0, 4.0)]]
        );
    }

    #[test]
    fn compact_labels() {
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(2500.0), "2500");
        assert_eq!(compact(25000.0), "25k");
        assert_eq!(compact(2_500_000.0), "2.5M");
    }

    #[test]
    fn wrapping_keeps_words_whole() {
        assert_eq!(
            wrap("a bb ccc dddd", |line| line.len() <= 6),
            ["a bb", "ccc", "dddd"]
        );
    }

    /// A panel of one policy's line through `values`, one a second.
    fn panel_of(values: &[f64]) -> Panel {
        Panel {
            y_label: "count".into(),
            log_y: false,
            legend: true,
            time_label: true,
            reference_headroom: None,
            series: vec![Series {
                label: "a policy".into(),
                colour: policy_colour(0),
                dashed: false,
                reference: false,
                block: None,
                marked: true,
                points: values
                    .iter()
                    .enumerate()
                    .map(|(second, value)| (second as f64, Some(*value)))
                    .collect(),
            }],
            incidents: Vec::new(),
            drain: None,
            outages: Vec::new(),
            empty_note: None,
            note: None,
            key: Vec::new(),
            bands: Vec::new(),
            shared_max: None,
        }
    }

    /// Every text `panel` draws, as plotters writes it in SVG (before its glyphs are outlined).
    fn texts(panel: &Panel) -> Vec<String> {
        register_fonts();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, CHART_SIZE).into_drawing_area();
            draw_panel(&root, panel, 1.0).unwrap();
            root.present().unwrap();
        }
        svg.split("<text")
            .skip(1)
            .map(|text| {
                let start = text.find('>').unwrap() + 1;
                text[start..text.find("</text>").unwrap()]
                    .trim()
                    .to_string()
            })
            .collect()
    }

    /// A count that reaches 2 gets ticks 0, 1 and 2, not 0.5 and 1.5, which no count can be;
    /// a measure that reaches 2.5 keeps its halves. Whole seconds on the time axis of 20 s
    /// read `5`, not `5.0`.
    #[test]
    fn counts_get_whole_ticks_and_seconds_no_decimals() {
        let counts = texts(&panel_of(&[[0.0, 1.0, 2.0, 1.0, 2.0]; 4].concat()));
        for tick in ["0", "1", "2"] {
            assert!(counts.iter().any(|text| text == tick), "{counts:?}");
        }
        assert!(
            !counts.iter().any(|text| text.contains('.')),
            "a fractional tick on a count or a time: {counts:?}"
        );
        let measures = texts(&panel_of(&[[0.0, 1.5, 2.5, 1.0, 2.0]; 4].concat()));
        assert!(
            measures.iter().any(|text| text == "0.5" || text == "1.5"),
            "{measures:?}"
        );
        assert_eq!(seconds_tick(20.0), "20");
        assert_eq!(seconds_tick(2.5), "2.5");
        assert_eq!(y_ticks(2.16, true, 600, 1.0), 3);
        assert_eq!(y_ticks(2.16, false, 600, 1.0), 10);
        assert_eq!(y_ticks(4500.0, true, 90, 0.8), 3);
    }

    /// The model of a one-service scenario whose capacity is `capacity` (TOML points).
    fn service_with(capacity: &str) -> ServiceModel {
        let text = format!(
            r#"
name = "t"
duration = "30s"
[clients]
count = 10
rate = 1.0
[upstream]
workers = 20
service_time = "10ms"
capacity = {capacity}
"#
        );
        let scenario = crate::import::load_str(&text, "t.toml", &[]).unwrap();
        crate::model::Model::new(&scenario, &scenario.policy[0]).services[0].clone()
    }

    /// A step in capacity is a vertical step at its instant (two points at t = 10 s, 2000 and
    /// 400 a second), not a ramp over a bucket; a ramp is the stairs of its whole workers,
    /// every one at its instant.
    #[test]
    fn capacity_steps_are_vertical() {
        let step = service_with(
            r#"[{ at = "10s", factor = 1.0 }, { at = "10s", factor = 0.2 }, { at = "20s", factor = 0.2 }, { at = "20s", factor = 1.0 }]"#,
        );
        let line = capacity_line(&step, 29.0).unwrap();
        assert_eq!(
            line,
            [
                (0.0, Some(2000.0)),
                (10.0, Some(2000.0)),
                (10.0, Some(400.0)),
                (20.0, Some(400.0)),
                (20.0, Some(2000.0)),
                (29.0, Some(2000.0))
            ]
        );
        let ramp = service_with(r#"[{ at = "10s", factor = 1.0 }, { at = "20s", factor = 0.5 }]"#);
        let line = capacity_line(&ramp, 29.0).unwrap();
        // Ten workers lost one a second, each as soon as the curve drops below it: a
        // microsecond past 10 s, 11 s, ... 19 s.
        assert_eq!(line.len(), 2 + 2 * 10);
        assert!(line[1..21].chunks(2).all(|pair| pair[0].0 == pair[1].0));
        assert_eq!(
            line[1..3],
            [(10.000001, Some(2000.0)), (10.000001, Some(1900.0))]
        );
        assert_eq!(
            line[19..21],
            [(19.000001, Some(1100.0)), (19.000001, Some(1000.0))]
        );
    }

    /// A run of 6,000 operations over 3 s against a fleet of `instances` behind random picks
    /// (so that instances differ), in buckets of half a second; a second policy runs the
    /// service as one instance.
    fn fleet_run(instances: u64) -> ScenarioRun {
        let text = format!(
            r#"
name = "f"
duration = "3s"
bucket = "500ms"
[clients]
count = 2000
rate = 1.0
[upstream]
workers = 50
service_time = "2ms"
fleet = {{ instances = {instances}, load_balancer = "random" }}
[[policy]]
name = "fleet"
max_attempts = 0
[[policy]]
name = "one"
max_attempts = 0
overrides = {{ "upstream.fleet.instances" = 1 }}
"#
        );
        let scenario = crate::import::load_str(&text, "f.toml", &[]).unwrap();
        let observers = vec![crate::engine::Quiet; scenario.policy.len()];
        crate::run::run_scenario(&scenario, observers).unwrap().0
    }

    /// A fleet of at most ten draws each instance's requests per second, as its run counted
    /// them per bucket; a larger one the least loaded instance's, the median's (the sixth of
    /// eleven) and the most loaded's, per bucket. A policy whose overrides make the service
    /// one instance draws that one; a run without a fleet has no fleet panel, and its load
    /// chart keeps its size.
    #[test]
    fn a_small_fleet_draws_each_instance_and_a_large_one_its_spread() {
        let small = fleet_run(4);
        let fleets = fleets_of(&small, 0.5);
        assert_eq!(
            (fleets.len(), fleets[0].instances.as_slice()),
            (1, &[4, 1][..])
        );
        let counted = &small.policies[0].measurements.services[0].instance_requests;
        let InstanceLoad::Lines(lines) = &fleets[0].policies[0] else {
            panic!("four instances draw lines")
        };
        assert_eq!(lines.len(), 4);
        for (line, counts) in lines.iter().zip(counted) {
            let doubled: Vec<f64> = counts.iter().map(|&count| 2.0 * count as f64).collect();
            assert_eq!(*line, doubled);
        }
        let InstanceLoad::Lines(one) = &fleets[0].policies[1] else {
            panic!("lines")
        };
        let whole = &small.policies[1].measurements.services[0].buckets;
        assert_eq!(one.len(), 1);
        assert_eq!(one[0][1], 2.0 * whole[1].requests() as f64);
        let large = fleet_run(11);
        let fleets = fleets_of(&large, 0.5);
        let InstanceLoad::Band(band) = &fleets[0].policies[0] else {
            panic!("eleven instances draw a band")
        };
        let counted = &large.policies[0].measurements.services[0].instance_requests;
        for (bucket, &(low, median, high)) in band.iter().enumerate() {
            let mut counts: Vec<u64> = counted.iter().map(|counts| counts[bucket]).collect();
            counts.sort_unstable();
            assert_eq!(
                (low, median, high),
                (
                    2.0 * counts[0] as f64,
                    2.0 * counts[5] as f64,
                    2.0 * counts[10] as f64
                )
            );
        }
        assert!(band[1].0 < band[1].2, "random picks spread: {:?}", band[1]);
        let data = ChartData::new(&large);
        assert_eq!(
            data.size(Chart::Load),
            (
                CHART_SIZE.0,
                CHART_SIZE.1 + FLEET_TITLE + FLEET_LEGEND + FLEET_ROW
            )
        );
        assert_eq!(data.size(Chart::Latency), CHART_SIZE);
        let mut plain = fleet_run(1);
        plain.policies.truncate(1);
        let data = ChartData::new(&plain);
        assert!(data.fleets.is_empty());
        assert_eq!(data.size(Chart::Load), CHART_SIZE);
    }

    /// A calling service's measured capacity is drawn only where its workers were held at
    /// least half the time: a bucket of little work says nothing about what it could serve.
    #[test]
    fn measured_capacity_only_where_the_workers_were_busy() {
        let bucket = |held_s: u64| ServiceBucket {
            workers_available: 20,
            released: 1000,
            held_us: held_s * MICROS_PER_SECOND,
            ..ServiceBucket::default()
        };
        let second = MICROS_PER_SECOND;
        assert_eq!(measured_capacity(&bucket(2), second), None);
        assert_eq!(measured_capacity(&bucket(9), second), None);
        // Held 10 s of 20 workers' second: 1000 let go of, 10 ms each, 2000 a second.
        assert_eq!(measured_capacity(&bucket(10), second), Some(2000.0));
    }
}
