"""Checks, in the container files, what building and running the image cannot show.

scripts/container-test builds docker/Dockerfile and runs the image, docker/compose.yaml and the sidecar for real, so
what they copy, build, run, publish and report is tested there. What a run cannot show is a setting the gateway does
not know: an unknown environment variable is silently ignored. So this checks that every setting in the Dockerfile's
ENV, in compose `environment:`, and in the Kubernetes examples of docs/container.md (which nothing here runs) and
deploy/kubernetes.yaml (env names and args) is one `convex-gateway --help` documents (the help names each option's
environment variable).

Usage: check-container-files.py <convex-gateway binary>
"""

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
failures: list[str] = []


def fail(message: str) -> None:
    failures.append(message)


def main() -> int:
    binary = sys.argv[1]
    help_text = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30).stdout
    if "--port" not in help_text:
        print(f"could not read `{binary} --help`", file=sys.stderr)
        return 1
    known_flags = set(re.findall(r"(--[a-z0-9-]+)", help_text))
    known_env = set(re.findall(r"\b((?:GATEWAY|CONVEX)_[A-Z0-9_]+|LOG_LEVEL)\b", help_text))

    # Dockerfile ENV (continuation lines joined) and flags in ENTRYPOINT/CMD.
    dockerfile = re.sub(r"\\\n\s*", " ", (ROOT / "docker" / "Dockerfile").read_text())
    env_names: set[str] = set()
    for line in dockerfile.splitlines():
        keyword, _, rest = line.strip().partition(" ")
        if keyword.upper() == "ENV":
            env_names.update(name for name, _value in re.findall(r"([A-Z_][A-Z0-9_]*)=(\S+)", rest))
        elif keyword.upper() in ("ENTRYPOINT", "CMD"):
            for word in re.findall(r'"(--[a-z0-9-]+)', rest):
                if word not in known_flags:
                    fail(f"{keyword} uses {word}, which convex-gateway --help does not list")

    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    env_names.update(compose["services"]["gateway"].get("environment", {}).keys())

    page = (ROOT / "docs" / "container.md").read_text()
    k8s_blocks = [block for block in re.findall(r"```yaml\n(.*?)```", page, re.S) if "kind: " in block]
    if not k8s_blocks:
        fail("docs/container.md has no Kubernetes example")
    sources = [("docs/container.md", block) for block in k8s_blocks]
    # deploy/kubernetes.yaml: scripts/container-test runs it, but with CONVEX_URL replaced, so check its names here too.
    sources.append(("deploy/kubernetes.yaml", (ROOT / "deploy" / "kubernetes.yaml").read_text()))
    for source, block in sources:
        for document in yaml.safe_load_all(block):
            if not document:
                continue
            spec = document.get("spec", {}).get("template", {}).get("spec", document.get("spec", {}))
            for container in spec.get("initContainers", []) + spec.get("containers", []):
                if "convex-gateway" not in str(container.get("image", "")):
                    continue
                for item in container.get("env", []):
                    env_names.add(item["name"])
                for word in container.get("args", []):
                    if word.startswith("--") and word.split("=")[0] not in known_flags:
                        fail(f"{source}: Kubernetes args use {word}, which convex-gateway --help does not list")

    for name in sorted(env_names):
        if name not in known_env:
            fail(f"setting {name} is not one convex-gateway knows (not in --help)")

    for message in failures:
        print(f"container files: {message}", file=sys.stderr)
    print(f"container files: {len(env_names)} settings checked against --help, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
