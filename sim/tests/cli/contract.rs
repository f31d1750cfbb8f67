//! The `mcpstorm` command's contract: exit 0 on success, 1 when a scenario's checks fail, 2 on bad input, with a
//! message that names where the problem is.

use std::io::Read;
use std::path::PathBuf;
use std::process::Stdio;

use crate::common::{command, mcpstorm};
use crate::servers::Fake;

fn scratch(name: &str) -> String {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli").join(name).to_string_lossy().into_owned()
}

#[test]
fn sim_passes_and_prints_the_reproduce_command() {
    let out = scratch("pass");
    let o = mcpstorm(&["sim", "scenarios/smoke.toml", "--out", &out]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("reproduce: mcpstorm sim scenarios/smoke.toml --seed 1"), "{stdout}");
    assert!(PathBuf::from(&out).join("report.png").exists());
}

#[test]
fn failed_checks_exit_1() {
    let out = scratch("fail");
    let o = mcpstorm(&["sim", "scenarios/smoke.toml", "--out", &out, "--set", "checks.p99_ms=0.001"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("FAIL"));
    // The report is still written: a failed run is exactly the one to look at.
    assert!(PathBuf::from(&out).join("summary.json").exists());
}

#[test]
fn bad_scenarios_exit_2_with_file_line_column() {
    let dir = PathBuf::from(scratch("bad"));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let bad = dir.join("bad.toml");
    let smoke = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml");
    let text = std::fs::read_to_string(smoke).expect("smoke.toml");
    std::fs::write(&bad, text.replacen("[load]", "[load]\nsesions = 3", 1)).expect("write bad.toml");
    let bad = bad.to_string_lossy().into_owned();
    for cmd in [vec!["validate", bad.as_str()], vec!["sim", bad.as_str(), "--out", &scratch("bad-out")]] {
        let o = mcpstorm(&cmd);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}: {stderr}");
        assert!(stderr.contains("bad.toml:") && stderr.contains("load.sesions"), "{stderr}");
    }
    let o = mcpstorm(&["sim", "scenarios/does-not-exist.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let o = mcpstorm(&["sim", "scenarios/smoke.toml", "--set", "load.sessions=-3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--set load.sessions=-3"));
}

/// The largest duration humantime reads: every key that once overflowed with it (panicking before the run, inside
/// it, or after it with a PASS).
const HUGE: &str = "\"18446744073709551615s\"";

#[test]
fn durations_beyond_their_range_exit_2_naming_the_key_without_a_panic() {
    let keys = [
        "duration",
        "client.deadline",
        "client.connect_timeout",
        "network.latency",
        "client.queue_wait",
        "client.first_response",
        "gateway.bulkhead.queue_wait",
        "gateway.router.refresh_every",
    ];
    for key in keys {
        let set = format!("{key}={HUGE}");
        let o = mcpstorm(&["sim", "scenarios/smoke.toml", "--out", &scratch("huge"), "--set", &set]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{key}: {}", crate::common::text(&o));
        assert!(stderr.contains(&format!("--set {set}: {key}: must be at most ")), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // Two out-of-range durations at once: both reported, nothing run.
    let (deadline, refresh) = (format!("client.deadline={HUGE}"), format!("gateway.router.refresh_every={HUGE}"));
    let out = scratch("huge-pair");
    let o = mcpstorm(&["sim", "scenarios/smoke.toml", "--out", &out, "--set", &deadline, "--set", &refresh]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", crate::common::text(&o));
    assert!(stderr.contains("client.deadline: must be at most 7d") && stderr.contains("refresh_every"), "{stderr}");
    assert!(!PathBuf::from(&out).join("summary.json").exists(), "nothing ran");
}

#[test]
fn durations_and_counts_at_the_top_of_their_ranges_run_without_a_panic() {
    let week = "\"7d\"";
    let mut sets: Vec<String> = [
        "client.deadline",
        "client.connect_timeout",
        "client.queue_wait",
        "client.first_response",
        "gateway.bulkhead.queue_wait",
        "gateway.router.refresh_every",
        "gateway.router.check_interval",
        "gateway.router.check_timeout",
        "gateway.router.error_window",
        "gateway.router.ewma_decay",
        "gateway.router.drift_window",
        "gateway.router.drift_penalty",
        "gateway.breaker.window",
        "gateway.breaker.slow_call",
        "gateway.breaker.open",
        "gateway.breaker.open_max",
        "gateway.breaker.half_open_max_wait",
        "gateway.retry.base",
        "gateway.retry.cap",
        "gateway.budget.ttl",
        "gateway.throttle.window",
        "gateway.limiter.timeout",
        "agent.backoff",
        "agent.backoff_cap",
        "servers[0].session_ttl",
    ]
    .iter()
    .map(|key| format!("{key}={week}"))
    .collect();
    sets.extend(
        [
            // Keys bounded by the run are at the run's length; the faults at their tops (a week, × 1,000).
            "duration=\"2s\"",
            "network.latency=\"2s\"",
            "network.max_latency=\"2s\"",
            "load.think_time=\"2s\"",
            "faults=[{ kind = \"latency_spike\", target = \"echo\", start = \"1s\", duration = \"500ms\", \
             extra = \"7d\", multiplier = 1000.0 }, { kind = \"clock_skew\", target = \"gateway\", start = \"0s\", \
             offset = \"+7d\", drift = 10.0 }, { kind = \"clock_skew\", target = \"echo\", start = \"500ms\", \
             jump = \"-7d\" }]",
            "client.max_in_flight=1000000",
            "client.per_connection=1000000",
            "servers[0].workers=1000000",
            "gateway.bulkhead.max_concurrent=1000000",
            "gateway.breaker.window_calls=100000",
            "gateway.retry.max_attempts=100",
            "agent.retry=\"naive\"",
            "agent.max_retries=100",
            "checks.p99_ms=1e9",
        ]
        .map(str::to_owned),
    );
    let out = scratch("top");
    let mut args = vec!["sim", "scenarios/smoke.toml", "--out", &out, "--allow-large"];
    for s in &sets {
        args.extend(["--set", s.as_str()]);
    }
    let o = mcpstorm(&args);
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::text(&o));
    let summary = crate::common::summary(&PathBuf::from(&out));
    assert_eq!(summary["totals"]["lost"], 0, "{summary}");
    assert!(summary["totals"]["ok"].as_u64().is_some_and(|ok| ok > 0), "{summary}");
}

#[test]
fn runs_beyond_the_cost_limits_exit_2_unless_allowed() {
    let o = mcpstorm(&["validate", "scenarios/smoke.toml"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::text(&o));
    assert!(stdout.contains("\ncost: ~5,882 calls over up to 85,000 ticks with 2 hosts"), "{stdout}");
    assert!(stdout.contains("limits: 50,000,000 calls, 100,000,000 ticks, 200 hosts"), "{stdout}");

    let sessions = "load.sessions=1000000";
    let compare = ["compare", "scenarios/smoke.toml", "--vary", "gateway.profile", "--values", "default,naive"];
    let runs: [Vec<&str>; 3] = [
        vec!["validate", "scenarios/smoke.toml"],
        vec!["sim", "scenarios/smoke.toml", "--out", "target/never"],
        [&compare[..], &["--seeds", "1", "--out", "target/never"]].concat(),
    ];
    for cmd in &runs {
        let o = mcpstorm(&[&cmd[..], &["--set", sessions]].concat());
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}: {}", crate::common::text(&o));
        assert!(stderr.contains("load.sessions: this run would cost too much"), "{stderr}");
        assert!(
            stderr.contains("calls 294,117,647 > 50,000,000 (load.sessions, duration, load.think_time)"),
            "{stderr}"
        );
        assert!(stderr.contains("pass --allow-large"), "{stderr}");
    }
    let o = mcpstorm(&["validate", "scenarios/smoke.toml", "--set", sessions, "--allow-large"]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("(--allow-large)"));

    // A week-long deadline could keep the run draining for two weeks (1.2e9 ticks): refused, and with the flag it
    // runs, and ends as soon as its calls are done.
    let deadline = "client.deadline=\"7d\"";
    let o = mcpstorm(&["sim", "scenarios/smoke.toml", "--out", &scratch("allowed"), "--set", deadline]);
    assert_eq!(o.status.code(), Some(2), "{}", crate::common::text(&o));
    let o =
        mcpstorm(&["sim", "scenarios/smoke.toml", "--out", &scratch("allowed"), "--set", deadline, "--allow-large"]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::text(&o));
    let compare_out = scratch("allowed-compare");
    let allowed = [&compare[..], &["--seeds", "1", "--out", &compare_out, "--set", deadline]].concat();
    assert_eq!(mcpstorm(&allowed).status.code(), Some(2));
    let o = mcpstorm(&[&allowed[..], &["--allow-large"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::text(&o));
}

#[test]
fn a_scenario_that_is_not_utf8_exits_2_at_its_first_bad_byte() {
    let dir = PathBuf::from(scratch("utf8"));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join("latin1.toml");
    let mut bytes = b"#:schema ./scenario.schema.json\nname = \"caf".to_vec();
    bytes.extend([0xE9, b'"', b'\n']);
    std::fs::write(&path, bytes).expect("write");
    let path = path.to_string_lossy().into_owned();
    let o = mcpstorm(&["validate", &path]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("{path}:2:12: not UTF-8: invalid byte (0xe9) at byte offset 43")), "{stderr}");
}

/// `mcpstorm args... | head -0`: stdout is a pipe whose reader has gone. Returns the exit code and stderr.
fn with_stdout_closed(args: &[&str]) -> (Option<i32>, String) {
    let mut child = command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcpstorm");
    // Closed at once, before the command has anything to print: its first write meets a broken pipe.
    drop(child.stdout.take());
    let mut stderr = String::new();
    child.stderr.take().expect("piped stderr").read_to_string(&mut stderr).expect("read stderr");
    (child.wait().expect("wait for mcpstorm").code(), stderr)
}

/// A reader that goes away (`| head -1`) ends the command quietly, as it does `cat` or `grep`: exit 0, nothing on
/// stderr, never the panic "failed printing to stdout: Broken pipe" (exit 101).
#[test]
fn a_closed_stdout_is_a_quiet_exit() {
    let out = scratch("closed-stdout");
    let fake = Fake::start(None);
    for args in [
        &["sim", "scenarios/smoke.toml", "--out", &out][..],
        &["validate", "scenarios/smoke.toml"][..],
        &["tools", "--tcp", &fake.addr][..],
        &["call", "--tcp", &fake.addr, "echo", r#"{"message": "hi"}"#][..],
    ] {
        let (code, stderr) = with_stdout_closed(args);
        assert_eq!((code, stderr.as_str()), (Some(0), ""), "{args:?}");
    }
}

/// Numbers no one means are bad input (exit 2) with a message naming the flag, never a panic.
#[test]
fn absurd_numbers_are_bad_input() {
    let out = scratch("absurd");
    for (args, says) in [
        (&["call", "--tcp", "127.0.0.1:1", "--timeout", "1e300", "echo"][..], "--timeout must be more than 0"),
        (&["call", "--tcp", "127.0.0.1:1", "--timeout", "NaN", "echo"][..], "--timeout must be more than 0"),
        (&["call", "--tcp", "127.0.0.1:1", "--timeout=-1", "echo"][..], "--timeout must be more than 0"),
        (&["call", "--tcp", "127.0.0.1:1", "--timeout", "0", "echo"][..], "--timeout must be more than 0"),
        (&["tools", "--tcp", "127.0.0.1:1", "--retries", "4294967295"][..], "--retries"),
        (
            &["compare", "scenarios/smoke.toml", "--formulas", "round_robin,random", "--seeds", "18446744073709551615"]
                [..],
            "--seeds",
        ),
        (&["compare", "scenarios/smoke.toml", "--formulas", "round_robin,random", "--seeds", "0"][..], "--seeds"),
        (
            &[
                "compare",
                "scenarios/smoke.toml",
                "--formulas",
                "round_robin,random",
                "--seeds",
                "2",
                "--first-seed",
                "18446744073709551615",
                "--out",
                &out,
            ][..],
            "run past the largest seed",
        ),
        (&["compare", "scenarios/smoke.toml", "--formulas", "round_robin,random", "--jobs", "0"][..], "--jobs"),
        (&["compare", "scenarios/smoke.toml", "--formulas", "round_robin,random", "--jobs", "100000"][..], "--jobs"),
    ] {
        let o = mcpstorm(args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// An `--out` that cannot hold a report is found before the run, not after it.
#[test]
fn an_unwritable_out_is_bad_input_before_anything_runs() {
    let dir = PathBuf::from(scratch("unwritable"));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("a-file");
    std::fs::write(&file, "not a directory").expect("write a file");
    let under = file.join("run");
    for args in [
        vec!["sim", "scenarios/smoke.toml", "--out", file.to_str().unwrap_or_default()],
        vec!["sim", "scenarios/smoke.toml", "--out", under.to_str().unwrap_or_default()],
        vec![
            "compare",
            "scenarios/smoke.toml",
            "--formulas",
            "round_robin,random",
            "--seeds",
            "1",
            "--out",
            under.to_str().unwrap_or_default(),
        ],
    ] {
        let o = mcpstorm(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("mcpstorm: cannot write the report to "), "{args:?}: {stderr}");
        assert_eq!(o.stdout, b"", "{args:?}: nothing ran");
    }
}

/// `serve-fake --listen`: an address that does not parse or resolve is bad input (2); a valid one that cannot be
/// bound is a failure (1).
#[test]
fn serve_fake_tells_a_bad_address_from_a_failed_bind() {
    for addr in ["not-an-addr", "999.1.1.1:0", "127.0.0.1:99999"] {
        let o = mcpstorm(&["serve-fake", "--listen", addr]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{addr}: {stderr}");
        assert!(stderr.contains("is not an address to listen on"), "{addr}: {stderr}");
    }
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("local addr").to_string();
    let o = mcpstorm(&["serve-fake", "--listen", &addr]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{addr}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("serve-fake cannot listen on {addr}: ")), "{stderr}");
}

/// A failure is one line on stderr: the error, not also a warning that says the same.
#[test]
fn a_failure_is_one_line() {
    let o = mcpstorm(&["call", "--stdio", "sh -c 'exit 3'", "echo"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr, "mcpstorm: stdio sh: transport error: peer closed the connection\n");
}

/// `swarm`: 2 for a run too short to judge recovery; 1 when an invariant breaks (here the scenario's own checks,
/// asked for with `--checks`), with the failure shrunk into a scenario whose `--replay` exits 1 too.
#[test]
fn swarm_exits_2_on_bad_input_and_1_on_a_broken_invariant_that_replays() {
    let o = mcpstorm(&["swarm", "scenarios/smoke.toml", "--seeds", "1", "--out", &scratch("swarm-short")]);
    assert_eq!(o.status.code(), Some(2), "{}", crate::common::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("too short to swarm"), "{}", crate::common::text(&o));

    let out = scratch("swarm-fail");
    // Short and light: 12 s leaves the warm-up, a fault and 5 s + 3 s to judge recovery.
    let short = ["--set", "duration=12s", "--set", "swarm.recovery_within=\"5s\"", "--set", "load.sessions=4"];
    let args = [&short[..], &["--seeds", "1", "--set", "checks.p99_ms=0.001", "--checks"]].concat();
    let o = mcpstorm(
        &[&["swarm", "scenarios/smoke.toml", "--out", &out, "--shrink-runs", "1", "--no-differential"][..], &args]
            .concat(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", crate::common::text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("checks: p99_ms"), "{}", crate::common::text(&o));
    let failure = PathBuf::from(&out).join("failures").join("1-checks.toml");
    let text = std::fs::read_to_string(&failure).expect("the shrunk failure");
    assert!(text.starts_with("# swarm failure: invariant `checks` broken on seed 1"), "{text}");
    // The replay line, in the file and on the console, run exactly as printed, reproduces the failure.
    let in_file = text.lines().find_map(|l| l.strip_prefix("# replay:")).expect("a replay line");
    let in_file = in_file.split("(exit 1").next().unwrap_or_default();
    let stdout = String::from_utf8_lossy(&o.stdout);
    // The run's own line keeps the shrink budget it ran with: another budget shrinks to other files.
    let reproduce = stdout.lines().find_map(|l| l.strip_prefix("reproduce:")).expect("a reproduce line");
    assert!(reproduce.contains("--shrink-runs 1") && reproduce.contains("--no-differential"), "{reproduce}");
    let on_console = stdout.lines().find_map(|l| l.strip_prefix("replay seed 1:")).expect("a replay line");
    for line in [in_file, on_console] {
        let args: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(args.first(), Some(&"mcpstorm"), "{line}");
        assert!(args.contains(&"--checks"), "{line}");
        let replay = mcpstorm(&args[1..]);
        assert_eq!(replay.status.code(), Some(1), "{line}: {}", crate::common::text(&replay));
        assert!(String::from_utf8_lossy(&replay.stdout).contains("checks: p99_ms"), "{}", crate::common::text(&replay));
    }
}
