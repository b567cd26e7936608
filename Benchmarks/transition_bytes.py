"""Bytes on the wire for one Convex transition that changes ten subscriptions of one stream: the one
`event: transition` the gateway sends, against the same ten changes sent as ten one-change events (same `id:`).

Usage: python3 Benchmarks/transition_bytes.py PORT   (a running convex-gateway on 127.0.0.1:PORT with the embedded
deployment's demo functions). Environment: FN and ARGS (the query, ten subscriptions of it; default mlb:teams of all
divisions, about 1.3 KB), MUT and BODY (the mutation that changes it; default a win for the Guardians).
"""
import http.client
import json
import os
import sys
import urllib.request

port = int(sys.argv[1])
FN = os.environ.get("FN", "mlb:teams")
ARGS = os.environ.get("ARGS", "")
MUT = os.environ.get("MUT", "mlb:record_win")
BODY = os.environ.get("BODY", '{"team":"Guardians"}')

subs = "&".join(f"sub.s{i}={FN}" + (f"&args.s{i}={ARGS}" if ARGS else "") for i in range(10))
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
conn.request("GET", f"/subscribe?{subs}", headers={"Accept": "text/event-stream"})
resp = conn.getresponse()
buf = b""


def next_transition():
    """The next `event: transition` block, as the stream's (de-chunked) bytes."""
    global buf
    while True:
        start = buf.find(b"event: transition")
        end = buf.find(b"\n\n", start) if start >= 0 else -1
        if end >= 0:
            event, buf = buf[start:end + 2], buf[end + 2:]
            return event
        buf += resp.read1(1 << 20)


next_transition()  # the first values
request = urllib.request.Request(
    f"http://127.0.0.1:{port}/mutation/{MUT}", data=BODY.encode(), headers={"Content-Type": "application/json"})
urllib.request.urlopen(request, timeout=20).read()
event = next_transition()
lines = event.decode().split("\n")
data = json.loads("".join(line[6:] for line in lines if line.startswith("data: ")))
id_line = next(line for line in lines if line.startswith("id: "))
separate = sum(
    len(f"event: transition\n{id_line}\ndata: {json.dumps({'ts': data['ts'], 'changes': [change]}, separators=(',', ':'))}\n\n".encode())
    for change in data["changes"])
print(f"query={FN} changes={len(data['changes'])} one_event_bytes={len(event)} ten_events_bytes={separate} "
      f"ratio={len(event) / separate:.2f}")
