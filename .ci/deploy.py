#!/usr/bin/env python3
"""Checks the deployment examples in docs/deploy/ against the binary they drive.

Each file (but the alerting rules, alerts*.yml, which promtool checks) must parse as YAML, run `mcpstorm compare` sharded (`--shard K/N`, or JOB_COMPLETION_INDEX with a shard
count) and `mcpstorm merge`, and use only flags that `mcpstorm compare --help` / `mcpstorm merge --help` list: the
same commands sim/tests/sim/compare.rs runs as separate processes. Usage: deploy.py PATH/TO/mcpstorm. Exit 1 on a
problem.
"""

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def strings(node):
    """Every string in a YAML document, with a command given as a list joined into one line."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        if node and all(isinstance(x, (str, int, float)) for x in node):
            yield " ".join(str(x) for x in node)
        for x in node:
            yield from strings(x)
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from strings(k)
            yield from strings(v)


def commented_commands(text):
    """`mcpstorm ...` lines inside comments (the manifests show the merge step there)."""
    return [m.group(1) for m in re.finditer(r"#\s*(mcpstorm .*)", text)]


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    helps = {}
    for sub in ("compare", "merge"):
        out = subprocess.run([binary, sub, "--help"], capture_output=True, text=True, check=True).stdout
        helps[sub] = set(FLAG.findall(out))
    # The alerting rules (alerts*.yml) are Prometheus's, checked by promtool in .ci/run.
    files = sorted(f for f in (ROOT / "docs/deploy").glob("*.y*ml") if not f.name.startswith("alerts"))
    if not files:
        print("docs/deploy: no manifests")
        return 1
    failed = False
    for file in files:
        text = file.read_text(encoding="utf-8")
        rel = file.relative_to(ROOT)
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as e:
            print(f"{rel}: not valid YAML: {e}")
            failed = True
            continue
        lines = [s for d in docs for s in strings(d)] + commented_commands(text)
        commands = {sub: [l for l in lines if re.search(rf"\bmcpstorm\b.*\b{sub}\b", l)] for sub in helps}
        sharded = any("--shard" in l for l in commands["compare"]) or (
            "JOB_COMPLETION_INDEX" in text and "MCPSTORM_SHARD_COUNT" in text
        )
        if not commands["compare"] or not sharded:
            print(f"{rel}: runs no sharded `mcpstorm compare`")
            failed = True
        if not commands["merge"]:
            print(f"{rel}: runs no `mcpstorm merge`")
            failed = True
        for sub, found in commands.items():
            for line in found:
                for flag in FLAG.findall(line.split(sub, 1)[1]):
                    if flag not in helps[sub]:
                        print(f"{rel}: `mcpstorm {sub}` has no flag {flag} (in: {line.strip()})")
                        failed = True
        if not failed:
            print(f"{rel}: parses; compare sharded and merge, with flags the binary knows")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
