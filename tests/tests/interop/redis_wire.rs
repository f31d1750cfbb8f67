//! The harness of the Redis differential test: a real `redis-server` on a free loopback port, the double on another,
//! the same script of raw bytes sent to both over several connections, and the raw replies compared step by step.
//!
//! A step waits for a given number of whole replies (or for the server to close), so that a script with pub/sub
//! across connections runs in the same order on both; nothing is compared by timing.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::ops::RangeInclusive;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mcpstorm_fake::{RedisConfig, live_redis};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A liveness guard, not a measurement: a server that never sends an expected reply fails the test instead of
/// hanging it.
const PATIENCE: Duration = Duration::from_secs(10);

/// What a step waits for.
#[derive(Debug, Clone)]
pub(crate) enum Expect {
    /// This many whole top-level replies.
    Replies(usize),
    /// The server closing the connection (after QUIT or a protocol error), with everything written before.
    Eof,
    /// One integer reply, compared only by range: a PTTL, whose value depends on when the servers read their clocks.
    IntegerIn(RangeInclusive<i64>),
}

/// Bytes sent on one connection (opened on first use, reopened after it was closed), and what to wait for.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub conn: usize,
    pub send: Vec<u8>,
    pub expect: Expect,
}

pub(crate) fn step(conn: usize, send: impl Into<Vec<u8>>, replies: usize) -> Step {
    Step { conn, send: send.into(), expect: Expect::Replies(replies) }
}

pub(crate) fn until_closed(conn: usize, send: impl Into<Vec<u8>>) -> Step {
    Step { conn, send: send.into(), expect: Expect::Eof }
}

/// A command in RESP framing, as every client library sends it.
pub(crate) fn cmd(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Several commands in one write (a pipeline), each given as its words.
pub(crate) fn pipeline(commands: &[&str]) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    for command in commands {
        let words: Vec<&[u8]> = command.split(' ').map(str::as_bytes).collect();
        out.extend(cmd(&words));
    }
    (out, commands.len())
}

/// A pipeline step: the commands' words split on spaces, one reply each.
pub(crate) fn cmds(conn: usize, commands: &[&str]) -> Step {
    let (send, replies) = pipeline(commands);
    step(conn, send, replies)
}

/// Runs `script` against a real `redis-server` (with `requirepass` when `password` is given) and against the double
/// configured alike, and fails on the first step whose replies differ. Skips when `redis-server` is missing (fails
/// under `MCPSTORM_REQUIRE_PEERS=1`).
pub(crate) async fn differential(name: &str, password: Option<&str>, script: &[Step]) {
    let Some(program) = mcpstorm_tests::real_servers::redis_server() else { return };
    let real = RealRedis::start(&program, password).await;
    let double = live_redis(RedisConfig { password: password.map(str::to_owned), ..RedisConfig::default() });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let double_port = listener.local_addr().expect("bound").port();
    let serving = tokio::spawn({
        let double = double.clone();
        async move { double.serve(listener).await }
    });
    let from_redis = run("redis-server", real.port, script).await;
    let from_double = run("double", double_port, script).await;
    for (i, step) in script.iter().enumerate() {
        let (want, got) = (&from_redis[i], &from_double[i]);
        let same = match &step.expect {
            Expect::IntegerIn(range) => in_range(want, range) && in_range(got, range),
            _ => want == got,
        };
        assert!(
            same,
            "{name}: step {i} on connection {} sent {}\n redis-server: {}\n double:       {}",
            step.conn,
            escape(&step.send),
            escape(want),
            escape(got)
        );
    }
    // The double outlived the script, garbage included: it still answers.
    let mut probe = TcpStream::connect(("127.0.0.1", double_port)).await.expect("the double still accepts");
    probe.write_all(b"*1\r\n$4\r\nQUIT\r\n").await.expect("write");
    assert_eq!(read_until_closed(name, &mut probe).await, b"+OK\r\n", "{name}: the double after the script");
    serving.abort();
}

fn in_range(reply: &[u8], range: &RangeInclusive<i64>) -> bool {
    let text = String::from_utf8_lossy(reply);
    text.strip_prefix(':')
        .and_then(|t| t.strip_suffix("\r\n"))
        .and_then(|n| n.parse().ok())
        .is_some_and(|n| range.contains(&n))
}

/// Each step's raw replies.
async fn run(server: &str, port: u16, script: &[Step]) -> Vec<Vec<u8>> {
    let mut conns: BTreeMap<usize, TcpStream> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, step) in script.iter().enumerate() {
        let context = format!("{server}, step {i}");
        let stream = match conns.entry(step.conn) {
            Entry::Occupied(open) => open.into_mut(),
            Entry::Vacant(new) => new.insert(TcpStream::connect(("127.0.0.1", port)).await.expect("connect")),
        };
        stream.write_all(&step.send).await.expect("write the step");
        let replies = match step.expect {
            Expect::Replies(n) => read_replies(&context, stream, n).await,
            Expect::IntegerIn(_) => read_replies(&context, stream, 1).await,
            Expect::Eof => {
                let bytes = read_until_closed(&context, stream).await;
                conns.remove(&step.conn);
                bytes
            }
        };
        out.push(replies);
    }
    out
}

async fn read_replies(context: &str, stream: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = Vec::new();
    loop {
        let mut end = 0;
        let mut whole = 0;
        while whole < n {
            match reply_end(&buf, end) {
                Some(next) => (end, whole) = (next, whole + 1),
                None => break,
            }
        }
        if whole == n {
            assert_eq!(end, buf.len(), "{context}: more than {n} replies: {}", escape(&buf));
            return buf;
        }
        let mut chunk = [0u8; 16 * 1024];
        let read = tokio::time::timeout(PATIENCE, stream.read(&mut chunk)).await;
        match read {
            Ok(Ok(0)) | Ok(Err(_)) => panic!("{context}: closed after {}, waiting for {n} replies", escape(&buf)),
            Ok(Ok(k)) => buf.extend_from_slice(&chunk[..k]),
            Err(_) => panic!("{context}: no more replies after {}, waiting for {n}", escape(&buf)),
        }
    }
}

async fn read_until_closed(context: &str, stream: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    match tokio::time::timeout(PATIENCE, stream.read_to_end(&mut buf)).await {
        // A reset after the last reply still ends the stream; what arrived before it is what counts.
        Ok(_) => buf,
        Err(_) => panic!("{context}: not closed; so far {}", escape(&buf)),
    }
}

/// Where the RESP2 reply starting at `at` ends, if it is whole.
fn reply_end(buf: &[u8], at: usize) -> Option<usize> {
    let line = at + buf.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
    let after = line + 2;
    let number = || std::str::from_utf8(&buf[at + 1..line]).ok()?.parse::<i64>().ok();
    match buf[at] {
        b'+' | b'-' | b':' => Some(after),
        b'$' => match number()? {
            n if n < 0 => Some(after),
            n => Some(after + n as usize + 2).filter(|&end| end <= buf.len()),
        },
        b'*' => {
            let mut end = after;
            for _ in 0..number()?.max(0) {
                end = reply_end(buf, end)?;
            }
            Some(end)
        }
        _ => panic!("not a RESP2 reply at {at}: {}", escape(buf)),
    }
}

pub(crate) fn escape(bytes: &[u8]) -> String {
    let shown: String = bytes.iter().take(600).flat_map(|&b| std::ascii::escape_default(b)).map(char::from).collect();
    if bytes.len() > 600 { format!("{shown}... ({} bytes)", bytes.len()) } else { shown }
}

/// A `redis-server` child on a free loopback port, without persistence; killed when dropped.
struct RealRedis {
    child: Child,
    port: u16,
}

impl RealRedis {
    async fn start(program: &Path, password: Option<&str>) -> RealRedis {
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let mut command = Command::new(program);
        command.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]);
        if let Some(password) = password {
            command.args(["--requirepass", password]);
        }
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("redis-server starts");
        let real = RealRedis { child, port };
        for _ in 0..250 {
            if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return real;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("redis-server did not listen on port {port}");
    }
}

impl Drop for RealRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
