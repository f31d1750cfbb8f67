//! Connection commands: PING, ECHO, AUTH (`requirepass` semantics for the default user), SELECT.

use crate::redis::client::Ctx;
use crate::redis::keyspace::DATABASES;
use crate::redis::reply::Reply;
use crate::redis::request::string2ll;

pub(super) fn ping(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    if argv.len() > 2 {
        return ctx.reply(Reply::arity("ping"));
    }
    let reply = match (ctx.client.subscribed(), argv.get(1)) {
        // In subscribe mode RESP2 cannot send a plain reply: Redis answers with a two-element array.
        (true, arg) => Reply::Array(vec![Reply::bulk(b"pong"), Reply::bulk(arg.map_or(&b""[..], |a| &a[..]))]),
        (false, Some(arg)) => Reply::bulk(arg),
        (false, None) => Reply::Status("PONG"),
    };
    ctx.reply(reply);
}

pub(super) fn echo(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    ctx.reply(Reply::bulk(&argv[1]));
}

/// `AUTH password` is `AUTH default password`. The only user is `default`: with no password configured it takes any
/// password (Redis's `nopass`), but the one-argument form is refused, as Redis does.
pub(super) fn auth(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let (user, password) = match argv {
        [_, password] => {
            if ctx.password.is_none() {
                return ctx.reply(Reply::err(
                    "ERR AUTH <password> called without any password configured for the default user. Are you sure \
                     your configuration is correct?",
                ));
            }
            (&b"default"[..], password)
        }
        [_, user, password] => (&user[..], password),
        _ => return ctx.reply(Reply::syntax()),
    };
    let ok = user == b"default" && ctx.password.is_none_or(|expected| expected == &password[..]);
    if ok {
        ctx.client.authenticated = true;
        ctx.reply(Reply::ok());
    } else {
        ctx.reply(Reply::err("WRONGPASS invalid username-password pair or user is disabled."));
    }
}

pub(super) fn select(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let Some(index) = string2ll(&argv[1]).filter(|n| i32::try_from(*n).is_ok()) else {
        return ctx.reply(Reply::not_integer());
    };
    match usize::try_from(index).ok().filter(|&db| db < DATABASES) {
        Some(db) => {
            ctx.client.db = db;
            ctx.reply(Reply::ok());
        }
        None => ctx.reply(Reply::err("ERR DB index is out of range")),
    }
}
