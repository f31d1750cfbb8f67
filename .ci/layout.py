#!/usr/bin/env python3
"""Checks the source layout that review alone cannot keep true as the code grows.

1. No import cycle between the top-level modules of a crate (core/src/client, core/src/conn, ... or
   sim/src/world, sim/src/report, ...). An edge A -> B is any `crate::B` path written in a file under A
   (in `use` lines and in expressions alike). A cycle means two concepts cannot be read, tested or moved
   apart; the report names the edges that close each cycle.
2. No import cycle between the files of any one folder (core/src/router/score.rs and stats.rs, or the files and
   subfolders of sim/src/scenario/). A file reaches a sibling through `super::x`, `self::x` or its full
   `crate::...::x` path; the folder's own mod.rs is not a node (it declares and re-exports its children, and they
   may name what it defines). The tests folders are nodes like any other: they import, nothing imports them.
3. No Rust source file over MAX_LINES lines: a file that long holds more than one concept.

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


# A module path written from a file: `crate::a::b`, `super::super::c`, `self::d`, with an optional `::{x, y::z}` group.
MODULE_PATH = re.compile(r"\b((?:crate|super|self)(?:::[a-z_][a-z0-9_]*)+)(?:::\{([^}]*)\})?")


def module_of(src: Path, file: Path) -> list[str]:
    """The module path of a file: core/src/router/score.rs -> [router, score]; a mod.rs is its folder's module."""
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


def resolve(here: list[str], path: str) -> list[str]:
    comps = path.split("::")
    if comps[0] == "crate":
        return comps[1:]
    base = list(here)
    while comps and comps[0] in ("super", "self"):
        if comps[0] == "super":
            base = base[:-1]
        comps = comps[1:]
    return base + comps


def folder_edges(src: Path) -> dict[tuple[str, ...], dict[str, dict[str, str]]]:
    """folder -> {child: {sibling child it imports: first file that does}}, for every folder of a crate."""
    out: dict[tuple[str, ...], dict[str, dict[str, str]]] = {}
    for file in sorted(src.rglob("*.rs")):
        here = module_of(src, file)
        text = file.read_text(encoding="utf-8")
        stripped = "\n".join(LINE_COMMENT.sub("", line) for line in text.splitlines())
        for m in MODULE_PATH.finditer(stripped):
            target = resolve(here, m.group(1))
            targets = [target]
            for item in (m.group(2) or "").split(","):
                name = item.strip().split("::")[0].strip()
                if name and name != "self":
                    targets.append(target + [name])
            line = stripped.count("\n", 0, m.start()) + 1
            for t in targets:
                # Every folder both paths lie in, below which they part: `here` is in child a, `t` names child b.
                for k in range(len(here)):
                    if len(t) <= k or t[:k] != here[:k] or here[k] == t[k]:
                        continue
                    kids = out.setdefault(tuple(here[:k]), {})
                    kids.setdefault(here[k], {}).setdefault(t[k], f"{file.relative_to(ROOT)}:{line}")
    for folder, graph in out.items():
        d = src.joinpath(*folder)
        children = {p.stem for p in d.glob("*.rs")} | {p.name for p in d.iterdir() if p.is_dir()}
        children -= {"mod", "lib", "main"}
        out[folder] = {
            a: {b: w for b, w in bs.items() if b in children} for a, bs in graph.items() if a in children
        }
        for a in list(out[folder]):
            for b in out[folder][a]:
                out[folder].setdefault(b, {})
    return out


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
        for folder, fgraph in sorted(folder_edges(src).items()):
            if not folder:
                continue  # the crate root's children are the top-level modules, checked above
            for comp in cycles(fgraph):
                failed = True
                where = "/".join((crate,) + folder)
                print(f"{where}/: import cycle between the files {', '.join(comp)}:")
                for a in comp:
                    for b, at in sorted(fgraph[a].items()):
                        if b in comp:
                            print(f"  {a} -> {b}  ({at})")
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
    print("layout: no import cycles between modules or within a folder, no file over", MAX_LINES, "lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
