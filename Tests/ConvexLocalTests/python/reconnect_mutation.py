"""The server closes the socket while a mutation is in flight; the client resends it and it takes effect once.
Protocol with the Swift test: we bump `ready-mut`; the test stalls the deployment (nothing is sent on sync
sockets) and bumps `stalled`; we see that over HTTP and send `conformance:increment {name: once}` on the sync
socket. The test waits until it has committed (its response is held by the stall), closes every sync socket and
unstalls. The client reconnects with a new sessionId and resends the mutation."""
from convex.http_client import ConvexHttpClient
from common import client, url, wait_for

c = client()
assert c.query("conformance:counter", {"name": "once"}) == 0
c.mutation("conformance:increment", {"name": "ready-mut"})
http = ConvexHttpClient(url())
wait_for(lambda: http.query("conformance:counter", {"name": "stalled"}) == 1)
result = c.mutation("conformance:increment", {"name": "once"})
assert result == 1, result
assert c.query("conformance:counter", {"name": "once"}) == 1
print("OK")
