//! The double's own tests: the request codec on partial, pipelined and oversized input; expiry on the double's clock
//! (tokio's paused time here, turmoil's in the simulator); the fault knobs. What Redis itself does is checked by the
//! differential test in `tests/tests/interop/redis.rs`.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::TokioClock;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::reply::{Reply, unknown_command};
use super::request::{Request, RequestLimits, parse, string2ll};
use super::{RedisConfig, RedisDouble};

fn argv(words: &[&str]) -> Vec<Vec<u8>> {
    words.iter().map(|w| w.as_bytes().to_vec()).collect()
}

const LIMITS: RequestLimits = RequestLimits { max_args: 4, max_bulk: 8 };

fn protocol_error(text: &str) -> Request {
    Request::ProtocolError(text.as_bytes().to_vec())
}

#[test]
fn a_frame_cut_anywhere_is_incomplete_until_its_last_byte() {
    let frame = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    for cut in 0..frame.len() {
        assert_eq!(parse(&frame[..cut], &LIMITS, true), Request::Incomplete, "cut at {cut}");
    }
    assert_eq!(parse(frame, &LIMITS, true), Request::Command { argv: argv(&["GET", "k"]), consumed: frame.len() });
    let line = b"SET k \"a b\"\r\n";
    for cut in 0..line.len() {
        assert_eq!(parse(&line[..cut], &LIMITS, true), Request::Incomplete, "inline cut at {cut}");
    }
}

#[test]
fn pipelined_frames_are_read_one_at_a_time() {
    let buf = b"*1\r\n$4\r\nPING\r\nECHO x\n*0\r\n*1\r\n$4\r\nQU";
    let mut pos = 0;
    let mut seen = Vec::new();
    while let Request::Command { argv, consumed } = parse(&buf[pos..], &LIMITS, true) {
        seen.push(argv);
        pos += consumed;
    }
    assert_eq!(seen, [argv(&["PING"]), argv(&["ECHO", "x"]), Vec::new()]);
    assert_eq!(&buf[pos..], b"*1\r\n$4\r\nQU");
}

#[test]
fn oversized_requests_are_refused_before_their_data_arrives() {
    // Over the double's bounds: Redis's error for one over its own.
    assert_eq!(parse(b"*5\r\n", &LIMITS, true), protocol_error("invalid multibulk length"));
    assert_eq!(parse(b"*1\r\n$9\r\n", &LIMITS, true), protocol_error("invalid bulk length"));
    assert_eq!(parse(b"*3000000000\r\n", &RequestLimits::default(), true), protocol_error("invalid multibulk length"));
    // Before AUTH, Redis's tighter limits (the double's are tighter still here).
    let roomy = RequestLimits { max_args: 100, max_bulk: 1 << 20 };
    assert_eq!(parse(b"*11\r\n", &roomy, false), protocol_error("unauthenticated multibulk length"));
    assert_eq!(parse(b"*1\r\n$16385\r\n", &roomy, false), protocol_error("unauthenticated bulk length"));
    assert_eq!(parse(b"*1\r\n$16385\r\n", &roomy, true), Request::Incomplete);
    // No line end within 64 KiB.
    assert_eq!(parse(&vec![b'a'; 64 * 1024 + 1], &LIMITS, true), protocol_error("too big inline request"));
    assert_eq!(parse(&vec![b'a'; 64 * 1024], &LIMITS, true), Request::Incomplete);
    let count = [&b"*"[..], &vec![b'1'; 64 * 1024]].concat();
    assert_eq!(parse(&count, &LIMITS, true), protocol_error("too big mbulk count string"));
}

#[test]
fn malformed_headers_get_redis_texts() {
    assert_eq!(parse(b"*1\r\nfoo\r\n", &LIMITS, true), protocol_error("expected '$', got 'f'"));
    assert_eq!(parse(b"*1\r\n\r\n", &LIMITS, true), protocol_error("expected '$', got '\r'"));
    assert_eq!(parse(b"*1\r\n$-1\r\n", &LIMITS, true), protocol_error("invalid bulk length"));
    assert_eq!(parse(b"*x\r\n", &LIMITS, true), protocol_error("invalid multibulk length"));
    // A NUL hides the header's end from Redis's strchr: it waits.
    assert_eq!(parse(b"*1\x00\r\n", &LIMITS, true), Request::Incomplete);
    assert_eq!(parse(b"SET \"a\r\n", &LIMITS, true), protocol_error("unbalanced quotes in request"));
}

#[test]
fn integers_parse_as_redis_string2ll() {
    for (text, want) in [
        ("0", Some(0)),
        ("-1", Some(-1)),
        ("9223372036854775807", Some(i64::MAX)),
        ("-9223372036854775808", Some(i64::MIN)),
        ("9223372036854775808", None),
        ("01", None),
        ("-0", None),
        ("+1", None),
        (" 1", None),
        ("", None),
        ("-", None),
    ] {
        assert_eq!(string2ll(text.as_bytes()), want, "{text:?}");
    }
}

#[test]
fn replies_encode_as_resp2() {
    let reply = Reply::Array(vec![Reply::bulk(b"a"), Reply::Nil, Reply::Integer(-3), Reply::err("ERR x\r\ny")]);
    assert_eq!(reply.to_bytes(), b"*4\r\n$1\r\na\r\n$-1\r\n:-3\r\n-ERR x  y\r\n");
    let long = unknown_command(&[b'N'; 200], &[vec![b'a'; 130], b"b".to_vec()]);
    let want =
        format!("-ERR unknown command '{}', with args beginning with: '{}' \r\n", "N".repeat(128), "a".repeat(128));
    assert_eq!(long.to_bytes(), want.as_bytes());
}

/// A client connection to `double` over an in-memory pipe.
fn connect(double: &RedisDouble) -> DuplexStream {
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (reader, writer) = tokio::io::split(server);
    let double = double.clone();
    tokio::spawn(async move { double.serve_connection(reader, writer).await });
    client
}

async fn expect(conn: &mut DuplexStream, send: &[u8], want: &[u8]) {
    conn.write_all(send).await.expect("write");
    let mut got = vec![0; want.len()];
    conn.read_exact(&mut got).await.expect("read the reply");
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(want),
        "after {:?}",
        String::from_utf8_lossy(send)
    );
}

fn double(config: RedisConfig) -> RedisDouble {
    RedisDouble::with_clock(config, Arc::new(TokioClock::new(1_700_000_000_000)))
}

#[tokio::test(start_paused = true)]
async fn keys_expire_on_the_doubles_clock() {
    let redis = double(RedisConfig::default());
    let mut conn = connect(&redis);
    expect(&mut conn, b"SET k v PX 100\r\nSET h v EX 1\r\n", b"+OK\r\n+OK\r\n").await;
    tokio::time::advance(Duration::from_millis(99)).await;
    expect(&mut conn, b"PTTL k\r\nGET k\r\n", b":1\r\n$1\r\nv\r\n").await;
    tokio::time::advance(Duration::from_millis(1)).await;
    expect(&mut conn, b"PTTL k\r\nGET k\r\nEXISTS h\r\n", b":-2\r\n$-1\r\n:1\r\n").await;
    // PEXPIRE moves a deadline; INCR keeps it.
    expect(&mut conn, b"SET n 1\r\nPEXPIRE n 50\r\nINCR n\r\n", b"+OK\r\n:1\r\n:2\r\n").await;
    tokio::time::advance(Duration::from_millis(50)).await;
    expect(&mut conn, b"GET n\r\nPTTL h\r\n", b"$-1\r\n:850\r\n").await;
}

#[tokio::test(start_paused = true)]
async fn a_latency_fault_delays_replies_and_messages_in_order() {
    let redis = double(RedisConfig::default());
    let (mut subscriber, mut publisher) = (connect(&redis), connect(&redis));
    expect(&mut subscriber, b"SUBSCRIBE c\r\n", b"*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n").await;
    redis.control().set_latency(Duration::from_millis(50));
    let start = tokio::time::Instant::now();
    expect(&mut publisher, b"PUBLISH c m\r\nPING\r\n", b":1\r\n+PONG\r\n").await;
    assert_eq!(start.elapsed(), Duration::from_millis(50));
    expect(&mut subscriber, b"", b"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n").await;
    redis.control().set_latency(Duration::ZERO);
    expect(&mut publisher, b"PING\r\n", b"+PONG\r\n").await;
    assert_eq!(start.elapsed(), Duration::from_millis(50));
}

#[tokio::test(start_paused = true)]
async fn a_hung_double_answers_nothing_until_released() {
    let redis = double(RedisConfig::default());
    let mut conn = connect(&redis);
    redis.control().set_hung(true);
    conn.write_all(b"SET k v\r\nGET k\r\n").await.expect("write");
    let mut byte = [0u8; 1];
    let waited = tokio::time::timeout(Duration::from_secs(60), conn.read(&mut byte)).await;
    assert!(waited.is_err(), "a hung double wrote {byte:?}");
    redis.control().set_hung(false);
    expect(&mut conn, b"", b"+OK\r\n$1\r\nv\r\n").await;
}

#[tokio::test(start_paused = true)]
async fn garbage_gets_a_protocol_error_then_the_connection_closes() {
    let redis = double(RedisConfig { limits: LIMITS, ..RedisConfig::default() });
    for garbage in [&b"PING\r\n*x\r\nPING\r\n"[..], b"PING\r\n*5\r\n", b"PING\r\n*1\r\n$100\r\n"] {
        let mut conn = connect(&redis);
        conn.write_all(garbage).await.expect("write");
        let mut got = Vec::new();
        conn.read_to_end(&mut got).await.expect("read to the end");
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("+PONG\r\n-ERR Protocol error: "), "{text:?}");
        assert!(text.ends_with("length\r\n"), "{text:?}");
    }
    // The double still serves.
    expect(&mut connect(&redis), b"PING\r\n", b"+PONG\r\n").await;
}

#[tokio::test(start_paused = true)]
async fn a_password_is_required_before_anything_else() {
    let redis = double(RedisConfig { password: Some("pw".into()), ..RedisConfig::default() });
    let mut conn = connect(&redis);
    expect(&mut conn, b"GET k\r\nAUTH pw\r\nGET k\r\n", b"-NOAUTH Authentication required.\r\n+OK\r\n$-1\r\n").await;
}

#[tokio::test(start_paused = true)]
async fn a_subscriber_that_does_not_read_is_disconnected_past_the_output_limit() {
    let redis = double(RedisConfig { max_output: 4096, ..RedisConfig::default() });
    let (mut subscriber, mut publisher) = (connect(&redis), connect(&redis));
    expect(&mut subscriber, b"SUBSCRIBE c\r\n", b"*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n").await;
    let message = format!("PUBLISH c {}\r\n", "m".repeat(1000));
    // The pipe holds 64 KiB, then the double's queue 4 KiB: the subscriber is dropped on the way.
    let mut receivers = Vec::new();
    for _ in 0..100 {
        publisher.write_all(message.as_bytes()).await.expect("write");
        let mut reply = [0u8; 4];
        publisher.read_exact(&mut reply).await.expect("read");
        receivers.push(reply[1] - b'0');
    }
    assert_eq!(receivers.first(), Some(&1));
    assert_eq!(receivers.last(), Some(&0), "the subscriber was never disconnected");
    // What was written before the limit can still be read; then the connection ends.
    let mut rest = Vec::new();
    subscriber.read_to_end(&mut rest).await.expect("read to the end");
    assert!(rest.len() < 100 * 1000, "{} bytes", rest.len());
}
