"""set_auth against a deployment with an auth config. argv[2:6]: a valid signed token, the same token with a
tampered payload, a token from another issuer and an expired token, all made by the Swift test with keys it
generated."""
import subprocess
import sys

from convex.http_client import ConvexHttpClient
from common import client, expect_raises, url

valid, tampered, wrong_issuer, expired = sys.argv[2:6]

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
# so the query never completes. It blocks inside the client without releasing the interpreter, so it runs in a
# child process that is killed after 3 s.
PROBE = "import sys, convex; c = convex.ConvexClient(sys.argv[1]); c.set_auth(sys.argv[2]); print(c.query('conformance:whoami'))"
for token, _ in rejections:
    try:
        done = subprocess.run([sys.executable, "-c", PROBE, url(), token], capture_output=True, timeout=3)
    except subprocess.TimeoutExpired:
        continue
    raise AssertionError(f"a query with a rejected token finished: {done}")

print("OK")
