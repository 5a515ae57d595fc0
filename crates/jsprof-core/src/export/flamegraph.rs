//! An SVG flame graph drawn by inferno from the folded stacks of [`super::collapsed`], each frame
//! coloured by the kind of code it is (app, dependency, node, native; VM pseudo-frames apart) and its
//! tooltip extended with `kind: dependency, package: lodash` inside the count's parentheses:
//! `chunk (/app/node_modules/lodash/chunk.js:5:17) (2 samples, 18.18%; kind: dependency, package: lodash)`
//! (the search box finds packages too).

use std::collections::HashMap;

use inferno::flamegraph::{self, color::PaletteMap, Options};

use super::collapsed::folded_counts;
use super::{frame_label, kind_name, Pseudo};
use crate::attribution::Kind;
use crate::error::{Error, Result};
use crate::trace::ProfilerTrace;

#[derive(Debug, Clone, Default)]
pub struct FlameGraphOptions {
    /// Defaults to "Flame Graph".
    pub title: Option<String>,
    /// Defaults to a colour legend.
    pub subtitle: Option<String>,
    /// Image width in px; defaults to 1200. Must be 10..=100000.
    pub width: Option<u32>,
}

/// The legend shown as the default subtitle.
pub const LEGEND: &str =
    "orange: app · blue: dependency · green: node · purple: native · red: GC · grey: idle/VM";

/// What colours and tooltips tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Group {
    Kind(Kind),
    Pseudo(Pseudo),
}

/// A colour in the band of its group, varied by a hash of the frame label so neighbours differ.
pub fn colour(group: Group, label: &str) -> (u8, u8, u8) {
    let t = fnv1a(label) as f64 / u64::MAX as f64; // 0..=1
    let lerp = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t).round() as u8;
    match group {
        Group::Kind(Kind::App) => (lerp(235, 250), lerp(125, 175), lerp(40, 70)),
        Group::Kind(Kind::Dependency) => (lerp(70, 110), lerp(125, 165), lerp(215, 245)),
        Group::Kind(Kind::Node) => (lerp(85, 125), lerp(185, 215), lerp(85, 120)),
        Group::Kind(Kind::Native) => (lerp(160, 185), lerp(130, 155), lerp(200, 225)),
        Group::Pseudo(Pseudo::GarbageCollector) => (215, 70, 70),
        Group::Pseudo(Pseudo::Program) => (165, 165, 165),
        Group::Pseudo(Pseudo::Idle) => (215, 215, 215),
    }
}

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The tooltip line for a group.
fn tooltip(group: Group, package: Option<&str>) -> String {
    match (group, package) {
        (Group::Kind(k), Some(p)) => format!("kind: {}, package: {p}", kind_name(k)),
        (Group::Kind(k), None) => format!("kind: {}", kind_name(k)),
        (Group::Pseudo(Pseudo::GarbageCollector), _) => "kind: vm, garbage collector".into(),
        (Group::Pseudo(Pseudo::Idle), _) => "kind: idle".into(),
        (Group::Pseudo(Pseudo::Program), _) => "kind: vm, native or VM work outside JS".into(),
    }
}

pub fn to_flame_graph(trace: &ProfilerTrace, options: &FlameGraphOptions) -> Result<String> {
    if let Some(w) = options.width {
        if !(10..=100_000).contains(&w) {
            return Err(Error::invalid(format!(
                "options.width must be between 10 and 100000 px, got {w}"
            )));
        }
    }
    // Label -> (group, tooltip line). Labels are what the folded stacks name frames by.
    let attributions = super::frame_attributions(trace);
    let mut info: HashMap<String, (Group, String)> = HashMap::new();
    for (f, a) in attributions.iter().enumerate() {
        let label = super::collapsed::sanitize(&frame_label(trace, f as u32));
        let group = Group::Kind(a.kind);
        info.entry(label)
            .or_insert_with(|| (group, tooltip(group, a.package.as_deref())));
    }
    for p in Pseudo::ALL {
        info.entry(p.name().to_owned())
            .or_insert_with(|| (Group::Pseudo(p), tooltip(Group::Pseudo(p), None)));
    }
    let mut palette = PaletteMap::default();
    for (label, (group, _)) in &info {
        let (r, g, b) = colour(*group, label);
        palette.insert(label, flamegraph::color::Color { r, g, b });
    }
    // The root frame ("all") is named "" by inferno.
    palette.insert(
        "",
        flamegraph::color::Color {
            r: 200,
            g: 200,
            b: 200,
        },
    );
    let lines: Vec<String> = folded_counts(trace)
        .into_iter()
        .map(|(stack, n)| format!("{stack} {n}"))
        .collect();
    let mut opts = Options::default();
    opts.title = options.title.clone().unwrap_or_else(|| "Flame Graph".into());
    opts.subtitle = Some(options.subtitle.clone().unwrap_or_else(|| LEGEND.into()));
    opts.image_width = options.width.map(|w| w as usize);
    opts.count_name = "samples".into();
    opts.deterministic = true;
    // Long labels keep their start (the function name) and lose the end of their path.
    opts.text_truncate_direction = flamegraph::TextTruncateDirection::Right;
    opts.name_type = "Function:".into();
    opts.palette_map = Some(&mut palette);
    let mut svg = Vec::new();
    let drawn = flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut svg);
    if let Err(e) = drawn {
        // With no samples inferno still writes a valid SVG that says so; anything else is a real failure.
        if !lines.is_empty() || svg.is_empty() {
            return Err(Error::invalid(format!(
                "inferno could not draw the flame graph: {e}"
            )));
        }
    }
    let svg =
        String::from_utf8(svg).map_err(|e| Error::invalid(format!("inferno wrote invalid UTF-8: {e}")))?;
    Ok(add_tooltips(&svg, &info))
}

/// Adds each frame's tooltip text to its `<title>` (`label (N samples, P%)`). Labels have no `(` issue:
/// the lookup key is everything before the last ` (`, and the tooltip texts contain no parentheses.
fn add_tooltips(svg: &str, info: &HashMap<String, (Group, String)>) -> String {
    const OPEN: &str = "<title>";
    const CLOSE: &str = "</title>";
    let mut out = String::with_capacity(svg.len() + svg.len() / 4);
    let mut rest = svg;
    while let Some(start) = rest.find(OPEN) {
        let body_start = start + OPEN.len();
        let Some(len) = rest[body_start..].find(CLOSE) else {
            break;
        };
        out.push_str(&rest[..body_start]);
        let body = &rest[body_start..body_start + len];
        let line = quick_xml::escape::unescape(body).ok().and_then(|text| {
            let cut = text.rfind(" (")?;
            info.get(&text[..cut]).map(|(_, line)| line.as_str())
        });
        match line {
            // Inside the count's parentheses: inferno's script shows the title minus its last
            // parenthesised group as the frame's text, so the text stays the bare label.
            Some(line) if body.ends_with(')') => {
                out.push_str(&body[..body.len() - 1]);
                out.push_str("; ");
                out.push_str(&quick_xml::escape::escape(line));
                out.push(')');
            }
            _ => out.push_str(body),
        }
        rest = &rest[body_start + len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::tests::sample_trace;

    #[test]
    fn draws_frames_with_kind_colours_and_tooltips() {
        let svg = to_flame_graph(
            &sample_trace(),
            &FlameGraphOptions {
                title: Some("T <1>".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(svg.starts_with("<?xml"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("T &lt;1&gt;"));
        assert!(svg.contains("<title>work (/app/main.js:10:1) (3 samples, 33.33%; kind: app)</title>"));
        assert!(svg
            .contains("<title>(garbage collector) (2 samples, 22.22%; kind: vm, garbage collector)</title>"));
        assert!(svg.contains("<title>all (9 samples, 100%)</title>"));
        let (r, g, b) = colour(Group::Pseudo(Pseudo::GarbageCollector), "");
        assert!(svg.contains(&format!("fill=\"rgb({r},{g},{b})\"")));
        let (r, g, b) = colour(Group::Kind(Kind::App), "main (/app/main.js:1:1)");
        assert!(svg.contains(&format!("fill=\"rgb({r},{g},{b})\"")));
    }

    #[test]
    fn kind_bands_do_not_overlap() {
        let kinds = [Kind::App, Kind::Dependency, Kind::Node, Kind::Native];
        for (i, a) in kinds.iter().enumerate() {
            for b in &kinds[i + 1..] {
                for s in ["a", "b", "c", "longer label", ""] {
                    for u in ["x", "y", "zz", ""] {
                        assert_ne!(colour(Group::Kind(*a), s), colour(Group::Kind(*b), u));
                    }
                }
            }
        }
    }

    #[test]
    fn an_empty_trace_still_gives_an_svg_and_bad_widths_are_rejected() {
        let svg = to_flame_graph(&ProfilerTrace::default(), &FlameGraphOptions::default()).unwrap();
        assert!(svg.contains("<svg"));
        let e = to_flame_graph(
            &sample_trace(),
            &FlameGraphOptions {
                width: Some(1),
                ..Default::default()
            },
        );
        assert!(e.unwrap_err().message.contains("width"));
    }
}
