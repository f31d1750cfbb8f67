//! The rules of `[identity_provider]`, `require_token` and the identity provider's faults.

use super::*;

/// `[identity_provider]`, `require_token` and the provider's faults: each misuse is one problem at its key.
#[test]
fn identity_provider_rules() {
    let with_idp = |text: &str| format!("{text}\n[identity_provider]\nlatency = \"10ms\"\n");
    let on_idp = |body: &str| with_idp(&edit(BASE, FAULT, &format!("{body}\nstart = \"1s\"")));
    // A server that requires tokens needs a provider, and HTTP.
    let needs = edit(BASE, "replicas = 2", "replicas = 2\nrequire_token = true\ntransport = \"http\"");
    expect_one(&needs, &[], "servers[0].require_token", "require_token = |true", "needs an `[identity_provider]`");
    let ndjson = with_idp(&edit(BASE, "replicas = 2", "replicas = 2\nrequire_token = true"));
    expect_one(&ndjson, &[], "servers[0].require_token", "require_token = |true", "travel over HTTP");
    // The provider's faults take the provider as their target, and only they do.
    let no_idp = edit(BASE, FAULT, "kind = \"token_expiry\"\ntarget = \"a\"\nstart = \"1s\"");
    expect_one(&no_idp, &[], "faults[0].target", "target = |\"a\"", "token_expiry needs an `[identity_provider]`");
    let on_server = with_idp(&no_idp);
    expect_one(&on_server, &[], "faults[0].target", "target = |\"a\"", "target = \"idp\"");
    let crash = on_idp("kind = \"crash\"\ntarget = \"idp\"\nduration = \"1s\"");
    expect_one(&crash, &[], "faults[0].kind", "kind = |\"crash\"", "does not apply to the identity provider");
    let rate = on_idp("kind = \"idp_outage\"\ntarget = \"idp\"\nduration = \"1s\"\nrate = 0.5");
    expect_one(&rate, &[], "faults[0].rate", "rate = |0.5", "give `status` too");
    let instant = on_idp("kind = \"key_rotation\"\ntarget = \"idp\"\nduration = \"1s\"");
    expect_one(&instant, &[], "faults[0].duration", "duration = |\"1s\"", "happens at an instant");
    for ok in
        ["kind = \"idp_outage\"\ntarget = \"idp\"\nduration = \"1s\"", "kind = \"token_expiry\"\ntarget = \"idp\""]
    {
        assert!(load_str(&on_idp(ok), "t.toml", &[]).is_ok(), "{ok}");
    }
    // A server may not take the provider's host name; a token check needs a provider.
    let named = with_idp(&edit(BASE, "name = \"b\"", "name = \"idp\""));
    expect_one(&named, &[], "servers[1].name", "name = |\"idp\"", "identity provider's host");
    let counted = format!("{BASE}\n[checks]\ntoken_requests = 3\n");
    expect_one(&counted, &[], "checks.token_requests", "token_requests = |3", "needs an `[identity_provider]`");
}
