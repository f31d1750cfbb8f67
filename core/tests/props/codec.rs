//! The JSON-RPC codec round-trips every message and always fits the newline framing.

use mcpstorm_core::jsonrpc::{ErrorObject, Message, RequestId};
use mcpstorm_core::{MessageSink, MessageSource, transport::LineSink, transport::LineSource};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::Value;

use crate::messages::message;
use crate::{HANG, config, paused_runtime};

proptest! {
    #![proptest_config(config(512))]

    /// `decode(encode(m)) == m` for every message, and the encoding is one line.
    #[test]
    fn codec_round_trips_every_message(msg in message()) {
        let bytes = msg.encode();
        prop_assert!(!bytes.contains(&b'\n'), "raw newline in {:?}", String::from_utf8_lossy(&bytes));
        prop_assert!(!bytes.contains(&b'\r'), "raw CR in {:?}", String::from_utf8_lossy(&bytes));
        prop_assert!(std::str::from_utf8(&bytes).is_ok());
        prop_assert_eq!(Message::decode(&bytes), Ok(msg));
    }
}

proptest! {
    #![proptest_config(config(128))]

    /// A sequence of messages through `LineSink` -> a tiny duplex pipe (frames split across reads) -> `LineSource`
    /// arrives complete and in order; a frame exactly at `max_frame` is accepted.
    #[test]
    fn line_framing_delivers_every_message_in_order(
        msgs in prop::collection::vec(message(), 0..12),
        pipe in 1usize..64,
        flush_each in any::<bool>(),
        slack in 0usize..3,
    ) {
        let max_frame = msgs.iter().map(|m| m.encode().len()).max().unwrap_or(1) + slack;
        let got = paused_runtime().block_on(async {
            let (ours, theirs) = tokio::io::duplex(pipe);
            let to_send = msgs.clone();
            let writer = tokio::spawn(async move {
                let mut sink = LineSink::new(ours);
                for m in &to_send {
                    sink.feed(m).await?;
                    if flush_each {
                        sink.flush().await?;
                    }
                }
                sink.close().await;
                Ok::<_, mcpstorm_core::TransportError>(())
            });
            let mut source = LineSource::new(theirs, max_frame);
            let mut got = Vec::new();
            loop {
                match tokio::time::timeout(HANG, source.recv()).await {
                    Err(_) => return Err(TestCaseError::fail("LineSource hung before end of stream")),
                    Ok(None) => break,
                    Ok(Some(item)) => got.push(item),
                }
            }
            match writer.await {
                Ok(Ok(())) => Ok(got),
                other => Err(TestCaseError::fail(format!("writer failed: {other:?}"))),
            }
        })?;
        let want: Vec<_> = msgs.into_iter().map(Ok).collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn error_data_null_is_not_preserved() {
    // Documents a lossy corner of the codec rather than asserting it is right: `data: null` is encoded (the field
    // is `Some`) but decodes as `None`, so this one `ErrorObject` does not round-trip. JSON-RPC gives `data` no
    // null semantics, so nothing downstream can tell the two apart; the generator above excludes it.
    let m = Message::error(
        Some(RequestId::Number(1)),
        ErrorObject { code: 1, message: "m".into(), data: Some(Value::Null) },
    );
    let bytes = m.encode();
    assert_eq!(bytes, br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":null}}"#);
    let back = Message::decode(&bytes).expect("decodes");
    assert_eq!(
        back,
        Message::error(Some(RequestId::Number(1)), ErrorObject { code: 1, message: "m".into(), data: None })
    );
}
