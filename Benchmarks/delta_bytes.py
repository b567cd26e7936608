#!/usr/bin/env python3
"""Bytes on the wire per change, JSON Patch vs full value, for a live query of a 1,000-document list.

Seeds `items:list` with ITEMS documents (`items:add`), opens two streams on it, one with `delta=json-patch` and one
without, then makes three changes (one document inserted, one changed, one removed) and, for each, counts the bytes
each stream received for that change: the raw bytes read from the socket, HTTP chunk framing included.

Usage: delta_bytes.py PORT [ITEMS] [FORMAT]     (standard library only)
Or, to seed only: delta_bytes.py PORT ITEMS --seed-only
"""

import http.client
import json
import socket
import sys
import time


def post(conn, path, body):
    conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    if response.status != 200:
        raise SystemExit(f"{path} answered {response.status}: {data[:200]!r}")
    return json.loads(data)


class RawStream:
    """A GET of an event stream on a raw socket: counts every byte read, and splits the de-chunked text into events."""

    def __init__(self, port, path):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.settimeout(30)
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
        self.raw = b""  # bytes read and not yet de-chunked
        self.text = b""  # de-chunked event-stream text not yet split into events
        self.wire = 0  # raw bytes read since the last `take_bytes`
        head = self._read_until(b"\r\n\r\n")
        if b" 200 " not in head.split(b"\r\n")[0]:
            raise SystemExit(f"{path}: {head[:200]!r}")

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise SystemExit("stream closed")
        self.wire += len(chunk)
        self.raw += chunk

    def _read_until(self, marker):
        while marker not in self.raw:
            self._fill()
        head, self.raw = self.raw.split(marker, 1)
        return head

    def _dechunk(self):
        while True:
            line_end = self.raw.find(b"\r\n")
            if line_end < 0:
                return
            size = int(self.raw[:line_end].split(b";")[0], 16)
            if len(self.raw) < line_end + 2 + size + 2:
                return
            self.text += self.raw[line_end + 2 : line_end + 2 + size]
            self.raw = self.raw[line_end + 2 + size + 2 :]

    def next_event(self):
        """The next event that is not a comment: (event name, data text)."""
        while True:
            self._dechunk()
            while b"\n\n" in self.text:
                block, self.text = self.text.split(b"\n\n", 1)
                lines = block.decode().split("\n")
                if not any(line.startswith("data: ") for line in lines):
                    continue  # comments (heartbeats) and the `retry:` preamble
                name = next((line[7:] for line in lines if line.startswith("event: ")), "message")
                data = "\n".join(line[6:] for line in lines if line.startswith("data: "))
                return name, data
            self._fill()

    def take_bytes(self):
        wire, self.wire = self.wire, 0
        return wire


def main():
    port = int(sys.argv[1])
    items = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    conn = http.client.HTTPConnection("127.0.0.1", port)
    started = time.monotonic()
    ids = [post(conn, "/mutation/items:add", {"text": f"item number {n}"}) for n in range(items)]
    print(f"seeded {items} documents in {time.monotonic() - started:.1f} s")
    if "--seed-only" in sys.argv:
        return
    fmt = sys.argv[3] if len(sys.argv) > 3 else "plain"
    full = RawStream(port, f"/subscribe/items:list?format={fmt}")
    patched = RawStream(port, f"/subscribe/items:list?format={fmt}&delta=json-patch")
    for stream in (full, patched):
        name, data = stream.next_event()
        assert len(json.loads(data)) == items, "first value"
        stream.take_bytes()
    changes = [
        ("one document inserted", "/mutation/items:add", {"text": "a new item"}),
        ("one document changed", "/mutation/items:update", {"id": ids[items // 2], "text": "changed text"}),
        ("one document removed", "/mutation/items:remove", {"id": ids[items // 3]}),
    ]
    print(f"format={fmt}, {items} documents; bytes read from the socket per change (chunk framing included)")
    print(f"{'change':<24}{'full value':>12}{'patch':>10}{'patch/full':>12}  patch event")
    for label, path, body in changes:
        post(conn, path, body)
        full_name, full_data = full.next_event()
        patch_name, patch_data = patched.next_event()
        assert full_name == "message", full_name
        full_bytes, patch_bytes = full.take_bytes(), patched.take_bytes()
        note = patch_data if patch_name == "patch" else f"(sent whole: event {patch_name})"
        print(f"{label:<24}{full_bytes:>12}{patch_bytes:>10}{patch_bytes / full_bytes:>11.2%}  {note[:110]}")


if __name__ == "__main__":
    main()
