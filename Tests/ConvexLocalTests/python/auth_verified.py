"""set_auth against a deployment with an auth config. argv[2:6]: a valid signed token, the same token with a
tampered payload, a token from another issuer and an expired token, all made by the Swift test with keys it
generated; argv[6]: a file the Swift test creates once the deployment has seen the rejected clients reconnect."""
import os
import subprocess
import sys
import time

from convex.http_client import ConvexHttpClient
from common import client, expect_raises, url

valid, tampered, wrong_issuer, expired, seen_reconnects = sys.argv[2:7]

c = client()
assert c.query("conformance:whoami") == {"identity": None, "isAdmin": False}
c.set_auth(valid)
who = c.query("conformance:whoami")
assert who["identity"]["subject"] == "user-1", who
assert who["identity"]["issuer"] == "https://issuer.test", who
assert who["identity"]["tokenIdentifier"] == "https://issuer.test|user-1", who
assert who["identity"]["name"] == "Ann", who

# The HTTP client reports the deployment's 401 as "<status> <code>: <message>".
rejections = [
    (tampered, "401 InvalidAuthHeader: Could not decode token. The JWT's 'kid' (key ID) header is 'rsa-1', "
               "does this key match any key in the provider's JWKS?"),
    (wrong_issuer, "401 NoAuthProvider: No auth provider found matching the given token. Check that your JWT's "
                   "issuer and audience match one of your configured providers: "
                   "[CustomJWT(issuer=https://issuer.test, app_id=app)]"),
    (expired, "401 InvalidAuthHeader: Could not validate token: Token expired "),
]
http = ConvexHttpClient(url())
http.set_auth(valid)
assert http.query("conformance:whoami")["identity"]["subject"] == "user-1"
for token, message in rejections:
    http.set_auth(token)
    expect_raises(lambda: http.query("conformance:whoami"), Exception, message)

# The WebSocket client gets an AuthError for each; like against Convex, it then reconnects with the same token,
# so the query never completes. It blocks inside the client without releasing the interpreter, so each runs in a
# child process, stopped once the Swift test has seen every one reconnect (it then creates the file named by argv[6]).
PROBE = "import sys, convex; c = convex.ConvexClient(sys.argv[1]); c.set_auth(sys.argv[2]); print(c.query('conformance:whoami'))"
probes = [subprocess.Popen([sys.executable, "-c", PROBE, url(), token], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
          for token, _ in rejections]
try:
    deadline = time.monotonic() + 120
    while not os.path.exists(seen_reconnects) and time.monotonic() < deadline:
        time.sleep(0.05)
    for probe in probes:
        if probe.poll() is not None:
            raise AssertionError(f"a query with a rejected token finished: {probe.communicate()}")
finally:
    for probe in probes:
        probe.kill()
        probe.wait()

print("OK")
