//! What every `report.html` shares: escaping, the page around a body (with its one inline stylesheet), inline SVG
//! figures, tables, verdict badges and a fault timeline.
//!
//! A report page is one self-contained file: no script, font, stylesheet or image is fetched from anywhere (the
//! plots are the run's own SVGs, inlined), so it opens the same offline, from a CI artifact or an attachment. Links
//! are relative, to the files beside it. Every piece of text that comes from a scenario, a server or the command
//! line goes through [`escape`]; the bytes depend only on the data (no clock, no absolute path added here), so the
//! same run gives the same page.

use std::fmt::Write as _;

use super::num::{finite, short};
use crate::run::FaultWindow;

/// The file name, in every command's report directory.
pub const REPORT_HTML: &str = "report.html";

/// `s` safe as HTML text and inside a quoted attribute.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The stylesheet, inline. System fonts only: a web font would be a request.
const STYLE: &str = "
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#212529;background:#fff;margin:0}
main{max-width:1240px;margin:0 auto;padding:16px 20px 48px}
h1{font-size:26px;margin:8px 0 4px}h2{font-size:20px;margin:28px 0 8px;border-bottom:1px solid #dee2e6}
h3{font-size:16px;margin:18px 0 6px}
.muted{color:#646a73}.desc{font-size:16px;margin:4px 0 8px}
nav a{margin-right:14px}
table{border-collapse:collapse;margin:6px 0 10px}
th,td{border:1px solid #dee2e6;padding:3px 9px;text-align:left;vertical-align:top}
th{background:#f1f3f5}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.badge{display:inline-block;padding:1px 8px;border-radius:4px;font-weight:600;color:#fff}
.pass{background:#1e8232}.fail{background:#c62828}
tr.failed td{background:#fdecea}td.differs{font-weight:600}
pre{background:#f8f9fa;border:1px solid #dee2e6;padding:10px;overflow-x:auto;white-space:pre-wrap}
figure{margin:10px 0}figure svg{display:block;max-width:100%;height:auto;border:1px solid #dee2e6}
.side{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.lane{position:relative;width:320px;height:14px;margin:4px 0;background:#f1f3f5;border-radius:3px}
.lane span{position:absolute;top:0;height:14px;min-width:2px;background:#f5a623;border-radius:3px}
details summary{cursor:pointer;font-weight:600}
";

/// A whole page: `title` and the `body` (already HTML), with the stylesheet.
pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" \
         content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n\
         <body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        escape(title)
    )
}

/// A figure: one of the run's own SVG files, inlined. The XML prologue and the namespace attribute go (HTML does not
/// need them, and the namespace is a URL that reads like a request); plotters has already escaped its text.
pub(crate) fn figure(svg: &str, caption: &str) -> String {
    let start = svg.find("<svg").unwrap_or(0);
    let svg = svg[start..].replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    let svg = svg.replacen("<svg ", &format!("<svg role=\"img\" aria-label=\"{}\" ", escape(caption)), 1);
    format!("<figure>\n{}\n<figcaption class=\"muted\">{}</figcaption>\n</figure>\n", svg.trim_end(), escape(caption))
}

/// One table cell.
pub(crate) enum Cell {
    /// Text, escaped, left-aligned.
    Text(String),
    /// A figure, escaped, right-aligned.
    Num(String),
    /// A figure that differs from the one beside it (a contrast run's), in bold.
    Differs(String),
    /// Markup built here (a badge, a link), inserted as it is.
    Html(String),
}

/// A table with a header row; `failed` marks rows to tint (a failed check, a failing seed).
pub(crate) fn table(head: &[&str], rows: Vec<(Vec<Cell>, bool)>) -> String {
    let mut s = String::from("<table>\n<tr>");
    for h in head {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s.push_str("</tr>\n");
    for (cells, failed) in rows {
        s.push_str(if failed { "<tr class=\"failed\">" } else { "<tr>" });
        for cell in cells {
            match cell {
                Cell::Text(t) => s.push_str(&format!("<td>{}</td>", escape(&t))),
                Cell::Num(t) => s.push_str(&format!("<td class=\"n\">{}</td>", escape(&t))),
                Cell::Differs(t) => s.push_str(&format!("<td class=\"n differs\">{}</td>", escape(&t))),
                Cell::Html(h) => s.push_str(&format!("<td>{h}</td>")),
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

/// `PASS` on green or `FAIL` on red.
pub(crate) fn badge(passed: bool) -> String {
    if passed {
        "<span class=\"badge pass\">PASS</span>".to_owned()
    } else {
        "<span class=\"badge fail\">FAIL</span>".to_owned()
    }
}

/// A relative link to a file beside the page.
pub(crate) fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", escape(href), escape(text))
}

/// `text` as a block of preformatted text (a command, a scenario file).
pub(crate) fn pre(text: &str) -> String {
    format!("<pre>{}</pre>\n", escape(text.trim_end()))
}

/// A section heading with an anchor the page's navigation links to.
pub(crate) fn section(id: &str, title: &str) -> String {
    format!("<h2 id=\"{id}\">{}</h2>\n", escape(title))
}

/// A fault window's bar on a lane spanning `0..run_s` seconds (at least a sliver, so an instant fault shows).
pub(crate) fn lane(f: &FaultWindow, run_s: f64) -> String {
    let span = finite(run_s).max(f64::MIN_POSITIVE);
    let left = (finite(f.start_s) / span * 100.0).clamp(0.0, 100.0);
    let width = ((finite(f.end_s) - finite(f.start_s)) / span * 100.0).clamp(0.0, 100.0 - left);
    format!(
        "<div class=\"lane\" title=\"{} s to {} s\"><span style=\"left:{}%;width:{}%\"></span></div>",
        short(finite(f.start_s), 3),
        short(finite(f.end_s), 3),
        short(left, 2),
        short(width, 2)
    )
}

/// Every fault window in a table, with its place on the run's timeline (`run_s` seconds long).
pub(crate) fn fault_table(faults: &[FaultWindow], run_s: f64) -> String {
    if faults.is_empty() {
        return "<p>No faults injected.</p>\n".to_owned();
    }
    let rows = faults
        .iter()
        .map(|f| {
            let (start, end) = (finite(f.start_s), finite(f.end_s));
            let cells = vec![
                Cell::Text(f.label.clone()),
                Cell::Num(format!("{} s", short(start, 3))),
                Cell::Num(format!("{} s", short(end, 3))),
                Cell::Num(format!("{} s", short(end - start, 3))),
                Cell::Html(lane(f, run_s)),
            ];
            (cells, false)
        })
        .collect();
    table(&["fault", "start", "end", "duration", &format!("timeline (0 to {} s)", short(finite(run_s), 3))], rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_text_comes_out_inert() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        let t = table(&["a<b"], vec![(vec![Cell::Text("<img src=x onerror=1>".into())], true)]);
        assert!(!t.contains("<img") && t.contains("&lt;img src=x") && t.contains("class=\"failed\""), "{t}");
        let l = link("failures/1-\"x\".toml", "<b>");
        assert_eq!(l, "<a href=\"failures/1-&quot;x&quot;.toml\">&lt;b&gt;</a>");
    }

    #[test]
    fn an_inlined_figure_names_no_url() {
        let svg = "<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"10\" viewBox=\"0 0 10 10\" \
                   xmlns=\"http://www.w3.org/2000/svg\">\n<rect/>\n</svg>\n";
        let f = figure(svg, "qps & p99");
        assert!(!f.contains("http") && !f.contains("<?xml"), "{f}");
        assert!(f.starts_with("<figure>\n<svg role=\"img\" aria-label=\"qps &amp; p99\" width=\"10\""), "{f}");
    }

    #[test]
    fn a_fault_lane_stays_inside_the_run() {
        let f = FaultWindow { label: "hang db".into(), start_s: 50.0, end_s: 90.0 };
        assert!(lane(&f, 60.0).contains("left:83.33%;width:16.67%"), "{}", lane(&f, 60.0));
        let instant = FaultWindow { label: "crash".into(), start_s: 0.0, end_s: 0.0 };
        assert!(lane(&instant, 0.0).contains("left:0%;width:0%"));
    }
}
