//! A run's estimated cost and the limits that refuse it.

use super::*;

#[test]
fn run_cost_is_estimated_from_the_keys_that_drive_it() {
    let base = load(BASE, &[]).expect("valid");
    let cost = cost::estimate(&base);
    // Closed loop: 10 sessions for 10 s, each call a 2 ms round trip plus the 5 ms median of `echo`.
    assert!((cost.calls - 10.0 * 10.0 / 0.007).abs() < 1.0, "{cost}");
    assert_eq!(cost.hosts, 3.0, "a host per server (their 3 replicas share them), and a load host");
    // 10 s of load plus the drain: 2 × 30 s deadline + 10 s connect timeout + 10 s.
    assert_eq!(cost.ticks, 90_000.0);
    assert_eq!(cost.work, 90_000.0 * 27.0);
    let own = load(BASE, &["network.hosts=\"per_replica\""]).expect("valid");
    assert_eq!(cost::estimate(&own).hosts, 4.0, "3 replicas on hosts of their own, and a load host");
    assert!(cost.over(&Limits::DEFAULT).is_none());
    let open =
        load(&edit(BASE, "mode = \"closed\"\nsessions = 10", "mode = \"open\"\nrate = 200.0"), &[]).expect("open");
    assert_eq!(cost::estimate(&open).calls, 2_000.0, "200 calls/s for 10 s");
    let capped = load(BASE, &["load.calls=50"]).expect("valid");
    assert_eq!(cost::estimate(&capped).calls, 50.0, "load.calls caps the estimate");
}

#[test]
fn runs_beyond_the_cost_limits_are_refused_naming_their_keys_unless_allowed() {
    // (sets, the key the problem is reported at, a fragment naming the figure over its limit)
    let cases: [(&[&str], &str, &str); 6] = [
        (&["load.sessions=1000000"], "load.sessions", "calls 1.4e9 > 50,000,000 (load.sessions, duration"),
        (&["load.sessions=1000000"], "load.sessions", "memory 15.3 GiB > 2.0 GiB (load.sessions)"),
        (&["duration=\"6d\""], "load.sessions", "ticks 518,480,000 > 100,000,000 (duration, tick)"),
        (&["load.hosts=300"], "load.hosts", "hosts 302 > 200 (load.hosts)"),
        (
            &["servers[0].replicas=500", "network.hosts=\"per_replica\""],
            "servers[0].replicas",
            "hosts 502 > 200 (servers[0].replicas, load.hosts, network.hosts)",
        ),
        (&["client.deadline=\"7d\""], "duration", "(duration, tick, client.deadline, client.connect_timeout)"),
    ];
    for (set, key, fragment) in cases {
        let found = problems(BASE, set);
        assert_eq!(found.len(), 1, "{set:?}: {}", ScenarioError::Invalid(found.clone()));
        let p = &found[0];
        assert_eq!(p.key.as_deref(), Some(key), "{p}");
        assert!(p.message.contains(fragment), "{set:?}: {p}\ndoes not contain {fragment:?}");
        assert!(p.message.contains("pass --allow-large"), "{p}");
        assert!(matches!(p.location, Location::File { .. } | Location::Set { .. }), "{p}");
        let sets: Vec<String> = set.iter().map(|s| s.to_string()).collect();
        load_str_with(BASE, "t.toml", &sets, &Limits::NONE)
            .unwrap_or_else(|e| panic!("{set:?} with --allow-large: {e}"));
    }
    // Ranges stay with --allow-large.
    let sets = ["duration=\"100000h\"".to_owned()];
    assert!(load_str_with(BASE, "t.toml", &sets, &Limits::NONE).is_err());
}

#[test]
fn each_sweep_row_is_held_to_the_cost_limits() {
    let text = format!("{BASE}\n[sweep]\nparam = \"load.sessions\"\nvalues = [1, 1000000]\n");
    let found = problems(&text, &[]);
    assert_eq!(found.len(), 1, "{}", ScenarioError::Invalid(found.clone()));
    assert_eq!(found[0].key.as_deref(), Some("load.sessions"));
    assert_eq!(found[0].line_column(), Some(pos(&text, "values = [1, |1000000]")));
    assert!(found[0].message.ends_with("(with sweep value load.sessions = 1000000)"), "{}", found[0]);
    // The base alone is not run when it sweeps, so only rows count.
    let text = format!(
        "{}\n[sweep]\nparam = \"load.sessions\"\nvalues = [1, 2]\n",
        edit(BASE, "sessions = 10", "sessions = 5000000")
    );
    assert!(load(&text, &[]).is_ok());
}

#[test]
fn shipped_scenarios_cost_a_fraction_of_the_limits() {
    // Margin: every shipped run (and sweep row) stays below an eighth of each limit.
    let margin = 8.0;
    let l = Limits::DEFAULT;
    for file in shipped() {
        let s = load_file(&file, &[]).unwrap_or_else(|e| panic!("{}:\n{e}", file.display()));
        let rows = match &s.sweep {
            None => vec![("".to_owned(), s.clone())],
            Some(_) => expand_sweep(&s).expect("expands"),
        };
        for (label, row) in rows {
            let c = cost::estimate(&row);
            let within = c.calls * margin <= l.calls
                && c.hosts * margin <= l.hosts
                && c.ticks * margin <= l.ticks
                && c.work * margin <= l.work
                && c.memory * margin <= l.memory;
            assert!(within, "{} {label}: {c} is within {margin}x of the limits ({l})", file.display());
        }
    }
}
