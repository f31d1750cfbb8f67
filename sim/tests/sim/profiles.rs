//! The sessions-and-drift scenarios through the real `mcpstorm sim` command: with the default gateway profile their
//! checks pass, with the naive one the named checks fail (exit 1), the contrast run and plot are written, and a
//! configured secret never reaches any output.

use std::path::{Path, PathBuf};

use crate::common::fixtures;
use crate::common::{failed, files_under, scratch_in, sim, summary, text};

fn scratch(name: &str) -> PathBuf {
    scratch_in("profiles", name)
}

/// Shortened for a debug build: fewer agents, the same faults.
const SHORT_DRIFT: &[&str] = &["load.sessions=5"];

#[test]
fn schema_drift_passes_with_the_default_profile_and_fails_with_the_naive_one() {
    let scenario = Path::new("scenarios/schema_drift.toml");
    let out = scratch("drift-default");
    let o = sim(scenario, &out, SHORT_DRIFT);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let primary = summary(&out);
    assert_eq!(primary["totals"]["stale_sends"], 0);
    // The servers' own count agrees: the drift was hit, by no more than the calls in flight when it happened.
    let refused = primary["totals"]["schema_refusals"].as_u64().unwrap_or_default();
    assert!((1..=10).contains(&refused), "{primary}");
    assert!(primary["totals"]["error_window_s"].as_u64().is_some_and(|w| w <= 2), "{primary}");

    // The contrast run (naive) is written beside it, fails, and does not change the exit code.
    let naive = summary(&out.join("contrast-naive"));
    assert_eq!(failed(&naive), ["stale_sends", "error_window_s"], "{naive}");
    assert!(naive["totals"]["stale_sends"].as_u64().is_some_and(|s| s > 100), "{naive}");
    assert!(out.join("contrast.png").exists() && out.join("contrast.svg").exists());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("profiles side by side") && stdout.contains("  naive "), "{stdout}");

    // The naive profile as primary: its checks decide the exit code, and the contrast is then the default. With
    // the TypeScript SDK's -32602 refusals the stale sends are counted on the wire, and agree with the isError form.
    let out = scratch("drift-naive");
    let sets = [SHORT_DRIFT, &["gateway.profile=naive", "servers[0].validation_error=invalid_params"]].concat();
    let o = sim(scenario, &out, &sets);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let primary = summary(&out);
    assert_eq!(failed(&primary), ["stale_sends", "error_window_s"]);
    assert_eq!(primary["totals"]["stale_sends"], naive["totals"]["stale_sends"], "{primary}\n{naive}");
    let (stale, refused) = (&primary["totals"]["stale_sends"], &primary["totals"]["schema_refusals"]);
    assert!(stale.as_u64() < refused.as_u64(), "the first refusal per pair is not stale: {stale} of {refused}");
    assert!(failed(&summary(&out.join("contrast-default"))).is_empty());
}

/// Shortened for a debug build: fewer, slower agents and a coarser tick; the faults stay where they are.
const SHORT_SKEW: &[&str] = &["load.sessions=2", "load.think_time=500ms", "tick=10ms"];

#[test]
fn clock_skew_sessions_survive_with_the_default_profile_and_break_with_the_naive_one() {
    let scenario = Path::new("scenarios/clock_skew.toml");
    let out = scratch("skew");
    let o = sim(scenario, &out, SHORT_SKEW);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = &summary(&out)["totals"];
    assert_eq!((t["session_errors"].as_u64(), t["auth_errors"].as_u64()), (Some(0), Some(0)), "{t}");
    // The jump, the purge and the rotation each cost a re-handshake per load host and replica they hit; the lease
    // renews before the 60 s TTL runs out.
    assert!(t["rehandshakes"].as_u64().is_some_and(|r| r >= 4), "{t}");
    assert!(t["renewals"].as_u64().is_some_and(|r| r >= 1), "{t}");
    let events = std::fs::read_to_string(out.join("events.csv")).expect("events.csv");
    assert!(events.contains("clock,api-0,skew 225800 ms"), "the 45 s step on top of 3 min + 2% of 40 s:\n{events}");

    let naive = summary(&out.join("contrast-naive"));
    assert_eq!(failed(&naive), ["error_window_s", "session_errors", "auth_errors"], "{naive}");
    assert_eq!(naive["totals"]["renewals"], 0, "the naive profile never renews");
}

const SECRET: &str = "zq-hunter2-7f3a9c-never-print-me";

#[test]
fn a_configured_secret_never_reaches_any_output() {
    let dir = scratch("secret");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let scenario = dir.join("secret.toml");
    let credentials = format!(
        "[gateway]\ncredentials = [{{ scheme = \"bearer\", secret = \"{SECRET}\" }}, \
         {{ scheme = \"mcp-jwt\", secret = \"{SECRET}-jwt\" }}]"
    );
    let text_in = fixtures::scenario("secret", "3s")
        .server("vault", &["session_ttl = \"30s\"", "auth_schemes = [\"bearer\"]"])
        .tool("get", &["reply = \"ok\""])
        .closed(3, "50ms")
        .mix(Some("vault"), "get")
        .table("[[faults]]\nkind = \"auth_rotation\"\ntarget = \"vault\"\nstart = \"1s\"\nschemes = [\"mcp-jwt\"]")
        .table(&credentials)
        .table("[report]\ncontrast = \"naive\"")
        .build();
    std::fs::write(&scenario, text_in).expect("write scenario");
    let out = dir.join("run");
    let o = sim(&scenario, &out, &[]);
    // Whether the checks pass is not the subject here; only that the run completed and wrote its report.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    assert!(!text(&o).contains(SECRET), "the secret is in the console output");
    let files: Vec<PathBuf> = files_under(&out).into_iter().map(|f| out.join(f)).collect();
    assert!(files.len() > 10, "expected a full report with its contrast run, got {files:?}");
    for f in &files {
        let bytes = std::fs::read(f).expect("read output file");
        let found = bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes());
        assert!(!found, "{} contains the secret", f.display());
    }
    let copy = std::fs::read_to_string(out.join("scenario.toml")).expect("the resolved scenario copy");
    assert!(copy.contains("[redacted]") && copy.contains("bearer"), "{copy}");
    // The credentials were used: the default gateway passed the scheme check before and after the rotation.
    let s = summary(&out);
    assert_eq!(s["totals"]["auth_errors"], 0, "{s}");
    assert!(s["totals"]["ok"].as_u64().is_some_and(|ok| ok > 0), "{s}");
}

/// `--out` takes a new directory or an earlier report of the same command, whose files go first: a plain run into
/// a contrast run's directory leaves no `contrast-naive/` or `contrast.png` to read as its own. Anything else in
/// the directory is refused with exit 2, by name, and left alone.
#[test]
fn out_reuses_an_earlier_report_whole_and_refuses_anything_else() {
    let smoke = Path::new("scenarios/smoke.toml");
    let out = scratch("reused-out");
    let o = sim(smoke, &out, &["duration=\"3s\"", "report.contrast=\"naive\""]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(out.join("contrast-naive").is_dir() && out.join("contrast.png").exists());
    let o = sim(smoke, &out, &["duration=\"3s\""]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!out.join("contrast-naive").exists() && !out.join("contrast.png").exists(), "stale contrast files");
    assert!(out.join("summary.json").exists());

    std::fs::write(out.join("notes.txt"), "mine").expect("write");
    let o = sim(smoke, &out, &["duration=\"3s\""]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&out.display().to_string()) && err.contains("holds notes.txt;"), "{err}");
    assert!(out.join("notes.txt").exists() && out.join("summary.json").exists(), "a refused run removed files");
    // Another command's report directory is not sim's either.
    let out = out.to_string_lossy();
    let swarm = ["swarm", "scenarios/smoke.toml", "--seeds", "1", "--set", "duration=\"40s\"", "--out", &out];
    let o = crate::common::mcpstorm(&swarm);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not an earlier `swarm` report"), "{}", text(&o));
}
