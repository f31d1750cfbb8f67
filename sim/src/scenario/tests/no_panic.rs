//! No input panics: arbitrary text, mutated shipped scenarios and arbitrary `--set` arguments.

use proptest::prelude::*;

use super::*;

/// A shipped scenario's text: 0 smoke, 1 retry_storm, 2 concurrency_knee (with a sweep).
fn shipped_text(i: usize) -> String {
    let name = ["smoke", "retry_storm", "concurrency_knee"][i % 3];
    std::fs::read_to_string(workspace().join(format!("scenarios/{name}.toml"))).expect("a shipped scenario")
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, text: String },
    Replace { at: usize, len: usize, text: String },
    DuplicateLine { line: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let token = prop_oneof![
        Just("=".to_owned()),
        Just("\"".to_owned()),
        Just("[".to_owned()),
        Just("]]".to_owned()),
        Just("\n".to_owned()),
        Just("{".to_owned()),
        Just("0".to_owned()),
        Just("-1".to_owned()),
        Just("nan".to_owned()),
        Just("1e400".to_owned()),
        Just("\"0s\"".to_owned()),
        Just("\"999999999999h\"".to_owned()),
        Just("#".to_owned()),
        Just(".".to_owned()),
        Just("é".to_owned()),
        "[a-z_]{1,8}",
        any::<String>(),
    ];
    prop_oneof![
        (any::<usize>(), 1..20usize).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), token.clone()).prop_map(|(at, text)| Mutation::Insert { at, text }),
        (any::<usize>(), 1..12usize, token).prop_map(|(at, len, text)| Mutation::Replace { at, len, text }),
        any::<usize>().prop_map(|line| Mutation::DuplicateLine { line }),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let n = chars.len().max(1);
    match m {
        Mutation::Delete { at, len } => {
            let at = at % n;
            chars.drain(at..(at + len).min(chars.len()));
        }
        Mutation::Insert { at, text } => {
            let at = at % (chars.len() + 1);
            chars.splice(at..at, text.chars());
        }
        Mutation::Replace { at, len, text } => {
            let at = at % n;
            let end = (at + len).min(chars.len());
            chars.splice(at.min(end)..end, text.chars());
        }
        Mutation::DuplicateLine { line } => {
            let lines: Vec<&str> = text.lines().collect();
            let i = line % lines.len().max(1);
            let mut out: Vec<&str> = lines.clone();
            if let Some(l) = lines.get(i) {
                out.insert(i, l);
            }
            return out.join("\n");
        }
    }
    chars.into_iter().collect()
}

/// Loading either works or gives problems that all print; it never panics.
fn never_panics(text: &str, sets: &[String]) {
    match load_str(text, "fuzz.toml", sets) {
        Ok(s) => {
            let _ = expand_sweep(&s);
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            assert!(e.count() >= 1);
        }
    }
}

// 256 cases each by default; PROPTEST_CASES=N for a longer hunt.
proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        never_panics(&text, &[]);
    }

    #[test]
    fn tomlish_text_never_panics(text in "[a-z_\\[\\]{}=\"., 0-9\n#-]{0,200}") {
        never_panics(&text, &[]);
    }

    #[test]
    fn mutated_scenarios_never_panic(file in 0..3usize, mutations in prop::collection::vec(mutation(), 1..6)) {
        let mut text = shipped_text(file);
        for m in &mutations {
            text = apply(&text, m);
        }
        never_panics(&text, &[]);
    }

    #[test]
    fn arbitrary_set_arguments_never_panic(
        sets in prop::collection::vec(
            prop_oneof![
                any::<String>(),
                "[a-z_.\\[\\]0-9]{0,30}=[a-z0-9\"\\[\\]{}=., ]{0,20}",
                "(seed|name|load\\.sessions|faults\\[0\\]\\.start|servers\\[[0-3]\\]\\.tools\\[0\\]\\.latency|sweep\\.param)=.{0,12}",
            ],
            0..4,
        )
    ) {
        never_panics(&shipped_text(1), &sets);
        never_panics(&shipped_text(2), &sets);
    }
}
