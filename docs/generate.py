#!/usr/bin/env python3
"""Regenerate the docs' simulator figures: `just docs` (`python3 docs/generate.py`).

The simulator is deterministic: the same scenario and seed give byte-identical summary.json, CSV and PNG files. So
every figure the README and the guide pages (docs/*.md) quote from a simulator run is produced here, by running the
`mcpstorm` binary and reading what it wrote, and CI fails when the committed pages or images differ from a fresh run.

README.md and docs/*.md mark each generated block:

    <!-- generated: NAME (just docs) -->
    ...replaced on every run...
    <!-- /generated: NAME -->

A block may live in any of those files, but each NAME in BLOCKS must appear exactly once across them (a block that
vanished would silently stop the rules some blocks enforce, e.g. `dominance`): moving a section to another page moves
its block with it. Everything outside the markers is left byte for byte alone. Each NAME has one function below (see
BLOCKS), which runs the simulator with `--out` into a scratch directory under target/docs/, reads the run's
summary.json (and compare.json, sweep.csv, calls.csv where needed), returns markdown and may copy pictures into
docs/images/ (linked relative to the page: `docs/images/x.png` from the README, `images/x.png` from docs/). Generated
text never holds wall-clock times: those depend on the machine and stay hand-quoted in the pages with their date.

Usage:
    python3 docs/generate.py                 rewrite README.md, docs/*.md and docs/images/
    python3 docs/generate.py --check         exit 1 (and say what) if anything would change; write nothing
    python3 docs/generate.py --only a,b      only these blocks (the others are left as they are)
    python3 docs/generate.py --list          the block names

The binary is $MCPSTORM; without it, `cargo build --release --locked -p mcpstorm-sim --bin mcpstorm` runs once and
target/release/mcpstorm is used. Exit codes: 0 done (or up to date), 1 --check found a difference, 2 bad markers, a
block missing or given twice, an unknown block name, or a run or generator that failed. Python 3.11 standard library
only.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
IMAGES = ROOT / "docs" / "images"
# Relative to ROOT (the binary runs there), so the paths it prints are short and machine-independent.
SCRATCH = Path("target") / "docs"

START = re.compile(r"^<!-- generated: (?P<name>[^ ]+) \(just docs\) -->$")
END = re.compile(r"^<!-- /generated: (?P<name>[^ ]+) -->$")
# Anything that looks like a marker but matches neither form above is a typo, not text to leave alone.
LOOSE = re.compile(r"^\s*<!--\s*/?\s*generated\b")


class DocsError(Exception):
    """A problem the user must fix: bad markers, an unknown block, a failed run. Exit 2."""


def log(msg: str) -> None:
    print(f"docs: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------------------------
# Number formatting: the same rules as sim/src/report/num.rs, so generated text reads like the console and compare.md.


def round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def fixed(x: float, decimals: int) -> str:
    if x is None or not math.isfinite(x):
        x = 0.0
    s = f"{x:.{decimals}f}"
    if s.startswith("-") and set(s[1:]) <= {"0", "."}:
        s = s[1:]
    return s


def grouped(n: int) -> str:
    return f"{n:,}"


def ms(x: float) -> str:
    """A latency for people: `0.84 ms`, `12.3 ms`, `234 ms`, `1,234 ms`."""
    if abs(x) >= 1000:
        return f"{grouped(round_half_up(x))} ms"
    if abs(x) >= 100:
        return f"{fixed(x, 0)} ms"
    if abs(x) >= 10:
        return f"{fixed(x, 1)} ms"
    return f"{fixed(x, 2)} ms"


def pct(rate: float) -> str:
    return f"{fixed(rate * 100, 2)}%"


def short(x: float, decimals: int) -> str:
    s = fixed(x, decimals)
    return s.rstrip("0").rstrip(".") if "." in s else s


def times(x: float | None) -> str:
    """A ratio: `0.54x`, `11.05x`; `n/a` for a figure with nothing to judge (`null` in summary.json)."""
    return "n/a" if x is None else f"{fixed(x, 2)}x"


def secs(x: float) -> str:
    return f"{short(x, 3)} s"


def recovery(totals: dict) -> str:
    """A run's recovery as the console prints it: `2 s`, `not recovered within the run` or `n/a`."""
    if totals["recovery_s"] is not None:
        return secs(totals["recovery_s"])
    return "not recovered within the run" if totals["recovered"] is False else "n/a"


def sim_s(x: float) -> str:
    """Simulated time in the shipped-scenarios table: `60.3 s`."""
    return f"{fixed(x, 1)} s"


def qps(x: float) -> str:
    """Throughput in the knee table: `5.0`, `49.5`, `247`, `2404`."""
    return str(round_half_up(x)) if x >= 100 else fixed(x, 1)


def words(items: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def para(text: str) -> str:
    """A paragraph wrapped as the README's prose is (118 columns)."""
    return textwrap.fill(" ".join(text.split()), width=118, break_long_words=False, break_on_hyphens=False)


def number_word(n: int) -> str:
    return ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"][n] if 0 <= n <= 10 else str(n)


def toml_inline(v) -> str:
    """A value for `--set`, as TOML inline syntax."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_inline(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = [k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k) for k in v]
        return "{ " + ", ".join(f"{k} = {toml_inline(x)}" for k, x in zip(keys, v.values())) + " }"
    raise DocsError(f"cannot write {v!r} as TOML")


# ---------------------------------------------------------------------------------------------------------------------
# Running the simulator.


class Run:
    """One `mcpstorm sim` output directory (or a contrast run inside one)."""

    def __init__(self, out: Path, stdout: str = "", code: int = 0):
        self.out = out
        self.stdout = stdout
        self.code = code

    def file(self, name: str) -> Path:
        path = ROOT / self.out / name
        if not path.exists():
            raise DocsError(f"{self.out / name}: missing (did the run write it?)")
        return path

    def summary(self) -> dict:
        return json.loads(self.file("summary.json").read_text(encoding="utf-8"))

    def totals(self) -> dict:
        return self.summary()["totals"]

    def contrast(self) -> "Run":
        found = sorted((ROOT / self.out).glob("contrast-*/summary.json"))
        if len(found) != 1:
            raise DocsError(f"{self.out}: expected one contrast-*/ run, found {len(found)}")
        return Run(found[0].parent.relative_to(ROOT))

    def profile(self) -> str:
        # summary.json does not carry the gateway profile; scenario.toml (the scenario as run) does.
        doc = tomllib.loads(self.file("scenario.toml").read_text(encoding="utf-8"))
        return doc.get("gateway", {}).get("profile", "default")

    def sweep(self) -> list[dict]:
        with self.file("sweep.csv").open(newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))

    def calls(self) -> list[dict]:
        with self.file("calls.csv").open(newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))


def scenario_doc(name: str) -> dict:
    return tomllib.loads((ROOT / "scenarios" / f"{name}.toml").read_text(encoding="utf-8"))


class Sim:
    """Runs the binary, each distinct command once per invocation."""

    def __init__(self, binary: str | None = None):
        # Found (or built) on the first run: a block that runs nothing (`scenario_keys`) needs no binary.
        self._binary = binary
        self.cache: dict[tuple, Run] = {}
        self.runs = 0

    def _exec(self, args: list[str], out: Path, what: str, ok_codes=(0, 1)) -> tuple[str, int]:
        if (ROOT / out).exists():
            shutil.rmtree(ROOT / out)
        (ROOT / out).parent.mkdir(parents=True, exist_ok=True)
        if self._binary is None:
            self._binary = binary()
        cmd = [self._binary, *args, "--out", str(out)]
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        took = time.monotonic() - started
        self.runs += 1
        if proc.returncode not in ok_codes:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
            raise DocsError(f"{what}: exit {proc.returncode}\n{tail}")
        # Wall time goes to stderr only: it never reaches the README.
        log(f"{what} -> {out} (exit {proc.returncode}, {took:.1f} s)")
        return proc.stdout, proc.returncode

    def sim(self, scenario: str, tag: str, seed: int | None = None, sets: tuple[str, ...] = ()) -> Run:
        """`mcpstorm sim scenarios/<scenario>.toml [--seed] [--set ...]`; exit 1 (checks failed) is a result too."""
        key = ("sim", scenario, seed, sets)
        if key not in self.cache:
            args = ["sim", f"scenarios/{scenario}.toml"]
            if seed is not None:
                args += ["--seed", str(seed)]
            for s in sets:
                args += ["--set", s]
            out = SCRATCH / tag
            what = " ".join(["sim", f"scenarios/{scenario}.toml"] + args[2:])
            stdout, code = self._exec(args, out, what)
            self.cache[key] = Run(out, stdout, code)
        return self.cache[key]

    def compare(self, scenario: str, tag: str, formulas: list[str], seeds: int, sets: tuple[str, ...] = ()) -> Run:
        key = ("compare", scenario, tuple(formulas), seeds, sets)
        if key not in self.cache:
            args = ["compare", f"scenarios/{scenario}.toml", "--formulas", ",".join(formulas), "--seeds", str(seeds)]
            for s in sets:
                args += ["--set", s]
            out = SCRATCH / tag
            # Exit 1 (a variant failed the scenario's checks on some seed) is a result too, as for `sim`.
            stdout, code = self._exec(args, out, " ".join(args))
            self.cache[key] = Run(out, stdout, code)
        return self.cache[key]


def compare_vary(sim: "Sim", scenario: str, tag: str, key: str, values: list[str], seeds: int) -> Run:
    """`mcpstorm compare scenarios/<scenario>.toml --vary KEY --values A,B,... --seeds N`."""
    cache_key = ("compare-vary", scenario, key, tuple(values), seeds)
    if cache_key not in sim.cache:
        args = ["compare", f"scenarios/{scenario}.toml", "--vary", key, "--values", ",".join(values), "--seeds", str(seeds)]
        out = SCRATCH / tag
        stdout, code = sim._exec(args, out, " ".join(args), ok_codes=(0, 1))
        sim.cache[cache_key] = Run(out, stdout, code)
    return sim.cache[cache_key]


class Context:
    def __init__(self, sim: Sim):
        self.sim = sim
        self.images: dict[str, Path] = {}  # docs/images/<name> -> source
        self.page = README  # the file whose block is being rendered: picture links are relative to it

    def image(self, src: Path, name: str) -> str:
        """Copy `src` to docs/images/<name> (at the end, unless --check); returns its path relative to the page being
        rendered: `docs/images/<name>` from README.md, `images/<name>` from docs/*.md."""
        path = ROOT / src
        if not path.exists():
            raise DocsError(f"{src}: missing picture")
        self.images[name] = path
        return Path(os.path.relpath(IMAGES / name, self.page.parent)).as_posix()


# ---------------------------------------------------------------------------------------------------------------------
# The blocks. Each takes the context and returns the markdown between its markers (no leading or trailing blank lines).

RETRY_STORM = "retry_storm"


def retry_storm(ctx: Context) -> Run:
    return ctx.sim.sim(RETRY_STORM, RETRY_STORM)


def block_retry_storm_console(ctx: Context) -> str:
    """The console of `mcpstorm sim scenarios/retry_storm.toml`, primary run only, without the wall-time line."""
    run = retry_storm(ctx)
    s = run.summary()
    default_dir = f"reports/{s['scenario']}/seed-{s['seed']}"
    lines = []
    for line in run.stdout.splitlines():
        if line.startswith("  time "):
            continue  # `60.3 s simulated in 2.9 s wall`: machine-dependent
        lines.append(line.rstrip().replace(str(run.out), default_dir))
        if line.startswith("reproduce:"):
            break
    else:
        raise DocsError(f"{run.out}: no `reproduce:` line in the console output")
    return "```\n" + "\n".join(lines) + "\n```"


def healthy_servers(scenario: str) -> list[str]:
    """Servers no fault targets (the `healthy_p99_ratio` population)."""
    doc = scenario_doc(scenario)
    targeted = {f.get("target", "").split("#")[0] for f in doc.get("faults", [])}
    return [srv["name"] for srv in doc.get("servers", []) if srv["name"] not in targeted]


def check_limit(summary: dict, name: str) -> str:
    for c in summary["checks"]:
        if c["name"] == name:
            return short(c["limit"], 4)
    raise DocsError(f"{summary['scenario']}: no `{name}` check in summary.json")


def block_retry_storm_table(ctx: Context) -> str:
    """Default against naive on retry_storm's seed, the picture, and the healthy-P99 ratio over three seeds."""
    run = retry_storm(ctx)
    naive_run = run.contrast()
    d, n = run.summary(), naive_run.summary()
    dt, nt = d["totals"], n["totals"]
    healthy = words([f"`{h}`" for h in healthy_servers(RETRY_STORM)])

    def hp99(t: dict, bold: bool) -> str:
        ratio = times(t["healthy_p99_ratio"])
        ratio = f"**{ratio}**" if bold else ratio
        return f"{ratio} ({ms(t['healthy_p99_before_ms']).removesuffix(' ms')} → {ms(t['healthy_p99_during_ms'])})"

    def checks(s: dict, naive: bool) -> str:
        if s["passed"]:
            return "PASS"
        return f"FAIL (exit 1 with `--set gateway.profile={naive_run.profile()}`)" if naive else "FAIL"

    rows = [
        (
            f"attempts per call during the spike (`amplification_during_fault`, check ≤ "
            f"{check_limit(d, 'amplification_during_fault')})",
            f"**{times(dt['amplification_during_fault'])}**",
            times(nt["amplification_during_fault"]),
        ),
        (
            f"P99 of {healthy} during the spike / before it (`healthy_p99_ratio`, check ≤ "
            f"{check_limit(d, 'healthy_p99_ratio')})",
            hp99(dt, True),
            hp99(nt, False),
        ),
        (
            f"goodput back to ≥ 95% of before, after the spike (`recovery_s`, check ≤ {check_limit(d, 'recovery_s')})",
            f"**{recovery(dt)}**",
            recovery(nt),
        ),
        (
            "whole-run attempts / calls, P99",
            f"{times(dt['amplification'])}, {ms(dt['p99_ms'])}",
            f"{times(nt['amplification'])}, {ms(nt['p99_ms'])}",
        ),
        ("whole run: calls ok", grouped(dt["outcomes"]["ok"]), grouped(nt["outcomes"]["ok"])),
        (
            "answered degraded, \"do not retry\" (mean wait)",
            degraded_cell(dt["outcomes"]),
            degraded_cell(nt["outcomes"]),
        ),
        ("failed after waiting (mean wait)", failed_cell(dt["outcomes"]), failed_cell(nt["outcomes"])),
        (
            "agents' time spent waiting on calls that failed",
            agent_seconds(dt["outcomes"]["failed_wait_s"]),
            agent_seconds(nt["outcomes"]["failed_wait_s"]),
        ),
        ("checks", checks(d, False), checks(n, True)),
    ]
    table = [f"| seed {d['seed']} | {run.profile()} gateway | {naive_run.profile()} gateway |", "|---|---:|---:|"]
    table += [f"| {a} | {b} | {c} |" for a, b, c in rows]

    failed = [f"`{c['name']}`" for c in n["checks"] if not c["passed"]]
    note = (
        f"Checks the naive run fails: {words(failed)}." if failed else "The naive run passes every check on this seed."
    )
    do, no = dt["outcomes"], nt["outcomes"]
    note += (
        f" Errors over the whole run (`errors`, degraded answers included): {grouped(dt['errors'])} default, "
        f"{grouped(nt['errors'])} naive. Of the default's, {grouped(do['degraded'])} are degraded answers, given after "
        f"{ms(do['degraded_mean_wait_ms'])} on average (a breaker's `hold` and a full bulkhead's `queue_wait` wait for "
        f"room or for the spike's end before declining); the agents spent {agent_seconds(do['failed_wait_s'])} waiting "
        f"on calls that failed in the end, against {agent_seconds(no['failed_wait_s'])} with the naive gateway."
    )

    # The healthy-P99 ratio over a few seeds at a fifth of the rate: how much of its distance from 1 is noise.
    rate = scenario_doc(RETRY_STORM)["load"]["rate"]
    low = rate / 5
    seeds = [1, 2, d["seed"]]
    ratios = []
    for seed in seeds:
        r = ctx.sim.sim(RETRY_STORM, f"retry_storm-rate{short(low, 3)}-seed{seed}", seed, (f"load.rate={short(low, 3)}",))
        ratios.append(r.totals()["healthy_p99_ratio"])
    spread = (
        f"At a fifth of the rate (`--set load.rate={short(low, 3)}`) the default run's healthy-P99 ratio is "
        f"{times(min(ratios))} to {times(max(ratios))} across seeds {words([str(s) for s in seeds])}: sampling noise, "
        "so a ratio just below 1 is no improvement."
    )
    # The picture's markdown line sits above the console, outside the blocks; only the file is generated.
    ctx.image(run.out / "contrast.png", "retry_storm.png")
    return "\n".join([*table, "", para(note + " " + spread)])


def agent_seconds(s: float) -> str:
    """Agents' waiting summed over calls, as the console prints it: `0.42 s`, `3,272 s`."""
    return f"{grouped(round_half_up(s))} s" if s >= 100 else f"{short(s, 2)} s"


def degraded_cell(o: dict) -> str:
    return f"{grouped(o['degraded'])} ({ms(o['degraded_mean_wait_ms'])})"


def failed_cell(o: dict) -> str:
    return f"{grouped(o['failed'])} ({ms(o['failed_mean_wait_ms'])})"


def convergence(t: dict) -> str:
    """Median convergence across gateways in ms (as the console computes it), or `never`."""
    done = sorted(c["converged_ms"] for c in t["convergence"] if c.get("converged_ms") is not None)
    if not done:
        return "never" if t["convergence"] else "no incident"
    return f"{done[len(done) // 2]} ms"


REDIS_CUT = {"kind": "partition", "target": "redis", "start": "1s", "duration": "10s"}
CONVERGENCE_SEEDS = range(1, 21)


def convergence_ms(t: dict) -> list[float]:
    """Every incident's convergence across gateways in ms; an incident that never converged is left out (counted
    by the caller)."""
    return [float(c["converged_ms"]) for c in t["convergence"] if c.get("converged_ms") is not None]


def cdf_svg(series: list[tuple[str, str, list[float]]], path: Path) -> None:
    """A small deterministic SVG: the CDF of each series (label, colour, values in ms) on a log-scale x axis from
    1 ms to 10 s. Written by hand: the generator uses the standard library only."""
    w, h, left, right, top, bottom = 640, 300, 56, 16, 16, 44
    lo, hi = 0.0, 4.0  # log10 of 1 ms and 10 s
    def x(ms: float) -> float:
        v = min(max(math.log10(max(ms, 1.0)), lo), hi)
        return left + (w - left - right) * (v - lo) / (hi - lo)
    def y(share: float) -> float:
        return top + (h - top - bottom) * (1.0 - share)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
    ]
    for i, label in enumerate(["1 ms", "10 ms", "100 ms", "1 s", "10 s"]):
        gx = x(10.0 ** i)
        out.append(f'<line x1="{gx:.1f}" y1="{top}" x2="{gx:.1f}" y2="{h - bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{gx:.1f}" y="{h - bottom + 16}" text-anchor="middle">{label}</text>')
    for share in (0.0, 0.5, 1.0):
        gy = y(share)
        out.append(f'<line x1="{left}" y1="{gy:.1f}" x2="{w - right}" y2="{gy:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{gy + 4:.1f}" text-anchor="end">{int(share * 100)}%</text>')
    out.append(f'<text x="{(left + w - right) / 2:.0f}" y="{h - 8}" text-anchor="middle">'
               "time until every other gateway followed (log scale)</text>")
    for n, (label, colour, values) in enumerate(series):
        v = sorted(values)
        if not v:
            continue
        pts = [(x(v[0]), y(0.0))]
        for i, ms in enumerate(v):
            pts.append((x(ms), y(i / len(v))))
            pts.append((x(ms), y((i + 1) / len(v))))
        pts.append((x(10_000.0), y(1.0)))
        d = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{d}"/>')
        # The legend sits left of the middle, where the curves (fast at the left edge, slow at the right) are not.
        ly = y(0.6) + 18 * n
        out.append(f'<line x1="{left + 100}" y1="{ly - 4:.1f}" x2="{left + 120}" y2="{ly - 4:.1f}" stroke="{colour}" '
                   'stroke-width="2"/>')
        out.append(f'<text x="{left + 126}" y="{ly:.1f}">{label}</text>')
    out.append("</svg>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n")


def block_sync_convergence(ctx: Context) -> str:
    """How fast the other gateways follow one that opens a breaker, in the simulator (1 ms network), over seeds:
    through Redis, and with the Redis host partitioned (each gateway then opens on its own evidence)."""
    faults = scenario_doc("breaker_sync")["faults"]
    rows, series = [], []
    for label, colour, tag, sets in [
        ("through Redis", "#1f77b4", "sync", ()),
        ("Redis partitioned: each on its own", "#d62728", "cut", (f"faults={toml_inline(faults + [REDIS_CUT])}",)),
    ]:
        values, never = [], 0
        for seed in CONVERGENCE_SEEDS:
            t = ctx.sim.sim("breaker_sync", f"convergence-{tag}-seed{seed}", seed, sets).totals()
            values += convergence_ms(t)
            never += sum(1 for c in t["convergence"] if c.get("converged_ms") is None)
        v = sorted(values)
        q = lambda p: f"{v[min(len(v) - 1, int(math.ceil(p * len(v))) - 1)]:g} ms" if v else "n/a"
        rows.append(f"| {label} | {len(v) + never} | {q(0.5)} | {q(0.99)} | {never} |")
        series.append((label, colour, v))
    svg = SCRATCH / "sync_convergence.svg"
    cdf_svg(series, ROOT / svg)
    picture = ctx.image(svg, "sync_convergence.svg")
    seeds = f"{CONVERGENCE_SEEDS[0]} to {CONVERGENCE_SEEDS[-1]}"
    return "\n".join([
        para(f"`mcpstorm sim scenarios/breaker_sync.toml --seed N` for seeds {seeds}, and the same with the Redis host "
        f"partitioned (`--set faults=[..., {toml_inline(REDIS_CUT)}]`); per incident (a breaker one gateway opens) "
        "from `summary.json`'s `convergence`: the time from the first gateway's open until every other gateway has "
        "followed or suspected it. The network's one-way latency is 1 ms."),
        "",
        f"![breaker convergence across gateways]({picture})",
        "",
        "| sync | incidents | P50 | P99 | never converged |",
        "|---|---:|---:|---:|---:|",
        *rows,
    ])


def story_bulkhead(ctx: Context, run: Run) -> str:
    d, n = run.totals(), run.contrast().totals()
    return (
        f"600 calls/s, `inventory` hangs for 15 s; healthy P99 {times(d['healthy_p99_ratio'])} (default) against "
        f"{times(n['healthy_p99_ratio'])} (naive)"
    )


def story_breaker_sync(ctx: Context, run: Run) -> str:
    # The scenario file's own suggestion: its faults plus a partition of the Redis host.
    faults = scenario_doc("breaker_sync")["faults"] + [REDIS_CUT]
    cut = ctx.sim.sim("breaker_sync", "breaker_sync-partitioned", None, (f"faults={toml_inline(faults)}",))
    return (
        f"three gateways share breakers through Redis; one opens, the other two follow in {convergence(run.totals())} "
        f"({convergence(cut.totals())} each on its own when Redis is partitioned)"
    )


def story_cascading(ctx: Context, run: Run) -> str:
    d, n = run.totals(), run.contrast().totals()
    return (
        f"900 calls/s, `orders` 20x slower for 10 s: naive retries ({times(n['amplification_during_fault'])}) spread it "
        f"to `catalog` (P99 {times(n['healthy_p99_ratio'])}); the default gateway does not "
        f"({times(d['amplification_during_fault'])}, {times(d['healthy_p99_ratio'])}, back in {recovery(d)})"
    )


def story_capability(ctx: Context, run: Run) -> str:
    return (
        "python/rust/go reviews over four servers with different `language_support`, one joining, one leaving: "
        f"{grouped(run.totals()['misroutes'])} misroutes"
    )


# The story column per shipped scenario, in table order: fixed text, or a function of the run. A scenario file not
# listed here still gets a row, after these, with its `description`.
SHIPPED: list[tuple[str, object]] = [
    ("smoke", "20 agents, one echo tool, a 1 s latency spike; CI runs it"),
    ("retry_storm", "1500 calls/s, naive agents, db +3 s for 20 s (above); default and naive gateway"),
    ("bulkhead", story_bulkhead),
    ("breaker_sync", story_breaker_sync),
    ("cascading_failure", story_cascading),
    ("concurrency_knee", "the concurrent-client design's experiment as a sweep of six runs (below)"),
    ("latency_spike", "10 replicas at 200 calls/s, one +2 s for 30 s: the routing formulas compared, default and naive gateway (below)"),
    ("replica_crash", "3 replicas at 300 calls/s, one crashes for 20 s: default and naive gateway (below)"),
    ("replica_killed", "2 replicas of a tool that is not idempotent, one's process killed for 20 s: default and naive gateway (below)"),
    ("capability_routing", story_capability),
    ("schema_drift", "20 agents; a server makes a parameter required, silently, then with `list_changed` (below)"),
    ("clock_skew", "server clocks ahead and fast, short sessions, a clock step, a session purge, an auth rotation (below)"),
]


def shipped_files() -> list[str]:
    """The scenario files git tracks (an untracked scratch scenario is not shipped); every *.toml without git."""
    try:
        proc = subprocess.run(["git", "ls-files", "--", "scenarios/*.toml"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        proc = None
    if proc is not None and proc.returncode == 0 and proc.stdout.strip():
        paths = [Path(line) for line in proc.stdout.splitlines()]
        return sorted(p.stem for p in paths if p.parent == Path("scenarios") and (ROOT / p).exists())
    return sorted(p.stem for p in (ROOT / "scenarios").glob("*.toml"))


def block_shipped_scenarios(ctx: Context) -> str:
    files = shipped_files()
    known = [name for name, _ in SHIPPED]
    missing = [name for name in known if name not in files]
    if missing:
        raise DocsError(f"SHIPPED names scenarios that do not exist: {', '.join(missing)}")
    order = [(name, story) for name, story in SHIPPED] + [(name, None) for name in files if name not in known]
    rows = ["| scenario | story | simulated |", "|---|---|---:|"]
    for name, story in order:
        run = ctx.sim.sim(name, name)
        if (ROOT / run.out / "sweep.csv").exists():
            simulated = f"{sim_s(sum(float(r['sim_seconds']) for r in run.sweep()))} (all rows)"
            summary = None
        else:
            summary = run.summary()
            simulated = sim_s(summary["sim_seconds"])
            if list((ROOT / run.out).glob("contrast-*/summary.json")):
                simulated += f" + {sim_s(run.contrast().summary()['sim_seconds'])}"
        if story is None:
            text = summary["description"] if summary else scenario_doc(name).get("description", "")
        elif callable(story):
            text = story(ctx, run)
        else:
            text = story
        rows.append(f"| `{name}.toml` | {text.replace('|', chr(92) + '|')} | {simulated} |")
    return "\n".join(rows)


def block_sessions_table(ctx: Context) -> str:
    rows = [
        "| scenario | profile | checks | error rate | stale sends (of refused) | error window | session errors "
        "| auth errors | re-handshakes | renewals |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in ["schema_drift", "clock_skew"]:
        primary = ctx.sim.sim(name, name)
        for run in [primary, primary.contrast()]:
            s = run.summary()
            t = s["totals"]
            stale = grouped(t["stale_sends"])
            if t["schema_refusals"] > 0:
                stale += f" (of {grouped(t['schema_refusals'])})"
            rows.append(
                f"| `{name}` | {run.profile()} | {'PASS' if s['passed'] else 'FAIL'} | {pct(t['error_rate'])} | {stale} "
                f"| {t['error_window_s']} s | {grouped(t['session_errors'])} | {grouped(t['auth_errors'])} "
                f"| {grouped(t['rehandshakes'])} | {grouped(t['renewals'])} |"
            )
    seeds = {ctx.sim.sim(n, n).summary()["seed"] for n in ["schema_drift", "clock_skew"]}
    lead = f"Seed{'s' if len(seeds) > 1 else ''} {words([str(s) for s in sorted(seeds)])} (the scenarios' own):"
    return lead + "\n\n" + "\n".join(rows)


# The concurrent-client design's measurements (its design document), per concurrency: QPS and P99 in ms. Constants,
# not runs.
CLIENT_DESIGN = {1: (5, 202), 10: (48, 342), 50: (208, 481), 100: (333, 793), 200: (417, 1420), 500: (312, 3548)}
UNLIMITED = "servers[0].workers=100000"


def block_knee_table(ctx: Context) -> str:
    sim = {r["value"]: r for r in ctx.sim.sim("concurrency_knee", "concurrency_knee-unlimited", None, (UNLIMITED,)).sweep()}
    knee_rows = ctx.sim.sim("concurrency_knee", "concurrency_knee").sweep()
    out = [
        "| concurrency | design QPS | sim QPS | design P99 | sim P99 | sim errors | knee QPS | knee P99 | knee errors |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k in knee_rows:
        c = k["value"]
        if c not in sim:
            raise DocsError(f"concurrency_knee: the unlimited sweep has no row {c}")
        u = sim[c]
        design_qps, design_p99 = CLIENT_DESIGN.get(int(float(c)), (None, None))
        out.append(
            f"| {c} | {design_qps if design_qps is not None else '—'} | {qps(float(u['ok_per_s']))} "
            f"| {f'{design_p99} ms' if design_p99 is not None else '—'} | {ms(float(u['p99_ms']))} "
            f"| {pct(float(u['error_rate']))} | {qps(float(k['ok_per_s']))} | {ms(float(k['p99_ms']))} "
            f"| {pct(float(k['error_rate']))} |"
        )
    # The default gateway (the scenario's profile) against the naive one, row by row: protection that never throttles a
    # healthy server serves the same QPS. More than 2% apart, or anything degraded, fails `just docs`.
    gaps = []
    for tag, sets, rows in [
        ("unlimited", (UNLIMITED,), sim),
        ("knee", (), {r["value"]: r for r in knee_rows}),
    ]:
        naive = ctx.sim.sim("concurrency_knee", f"concurrency_knee-{tag}-naive", None, (*sets, "gateway.profile=naive"))
        for r in naive.sweep():
            mine = float(rows[r["value"]]["ok_per_s"])
            theirs = float(r["ok_per_s"])
            gaps.append(abs(mine - theirs) / theirs if theirs else 0.0)
    worst = max(gaps)
    if worst > 0.02:
        raise DocsError(f"concurrency_knee: the default gateway's QPS is {pct(worst)} from the naive one's on some row")
    top = knee_rows[-1]
    workers = scenario_doc("concurrency_knee")["servers"][0]["workers"]
    knee = (
        f"In the knee run ({workers} server workers) the {top['value']}-session row completes {qps(float(top['ok_per_s']))} "
        f"calls/s with P50 {ms(float(top['p50_ms']))} and P99 {ms(float(top['p99_ms']))}, against "
        f"{qps(float(sim[top['value']]['ok_per_s']))} calls/s and {ms(float(sim[top['value']]['p99_ms']))} with an "
        "unlimited pool. *QPS* is ok calls per simulated second; *errors* are failed calls over completed ones. Both "
        "runs use the default gateway; with `--set gateway.profile=naive` every row's QPS is within "
        f"{pct(worst)} of these."
    )
    return "\n".join(out) + "\n\n" + para(knee)


LATENCY_SPIKE = "latency_spike"
FORMULAS = ["round_robin", "health_weighted", "p2c_peak_ewma"]
COMPARE_SEEDS = 5
# The formulas compared on their own: no breaker or bulkhead steering calls away from the slow replica.
ROUTING_ALONE = ("gateway.profile=naive",)


def show(metric: str, x: float) -> str:
    """As compare.md shows a metric's value (sim/src/report/compare.rs)."""
    if metric in ("success_rate", "error_rate"):
        return pct(x)
    if metric == "p99_ms":
        return f"{fixed(x, 1)} ms"
    return short(x, 3)


def show_ci(metric: str, e: dict | None) -> str:
    ci = e.get("ci95") if e else None
    return f"± {show(metric, ci)}" if ci is not None and math.isfinite(ci) else "—"


def block_latency_spike_compare(ctx: Context) -> str:
    run = ctx.sim.compare(LATENCY_SPIKE, "latency_spike-compare", FORMULAS, COMPARE_SEEDS, ROUTING_ALONE)
    doc = json.loads(run.file("compare.json").read_text(encoding="utf-8"))
    metrics = {m["metric"]: m for m in doc["metrics"]}
    p99, ok = metrics["p99_ms"], metrics["success_rate"]
    base = doc["variants"][0]
    rows = [
        f"| formula | P99 mean | 95% CI | Δ vs {base} (paired) | 95% CI of Δ | seeds won | success rate |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for i, label in enumerate(doc["variants"]):
        e, d = p99["estimates"][i], p99["vs_first"][i]
        if d is None:
            delta, delta_ci = "—", "—"
        else:
            sign = "+" if d["mean"] > 0 else ""
            ci = d.get("ci95")
            excludes = ci is not None and math.isfinite(ci) and abs(d["mean"]) > ci
            delta, delta_ci = f"{sign}{show('p99_ms', d['mean'])}", show_ci("p99_ms", d) + (" ✓" if excludes else "")
        rows.append(
            f"| {label} | {show('p99_ms', e['mean'])} | {show_ci('p99_ms', e)} | {delta} | {delta_ci} "
            f"| {fixed(p99['wins'][i] * 100, 0)}% | {show('success_rate', ok['estimates'][i]['mean'])} |"
        )
    seeds = doc["seeds"]
    n_runs = len(seeds) * len(doc["variants"])
    picture = ctx.image(run.out / "compare.png", "latency_spike_compare.png")
    cmd = (
        f"just compare scenarios/{LATENCY_SPIKE}.toml --formulas {','.join(FORMULAS)} --seeds {len(seeds)} "
        + " ".join(f"--set {s}" for s in ROUTING_ALONE)
    )
    return "\n".join(
        [
            "```sh",
            cmd,
            "```",
            "",
            *rows,
            "",
            para(
                f"(From `compare.json`, as in `compare.md`; {len(seeds)} seeds ({seeds[0]} to {seeds[-1]}), {n_runs} "
                "runs: few, to keep `just docs` quick; `--seeds 20` narrows the intervals. ✓: the interval excludes 0.)"
            ),
            "",
            f"![Goodput, P99 and error rate per second of the {number_word(len(doc['variants']))} formulas, mean over "
            f"{number_word(len(seeds))} seeds, the spike shaded]({picture})",
        ]
    )


def spike_share(run: Run, replica: str, start_s: float, end_s: float) -> tuple[int, int]:
    """(attempts the slow replica served, all attempts) started inside the spike, from calls.csv."""
    rows = [r for r in run.calls() if start_s * 1000 <= float(r["start_ms"]) < end_s * 1000]
    return sum(r["server"] == replica for r in rows), len(rows)


def block_latency_spike_shares(ctx: Context) -> str:
    doc = scenario_doc(LATENCY_SPIKE)
    own = doc.get("gateway", {}).get("formula", "health_weighted")
    spike = next(f for f in doc["faults"] if f["kind"] == "latency_spike")
    replica = spike["target"].replace("#", "-")  # calls.csv names replicas api-3, scenarios api#3

    def run_of(formula: str) -> Run:
        # Every attempt in calls.csv: a run this long writes a sample unless asked.
        tag = f"{LATENCY_SPIKE}-naive-calls-{re.sub(r'[^A-Za-z0-9_.-]', '_', formula)}"
        sets = (f"gateway.formula={json.dumps(formula)}", *ROUTING_ALONE, 'report.calls="all"')
        return ctx.sim.sim(LATENCY_SPIKE, tag, None, sets)

    def share(formula: str) -> tuple[str, str, Run]:
        run = run_of(formula)
        window = run.summary()["faults"][0]
        slow, total = spike_share(run, replica, window["start_s"], window["end_s"])
        return pct(slow / total if total else 0.0), f"{grouped(slow)} of {grouped(total)}", run

    def name(f: str) -> str:
        return "round robin" if f == "round_robin" else f"`{f}`"

    seed = run_of(own).summary()["seed"]
    order = [own] + [f for f in FORMULAS if f != own]
    parts = []
    for f in order:
        rate, counts, _ = share(f)
        parts.append(f"{rate} under {name(f)} ({counts})")
    sharp = "expr:score^8"
    sharp_rate, sharp_counts, sharp_run = share(sharp)
    return para(
        f"With the naive profile on seed {seed}, of the attempts started during the spike and sent to a replica (from "
        "`calls.csv`), the slow "
        f"replica served {words(parts)}. Sharpening the score, `--set 'gateway.formula=\"{sharp}\"'` gave the slow "
        f"replica {sharp_rate} of them ({sharp_counts}) and a P99 of {ms(sharp_run.totals()['p99_ms'])} on seed {seed} "
        "(one seed, not a comparison over seeds)."
    )


def block_capability_misroutes(ctx: Context) -> str:
    run = ctx.sim.sim("capability_routing", "capability_routing-no-requirements", None, ("gateway.requirements=[]",))
    s = run.summary()
    return para(
        f"Without the requirement rule (`--set 'gateway.requirements=[]'`) the same run has "
        f"{grouped(s['totals']['misroutes'])} misroutes and exits {run.code}."
    )


# Every built-in formula (core/src/router/formula: FormulaSpec::BUILT_IN), for the per-replica protection table.
ALL_FORMULAS = ["health_weighted", "round_robin", "random", "least_outstanding", "p2c_peak_ewma", "best_score"]


def degraded_total(t: dict) -> int:
    return sum(t.get("degraded", {}).values())


def block_protection_latency_spike(ctx: Context) -> str:
    """latency_spike under every built-in formula, default and naive side by side. A default run that fails its
    checks (a degraded result, or a P99 above the naive one's) fails `just docs`, and so CI."""
    rows = [
        "| formula | default: degraded | default: failed calls | default P99 | naive P99 | default P99 / naive | checks |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    failing = []
    for formula in ALL_FORMULAS:
        own = scenario_doc(LATENCY_SPIKE).get("gateway", {}).get("formula", "health_weighted")
        if formula == own:
            run = ctx.sim.sim(LATENCY_SPIKE, LATENCY_SPIKE)
        else:
            run = ctx.sim.sim(LATENCY_SPIKE, f"{LATENCY_SPIKE}-{formula}", None, (f"gateway.formula={json.dumps(formula)}",))
        s, n = run.summary(), run.contrast().summary()
        d, nt = s["totals"], n["totals"]
        if not s["passed"]:
            failing.append(formula)
        ratio = d["p99_ms"] / nt["p99_ms"] if nt["p99_ms"] else 0.0
        rows.append(
            f"| `{formula}` | {grouped(degraded_total(d))} | {grouped(d['errors'])} | {ms(d['p99_ms'])} "
            f"| {ms(nt['p99_ms'])} | {times(ratio)} | {'PASS' if s['passed'] else 'FAIL'} |"
        )
    if failing:
        raise DocsError(f"latency_spike: the default gateway fails its checks under {', '.join(failing)}")
    seed = ctx.sim.sim(LATENCY_SPIKE, LATENCY_SPIKE).summary()["seed"]
    return f"Seed {seed}, `mcpstorm sim scenarios/{LATENCY_SPIKE}.toml --set gateway.formula=<formula>`:\n\n" + "\n".join(rows)


REPLICA_CRASH = "replica_crash"


def contrast_block(ctx: Context, scenario: str, alt: str) -> str:
    """A scenario run beside its `[report] contrast` (naive) run: one row per profile, and the side-by-side plot."""
    run = ctx.sim.sim(scenario, scenario)
    naive = run.contrast()
    rows = [
        "| profile | failed calls | degraded | attempts / call during the fault | P99 | P99.9 | error window | checks |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in [run, naive]:
        s = r.summary()
        t = s["totals"]
        rows.append(
            f"| {r.profile()} | {grouped(t['errors'])} ({pct(t['error_rate'])}) | {grouped(degraded_total(t))} "
            f"| {times(t['amplification_during_fault'])} | {ms(t['p99_ms'])} | {ms(t['p999_ms'])} "
            f"| {t['error_window_s']} s | {'PASS' if s['passed'] else 'FAIL'} |"
        )
    seed = run.summary()["seed"]
    picture = ctx.image(run.out / "contrast.png", f"{scenario}.png")
    return (
        f"Seed {seed}, `mcpstorm sim scenarios/{scenario}.toml` (the naive row is its `[report] contrast` run):"
        + "\n\n" + "\n".join(rows) + "\n\n" + f"![{scenario}: {alt}]({picture})"
    )


def block_protection_replica_crash(ctx: Context) -> str:
    return contrast_block(ctx, REPLICA_CRASH, "default gateway against naive")


REPLICA_KILLED = "replica_killed"


def block_protection_replica_killed(ctx: Context) -> str:
    return contrast_block(ctx, REPLICA_KILLED, "default gateway against naive")


TOKEN_STORM = "token_storm"


def block_token_storm(ctx: Context) -> str:
    """token_storm beside its naive contrast: the identity provider's side (token requests, the busiest second, shed)
    and the calls', and the side-by-side plot."""
    run = ctx.sim.sim(TOKEN_STORM, TOKEN_STORM)
    rows = [
        "| profile | token requests | busiest second | shed by the provider | failed calls | P99 | checks |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in [run, run.contrast()]:
        s = r.summary()
        t = s["totals"]
        k = t["tokens"]
        rows.append(
            f"| {r.profile()} | {grouped(k['requests'])} | {grouped(k['peak_per_s'])}/s | {grouped(k['shed'])} "
            f"| {grouped(t['errors'])} ({pct(t['error_rate'])}) | {ms(t['p99_ms'])} | {'PASS' if s['passed'] else 'FAIL'} |"
        )
    seed = run.summary()["seed"]
    picture = ctx.image(run.out / "contrast.png", f"{TOKEN_STORM}.png")
    return (
        f"Seed {seed}, `mcpstorm sim scenarios/{TOKEN_STORM}.toml` (the naive row is its `[report] contrast` run):"
        + "\n\n" + "\n".join(rows) + "\n\n"
        + f"![{TOKEN_STORM}: default gateway against naive, a mass token expiry while the identity provider is slow]"
        + f"({picture})"
    )


HTTP_POOL = "http_pool"


def block_http_pool(ctx: Context) -> str:
    return contrast_block(ctx, HTTP_POOL, "default gateway against naive over Streamable HTTP")



# Issue 24's rule, per server: the default profile serves at least naive's ok calls less those naive served only
# because the fault ended while they waited (waited-out), with a slack of 0.5% + 5 calls; and unless it serves over
# 1% more, its P99 is no worse than naive's x 1.10 + 10 ms.
# Issue 41 adds the crash mode no shipped scenario covers: a replica that resets each connection, for a tool that is
# not safe to repeat.
DOMINANCE_REGRESSIONS = ["regressions/every_replica_slow_pool_cap", "regressions/spike_on_two_replicas_p99",
                         "regressions/replica_reset_not_idempotent"]

# Issue 24's candidates, each compared with what it replaced: (scenario, key, values, what the baseline was).
CANDIDATES = [
    ("breaker_sync", "gateway.breaker.probe_interval", ["0s", "250ms", "50ms"], "no probe before the open period ends"),
    ("retry_storm", "gateway.breaker.hold", ["0s", "1s"], "a degraded result at once"),
    ("retry_storm", "gateway.profile", ["naive", "default"], "no protection"),
]
CANDIDATE_SEEDS = 5


def dominance_row(name: str, server: str, mine: dict, naive: dict) -> tuple[str, bool]:
    waited = naive.get("waited_out", 0)
    floor = naive["ok"] - waited - (0.005 * naive["ok"] + 5)
    enough = mine["ok"] >= floor
    more = mine["ok"] > 1.01 * naive["ok"]
    fast = more or mine["p99_ms"] <= 1.10 * naive["p99_ms"] + 10
    shortfall = max(0, round_half_up(naive["ok"] - waited - mine["ok"]))
    verdict = "PASS" if enough and fast else "FAIL: " + ("fewer ok calls" if not enough else "slower")
    row = (f"| `{name}` | {server} | {grouped(mine['ok'])} | {grouped(naive['ok'])} | {grouped(waited)} | "
           f"{grouped(shortfall) if shortfall else 'none'} | {ms(mine['p99_ms'])} | {ms(naive['p99_ms'])} | {verdict} |")
    return row, enough and fast


def block_dominance(ctx: Context) -> str:
    """Every shipped scenario (and DOMINANCE_REGRESSIONS), default against naive per server. Fails `just docs`
    (and so CI) when a row breaks the rule: the default profile must dominate the naive one."""
    rows = [
        "| scenario | server | ok, default | ok, naive | naive's waited-out | shortfall | P99, default | P99, naive | rule |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    amplification = []
    failed = []
    shipped = [name for name in shipped_files() if not (ROOT / f"scenarios/{name}.toml").read_text(encoding="utf-8")
               .count("[sweep]")]
    for name in shipped + DOMINANCE_REGRESSIONS:
        sets = ("report={}", "checks={}")
        default = ctx.sim.sim(name, f"dominance/{name}-default", sets=("gateway.profile=default", *sets)).summary()
        naive = ctx.sim.sim(name, f"dominance/{name}-naive", sets=("gateway.profile=naive", *sets)).summary()
        for server, mine in default["servers"].items():
            row, ok = dominance_row(name, server, mine, naive["servers"][server])
            rows.append(row)
            if not ok:
                failed.append(f"{name}/{server}")
        d, n = default["totals"]["amplification_during_fault"], naive["totals"]["amplification_during_fault"]
        if d is not None:
            amplification.append(f"`{name}` {times(d)} (naive {times(n)})")
    if failed:
        raise DocsError(f"dominance: the default profile does not dominate naive on {', '.join(failed)}")
    intro = para(
        "Each scenario's own seed, `mcpstorm sim scenarios/<scenario>.toml --set gateway.profile=default|naive "
        "--set 'report={}' --set 'checks={}'`; per server from `summary.json` (`servers`). Attempts per call during "
        "the faults, default (naive): " + "; ".join(amplification) + "."
    )
    return intro + "\n\n" + "\n".join(rows)


def block_protection_candidates(ctx: Context) -> str:
    """Each issue-24 candidate against what it replaced, paired over seeds with `mcpstorm compare`."""
    rows = [
        "| scenario | `--vary` | value | success rate | Δ vs baseline (95% CI) | P99 | attempts per call |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    commands = []
    for scenario, key, values, baseline in CANDIDATES:
        tag = f"candidates/{scenario}-{key.rsplit('.', 1)[-1]}"
        run = compare_vary(ctx.sim, scenario, tag, key, values, CANDIDATE_SEEDS)
        doc = json.loads(run.file("compare.json").read_text(encoding="utf-8"))
        metrics = {m["metric"]: m for m in doc["metrics"]}
        ok, p99, amp = metrics["success_rate"], metrics["p99_ms"], metrics["amplification"]
        for i, label in enumerate(doc["variants"]):
            d = ok["vs_first"][i]
            delta = "baseline: " + baseline if d is None else (
                f"{'+' if d['mean'] > 0 else ''}{show('success_rate', d['mean'])} ({show_ci('success_rate', d)})")
            rows.append(
                f"| `{scenario}` | `{key}` | `{label}` | {show('success_rate', ok['estimates'][i]['mean'])} | {delta} "
                f"| {show('p99_ms', p99['estimates'][i]['mean'])} | {fixed(amp['estimates'][i]['mean'], 2)} |"
            )
        commands.append(
            f"just compare scenarios/{scenario}.toml --vary {key} --values {','.join(values)} --seeds {CANDIDATE_SEEDS}")
    return "\n".join(["```sh", *commands, "```", "", *rows, "", para(
        f"(From each run's `compare.json`: means over {CANDIDATE_SEEDS} seeds from the scenario's own, paired; the "
        "success rate is ok calls over offered calls, whole run. On `retry_storm` it counts the calls naive serves only "
        "because the spike ended while they waited, and the naive agents' retries of them: the table below takes those "
        "out, per server.)")])


# ---------------------------------------------------------------------------------------------------------------------
# The scenario format's every key, from its JSON Schema (scenarios/scenario.schema.json, generated from the Rust types:
# each description is a `///` comment). No simulator run: a key the types gain appears here on the next `just docs`,
# and a key without a description fails it.

SCENARIO_SCHEMA = ROOT / "scenarios" / "scenario.schema.json"
# The top-level tables in the order a scenario file reads; a table the schema gains is listed after these.
TABLE_ORDER = ["network", "servers", "load", "agent", "client", "faults", "gateway", "nodes", "report", "checks",
               "fidelity", "sweep", "swarm"]
DURATION_PATTERN = "^([0-9]+(\\.[0-9]+)?(d|h|m|s|ms|us|ns))+$"


class SchemaDoc:
    """Walks the schema into sections (one per TOML table), each a list of rows (key, type, default, meaning)."""

    def __init__(self, schema: dict):
        self.defs = schema.get("definitions", {})
        self.root = schema
        self.undocumented: list[str] = []

    def deref(self, node) -> dict:
        """`node` with its `$ref` (or single `allOf`) merged in; the node's own keys (description, default) win."""
        if not isinstance(node, dict):
            return {}
        node = dict(node)
        while True:
            if "$ref" in node:
                target = self.defs[node.pop("$ref").rsplit("/", 1)[-1]]
            elif len(node.get("allOf", [])) == 1:
                target = node.pop("allOf")[0]
                target = self.deref(target)
            else:
                return node
            node = {**target, **node}

    @staticmethod
    def is_table(p: dict) -> bool:
        return "properties" in p and "oneOf" not in p

    def is_table_array(self, p: dict) -> bool:
        return p.get("type") == "array" and self.is_table(self.deref(p.get("items")))

    def is_variants(self, p: dict) -> bool:
        alts = [self.deref(a) for a in p.get("oneOf", [])]
        return bool(alts) and all("properties" in a for a in alts)

    def enum_values(self, p: dict) -> list[tuple[str, str]] | None:
        """(`"value"`, its description) for an enum of strings (`oneOf` of consts, or `enum`), else None."""
        if "enum" in p:
            return [(json.dumps(v), "") for v in p["enum"]]
        alts = [self.deref(a) for a in p.get("oneOf", [])]
        if alts and all("const" in a or "enum" in a for a in alts):
            values = []
            for a in alts:
                for v in a.get("enum", [a.get("const")]):
                    values.append((json.dumps(v), a.get("description", "")))
            return values
        return None

    def type_of(self, p) -> str:
        if p is True or p == {}:
            return "any JSON value"
        p = self.deref(p)
        values = self.enum_values(p)
        if values is not None:
            return " \\| ".join(f"`{v}`" for v, _ in values)
        if "anyOf" in p:
            return " or ".join(self.type_of(a) for a in p["anyOf"])
        t = p.get("type")
        if isinstance(t, list):
            return " or ".join(t)
        if t == "string":
            return "duration" if p.get("pattern") == DURATION_PATTERN else "string"
        if t in ("integer", "number"):
            lo, hi = p.get("minimum"), p.get("maximum")
            word = "integer" if t == "integer" else "number"
            num = lambda x: f"{x:g}" if isinstance(x, float) else grouped(x)
            if lo is not None and hi is not None:
                return f"{word}, {num(lo)} to {num(hi)}"
            if lo is not None:
                return f"{word} ≥ {num(lo)}"
            return word
        if t == "boolean":
            return "boolean"
        if t == "array":
            items = p.get("items")
            return f"array of {self.type_of(items)}" if items is not None else "array"
        if t == "object":
            extra = p.get("additionalProperties")
            if isinstance(extra, dict):
                return f"table of {self.type_of(extra)}"
            return "table"
        return "any JSON value"

    def describe(self, path: str, prop, p: dict) -> str:
        """A row's meaning: the key's own description, else its type's; and an enum's values with theirs."""
        own = prop.get("description") if isinstance(prop, dict) else None
        text = own or p.get("description") or ""
        # A type's long description (a table, an example block) is shown once, under its section, not in a cell.
        if not own and ("\n\n" in text or "|" in text.split("\n", 1)[0]):
            text = text.split("\n\n", 1)[0]
        values = self.enum_values(p)
        # Each value's own description, unless the key's already names every value.
        if values and any(d for _, d in values) and not all(v in text for v, _ in values):
            text = (text + " " if text else "") + "; ".join(f"`{v}`: {one_line(d)}" if d else f"`{v}`"
                                                            for v, d in values)
        if not text.strip():
            self.undocumented.append(path)
        return one_line(text)

    def default_of(self, key: str, prop, p: dict, parent_default, required: list[str]) -> str:
        own = prop.get("default") if isinstance(prop, dict) and "default" in prop else p.get("default")
        if own is None and isinstance(parent_default, dict) and key in parent_default:
            own = parent_default[key]
        if own is not None:
            if own == {} or own == []:
                return "empty"
            try:
                return f"`{toml_inline(own)}`".replace("|", "\\|")
            except DocsError:
                return f"`{json.dumps(own)}`"
        return "**required**" if key in required else "none"

    def sections(self) -> list[tuple[str, str, list[tuple[str, str, str, str]]]]:
        """(heading, the table's own description, rows) for the top level and every table below it."""
        out: list = []
        self._section("", "Top level", self.root, None, out, top=True)
        return out

    def _section(self, path: str, heading: str, node: dict, default, out: list, top: bool = False) -> None:
        node = self.deref(node)
        props = node.get("properties", {})
        required = node.get("required", [])
        rows, later = [], []
        keys = list(props)
        if top:
            known = [k for k in TABLE_ORDER if k in props]
            keys = [k for k in keys if not self.is_table(self.deref(props[k])) and not self.is_table_array(
                self.deref(props[k]))] + known + [k for k in keys if k not in known]
            keys = list(dict.fromkeys(keys))
        for key in keys:
            prop = props[key]
            p = self.deref(prop)
            where = f"{path}.{key}" if path else key
            sub_default = prop.get("default") if isinstance(prop, dict) and "default" in prop else p.get("default")
            if sub_default is None and isinstance(default, dict):
                sub_default = default.get(key)
            if self.is_table(p):
                later.append((where, f"`[{where}]`", prop, sub_default, False))
                continue
            if self.is_table_array(p):
                later.append((where, f"`[[{where}]]`", prop, None, True))
                continue
            if self.is_variants(p):
                later.append((where, f"`{where}`: one of these shapes", prop, None, None))
                rows.append((f"`{key}`", "inline table (below)", self.default_of(key, prop, p, default, required),
                             self.describe(where, prop, p)))
                continue
            rows.append((f"`{key}`", self.type_of(p), self.default_of(key, prop, p, default, required),
                         self.describe(where, prop, p)))
        intro = one_para(node.get("description", ""))
        out.append((heading, intro, rows))
        for where, title, prop, sub_default, array in later:
            if array is None:
                self._variants(where, title, prop, out)
                continue
            p = self.deref(prop)
            table = self.deref(p["items"]) if array else p
            merged = {**table}
            if isinstance(prop, dict) and prop.get("description") and not table.get("description"):
                merged["description"] = prop["description"]
            elif isinstance(prop, dict) and prop.get("description") and prop["description"] != table["description"]:
                merged["description"] = prop["description"] + "\n\n" + table["description"]
            self._section(where, title, merged, sub_default, out)

    def _variants(self, path: str, heading: str, prop: dict, out: list) -> None:
        p = self.deref(prop)
        rows = []
        for alt in (self.deref(a) for a in p["oneOf"]):
            props = alt["properties"]
            tag = next((k for k, v in props.items() if isinstance(v, dict) and "const" in v), None)
            label = f"`{tag} = {json.dumps(props[tag]['const'])}`" if tag else "—"
            required = alt.get("required", [])
            keys = []
            for key, sub in props.items():
                if key == tag:
                    continue
                sp = self.deref(sub)
                default = self.default_of(key, sub, sp, None, required)
                keys.append(f"`{key}` ({self.type_of(sp)}, {default})")
            text = one_line(alt.get("description", ""))
            if not text:
                self.undocumented.append(f"{path} ({label.strip('`')})")
            rows.append((label, ", ".join(keys) or "none", "", text))
        out.append((heading, one_para(p.get("description", "")), rows))


def one_line(text: str) -> str:
    """A description as one table cell: rustdoc links as plain code, lines joined, pipes escaped."""
    text = re.sub(r"\[(`[^`\]]+`)\](?!\()", r"\1", text)
    return " ".join(text.split()).replace("|", "\\|")


def one_para(text: str) -> str:
    """A table's own description as markdown under its heading: rustdoc links as plain code, and without the key
    tables some types' doc comments hold (the rows below say the same, from each key's own comment)."""
    text = re.sub(r"\[(`[^`\]]+`)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\[(`[^`\]]+`)\](?!\()", r"\1", text)
    keyed = re.compile(r"^\|\s*(key|field)\s*\|")
    paras = [p for p in text.strip().split("\n\n") if p and not keyed.match(p.lstrip())]
    return "\n\n".join(paras)


def block_scenario_keys(ctx: Context) -> str:
    """Every key of the scenario format, per table, with its type, default and description: from the JSON Schema,
    so a key cannot exist undocumented (one without a description fails `just docs`)."""
    doc = SchemaDoc(json.loads(SCENARIO_SCHEMA.read_text(encoding="utf-8")))
    out = []
    sections = doc.sections()
    if doc.undocumented:
        raise DocsError(f"{rel(SCENARIO_SCHEMA)}: no description for {', '.join(doc.undocumented)}: give the Rust "
                        "field a `///` doc comment and regenerate the schema (MCPSTORM_WRITE_SCHEMA=1 cargo test -p "
                        "mcpstorm-sim --lib schema)")
    for heading, intro, rows in sections:
        out.append(f"### {heading}")
        out.append("")
        if intro:
            out += [intro, ""]
        if rows:
            variants = heading.endswith("one of these shapes")
            head = "| shape | keys (type, default) | | meaning |" if variants else "| key | type | default | meaning |"
            out += [head, "|---|---|---|---|"]
            out += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
            out.append("")
    missing = schema_keys_missing(json.loads(SCENARIO_SCHEMA.read_text(encoding="utf-8")), "\n".join(out))
    if missing:
        raise DocsError(f"scenario_keys: keys of the schema missing from the section: {', '.join(missing)}")
    return "\n".join(out)


def schema_keys_missing(schema: dict, text: str) -> list[str]:
    """Every property name of the schema (any depth, any definition) that `text` never shows as `` `name` `` or
    `name = ` or `[...name]`: the section's own test, independent of how it was rendered."""
    names: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            for key, value in node.get("properties", {}).items():
                names.add(key)
                walk(value)
            for value in node.values():
                if isinstance(value, (dict, list)):
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return sorted(n for n in names if not re.search(rf"`{re.escape(n)}`|`{re.escape(n)} = |[.\[]{re.escape(n)}\]", text))


BLOCKS = {
    "sync_convergence": block_sync_convergence,
    "retry_storm_console": block_retry_storm_console,
    "retry_storm_table": block_retry_storm_table,
    "shipped_scenarios": block_shipped_scenarios,
    "sessions_table": block_sessions_table,
    "knee_table": block_knee_table,
    "latency_spike_compare": block_latency_spike_compare,
    "latency_spike_shares": block_latency_spike_shares,
    "capability_misroutes": block_capability_misroutes,
    "protection_latency_spike": block_protection_latency_spike,
    "protection_replica_crash": block_protection_replica_crash,
    "protection_replica_killed": block_protection_replica_killed,
    "token_storm": block_token_storm,
    "http_pool": block_http_pool,
    "dominance": block_dominance,
    "protection_candidates": block_protection_candidates,
    "scenario_keys": block_scenario_keys,
}


# ---------------------------------------------------------------------------------------------------------------------
# Markers.


def doc_files() -> list[Path]:
    """The files that may hold generated blocks: README.md and every docs/*.md, in that order."""
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def parse_blocks(text: str, where: str = "README.md") -> list[tuple[str, int, int]]:
    """(name, start of the content, end of the content) in character offsets, for every marked block of one file."""
    blocks = []
    open_name, open_line, content_start = None, 0, 0
    offset = 0
    for lineno, line in enumerate(text.splitlines(keepends=True), start=1):
        bare = line.rstrip("\r\n")
        start, end = START.match(bare), END.match(bare)
        if start:
            if open_name is not None:
                raise DocsError(f"{where}:{lineno}: block `{start['name']}` opens inside `{open_name}` "
                                f"(opened at line {open_line}, never closed)")
            open_name, open_line, content_start = start["name"], lineno, offset + len(line)
        elif end:
            if open_name is None:
                raise DocsError(f"{where}:{lineno}: `<!-- /generated: {end['name']} -->` closes no block")
            if end["name"] != open_name:
                raise DocsError(f"{where}:{lineno}: block `{open_name}` (line {open_line}) closed as `{end['name']}`")
            blocks.append((open_name, content_start, offset))
            open_name = None
        elif LOOSE.search(line):
            raise DocsError(
                f"{where}:{lineno}: malformed marker {bare.strip()!r}; expected "
                "`<!-- generated: NAME (just docs) -->` or `<!-- /generated: NAME -->` on a line of its own"
            )
        offset += len(line)
    if open_name is not None:
        raise DocsError(f"{where}:{open_line}: block `{open_name}` is never closed (`<!-- /generated: {open_name} -->`)")
    for name, _, _ in blocks:
        if name not in BLOCKS:
            raise DocsError(f"{where}: unknown block `{name}`; known: {', '.join(BLOCKS)}")
    return blocks


def read_docs() -> dict[Path, str]:
    """Every file's text, and a check of the markers across them: each block in exactly one place, none missing (a
    block that vanished would silently stop both its figures and the rules it enforces, e.g. `dominance`)."""
    # Bytes, not text mode: no newline translation, so everything outside the markers stays byte for byte.
    texts = {path: path.read_bytes().decode("utf-8") for path in doc_files()}
    seen: dict[str, str] = {}
    for path, text in texts.items():
        for name, _, _ in parse_blocks(text, rel(path)):
            if name in seen:
                where = "twice in " + rel(path) if seen[name] == rel(path) else f"in {seen[name]} and {rel(path)}"
                raise DocsError(f"block `{name}` appears {where}")
            seen[name] = rel(path)
    missing = [name for name in BLOCKS if name not in seen]
    if missing:
        raise DocsError(f"no file holds block{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                        "(README.md or docs/*.md; each block must appear once)")
    return texts


def render(text: str, path: Path, only: set[str] | None, ctx: Context) -> str:
    """One file with its blocks regenerated (those in `only`, or all); pictures are linked relative to `path`."""
    out, last = [], 0
    for name, start, end in parse_blocks(text, rel(path)):
        out.append(text[last:start])
        if only and name not in only:
            out.append(text[start:end])
        else:
            ctx.page = path
            try:
                body = BLOCKS[name](ctx).strip("\n")
            except DocsError as e:
                raise DocsError(f"block `{name}` ({rel(path)}): {e}") from None
            except Exception as e:  # a generator bug: say which block
                raise DocsError(f"block `{name}` ({rel(path)}) failed: {type(e).__name__}: {e}") from e
            # Blank lines around the content, so tables and fences never touch the comment lines.
            out.append(f"\n{body}\n\n")
        last = end
    out.append(text[last:])
    return "".join(out)


# ---------------------------------------------------------------------------------------------------------------------


def binary() -> str:
    given = os.environ.get("MCPSTORM")
    if given:
        path = Path(given)
        if not path.is_absolute():
            path = Path.cwd() / path
        if not path.exists():
            raise DocsError(f"MCPSTORM={given}: no such file")
        return str(path)
    cmd = ["cargo", "build", "--release", "--locked", "-p", "mcpstorm-sim", "--bin", "mcpstorm"]
    log(" ".join(cmd))
    if subprocess.run(cmd, cwd=ROOT).returncode != 0:
        raise DocsError("cargo build failed")
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if not target.is_absolute():
        target = ROOT / target
    return str(target / "release" / "mcpstorm")


def main() -> int:
    ap = argparse.ArgumentParser(description="Regenerate the docs' simulator figures (see the module docstring).")
    ap.add_argument("--check", action="store_true", help="exit 1 if README.md, docs/*.md or docs/images would change")
    ap.add_argument("--only", metavar="NAME[,NAME]", help="regenerate only these blocks")
    ap.add_argument("--list", action="store_true", help="print the block names and exit")
    args = ap.parse_args()
    if args.list:
        print("\n".join(BLOCKS))
        return 0
    try:
        only = None
        if args.only:
            only = {n.strip() for n in args.only.split(",") if n.strip()}
            unknown = sorted(only - BLOCKS.keys())
            if unknown:
                raise DocsError(f"--only: unknown block {', '.join(unknown)}; known: {', '.join(BLOCKS)}")
        texts = read_docs()  # bad markers fail before anything runs
        started = time.monotonic()
        ctx = Context(Sim())
        new = {path: render(text, path, only, ctx) for path, text in texts.items()}
        log(f"{ctx.sim.runs} run{'' if ctx.sim.runs == 1 else 's'} in {time.monotonic() - started:.1f} s")
    except DocsError as e:
        print(f"docs/generate.py: error: {e}", file=sys.stderr)
        return 2

    changed = [path for path in texts if new[path] != texts[path]]
    changed_images = [
        name for name, src in sorted(ctx.images.items())
        if not (IMAGES / name).exists() or (IMAGES / name).read_bytes() != src.read_bytes()
    ]
    if args.check:
        for path in changed:
            name = rel(path)
            diff = list(difflib.unified_diff(texts[path].splitlines(), new[path].splitlines(), f"{name} (committed)",
                                             f"{name} (generated)", lineterm="", n=1))
            print(f"{name}: {sum(1 for l in diff if l[:1] in '+-' and l[:3] not in ('+++', '---'))} lines differ",
                  file=sys.stderr)
            print("\n".join(diff[:80]) + ("\n..." if len(diff) > 80 else ""), file=sys.stderr)
        for name in changed_images:
            print(f"docs/images/{name}: differs from a fresh run", file=sys.stderr)
        if changed or changed_images:
            print("docs/generate.py: README/docs are stale: run `just docs` and commit", file=sys.stderr)
            return 1
        log("up to date")
        return 0

    for path in changed:
        path.write_bytes(new[path].encode("utf-8"))
        log(f"{rel(path)} rewritten")
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name in changed_images:
        shutil.copyfile(ctx.images[name], IMAGES / name)
        log(f"docs/images/{name} updated")
    if not changed and not changed_images:
        log("no change")
    return 0


if __name__ == "__main__":
    sys.exit(main())
