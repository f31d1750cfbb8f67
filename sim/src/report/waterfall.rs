//! The report's waterfalls: a few chosen calls (the slowest, a failed one, one answered degraded: `run::traces::Pick`)
//! drawn from the same spans as `traces.otlp.json` ([`super::traces::spans`]), the way Jaeger draws a trace: a row per
//! span, indented by depth (agent, gateway call, attempt, server), bars on the call's own time axis, with the fault
//! windows that overlap it shaded behind. Inline SVG, no script, written from the run alone: byte-identical per seed.

use std::fmt::Write as _;
use std::time::Duration;

use mcpstorm_core::observe::trace::attr;

use super::html::{escape, figure};
use super::num::grouped;
use super::traces::{Service, Span, Value, spans};
use crate::run::traces::CallTrace;
use crate::run::{FaultWindow, RunData};

/// The page's section id, and the SVG's class (the Chromium check finds the waterfalls by it).
pub(crate) const WATERFALL: &str = "waterfall";

const WIDTH: f64 = 1000.0;
const LABELS: f64 = 260.0;
const PLOT: f64 = WIDTH - LABELS - 20.0;
const ROW: f64 = 22.0;
const TOP: f64 = 30.0;
const AXIS: f64 = 28.0;

/// The section's body: a caption and a waterfall per chosen call.
pub(crate) fn section(run: &RunData) -> String {
    if run.traces.shown.is_empty() {
        return "<p>No calls were made.</p>\n".to_owned();
    }
    let mut s = String::from(
        "<p>Calls chosen among all of the run's, each as its trace: the agent's call, each call it made through its \
         gateway, the gateway's attempts (replica, retry, breaker decision, outcome) and the server's answer, on the \
         call's own time axis; shaded: fault windows. Green ended well, red failed, orange: the gateway declined and \
         answered degraded. The same spans as <code>traces.otlp.json</code> (<code>[report] traces</code>).</p>\n",
    );
    for (pick, call) in &run.traces.shown {
        let latency = call.end.saturating_sub(call.start);
        let caption = format!(
            "{}: {} from {}, logical call {}, {} ms ({}), started {} s into the run",
            pick.label(),
            if call.tool.is_empty() { "a call" } else { &call.tool },
            if call.load_host.is_empty() { "an agent" } else { &call.load_host },
            call.logical,
            grouped(latency.as_millis() as u64),
            call.outcome,
            fixed3(call.start),
        );
        s.push_str(&figure(&svg(run, call), &caption));
    }
    s
}

/// Seconds with three decimals, from whole milliseconds.
fn fixed3(d: Duration) -> String {
    let ms = d.as_millis();
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// Milliseconds with up to three decimals, from whole microseconds.
fn micros_as_ms(d: Duration) -> String {
    let us = d.as_micros();
    let frac = format!("{:03}", us % 1000);
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() { format!("{}", us / 1000) } else { format!("{}.{frac}", us / 1000) }
}

/// The tick spacing: 1, 2 or 5 times a power of ten ms, about five ticks over `span_ms`.
fn tick_ms(span_ms: f64) -> f64 {
    let raw = (span_ms / 5.0).max(0.001);
    let pow = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * pow).find(|&t| t >= raw).unwrap_or(10.0 * pow)
}

fn depth(s: &Span) -> usize {
    match (&s.service, s.attribute(attr::ATTEMPT_REPLICA)) {
        (Service::Agent(_), _) => 0,
        (Service::Gateway(_), None) => 1,
        (Service::Gateway(_), Some(_)) => 2,
        (Service::Server(_), _) => 3,
    }
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Str(s)) => s.clone(),
        Some(Value::Int(n)) => n.to_string(),
        None => String::new(),
    }
}

/// A row's label and its bar's colour.
fn label(s: &Span, gateway_calls: &mut u32) -> (String, &'static str) {
    let declined = s.attribute(attr::DEGRADED_REASON).map(|v| text(Some(v)));
    let degraded = text(s.attribute(attr::CALL_OUTCOME)) == "degraded";
    let colour = match (declined.is_some() || degraded, s.error) {
        (true, _) => "#e8590c",
        (false, true) => "#c92a2a",
        (false, false) => "#2f9e44",
    };
    let label = match (&s.service, depth(s)) {
        (Service::Agent(host), _) => format!("agent on {host}"),
        (Service::Gateway(_), 1) => {
            *gateway_calls += 1;
            match declined {
                Some(reason) => format!("gateway call {gateway_calls}: declined, {reason}"),
                None => format!("gateway call {gateway_calls}"),
            }
        }
        (Service::Gateway(_), _) => {
            let by = text(s.attribute(attr::ATTEMPT_RETRY_BY));
            let by = if by.is_empty() { String::new() } else { format!(", {by} retry") };
            format!(
                "attempt {} → {}{by}: {}",
                text(s.attribute(attr::ATTEMPT_RETRY)),
                text(s.attribute(attr::ATTEMPT_REPLICA)),
                text(s.attribute(attr::ERROR_TYPE).or(s.attribute(attr::ATTEMPT_OUTCOME)))
            )
        }
        (Service::Server(host), _) => format!("server {host}"),
    };
    (label, colour)
}

/// One call's waterfall.
fn svg(run: &RunData, call: &CallTrace) -> String {
    let spans = spans(run.seed, call);
    let t0 = call.start.as_secs_f64() * 1000.0;
    let span_ms = (call.end.as_secs_f64() * 1000.0 - t0).max(1.0);
    let x = |at: Duration| LABELS + ((at.as_secs_f64() * 1000.0 - t0) / span_ms * PLOT).clamp(0.0, PLOT);
    let height = TOP + ROW * spans.len() as f64 + AXIS;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg class=\"{WATERFALL}\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" \
         font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(s, "<rect width=\"{WIDTH}\" height=\"{height}\" fill=\"#ffffff\"/>");
    faults(&mut s, &run.faults, t0, span_ms, height);
    let plot_bottom = TOP + ROW * spans.len() as f64;
    let tick = tick_ms(span_ms);
    let mut k = 0.0;
    while k <= span_ms + 1e-9 {
        let tx = LABELS + k / span_ms * PLOT;
        let _ = writeln!(
            s,
            "<line x1=\"{tx:.1}\" y1=\"{TOP}\" x2=\"{tx:.1}\" y2=\"{plot_bottom}\" stroke=\"#dee2e6\"/>\
             <text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#495057\">+{} ms</text>",
            plot_bottom + 16.0,
            grouped(k.round() as u64)
        );
        k += tick;
    }
    let mut gateway_calls = 0;
    for (i, span) in spans.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let (text_label, colour) = label(span, &mut gateway_calls);
        let indent = 6.0 + 14.0 * depth(span) as f64;
        let (x0, x1) = (x(span.start), x(span.end));
        let w = (x1 - x0).max(1.5);
        let dur = span.end.saturating_sub(span.start);
        let _ = writeln!(
            s,
            "<text x=\"{indent:.1}\" y=\"{:.1}\" fill=\"#212529\">{}</text>\
             <rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{colour}\">\
             <title>{}: {} ms</title></rect>",
            y + 15.0,
            escape(&text_label),
            y + 4.0,
            ROW - 8.0,
            escape(&text_label),
            micros_as_ms(dur),
        );
    }
    s.push_str("</svg>\n");
    s
}

/// The fault windows that overlap the call, shaded from top to bottom and labelled at the top.
fn faults(s: &mut String, faults: &[FaultWindow], t0: f64, span_ms: f64, height: f64) {
    let t1 = t0 + span_ms;
    for f in faults {
        let (a, b) = (f.start_s * 1000.0, f.end_s * 1000.0);
        if b <= t0 || a >= t1 {
            continue;
        }
        let xa = LABELS + ((a - t0) / span_ms * PLOT).clamp(0.0, PLOT);
        let xb = LABELS + ((b - t0) / span_ms * PLOT).clamp(0.0, PLOT);
        let _ = writeln!(
            s,
            "<rect class=\"fault\" x=\"{xa:.1}\" y=\"0\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#fff3bf\"/>\
             <text x=\"{:.1}\" y=\"18\" fill=\"#946200\">{}</text>",
            (xb - xa).max(1.0),
            height - AXIS + 4.0,
            xa + 4.0,
            escape(&f.label)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RetryBy;
    use crate::run::traces::{AttemptTrace, GatewayCall, Pick, Traces};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn run() -> RunData {
        let attempt = AttemptTrace {
            replica: "db-0".into(),
            retry: 0,
            by: RetryBy::First,
            sent: ms(20_001),
            end: ms(21_001),
            status: "timeout",
            code: Some("deadline_exceeded".into()),
            answered: false,
        };
        let call = CallTrace {
            logical: 9,
            load_host: "load-0".into(),
            tool: "get".into(),
            start: ms(20_000),
            end: ms(21_500),
            outcome: "degraded",
            gateway_calls: vec![
                GatewayCall { start: ms(20_000), end: ms(21_001), declined: None, attempts: vec![attempt] },
                GatewayCall { start: ms(21_001), end: ms(21_500), declined: Some("breaker_open"), attempts: vec![] },
            ],
        };
        let mut run = blank();
        run.seed = 7;
        run.faults = vec![FaultWindow { label: "latency_spike <db>".into(), start_s: 20.0, end_s: 40.0 }];
        run.traces = Traces { kept: None, shown: vec![(Pick::Degraded, call)] };
        run
    }

    fn blank() -> RunData {
        RunData {
            scenario: String::new(),
            description: String::new(),
            seed: 0,
            profile: String::new(),
            formula: String::new(),
            sim_seconds: 60.0,
            seconds: vec![],
            events: vec![],
            faults: vec![],
            totals: Default::default(),
            checks: vec![],
            reproduce: String::new(),
            audit: Default::default(),
            traces: Default::default(),
            mode: Default::default(),
            attempts_recorded: true,
        }
    }

    #[test]
    fn a_degraded_call_shows_its_attempt_its_decline_and_the_fault() {
        let html = section(&run());
        assert_eq!(html.matches("<svg role=\"img\"").count(), 1);
        assert_eq!(html.matches("class=\"waterfall\"").count(), 1);
        for needle in [
            "agent on load-0",
            "gateway call 1",
            "attempt 0 → db-0: deadline_exceeded",
            "gateway call 2: declined, breaker_open",
            "latency_spike &lt;db&gt;",
            "a call answered degraded: get from load-0, logical call 9, 1,500 ms (degraded)",
        ] {
            assert!(html.contains(needle), "{needle:?} not in {html}");
        }
        assert_eq!(html.matches("fill=\"#e8590c\"").count(), 2, "the declined gateway call and the agent's call");
        assert!(!html.contains("http"), "nothing to fetch");
        assert_eq!(html, section(&run()));
    }

    #[test]
    fn ticks_are_one_two_or_five() {
        assert_eq!(tick_ms(1500.0), 500.0);
        assert_eq!(tick_ms(90.0), 20.0);
        assert_eq!(tick_ms(5.0), 1.0);
    }
}
