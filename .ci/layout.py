#!/usr/bin/env python3
"""Checks the source layout that review alone cannot keep true as the code grows.

1. No import cycle between the top-level modules of a crate (core/src/client, core/src/conn, ... or
   sim/src/world, sim/src/report, ...). An edge A -> B is any `crate::B` path written in a file under A
   (in `use` lines and in expressions alike). A cycle means two concepts cannot be read, tested or moved
   apart; the report names the edges that close each cycle.
2. No Rust source file over MAX_LINES lines: a file that long holds more than one concept.

Prints the module graph (`--graph`) in words for the closing notes. Exit 1 on a violation.
Run by .ci/run and `just lint`.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Crate source roots whose top-level modules must form a DAG.
CRATES = ["core/src", "sim/src", "sim/fake/src"]
# Every tracked Rust file is held to the length limit.
SOURCE_DIRS = ["core", "sim", "tests"]
MAX_LINES = 700

CRATE_PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")
# `use crate::{a, b::c}` names several modules in one group.
CRATE_GROUP = re.compile(r"\bcrate::\{([^}]*)\}", re.S)
LINE_COMMENT = re.compile(r"//.*")


def top_module(src: Path, file: Path) -> str | None:
    rel = file.relative_to(src)
    if len(rel.parts) == 1:
        stem = rel.stem
        return None if stem in ("lib", "main") else stem
    return rel.parts[0]


def edges_of(src: Path) -> dict[str, dict[str, str]]:
    """module -> {imported module: first file:line that imports it}."""
    modules = {top_module(src, f) for f in src.rglob("*.rs")} - {None}
    graph: dict[str, dict[str, str]] = {m: {} for m in sorted(modules)}
    for file in sorted(src.rglob("*.rs")):
        here = top_module(src, file)
        if here is None:
            continue
        text = file.read_text(encoding="utf-8")
        stripped = "\n".join(LINE_COMMENT.sub("", line) for line in text.splitlines())
        found: list[tuple[str, int]] = []
        for m in CRATE_PATH.finditer(stripped):
            found.append((m.group(1), m.start()))
        for m in CRATE_GROUP.finditer(stripped):
            for item in m.group(1).split(","):
                name = item.strip().split("::")[0].strip()
                if name:
                    found.append((name, m.start()))
        for name, pos in found:
            if name == here or name not in modules:
                continue
            line = stripped.count("\n", 0, pos) + 1
            graph[here].setdefault(name, f"{file.relative_to(ROOT)}:{line}")
    return graph


def cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def layers(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """Modules grouped by depth: layer 0 imports nothing, layer k only imports layers < k."""
    depth: dict[str, int] = {}

    def d(v: str, seen: frozenset) -> int:
        if v in depth:
            return depth[v]
        if v in seen:
            return 0
        deps = [d(w, seen | {v}) for w in graph[v]]
        depth[v] = 1 + max(deps) if deps else 0
        return depth[v]

    for v in graph:
        d(v, frozenset())
    by: dict[int, list[str]] = {}
    for v, k in depth.items():
        by.setdefault(k, []).append(v)
    return [sorted(by[k]) for k in sorted(by)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", action="store_true", help="print each crate's module graph by layer")
    args = ap.parse_args()
    failed = False
    for crate in CRATES:
        src = ROOT / crate
        if not src.is_dir():
            continue
        graph = edges_of(src)
        if args.graph:
            print(f"{crate}:")
            for k, layer in enumerate(layers(graph)):
                parts = [f"{m} -> {', '.join(sorted(graph[m])) or '(nothing)'}" for m in layer]
                print(f"  layer {k}: " + "; ".join(parts))
        for comp in cycles(graph):
            failed = True
            print(f"{crate}: import cycle between {', '.join(comp)}:")
            for a in comp:
                for b, where in sorted(graph[a].items()):
                    if b in comp:
                        print(f"  {a} -> {b}  ({where})")
    for base in SOURCE_DIRS:
        for file in sorted((ROOT / base).rglob("*.rs")):
            if "target" in file.relative_to(ROOT).parts:
                continue
            n = sum(1 for _ in file.open(encoding="utf-8"))
            if n > MAX_LINES:
                failed = True
                print(f"{file.relative_to(ROOT)}: {n} lines (at most {MAX_LINES}: split it by concept)")
    if failed:
        return 1
    print("layout: no import cycles, no file over", MAX_LINES, "lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
