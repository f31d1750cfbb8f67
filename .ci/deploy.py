#!/usr/bin/env python3
"""Checks the Dockerfile and the deployment examples in docs/deploy/ against the binaries they run.

- The Dockerfile's final stages (those with an ENTRYPOINT) each copy one binary onto the runtime's PATH from a build
  stage that builds it (`cargo build --release --locked ... --bin NAME`), and run it as their ENTRYPOINT; its header
  names each one's image (`docker build [--target STAGE] -t IMAGE .`). Both binaries have a stage; the gateway's is the
  last (a plain `docker build` gives what an operator deploys) and holds nothing but its binary.
- Each manifest (but the alerting rules, alerts*.yml, which promtool checks) parses as YAML and runs a binary. Every
  `mcpstorm SUB ...` and `mcpstorm-gateway ...` it runs (a container's command, or its image's ENTRYPOINT with its
  args; a workflow step; a step shown in a comment) uses only flags that command's `--help` lists. A container runs
  the image that holds its binary; a `docker build` it shows is one the Dockerfile's header gives.
- A file that runs `compare` runs it sharded (`--shard K/N`, or JOB_COMPLETION_INDEX with a shard count) and runs
  `merge`: the commands sim/tests/sim/compare.rs runs as separate processes.
- A container that runs `mcpstorm-gateway --config FILE` (never the simulator's `mcpstorm gateway`, which would ship
  the simulator): FILE is a ConfigMap key mounted into it, and passes `mcpstorm validate` (the simulator's command
  reads gateway files; it reads no environment variable, so it runs without the secrets); every environment variable
  the config names is set in the container (the gateway refuses to start without one), and MCPSTORM_SESSION_KEY too
  with more than one replica; no Service of the file exposes its [admin] port; the pod's
  terminationGracePeriodSeconds exceeds its [listen] drain.

Usage: deploy.py PATH/TO/mcpstorm PATH/TO/mcpstorm-gateway. Exit 1 with one line per problem.
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
# `mcpstorm-gateway --FLAG ...` as a program run: the image, the Deployment and the Secret share its name, so only
# the name followed by a flag is a command (it has no subcommand, and --config is required).
GATEWAY_COMMAND = re.compile(r"(?:^|[\s/\"'\[])mcpstorm-gateway(\s+--.*)")
SIM, GATEWAY = "mcpstorm", "mcpstorm-gateway"
# `docker build [--target STAGE] -t IMAGE .` in the Dockerfile's header or a manifest's comment.
DOCKER_BUILD = re.compile(r"docker build (?:--target (\S+) )?-t (\S+) \.")
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


def stages(text):
    """The Dockerfile's stages in order: (name, base, instructions), continuation lines joined, comments dropped."""
    found = []
    for line in re.sub(r"\\\n", " ", text).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"FROM\s+(\S+)(?:\s+AS\s+(\S+))?", line, re.I)
        if m:
            found.append((m.group(2) or str(len(found)), m.group(1), []))
        elif found:
            found[-1][2].append(line)
    return found


def dockerfile(binaries, problem):
    """Checks the Dockerfile; returns {image: (binary, ENTRYPOINT)} of its final stages, and the `docker build`
    commands its header gives."""
    path = ROOT / "Dockerfile"
    if not path.exists():
        problem("Dockerfile", "missing")
        return {}, set()
    text = path.read_text(encoding="utf-8")
    all_stages = stages(text)
    by_name = {name: (base, lines) for name, base, lines in all_stages}
    builds = set(DOCKER_BUILD.findall(text))
    named = {target or all_stages[-1][0]: image for target, image in builds} if all_stages else {}

    def lineage(name):
        """The instructions of a stage and of the stages it is built FROM, nearest first."""
        while name in by_name:
            base, lines = by_name[name]
            yield from lines
            name = base

    images, shipped = {}, {}
    for name, _, lines in all_stages:
        entry = next((re.match(r"ENTRYPOINT\s+(\[.*\])$", x) for x in lines if x.startswith("ENTRYPOINT")), None)
        if entry is None and not any(x.startswith("ENTRYPOINT") for x in lines):
            continue
        where = f"Dockerfile: stage {name}"
        try:
            entrypoint = json.loads(entry.group(1)) if entry else None
        except ValueError:
            entrypoint = None
        binary = Path(entrypoint[0]).name if entrypoint else None
        if binary not in binaries:
            problem(where, f"ENTRYPOINT must run {' or '.join(binaries)} (as an exec-form list), found {entrypoint}")
            continue
        copy = next(
            (m for x in lines if (m := re.match(rf"COPY --from=(\S+) \S*/release/{re.escape(binary)} (\S+)$", x))),
            None,
        )
        dest = copy.group(2) if copy else ""
        if dest.rstrip("/") not in PATH_DIRS and str(Path(dest).parent) not in PATH_DIRS:
            problem(where, f"must copy target/release/{binary} from its build stage into a directory on PATH")
        elif not any(
            re.search(rf"--bin {re.escape(binary)}(\s|$)", x) and "--locked" in x and "--release" in x
            for x in lineage(copy.group(1))
            if re.match(r"RUN .*cargo build ", x)
        ):
            build = f"`RUN cargo build --release --locked ... --bin {binary}`"
            problem(where, f"its build stage {copy.group(1)} has no {build}")
        if binary == GATEWAY:
            if name != all_stages[-1][0]:
                problem(where, "the gateway's stage must be the last, so that a plain `docker build` gives it")
            extra = [x for x in lineage(name) if re.match(r"(COPY|ADD)\s", x) and x != copy.group(0)] if copy else []
            if extra:
                problem(where, f"the gateway's image must hold only its binary, found: {'; '.join(extra)}")
        if binary in shipped:
            problem(where, f"{binary} is already the binary of stage {shipped[binary]}")
        shipped[binary] = name
        if name not in named:
            build = f"`docker build --target {name} -t IMAGE .`"
            problem(where, f"the header must say how its image is built and named ({build})")
            continue
        images[named[name]] = (binary, entrypoint)
    for binary in binaries:
        if binary not in shipped:
            problem("Dockerfile", f"no final stage runs {binary}")
    return images, builds


def argv(container, images):
    """What a container runs: its command, or (from one of the Dockerfile's images) its ENTRYPOINT, then its args."""
    command = container.get("command") or images.get(container.get("image"), (None, None))[1] or []
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
            for table in ("headers", "env"):
                names += [v[4:] for v in replica.get(table, {}).values() if v.startswith("env:")]
    return names


def gateway(rel, sim, args, container, pod, docs, problem):
    """The checks of one container running `mcpstorm-gateway`; the config's name when validate accepted it."""
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
        checked = run(sim, "validate", f.name, env={k: v for k, v in os.environ.items() if k not in env})
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


def flags(binaries, helps, program, sub):
    """The flags `program [sub] --help` lists, asked once."""
    if (program, sub) not in helps:
        helps[program, sub] = set(FLAG.findall(run(binaries[program], *([sub] if sub else []), "--help").stdout))
    return helps[program, sub]


def manifest(file, binaries, subs, helps, images, builds, problem):
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
    lines += re.findall(r"#\s*(mcpstorm(?:-gateway)? .*)", text)  # steps shown in comments (the merge Job)
    for build in set(DOCKER_BUILD.findall(text)) - builds:
        shown = f"docker build {'--target ' + build[0] + ' ' if build[0] else ''}-t {build[1]} ."
        problem(rel, f"shows `{shown}`, which the Dockerfile's header does not give")
    validated = []
    for pod in (p for d in docs for p in pod_specs(d)):
        for container in pod["containers"]:
            args = argv(container, images)
            program = Path(args[0]).name if args else None
            if program not in binaries:
                continue
            lines.append(" ".join(args))
            where = f"container {container.get('name')}"
            image = container.get("image")
            holds = images.get(image, (None,))[0]
            if holds is None:
                problem(rel, f"{where} runs image {image}, none of the Dockerfile's: {', '.join(sorted(images))}")
            elif holds != program:
                problem(rel, f"{where} runs {program} from image {image}, which holds {holds}")
            if program == GATEWAY:
                validated.append(gateway(rel, binaries[SIM], args, container, pod, docs, problem))
            elif len(args) < 2 or args[1] not in subs:
                problem(rel, f"{where} runs no subcommand the binary has: {args}")
            elif args[1] == "gateway":
                problem(rel, f"{where} runs the simulator's `mcpstorm gateway`: deploy `{GATEWAY}` (its own image)")
    commands = {}
    for line in dict.fromkeys(lines):
        m = COMMAND.search(line)
        if m and m.group(1) in subs:
            commands.setdefault(m.group(1), []).append(line)
            for flag in FLAG.findall(m.group(2)):
                if flag not in flags(binaries, helps, SIM, m.group(1)):
                    problem(rel, f"`mcpstorm {m.group(1)}` has no flag {flag} (in: {line.strip()})")
        m = GATEWAY_COMMAND.search(line)
        if m:
            commands.setdefault(GATEWAY, []).append(line)
            for flag in FLAG.findall(m.group(1)):
                if flag not in flags(binaries, helps, GATEWAY, None):
                    problem(rel, f"`{GATEWAY}` has no flag {flag} (in: {line.strip()})")
    if not commands:
        problem(rel, f"runs no `mcpstorm` or `{GATEWAY}` command")
    if "compare" in commands:
        by_index = "JOB_COMPLETION_INDEX" in text and "MCPSTORM_SHARD_COUNT" in text
        if not by_index and not any("--shard" in line for line in commands["compare"]):
            problem(rel, "runs `mcpstorm compare` unsharded")
        if "merge" not in commands:
            problem(rel, "runs `mcpstorm compare` sharded but no `mcpstorm merge`")
    if problem.count == before:
        valid = "".join(f"; {name} passes `mcpstorm validate`" for name in validated)
        ran = ", ".join(sorted(c if c == GATEWAY else f"mcpstorm {c}" for c in commands))
        print(f"{rel}: parses; runs {ran} with flags the binaries know{valid}")


def main() -> int:
    binaries = {Path(p).name: p for p in sys.argv[1:]}
    if len(sys.argv) != 3 or set(binaries) != {SIM, GATEWAY}:
        print(__doc__)
        return 2
    problem = Problems()
    subs = subcommands(binaries[SIM])
    images, builds = dockerfile(binaries, problem)
    if problem.count == 0:
        for image, (binary, entrypoint) in images.items():
            print(f"Dockerfile: builds {binary} into {image}, ENTRYPOINT {entrypoint}")
    # The alerting rules (alerts*.yml) are Prometheus's, checked by promtool in .ci/run.
    files = sorted(f for f in (ROOT / "docs/deploy").glob("*.y*ml") if not f.name.startswith("alerts"))
    if not files:
        problem("docs/deploy", "no manifests")
    helps = {}
    for file in files:
        manifest(file, binaries, subs, helps, images, builds, problem)
    return 1 if problem.count else 0


if __name__ == "__main__":
    sys.exit(main())
