//! Hashes: HSET (several pairs), HGET, HGETALL, HDEL, HLEN. Fields stay in insertion order, as in a small Redis
//! hash (a listpack, up to `hash-max-listpack-entries` 128 fields of at most 64 bytes); past that Redis switches to a
//! hash table whose order the double does not imitate.

use crate::redis::client::Ctx;
use crate::redis::keyspace::Value;
use crate::redis::reply::Reply;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// The hash at `key`: `Ok(None)` when there is no key, `Err` (WRONGTYPE) when it holds a string.
fn hash<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Result<Option<&'c mut Fields>, Reply> {
    match ctx.keyspace.get_mut(ctx.client.db, key, ctx.now) {
        None => Ok(None),
        Some(Value::Hash(fields)) => Ok(Some(fields)),
        Some(Value::Str(_)) => Err(Reply::wrong_type()),
    }
}

/// Replies with `answer`'s result on the hash at `key` (`on_missing` when there is none), or WRONGTYPE.
fn read(ctx: &mut Ctx<'_>, key: &[u8], on_missing: Reply, answer: impl FnOnce(&mut Fields) -> Reply) {
    let reply = match hash(ctx, key) {
        Ok(Some(fields)) => answer(fields),
        Ok(None) => on_missing,
        Err(e) => e,
    };
    ctx.reply(reply);
}

pub(super) fn hset(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    if argv.len() % 2 == 1 {
        return ctx.reply(Reply::arity("hset"));
    }
    let mut fields = match hash(ctx, &argv[1]) {
        Ok(fields) => fields.map(std::mem::take).unwrap_or_default(),
        Err(e) => return ctx.reply(e),
    };
    let mut added = 0;
    for pair in argv[2..].chunks_exact(2) {
        match fields.iter_mut().find(|(f, _)| *f == pair[0]) {
            Some((_, value)) => *value = pair[1].clone(),
            None => {
                fields.push((pair[0].clone(), pair[1].clone()));
                added += 1;
            }
        }
    }
    ctx.keyspace.put(ctx.client.db, &argv[1], Value::Hash(fields), ctx.now);
    ctx.reply(Reply::Integer(added));
}

pub(super) fn hget(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    read(ctx, &argv[1], Reply::Nil, |fields| {
        fields.iter().find(|(f, _)| *f == argv[2]).map_or(Reply::Nil, |(_, v)| Reply::bulk(v))
    });
}

pub(super) fn hgetall(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    read(ctx, &argv[1], Reply::Array(Vec::new()), |fields| {
        Reply::Array(fields.iter().flat_map(|(f, v)| [Reply::bulk(f), Reply::bulk(v)]).collect())
    });
}

pub(super) fn hlen(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    read(ctx, &argv[1], Reply::Integer(0), |fields| Reply::Integer(fields.len() as i64));
}

/// A hash left empty is deleted, as in Redis.
pub(super) fn hdel(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let mut emptied = false;
    read(ctx, &argv[1], Reply::Integer(0), |fields| {
        let before = fields.len();
        fields.retain(|(f, _)| !argv[2..].contains(f));
        emptied = fields.is_empty();
        Reply::Integer((before - fields.len()) as i64)
    });
    if emptied {
        ctx.keyspace.remove(ctx.client.db, &argv[1], ctx.now);
    }
}
