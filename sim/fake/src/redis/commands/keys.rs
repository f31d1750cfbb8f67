//! Strings and keys: GET, SET (EX, PX, NX, XX), DEL, EXISTS, INCR, PEXPIRE (NX, XX, GT, LT), PTTL; with the order of
//! checks of Redis 7.0's `t_string.c` and `expire.c`, so that a request with two faults gets the same error.

use std::time::Duration;

use tokio::time::Instant;

use crate::redis::client::Ctx;
use crate::redis::keyspace::Value;
use crate::redis::reply::{Reply, c_str};
use crate::redis::request::string2ll;

/// A deadline further out than this is kept at this distance: tokio's `Instant` cannot reach Redis's `i64`
/// milliseconds, and no test waits a century.
const FARTHEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

pub(super) fn get(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let reply = match ctx.keyspace.get(ctx.client.db, &argv[1], ctx.now) {
        None => Reply::Nil,
        Some(Value::Str(s)) => Reply::bulk(s),
        Some(Value::Hash(_)) => Reply::wrong_type(),
    };
    ctx.reply(reply);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Seconds,
    Millis,
}

/// `SET key value [NX|XX] [EX s|PX ms]`. Options are read first (a conflict is a syntax error), the expire time
/// after, as `parseExtendedStringArgumentsOrReply` does; a repeated EX or NX is allowed, the last one counts.
pub(super) fn set(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let (mut nx, mut xx, mut expire): (bool, bool, Option<(Unit, &[u8])>) = (false, false, None);
    let mut i = 3;
    while i < argv.len() {
        let opt = argv[i].to_ascii_lowercase();
        let next = argv.get(i + 1);
        let unit_of = |e: &Option<(Unit, &[u8])>| e.map(|(u, _)| u);
        match (&opt[..], next) {
            (b"nx", _) if !xx => nx = true,
            (b"xx", _) if !nx => xx = true,
            (b"ex", Some(n)) if unit_of(&expire) != Some(Unit::Millis) => {
                expire = Some((Unit::Seconds, n));
                i += 1;
            }
            (b"px", Some(n)) if unit_of(&expire) != Some(Unit::Seconds) => {
                expire = Some((Unit::Millis, n));
                i += 1;
            }
            _ => return ctx.reply(Reply::syntax()),
        }
        i += 1;
    }
    let deadline = match expire {
        None => None,
        Some((unit, n)) => match expire_ms(ctx, n, unit, "set") {
            Ok(ms) => Some(deadline_after(ctx.now, ms)),
            Err(reply) => return ctx.reply(reply),
        },
    };
    let db = ctx.client.db;
    let exists = ctx.keyspace.exists(db, &argv[1], ctx.now);
    if (nx && exists) || (xx && !exists) {
        return ctx.reply(Reply::Nil);
    }
    ctx.keyspace.set(db, &argv[1], Value::Str(argv[2].clone()), deadline);
    ctx.reply(Reply::ok());
}

/// SET's expire time in milliseconds from now (`getExpireMillisecondsOrReply`): an integer, positive, and within
/// `i64` once converted and added to the wall clock.
fn expire_ms(ctx: &Ctx<'_>, n: &[u8], unit: Unit, command: &str) -> Result<i64, Reply> {
    let n = string2ll(n).ok_or_else(Reply::not_integer)?;
    if n <= 0 || (unit == Unit::Seconds && n > i64::MAX / 1000) {
        return Err(Reply::invalid_expire(command));
    }
    let ms = if unit == Unit::Seconds { n * 1000 } else { n };
    ms.checked_add(ctx.wall_ms as i64).ok_or_else(|| Reply::invalid_expire(command))?;
    Ok(ms)
}

fn deadline_after(now: Instant, ms: i64) -> Instant {
    now + Duration::from_millis(ms.max(0) as u64).min(FARTHEST)
}

pub(super) fn del(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let db = ctx.client.db;
    let removed = argv[1..].iter().filter(|key| ctx.keyspace.remove(db, key, ctx.now)).count();
    ctx.reply(Reply::Integer(removed as i64));
}

pub(super) fn exists(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let db = ctx.client.db;
    // A key named twice counts twice, as in Redis.
    let found = argv[1..].iter().filter(|key| ctx.keyspace.exists(db, key, ctx.now)).count();
    ctx.reply(Reply::Integer(found as i64));
}

/// INCR keeps the key's deadline; a missing key counts from 0.
pub(super) fn incr(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let db = ctx.client.db;
    let current = match ctx.keyspace.get(db, &argv[1], ctx.now) {
        None => 0,
        Some(Value::Hash(_)) => return ctx.reply(Reply::wrong_type()),
        Some(Value::Str(s)) => match string2ll(s) {
            Some(n) => n,
            None => return ctx.reply(Reply::not_integer()),
        },
    };
    let Some(next) = current.checked_add(1) else {
        return ctx.reply(Reply::err("ERR increment or decrement would overflow"));
    };
    ctx.keyspace.put(db, &argv[1], Value::Str(next.to_string().into_bytes()), ctx.now);
    ctx.reply(Reply::Integer(next));
}

/// `PEXPIRE key ms [NX|XX|GT|LT]` (`expireGenericCommand`): options, then the number, then its overflow, then the
/// key. A time already past deletes the key. No deadline counts as infinite for GT and LT.
pub(super) fn pexpire(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &argv[3..] {
        match &opt.to_ascii_lowercase()[..] {
            b"nx" => nx = true,
            b"xx" => xx = true,
            b"gt" => gt = true,
            b"lt" => lt = true,
            _ => {
                let mut text = b"ERR Unsupported option ".to_vec();
                text.extend_from_slice(c_str(opt, usize::MAX));
                return ctx.reply(Reply::err(text));
            }
        }
    }
    if nx && (xx || gt || lt) {
        return ctx.reply(Reply::err("ERR NX and XX, GT or LT options at the same time are not compatible"));
    }
    if gt && lt {
        return ctx.reply(Reply::err("ERR GT and LT options at the same time are not compatible"));
    }
    let Some(ms) = string2ll(&argv[2]) else { return ctx.reply(Reply::not_integer()) };
    if ms > i64::MAX - ctx.wall_ms as i64 {
        return ctx.reply(Reply::invalid_expire("pexpire"));
    }
    let db = ctx.client.db;
    let Some(current) = ctx.keyspace.deadline(db, &argv[1], ctx.now) else { return ctx.reply(Reply::Integer(0)) };
    // The current deadline in milliseconds from now; `None`: no deadline.
    let current = current.map(|d| d.saturating_duration_since(ctx.now).as_millis() as i64);
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| ms <= c))
        || (lt && current.is_some_and(|c| ms >= c));
    if refused {
        return ctx.reply(Reply::Integer(0));
    }
    if ms <= 0 {
        ctx.keyspace.remove(db, &argv[1], ctx.now);
    } else {
        ctx.keyspace.set_deadline(db, &argv[1], deadline_after(ctx.now, ms), ctx.now);
    }
    ctx.reply(Reply::Integer(1));
}

/// -2: no key; -1: no deadline; else the milliseconds left.
pub(super) fn pttl(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let reply = match ctx.keyspace.deadline(ctx.client.db, &argv[1], ctx.now) {
        None => -2,
        Some(None) => -1,
        Some(Some(deadline)) => deadline.saturating_duration_since(ctx.now).as_millis() as i64,
    };
    ctx.reply(Reply::Integer(reply));
}
