"""The server closes the socket mid-subscription; the subscription resumes on the new socket.
Protocol with the Swift test: we bump counter `ready-sub`; the test closes every sync socket, waits for our
reconnect and records a win for the Dodgers; we must see it."""
from common import client

c = client()
it = iter(c.subscribe("mlb:first_place_team", {"division": "NL West"}))
first = next(it)
assert first["name"] == "Dodgers", first
c.mutation("conformance:increment", {"name": "ready-sub"})
value = next(it)
while value["wins"] == first["wins"]:
    value = next(it)
assert value["wins"] == first["wins"].value + 1, value
print("OK")
