//! The `mcpstorm` command's contract: exit 0 on success, 1 when a scenario's checks fail, 2 on bad input, with a
//! message that names where the problem is.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};

mod common;
use common::{BIN, Fake, mcpstorm};

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

/// `mcpstorm args... | head -0`: stdout is a pipe whose reader has gone. Returns the exit code and stderr.
fn with_stdout_closed(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
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
