//! Inline commands (`PING\r\n` typed into telnet, no RESP framing): the line split into arguments exactly as Redis's
//! `sdssplitargs` does it, quotes and escapes included, so that both agree on what a hand-typed line means.

/// The arguments of one inline line (without its line ending), or `None` for unbalanced quotes (Redis answers
/// `Protocol error: unbalanced quotes in request` and closes).
///
/// The line is a C string to Redis: a NUL byte ends it.
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let end = line.iter().position(|&b| b == 0).unwrap_or(line.len());
    let line = &line[..end];
    // Past the end reads as NUL, as in C.
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while at(p) != 0 && is_space(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return Some(args);
        }
        // The quote the current word is inside of, if any.
        let (mut quote, mut done): (Option<u8>, bool) = (None, false);
        let mut current = Vec::new();
        while !done {
            let c = at(p);
            match quote {
                Some(b'"')
                    if c == b'\\' && at(p + 1) == b'x' && hex(at(p + 2)).is_some() && hex(at(p + 3)).is_some() =>
                {
                    current.push(hex(at(p + 2)).unwrap_or(0) * 16 + hex(at(p + 3)).unwrap_or(0));
                    p += 3;
                }
                Some(b'"') if c == b'\\' && at(p + 1) != 0 => {
                    p += 1;
                    current.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                }
                // Inside single quotes only the quote itself can be escaped.
                Some(b'\'') if c == b'\\' && at(p + 1) == b'\'' => {
                    p += 1;
                    current.push(b'\'');
                }
                Some(q) if c == q => {
                    // The closing quote must be followed by a space or nothing at all.
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    done = true;
                }
                // The line ended inside the quotes.
                Some(_) if c == 0 => return None,
                Some(_) => current.push(c),
                None => match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' | b'\'' => quote = Some(c),
                    other => current.push(other),
                },
            }
            if at(p) != 0 {
                p += 1;
            }
        }
        args.push(current);
    }
}

/// C's `isspace` in the C locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::split_args;

    fn split(line: &str) -> Option<Vec<String>> {
        split_args(line.as_bytes()).map(|a| a.into_iter().map(|b| String::from_utf8_lossy(&b).into_owned()).collect())
    }

    #[test]
    fn words_quotes_and_escapes() {
        assert_eq!(split("  SET  k \"a\\x41\\n\" ").unwrap(), ["SET", "k", "aA\n"]);
        assert_eq!(split("SET y 'it\\'s'").unwrap(), ["SET", "y", "it's"]);
        assert_eq!(split("ab\"c d\"").unwrap(), ["abc d"]);
        assert_eq!(split("   ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn unbalanced_or_glued_quotes_are_refused() {
        assert_eq!(split("SET z \"unbal"), None);
        assert_eq!(split("SET z 'unbal"), None);
        assert_eq!(split("\"a\"b"), None);
    }

    #[test]
    fn a_nul_byte_ends_the_line() {
        assert_eq!(split_args(b"PING\0 ignored").unwrap(), vec![b"PING".to_vec()]);
    }
}
