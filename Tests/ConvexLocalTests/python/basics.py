"""query, mutation result, action, ConvexError data, plain errors, validation and unknown functions."""
import convex
from common import client, expect_raises

c = client()

team = c.query("mlb:first_place_team", {"division": "AL Central"})
assert team["name"] == "Guardians", team
assert isinstance(team["wins"], convex.ConvexInt64) and isinstance(team["losses"], convex.ConvexInt64), team
assert team["uniformColors"] == ["blue", "white", "red"], team

# Path equivalences: m.js:f and m:f name the same function.
assert c.query("mlb.js:first_place_team", {"division": "AL Central"}) == team

before = team["wins"].value
updated = c.mutation("mlb:record_win", {"team": "Guardians"})
assert updated["wins"] == before + 1, updated
assert c.query("mlb:first_place_team", {"division": "AL Central"})["wins"] == before + 1

msg_id = c.mutation("messages:send", {"body": "hello", "channel": "basics"})
assert isinstance(msg_id, str) and len(msg_id) > 0
msgs = c.query("messages:list", {"channel": "basics"})
assert [m["body"] for m in msgs] == ["hello"], msgs
assert msgs[0]["_id"] == msg_id and isinstance(msgs[0]["_creationTime"], float)

assert c.action("conformance:add", {"a": 1.5, "b": 2}) == 3.5
via = c.action("conformance:sendViaAction", {"body": "from action"})
assert via["count"] >= 1.0, via

e = expect_raises(lambda: c.mutation("conformance:convexError", {"data": {"code": "X", "n": convex.ConvexInt64(7)}}),
                  convex.ConvexError, "ConvexError")
assert e.data == {"code": "X", "n": convex.ConvexInt64(7)}, e.data
e = expect_raises(lambda: c.query("conformance:convexErrorQuery"), convex.ConvexError, "ConvexError")
assert e.data == {"code": "NOPE", "n": convex.ConvexInt64(42)}, e.data
e = expect_raises(lambda: c.action("conformance:convexErrorAction"), convex.ConvexError, "action says no")
assert e.data == "action says no", e.data

for fn in (lambda: c.query("conformance:plainErrorQuery"), lambda: c.mutation("conformance:plainError"),
           lambda: c.action("conformance:plainErrorAction")):
    e = expect_raises(fn, Exception, "Uncaught Error: boom")
    assert not isinstance(e, convex.ConvexError)
# The failed mutation wrote nothing.
assert all(m["body"] != "never committed" for m in c.query("messages:list", {}))

expect_raises(lambda: c.query("conformance:typed", {"x": 1.0}), Exception,
              "ArgumentValidationError: Value does not match validator.\nPath: .x\nValue: 1\nValidator: v.int64()")
expect_raises(lambda: c.query("conformance:typed", {}), Exception, "Object is missing the required field `x`")
expect_raises(lambda: c.query("conformance:typed", {"x": convex.ConvexInt64(1), "zzz": 1.0}), Exception,
              "Object contains extra field `zzz`")
assert c.query("conformance:typed", {"x": convex.ConvexInt64(-9)}) == convex.ConvexInt64(-9)
expect_raises(lambda: c.query("nope:missing"), Exception, "Could not find public function for 'nope:missing'")
expect_raises(lambda: c.mutation("mlb:first_place_team", {"division": "x"}), Exception, "defined as Query")
expect_raises(lambda: c.query("conformance:internalQuery"), Exception, "Could not find public function")

# The deployment still serves after all those errors.
assert c.query("mlb:first_place_team", {"division": "NL West"})["name"] == "Dodgers"
print("OK")
