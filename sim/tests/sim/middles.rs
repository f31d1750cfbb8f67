//! `mcpstorm live --middle`: a third-party process in the middle of a live run (docs/middles.md). Short runs (a few
//! seconds of real time each); the assertions are about where the calls went and what was written, never about how
//! long anything took. nginx is Debian's package: without it the test says so and passes, unless
//! `MCPSTORM_REQUIRE_PEERS=1` (CI), where it fails.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::common::fixtures::{fixed, scenario};
use crate::common::{mcpstorm, scratch_in, summary, text};

fn scratch(name: &str) -> PathBuf {
    let dir = scratch_in("middles", name);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// An open loop of 100 calls/s for 4 s to two servers (`api` of two replicas, `files` of one), a fixed 5 ms tool
/// each, and `api#1` crashed from 1 s to 2 s: calls must reach both servers through the middle, by name.
fn two_servers(dir: &Path) -> PathBuf {
    let text = scenario("middle_two", "4s")
        .seed(3)
        .server("api", &["replicas = 2", "workers = 64"])
        .tool("lookup", &[&fixed(5)])
        .server("files", &["workers = 64"])
        .tool("read", &[&fixed(5)])
        .open(100.0, &[])
        .mix(Some("api"), "lookup")
        .mix(Some("files"), "read")
        .table("[[faults]]\nkind = \"crash\"\ntarget = \"api#1\"\nstart = \"1s\"\nduration = \"1s\"")
        .build();
    let path = dir.join("scenario.toml");
    std::fs::write(&path, text).expect("write the scenario");
    path
}

/// `mcpstorm live SCENARIO --middle MIDDLE --out DIR/live`: the report directory and the command's output.
fn through(dir: &Path, middle: &str) -> (PathBuf, Output) {
    let path = two_servers(dir);
    let out = dir.join("live");
    let (p, o) = (path.to_string_lossy(), out.to_string_lossy());
    (out.clone(), mcpstorm(&["live", p.as_ref(), "--middle", middle, "--out", o.as_ref()]))
}

fn middle_json(out: &Path) -> Value {
    let text = std::fs::read_to_string(out.join("middle.json")).expect("middle.json");
    serde_json::from_str(&text).expect("middle.json is JSON")
}

/// The calls went through the middle to the servers: most ended ok, the servers counted at least one attempt per ok
/// call, and the middle's processes were measured.
fn assert_reached_the_servers(out: &Path, o: &Output, name: &str) {
    let s = summary(out);
    let ok = s["totals"]["ok"].as_u64().expect("ok");
    let offered = s["totals"]["offered"].as_u64().expect("offered");
    assert!(ok * 10 >= offered * 9 && ok > 100, "{ok} ok of {offered}: {}", text(o));
    let m = middle_json(out);
    assert_eq!(m["name"], name, "{m}");
    assert_eq!(m["instances"], 1, "one load host, one instance: {m}");
    let reached = m["server_attempts"].as_u64().expect("server_attempts");
    assert!(reached >= ok, "every ok call reached a server through the middle: {reached} attempts, {ok} ok");
    assert_eq!(s["totals"]["attempts"].as_u64(), Some(reached), "the run's attempts are the servers' count");
    assert!(m["cost"]["measured"] == true && m["cost"]["peak_rss_bytes"].as_u64() > Some(0), "{m}");
    assert!(text(o).contains(&format!("  middle     {name} (1 process): CPU ")), "{}", text(o));
}

/// `nginx -v` runs: Debian's package (`/usr/sbin` is on no ordinary user's `PATH`), or `MCPSTORM_NGINX`.
fn nginx_installed() -> bool {
    let candidates = match std::env::var_os("MCPSTORM_NGINX") {
        Some(path) => vec![PathBuf::from(path)],
        None => vec![PathBuf::from("nginx"), PathBuf::from("/usr/sbin/nginx")],
    };
    let found =
        candidates.iter().any(|p| std::process::Command::new(p).arg("-v").output().is_ok_and(|o| o.status.success()));
    if !found {
        if std::env::var("MCPSTORM_REQUIRE_PEERS").is_ok_and(|v| v == "1") {
            panic!("interop peer missing: nginx. Install it with: apt-get install nginx");
        }
        eprintln!("\n*** SKIPPING: interop peer missing: nginx. Install it with: apt-get install nginx ***\n");
    }
    found
}

#[test]
fn a_live_run_through_nginx_reaches_each_server_at_its_path() {
    if !nginx_installed() {
        return;
    }
    let dir = scratch("nginx");
    let (out, o) = through(&dir, "nginx");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_reached_the_servers(&out, &o, "nginx");
    let reproduce = summary(&out)["reproduce"].as_str().expect("reproduce").to_owned();
    assert!(reproduce.ends_with("--middle nginx"), "{reproduce}");
    // Both servers were called through it: each has ok calls of its own.
    let servers = &summary(&out)["servers"];
    for server in ["api", "files"] {
        assert!(servers[server]["ok"].as_u64() > Some(0), "{server}: {servers}");
    }
}

/// The Python with FastMCP: `MCPSTORM_FASTMCP_PYTHON`, else the venv `.ci/run` makes (`target/peers/fastmcp`,
/// from tests/peers/requirements-fastmcp.txt); `None` (and a message, or a failure in CI) without one.
fn fastmcp_python() -> Option<String> {
    let python = std::env::var("MCPSTORM_FASTMCP_PYTHON").unwrap_or_else(|_| {
        crate::common::repo_root().join("target/peers/fastmcp/bin/python").to_string_lossy().into_owned()
    });
    let ok =
        std::process::Command::new(&python).args(["-c", "import fastmcp"]).output().is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    let how = "python3 -m venv target/peers/fastmcp && target/peers/fastmcp/bin/pip install -r \
               tests/peers/requirements-fastmcp.txt";
    if std::env::var("MCPSTORM_REQUIRE_PEERS").is_ok_and(|v| v == "1") {
        panic!("interop peer missing: FastMCP. Install it with: {how}");
    }
    eprintln!("\n*** SKIPPING: interop peer missing: FastMCP. Install it with: {how} ***\n");
    None
}

/// FastMCP's proxy with a shared upstream session per replica (the per-request mode costs it several times the
/// CPU, more than this test's load leaves it on a small machine).
#[test]
fn a_live_run_through_fastmcps_proxy_reaches_each_server_at_its_path() {
    let Some(python) = fastmcp_python() else { return };
    let dir = scratch("fastmcp");
    let path = two_servers(&dir);
    let out = dir.join("live");
    let (p, o_) = (path.to_string_lossy(), out.to_string_lossy());
    let args = ["live", p.as_ref(), "--middle", "fastmcp_shared", "--out", o_.as_ref(), "--set", "load.rate=40"];
    let o = crate::common::mcpstorm_env(&args, &[("MCPSTORM_FASTMCP_PYTHON", python.as_str())]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = summary(&out);
    let ok = s["totals"]["ok"].as_u64().expect("ok");
    assert!(ok > 40, "{ok} ok: {}", text(&o));
    assert!(middle_json(&out)["server_attempts"].as_u64() >= Some(ok), "{}", text(&o));
    for server in ["api", "files"] {
        assert!(s["servers"][server]["ok"].as_u64() > Some(0), "{server}: {}", s["servers"]);
    }
}

/// No shipped adapter: the mcpstorm gateway given only as a command and a config template.
#[test]
fn a_middle_given_only_as_a_command_template_runs() {
    let dir = scratch("template");
    std::fs::write(
        dir.join("gateway.toml.tmpl"),
        "[listen]\nhttp = \"{{listen}}\"\n{{#servers}}\n\n[[servers]]\nname = \"{{name}}\"\n{{#replicas}}\n\
         [[servers.replicas]]\nhttp = \"{{url}}\"\n{{/replicas}}\n{{/servers}}\n",
    )
    .expect("write the template");
    let file = dir.join("plain_gateway.toml");
    std::fs::write(
        &file,
        "[middle]\ncommand = \"{{exe}} gateway --config {{config}}\"\nconfig_template = \"gateway.toml.tmpl\"\n\
         ready_within = \"10s\"\n",
    )
    .expect("write the middle file");
    let (out, o) = through(&dir, &file.to_string_lossy());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_reached_the_servers(&out, &o, "plain_gateway");
}

#[test]
fn a_middle_that_never_listens_fails_the_run_with_what_it_said() {
    let dir = scratch("silent");
    let file = dir.join("broken.toml");
    std::fs::write(&file, "[middle]\ncommand = \"sh -c 'echo no port for {{node}} >&2; exit 3'\"\n").expect("write");
    let (out, o) = through(&dir, &file.to_string_lossy());
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("exited (exit status: 3): no port for gateway-0"), "{}", text(&o));
    assert!(!out.join("summary.json").exists(), "no report of a run that never ran");
}

#[test]
fn an_unknown_middle_or_a_bad_template_is_bad_input() {
    let dir = scratch("bad");
    let (_, o) = through(&dir, "envoy");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("unknown middle `envoy`"), "{}", text(&o));
    std::fs::write(dir.join("c.tmpl"), "port {{port}}\n{{#servers}}{{nmae}}{{/servers}}\n").expect("write");
    let file = dir.join("typo.toml");
    std::fs::write(&file, "[middle]\ncommand = \"sh {{config}}\"\nconfig_template = \"c.tmpl\"\n").expect("write");
    let (_, o) = through(&dir, &file.to_string_lossy());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("typo.toml: c.tmpl:2:13: no `nmae` here"), "{}", text(&o));
}

/// `compare --live`: both middles in each round, the order reversed in the second, one row each, the overlay plot
/// and each run's own report.
#[test]
fn compare_live_runs_each_middle_in_alternating_order_and_writes_the_table_and_the_plot() {
    if !nginx_installed() {
        return;
    }
    let dir = scratch("compare");
    let path = two_servers(&dir);
    let out = dir.join("compare");
    let (p, o_) = (path.to_string_lossy(), out.to_string_lossy());
    let args = ["compare", "--live", "--middles", "mcpstorm,nginx", "--rounds", "2", p.as_ref(), "--out", o_.as_ref()];
    let o = mcpstorm(&[&args[..], &["--set", "duration=3s"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let said = text(&o);
    let order: Vec<&str> = said.lines().filter(|l| l.starts_with("== round ")).collect();
    assert_eq!(
        order,
        ["== round 1 of 2: mcpstorm", "== round 1 of 2: nginx", "== round 2 of 2: nginx", "== round 2 of 2: mcpstorm"]
    );
    let table = std::fs::read_to_string(out.join("middles.md")).expect("middles.md");
    assert!(table.contains("| mcpstorm | 2 | ") && table.contains("| nginx | 2 | "), "{table}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("middles.json")).expect("middles.json")).expect("JSON");
    for rounds in json["rounds"].as_array().expect("rounds") {
        for round in rounds.as_array().expect("a middle's rounds") {
            assert!(round["middle"]["server_attempts"].as_u64() > Some(100), "{round}");
        }
    }
    assert!(out.join("compare.png").is_file() && out.join("report.html").is_file());
    assert!(
        out.join("runs/nginx-round-2/summary.json").is_file() && out.join("runs/nginx-round-2/middle.json").is_file()
    );
}
