//! A small SVG writer: elements as text with escaped attributes, numbers
//! printed with at most two decimals so files stay small and diffable.
//!
//! Hand-written rather than a plotting crate: the plots need per-element
//! classes and `data-*` attributes (what a curve or bar stands for, in ns),
//! which make them checkable by tests and scriptable by users, and text needs
//! no font metrics beyond an estimate (the viewer lays it out).

use std::fmt::Write;

/// Width of one character of the 11 px sans-serif labels, as an estimate for
/// deciding whether a label fits (the viewer does the real layout).
pub const CHAR_W: f64 = 6.2;

/// `v` with at most two decimals and no trailing zeros (`12`, `3.5`, `-0.25`).
pub fn num(v: f64) -> String {
    let r = (v * 100.0).round() / 100.0;
    let r = if r == 0.0 { 0.0 } else { r }; // no "-0"
    let s = format!("{r:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `text` safe inside an attribute value or element content.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// An SVG document under construction.
pub struct Doc {
    out: String,
}

impl Doc {
    /// A `width` × `height` document with a white background and the
    /// stylesheet the plots share.
    pub fn new(width: f64, height: f64) -> Doc {
        let mut out = String::new();
        let (w, h) = (num(width), num(height));
        let _ = writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Verdana, Arial, sans-serif" font-size="11">"#
        );
        out.push_str(
            "<style>\n\
             .grid{stroke:#e3e3e3;stroke-width:1}\n\
             .grid-minor{stroke:#f2f2f2;stroke-width:1}\n\
             .axis{stroke:#444;stroke-width:1}\n\
             .title{font-size:13px;font-weight:bold}\n\
             .note{fill:#555}\n\
             </style>\n",
        );
        let _ = writeln!(out, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
        Doc { out }
    }

    /// Append raw markup (already escaped).
    pub fn raw(&mut self, markup: &str) {
        self.out.push_str(markup);
        self.out.push('\n');
    }

    /// A text element at (`x`, `y`); `anchor` is `start`, `middle` or `end`;
    /// `attrs` are extra attributes (already escaped).
    pub fn text(&mut self, x: f64, y: f64, anchor: &str, attrs: &str, text: &str) {
        let _ = writeln!(
            self.out,
            r#"<text x="{}" y="{}" text-anchor="{anchor}"{}{attrs}>{}</text>"#,
            num(x),
            num(y),
            if attrs.is_empty() { "" } else { " " },
            escape(text)
        );
    }

    /// A line from (`x1`, `y1`) to (`x2`, `y2`) with `attrs` (already escaped).
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, attrs: &str) {
        let _ = writeln!(
            self.out,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" {attrs}/>"#,
            num(x1),
            num(y1),
            num(x2),
            num(y2)
        );
    }

    /// A rectangle with `attrs` (already escaped).
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, attrs: &str) {
        let _ = writeln!(
            self.out,
            r#"<rect x="{}" y="{}" width="{}" height="{}" {attrs}/>"#,
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0))
        );
    }

    /// The finished document.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// Distinct colours for curves and tasks (Tableau 10), in order.
pub const PALETTE: [&str; 10] =
    ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short_and_escaping_covers_markup() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(3.499), "3.5");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(-0.25), "-0.25");
        assert_eq!(escape(r#"a<b & "c">'"#), "a&lt;b &amp; &quot;c&quot;&gt;&apos;");
    }
}
