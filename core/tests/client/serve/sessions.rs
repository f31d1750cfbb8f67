//! 2025-11-25 session ids as signed tokens, over raw HTTP: a second front with the same key continues a session,
//! forged and tampered ids are refused, a DELETE is refused by the process that saw it, a cut request stream is
//! resumed with `Last-Event-ID`; and the 2026-07-28 header checks.

use std::sync::atomic::Ordering;

use mcpstorm_core::serve::{FrontLimits, Keys, SessionKey};
use serde_json::json;

use super::*;

fn with_session(id: &str) -> [(&str, &str); 4] {
    [JSON_AND_SSE, CT_JSON, ("mcp-session-id", id), ("mcp-protocol-version", "2025-11-25")]
}

async fn whoami_on(addr: &str, session: &str) -> Answer {
    send(addr, "POST", &with_session(session), &call_body(2, "whoami", json!({}), None)).await
}

#[tokio::test]
async fn a_second_front_with_the_same_key_continues_the_session_and_others_refuse_it() {
    let key = SessionKey::random().unwrap();
    let echo = Echo::new();
    let (_a, a) = start(&echo, Keys::new(key.clone()), FrontLimits::default()).await;
    let (_b, b) = start(&echo, Keys::new(key.clone()), FrontLimits::default()).await;
    let (_c, c) = start(&echo, Keys::random().unwrap(), FrontLimits::default()).await;
    let id = open_session(&a).await;
    let on_a = whoami_on(&a, &id).await;
    let on_b = whoami_on(&b, &id).await;
    assert_eq!((on_a.status, on_b.status), (200, 200), "{on_b:?}");
    let who = |answer: &Answer| answer.json()["result"]["content"][0]["text"].as_str().map(str::to_owned);
    assert_eq!(who(&on_a), who(&on_b), "the same session, era, version and client on both");
    assert!(who(&on_b).is_some_and(|w| w.contains("raw-agent") && w.contains("2025-11-25")), "{on_b:?}");
    // A front with another key: not our session.
    let on_c = whoami_on(&c, &id).await;
    assert_eq!(on_c.status, 404);
    assert_eq!(on_c.json()["error"]["code"], -32001);
    // Rotation: a front signing with a new key still accepts the old key's sessions.
    let (_d, d) =
        start(&echo, Keys { current: SessionKey::random().unwrap(), previous: vec![key] }, FrontLimits::default())
            .await;
    assert_eq!(whoami_on(&d, &id).await.status, 200);
}

#[tokio::test]
async fn forged_tampered_and_missing_session_ids_are_refused() {
    let (_echo, _front, addr) = start_default().await;
    let id = open_session(&addr).await;
    let (signed, tag) = id.rsplit_once('.').unwrap();
    // One character of the claims changed, the tag kept; the tag changed; a plain table key; no dots at all.
    let mut claims: Vec<u8> = signed.bytes().collect();
    let at = claims.len() - 3;
    claims[at] = if claims[at] == b'A' { b'B' } else { b'A' };
    let tampered = format!("{}.{tag}", String::from_utf8(claims).unwrap());
    let retagged = format!("{signed}.{}", "A".repeat(tag.len()));
    for bad in [tampered.as_str(), retagged.as_str(), "session-1", "v1.e30.AAAA"] {
        let answer = whoami_on(&addr, bad).await;
        assert_eq!(answer.status, 404, "{bad}: {answer:?}");
    }
    let missing = send(&addr, "POST", &[JSON_AND_SSE, CT_JSON], &call_body(2, "whoami", json!({}), None)).await;
    assert_eq!(missing.status, 400);
    assert_eq!(whoami_on(&addr, &id).await.status, 200, "the genuine id still works");
}

#[tokio::test]
async fn a_deleted_session_is_refused_by_the_process_that_saw_the_delete() {
    let key = SessionKey::random().unwrap();
    let echo = Echo::new();
    let (a_front, a) = start(&echo, Keys::new(key.clone()), FrontLimits::default()).await;
    let (_b, b) = start(&echo, Keys::new(key), FrontLimits::default()).await;
    let id = open_session(&a).await;
    assert_eq!(a_front.live_sessions(), 1);
    let deleted = send(&a, "DELETE", &[("mcp-session-id", &id)], "").await;
    assert_eq!(deleted.status, 200);
    assert_eq!(a_front.live_sessions(), 0);
    assert_eq!(whoami_on(&a, &id).await.status, 404);
    assert_eq!(send(&a, "DELETE", &[("mcp-session-id", &id)], "").await.status, 404);
    // A revocation is per process: the other replica did not see it.
    assert_eq!(whoami_on(&b, &id).await.status, 200);
}

#[tokio::test]
async fn a_request_that_may_stream_gets_one_json_body_when_its_answer_comes_first() {
    let (_echo, _front, addr) = start_default().await;
    let id = open_session(&addr).await;
    // A progress token allows a stream; `whoami` answers before any progress, so one JSON body carries it.
    let quick = send(&addr, "POST", &with_session(&id), &call_body(3, "whoami", json!({}), Some(1))).await;
    assert_eq!(quick.status, 200, "{quick:?}");
    assert_eq!(quick.header("content-type"), Some("application/json"), "{quick:?}");
    assert_eq!(quick.json()["id"], 3);
    // `echo` sends progress first: the stream starts at the first notification and carries it, then the answer.
    let streamed = send(&addr, "POST", &with_session(&id), &call_body(4, "echo", json!({"text": "hi"}), Some(2))).await;
    assert_eq!(streamed.header("content-type"), Some("text/event-stream"), "{streamed:?}");
    let events = streamed.events();
    assert_eq!(events.first().map(|e| e["method"].clone()), Some(json!("notifications/progress")), "{events:?}");
    assert_eq!(events.last().map(|e| e["result"]["content"][0]["text"].clone()), Some(json!("hi")), "{events:?}");
    // A client that takes only SSE gets a stream even for a quick answer.
    let sse_only =
        [("accept", "text/event-stream"), CT_JSON, ("mcp-session-id", &id), ("mcp-protocol-version", "2025-11-25")];
    let only = send(&addr, "POST", &sse_only, &call_body(5, "whoami", json!({}), None)).await;
    assert_eq!(only.header("content-type"), Some("text/event-stream"), "{only:?}");
    assert_eq!(only.events().last().map(|e| e["id"].clone()), Some(json!(5)));
}

#[tokio::test]
async fn a_cut_request_stream_is_resumed_with_last_event_id() {
    let (echo, _front, addr) = start_default().await;
    let id = open_session(&addr).await;
    // A progress token allows an SSE answer; `hold` answers only when the gate opens, so after `STREAM_AFTER` the
    // stream starts with its priming event.
    let response = start_request(&addr, "POST", &with_session(&id), &call_body(7, "hold", json!({}), Some(1))).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let mut buffer = String::new();
    let (priming, data) = next_event(&mut body, &mut buffer).await.expect("the priming event");
    assert_eq!(data, "");
    echo.until_held().await;
    // The agent's connection drops; a 2025-11-25 request goes on.
    drop(body);
    echo.0.gate.add_permits(1);
    let resumed = send(
        &addr,
        "GET",
        &[("accept", "text/event-stream"), ("mcp-session-id", &id), ("last-event-id", &priming)],
        "",
    )
    .await;
    assert_eq!(resumed.status, 200, "{resumed:?}");
    let events = resumed.events();
    assert_eq!(events.len(), 1, "only what followed the priming event: {events:?}");
    assert_eq!(events[0]["id"], 7);
    assert_eq!(events[0]["result"]["content"][0]["text"], "released");
    assert_eq!(echo.0.cancelled.load(Ordering::SeqCst), 0);
    let unknown =
        send(&addr, "GET", &[("accept", "text/event-stream"), ("mcp-session-id", &id), ("last-event-id", "999-1")], "")
            .await;
    assert_eq!(unknown.status, 400);
}

#[tokio::test]
async fn modern_requests_must_mirror_their_headers_and_speak_a_known_version() {
    let (_echo, _front, addr) = start_default().await;
    let body = |version: &str| {
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "m"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string()
    };
    let headers = |version: &'static str, name: &'static str| {
        [JSON_AND_SSE, CT_JSON, ("mcp-protocol-version", version), ("mcp-method", "tools/call"), ("mcp-name", name)]
    };
    let ok = send(&addr, "POST", &headers("2026-07-28", "echo"), &body("2026-07-28")).await;
    assert_eq!(ok.status, 200, "{ok:?}");
    assert_eq!(ok.json()["result"]["content"][0]["text"], "m");
    assert_eq!(ok.json()["result"]["resultType"], "complete");
    assert_eq!(ok.header("mcp-session-id"), None);
    let mismatch = send(&addr, "POST", &headers("2026-07-28", "other"), &body("2026-07-28")).await;
    assert_eq!((mismatch.status, mismatch.json()["error"]["code"].as_i64()), (400, Some(-32020)));
    let unsupported = send(&addr, "POST", &headers("2026-07-28", "echo"), &body("2099-01-01")).await;
    assert_eq!(
        (unsupported.status, unsupported.json()["error"]["code"].as_i64()),
        (400, Some(-32020)),
        "the header differs from the body"
    );
    let both = send(&addr, "POST", &headers("2099-01-01", "echo"), &body("2099-01-01")).await;
    assert_eq!((both.status, both.json()["error"]["code"].as_i64()), (400, Some(-32022)), "{both:?}");
    let get = send(&addr, "GET", &[("mcp-protocol-version", "2026-07-28")], "").await;
    assert_eq!(get.status, 405);
}
