//! `--http URL` and `--header NAME=ENV_VAR`: `tools`, `call` and `diagnose` against `mcpstorm serve-fake --transport
//! http` in both eras, the header's value read from the environment and never printed, and bad input (an unusable
//! URL, a missing variable, a header beside `--tcp`) refused with exit 2 before anything is dialled.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;

use crate::common::{mcpstorm, mcpstorm_env, text};
use crate::servers::Fake;

/// A fake that speaks only the 2025-11-25 era over HTTP: `initialize`, a session id, JSON bodies.
const LEGACY_JSON: &str = "name = \"old\"\neras = [\"legacy\"]\nhttp_response = \"json\"\n\n[[tools]]\nname = \"t\"\n";

#[test]
fn tools_and_call_speak_streamable_http_in_both_eras() {
    let fake = Fake::start_http(None);
    let url = fake.url();
    let o = mcpstorm(&["tools", "--http", &url]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.starts_with("mcpstorm-fake 1.0.0 (protocol 2026-07-28): 3 tools"), "{stdout}");
    // Each tool with its argument names, optional ones marked.
    assert!(stdout.contains("  echo(message) "), "{stdout}");

    let o = mcpstorm(&["call", "--http", &url, "echo", r#"{"message": "over http"}"#]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "over http\n");
    // Arguments are checked against the schema the server listed over HTTP, as over any transport.
    let o = mcpstorm(&["call", "--http", &url, "echo", r#"{"message": 1}"#]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));

    let legacy = Fake::start_http(Some(LEGACY_JSON));
    let o = mcpstorm(&["tools", "--http", &legacy.url(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let tools: serde_json::Value = serde_json::from_slice(&o.stdout).expect("tools --json");
    assert_eq!(tools[0]["name"], "t");
}

/// What [`recording_server`] saw: the head of every request.
type Heads = Arc<Mutex<Vec<String>>>;

/// An HTTP server on loopback that records each request's head and answers every one 401: enough to see what the
/// client sends. Returns its URL.
fn recording_server() -> (String, Heads) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("local addr"));
    let heads = Heads::default();
    let seen = heads.clone();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let seen = seen.clone();
            thread::spawn(move || {
                let Ok(mut out) = stream.try_clone() else { return };
                let mut reader = BufReader::new(stream);
                loop {
                    let mut head = String::new();
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                        head.push_str(&line);
                    }
                    let mut body = vec![0; length];
                    if std::io::Read::read_exact(&mut reader, &mut body).is_err() {
                        return;
                    }
                    seen.lock().expect("heads").push(head);
                    let reply = "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nno";
                    if out.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, heads)
}

#[test]
fn a_header_carries_the_variables_value_which_is_never_printed() {
    let (url, heads) = recording_server();
    let secret = "Bearer s3cret-token-value";
    let o = mcpstorm_env(
        &["tools", "--http", &url, "--header", "Authorization=MCPSTORM_TEST_TOKEN"],
        &[("MCPSTORM_TEST_TOKEN", secret)],
    );
    // The server refuses: a failed command, not bad input.
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(!text(&o).contains("s3cret"), "the secret was printed: {}", text(&o));
    let heads = heads.lock().unwrap();
    assert!(!heads.is_empty(), "no request reached the server");
    for head in heads.iter() {
        assert!(
            head.to_ascii_lowercase().contains(&format!("authorization: {}", secret.to_ascii_lowercase())),
            "{head}"
        );
    }
}

#[test]
fn bad_http_input_is_exit_2_before_anything_is_dialled() {
    let (url, heads) = recording_server();
    let cases: [(&[&str], &str); 5] = [
        (&["tools", "--http", &url, "--header", "Authorization=MCPSTORM_TEST_UNSET"], "MCPSTORM_TEST_UNSET is not set"),
        (&["call", "--http", "ftp://example.com/mcp", "echo"], "the scheme must be http or https"),
        (&["diagnose", "--http", "https://no!such-host/mcp"], "TLS can verify"),
        (&["tools", "--http", &url, "--header", "Bad Name=PATH"], "header \"Bad Name\""),
        (&["tools", "--tcp", "127.0.0.1:1", "--header", "Authorization=PATH"], "cannot be used with"),
    ];
    for (args, why) in cases {
        let o = mcpstorm(args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(why), "{args:?}: {stderr}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    assert!(heads.lock().unwrap().is_empty(), "a request was sent");
}

/// The `diagnose` line of `layer`.
fn line<'a>(stdout: &'a str, layer: &str) -> &'a str {
    let checks = stdout.lines().filter(|l| !l.starts_with(' '));
    checks
        .into_iter()
        .find(|l| l.split_whitespace().nth(1) == Some(layer))
        .unwrap_or_else(|| panic!("{layer}: {stdout}"))
}

#[test]
fn diagnose_reports_the_transport_layer() {
    // The modern era: SSE answers, no session; the version header is the modern one.
    let fake = Fake::start_http(None);
    let o = mcpstorm(&["diagnose", "--http", &fake.url(), "--pings", "2"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let checks = stdout.lines().filter(|l| !l.starts_with(' '));
    let names: Vec<&str> = checks.filter_map(|l| l.split_whitespace().nth(1)).take(3).collect();
    assert_eq!(names, ["connect", "transport", "handshake"], "{stdout}");
    let transport = line(&stdout, "transport");
    assert!(transport.starts_with("PASS"), "{stdout}");
    for part in
        ["server/discover: HTTP 200 text/event-stream (SSE)", "no session id", "MCP-Protocol-Version 2026-07-28"]
    {
        assert!(transport.contains(part), "{part}: {stdout}");
    }

    // The legacy era: JSON answers and a session id, of which only a prefix is shown (JSON report included).
    let legacy = Fake::start_http(Some(LEGACY_JSON));
    let o = mcpstorm(&["diagnose", "--http", &legacy.url(), "--pings", "1", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("diagnose --json");
    let check = &report["checks"][1];
    assert_eq!((check["name"].as_str(), check["status"].as_str()), (Some("transport"), Some("pass")), "{check}");
    let exchanges = check["data"]["exchanges"].as_array().expect("exchanges");
    let init = exchanges.iter().find(|e| e["method"] == "initialize").expect("initialize exchange");
    assert_eq!((init["status"].as_u64(), init["body"].as_str()), (Some(200), Some("json")), "{init}");
    let len = init["session_len"].as_u64().expect("a session id came");
    let prefix = init["session_prefix"].as_str().expect("its prefix");
    assert!(prefix.len() <= 6 && (prefix.len() as u64) < len, "{init}");
    assert!(check["summary"].as_str().unwrap().contains("MCP-Protocol-Version 2025-11-25 (sent)"), "{check}");

    // Nothing listening: connect fails, the transport layer is skipped.
    let o = mcpstorm(&["diagnose", "--http", "http://127.0.0.1:1/mcp"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(line(&stdout, "connect").starts_with("FAIL"), "{stdout}");
    assert!(line(&stdout, "transport").starts_with("SKIP"), "{stdout}");
}

#[test]
fn diagnose_fails_the_transport_layer_on_a_401_with_a_hint() {
    let (url, _) = recording_server();
    let o = mcpstorm(&["diagnose", "--http", &url]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let transport = line(&stdout, "transport");
    assert!(transport.starts_with("FAIL") && transport.contains("HTTP 401 text/plain"), "{stdout}");
    assert!(stdout.contains("hint: the server wants credentials: send them with --header"), "{stdout}");
}
