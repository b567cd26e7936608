"""subscribe, then receive the new value after a mutation; QueryFailed then recovery."""
import convex
from common import client

c = client()
sub = c.subscribe("mlb:first_place_team", {"division": "AL West"})
it = iter(sub)
first = next(it)
assert first["name"] == "Astros", first
wins = first["wins"].value
c.mutation("mlb:record_win", {"team": "Astros"})
second = next(it)
assert second["wins"] == wins + 1, second

# Mariners overtake Astros: the subscription follows.
for _ in range(3):
    c.mutation("mlb:record_win", {"team": "Mariners"})
    c.mutation("mlb:record_loss", {"team": "Astros"})
value = second
while value["name"] != "Mariners":
    value = next(it)
assert value["name"] == "Mariners", value

# A query that fails on demand and recovers.
failing = iter(c.subscribe("conformance:failing"))
assert next(failing) == "ok"
c.mutation("conformance:setFailing", {"fail": True})
try:
    next(failing)
    raise AssertionError("expected the query to fail")
except convex.ConvexError:
    raise AssertionError("plain failure must not be a ConvexError")
except Exception as e:
    assert "failing on demand" in str(e), e
c.mutation("conformance:setFailing", {"fail": False})
assert c.query("conformance:failing") == "ok"

# Logs list and add with in/out fields.
c.mutation("logs:add", {"name": "Ann", "in": "2024-10-03 09:00:00", "out": "2024-10-03 17:00:00"})
logs = c.query("logs:list")
assert any(l["name"] == "Ann" and l["in"] == "2024-10-03 09:00:00" and l["out"] == "2024-10-03 17:00:00" for l in logs), logs
print("OK")
