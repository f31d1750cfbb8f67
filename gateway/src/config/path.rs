//! Key paths: `servers[1].tools[0].latency.p99_ms`, as `--set` and `sweep.param` write them and as errors name keys.

use std::fmt;

/// Deeper paths are refused: the deepest key of a scenario is a few levels down, and building a table thousands of
/// levels deep for a typo would overflow the stack of every recursive walk after it.
const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyPath(pub Vec<Seg>);

impl KeyPath {
    pub fn root() -> Self {
        KeyPath(Vec::new())
    }

    /// Parses `a.b[0].c`. Keys are bare (`A-Za-z0-9_-`) or double-quoted (`args."my key"`, no escapes).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut segs = Vec::new();
        let mut rest = text;
        let mut expect_key = true;
        while !rest.is_empty() || expect_key {
            if expect_key {
                let (key, after) = if let Some(quoted) = rest.strip_prefix('"') {
                    let end = quoted.find('"').ok_or_else(|| format!("unterminated quoted key in `{text}`"))?;
                    (&quoted[..end], &quoted[end + 1..])
                } else {
                    let end = rest.find(|c: char| !is_bare(c)).unwrap_or(rest.len());
                    if end == 0 {
                        return Err(match rest.chars().next() {
                            None if text.is_empty() => "empty key path".to_owned(),
                            None => format!("`{text}` ends with `.`: a key must follow"),
                            Some(c) => format!("unexpected {c:?} in `{text}`: expected a key"),
                        });
                    }
                    (&rest[..end], &rest[end..])
                };
                segs.push(Seg::Key(key.to_owned()));
                rest = after;
                expect_key = false;
            } else if let Some(after) = rest.strip_prefix('.') {
                rest = after;
                expect_key = true;
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after.find(']').ok_or_else(|| format!("unclosed `[` in `{text}`"))?;
                let index = after[..end]
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| format!("`[{}]` in `{text}` is not an array index", &after[..end]))?;
                segs.push(Seg::Index(index));
                rest = &after[end + 1..];
            } else {
                let c = rest.chars().next().unwrap_or(' ');
                return Err(format!("unexpected {c:?} in `{text}`: expected `.` or `[`"));
            }
        }
        if segs.len() > MAX_DEPTH {
            let start: String = text.chars().take(40).collect();
            return Err(format!("`{start}...` is too deep: a key path has at most {MAX_DEPTH} parts"));
        }
        Ok(KeyPath(segs))
    }

    pub fn key(&self, key: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Key(key.to_owned()));
        p
    }

    pub fn index(&self, index: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Index(index));
        p
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    pub fn first_key(&self) -> Option<&str> {
        match self.0.first() {
            Some(Seg::Key(k)) => Some(k),
            _ => None,
        }
    }

    pub fn last_key(&self) -> Option<&str> {
        match self.0.last() {
            Some(Seg::Key(k)) => Some(k),
            _ => None,
        }
    }

    /// The first `n` segments.
    pub fn prefix(&self, n: usize) -> KeyPath {
        KeyPath(self.0[..n.min(self.0.len())].to_vec())
    }
}

fn is_bare(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    if !k.is_empty() && k.chars().all(is_bare) {
                        f.write_str(k)?;
                    } else {
                        write!(f, "{k:?}")?;
                    }
                }
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_paths() {
        for text in ["seed", "load.sessions", "servers[0].tools[12].latency.p99_ms", "faults[1].start", "a[0][1]"] {
            assert_eq!(KeyPath::parse(text).map(|p| p.to_string()), Ok(text.to_owned()));
        }
        assert_eq!(
            KeyPath::parse("load.mix[0].args.\"my key\"").map(|p| p.to_string()).as_deref(),
            Ok("load.mix[0].args.\"my key\"")
        );
        let deep = vec!["a"; 65].join(".");
        for bad in ["", ".a", "a.", "a..b", "a[", "a[x]", "a[-1]", "[0]", "a]", "a b", "a.\"b", &deep] {
            assert!(KeyPath::parse(bad).is_err(), "{bad:?} should not parse");
        }
    }
}
