"""Checks that docker/Dockerfile, docker/compose.yaml and the README's Kubernetes example only reference what exists.

No Docker engine runs in CI, so the image is never built there. Instead this reads the files and checks:
  * every COPY source (build context = repository root) exists;
  * the binary the image runs is the package's executable product and the build stage builds that product;
  * every flag in ENTRYPOINT/CMD and every setting in ENV, compose `environment:` and the Kubernetes `env:` is one
    `convex-gateway --help` documents (the help names each option's environment variable);
  * the HEALTHCHECK asks /healthz and EXPOSE matches GATEWAY_PORT.

Usage: check-container-files.py <convex-gateway binary>
"""

import json
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

    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    # Join continuation lines.
    logical = re.sub(r"\\\n\s*", " ", dockerfile)
    instructions = [line.strip() for line in logical.splitlines() if line.strip() and not line.strip().startswith("#")]

    products = re.findall(r'\.executable\(name: "([^"]+)"', (ROOT / "Package.swift").read_text())
    if "convex-gateway" not in products:
        fail("Package.swift has no executable product convex-gateway")

    env_names: set[str] = set()
    exposed = None
    for line in instructions:
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "COPY":
            parts = [p for p in rest.split() if not p.startswith("--")]
            sources, _destination = parts[:-1], parts[-1]
            if "--from=" in rest:
                for source in sources:
                    if Path(source).name not in products:
                        fail(f"COPY --from copies {source}, which is not an executable product ({products})")
            else:
                for source in sources:
                    if not (ROOT / source).exists():
                        fail(f"COPY source {source} does not exist in the repository")
        elif keyword == "ENV":
            for name, _value in re.findall(r"([A-Z_][A-Z0-9_]*)=(\S+)", rest):
                env_names.add(name)
        elif keyword == "EXPOSE":
            exposed = rest.split("/")[0].strip()
        elif keyword in ("ENTRYPOINT", "CMD"):
            words = json.loads(rest)
            for word in words:
                if word.startswith("--") and word.split("=")[0] not in known_flags:
                    fail(f"{keyword} uses {word}, which convex-gateway --help does not list")
            if keyword == "ENTRYPOINT" and Path(words[0]).name not in products:
                fail(f"ENTRYPOINT runs {words[0]}, not an executable product")
        elif keyword == "HEALTHCHECK":
            if "/healthz" not in rest:
                fail("HEALTHCHECK does not ask /healthz")
        elif keyword == "RUN" and "swift build" in rest:
            if "--product convex-gateway" not in rest or "--static-swift-stdlib" not in rest:
                fail("the build stage must build --product convex-gateway with --static-swift-stdlib")
    if not any(line.upper().startswith("USER ") and not line.split()[1].startswith("0") and "root" not in line
               for line in instructions):
        fail("the image must run as a non-root USER")
    if not any(line.upper().startswith("HEALTHCHECK") for line in instructions):
        fail("the image has no HEALTHCHECK")
    if "libmicrohttpd12" not in dockerfile or "libmicrohttpd-dev" not in dockerfile:
        fail("the build stage needs libmicrohttpd-dev and the runtime libmicrohttpd12")

    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    gateway = compose["services"]["gateway"]
    build = gateway.get("build", {})
    context = (ROOT / "docker" / build.get("context", ".")).resolve()
    if not (context / build.get("dockerfile", "Dockerfile")).exists():
        fail(f"compose builds {build} which does not exist")
    env_names.update(gateway.get("environment", {}).keys())

    readme = (ROOT / "README.md").read_text()
    k8s_blocks = [block for block in re.findall(r"```yaml\n(.*?)```", readme, re.S) if "kind: " in block]
    if not k8s_blocks:
        fail("README has no Kubernetes example")
    for block in k8s_blocks:
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
                        fail(f"README Kubernetes args use {word}, which convex-gateway --help does not list")

    for name in sorted(env_names):
        if name not in known_env:
            fail(f"setting {name} is not one convex-gateway knows (not in --help)")
    if exposed != "8080":
        fail(f"EXPOSE {exposed} does not match the image's GATEWAY_PORT 8080")

    for message in failures:
        print(f"container files: {message}", file=sys.stderr)
    checked = len(env_names)
    print(f"container files: {checked} settings and the Dockerfile's references checked, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
