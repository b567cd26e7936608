"""Cross-checks ConvexGateway's value codec against the official Python client's encoder (convex.values).

Input on stdin: {"corpus": <corpus.json>, "ours": {name: <our Convex JSON text>}}.
Output on stdout: {"python": {name: <Python's Convex JSON text>},
                   "decoded": {name: "ok" | "<problem>"},       # our text read back by json_to_convex
                   "rejected": {name: "<error>" | null}}         # null when Python accepted a value it should reject
"""
import json
import struct
import sys

try:
    from convex.values import ConvexInt64, convex_to_json, json_to_convex
except ImportError as error:  # pragma: no cover - reported to the Swift test
    print(f"cannot import convex.values ({error}); run scripts/test to create .venv with convex==0.8.1",
          file=sys.stderr)
    sys.exit(3)


def build(desc):
    kind = desc[0]
    if kind == "null":
        return None
    if kind == "bool":
        return desc[1]
    if kind == "int64":
        return ConvexInt64(int(desc[1]))
    if kind == "float64":
        return struct.unpack(">d", bytes.fromhex(desc[1]))[0]
    if kind == "string":
        return desc[1]
    if kind == "bytes":
        return bytes.fromhex(desc[1])
    if kind == "array":
        return [build(item) for item in desc[1]]
    if kind == "object":
        return {key: build(item) for key, item in desc[1].items()}
    if kind == "pairs":
        return {key_name(key): build(item) for key, item in desc[1]}
    if kind == "nest":
        value = build(desc[2])
        for _ in range(int(desc[1])):
            value = [value]
        return value
    if kind == "nestobj":
        value = build(desc[2])
        for _ in range(int(desc[1])):
            value = {"a": value}
        return value
    raise ValueError(f"unknown corpus type {kind}")


def key_name(key):
    return "k" * 1025 if key == "LONGKEY" else key


def same(a, b):
    """Exact equality: floats by bit pattern, int64 by value, containers recursively."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, ConvexInt64):
        return a.value == b.value
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def main():
    request = json.load(sys.stdin)
    corpus = request["corpus"]
    ours = request["ours"]
    python, decoded, rejected = {}, {}, {}
    for name, desc in corpus["values"].items():
        value = build(desc)
        python[name] = json.dumps(convex_to_json(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        try:
            back = json_to_convex(json.loads(ours[name]))
            decoded[name] = "ok" if same(back, value) else f"decoded to {back!r}, expected {value!r}"
        except Exception as error:  # noqa: BLE001 - every failure is reported by name
            decoded[name] = f"json_to_convex raised {error!r}"
    for name, desc in corpus["rejected"].items():
        try:
            convex_to_json(build(desc))
            rejected[name] = None
        except Exception as error:  # noqa: BLE001
            rejected[name] = str(error)
    json.dump({"python": python, "decoded": decoded, "rejected": rejected}, sys.stdout, ensure_ascii=False)


main()
