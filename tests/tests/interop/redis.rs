//! The Redis double (`mcpstorm_fake::RedisDouble`) against a real `redis-server` 7.0: the same scripts, the same
//! reply bytes. Covers every command the breaker sync uses, redis-rs's connect sequence, the error texts, subscribe
//! mode and message delivery across connections, pipelining, inline commands and garbage.
//!
//! Compared other than byte for byte: PTTL values (by range: the two servers read their clocks at different moments).
//! Left out because Redis's own answer is not deterministic: UNSUBSCRIBE without arguments while subscribed to more
//! than one channel (Redis walks a hash table seeded per process; the double answers in subscription order).

use crate::redis_wire::{Expect, Step, cmd, cmds, differential, pipeline, step, until_closed};

/// What redis-rs 1.2 (RESP2, the default) pipelines on connect, in one write: `AUTH [user] password` when the URL
/// has one, `SELECT db` when it is not 0, then `CLIENT SETINFO LIB-NAME redis-rs` and `LIB-VER <its version>`,
/// whose errors it ignores (Redis 7.0 has no SETINFO). No HELLO unless RESP3 is asked for.
fn redis_rs_connect(auth: Option<&[&[u8]]>, db: Option<&[u8]>) -> Step {
    let mut send = Vec::new();
    let mut replies = 2;
    if let Some(auth) = auth {
        send.extend(cmd(&[&[b"AUTH".as_slice()], auth].concat()));
        replies += 1;
    }
    if let Some(db) = db {
        send.extend(cmd(&[b"SELECT", db]));
        replies += 1;
    }
    send.extend(cmd(&[b"CLIENT", b"SETINFO", b"LIB-NAME", b"redis-rs"]));
    send.extend(cmd(&[b"CLIENT", b"SETINFO", b"LIB-VER", b"1.2.2"]));
    step(0, send, replies)
}

#[tokio::test]
async fn connection_commands_match_redis() {
    let script = [
        redis_rs_connect(None, Some(b"3")),
        cmds(0, &["PING", "PING hello", "ping a b", "ECHO x", "ECHO", "echo a b"]),
        cmds(0, &["SELECT 15", "SELECT 16", "SELECT -1", "SELECT x", "SELECT 01", "SELECT 0", "SELECT"]),
        cmds(0, &["AUTH pw", "AUTH default anything", "AUTH bob pw", "AUTH a b c", "AUTH"]),
        cmds(0, &["CLIENT", "CLIENT NOSUCH x", "client setinfo lib-name x"]),
        until_closed(0, cmd(&[b"QUIT", b"extra"])),
        until_closed(1, [cmd(&[b"quit"]), cmd(&[b"PING"])].concat()),
    ];
    differential("connection", None, &script).await;
}

#[tokio::test]
async fn requirepass_and_auth_match_redis() {
    let script = [
        // Before AUTH: an unknown command, a wrong arity and a CLIENT subcommand are reported before NOAUTH.
        cmds(0, &["GET k", "FOO bar", "GET", "CLIENT SETINFO LIB-NAME x", "SUBSCRIBE a", "PING", "AUTH"]),
        cmds(0, &["AUTH wrong", "AUTH default wrong", "AUTH bob s3cret", "AUTH a b c", "GET k"]),
        cmds(0, &["AUTH s3cret", "SET k v", "GET k", "AUTH wrong", "GET k"]),
        redis_rs_connect(Some(&[b"s3cret"]), Some(b"2")),
        step(2, redis_rs_connect(Some(&[b"default", b"s3cret"]), None).send, 3),
        step(3, redis_rs_connect(Some(&[b"bob", b"s3cret"]), None).send, 3),
        until_closed(4, cmd(&[b"QUIT"])),
        // Unauthenticated clients get tighter protocol limits.
        until_closed(5, b"*11\r\n".as_slice()),
        until_closed(6, b"*1\r\n$16385\r\n".as_slice()),
        until_closed(7, b"PING\r\n*1\r\n$4\r\nPING\r\nPING x\r\n*11\r\n".as_slice()),
    ];
    differential("auth", Some("s3cret"), &script).await;
}

#[tokio::test]
async fn strings_and_keys_match_redis() {
    let script = [
        cmds(0, &["GET k", "SET k v", "GET k", "SET k w NX", "SET k w XX", "GET k", "SET n v XX", "SET n v NX"]),
        cmds(0, &["SET k v NX XX", "SET k v EX 0", "SET k v EX x", "SET k v EX", "SET k v EX 10 PX 100"]),
        cmds(0, &["SET k v EX 5 EX 10", "SET k v PX -5", "SET k v FOO", "SET k v EX 99999999999999999"]),
        cmds(0, &["SET k v EX abc NX XX", "SET k v px 9223372036854775807", "SET k"]),
        // The last of two EX counts.
        Step { conn: 0, send: cmd(&[b"PTTL", b"k"]), expect: Expect::IntegerIn(9_000..=10_000) },
        cmds(0, &["SET t v ex 100 nx", "SET k2 v Px 100000 xx", "GET k2"]),
        Step { conn: 0, send: cmd(&[b"PTTL", b"t"]), expect: Expect::IntegerIn(99_000..=100_000) },
        cmds(0, &["SET k v", "PTTL k", "PTTL none", "DEL k none k", "DEL", "EXISTS k", "SET a 1", "SET b 2"]),
        cmds(0, &["EXISTS a a b c", "DEL a b c", "EXISTS a"]),
        cmds(0, &["INCR c", "INCR c", "GET c", "SET c 9223372036854775807", "INCR c", "SET c -0", "INCR c"]),
        cmds(0, &["SET c 007", "INCR c", "SET c x", "INCR c", "SET c -9223372036854775808", "INCR c", "INCR"]),
        cmds(0, &["SET c 5 PX 100000", "INCR c", "GET c"]),
        Step { conn: 0, send: cmd(&[b"PTTL", b"c"]), expect: Expect::IntegerIn(99_000..=100_000) },
        cmds(0, &["PEXPIRE none 100", "SET p v", "PEXPIRE p x", "PEXPIRE p 100 FOO", "PEXPIRE p 100 NX XX"]),
        cmds(0, &["PEXPIRE p 100 GT LT", "PEXPIRE p 50000 XX", "PEXPIRE p 50000 GT", "PEXPIRE p 50000 NX"]),
        cmds(0, &["PEXPIRE p 60000 XX", "PEXPIRE p 40000 GT", "PEXPIRE p 70000 gt", "PEXPIRE p 90000 LT"]),
        Step { conn: 0, send: cmd(&[b"PTTL", b"p"]), expect: Expect::IntegerIn(69_000..=70_000) },
        cmds(0, &["PEXPIRE p 9223372036854775807", "PEXPIRE p 0", "EXISTS p", "PTTL p", "PEXPIRE", "PTTL"]),
        cmds(0, &["SET q v", "PEXPIRE q -5", "GET q", "SET q v", "PEXPIRE q 100 LT", "PEXPIRE q 1000 NX"]),
        // Databases are separate.
        cmds(0, &["SET shared zero", "SELECT 1", "GET shared", "SET shared one", "SELECT 0", "GET shared"]),
    ];
    differential("strings", None, &script).await;
}

#[tokio::test]
async fn hashes_match_redis() {
    let script = [
        cmds(0, &["HSET h b 1 a 2 b 3", "HGETALL h", "HDEL h b", "HSET h b 4 c 5", "HGETALL h", "HLEN h"]),
        cmds(0, &["HSET h a 9", "HGETALL h", "HGET h a", "HGET h zz", "HGET none a", "HGETALL none", "HLEN none"]),
        cmds(0, &["HDEL h a b x", "HGETALL h", "HDEL h c", "EXISTS h", "HDEL none a"]),
        cmds(0, &["HSET h f", "HSET h f v g", "HGET h", "HDEL h", "HLEN", "HGETALL"]),
        cmds(0, &["SET s v", "HSET s f v", "HGET s f", "HGETALL s", "HDEL s f", "HLEN s", "HSET h f v", "GET h"]),
        cmds(0, &["INCR h", "HSET h g v", "SET h v", "GET h", "HSET h2 f v", "HGETALL h2"]),
        // An expiry on a hash outlives HSET (it changes the value, not the key).
        cmds(0, &["PEXPIRE h2 100000", "HSET h2 g w"]),
        Step { conn: 0, send: cmd(&[b"PTTL", b"h2"]), expect: Expect::IntegerIn(99_000..=100_000) },
    ];
    differential("hashes", None, &script).await;
}

#[tokio::test]
async fn pubsub_matches_redis() {
    let (a, b, publisher) = (0, 1, 2);
    let script = [
        // One reply per channel named.
        step(a, pipeline(&["SUBSCRIBE one two", "SUBSCRIBE two"]).0, 3),
        cmds(b, &["SUBSCRIBE two"]),
        cmds(publisher, &["PUBLISH two m1"]),
        step(a, Vec::new(), 1),
        step(b, Vec::new(), 1),
        cmds(publisher, &["PUBLISH one m2", "PUBLISH nobody m3", "PUBLISH two"]),
        step(a, Vec::new(), 1),
        // Messages from one pipeline arrive in order, to each subscriber.
        cmds(publisher, &["PUBLISH two p1", "PUBLISH one p2", "PUBLISH two p3"]),
        step(a, Vec::new(), 3),
        step(b, Vec::new(), 2),
        // Subscribe mode: only (UN)SUBSCRIBE, PING and QUIT; the checks before it still come first.
        cmds(a, &["GET x", "PING", "PING hi", "PUBLISH two x", "SELECT 1", "FOO", "GET", "CLIENT SETINFO x y"]),
        // A message published between two of a subscriber's commands comes between their replies.
        cmds(a, &["PING before"]),
        cmds(publisher, &["PUBLISH one between"]),
        step(a, cmd(&[b"PING", b"after"]), 2),
        step(a, pipeline(&["UNSUBSCRIBE two nope"]).0, 2),
        cmds(publisher, &["PUBLISH two x", "PUBLISH one y"]),
        step(a, Vec::new(), 1),
        cmds(a, &["UNSUBSCRIBE", "UNSUBSCRIBE", "PING", "GET x", "UNSUBSCRIBE a"]),
        cmds(publisher, &["PUBLISH one z", "UNSUBSCRIBE", "SUBSCRIBE"]),
        until_closed(b, cmd(&[b"QUIT"])),
        cmds(publisher, &["PUBLISH two gone"]),
    ];
    differential("pubsub", None, &script).await;
}

#[tokio::test]
async fn error_texts_match_redis() {
    let long_name = vec![b'X'; 200];
    let (a100, b100) = (vec![b'a'; 100], vec![b'b'; 100]);
    let many: Vec<Vec<u8>> = (0..40).map(|i| format!("arg{i}").into_bytes()).collect();
    let mut many_args: Vec<&[u8]> = vec![b"nosuch"];
    many_args.extend(many.iter().map(Vec::as_slice));
    let script = [
        cmds(0, &["FOO", "FOO a b", "get", "GeT x y", "PUBLISH a", "SUBSCRIBE", "ECHO"]),
        step(0, cmd(&[&long_name, &a100, &b100]), 1),
        step(0, cmd(&many_args), 1),
        step(0, cmd(&[b"FOO", b"a\r\nb", b"c\x00d", b"\xff\xfe"]), 1),
        step(0, cmd(&[b"\x00FOO"]), 1),
        step(0, cmd(&[b""]), 1),
    ];
    differential("errors", None, &script).await;
}

#[tokio::test]
async fn pipelining_and_inline_commands_match_redis() {
    let mut many = Vec::new();
    for i in 0..300 {
        many.extend(cmd(&[b"INCR", b"counter"]));
        many.extend(cmd(&[b"HSET", b"h", format!("f{}", i % 7).as_bytes(), format!("{i}").as_bytes()]));
    }
    many.extend(cmd(&[b"HGETALL", b"h"]));
    let script = [
        step(0, many, 601),
        step(1, b"PING\r\nECHO hello\r\nSET k \"a b\\x41\\n\" \r\nGET k\r\nSET y 'it\\'s'\r\nGET y\n".as_slice(), 6),
        step(1, b"\r\n   \r\nPING\n*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n".as_slice(), 2),
        // A command split across writes.
        step(1, b"*2\r\n$4\r\nEC".as_slice(), 0),
        step(1, b"HO\r\n$3\r\nab".as_slice(), 0),
        step(1, b"c\r\n".as_slice(), 1),
        // Redis skips the two bytes after a bulk argument without looking at them.
        step(1, b"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n".as_slice(), 2),
        until_closed(1, b"SET z \"unbalanced\r\nPING\r\n".as_slice()),
        until_closed(2, b"GET \"a\"b\r\n".as_slice()),
    ];
    differential("pipelining", None, &script).await;
}

#[tokio::test]
async fn garbage_is_refused_as_redis_refuses_it() {
    let mut script = vec![
        until_closed(0, b"*x\r\n".as_slice()),
        until_closed(1, b"PING\r\n*1\r\nfoo\r\n".as_slice()),
        until_closed(2, b"*1\r\n$-1\r\n".as_slice()),
        until_closed(3, b"*1\r\n$01\r\nP\r\n".as_slice()),
        until_closed(4, b"*+1\r\n$4\r\nPING\r\n".as_slice()),
        until_closed(5, b"*1\r\n$+4\r\nPING\r\n".as_slice()),
        until_closed(6, b"*2\r\n$4\r\nECHO\r\n\r\n".as_slice()),
        // Past both servers' limits (Redis: 2^31 - 1 arguments, 512 MiB per argument).
        until_closed(7, b"*3000000000\r\n".as_slice()),
        until_closed(8, b"*1\r\n$600000000\r\n".as_slice()),
        until_closed(9, vec![b'x'; 70_000]),
        until_closed(10, [&b"*"[..], &[b'1'; 70_000]].concat()),
        until_closed(11, [&b"*1\r\n$"[..], &[b'1'; 70_000]].concat()),
        // Redis looks for a header's `\r` with `strchr`, which a NUL stops: it waits for more.
        step(12, b"*1\r\n$4\r\nPING\r\n*1\r\n\x00\r\n".as_slice(), 1),
    ];
    // Bytes from a fixed generator (xorshift): inline lines of binary, quotes, escapes and stray `$`. Without NUL or
    // `*`: a NUL hides a line end from Redis and a `*` starts a frame, and either can leave Redis waiting for more,
    // where this script waits for it to close.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for conn in 13..21 {
        let noise: Vec<u8> = (0..512)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Mostly letters, blanks and line ends, so that lines split into words; now and then a quote, an
                // escape, a `$` or any byte at all.
                match state % 64 {
                    0..=7 => match (state >> 8) as u8 {
                        0 | b'*' => b'.',
                        any => any,
                    },
                    8..=15 => b' ',
                    16..=19 => b'\n',
                    20 | 21 => b'\r',
                    22 => b'"',
                    23 => b'\'',
                    24 => b'\\',
                    25 => b'$',
                    _ => b'a' + (state >> 8) as u8 % 26,
                }
            })
            .collect();
        script.push(until_closed(conn, [cmd(&[b"PING"]), noise, cmd(&[b"QUIT"])].concat()));
    }
    differential("garbage", None, &script).await;
}
