#!/usr/bin/env python3
"""Checks a gateway build against Benchmarks/thresholds.json: counts that do not move with a busy machine.

Measured on a gateway process (LD_PRELOAD=Benchmarks/alloc-count/alloc_count.so counts its heap allocations and its
calls that write bytes out) that reaches a deployment in a second process, the same binary on its embedded
deployment:

- allocations per hot `GET /query` (the same query asked again: the answer is prepared once), at `--log-level notice`,
  and again at `info`, the default, where the access log writes a line per request;
- allocations, and calls that write to a socket, per event delivered to a stream, while one change at a time fans out to STREAMS
  single-subscription streams (Benchmarks/sse-fanout/sse_fanout.c). Two runs, of ROUNDS_SHORT and ROUNDS_LONG
  changes, and the difference between them divided by the extra events: opening and closing the streams cancel out;
- user-space bytes per idle stream (the process's resident memory, before and after the streams open).

The counts differ between a debug and a release build: the file holds a set for each, and the binary's path says
which applies (a path with /release/ in it is the release build's). The total number of system calls is not a
figure: it moves with timing (how often an event loop finds nothing to do); the writes do not. Instructions
are not counted either: this machine kind has no hardware counters (`perf stat -e instructions` reports
"not supported") and valgrind 3.19 stops with an internal error on the gateway's threads.

Each figure has a ceiling in the thresholds file. The script prints every figure beside its ceiling and exits 1 when
one is above it. `--write` records the figures measured now as the new "recorded" values (ceilings stay as they are:
they are set by hand, with the margin their spread needs).

Usage: Benchmarks/check_thresholds.py GATEWAY_BINARY [--thresholds FILE] [--write]
Needs gcc and libmicrohttpd; scripts/check-performance installs them and builds the binary.
"""

import argparse
import http.client
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS = ROOT / ".build-release"
DEPLOYMENT_PORT, DEPLOYMENT_LOCAL_PORT, GATEWAY_PORT = 18190, 18191, 18192
STREAMS = 1000
ROUNDS_SHORT, ROUNDS_LONG = 2, 6
HOT_GETS = 2000
STREAM_PATH = "/subscribe/conformance:counter?name=thresholds"
MUTATION_PATH = "/mutation/conformance:increment"
MUTATION_BODY = '{"name":"thresholds"}'


def build_tools():
    TOOLS.mkdir(exist_ok=True)
    subprocess.run(["gcc", "-O2", "-Wall", "-shared", "-fPIC", "-o", str(TOOLS / "alloc_count.so"),
                    str(ROOT / "Benchmarks/alloc-count/alloc_count.c"), "-ldl"], check=True)
    subprocess.run(["gcc", "-O2", "-Wall", "-o", str(TOOLS / "sse-fanout"),
                    str(ROOT / "Benchmarks/sse-fanout/sse_fanout.c")], check=True)


def wait_ready(port, process, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"the process on port {port} exited with status {process.returncode}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/readyz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit(f"the process on port {port} did not answer /readyz within {seconds} s")


class CountedGateway:
    """The measured gateway, with the allocation counter loaded."""

    def __init__(self, binary, workdir, log_level="notice"):
        self.count_file = os.path.join(workdir, "allocations.txt")
        # Every stream comes from loopback, one address: its share of the streams is the whole limit here.
        environment = dict(os.environ, LD_PRELOAD=str(TOOLS / "alloc_count.so"), ALLOC_COUNT_FILE=self.count_file,
                           GATEWAY_MAX_STREAMS_PER_CLIENT="1000000",
                           GATEWAY_MAX_CONNECTIONS_PER_CLIENT="1000000")
        self.log = open(os.path.join(workdir, f"gateway-{log_level}.log"), "w")
        self.process = subprocess.Popen(
            [binary, "--convex-url", f"http://127.0.0.1:{DEPLOYMENT_LOCAL_PORT}", "--port", str(GATEWAY_PORT),
             "--threads", "2", "--heartbeat-seconds", "3600", "--max-connections", str(STREAMS + 500),
             "--log-level", log_level],
            env=environment, stdout=self.log, stderr=subprocess.STDOUT)
        wait_ready(GATEWAY_PORT, self.process)

    def counts(self):
        """(allocations, writes) so far."""
        try:
            os.unlink(self.count_file)
        except FileNotFoundError:
            pass
        os.kill(self.process.pid, signal.SIGUSR2)
        for _ in range(200):
            try:
                text = pathlib.Path(self.count_file).read_text()
                if text.endswith("\n"):
                    found = re.search(r"allocations (\d+) frees \d+ writes (\d+)", text)
                    return int(found.group(1)), int(found.group(2))
            except FileNotFoundError:
                pass
            time.sleep(0.01)
        sys.exit("the allocation counter did not answer (is alloc_count.so loaded?)")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def hot_get_allocations(gateway):
    connection = http.client.HTTPConnection("127.0.0.1", GATEWAY_PORT, timeout=10)

    def ask(times):
        for _ in range(times):
            connection.request("GET", "/query/conformance:counter?name=hot")
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                sys.exit(f"GET /query answered {response.status}")

    ask(50)
    before = gateway.counts()[0]
    ask(HOT_GETS)
    return (gateway.counts()[0] - before) / HOT_GETS


def quiet(gateway):
    """Waits until the gateway holds no stream (the last run's have gone) and its allocations stand still."""
    previous = gateway.counts()
    for _ in range(100):
        time.sleep(0.3)
        now = gateway.counts()
        if now[0] - previous[0] < 50:
            return now
        previous = now
    return previous


def fanout_run(gateway, rounds):
    """One sse_fanout run of `rounds` changes to STREAMS streams: (allocations, writes, KiB per idle stream)."""
    before = quiet(gateway)
    run = subprocess.run(
        [str(TOOLS / "sse-fanout"), str(GATEWAY_PORT), str(gateway.process.pid), str(STREAMS), str(rounds),
         STREAM_PATH, MUTATION_PATH, MUTATION_BODY],
        capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        sys.exit(f"sse-fanout failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    after = quiet(gateway)
    per_stream = float(re.search(r"per_stream_kib=([0-9.]+)", run.stdout).group(1))
    return after[0] - before[0], after[1] - before[1], per_stream


def measure(binary):
    figures = {}
    with tempfile.TemporaryDirectory() as workdir:
        deployment_log = open(os.path.join(workdir, "deployment.log"), "w")
        deployment = subprocess.Popen(
            [binary, "--port", str(DEPLOYMENT_PORT), "--local-port", str(DEPLOYMENT_LOCAL_PORT), "--threads", "2",
             "--log-level", "notice"], stdout=deployment_log, stderr=subprocess.STDOUT)
        gateway = None
        try:
            wait_ready(DEPLOYMENT_PORT, deployment)
            gateway = CountedGateway(binary, workdir)
            figures["allocations_per_hot_get"] = hot_get_allocations(gateway)
            # The first run opens the first STREAMS streams (the memory figure: later runs reuse what it freed).
            first = fanout_run(gateway, 1)
            short = fanout_run(gateway, ROUNDS_SHORT)
            long = fanout_run(gateway, ROUNDS_LONG)
            extra_events = (ROUNDS_LONG - ROUNDS_SHORT) * STREAMS
            figures["allocations_per_event"] = (long[0] - short[0]) / extra_events
            figures["writes_per_event"] = (long[1] - short[1]) / extra_events
            figures["kib_per_idle_stream"] = first[2]
            # At the default log level the access log writes a line per request: the hot GET with its line.
            gateway.stop()
            gateway = CountedGateway(binary, workdir, log_level="info")
            figures["allocations_per_hot_get_logged"] = hot_get_allocations(gateway)
        finally:
            if gateway:
                gateway.stop()
            deployment.terminate()
            deployment.wait(timeout=30)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("gateway")
    parser.add_argument("--thresholds", default=str(ROOT / "Benchmarks/thresholds.json"))
    parser.add_argument("--write", action="store_true", help="record the figures measured now in the file")
    arguments = parser.parse_args()
    document = json.loads(pathlib.Path(arguments.thresholds).read_text())
    build = "release" if "/release/" in os.path.abspath(arguments.gateway) else "debug"
    thresholds = document[build]
    print(f"{arguments.gateway}: the {build} build's thresholds")
    build_tools()
    figures = measure(os.path.abspath(arguments.gateway))
    failed = []
    print(f"{'figure':<32} {'measured':>10} {'ceiling':>10} {'recorded':>10}")
    for name, entry in thresholds["figures"].items():
        value = figures[name]
        status = "ok" if value <= entry["ceiling"] else "ABOVE THE CEILING"
        print(f"{name:<32} {value:>10.3f} {entry['ceiling']:>10.3f} {entry['recorded']:>10.3f}  {status}")
        if value > entry["ceiling"]:
            failed.append(f"{name}: {value:.3f} > ceiling {entry['ceiling']:.3f} ({entry['what']})")
        if arguments.write:
            entry["recorded"] = round(value, 3)
    if arguments.write:
        pathlib.Path(arguments.thresholds).write_text(json.dumps(document, indent=2) + "\n")
    if failed:
        print("\n".join(["performance thresholds exceeded:"] + failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
