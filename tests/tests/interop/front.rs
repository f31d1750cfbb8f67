//! The official Python SDK's client (`tests/peers/py_http_client.py`) through the core's MCP front
//! (`mcpstorm_core::serve`), in both revisions: it lists the tools and calls two, one reporting progress over SSE.
//! The service behind the front implements the script's tools itself.

use std::sync::Arc;
use std::time::Duration;

use crate::http_fake::python_client_sees;
use mcpstorm_core::TokioClock;
use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpstorm_core::mcp::Implementation;
use mcpstorm_core::serve::{
    Front, FrontLimits, Keys, RequestCtx, ServerDescription, Service, ServiceAnswer, ServiceFuture,
};
use serde_json::{Value, json};

/// `echo` (its `message` back) and `slow_progress` (`steps` progress notifications `step_ms` apart).
#[derive(Debug)]
struct Tools;

fn text(s: String) -> Value {
    json!({"content": [{"type": "text", "text": s}], "isError": false})
}

async fn call(ctx: RequestCtx, params: Value) -> Result<Value, ErrorObject> {
    let args = &params["arguments"];
    match params["name"].as_str().unwrap_or_default() {
        "echo" => Ok(text(args["message"].as_str().unwrap_or_default().to_owned())),
        "slow_progress" => {
            let steps = args["steps"].as_u64().unwrap_or(1);
            for step in 1..=steps {
                tokio::time::sleep(Duration::from_millis(args["step_ms"].as_u64().unwrap_or(0))).await;
                ctx.progress.send(step as f64, Some(steps as f64), None).await;
            }
            Ok(text(format!("done {steps} steps")))
        }
        other => Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("unknown tool {other}"))),
    }
}

impl Service for Tools {
    fn request(&self, ctx: RequestCtx, method: String, params: Option<Value>) -> ServiceFuture {
        Box::pin(async move {
            let answered = match method.as_str() {
                "tools/list" => {
                    let tools =
                        ["echo", "slow_progress"].map(|n| json!({"name": n, "inputSchema": {"type": "object"}}));
                    Ok(json!({ "tools": tools }))
                }
                "tools/call" => call(ctx, params.unwrap_or_default()).await,
                other => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("Method not found: {other}"))),
            };
            answered.map(ServiceAnswer::Tree)
        })
    }

    fn describe(&self) -> ServerDescription {
        ServerDescription {
            capabilities: json!({"tools": {"listChanged": true}}),
            server_info: Implementation::new("mcpstorm-front", "0"),
            instructions: None,
        }
    }
}

async fn python_client_through_the_front(mode: &str, version: &str) {
    let clock = Arc::new(TokioClock::new(0));
    let front =
        Front::new(Arc::new(Tools), Keys::random().expect("key"), FrontLimits::default(), clock).expect("front");
    let addr = front.bind("127.0.0.1:0").await.expect("bind loopback");
    let seen = peer_or_skip!(python_client_sees(&addr.to_string(), mode).await);
    assert_eq!(
        seen,
        json!({
            "protocol_version": version, "server": "mcpstorm-front", "tools": ["echo", "slow_progress"],
            "echo": "hello over http", "echo_error": false, "slow": "done 3 steps", "progress": [1.0, 2.0, 3.0],
        }),
        "{mode}"
    );
    front.shutdown(Duration::from_secs(5)).await;
    if mode == "legacy" {
        assert_eq!(front.live_sessions(), 0, "the client's DELETE ended its session");
    }
}

#[tokio::test]
async fn python_sdk_client_through_the_front_in_both_eras() {
    for (mode, version) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        python_client_through_the_front(mode, version).await;
    }
}
