#!/usr/bin/env python3
"""Renders every shipped scenario's report.html in headless Chromium and fails on what a reader would see go wrong.

For each scenarios/*.toml, `mcpstorm sim` runs the real scenario (no shortening) into target/html-check/<name>/
(two at a time, one per core); a sweep's rows' pages are rendered too, as is a contrast run's, and the pages of a
comparison and of a swarm of the smoke scenario (see OTHERS). Then one headless Chromium, driven over the DevTools
protocol on a pipe (`--remote-debugging-pipe`, no port and no dependency), opens every page and fails when:

- the page throws, or logs an error or warning to the console (a broken inline script, a refused resource);
- the page makes any request but for itself (a font, a script, a stylesheet or an image from anywhere else);
- the page is blank: no text in its body, or a screenshot of a single colour;
- a page other than the swarm's (a table of seeds) inlines no plot;
- a run's page has a Calls section without a waterfall (unless it made no calls), or a waterfall without a visible
  bar.

The screenshots are kept in target/html-check/screenshots/ (1280 px wide, the first 2000 px of each page).

Usage:
    python3 .ci/html_check.py [--binary target/release/mcpstorm] [--chromium chromium] [--out target/html-check]
                              [--only smoke,retry_storm]

Exit codes: 0 every page rendered clean; 1 a page failed (each failure is listed); 2 a run or Chromium itself
failed. Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 1280, 2000
# The longest a page may take to load and draw, and a whole run of Chromium's answers, in seconds.
PAGE_TIMEOUT = 60


class Broken(Exception):
    """Chromium or a run did not do its part: exit 2."""


# Besides every scenario's run: a comparison's page and a swarm's (one that fails on every seed, so that its
# failures section, links and replay lines are rendered too). Each: a name, the arguments, and its exit codes.
OTHERS = [
    ("compare", ["compare", "scenarios/smoke.toml", "--vary", "gateway.profile", "--values", "default,naive",
                 "--seeds", "3"], (0,)),
    ("swarm", ["swarm", "scenarios/smoke.toml", "--seeds", "2", "--set", "duration=40s", "--checks", "--set",
               "checks.p99_ms=1", "--shrink-runs", "1"], (1,)),
]


def run(binary: Path, name: str, args: list[str], codes: tuple[int, ...], out: Path) -> list[Path]:
    """Runs one command into `out`; returns its report pages (a sweep's rows and a contrast run have their own)."""
    proc = subprocess.run([str(binary), *args, "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode not in codes:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-10:])
        raise Broken(f"{name}: mcpstorm {args[0]} exited {proc.returncode}\n{tail}")
    pages = [out / "report.html"] + sorted(out.glob("*=*/report.html")) + sorted(out.glob("contrast-*/report.html"))
    if not pages[0].is_file():
        raise Broken(f"{name}: no report.html in {out}")
    return pages


class Browser:
    """One headless Chromium, spoken to over its DevTools pipe (fd 3 in, fd 4 out, messages ending in NUL)."""

    def __init__(self, chromium: str):
        self.profile = tempfile.mkdtemp(prefix="html-check-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # Chromium reads commands on fd 3 and writes on fd 4: the child moves the pipe ends there (through fresh
        # numbers first, in case either end is already 3 or 4). preexec_fn runs before the child closes the fds
        # not passed, so 3 and 4 are the ones passed.
        def fds() -> None:
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-pipe",
                "--no-first-run",
                "--no-default-browser-check",
                "--hide-scrollbars",
                f"--user-data-dir={self.profile}",
                f"--window-size={WIDTH},{HEIGHT}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=fds,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict] = []

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Broken:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Broken("Chromium did not answer in time")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if ready:
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise Broken(f"Chromium closed its pipe (exit {self.proc.poll()})")
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Sends a command and returns its result; events that arrive meanwhile are kept in `events`."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + PAGE_TIMEOUT
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise Broken(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str) -> None:
        deadline = time.monotonic() + PAGE_TIMEOUT
        while not any(e.get("method") == method and e.get("sessionId") == session for e in self.events):
            self.events.append(self._read(deadline))

    def render(self, page: Path, screenshot: Path) -> list[str]:
        """Opens `page`, saves a screenshot, and returns what is wrong with it."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        self.events = []
        url = page.resolve().as_uri()
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired", session)
        # How much text the page shows, and how many plots it inlines.
        chars, plots = self.send(
            "Runtime.evaluate",
            {"expression": "[document.body.innerText.trim().length, document.querySelectorAll('svg').length]",
             "returnByValue": True},
            session=session,
        )["result"]["value"]
        # A run page's waterfalls (sim/src/report/waterfall.rs): how many, and how many are drawn with a visible bar.
        waterfalls = self.send(
            "Runtime.evaluate",
            {"expression": WATERFALLS, "returnByValue": True},
            session=session,
        )["result"].get("value")
        shot = self.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"]
        png = base64.b64decode(shot)
        screenshot.write_bytes(png)
        problems = [p for e in self.events if e.get("sessionId") == session for p in event_problems(e, url)]
        if chars == 0:
            problems.append("the page has no text")
        if plots == 0 and page.parent.name != "swarm":
            problems.append("the page inlines no plot")
        if waterfalls is not None:
            shown, drawn, no_calls = waterfalls
            if shown == 0 and not no_calls:
                problems.append("the page's Calls section shows no waterfall")
            if drawn < shown:
                problems.append(f"{shown - drawn} of {shown} waterfalls render no visible bar")
        if single_colour(png):
            problems.append(f"the screenshot ({screenshot}) is a single colour")
        self.send("Target.closeTarget", {"targetId": target})
        return problems


# null on a page without a Calls section; else [waterfalls, waterfalls drawn with a bar wider than 0, no calls].
WATERFALLS = """(() => {
  if (!document.getElementById('waterfall')) return null;
  const svgs = [...document.querySelectorAll('svg.waterfall')];
  const drawn = svgs.filter(s => {
    const box = s.getBoundingClientRect();
    const bars = [...s.querySelectorAll('rect')].filter(r => r.querySelector('title'));
    return box.width > 0 && box.height > 0 && bars.some(b => b.getBoundingClientRect().width > 0);
  });
  return [svgs.length, drawn.length, document.body.innerText.includes('No calls were made.')];
})()"""


def event_problems(event: dict, url: str) -> list[str]:
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.exceptionThrown":
        details = params["exceptionDetails"]
        return [f"uncaught exception: {details.get('exception', {}).get('description') or details.get('text')}"]
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
        args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
        return [f"console {params['type']}: {args}"]
    if method == "Log.entryAdded" and params["entry"].get("level") in ("error", "warning"):
        entry = params["entry"]
        return [f"console {entry['level']} ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}"]
    if method == "Network.requestWillBeSent":
        requested = params["request"]["url"]
        if requested != url and not requested.startswith("data:"):
            return [f"a request outside the page: {requested}"]
    return []


def single_colour(png: bytes) -> bool:
    """Whether the PNG is one colour: its decompressed scanlines then hold a handful of byte values (the colour's,
    the filter bytes and the zero differences a filter leaves), where any drawn page holds hundreds."""
    pos, idat = 8, b""
    while pos < len(png):
        length = int.from_bytes(png[pos : pos + 4], "big")
        if png[pos + 4 : pos + 8] == b"IDAT":
            idat += png[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return len(set(zlib.decompress(idat))) <= 8


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=Path, default=ROOT / "target" / "release" / "mcpstorm")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    parser.add_argument("--chromium", default=chromium)
    parser.add_argument("--out", type=Path, default=ROOT / "target" / "html-check")
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    scenarios = [p for p in sorted((ROOT / "scenarios").glob("*.toml")) if not only or p.stem in only]
    if not scenarios:
        print("no scenarios to render", file=sys.stderr)
        return 2
    started = time.monotonic()
    shutil.rmtree(args.out, ignore_errors=True)
    shots = args.out / "screenshots"
    shots.mkdir(parents=True)
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            # 1 is a failed check for sim: the report is written all the same, and is what is looked at here.
            jobs = [(s.stem, ["sim", str(s.relative_to(ROOT))], (0, 1)) for s in scenarios]
            jobs += [job for job in OTHERS if not only]
            runs = list(pool.map(lambda j: run(args.binary, *j, args.out / j[0]), jobs))
        pages = [page for found in runs for page in found]
        print(f"{len(jobs)} runs in {time.monotonic() - started:.0f} s; rendering {len(pages)} pages")
        browser = Browser(args.chromium)
        failures = 0
        try:
            for page in pages:
                name = page.relative_to(args.out)
                shot = shots / f"{str(name.parent).replace('/', '_')}.png"
                problems = browser.render(page, shot)
                print(f"  {'ok  ' if not problems else 'FAIL'} {name}")
                for p in problems:
                    print(f"       {p}")
                failures += bool(problems)
        finally:
            browser.close()
    except Broken as e:
        print(f"html check: {e}", file=sys.stderr)
        return 2
    print(f"html check: {len(pages) - failures} of {len(pages)} pages clean ({time.monotonic() - started:.0f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
