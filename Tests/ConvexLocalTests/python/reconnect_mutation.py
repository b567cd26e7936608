"""The server closes the socket while a mutation is in flight; the client resends it and it takes effect once.
Protocol with the Swift test: once a mutation of ours on the sync socket has its response, we bump `ready-mut` over
HTTP; the test stalls the deployment (nothing is sent on sync sockets) and bumps `stalled`; we see that over HTTP and
send `conformance:increment {name: once}` on the sync socket. The test waits until it has committed (its response is
held by the stall), closes every sync socket and unstalls. The client reconnects with a new sessionId and resends the
mutation.

`ready-mut` goes over HTTP, after the sync socket's mutation returned, because a mutation's commit is visible before
its response is sent: had the sync socket bumped it, the test could see the commit and stall the deployment before the
response went out, and this script would wait for that response for ever."""
from convex.http_client import ConvexHttpClient
from common import client, url, wait_for

c = client()
assert c.query("conformance:counter", {"name": "once"}) == 0
c.mutation("conformance:increment", {"name": "warm-mut"})
http = ConvexHttpClient(url())
http.mutation("conformance:increment", {"name": "ready-mut"})
wait_for(lambda: http.query("conformance:counter", {"name": "stalled"}) == 1)
result = c.mutation("conformance:increment", {"name": "once"})
assert result == 1, result
assert c.query("conformance:counter", {"name": "once"}) == 1
print("OK")
