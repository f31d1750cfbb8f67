//! The scenario as a spanned TOML tree (toml's `DeValue`): every key and value keeps its byte range in the text, so an
//! error found by serde or by validation can be turned into `file:line:column` and a key path.
//!
//! Values that came from a `--set` argument get a synthetic span past the end of the text, one position per argument
//! (`text.len() + 1 + i`): a problem located there is reported as that argument rather than as a place in the file.
//! Sweep values keep their own spans in the file, so a bad sweep value points at itself.

use std::borrow::Cow;
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue};

use super::error::Location;
use super::path::{KeyPath, Seg};

pub type Node<'i> = Spanned<DeValue<'i>>;

/// The texts spans point into: the scenario file and the `--set` arguments.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub origin: &'a str,
    pub text: &'a str,
    pub sets: &'a [String],
}

/// Synthetic positions per `--set` argument: its value's nodes get distinct, nested spans inside its block, so that
/// a problem deep inside an inline-table value still finds its key.
const SET_BLOCK: usize = 1 << 24;

impl Source<'_> {
    /// The synthetic positions of `--set` argument `i`.
    pub fn set_block(&self, i: usize) -> Range<usize> {
        let start = self.text.len() + 1 + i * SET_BLOCK;
        start..start + SET_BLOCK
    }

    pub fn whole(&self) -> Location {
        Location::Origin { origin: self.origin.to_owned() }
    }

    pub fn location(&self, span: &Range<usize>) -> Location {
        if span.start > self.text.len() {
            let i = (span.start - self.text.len() - 1) / SET_BLOCK;
            return match self.sets.get(i) {
                Some(arg) => Location::Set { arg: arg.clone() },
                None => self.whole(),
            };
        }
        let (line, column) = line_column(self.text, span.start);
        Location::File { origin: self.origin.to_owned(), line, column }
    }
}

/// 1-based line and column (in characters) of byte offset `at`.
pub fn line_column(text: &str, at: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let at = at.min(bytes.len());
    let line_start = bytes[..at].iter().rposition(|b| *b == b'\n').map_or(0, |nl| nl + 1);
    let line = bytes[..line_start].iter().filter(|b| **b == b'\n').count() + 1;
    let column = String::from_utf8_lossy(&bytes[line_start..at]).chars().count() + 1;
    (line, column)
}

/// The deepest node (key or value) whose span contains `span`, as a path, with the span of that key or value. An
/// empty span (toml gives the root's, `0..0`, for a missing top-level key) is the root.
pub fn path_at(root: &Node<'_>, span: &Range<usize>) -> (KeyPath, Range<usize>) {
    let mut best = (KeyPath::root(), span.clone());
    if span.is_empty() {
        return best;
    }
    let mut path = KeyPath::root();
    visit(root, span, &mut path, &mut best);
    best
}

fn contains(node: &Range<usize>, span: &Range<usize>) -> bool {
    !node.is_empty() && node.start <= span.start && span.end <= node.end
}

fn visit(node: &Node<'_>, span: &Range<usize>, path: &mut KeyPath, best: &mut (KeyPath, Range<usize>)) {
    let consider = |path: &KeyPath, node_span: Range<usize>, best: &mut (KeyPath, Range<usize>)| {
        if contains(&node_span, span) && path.0.len() > best.0.0.len() {
            *best = (path.clone(), node_span);
        }
    };
    if !path.is_root() {
        consider(path, node.span(), best);
    }
    match node.get_ref() {
        DeValue::Table(table) => {
            for (key, value) in table.iter() {
                path.0.push(Seg::Key(key.get_ref().to_string()));
                consider(path, key.span(), best);
                visit(value, span, path, best);
                path.0.pop();
            }
        }
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.0.push(Seg::Index(i));
                visit(item, span, path, best);
                path.0.pop();
            }
        }
        _ => {}
    }
}

/// The node at `path`, if it exists.
pub fn get<'a, 'i>(root: &'a Node<'i>, path: &KeyPath) -> Option<&'a Node<'i>> {
    let mut node = root;
    for seg in &path.0 {
        node = match (seg, node.get_ref()) {
            (Seg::Key(k), DeValue::Table(t)) => t.get(k.as_str())?,
            (Seg::Index(i), DeValue::Array(a)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(node)
}

/// The span of the deepest existing node along `path` and whether that is the whole path; `None` when not even the
/// first key exists.
pub fn nearest_span(root: &Node<'_>, path: &KeyPath) -> Option<(Range<usize>, bool)> {
    let mut found = None;
    for n in 1..=path.0.len() {
        match get(root, &path.prefix(n)) {
            Some(node) => found = Some((node.span(), n == path.0.len())),
            None => break,
        }
    }
    found
}

/// Removes the key at `path`; false when the path does not end in an existing key of a table.
pub fn remove(root: &mut Node<'_>, path: &KeyPath) -> bool {
    let Some((Seg::Key(last), parent)) = path.0.split_last() else { return false };
    let Some(parent) = get_mut(root, &KeyPath(parent.to_vec())) else { return false };
    match parent.get_mut() {
        DeValue::Table(t) => t.remove(last.as_str()).is_some(),
        _ => false,
    }
}

/// Removes the node at `path`, a key of a table or an item of an array (the later items move down one); false when
/// there is none.
pub fn remove_at(root: &mut Node<'_>, path: &KeyPath) -> bool {
    let Some((Seg::Index(i), parent)) = path.0.split_last() else { return remove(root, path) };
    let Some(parent) = get_mut(root, &KeyPath(parent.to_vec())) else { return false };
    let DeValue::Array(items) = parent.get_mut() else { return false };
    if *i >= items.len() {
        return false;
    }
    // toml's array has no `remove`: rebuild it without the item.
    let mut kept = DeArray::new();
    for (n, item) in items.iter().enumerate() {
        if n != *i {
            kept.push(item.clone());
        }
    }
    *items = kept;
    true
}

fn get_mut<'a, 'i>(root: &'a mut Node<'i>, path: &KeyPath) -> Option<&'a mut Node<'i>> {
    let mut node = root;
    for seg in &path.0 {
        node = match (seg, node.get_mut()) {
            (Seg::Key(k), DeValue::Table(t)) => t.get_mut(k.as_str())?,
            (Seg::Index(i), DeValue::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(node)
}

/// What a value is, for messages: "a table", "an integer".
pub fn describe(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a datetime",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// Puts `value` at `path`, replacing what is there. Missing tables on the way are created (`agent.retry` works in a
/// file without `[agent]`); array indices must exist. New keys and tables get `key_span`. The error names the first
/// part of the path that cannot be followed.
pub fn insert<'i>(
    root: &mut Node<'i>,
    path: &KeyPath,
    key_span: Range<usize>,
    value: Node<'i>,
) -> Result<(), (KeyPath, String)> {
    let Some((last, parents)) = path.0.split_last() else {
        return Err((KeyPath::root(), "cannot replace the whole scenario".to_owned()));
    };
    let mut node = root;
    for (n, seg) in parents.iter().enumerate() {
        let here = path.prefix(n);
        let next_is_key = matches!(path.0.get(n + 1), Some(Seg::Key(_)));
        node = match (seg, node.get_mut()) {
            (Seg::Key(k), DeValue::Table(t)) => {
                if !t.contains_key(k.as_str()) {
                    if !next_is_key {
                        return Err((here.key(k), "does not exist, so it cannot be indexed".to_owned()));
                    }
                    t.insert(
                        Spanned::new(key_span.clone(), Cow::Owned(k.clone())),
                        Spanned::new(key_span.clone(), DeValue::Table(DeTable::default())),
                    );
                }
                match t.get_mut(k.as_str()) {
                    Some(child) => child,
                    None => return Err((here.key(k), "does not exist".to_owned())),
                }
            }
            (Seg::Index(i), DeValue::Array(a)) => {
                let len = a.len();
                match a.get_mut(*i) {
                    Some(child) => child,
                    None => return Err((here.index(*i), out_of_range(*i, len))),
                }
            }
            (Seg::Key(_), other) => return Err((here, format!("is {}, not a table", describe(other)))),
            (Seg::Index(_), other) => return Err((here, format!("is {}, not an array", describe(other)))),
        };
    }
    let here = path.prefix(parents.len());
    match (last, node.get_mut()) {
        (Seg::Key(k), DeValue::Table(t)) => {
            match t.get_mut(k.as_str()) {
                Some(slot) => *slot = value,
                None => {
                    t.insert(Spanned::new(key_span, Cow::Owned(k.clone())), value);
                }
            }
            Ok(())
        }
        (Seg::Index(i), DeValue::Array(a)) => {
            let len = a.len();
            match a.get_mut(*i) {
                Some(slot) => {
                    *slot = value;
                    Ok(())
                }
                None => Err((here.index(*i), out_of_range(*i, len))),
            }
        }
        (Seg::Key(_), other) => Err((here, format!("is {}, not a table", describe(other)))),
        (Seg::Index(_), other) => Err((here, format!("is {}, not an array", describe(other)))),
    }
}

fn out_of_range(i: usize, len: usize) -> String {
    match len {
        0 => format!("index {i} is out of range: the array is empty"),
        1 => format!("index {i} is out of range: the array has 1 entry (index 0)"),
        _ => format!("index {i} is out of range: the array has {len} entries (0 to {})", len - 1),
    }
}

/// `value` with its spans (which point into a `--set` argument, not the file) replaced by positions from `block`:
/// every node gets its own span, a table's or array's covering its children's, as in a real text.
pub fn respan<'i>(value: Node<'i>, block: &Range<usize>) -> Node<'i> {
    let mut next = block.start;
    respan_in(value, block, &mut next)
}

fn respan_in<'i>(value: Node<'i>, block: &Range<usize>, next: &mut usize) -> Node<'i> {
    // Past the end of the block (an absurdly large value) positions are shared: spans may then nest wrongly, which
    // only blurs which key an error names.
    let take = |next: &mut usize| {
        let at = (*next).min(block.end - 1);
        *next += 1;
        at..at + 1
    };
    let start = take(next).start;
    let inner = match value.into_inner() {
        DeValue::Table(table) => DeValue::Table(
            table
                .into_iter()
                .map(|(k, v)| {
                    let key = Spanned::new(take(next), k.into_inner());
                    (key, respan_in(v, block, next))
                })
                .collect(),
        ),
        DeValue::Array(items) => {
            let mut out = DeArray::new();
            for item in items.iter() {
                out.push(respan_in(item.clone(), block, next));
            }
            DeValue::Array(out)
        }
        scalar => scalar,
    };
    let end = (*next).min(block.end).max(start + 1);
    Spanned::new(start..end, inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_characters() {
        let text = "a = 1\nbé = \"x\"\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 4), (1, 5));
        assert_eq!(line_column(text, 6), (2, 1));
        // `=` after the two-byte `é`: byte 10, character column 4.
        assert_eq!(line_column(text, 10), (2, 4));
        assert_eq!(line_column(text, 1000), (3, 1));
        assert_eq!(line_column("", 0), (1, 1));
    }
}
