//! A file with syntax errors still gets every other problem reported in the same run, not after the syntax is
//! fixed, without inventing problems that the syntax errors caused.
//!
//! [`parse`] repairs the text in rounds: it reports the first syntax error, blanks the lines it damaged (the whole
//! key-value it sits in, a multi-line value included; for a broken table header, the header and its body), and
//! parses again, until the text parses. The repaired text keeps every byte offset and line, so what is found in it
//! is reported at its place in the file. toml's own recovery is not enough on its own: it gives wrong values (`2x`
//! read as a string) and, after some errors, drops the rest of the file.
//!
//! [`Repair::problems`] then reads the repaired file as usual, with two exceptions:
//! - a key missing from a table that lost lines (the file's root for the keys before any header) is not reported:
//!   it may be on a lost line. When a lost line held a table header, no missing key is reported.
//! - the meaning checks run only when no other problem was found (as in a file without syntax errors) and no header
//!   was lost. Their findings inside a table that lost lines are dropped, and so is any finding that changes when
//!   those tables are left out entirely (a fault's `tickets#1` against a server whose `replicas` line was lost): it
//!   may depend on what the lost lines said. What is left holds whatever the lost lines said.

use std::cmp::Ordering;
use std::ops::Range;

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::doc::{self, Node, Source};
use super::error::Problem;
use super::path::{KeyPath, Seg};
use super::read::{deserialize_excusing, syntax_problem};

/// At most this many syntax errors are reported (each one costs a parse); a file worse than that gets them alone.
const MAX_SYNTAX_ERRORS: usize = 32;

/// A file with syntax errors: one per damaged part, and its text with those parts blanked out.
#[derive(Debug)]
pub struct Repair {
    /// The file with its damaged lines made blank: same length, same lines.
    text: String,
    /// Every syntax error, one per damaged part, as the strict reader words it.
    syntax: Vec<Problem>,
    /// The blanked byte ranges (whole lines).
    damaged: Vec<Range<usize>>,
    /// Whether a blanked part held a table header: which tables lost keys is then unknown.
    lost_header: bool,
}

/// The file as a spanned tree, or, when it has syntax errors, its [`Repair`].
pub fn parse<'i>(src: &Source<'i>) -> Result<Node<'i>, Repair> {
    let (table, errors) = DeTable::parse_recoverable(src.text);
    if errors.is_empty() {
        return Ok(Spanned::new(table.span(), DeValue::Table(table.into_inner())));
    }
    Err(repair(src))
}

fn repair(src: &Source<'_>) -> Repair {
    let mut text = src.text.to_owned();
    let mut repair = Repair { text: String::new(), syntax: Vec::new(), damaged: Vec::new(), lost_header: false };
    while repair.syntax.len() < MAX_SYNTAX_ERRORS {
        let (table, errors) = DeTable::parse_recoverable(&text);
        // The first in the file: a later error may follow from it.
        let Some(first) = errors.iter().min_by_key(|e| e.span().map_or(0, |s| s.start)) else { break };
        repair.syntax.push(syntax_problem(src, first));
        let Some(at) = first.span() else { break };
        let root: Node<'_> = Spanned::new(table.span(), DeValue::Table(table.into_inner()));
        let (range, header) = damage(&text, &root, &at);
        drop(root);
        if !blank(&mut text, &range) {
            break;
        }
        repair.damaged.push(range);
        repair.lost_header |= header;
    }
    repair.text = text;
    repair
}

/// The whole lines the error at `at` damaged, and whether they held a table header.
fn damage(text: &str, root: &Node<'_>, at: &Range<usize>) -> (Range<usize>, bool) {
    let mut entries = Vec::new();
    collect_entries(root, text, &mut entries);
    let entry = entries.into_iter().find(|e| e.range.start <= at.start && at.start <= e.range.end);
    let line = line_start(text, at.start);
    let line_text = |start: usize| text.get(start..line_end(text, start)).unwrap_or_default();
    let (start, mut end) = match &entry {
        // A value that ends: it goes whole.
        Some(e) if e.closed => (line_start(text, e.range.start.min(at.start)), line_end(text, e.range.end.max(at.end))),
        // An unclosed array, inline table or string runs on over what follows it: it ends where the error shows, or
        // before the header it swallowed.
        Some(e) => {
            let start = line_start(text, e.range.start);
            let end = if line > start && is_header_line(line_text(line)) { line - 1 } else { line_end(text, at.end) };
            (start, end)
        }
        // An error shown at a blank line or a sound header is about the line before it (an unclosed value).
        None if line_text(line).trim().is_empty() || well_formed_header(line_text(line)) => {
            let mut start = line;
            while start > 0 {
                start = line_start(text, start - 1);
                if !line_text(start).trim().is_empty() {
                    break;
                }
            }
            (start, line_end(text, start))
        }
        None => (line, line_end(text, at.end)),
    };
    let mut header = text.get(start..end).is_some_and(|lines| lines.lines().skip(1).any(is_header_line));
    if entry.is_none() && start == line && is_header_line(line_text(start)) {
        // A broken header: its keys would land in the table before it, so they go with it, up to the next header.
        header = true;
        end = line_end(text, start);
        while end < text.len() && !is_header_line(line_text(end + 1)) {
            end = line_end(text, end + 1);
        }
    }
    if start > end {
        end = start;
    }
    (start..end, header)
}

/// A line that opens a table, or tries to.
fn is_header_line(line: &str) -> bool {
    line.trim_start().starts_with('[')
}

/// A header line that parses on its own.
fn well_formed_header(line: &str) -> bool {
    is_header_line(line) && DeTable::parse(line).is_ok()
}

/// A key-value of one of the file's tables, from its key to the end of its value.
struct Entry {
    range: Range<usize>,
    /// Whether its value ends as it began (an array with `]`, an inline table with `}`): else it ran on.
    closed: bool,
}

/// Every key-value of the file's tables (not their headers).
fn collect_entries(node: &Node<'_>, text: &str, out: &mut Vec<Entry>) {
    let DeValue::Table(table) = node.get_ref() else { return };
    for (key, value) in table.iter() {
        match value.get_ref() {
            DeValue::Table(_) if holds_header(value, text) => collect_entries(value, text, out),
            DeValue::Array(items) if items.iter().any(|item| is_header(item, text)) => {
                for item in items.iter() {
                    collect_entries(item, text, out);
                }
            }
            _ => {
                let extent = extent(value);
                let own = text.get(value.span()).unwrap_or_default();
                let closed = match own.as_bytes().first() {
                    Some(b'[') => own.ends_with(']'),
                    Some(b'{') => own.ends_with('}'),
                    Some(b'"') if own.starts_with("\"\"\"") => own.len() >= 6 && own.ends_with("\"\"\""),
                    Some(b'\'') if own.starts_with("\'\'\'") => own.len() >= 6 && own.ends_with("\'\'\'"),
                    _ => true,
                };
                out.push(Entry { range: key.span().start..extent.end.max(key.span().end), closed });
            }
        }
    }
}

/// Whether `node` is a table opened by a `[header]` or `[[header]]`.
fn is_header(node: &Node<'_>, text: &str) -> bool {
    matches!(node.get_ref(), DeValue::Table(_)) && text.as_bytes().get(node.span().start) == Some(&b'[')
}

/// Whether `node` is a header's table, or holds one (`x` of `[x.y]`).
fn holds_header(node: &Node<'_>, text: &str) -> bool {
    match node.get_ref() {
        DeValue::Table(table) => is_header(node, text) || table.iter().any(|(_, v)| holds_header(v, text)),
        DeValue::Array(items) => items.iter().any(|item| is_header(item, text)),
        _ => false,
    }
}

/// The range covering `node` and everything in it (a dotted key's table spans only its first key).
fn extent(node: &Node<'_>) -> Range<usize> {
    let mut range = node.span();
    let mut widen = |r: Range<usize>| {
        range.start = range.start.min(r.start);
        range.end = range.end.max(r.end);
    };
    match node.get_ref() {
        DeValue::Table(table) => {
            for (key, value) in table.iter() {
                widen(key.span());
                widen(extent(value));
            }
        }
        DeValue::Array(items) => {
            for item in items.iter() {
                widen(extent(item));
            }
        }
        _ => {}
    }
    range
}

fn line_start(text: &str, at: usize) -> usize {
    let at = at.min(text.len());
    text.as_bytes()[..at].iter().rposition(|b| *b == b'\n').map_or(0, |nl| nl + 1)
}

/// The offset of the newline ending the line at `at`, or the end of the text.
fn line_end(text: &str, at: usize) -> usize {
    let at = at.min(text.len());
    text.as_bytes()[at..].iter().position(|b| *b == b'\n').map_or(text.len(), |nl| at + nl)
}

/// Replaces `range` (whole lines) with spaces, keeping its newlines; false when there was nothing to blank.
fn blank(text: &mut String, range: &Range<usize>) -> bool {
    let Some(part) = text.get(range.clone()) else { return false };
    if part.trim().is_empty() {
        return false;
    }
    // One space per byte, so that every later offset stays where it was.
    let blanked: String =
        part.chars().map(|c| if c == '\n' { "\n".to_owned() } else { " ".repeat(c.len_utf8()) }).collect();
    text.replace_range(range.clone(), &blanked);
    true
}

impl Repair {
    /// Every problem of the file, sorted by [`invalid`](super::read::invalid): its syntax errors, then what reading
    /// the repaired file finds (see the module). `prepare` changes the tree before it is read and gives its own
    /// problems (a scenario's `--set`); `semantic` gives the meaning checks' problems of a value read from a tree.
    pub fn problems<'a, T: DeserializeOwned>(
        &'a self,
        src: &Source<'a>,
        prepare: impl FnOnce(&mut Node<'a>) -> Vec<Problem>,
        semantic: impl Fn(T, &Node<'a>) -> Vec<Problem>,
    ) -> Vec<Problem> {
        let mut out = self.syntax.clone();
        let Ok(table) = DeTable::parse(&self.text) else { return out };
        let mut root: Node<'a> = Spanned::new(table.span(), DeValue::Table(table.into_inner()));
        let owners = self.owners(&root, src.text);
        let earlier = prepare(&mut root);
        let excused = |path: &KeyPath| self.lost_header || owners.iter().any(|owner| within(path, owner));

        // As written, and without the tables that lost lines: the second finds the shape problems after a table
        // that cannot be read, and tells which findings do not depend on the lost lines.
        let with = deserialize_excusing::<T>(&root, src, &excused, &KeyPath::clone);
        let (bare, removed) = without(&root, &owners);
        let restore = |path: &KeyPath| restore(path, &removed);
        let without = deserialize_excusing::<T>(&bare, src, &excused, &restore);

        let mut shape: Vec<Problem> = earlier;
        for p in with.as_ref().err().into_iter().chain(without.as_ref().err()).flatten() {
            if !shape.contains(p) {
                shape.push(p.clone());
            }
        }
        if !shape.is_empty() || self.lost_header {
            out.extend(shape);
            return out;
        }
        let (Ok(with), Ok(without)) = (with, without) else { return out };
        let kept = semantic(without, &bare);
        let in_owner = |p: &Problem| {
            let path = p.key.as_deref().and_then(|key| KeyPath::parse(key).ok());
            path.is_some_and(|path| owners.iter().any(|owner| within(&path, owner)))
        };
        out.extend(
            semantic(with, &root)
                .into_iter()
                .filter(|p| !in_owner(p) && kept.iter().any(|q| q.location == p.location && q.message == p.message)),
        );
        out
    }

    /// The tables that lost lines: for each blanked part, the table whose header comes last before it (the root
    /// before the first header).
    fn owners(&self, root: &Node<'_>, text: &str) -> Vec<KeyPath> {
        let mut headers = Vec::new();
        collect_headers(root, text, &mut KeyPath::root(), &mut headers);
        let mut owners: Vec<KeyPath> = Vec::new();
        for range in &self.damaged {
            let owner = headers
                .iter()
                .filter(|(start, _)| *start < range.start)
                .max_by_key(|(start, _)| *start)
                .map_or_else(KeyPath::root, |(_, path)| path.clone());
            if !owners.contains(&owner) {
                owners.push(owner);
            }
        }
        owners
    }
}

/// Where each header's table starts, and its path.
fn collect_headers(node: &Node<'_>, text: &str, path: &mut KeyPath, out: &mut Vec<(usize, KeyPath)>) {
    if is_header(node, text) {
        out.push((node.span().start, path.clone()));
    }
    match node.get_ref() {
        DeValue::Table(table) => {
            for (key, value) in table.iter() {
                path.0.push(Seg::Key(key.get_ref().to_string()));
                collect_headers(value, text, path, out);
                path.0.pop();
            }
        }
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.0.push(Seg::Index(i));
                collect_headers(item, text, path, out);
                path.0.pop();
            }
        }
        _ => {}
    }
}

/// Whether `path` is in the table `owner`: anything under it, or for the root, its own keys.
fn within(path: &KeyPath, owner: &KeyPath) -> bool {
    if owner.is_root() { path.0.len() == 1 } else { path.0.starts_with(&owner.0) }
}

/// `root` without the tables `owners` (the root stays), and the paths taken out.
fn without<'i>(root: &Node<'i>, owners: &[KeyPath]) -> (Node<'i>, Vec<KeyPath>) {
    let mut out = root.clone();
    let mut gone: Vec<KeyPath> = owners
        .iter()
        .filter(|o| !o.is_root() && !owners.iter().any(|other| other != *o && !other.is_root() && within(o, other)))
        .cloned()
        .collect();
    // The later items of an array first, so that each path still names its item when it is taken out.
    gone.sort_by(|a, b| order(b, a));
    gone.retain(|path| doc::remove_at(&mut out, path));
    (out, gone)
}

fn order(a: &KeyPath, b: &KeyPath) -> Ordering {
    for (x, y) in a.0.iter().zip(&b.0) {
        let by = match (x, y) {
            (Seg::Key(x), Seg::Key(y)) => x.cmp(y),
            (Seg::Index(x), Seg::Index(y)) => x.cmp(y),
            (Seg::Key(_), Seg::Index(_)) => Ordering::Less,
            (Seg::Index(_), Seg::Key(_)) => Ordering::Greater,
        };
        if by != Ordering::Equal {
            return by;
        }
    }
    a.0.len().cmp(&b.0.len())
}

/// The path the file wrote for `path` of the tree without the items `removed`: each index moves past the items
/// taken out before it.
fn restore(path: &KeyPath, removed: &[KeyPath]) -> KeyPath {
    let mut out = KeyPath::root();
    for seg in &path.0 {
        let seg = match seg {
            Seg::Index(i) => {
                let mut gone: Vec<usize> = removed
                    .iter()
                    .filter(|r| r.0.len() == out.0.len() + 1 && r.0.starts_with(&out.0))
                    .filter_map(|r| match r.0.last() {
                        Some(Seg::Index(k)) => Some(*k),
                        _ => None,
                    })
                    .collect();
                gone.sort_unstable();
                Seg::Index(gone.into_iter().fold(*i, |j, k| if k <= j { j + 1 } else { j }))
            }
            key => key.clone(),
        };
        out.0.push(seg);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restores_indices_past_removed_items() {
        let removed = vec![KeyPath::parse("servers[0]").unwrap(), KeyPath::parse("servers[2]").unwrap()];
        for (bare, written) in [("servers[0].name", "servers[1].name"), ("servers[1]", "servers[3]"), ("load", "load")]
        {
            assert_eq!(restore(&KeyPath::parse(bare).unwrap(), &removed).to_string(), written);
        }
    }
}
