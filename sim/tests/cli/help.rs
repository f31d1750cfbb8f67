//! What `--help` promises: the exit codes, at the top and for every command; flags described as the command they are
//! on behaves; and `serve-fake` warns when it listens beyond loopback.

use crate::common::mcpstorm;
use crate::servers::Fake;

fn help(args: &[&str]) -> String {
    let o = mcpstorm(&[args, &["--help"][..]].concat());
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", crate::common::text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn every_help_states_the_exit_codes() {
    let top = help(&[]);
    assert!(top.contains("Exit codes: 0 success; 1 a failed check, invariant or call"), "{top}");
    assert!(top.contains("2 bad input"), "{top}");
    let commands = ["tools", "call", "diagnose", "sim", "live", "compare", "merge", "swarm", "serve-fake", "validate"];
    for command in commands {
        let text = help(&[command]);
        assert!(text.contains("Exit codes: "), "{command} --help states no exit codes:\n{text}");
        assert!(text.contains("2 for bad") || text.contains("2 when it is not"), "{command}:\n{text}");
    }
}

/// `--shard` is shared by compare and swarm, whose shards write different things: each help says its own.
#[test]
fn shard_help_describes_the_command_it_is_on() {
    let shard = |command: &str| {
        let text = help(&[command]);
        let at = text.find("--shard <K/N>").expect("--shard");
        text[at..].split("--shard-count").next().unwrap_or_default().to_owned()
    };
    let (compare, swarm) = (shard("compare"), shard("swarm"));
    assert!(compare.contains("shard-K-of-N.json") && compare.contains("mcpstorm merge"), "{compare}");
    assert!(!compare.contains("copying") && !compare.contains("swarm"), "{compare}");
    assert!(swarm.contains("combine by copying") && !swarm.contains("merge"), "{swarm}");
}

/// `serve-fake` serves HTTP too and binds whatever `--listen` says: its help does not promise loopback TCP.
/// `--seed` of tools/call/diagnose seeds only the reconnect backoff: it is refused without `--retries`.
#[test]
fn serve_fake_and_seed_help_say_what_they_do() {
    let top = help(&[]);
    let line = top.lines().find(|l| l.trim_start().starts_with("serve-fake")).expect("serve-fake");
    assert!(!line.contains("loopback TCP") && line.contains("Streamable HTTP"), "{line}");
    let text = help(&["serve-fake"]);
    assert!(text.contains("not loopback") || text.contains("other address"), "{text}");
    assert!(help(&["tools"]).contains("With --retries: seeds the jitter of the reconnect backoff"));
    let o = mcpstorm(&["tools", "--stdio", "true", "--seed", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", crate::common::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--retries"), "{}", crate::common::text(&o));
}

/// `serve-fake --listen` on every interface warns on stderr before it prints its address; on loopback it does not.
#[test]
fn serve_fake_warns_when_not_on_loopback() {
    for (listen, warns) in [("0.0.0.0:0", true), ("127.0.0.1:0", false)] {
        let mut fake = Fake::listening(listen);
        let stderr = fake.stop();
        let warned = stderr.contains("mcpstorm: warning: serve-fake listens on 0.0.0.0:")
            && stderr.contains("which is not loopback");
        assert_eq!(warned, warns, "{listen} (listening on {}): {stderr:?}", fake.addr);
    }
}
