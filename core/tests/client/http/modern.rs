//! 2026-07-28 Streamable HTTP: no session, the request metadata headers, cancellation by closing the stream, and
//! the era's errors as HTTP 400/404 with JSON-RPC bodies.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcpstorm_core::{CallError, CallOptions, CancelToken};
use serde_json::{Value, json};

use super::client;
use super::peer::*;

/// A modern server: answers discover, tools/list, and `call` for tools/call.
fn modern(call: impl Fn(&Req) -> Vec<Act> + Send + Sync + 'static) -> Script {
    Arc::new(move |req: &Req| match req.rpc().as_str() {
        "server/discover" => vec![json_reply(req, discover_result())],
        "tools/list" => vec![json_reply(req, tools())],
        "tools/call" => call(req),
        "GET" | "DELETE" => vec![respond("405 Method Not Allowed", "", &[], b"")],
        _ => {
            let body =
                json!({"jsonrpc": "2.0", "id": req.id(), "error": {"code": -32601, "message": "Method not found"}});
            vec![respond("404 Not Found", "application/json", &[], body.to_string().as_bytes())]
        }
    })
}

fn meta_version(req: &Req) -> Option<String> {
    req.json()["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str().map(str::to_owned)
}

#[tokio::test]
async fn every_request_carries_the_request_metadata_headers_and_no_session() {
    let peer = Peer::start(modern(|req| vec![json_reply(req, text("ok"))])).await;
    let c = client(&peer);
    c.call_tool("echo", json!({"x": 1}), CallOptions::default()).await.unwrap();
    let log = peer.requests();
    assert_eq!(log.iter().map(Req::rpc).collect::<Vec<_>>(), ["server/discover", "tools/list", "tools/call"]);
    for req in &log {
        assert_eq!(req.method, "POST");
        assert_eq!(req.header("mcp-protocol-version").map(str::to_owned), meta_version(req), "{req:?}");
        assert_eq!(req.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(req.header("mcp-method").map(str::to_owned), Some(req.rpc()));
        assert_eq!(req.header("mcp-session-id"), None);
    }
    assert_eq!(log[2].header("mcp-name"), Some("echo"));
    assert_eq!(log[1].header("mcp-name"), None, "tools/list names nothing");
    // No GET stream and no notifications in this era.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(peer.requests().iter().all(|r| r.method == "POST" && !r.rpc().starts_with("notifications/")));
}

#[tokio::test]
async fn cancelling_closes_the_stream_instead_of_posting_a_notification() {
    let hung_up = Arc::new(AtomicBool::new(false));
    let flag = hung_up.clone();
    let peer = Peer::start(modern(move |req| {
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": req.json()["params"]["_meta"]["progressToken"], "progress": 1}});
        vec![sse_head(&[]), sse_event(&progress), Act::AwaitHangUp(flag.clone())]
    }))
    .await;
    let c = Arc::new(client(&peer));
    let cancel = CancelToken::new();
    let opts = CallOptions { cancel: Some(cancel.clone()), ..CallOptions::default() };
    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call_tool("echo", json!({}), opts).await }
    });
    peer.wait_for(|r| r.rpc() == "tools/call").await;
    cancel.cancel("user");
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, CallError::Local(mcpstorm_core::LocalError::Cancelled(_))), "{err:?}");
    for _ in 0..500 {
        if hung_up.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(hung_up.load(Ordering::SeqCst), "the server never saw the stream close");
    assert_eq!(peer.count("notifications/cancelled"), 0);
}

#[tokio::test]
async fn era_errors_in_http_400_and_404_reach_the_caller_as_json_rpc_errors() {
    let peer = Peer::start(modern(|req| {
        let error = json!({"code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "1999-01-01"}});
        let body = json!({"jsonrpc": "2.0", "id": req.id(), "error": error});
        vec![respond("400 Bad Request", "application/json", &[], body.to_string().as_bytes())]
    }))
    .await;
    let c = client(&peer);
    let err = c.call_tool("echo", json!({}), CallOptions::default()).await.unwrap_err();
    let CallError::Protocol(obj) = &err else { panic!("{err:?}") };
    assert_eq!(obj.code, -32022);
    // The era layer saw the refusal: the next session detects the era again.
    let before = peer.count("server/discover");
    c.list_tools().await.unwrap();
    assert_eq!(peer.count("server/discover"), before + 1);

    // 404 with -32601: an unknown method, not a lost session.
    let s = c.session().await.unwrap();
    let err = s.conn.request("no/such", Some(Value::Object(Default::default())), CallOptions::default()).await;
    let Err(CallError::Protocol(obj)) = err else { panic!("{err:?}") };
    assert_eq!(obj.code, -32601);
}
