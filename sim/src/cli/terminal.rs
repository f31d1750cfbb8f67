//! Server-controlled text made safe for a terminal (DESIGN.md rule 9: server-controlled data is hostile).
//!
//! Tool names, descriptions, `serverInfo`, error messages and results come from whatever server the command talks
//! to. Printed raw, an ESC sequence could clear the screen, retitle the window or paint a fake "ok: 8 passed"; a
//! bidi override could make the reader see other text than was sent; a 1 MB message with newlines would flood the
//! scrollback. Every human-mode print of such text goes through [`show`], which:
//!
//! - escapes every control character visibly: C0 and DEL as `\x1b`, `\x07`, ... (`\t`, `\r`, `\n` by their usual
//!   names), C1 (U+0080–U+009F, which some terminals obey as CSI and OSC) as `\x9b`; and the characters that reorder
//!   or break lines without being controls: the bidi embeddings and overrides U+202A–U+202E, isolates U+2066–U+2069,
//!   marks U+200E, U+200F, U+061C, and the separators U+2028, U+2029, as `\u{202e}`;
//! - keeps `\n` only in a block ([`Bound::TEXT`]); a one-line field escapes it, so a server cannot start a line of
//!   its own in the middle of ours;
//! - shows at most the bound's characters (escapes counted as printed) and lines, cutting at a character boundary,
//!   never inside an escape, and says what it cut: `… [1,048,320 more bytes cut; --json prints it whole]`.
//!
//! A backslash is left alone, so printable ASCII within the bound prints exactly as sent. `--json` output never comes
//! here: serde_json escapes every control character and keeps the text whole.

use std::fmt::Write as _;

use crate::report::num::grouped;

/// How much of one piece of server text a human sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Characters shown, escapes counted as printed (`\x1b` is 4).
    chars: usize,
    /// Lines shown. 1 makes a one-line field: its newlines are escaped, not kept.
    lines: usize,
    /// Where the whole text can be had, added to the note of a cut (empty: nowhere else).
    whole: &'static str,
}

/// What `--json` does for every command that prints server text.
const IN_JSON: &str = "--json prints it whole";

impl Bound {
    /// A name, version or protocol version, one line of a description: one line of 200 characters. The MCP spec keeps
    /// tool names to 128 characters; 200 leaves room for escapes and stays within two lines of a 100-column terminal.
    pub const NAME: Bound = Bound { chars: 200, lines: 1, whole: IN_JSON };
    /// An error message, or a diagnose line quoting one: one line of 1,000 characters. Long enough for an exception
    /// with its context (a Python error message rarely passes a few hundred characters), short enough that a flood
    /// costs at most ten lines of a 100-column terminal.
    pub const MESSAGE: Bound = Bound { chars: 1_000, lines: 1, whole: IN_JSON };
    /// [`Bound::MESSAGE`] for a failure printed on stderr, which `--json` does not change.
    pub const ERROR: Bound = Bound { whole: "", ..Bound::MESSAGE };
    /// A tool's result text: 4,000 characters in at most 40 lines, about one screen, which is what a human reads
    /// before reaching for `--json` and a pager.
    pub const TEXT: Bound = Bound { chars: 4_000, lines: 40, whole: IN_JSON };
}

/// `text` escaped and cut to `bound`, with a note saying how much was cut.
pub fn show(text: &str, bound: Bound) -> String {
    let shown = escape(text, bound);
    let mut out = shown.text;
    if shown.cut_bytes > 0 {
        // After a line cut the note gets its own line, so the last line shown is not mistaken for a cut one.
        if shown.at_line {
            out.push('\n');
        }
        let plural = if shown.cut_bytes == 1 { "" } else { "s" };
        let _ = write!(out, "… [{} more byte{plural} cut", grouped(shown.cut_bytes as u64));
        if !bound.whole.is_empty() {
            let _ = write!(out, "; {}", bound.whole);
        }
        out.push(']');
    }
    out
}

/// The shown part of a text: escaped, within the bound, and what was left out.
#[derive(Debug, PartialEq, Eq)]
struct Shown {
    text: String,
    /// Bytes of the input not shown (0: all of it was).
    cut_bytes: usize,
    /// The cut was at a line boundary (the line bound), not inside a line (the character bound).
    at_line: bool,
}

fn escape(text: &str, bound: Bound) -> Shown {
    let one_line = bound.lines <= 1;
    let mut out = String::with_capacity(text.len().min(bound.chars));
    let (mut chars, mut newlines) = (0, 0);
    let cut = |out: String, at: usize, at_line: bool| Shown { text: out, cut_bytes: text.len() - at, at_line };
    for (at, c) in text.char_indices() {
        if c == '\n' && !one_line {
            // This newline would start line `lines + 1`; a final newline ends the last line and starts none.
            if newlines + 1 >= bound.lines && at + 1 < text.len() {
                return cut(out, at, true);
            }
            newlines += 1;
        }
        let len = out.len();
        let width = push_escaped(&mut out, c, one_line);
        if chars + width > bound.chars {
            out.truncate(len);
            return cut(out, at, false);
        }
        chars += width;
    }
    Shown { text: out, cut_bytes: 0, at_line: false }
}

/// Pushes `c`, escaped if need be; returns the characters pushed.
fn push_escaped(out: &mut String, c: char, one_line: bool) -> usize {
    let len = out.len();
    let _ = match c {
        '\n' if one_line => out.write_str("\\n"),
        '\r' => out.write_str("\\r"),
        '\t' => out.write_str("\\t"),
        '\n' => {
            out.push(c);
            return 1;
        }
        // C0, DEL and C1: all below U+0100, so two hex digits.
        c if c.is_control() => write!(out, "\\x{:02x}", u32::from(c)),
        '\u{061c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}' => write!(out, "\\u{{{:04x}}}", u32::from(c)),
        c => {
            out.push(c);
            return 1;
        }
    };
    // Escapes are ASCII: one character per byte.
    out.len() - len
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Whether a human could be misled by `c` reaching the terminal as it is.
    fn unsafe_char(c: char, one_line: bool) -> bool {
        (c.is_control() && (one_line || c != '\n'))
            || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    }

    /// Strings rich in what matters here: controls, bidi characters, newlines, multi-byte characters.
    fn hostile() -> impl Strategy<Value = String> {
        let special = prop::sample::select(vec![
            '\n',
            '\n',
            '\r',
            '\t',
            '\x1b',
            '\x07',
            '\0',
            '\x7f',
            '\u{80}',
            '\u{9b}',
            '\u{202e}',
            '\u{2066}',
            '\u{200f}',
            '\u{2028}',
            '\\',
            '[',
            'é',
            '界',
            '\u{1f600}',
        ]);
        let chars = prop_oneof![3 => (0x20u8..0x7f).prop_map(char::from), 2 => special, 1 => any::<char>()];
        prop::collection::vec(chars, 0..200).prop_map(|v| v.into_iter().collect())
    }

    fn bound() -> impl Strategy<Value = Bound> {
        (1usize..80, 1usize..6, prop::bool::ANY).prop_map(|(chars, lines, json)| Bound {
            chars,
            lines,
            whole: if json { IN_JSON } else { "" },
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whatever the server sends: no control character but a block's `\n`, no bidi character, within the bound,
        /// and the note's byte count is exactly the part not shown.
        #[test]
        fn output_is_safe_bounded_and_says_what_was_cut(text in hostile(), bound in bound()) {
            let one_line = bound.lines <= 1;
            let out = show(&text, bound);
            prop_assert!(!out.chars().any(|c| unsafe_char(c, one_line)), "{out:?}");

            let shown = escape(&text, bound);
            prop_assert!(shown.text.chars().count() <= bound.chars, "{shown:?}");
            prop_assert!(shown.text.lines().count() <= bound.lines, "{shown:?}");
            prop_assert!(out.starts_with(&shown.text));
            let unbounded = Bound { chars: usize::MAX, lines: usize::MAX, whole: "" };
            let kept = &text[..text.len() - shown.cut_bytes];
            prop_assert_eq!(&escape(kept, Bound { lines: bound.lines, ..unbounded }).text, &shown.text);
            if shown.cut_bytes == 0 {
                prop_assert_eq!(&out, &shown.text);
            } else {
                let plural = if shown.cut_bytes == 1 { "" } else { "s" };
                let note = format!("… [{} more byte{plural} cut", grouped(shown.cut_bytes as u64));
                let rest = &out[shown.text.len()..];
                prop_assert_eq!(rest.starts_with('\n'), shown.at_line, "{:?}", out);
                prop_assert!(rest.trim_start_matches('\n').starts_with(&note), "{out:?}");
                let end = if bound.whole.is_empty() { " cut]".to_owned() } else { format!(" cut; {IN_JSON}]") };
                prop_assert!(out.ends_with(&end), "{out:?}");
            }
        }

        /// Plain printable ASCII within the bound is shown exactly as sent.
        #[test]
        fn printable_ascii_within_the_bound_is_unchanged(text in "[ -~]{0,80}", room in 0usize..10, bound in bound()) {
            let bound = Bound { chars: text.len() + room, ..bound };
            prop_assert_eq!(show(&text, bound), text);
        }

        /// Lines of printable ASCII within a block's bound keep their newlines.
        #[test]
        fn a_block_within_the_bound_is_unchanged(lines in prop::collection::vec("[ -~]{0,30}", 1..=40)) {
            let text = lines.join("\n");
            prop_assume!(text.len() <= Bound::TEXT.chars);
            prop_assert_eq!(show(&text, Bound::TEXT), text);
        }
    }

    #[test]
    fn escapes_are_visible_and_named() {
        let text = "a\x1b[2J\x07\r\t\u{9b}31m\u{202e}txt.exe\u{2066}\n\\x1b";
        assert_eq!(show(text, Bound::NAME), r"a\x1b[2J\x07\r\t\x9b31m\u{202e}txt.exe\u{2066}\n\x1b");
        assert_eq!(show("two\nlines\n", Bound::TEXT), "two\nlines\n");
        assert_eq!(show("two\nlines", Bound::NAME), r"two\nlines");
    }

    #[test]
    fn a_megabyte_of_lines_is_cut_to_a_screen_with_a_note() {
        let line = "x".repeat(99) + "\n";
        let text = line.repeat(10_486);
        let out = show(&text, Bound::TEXT);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 41, "40 lines and the note");
        assert_eq!(lines[39], "x".repeat(99));
        assert_eq!(text.len() - 40 * 100 + 1, 1_044_601);
        assert_eq!(lines[40], "… [1,044,601 more bytes cut; --json prints it whole]");

        let one_line = show(&text, Bound::ERROR);
        assert!(!one_line.contains('\n'));
        // Nine lines of 99 characters and an escaped newline, then 91 of the tenth: 1,000 characters, 991 bytes.
        assert!(one_line.starts_with(&format!("{}\\n", "x".repeat(99))), "{one_line}");
        assert_eq!(text.len() - 991, 1_047_609);
        assert!(one_line.ends_with("x… [1,047,609 more bytes cut]"), "{one_line}");
    }

    #[test]
    fn an_escape_is_never_split() {
        let b = Bound { chars: 6, lines: 1, whole: "" };
        assert_eq!(show("ab\x1b\x1b", b), r"ab\x1b… [1 more byte cut]");
        assert_eq!(show("abc\x1bd", b), "abc… [2 more bytes cut]");
    }
}
