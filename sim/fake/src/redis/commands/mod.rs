//! The command table and the checks Redis 7.0's `processCommand` makes before running a command, in its order:
//! QUIT, then an unknown command (or CLIENT subcommand), then the arity, then authentication, then subscribe mode.
//! The order matters: an unknown command is reported as such even before AUTH, and a wrong arity even in subscribe
//! mode.

mod connection;
mod hashes;
mod keys;
mod pubsub;

use super::client::Ctx;
use super::reply::{Reply, c_str, unknown_command};

type Handler = fn(&mut Ctx<'_>, &[Vec<u8>]);

#[derive(Debug)]
struct Command {
    /// Lowercase, as Redis names a command in its errors.
    name: &'static str,
    /// Redis's arity: `n` exactly n arguments (the name included), `-n` at least n.
    arity: i32,
    /// Served before AUTH (Redis's `no-auth` flag).
    no_auth: bool,
    /// Served in RESP2's subscribe mode.
    in_subscribe: bool,
    handler: Handler,
}

const fn command(name: &'static str, arity: i32, handler: Handler) -> Command {
    Command { name, arity, no_auth: false, in_subscribe: false, handler }
}

const COMMANDS: &[Command] = &[
    Command { in_subscribe: true, ..command("ping", -1, connection::ping) },
    command("echo", 2, connection::echo),
    Command { no_auth: true, ..command("auth", -2, connection::auth) },
    command("select", 2, connection::select),
    command("get", 2, keys::get),
    command("set", -3, keys::set),
    command("del", -2, keys::del),
    command("exists", -2, keys::exists),
    command("incr", 2, keys::incr),
    command("pexpire", -3, keys::pexpire),
    command("pttl", 2, keys::pttl),
    command("hset", -4, hashes::hset),
    command("hget", 3, hashes::hget),
    command("hgetall", 2, hashes::hgetall),
    command("hdel", -3, hashes::hdel),
    command("hlen", 2, hashes::hlen),
    command("publish", 3, pubsub::publish),
    Command { in_subscribe: true, ..command("subscribe", -2, pubsub::subscribe) },
    Command { in_subscribe: true, ..command("unsubscribe", -1, pubsub::unsubscribe) },
];

/// Runs one command (`argv` is not empty), its replies collecting in `ctx`.
pub(crate) fn execute(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let Some((name, rest)) = argv.split_first() else { return };
    let lower = name.to_ascii_lowercase();
    if lower == b"quit" {
        ctx.client.closing = true;
        return ctx.reply(Reply::ok());
    }
    // CLIENT is a container in Redis (arity -2); the double knows none of its subcommands: redis-rs's `CLIENT SETINFO`
    // on connect gets the answer Redis 7.0 gives (7.2 added SETINFO), which redis-rs ignores.
    if lower == b"client" {
        return ctx.reply(match rest.first() {
            Some(sub) => {
                let mut text = b"ERR unknown subcommand '".to_vec();
                text.extend_from_slice(c_str(sub, 128));
                text.extend_from_slice(b"'. Try CLIENT HELP.");
                Reply::err(text)
            }
            None => Reply::arity("client"),
        });
    }
    let Some(command) = COMMANDS.iter().find(|c| c.name.as_bytes() == lower) else {
        return ctx.reply(unknown_command(name, rest));
    };
    let arity_ok = if command.arity >= 0 {
        argv.len() == command.arity as usize
    } else {
        argv.len() >= command.arity.unsigned_abs() as usize
    };
    if !arity_ok {
        return ctx.reply(Reply::arity(command.name));
    }
    if !ctx.client.authenticated && !command.no_auth {
        return ctx.reply(Reply::err("NOAUTH Authentication required."));
    }
    if ctx.client.subscribed() && !command.in_subscribe {
        return ctx.reply(Reply::err(format!(
            "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this \
             context",
            command.name
        )));
    }
    (command.handler)(ctx, argv);
}
