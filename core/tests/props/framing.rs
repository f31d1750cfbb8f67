//! Garbage never panics; the line framing stays bounded and resynchronises on the next newline, and delivers a
//! message sequence intact whatever the read splits.

use mcpstorm_core::jsonrpc::{Message, RequestId};
use mcpstorm_core::{MessageSource, transport::FrameError, transport::LineSource};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::json;
use tokio::io::{AsyncWriteExt, DuplexStream};

use crate::garbage::{junk_frame, junk_stream};
use crate::messages::message_approx_eq;
use crate::{HANG, config, paused_runtime};

proptest! {
    #![proptest_config(config(1024))]

    /// Any bytes decode to `Ok` or `Err`, never a panic; whatever decodes re-encodes to one line that decodes to
    /// the same message (decoding normalises, it never produces a message the encoder cannot carry).
    #[test]
    fn decode_never_panics_and_what_decodes_round_trips(bytes in junk_frame()) {
        if let Ok(m) = Message::decode(&bytes) {
            let again = m.encode();
            prop_assert!(!again.contains(&b'\n'));
            let back = Message::decode(&again);
            prop_assert!(
                back.as_ref().is_ok_and(|b| message_approx_eq(b, &m)),
                "{:?} decoded to {:?}, re-encoded as {:?}, decoded to {:?}",
                String::from_utf8_lossy(&bytes), m, String::from_utf8_lossy(&again), back
            );
        }
    }
}

/// What the framing must yield for `input`: one item per newline-terminated line (oversize lines as errors, blank
/// lines skipped, one trailing CR stripped), then the unterminated tail, if any, separately.
#[derive(Debug)]
struct ExpectedFrames {
    lines: Vec<Expect>,
    tail: Vec<u8>,
}

#[derive(Debug)]
enum Expect {
    Frame(Vec<u8>),
    TooLarge,
    /// Over the limit only by its trailing CR. The implementation counts the CR (checking the size before stripping
    /// it) and rejects the line; accepting the stripped frame (or skipping it, if blank) would be right as well.
    CrAtLimit(Vec<u8>),
}

fn expected_frames(input: &[u8], max: usize) -> ExpectedFrames {
    let mut parts: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    let tail = parts.pop().unwrap_or_default().to_vec();
    let mut lines = Vec::new();
    for line in parts {
        let stripped = line.strip_suffix(b"\r").unwrap_or(line);
        if stripped.len() > max {
            lines.push(Expect::TooLarge);
        } else if line.len() > max {
            lines.push(Expect::CrAtLimit(stripped.to_vec()));
        } else if !stripped.iter().all(u8::is_ascii_whitespace) {
            lines.push(Expect::Frame(stripped.to_vec()));
        }
    }
    ExpectedFrames { lines, tail }
}

/// A reader that yields `input` through a pipe of `pipe` bytes, in write chunks of `chunk`, then end of stream.
fn trickle(input: Vec<u8>, pipe: usize, chunk: usize) -> DuplexStream {
    let (mut ours, theirs) = tokio::io::duplex(pipe);
    tokio::spawn(async move {
        for part in input.chunks(chunk.max(1)) {
            if ours.write_all(part).await.is_err() {
                return;
            }
        }
    });
    theirs
}

fn small_message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (0i64..10_000, "[a-z/]{1,12}").prop_map(|(id, m)| Message::request(id, m, None)),
        "[a-z/]{1,12}".prop_map(|m| Message::notification(m, Some(json!({"k": 1})))),
        (0i64..10_000, any::<i32>()).prop_map(|(id, v)| Message::result(RequestId::Number(id), json!(v))),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    /// `LineSource` fed garbage with a random `max_frame`: no panic, no frame over the limit, exactly the frames the
    /// framing rules give, end of stream reached, and a valid frame after the garbage and a newline always arrives
    /// last (resynchronisation), both as a raw frame and as a decoded message.
    #[test]
    fn line_source_survives_garbage_and_resynchronises(
        garbage in junk_stream(),
        max_frame in prop_oneof![1usize..=512, 64usize..=512],
        pipe in 1usize..128,
        chunk in 1usize..200,
        valid in prop::option::of(small_message()),
    ) {
        let mut input = garbage;
        let valid_frame = valid.as_ref().map(Message::encode);
        if let Some(frame) = &valid_frame {
            input.push(b'\n');
            input.extend_from_slice(frame);
            input.push(b'\n');
        }
        let expected = expected_frames(&input, max_frame);
        let (frames, messages) = paused_runtime().block_on(async {
            let mut source = LineSource::new(trickle(input.clone(), pipe, chunk), max_frame);
            let mut frames = Vec::new();
            loop {
                match tokio::time::timeout(HANG, source.next_frame()).await {
                    Err(_) => return Err(TestCaseError::fail("next_frame hung before end of stream")),
                    Ok(None) => break,
                    Ok(Some(f)) => frames.push(f),
                }
            }
            let mut source = LineSource::new(trickle(input.clone(), pipe, chunk), max_frame);
            let mut messages = Vec::new();
            loop {
                match tokio::time::timeout(HANG, source.recv()).await {
                    Err(_) => return Err(TestCaseError::fail("recv hung before end of stream")),
                    Ok(None) => break,
                    Ok(Some(m)) => messages.push(m),
                }
            }
            Ok((frames, messages))
        })?;

        for f in &frames {
            match f {
                Ok(frame) => {
                    prop_assert!(frame.len() <= max_frame, "frame of {} bytes over {max_frame}", frame.len());
                    prop_assert!(!frame.contains(&b'\n'));
                }
                Err(FrameError::TooLarge { len, max }) => {
                    prop_assert!(*len > max_frame && *max == max_frame, "TooLarge {len} {max} for {max_frame}")
                }
                Err(e) => prop_assert!(false, "next_frame returned {e:?}"),
            }
        }
        // Newline-terminated lines: exactly as the rules say (oversize length is only "at least", so not compared).
        let mut n = 0;
        for want in &expected.lines {
            let got = frames.get(n);
            let too_large = matches!(got, Some(Err(FrameError::TooLarge { .. })));
            let consumed = match want {
                Expect::Frame(w) => got == Some(&Ok(w.clone())),
                Expect::TooLarge => too_large,
                Expect::CrAtLimit(w) => too_large || got == Some(&Ok(w.clone())),
            };
            let skipped = matches!(want, Expect::CrAtLimit(w) if w.iter().all(u8::is_ascii_whitespace));
            prop_assert!(consumed || skipped, "frame {n}: got {:?}, want {:?}", got, want);
            n += usize::from(consumed);
        }
        prop_assert!(frames.len() <= n + 1, "{} frames, expected {n} (+ tail)", frames.len());
        // The unterminated tail: an oversize one is one error; otherwise a frame (raw or CR-stripped), or nothing
        // when it is empty or blank.
        let tail = &expected.tail;
        match frames.get(n) {
            None => prop_assert!(tail.iter().all(u8::is_ascii_whitespace) && tail.len() <= max_frame),
            Some(Err(FrameError::TooLarge { .. })) => prop_assert!(tail.len() > max_frame),
            Some(Ok(f)) => prop_assert!(f == tail || Some(f.as_slice()) == tail.strip_suffix(b"\r")),
            Some(other) => prop_assert!(false, "tail gave {other:?}"),
        }
        prop_assert_eq!(messages.len(), frames.len(), "recv and next_frame disagree on the item count");
        if let (Some(valid), Some(frame)) = (&valid, &valid_frame) {
            if frame.len() <= max_frame {
                prop_assert_eq!(frames.last(), Some(&Ok(frame.clone())));
                prop_assert_eq!(messages.last(), Some(&Ok(valid.clone())));
            } else {
                let too_large = matches!(frames.last(), Some(Err(FrameError::TooLarge { .. })));
                prop_assert!(too_large, "oversize valid frame: last item {:?}", frames.last());
            }
        }
    }
}
