//! SVG text drawn as the outlines of the embedded DejaVu Sans, so that an SVG chart looks the
//! same in every viewer and in `report.html`, whatever fonts the viewer's machine has.
//!
//! plotters writes text as `<text>` elements naming a font family, which a viewer resolves to
//! whatever it has: another font, other widths, labels that overlap or run off the plot. Here
//! each `<text>` becomes a group of `<use>` references to glyph outlines defined once per chart
//! in `<defs>`, taken from the same font files the PNG renderer uses, placed as the browser
//! would place the text: `text-anchor` against the advance widths, `dy` in `em` of the font
//! size or `ex` of the font's x-height, and any `rotate(...)` kept. The text stays readable to
//! tools as the group's `aria-label`. Glyph ids carry a prefix per chart, so that the charts
//! inlined in one page never share an id.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use ttf_parser::{Face, GlyphId, OutlineBuilder};

use crate::base::escape::html as escape;

/// The two faces the charts use, parsed once.
fn face(bold: bool) -> &'static Face<'static> {
    static REGULAR: OnceLock<Face<'static>> = OnceLock::new();
    static BOLD: OnceLock<Face<'static>> = OnceLock::new();
    let (cell, bytes) = if bold {
        (&BOLD, dejavu::sans::bold())
    } else {
        (&REGULAR, dejavu::sans::regular())
    };
    cell.get_or_init(|| Face::parse(bytes, 0).expect("the embedded DejaVu Sans parses"))
}

/// `svg` with every `<text>` element replaced by outlines; ids of glyphs start with `prefix`.
pub fn outline_text(svg: &str, prefix: &str) -> String {
    let mut body = String::with_capacity(svg.len());
    // (bold, glyph) -> the outline's path in font units.
    let mut glyphs: BTreeMap<(bool, u16), String> = BTreeMap::new();
    let mut rest = svg;
    while let Some(start) = rest.find("<text") {
        body.push_str(&rest[..start]);
        let Some(open_end) = rest[start..].find('>').map(|i| start + i) else {
            break;
        };
        let Some(close) = rest[open_end..].find("</text>").map(|i| open_end + i) else {
            break;
        };
        let attributes = &rest[start + "<text".len()..open_end];
        let content = unescape(&rest[open_end + 1..close]);
        place(attributes, &content, prefix, &mut glyphs, &mut body);
        rest = &rest[close + "</text>".len()..];
    }
    body.push_str(rest);
    if glyphs.is_empty() {
        return body;
    }
    let mut defs = String::from("<defs>\n");
    for ((bold, glyph), path) in &glyphs {
        let _ = writeln!(
            defs,
            r#"<path id="{}" d="{path}"/>"#,
            glyph_id(prefix, *bold, *glyph)
        );
    }
    defs.push_str("</defs>\n");
    // The outlines are referenced with xlink:href, which SVG 1.1 viewers need declared.
    let root_end = body.find('>').map_or(0, |i| i + 1);
    let (root, after) = body.split_at(root_end);
    let root = if root.contains("xmlns:xlink") {
        root.to_string()
    } else {
        root.replacen(
            "<svg",
            r#"<svg xmlns:xlink="http://www.w3.org/1999/xlink""#,
            1,
        )
    };
    format!("{root}\n{defs}{after}")
}

fn glyph_id(prefix: &str, bold: bool, glyph: u16) -> String {
    format!("{prefix}-{}{glyph}", if bold { "b" } else { "r" })
}

/// Writes the group that draws `content` with the `<text>` element's `attributes`.
fn place(
    attributes: &str,
    content: &str,
    prefix: &str,
    glyphs: &mut BTreeMap<(bool, u16), String>,
    out: &mut String,
) {
    let attribute = |name: &str| -> Option<&str> {
        let key = format!(" {name}=\"");
        let start = attributes.find(&key)? + key.len();
        let end = attributes[start..].find('"')? + start;
        Some(&attributes[start..end])
    };
    let number = |name: &str| attribute(name).and_then(|v| v.parse::<f64>().ok());
    let (x, y, size) = (
        number("x").unwrap_or(0.0),
        number("y").unwrap_or(0.0),
        number("font-size").unwrap_or(12.0),
    );
    let bold = attribute("font-weight") == Some("bold");
    let face = face(bold);
    let em = f64::from(face.units_per_em());
    let scale = size / em;
    // SVG collapses white space and trims it at the ends (xml:space="default").
    let text = content.split_whitespace().collect::<Vec<_>>().join(" ");
    let (laid, pen) = lay_out(face, &text);
    let width = pen * scale;
    let left = match attribute("text-anchor") {
        Some("middle") => x - width / 2.0,
        Some("end") => x - width,
        _ => x,
    };
    let x_height = f64::from(face.x_height().unwrap_or(1120)) / em * size;
    let baseline = y + match attribute("dy") {
        Some(dy) if dy.ends_with("em") => dy[..dy.len() - 2].parse::<f64>().unwrap_or(0.0) * size,
        Some(dy) if dy.ends_with("ex") => {
            dy[..dy.len() - 2].parse::<f64>().unwrap_or(0.0) * x_height
        }
        _ => 0.0,
    };
    let _ = write!(
        out,
        r#"<g aria-label="{}" fill="{}" opacity="{}""#,
        escape(&text),
        attribute("fill").unwrap_or("#000000"),
        attribute("opacity").unwrap_or("1")
    );
    if let Some(transform) = attribute("transform") {
        let _ = write!(out, r#" transform="{transform}""#);
    }
    out.push('>');
    for (glyph, at) in laid {
        let Some(path) = outline(face, glyph) else {
            continue; // a space: nothing to draw
        };
        glyphs.entry((bold, glyph)).or_insert(path);
        let _ = write!(
            out,
            r##"<use xlink:href="#{}" transform="matrix({} 0 0 {} {} {})"/>"##,
            glyph_id(prefix, bold, glyph),
            decimals(scale, 8),
            decimals(-scale, 8),
            decimals(left + at * scale, 3),
            decimals(baseline, 3)
        );
    }
    out.push_str("</g>");
}

/// Each glyph of `text` and where it starts, in font units from the text's start, and where
/// the text ends.
fn lay_out(face: &Face<'_>, text: &str) -> (Vec<(u16, f64)>, f64) {
    let mut pen = 0.0;
    let mut laid = Vec::new();
    for c in text.chars() {
        let glyph = face.glyph_index(c).unwrap_or(GlyphId(0));
        laid.push((glyph.0, pen));
        pen += f64::from(face.glyph_hor_advance(glyph).unwrap_or(0));
    }
    (laid, pen)
}

/// The width of `text` drawn `size` pixels high (bold or not), in pixels, as [`outline_text`]
/// lays it out: what a picture needs to size a box or wrap a label so that nothing is cut.
pub fn text_width(text: &str, size: f64, bold: bool) -> f64 {
    let face = face(bold);
    lay_out(face, text).1 * size / f64::from(face.units_per_em())
}

/// A glyph's outline as SVG path data in font units (y up); `None` for an empty glyph.
fn outline(face: &Face<'_>, glyph: u16) -> Option<String> {
    let mut path = PathData(String::new());
    face.outline_glyph(GlyphId(glyph), &mut path)?;
    Some(path.0)
}

struct PathData(String);

impl OutlineBuilder for PathData {
    fn move_to(&mut self, x: f32, y: f32) {
        let _ = write!(self.0, "M{} {}", x, y);
    }
    fn line_to(&mut self, x: f32, y: f32) {
        let _ = write!(self.0, "L{} {}", x, y);
    }
    fn quad_to(&mut self, x1: f32, y1: f32, x: f32, y: f32) {
        let _ = write!(self.0, "Q{} {} {} {}", x1, y1, x, y);
    }
    fn curve_to(&mut self, x1: f32, y1: f32, x2: f32, y2: f32, x: f32, y: f32) {
        let _ = write!(self.0, "C{} {} {} {} {} {}", x1, y1, x2, y2, x, y);
    }
    fn close(&mut self) {
        self.0.push('Z');
    }
}

/// `value` with at most `places` decimals and no trailing zeros.
fn decimals(value: f64, places: usize) -> String {
    let text = format!("{value:.places$}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A label centred at x = 100 is laid out on the font's advance widths: "10" in DejaVu
    /// Sans is two digits of 1303 units each on a 2048-unit em, so at 20 px it is 25.449 px
    /// wide and starts at 87.275, its "0" at 100; `dy="0.76em"` puts the baseline 15.2 px
    /// below y; the scale is 20 / 2048.
    #[test]
    fn text_is_placed_as_a_browser_places_it() {
        let svg = r##"<svg width="200" height="100">
<text x="100" y="50" dy="0.76em" text-anchor="middle" font-family="sans-serif" font-size="20" opacity="1" fill="#FF0000"> 10 </text>
</svg>"##;
        let outlined = outline_text(svg, "t");
        assert!(!outlined.contains("<text"), "{outlined}");
        assert!(outlined.contains(r#"xmlns:xlink="http://www.w3.org/1999/xlink""#));
        let one = face(false).glyph_index('1').unwrap().0;
        let zero = face(false).glyph_index('0').unwrap().0;
        assert_eq!(face(false).glyph_hor_advance(GlyphId(one)), Some(1303));
        assert!(outlined.contains(&format!(
            r##"<g aria-label="10" fill="#FF0000" opacity="1"><use xlink:href="#t-r{one}" transform="matrix(0.00976562 0 0 -0.00976562 87.275 65.2)"/><use xlink:href="#t-r{zero}" transform="matrix(0.00976562 0 0 -0.00976562 100 65.2)"/></g>"##
        )), "{outlined}");
        assert_eq!(outlined.matches("<path id=").count(), 2);
        assert!((text_width("10", 20.0, false) - 25.449).abs() < 1e-3);
    }

    /// Bold text uses the bold face's outlines, rotation is kept, entities are read, and a
    /// picture without text is returned as it was.
    #[test]
    fn bold_rotated_and_escaped_text() {
        let svg = r##"<svg><text x="0" y="0" text-anchor="end" font-family="sans-serif" font-size="10" font-weight="bold" transform="rotate(270, 0, 0)" opacity="1" fill="#000000">a &amp; b
</text></svg>"##;
        let outlined = outline_text(svg, "t");
        assert!(outlined.contains(r#"aria-label="a &amp; b""#), "{outlined}");
        assert!(outlined.contains(r#"transform="rotate(270, 0, 0)""#));
        assert!(outlined.contains("#t-b"));
        assert!(!outlined.contains("#t-r"));
        assert_eq!(
            outline_text("<svg><rect/></svg>", "t"),
            "<svg><rect/></svg>"
        );
    }
}
