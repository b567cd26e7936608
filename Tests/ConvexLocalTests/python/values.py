"""int64, bytes and float specials round-trip through echo (query, mutation, action)."""
import math
import convex
from common import client

c = client()
args = {
    "i": convex.ConvexInt64(-5), "max": convex.ConvexInt64(2**63 - 1), "min": convex.ConvexInt64(-2**63),
    "bytes": b"\x00\x01\xff", "empty": b"", "nan": float("nan"), "inf": float("inf"), "ninf": float("-inf"),
    "negzero": -0.0, "f": 1.5, "big": 9007199254740992.0, "s": "xé\n\"", "n": None, "t": True,
    "arr": [1.0, "a", [False, None]], "obj": {"k": {"deep": 2.0}},
}
for name, call in (("query", c.query), ("mutation", c.mutation), ("action", c.action)):
    path = {"query": "echo:echo", "mutation": "echo:echoMutation", "action": "echo:echoAction"}[name]
    r = call(path, args)
    assert r["i"] == convex.ConvexInt64(-5) and isinstance(r["i"], convex.ConvexInt64), (name, r["i"])
    assert r["max"] == convex.ConvexInt64(2**63 - 1) and r["min"] == convex.ConvexInt64(-2**63), name
    assert r["bytes"] == b"\x00\x01\xff" and r["empty"] == b"", name
    assert math.isnan(r["nan"]) and r["inf"] == math.inf and r["ninf"] == -math.inf, name
    assert r["negzero"] == 0.0 and math.copysign(1.0, r["negzero"]) == -1.0, name
    assert r["f"] == 1.5 and r["big"] == 9007199254740992.0 and r["s"] == "xé\n\"", name
    assert r["n"] is None and r["t"] is True, name
    assert r["arr"] == [1.0, "a", [False, None]] and r["obj"] == {"k": {"deep": 2.0}}, name
# A subscription delivers the same values.
sub = c.subscribe("echo:echo", {"b": b"\xfe", "i": convex.ConvexInt64(3)})
first = next(iter(sub))
assert first == {"b": b"\xfe", "i": convex.ConvexInt64(3)}, first
sub.unsubscribe()
print("OK")
