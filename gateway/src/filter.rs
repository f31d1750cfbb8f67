//! Which of a server's tools, prompts and resources agents may see and use (`[[servers]]` `tools`, `prompts`,
//! `resources`, each with `allow` and `deny`): glob patterns on the upstream's own names. Deny wins over allow; no
//! `allow` allows everything not denied.
//!
//! A pattern's `*` matches any run of characters (`/` and `_` included: a URI's path, a tool's suffix), `?` exactly
//! one; every other character stands for itself. A pattern covers the whole name: `get` does not match `get_sum`.

/// Whether `name` passes `allow` (absent: everything) and no pattern of `deny`.
pub fn admits(allow: Option<&[String]>, deny: &[String], name: &str) -> bool {
    !deny.iter().any(|p| matches(p, name)) && allow.is_none_or(|allow| allow.iter().any(|p| matches(p, name)))
}

/// Whether the glob `pattern` matches all of `text`.
///
/// Greedy with one backtrack point (the last `*` seen): a later `*` makes every earlier choice final, so the walk
/// is at most |pattern| × |text| steps, whatever the pattern, never exponential.
pub fn matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    // After the last `*`: where the pattern resumes, and where in the text that star's run ends so far.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p + 1, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                // The star takes one more character, and the rest of the pattern is tried from there.
                Some((resume, run_end)) => {
                    star = Some((resume, run_end + 1));
                    p = resume;
                    t = run_end + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// What is wrong with `pattern` as a config value, if anything.
pub fn problem(pattern: &str) -> Option<&'static str> {
    if pattern.is_empty() {
        Some("an empty pattern matches nothing: write a name, or `*` for every name")
    } else if pattern.trim() != pattern {
        Some("a pattern must not start or end with whitespace (no name does)")
    } else if pattern.contains(['[', ']', '{', '}']) {
        Some("only `*` and `?` are wildcards: `[...]` and `{...}` would be matched literally; use `?` or `*` there")
    } else if pattern.chars().any(char::is_control) {
        Some("a pattern must not hold control characters")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::file::GatewayFile;

    #[test]
    fn star_and_question_mark_match_as_globs_do() {
        let yes = [
            ("echo", "echo"),
            ("*", ""),
            ("*", "anything/at all"),
            ("get-*", "get-sum"),
            ("get-*", "get-"),
            ("*-sum", "get-sum"),
            ("g?t-*", "get-sum"),
            ("*_*_*", "a_b_c"),
            ("demo://resource/static/*", "demo://resource/static/document/a.md"),
            ("a*b*c", "aXbYbZc"),
            ("**", "x"),
            ("é?", "éa"),
        ];
        for (p, t) in yes {
            assert!(matches(p, t), "{p:?} should match {t:?}");
        }
        let no = [
            ("echo", "echo2"),
            ("echo", "ech"),
            ("get", "get-sum"),
            ("?", ""),
            ("?", "ab"),
            ("get-*", "forget-it"),
            ("*-sum", "get-sum2"),
            ("a*b*c", "aXbYbZ"),
            ("", "x"),
        ];
        for (p, t) in no {
            assert!(!matches(p, t), "{p:?} should not match {t:?}");
        }
    }

    #[test]
    fn many_stars_against_a_long_near_miss_end_quickly() {
        // Exponential in a naive recursive matcher; a bounded walk here.
        let text = "a".repeat(2000);
        assert!(!matches(&format!("{}b", "a*".repeat(50)), &text));
        assert!(matches(&"a*".repeat(50), &text));
    }

    #[test]
    fn deny_wins_and_no_allow_allows_everything() {
        let s = |v: &[&str]| v.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
        assert!(admits(None, &[], "delete_all"));
        assert!(!admits(None, &s(&["delete_*"]), "delete_all"));
        assert!(admits(Some(&s(&["read_*"])), &[], "read_file"));
        assert!(!admits(Some(&s(&["read_*"])), &[], "write_file"));
        assert!(!admits(Some(&s(&["*"])), &s(&["read_secret"]), "read_secret"), "deny wins over allow");
        assert!(admits(Some(&s(&["*"])), &s(&["read_secret"]), "read_file"));
    }

    #[test]
    fn empty_padded_or_bracketed_patterns_are_refused() {
        for bad in ["", " echo", "echo ", "tool[0-9]", "file:///{path}", "a\tb"] {
            assert!(problem(bad).is_some(), "{bad:?}");
        }
        for good in ["echo", "*", "get-?um", "demo://resource/*", "server__tool"] {
            assert_eq!(problem(good), None, "{good:?}");
        }
    }

    /// A `[[servers]]` table with `extra` before its replica.
    fn file(extra: &str) -> String {
        format!("[[servers]]\nname = \"a\"\n{extra}\n[[servers.replicas]]\ntcp = \"127.0.0.1:9001\"\n")
    }

    #[test]
    fn the_filters_of_a_server_load_and_decide_by_its_own_names() {
        let text = file(
            "tools = { allow = [\"read_*\", \"search\"], deny = [\"read_secret*\"] }\n\
             prompts.deny = [\"debug-?\"]\nresources.allow = [\"file:///srv/docs/*\"]",
        );
        let loaded = GatewayFile::load_str(&text, "g.toml").unwrap_or_else(|e| panic!("{e}"));
        let server = &loaded.servers[0];
        assert!(server.admits_tool("read_file") && server.admits_tool("search"));
        assert!(!server.admits_tool("read_secret_key") && !server.admits_tool("write_file"));
        assert!(server.admits_prompt("summary") && !server.admits_prompt("debug-1"));
        assert!(server.admits_resource("file:///srv/docs/a/b.md"));
        assert!(server.admits_resource("file:///srv/docs/{path}"), "a template, by its uriTemplate");
        assert!(!server.admits_resource("file:///etc/passwd"));
        let open = GatewayFile::load_str(&file(""), "g.toml").unwrap_or_else(|e| panic!("{e}"));
        assert!(open.servers[0].admits_tool("anything") && open.servers[0].admits_resource("x://y"));
    }

    #[test]
    fn a_bad_pattern_or_an_empty_allow_list_is_refused_at_its_line() {
        let text = file("tools.deny = [\"ok\", \"\"]\nresources.allow = []\nprompts.allow = [\"a[0]\"]");
        let err = GatewayFile::load_str(&text, "g.toml").expect_err("bad patterns");
        let at = |key: &str| {
            let problem = err.problems().iter().find(|p| p.key.as_deref() == Some(key));
            let problem = problem.unwrap_or_else(|| panic!("{key}: {err}"));
            (problem.message.clone(), problem.line_column().map(|(line, _)| line))
        };
        let (says, line) = at("servers[0].tools.deny[1]");
        assert!(says.contains("empty pattern"), "{says}");
        assert_eq!(line, Some(3), "{err}");
        let (says, line) = at("servers[0].resources.allow");
        assert!(says.contains("hide every name"), "{says}");
        assert_eq!(line, Some(4), "{err}");
        let (says, line) = at("servers[0].prompts.allow[0]");
        assert!(says.contains("only `*` and `?`"), "{says}");
        assert_eq!(line, Some(5), "{err}");
        assert!(err.to_string().contains("g.toml:3:"), "file:line:column: {err}");
    }
}
