//! Federation's names: every server's tools (or prompts, or resources) under one list, each under a name no other
//! entry has. A name stays as its server wrote it while it is unique (`conditional`); on a collision every server's
//! copy becomes `server__name`; `always` prefixes every one. Nothing is ever shadowed: when a prefixed name meets
//! an upstream name that happens to be spelled the same, that one is prefixed too, until every name is unique.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::PrefixMode;

/// Between a server's name and its tool's in a prefixed name (as Envoy's AI gateway spells it).
pub const SEPARATOR: &str = "__";

/// Where an agent-facing name leads: the server and the name the server knows it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub server: String,
    pub name: String,
}

/// Agent-facing names, each with its origin; in server order, then each server's own order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    names: Vec<(String, Origin)>,
    by_name: BTreeMap<String, usize>,
}

impl Catalog {
    /// The names of `listings` (server → its names, in the server's order), by `mode`.
    pub fn build<'a>(listings: impl IntoIterator<Item = (&'a str, Vec<String>)>, mode: PrefixMode) -> Catalog {
        let origins: Vec<Origin> = listings
            .into_iter()
            .flat_map(|(server, names)| names.into_iter().map(move |name| Origin { server: server.to_owned(), name }))
            .collect();
        let mut prefixed: Vec<bool> = vec![mode == PrefixMode::Always; origins.len()];
        // Each round prefixes every entry whose current name another entry also has; a prefixed name carries its
        // server's (unique) name, so two prefixed names collide only if one server lists a name twice, and the
        // rounds end after at most two passes over the entries.
        loop {
            let mut count: BTreeMap<String, usize> = BTreeMap::new();
            for (i, o) in origins.iter().enumerate() {
                *count.entry(shown(o, prefixed[i])).or_default() += 1;
            }
            let mut changed = false;
            for (i, o) in origins.iter().enumerate() {
                if !prefixed[i] && count[&shown(o, false)] > 1 {
                    prefixed[i] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut catalog = Catalog::default();
        let mut seen = BTreeSet::new();
        for (o, p) in origins.into_iter().zip(prefixed) {
            let name = shown(&o, p);
            // A server that lists one name twice: the first copy wins, as a client of that server would see it.
            if seen.insert(name.clone()) {
                catalog.by_name.insert(name.clone(), catalog.names.len());
                catalog.names.push((name, o));
            }
        }
        catalog
    }

    /// Where `name` leads, if it is in the catalog.
    pub fn resolve(&self, name: &str) -> Option<&Origin> {
        self.by_name.get(name).map(|&i| &self.names[i].1)
    }

    /// Every agent-facing name with its origin, in order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Origin)> {
        self.names.iter().map(|(n, o)| (n.as_str(), o))
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

fn shown(origin: &Origin, prefixed: bool) -> String {
    if prefixed { format!("{}{SEPARATOR}{}", origin.server, origin.name) } else { origin.name.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(c: &Catalog) -> Vec<(&str, &str, &str)> {
        c.entries().map(|(n, o)| (n, o.server.as_str(), o.name.as_str())).collect()
    }

    fn listing(server: &str, tools: &[&str]) -> (String, Vec<String>) {
        (server.to_owned(), tools.iter().map(|t| (*t).to_owned()).collect())
    }

    fn build(listings: &[(String, Vec<String>)], mode: PrefixMode) -> Catalog {
        Catalog::build(listings.iter().map(|(s, t)| (s.as_str(), t.clone())), mode)
    }

    #[test]
    fn unique_names_stay_and_a_collision_prefixes_every_copy() {
        let c = build(
            &[listing("ledger", &["balance", "search"]), listing("docs", &["search", "read"])],
            PrefixMode::Conditional,
        );
        assert_eq!(
            names(&c),
            [
                ("balance", "ledger", "balance"),
                ("ledger__search", "ledger", "search"),
                ("docs__search", "docs", "search"),
                ("read", "docs", "read"),
            ]
        );
        assert_eq!(c.resolve("docs__search"), Some(&Origin { server: "docs".into(), name: "search".into() }));
        assert_eq!(c.resolve("search"), None, "a colliding name is never served unprefixed");
    }

    #[test]
    fn always_prefixes_every_tool() {
        let c = build(&[listing("a", &["x"]), listing("b", &["y"])], PrefixMode::Always);
        assert_eq!(names(&c), [("a__x", "a", "x"), ("b__y", "b", "y")]);
    }

    #[test]
    fn a_prefixed_name_never_shadows_an_upstream_name_spelled_the_same() {
        // `b` lists a tool literally named `a__x`; `a`'s `x` collides with `c`'s `x` and becomes `a__x` too.
        let c = build(&[listing("a", &["x"]), listing("b", &["a__x"]), listing("c", &["x"])], PrefixMode::Conditional);
        let shown: BTreeSet<&str> = c.entries().map(|(n, _)| n).collect();
        assert_eq!(shown.len(), 3, "{:?}", names(&c));
        assert_eq!(c.resolve("a__x").map(|o| o.server.as_str()), Some("a"));
        assert_eq!(c.resolve("b__a__x").map(|o| o.name.as_str()), Some("a__x"));
        assert_eq!(c.resolve("c__x").map(|o| o.server.as_str()), Some("c"));
    }

    #[test]
    fn a_name_listed_twice_by_one_server_is_kept_once() {
        let c = build(&[listing("a", &["x", "x"])], PrefixMode::Conditional);
        assert_eq!(c.len(), 1);
        assert_eq!(c.resolve("a__x").map(|o| o.name.as_str()), Some("x"));
    }
}
