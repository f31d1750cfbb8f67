//! The report writers against synthetic runs: files, exact CSV text, JSON shape, byte-identical output, PNG content,
//! and edge cases (no rows, no completed calls, non-finite values, fault windows past the end).

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpstorm_sim::report::{ReportError, console_summary, write_run, write_sweep};
use mcpstorm_sim::run::{
    CheckResult, EventRow, FaultWindow, RunData, SecondRow, SweepData, SweepRow, Totals, WallClock,
};
use mcpstorm_sim::scenario::CallsMode;

/// A fresh, empty directory under cargo's per-test-target temp dir.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Cheap deterministic jitter in [0, 1).
fn jitter(t: u64, salt: u64) -> f64 {
    let x = (t.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xBF58_476D_1CE4_E5B9)) >> 11;
    (x % 1000) as f64 / 1000.0
}

/// 60 simulated seconds at ~100 calls/s; a latency spike on `api` from 20 to 35 s makes P99 rise and errors appear,
/// an error burst overlaps it, and a partition starts at 50 s and runs past the end.
pub(crate) fn storm_run() -> RunData {
    let mut seconds = Vec::new();
    for t in 0..60u64 {
        let spike = (20..35).contains(&t);
        let burst = (28..40).contains(&t);
        let offered = 95 + (jitter(t, 1) * 10.0) as u64;
        let err_transport = if spike { 8 + (jitter(t, 2) * 6.0) as u64 } else { 0 };
        let err_tool = if burst { 5 + (jitter(t, 3) * 4.0) as u64 } else { 0 };
        let err_protocol = u64::from(t == 31);
        let completed = if spike { offered - 12 } else { offered };
        let errors = err_transport + err_tool + err_protocol;
        let ok = completed.saturating_sub(errors);
        let base = 10.0 + jitter(t, 4) * 4.0;
        let (p50, p95, p99) = if spike {
            (180.0 + base, 700.0 + base * 10.0, 1400.0 + base * 20.0)
        } else {
            (base, base * 2.5, base * 4.0)
        };
        let retries = errors * 2;
        seconds.push(SecondRow {
            t,
            offered,
            completed,
            ok,
            err_protocol,
            err_lifecycle: 0,
            err_transport,
            err_local: 0,
            err_tool,
            p50_ms: p50,
            p95_ms: p95,
            p99_ms: p99,
            in_flight: if spike { 60 } else { 4 },
            attempts: offered + retries,
            retries,
            ..SecondRow::default()
        });
    }
    let sum = |f: fn(&SecondRow) -> u64| seconds.iter().map(f).sum::<u64>();
    let (offered, completed, ok, attempts, retries) =
        (sum(|r| r.offered), sum(|r| r.completed), sum(|r| r.ok), sum(|r| r.attempts), sum(|r| r.retries));
    let errors = sum(SecondRow::errors);
    let totals = Totals {
        offered,
        completed,
        ok,
        errors,
        lost: 0,
        attempts,
        retries,
        amplification: attempts as f64 / offered as f64,
        error_rate: errors as f64 / completed as f64,
        p50_ms: 12.5,
        p95_ms: 640.25,
        p99_ms: 1480.125,
        p999_ms: 1702.0,
        max_ms: 1905.5,
        ok_per_s: ok as f64 / 60.0,
        ..Totals::default()
    };
    RunData {
        attempts_recorded: true,
        scenario: "retry_storm".into(),
        description: "Agents retry immediately on every error; one server's tool suffers a latency spike.".into(),
        seed: 42,
        profile: "default".into(),
        formula: "health_weighted".into(),
        sim_seconds: 60.0,
        seconds,
        events: vec![
            EventRow {
                t_ms: 20_000,
                kind: "fault_start".into(),
                target: "api".into(),
                detail: "latency_spike x20".into(),
            },
            EventRow { t_ms: 35_000, kind: "fault_end".into(), target: "api".into(), detail: "latency_spike".into() },
            EventRow {
                t_ms: 50_000,
                kind: "fault_start".into(),
                target: "api-2".into(),
                detail: "partition, \"gateway\" | api-2".into(),
            },
        ],
        faults: vec![
            FaultWindow { label: "latency_spike api".into(), start_s: 20.0, end_s: 35.0 },
            FaultWindow { label: "error_burst search".into(), start_s: 28.0, end_s: 40.0 },
            FaultWindow { label: "partition api-2".into(), start_s: 50.0, end_s: 75.0 },
        ],
        totals,
        checks: vec![
            CheckResult { name: "p99_ms".into(), limit: 500.0, actual: Some(1480.125), passed: false },
            CheckResult { name: "lost".into(), limit: 0.0, actual: Some(0.0), passed: true },
        ],
        reproduce: "mcpstorm sim scenarios/retry_storm.toml --seed 42".into(),
        audit: Default::default(),
        traces: Default::default(),
        mode: Default::default(),
    }
}

fn wall(ms: u64) -> WallClock {
    WallClock { wall: Duration::from_millis(ms), sim: Duration::from_secs(60) }
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn read_text(dir: &Path, name: &str) -> String {
    String::from_utf8(read(dir, name)).expect("report files are UTF-8")
}

const RUN_FILES: [&str; 12] = [
    "timeseries.csv",
    "events.csv",
    "summary.json",
    "qps.svg",
    "qps.png",
    "p99.svg",
    "p99.png",
    "errors.svg",
    "errors.png",
    "report.svg",
    "report.png",
    "summary.md",
];

#[test]
fn run_writes_every_file() {
    let dir = fresh_dir("every_file");
    let paths = write_run(&dir, &storm_run(), &wall(210), CallsMode::All).unwrap();
    let names: Vec<String> = paths.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, RUN_FILES);
    for p in &paths {
        assert!(p.starts_with(&dir));
        assert!(std::fs::metadata(p).unwrap().len() > 0, "{} is empty", p.display());
    }
}

#[test]
fn timeseries_header_and_known_row() {
    let dir = fresh_dir("timeseries");
    write_run(&dir, &storm_run(), &wall(210), CallsMode::All).unwrap();
    let csv = read_text(&dir, "timeseries.csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "t,offered,completed,ok,err_protocol,err_lifecycle,err_transport,err_local,err_tool,err_degraded,err_auth,p50_ms,p95_ms,\
         p99_ms,in_flight,attempts,retries,stale_sends,session_errors,auth_errors,rehandshakes,renewals,open_breakers,\
         degraded,misroutes,errors,error_rate,amplification"
    );
    assert_eq!(lines.len(), 61, "header + one row per second");
    let r = &storm_run().seconds[31];
    // Second 31: spike, burst and the one protocol error; values recomputed from the fixture, formatted by hand.
    let errors = r.err_transport + r.err_tool + 1;
    let expected = format!(
        "31,{},{},{},1,0,{},0,{},0,0,{:.3},{:.3},{:.3},60,{},{},0,0,0,0,0,0,0,0,{},{:.4},{:.4}",
        r.offered,
        r.completed,
        r.ok,
        r.err_transport,
        r.err_tool,
        r.p50_ms,
        r.p95_ms,
        r.p99_ms,
        r.attempts,
        r.retries,
        errors,
        errors as f64 / r.completed as f64,
        r.attempts as f64 / r.offered as f64
    );
    assert_eq!(lines[32], expected);
    // A quiet second, fully literal: jitter-free fields only.
    assert!(lines[1].starts_with("0,"));
    assert!(lines[1].contains(",0,0.0000,"), "no errors, rate 0: {}", lines[1]);
    assert!(csv.ends_with('\n') && !csv.contains('\r'));

    let events = read_text(&dir, "events.csv");
    assert_eq!(
        events,
        "t_ms,kind,target,detail\n20000,fault_start,api,latency_spike x20\n35000,fault_end,api,latency_spike\n\
         50000,fault_start,api-2,\"partition, \"\"gateway\"\" | api-2\"\n"
    );
}

#[test]
fn summary_json_parses_back_without_wall_clock() {
    let dir = fresh_dir("json");
    write_run(&dir, &storm_run(), &wall(210), CallsMode::All).unwrap();
    let text = read_text(&dir, "summary.json");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    for k in ["scenario", "description", "seed", "sim_seconds", "passed", "reproduce", "totals", "checks", "faults"] {
        assert!(keys.contains(&k), "missing {k}");
    }
    assert_eq!(v["scenario"], "retry_storm");
    assert_eq!(v["seed"], 42);
    assert_eq!(v["passed"], false);
    assert_eq!(v["reproduce"], "mcpstorm sim scenarios/retry_storm.toml --seed 42");
    assert_eq!(v["totals"]["p99_ms"], 1480.125);
    assert_eq!(v["totals"]["lost"], 0);
    assert_eq!(v["checks"][0]["name"], "p99_ms");
    assert_eq!(v["checks"][0]["passed"], false);
    assert_eq!(v["faults"][2]["end_s"], 75.0);
    // Stable field order: the file lists fields as declared.
    let pos = |k: &str| text.find(&format!("\"{k}\"")).unwrap();
    assert!(pos("scenario") < pos("seed") && pos("seed") < pos("totals") && pos("totals") < pos("checks"));
    for banned in ["wall", "speedup", "real time", "elapsed"] {
        assert!(!text.to_lowercase().contains(banned), "summary.json mentions {banned}");
    }
}

#[test]
fn summary_md_and_console() {
    let dir = fresh_dir("md");
    let run = storm_run();
    write_run(&dir, &run, &wall(200), CallsMode::All).unwrap();
    let md = read_text(&dir, "summary.md");
    assert!(md.starts_with("# retry_storm — FAIL\n"));
    assert!(md.contains("| p99_ms | 500 | 1480.125 | **FAIL** |"), "{md}");
    assert!(md.contains("| lost | 0 | 0 | PASS |"));
    assert!(md.contains("| P99.9 | 1,702 ms |"));
    assert!(md.contains("| latency_spike api | 20 s | 35 s | 15 s |"));
    assert!(md.contains("60 s simulated in 0.2 s wall (300x real time)"), "{md}");
    assert!(md.contains("mcpstorm sim scenarios/retry_storm.toml --seed 42"));
    assert!(md.contains("![QPS, latency and errors over simulated time](report.png)"));
    for f in ["qps.svg", "p99.png", "errors.svg", "timeseries.csv", "events.csv", "summary.json"] {
        assert!(md.contains(&format!("({f})")), "no link to {f}");
    }

    let console = console_summary(&run, &wall(200), &dir, CallsMode::All);
    assert!(console.lines().count() <= 24, "one screen:\n{console}");
    assert!(console.contains("retry_storm (seed 42) FAIL"));
    assert!(console.contains("FAIL  p99_ms: actual 1480.125, limit 500"));
    assert!(console.contains("PASS  lost: actual 0, limit 0"));
    assert!(console.contains("300x real time"));
    assert!(console.contains(&dir.display().to_string()));
    assert!(console.contains(&dir.join("report.png").display().to_string()));
    assert!(console.trim_end().ends_with("reproduce: mcpstorm sim scenarios/retry_storm.toml --seed 42"));
}

#[test]
fn writing_twice_is_byte_identical() {
    let (a, b) = (fresh_dir("twice_a"), fresh_dir("twice_b"));
    // Different wall clocks: only summary.md may differ.
    write_run(&a, &storm_run(), &wall(210), CallsMode::All).unwrap();
    write_run(&b, &storm_run(), &wall(999), CallsMode::All).unwrap();
    for name in RUN_FILES {
        if name == "summary.md" {
            assert_ne!(read(&a, name), read(&b, name));
        } else {
            assert!(read(&a, name) == read(&b, name), "{name} differs between two writes of the same run");
        }
    }
}

struct Image {
    w: usize,
    h: usize,
    rgb: Vec<u8>,
}

impl Image {
    fn at(&self, x: usize, y: usize) -> (u8, u8, u8) {
        let i = (y * self.w + x) * 3;
        (self.rgb[i], self.rgb[i + 1], self.rgb[i + 2])
    }

    /// Pixels in the box that are dark, as text is.
    fn dark_in(&self, x: std::ops::Range<usize>, y: std::ops::Range<usize>) -> usize {
        y.flat_map(|yy| x.clone().map(move |xx| (xx, yy)))
            .filter(|&(xx, yy)| {
                let (r, g, b) = self.at(xx, yy);
                u16::from(r) + u16::from(g) + u16::from(b) < 200
            })
            .count()
    }
}

fn decode(bytes: &[u8]) -> Image {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let decoder = png::Decoder::new(bytes);
    let mut reader = decoder.read_info().expect("PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("PNG frame");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    buf.truncate(info.buffer_size());
    Image { w: info.width as usize, h: info.height as usize, rgb: buf }
}

#[test]
fn png_has_text_and_shaded_faults() {
    let dir = fresh_dir("png");
    write_run(&dir, &storm_run(), &wall(210), CallsMode::All).unwrap();
    let report = decode(&read(&dir, "report.png"));
    assert_eq!((report.w, report.h), (1200, 96 + 3 * 420));
    // The title block is text only: dark pixels there mean glyphs were drawn from the embedded font.
    assert!(report.dark_in(16..500, 8..40) > 300, "no title text in report.png");
    assert!(report.dark_in(16..500, 66..90) > 300, "no totals line in report.png");
    assert!(report.at(1190, 5) == (255, 255, 255), "background is white");

    let qps = decode(&read(&dir, "qps.png"));
    assert_eq!((qps.w, qps.h), (1200, 420));
    // Panel title in the header strip.
    assert!(qps.dark_in(16..300, 5..38) > 200, "no panel title in qps.png");
    // Axis tick labels under the plot (x axis, bottom 60 px).
    assert!(qps.dark_in(100..1180, 360..400) > 200, "no axis labels in qps.png");
    // The first fault band (amber, 16% over white) appears in a column inside 20-28 s; the x axis spans about
    // 94..1172 px for 0..60 s.
    let x = 94 + (24.0 / 60.0 * 1078.0) as usize;
    let tinted = (60..350).filter(|&y| {
        let (r, g, b) = qps.at(x, y);
        r > 245 && (225..250).contains(&g) && (195..235).contains(&b)
    });
    assert!(tinted.count() > 100, "no shaded fault band at x={x}");
}

fn quiet_run(seconds: Vec<SecondRow>) -> RunData {
    RunData {
        attempts_recorded: true,
        scenario: "edge".into(),
        description: String::new(),
        seed: 7,
        profile: "default".into(),
        formula: "health_weighted".into(),
        sim_seconds: seconds.len() as f64,
        seconds,
        events: vec![],
        faults: vec![],
        totals: Totals::default(),
        checks: vec![],
        reproduce: "mcpstorm sim scenarios/edge.toml --seed 7".into(),
        audit: Default::default(),
        traces: Default::default(),
        mode: Default::default(),
    }
}

#[test]
fn zero_rows() {
    let dir = fresh_dir("zero_rows");
    let mut run = quiet_run(vec![]);
    run.sim_seconds = 0.0;
    let paths = write_run(&dir, &run, &wall(1), CallsMode::All).unwrap();
    assert_eq!(paths.len(), RUN_FILES.len());
    let csv = read_text(&dir, "timeseries.csv");
    assert_eq!(csv.lines().count(), 1, "header only");
    assert_eq!(read_text(&dir, "events.csv"), "t_ms,kind,target,detail\n");
    let md = read_text(&dir, "summary.md");
    assert!(md.contains("No checks configured.") && md.contains("No faults injected."));
    assert!(md.starts_with("# edge — PASS"));
    decode(&read(&dir, "report.png"));
}

#[test]
fn no_completed_calls() {
    let dir = fresh_dir("no_completed");
    let rows = (0..10)
        .map(|t| SecondRow { t, offered: 50, in_flight: 50 * (t + 1), attempts: 50, ..SecondRow::default() })
        .collect();
    let mut run = quiet_run(rows);
    run.totals = Totals { offered: 500, lost: 500, attempts: 500, amplification: 1.0, ..Totals::default() };
    run.faults = vec![FaultWindow { label: "hang api".into(), start_s: 0.0, end_s: 10.0 }];
    write_run(&dir, &run, &wall(1), CallsMode::All).unwrap();
    let csv = read_text(&dir, "timeseries.csv");
    assert_eq!(
        csv.lines().nth(1).unwrap(),
        "0,50,0,0,0,0,0,0,0,0,0,0.000,0.000,0.000,50,50,0,0,0,0,0,0,0,0,0,0,0.0000,1.0000"
    );
    decode(&read(&dir, "p99.png"));
    decode(&read(&dir, "errors.png"));
}

#[test]
fn non_finite_values_are_never_written() {
    let dir = fresh_dir("non_finite");
    let rows = (0..5)
        .map(|t| SecondRow {
            t,
            offered: 10,
            completed: 10,
            ok: 9,
            err_tool: 1,
            p50_ms: f64::NAN,
            p95_ms: f64::INFINITY,
            p99_ms: f64::NEG_INFINITY,
            ..SecondRow::default()
        })
        .collect();
    let mut run = quiet_run(rows);
    run.sim_seconds = f64::NAN;
    run.totals = Totals { amplification: f64::NAN, error_rate: f64::INFINITY, p99_ms: f64::NAN, ..Totals::default() };
    run.checks = vec![CheckResult { name: "p99_ms".into(), limit: 100.0, actual: Some(f64::NAN), passed: false }];
    run.faults = vec![FaultWindow { label: "weird".into(), start_s: f64::NAN, end_s: f64::INFINITY }];
    write_run(&dir, &run, &wall(1), CallsMode::All).unwrap();
    write_sweep(
        &dir,
        &SweepData {
            scenario: "edge".into(),
            param: "load.rate".into(),
            seed: 7,
            rows: vec![SweepRow {
                value: "x".into(),
                numeric: Some(f64::NAN),
                totals: run.totals.clone(),
                sim_seconds: f64::INFINITY,
                passed: false,
            }],
            reproduce: "r".into(),
        },
    )
    .unwrap();
    for name in ["timeseries.csv", "summary.json", "summary.md", "sweep.csv", "sweep.md", "report.svg", "sweep_p99.svg"]
    {
        let text = read_text(&dir, name).to_lowercase();
        // `null` in summary.json means n/a, and only the figures that can be n/a may hold it.
        let bad: &[&str] = if name == "summary.json" { &["nan", "inf"] } else { &["nan", "inf", "null"] };
        for bad in bad {
            // "inf" would also match words like "info"; none of these files contain such words.
            assert!(!text.contains(bad), "{name} contains {bad}");
        }
    }
    let v: serde_json::Value = serde_json::from_str(&read_text(&dir, "summary.json")).unwrap();
    let may_be_na = ["amplification_during_fault", "healthy_p99_before_ms", "healthy_p99_during_ms"];
    let in_faults = ["ok_during_fault", "error_rate_during_fault", "p99_during_fault_ms"];
    let may_be_na = [&may_be_na[..], &["healthy_p99_ratio", "recovery_s", "recovered"], &in_faults[..]].concat();
    for (key, value) in v["totals"].as_object().unwrap() {
        assert!(!value.is_null() || may_be_na.contains(&key.as_str()), "{key} is null");
    }
    assert_eq!((v["sim_seconds"].as_f64(), v["checks"][0]["actual"].as_f64()), (Some(0.0), Some(0.0)));
}

#[test]
fn fault_windows_outside_the_run() {
    let dir = fresh_dir("faults_outside");
    let mut run = storm_run();
    run.faults.push(FaultWindow { label: "after the end".into(), start_s: 90.0, end_s: 100.0 });
    run.faults.push(FaultWindow { label: "before the start".into(), start_s: -10.0, end_s: -1.0 });
    run.faults.push(FaultWindow { label: "backwards".into(), start_s: 30.0, end_s: 20.0 });
    run.faults.push(FaultWindow { label: "instant crash".into(), start_s: 45.0, end_s: 45.0 });
    write_run(&dir, &run, &wall(1), CallsMode::All).unwrap();
    let svg = read_text(&dir, "qps.svg");
    assert!(svg.contains("partition api-2") && svg.contains("instant crash"));
    assert!(!svg.contains("after the end") && !svg.contains("before the start"));
}

#[test]
fn unwritable_directory_names_the_path() {
    let dir = fresh_dir("unwritable");
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    std::fs::write(&dir, b"a file, not a directory").unwrap();
    let err = write_run(&dir, &storm_run(), &wall(1), CallsMode::All).unwrap_err();
    assert!(matches!(err, ReportError::Io { .. }));
    assert_eq!(err.path(), dir);
    assert!(err.to_string().contains(&dir.display().to_string()));
    std::fs::remove_file(&dir).unwrap();
}

pub(crate) fn knee_sweep(numeric: bool) -> SweepData {
    let values = [1u64, 10, 50, 100, 200, 500];
    let rows = values
        .iter()
        .map(|&c| {
            let capped = c.min(64) as f64;
            let ok_per_s = capped / 0.2;
            let sim_seconds = 500.0 / ok_per_s;
            let p50 = 200.0 * (c as f64 / 64.0).max(1.0);
            SweepRow {
                value: if numeric { c.to_string() } else { format!("c{c}") },
                numeric: if numeric { Some(c as f64) } else { None },
                totals: Totals {
                    offered: 500,
                    completed: 500,
                    ok: 500,
                    attempts: 500,
                    amplification: 1.0,
                    p50_ms: p50,
                    p95_ms: p50 * 1.02,
                    p99_ms: p50 * 1.05,
                    p999_ms: p50 * 1.06,
                    max_ms: p50 * 1.1,
                    ok_per_s,
                    ..Totals::default()
                },
                sim_seconds,
                passed: c <= 100,
            }
        })
        .collect();
    SweepData {
        scenario: "concurrency_knee".into(),
        param: "load.concurrency".into(),
        seed: 2,
        rows,
        reproduce: "mcpstorm sim scenarios/concurrency_knee.toml --seed 2".into(),
    }
}

#[test]
fn sweep_writes_table_and_plots() {
    for numeric in [true, false] {
        let dir = fresh_dir(if numeric { "sweep_numeric" } else { "sweep_categorical" });
        let sweep = knee_sweep(numeric);
        let paths = write_sweep(&dir, &sweep).unwrap();
        let names: Vec<String> = paths.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(
            names,
            [
                "sweep.csv",
                "sweep_qps.svg",
                "sweep_qps.png",
                "sweep_p99.svg",
                "sweep_p99.png",
                "sweep.md",
                "report.html"
            ]
        );
        let csv = read_text(&dir, "sweep.csv");
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "value,offered,ok,errors,lost,amplification,error_rate,p50_ms,p95_ms,p99_ms,max_ms,ok_per_s,sim_seconds,passed"
        );
        let first = if numeric { "1" } else { "c1" };
        assert_eq!(
            lines[1],
            format!("{first},500,500,0,0,1.000,0.0000,200.000,204.000,210.000,220.000,5.000,100.000,true")
        );
        assert_eq!(lines.len(), 7);
        let md = read_text(&dir, "sweep.md");
        assert!(md.contains("| load.concurrency | offered |"));
        assert!(md.contains("| 500 ok/s |") || md.contains("320 ok/s"), "{md}");
        assert!(md.contains("(sweep_qps.png)") && md.contains("(sweep_p99.png)"));
        let img = decode(&read(&dir, "sweep_qps.png"));
        assert!(img.dark_in(16..400, 5..38) > 200, "no title in sweep_qps.png");
        // Same data, same bytes.
        let again = fresh_dir(if numeric { "sweep_numeric_2" } else { "sweep_categorical_2" });
        write_sweep(&again, &sweep).unwrap();
        for name in &names {
            assert!(read(&dir, name) == read(&again, name), "{name} differs");
        }
    }
}

#[test]
fn empty_sweep() {
    let dir = fresh_dir("sweep_empty");
    let mut sweep = knee_sweep(true);
    sweep.rows.clear();
    write_sweep(&dir, &sweep).unwrap();
    assert_eq!(read_text(&dir, "sweep.csv").lines().count(), 1);
}

/// Leaves a rendered report where a person can look at it (`target/tmp/report/sample/`).
#[test]
fn sample_report() {
    let dir = fresh_dir("sample");
    write_run(&dir, &storm_run(), &wall(210), CallsMode::All).unwrap();
    write_sweep(&dir, &knee_sweep(true)).unwrap();
    println!("{}", console_summary(&storm_run(), &wall(210), &dir, CallsMode::All));
}
