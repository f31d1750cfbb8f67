//! `[nodes] count` and `front`: gateway nodes as hosts of their own, the faults that may name them, and `from` on
//! a partition naming the caller whose link it cuts.

use super::*;

/// BASE with two load hosts and `nodes` gateway nodes behind the HTTP front.
fn with_nodes(nodes: usize) -> String {
    let hosts = edit(BASE, "sessions = 10", "sessions = 10\nhosts = 2");
    edit(&hosts, "[load]", &format!("[nodes]\ncount = {nodes}\nfront = \"http\"\n\n[load]"))
}

fn fault(target: &str, kind: &str, from: Option<&str>) -> String {
    let from = from.map(|f| format!("\nfrom = \"{f}\"")).unwrap_or_default();
    edit(
        &with_nodes(2),
        FAULT,
        &format!("kind = \"{kind}\"\ntarget = \"{target}\"\nstart = \"1s\"\nduration = \"2s\"{from}"),
    )
}

#[test]
fn nodes_with_a_front_load_and_default_to_none() {
    let s = load(&with_nodes(3), &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((s.nodes.count, s.nodes.front), (3, FrontKind::Http));
    let plain = load(BASE, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plain.nodes.count, 0, "in-process gateways stay the default");
    for ok in [
        fault("a#1", "partition", Some("gateway-1")),
        fault("gateway-0", "crash", None),
        fault("gateway-1", "partition", Some("load-1")),
    ] {
        load(&ok, &[]).unwrap_or_else(|e| panic!("{ok}\n{e}"));
    }
}

#[test]
fn nodes_take_a_known_front_and_a_bounded_count() {
    let text = edit(&with_nodes(2), "front = \"http\"", "front = \"grpc\"");
    expect_one(&text, &[], "nodes.front", "front = |\"grpc\"", "`http`");
    let text = edit(&with_nodes(2), "replicas = 2", "replicas = 2\njoin_at = \"2s\"");
    expect_one(&text, &[], "servers[0].join_at", "join_at = |", "membership changes need `[nodes] count = 0`");
    let text = with_nodes(65);
    expect_one(&text, &[], "nodes.count", "count = |65", "must be at most 64");
}

#[test]
fn the_old_gateway_nodes_keys_name_the_new_table() {
    let text = edit(BASE, "[load]", "[gateway]\nnodes = 2\nfront = \"http\"\n\n[load]");
    let Err(e) = load(&text, &[]) else { panic!("`[gateway] nodes` loaded") };
    let problems: Vec<_> =
        e.problems().iter().map(|p| (p.key.clone().unwrap_or_default(), p.message.clone())).collect();
    assert_eq!(problems.len(), 2, "{e}");
    assert_eq!(problems[0].0, "gateway.nodes", "{e}");
    assert!(problems[0].1.contains("`[nodes] count = N`"), "{e}");
    assert_eq!(problems[1].0, "gateway.front", "{e}");
    assert!(problems[1].1.contains("`[nodes] front = \"http\"`"), "{e}");
}

#[test]
fn faults_name_nodes_and_from_names_the_targets_caller() {
    let cases = [
        (
            fault("a", "partition", Some("load-0")),
            "faults[0].from",
            "from = |",
            "not a gateway node (gateway-0 to gateway-1)",
        ),
        (fault("a", "partition", Some("gateway-2")), "faults[0].from", "from = |", "not a gateway node"),
        (
            fault("gateway-0", "partition", Some("gateway-1")),
            "faults[0].from",
            "from = |",
            "not a load host (load-0 to load-1)",
        ),
        (fault("gateway-0", "hang", None), "faults[0].kind", "kind = |", "crash or partition"),
        (fault("gateway-2", "crash", None), "faults[0].target", "target = |", "no server"),
    ];
    for (text, key, at, fragment) in cases {
        expect_one(&text, &[], key, at, fragment);
    }
    // Without nodes, `from` names a load host as before.
    let text = edit(
        BASE,
        FAULT,
        "kind = \"partition\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nfrom = \"gateway-0\"",
    );
    expect_one(&text, &[], "faults[0].from", "from = |", "not a load host");
}

#[test]
fn a_gateway_file_refuses_nodes() {
    let text = "[[servers]]\nname = \"a\"\n[[servers.replicas]]\nhttp = \"http://127.0.0.1:9001/mcp\"\n\n[gateway]\nnodes = 2\nfront = \"http\"\n";
    let Err(e) = tables::GatewayFile::load_str(text, "g.toml") else { panic!("nodes in a gateway file loaded") };
    let keys: Vec<_> = e.problems().iter().filter_map(|p| p.key.clone()).collect();
    assert_eq!(keys, ["gateway.nodes", "gateway.front"], "{e}");
    assert!(e.to_string().contains("a gateway process is one node"), "{e}");
}
