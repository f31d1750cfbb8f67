#!/usr/bin/env python3
"""Checks the Dockerfile and the deployment examples in docs/deploy/ against the binary they run.

- The Dockerfile builds the binary (`cargo build ... --bin NAME`), copies it onto the runtime's PATH, runs it as its
  ENTRYPOINT, and names its image in its header (`docker build -t IMAGE .`).
- Each manifest (but the alerting rules, alerts*.yml, which promtool checks) parses as YAML and runs the binary.
  Every `mcpstorm SUB ...` it runs (a container's command, or the ENTRYPOINT with its args; a workflow step; a step
  shown in a comment) uses only flags `mcpstorm SUB --help` lists. A container that runs it uses IMAGE.
- A file that runs `compare` runs it sharded (`--shard K/N`, or JOB_COMPLETION_INDEX with a shard count) and runs
  `merge`: the commands sim/tests/sim/compare.rs runs as separate processes.
- A container that runs `mcpstorm gateway --config FILE`: FILE is a ConfigMap key mounted into it, and passes
  `mcpstorm validate` (which reads no environment variable, so it runs without the secrets); every environment
  variable the config names is set in the container (the gateway refuses to start without one), and
  MCPSTORM_SESSION_KEY too with more than one replica; no Service of the file exposes its [admin] port; the pod's
  terminationGracePeriodSeconds exceeds its [listen] drain.

Usage: deploy.py PATH/TO/mcpstorm. Exit 1 with one line per problem.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
# `mcpstorm SUB` as a program run (`bin/mcpstorm` too), not `mcpstorm-redis` or prose.
COMMAND = re.compile(r"(?:^|[\s/\"'\[])mcpstorm\s+([a-z][a-z-]*)(.*)")
# What Debian's images have on PATH.
PATH_DIRS = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
# Kubernetes's default when a pod spec does not say.
DEFAULT_GRACE_S = 30


class Problems:
    """Problems found so far, printed as they are found, each prefixed with the file it is in."""

    def __init__(self):
        self.count = 0

    def __call__(self, where, message):
        print(f"{where}: {message}")
        self.count += 1


def run(binary, *args, env=None):
    return subprocess.run([binary, *args], capture_output=True, text=True, env=env)


def subcommands(binary):
    """The names under `Commands:` in `mcpstorm --help`."""
    out = run(binary, "--help").stdout
    listed = out.split("Commands:", 1)[1].split("\n\n", 1)[0]
    return {line.split()[0] for line in listed.splitlines() if line.strip()} - {"help"}


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


def pod_specs(node):
    """Every pod spec (a mapping with `containers`) in a YAML document."""
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            yield node
        for v in node.values():
            yield from pod_specs(v)
    elif isinstance(node, list):
        for x in node:
            yield from pod_specs(x)


def seconds(duration):
    """A duration as the config spells it ("20s", "1m30s", "500ms") in seconds."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
    return sum(float(n) * units[u] for n, u in re.findall(r"([\d.]+)(ms|us|ns|d|h|m|s)", duration))


def dockerfile(binary, problem):
    """Checks the Dockerfile; returns its image name and ENTRYPOINT (None when it has none)."""
    path = ROOT / "Dockerfile"
    if not path.exists():
        problem("Dockerfile", "missing")
        return None, None
    text = path.read_text(encoding="utf-8")
    name = Path(binary).name
    entry = re.search(r"^ENTRYPOINT\s+(\[.*\])\s*$", text, re.M)
    try:
        entrypoint = json.loads(entry.group(1)) if entry else None
    except ValueError:
        entrypoint = None
    if not entrypoint or Path(entrypoint[0]).name != name:
        problem("Dockerfile", f"ENTRYPOINT must run {name} (as an exec-form list), found {entrypoint}")
    build = re.search(r"^RUN .*cargo build (.*)$", text, re.M)
    if not build or not re.search(rf"--bin {name}(\s|$)", build.group(1)) or "--locked" not in build.group(1):
        problem("Dockerfile", f"no `RUN cargo build --release --locked ... --bin {name}`")
    copy = re.search(rf"^COPY --from=\S+ \S*/release/{name} (\S+)$", text, re.M)
    dest = copy.group(1) if copy else ""
    if dest.rstrip("/") not in PATH_DIRS and str(Path(dest).parent) not in PATH_DIRS:
        problem("Dockerfile", f"the runtime stage must copy target/release/{name} into a directory on PATH")
    image = re.search(r"docker build -t (\S+) \.", text)
    if not image:
        problem("Dockerfile", "its header must say how the image is built and named (`docker build -t IMAGE .`)")
    return (image.group(1) if image else None), entrypoint


def argv(container, image, entrypoint):
    """What a container runs: its command, or (from the Dockerfile's image) its ENTRYPOINT, then its args."""
    command = container.get("command") or (entrypoint if container.get("image") == image else None) or []
    return [str(x) for x in command + (container.get("args") or [])]


def flag_value(args, flag):
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def mounted_config(path, container, pod, docs):
    """The text of the ConfigMap key mounted at `path` in `container` and its name (`configmap/NAME/KEY`), or None."""
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    configmaps = {d["metadata"]["name"]: d for d in docs if isinstance(d, dict) and d.get("kind") == "ConfigMap"}
    for mount in container.get("volumeMounts") or []:
        root = mount.get("mountPath", "").rstrip("/")
        key = mount.get("subPath") if path == root else path[len(root) + 1 :] if path.startswith(root + "/") else None
        source = (volumes.get(mount.get("name")) or {}).get("configMap") or {}
        data = (configmaps.get(source.get("name")) or {}).get("data") or {}
        if key in data:
            return data[key], f"configmap/{source['name']}/{key}"
    return None


def env_names(config):
    """The environment variables a gateway config makes the process read at start."""
    names = list(config.get("listen", {}).get("agent_tokens_env", []))
    if "admin" in config:
        names.append(config["admin"].get("token_env", "MCPSTORM_ADMIN_TOKEN"))
    sync = config.get("gateway", {}).get("sync", {})
    if "password_env" in sync:
        names.append(sync["password_env"])
    for server in config.get("servers", []):
        for replica in server.get("replicas", []):
            names += [v[4:] for v in replica.get("headers", {}).values() if v.startswith("env:")]
    return names


def gateway(rel, binary, args, container, pod, docs, problem):
    """The checks of one container running `mcpstorm gateway`; the config's name when validate accepted it."""
    where = f"{rel}: container {container.get('name')}"
    path = flag_value(args, "--config")
    found = mounted_config(path, container, pod, docs) if path else None
    if found is None:
        problem(where, f"--config {path} is not a ConfigMap key mounted into the container" if path else "no --config")
        return None
    text, name = found
    env = {e.get("name") for e in container.get("env") or []}
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    try:
        # Without the container's variables: validate must not need the secrets.
        checked = run(binary, "validate", f.name, env={k: v for k, v in os.environ.items() if k not in env})
    finally:
        os.unlink(f.name)
    if checked.returncode != 0 or not checked.stdout.startswith("ok: gateway config"):
        detail = (checked.stdout + checked.stderr).strip().replace(f.name, f"{rel}: {name}")
        problem(where, f"`mcpstorm validate` refuses {name} (exit {checked.returncode}):\n{detail}")
        return None
    config = tomllib.loads(text)
    deployment = next((d for d in docs if isinstance(d, dict) and pod in pod_specs(d)), {})
    replicas = (deployment.get("spec") or {}).get("replicas", 1)
    needed = env_names(config) + (["MCPSTORM_SESSION_KEY"] if replicas > 1 else [])
    if not container.get("envFrom"):
        for var in needed:
            if var not in env:
                problem(where, f"the gateway needs the environment variable {var}, which the container does not set")
    if "admin" in config:
        admin = int(config["admin"].get("listen", "127.0.0.1:8849").rsplit(":", 1)[1])
        ports = {p.get("name"): p.get("containerPort") for p in container.get("ports") or []}
        for service in (d for d in docs if isinstance(d, dict) and d.get("kind") == "Service"):
            for port in service["spec"].get("ports", []):
                target = port.get("targetPort", port.get("port"))
                if ports.get(target, target) == admin:
                    problem(rel, f"Service {service['metadata']['name']} exposes the admin port {admin}")
    drain = seconds(config.get("listen", {}).get("drain", "10s"))
    grace = pod.get("terminationGracePeriodSeconds", DEFAULT_GRACE_S)
    if grace <= drain:
        problem(where, f"terminationGracePeriodSeconds {grace} must exceed [listen] drain ({drain:g} s)")
    return name


def manifest(file, binary, subs, helps, image, entrypoint, problem):
    """The checks of one file of docs/deploy/."""
    before = problem.count
    text = file.read_text(encoding="utf-8")
    rel = file.relative_to(ROOT)
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        problem(rel, f"not valid YAML: {e}")
        return
    lines = [line for d in docs for s in strings(d) for line in s.splitlines()]
    lines += re.findall(r"#\s*(mcpstorm .*)", text)  # steps shown in comments (the merge Job)
    validated = []
    for pod in (p for d in docs for p in pod_specs(d)):
        for container in pod["containers"]:
            args = argv(container, image, entrypoint)
            if not args or Path(args[0]).name != Path(binary).name:
                continue
            lines.append(" ".join(args))
            if image and container.get("image") != image:
                problem(rel, f"container {container.get('name')} runs image {container.get('image')}, not {image}")
            if len(args) < 2 or args[1] not in subs:
                problem(rel, f"container {container.get('name')} runs no subcommand the binary has: {args}")
            elif args[1] == "gateway":
                validated.append(gateway(rel, binary, args, container, pod, docs, problem))
    commands = {}
    for line in dict.fromkeys(lines):
        m = COMMAND.search(line)
        if m and m.group(1) in subs:
            commands.setdefault(m.group(1), []).append(line)
            if m.group(1) not in helps:
                helps[m.group(1)] = set(FLAG.findall(run(binary, m.group(1), "--help").stdout))
            for flag in FLAG.findall(m.group(2)):
                if flag not in helps[m.group(1)]:
                    problem(rel, f"`mcpstorm {m.group(1)}` has no flag {flag} (in: {line.strip()})")
    if not commands:
        problem(rel, "runs no `mcpstorm` command")
    if "compare" in commands:
        by_index = "JOB_COMPLETION_INDEX" in text and "MCPSTORM_SHARD_COUNT" in text
        if not by_index and not any("--shard" in line for line in commands["compare"]):
            problem(rel, "runs `mcpstorm compare` unsharded")
        if "merge" not in commands:
            problem(rel, "runs `mcpstorm compare` sharded but no `mcpstorm merge`")
    if problem.count == before:
        valid = "".join(f"; {name} passes `mcpstorm validate`" for name in validated)
        print(f"{rel}: parses; runs {', '.join(sorted(commands))} with flags the binary knows{valid}")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    problem = Problems()
    subs = subcommands(binary)
    image, entrypoint = dockerfile(binary, problem)
    if problem.count == 0:
        print(f"Dockerfile: builds {Path(binary).name} into {image}, ENTRYPOINT {entrypoint}")
    # The alerting rules (alerts*.yml) are Prometheus's, checked by promtool in .ci/run.
    files = sorted(f for f in (ROOT / "docs/deploy").glob("*.y*ml") if not f.name.startswith("alerts"))
    if not files:
        problem("docs/deploy", "no manifests")
    helps = {}
    for file in files:
        manifest(file, binary, subs, helps, image, entrypoint, problem)
    return 1 if problem.count else 0


if __name__ == "__main__":
    sys.exit(main())
