"""set_auth (any well-formed JWT) and set_admin_auth; argv[2] is the admin key."""
import sys
from common import client, make_jwt, expect_raises

c = client()
assert c.query("conformance:whoami") == {"identity": None, "isAdmin": False}
c.set_auth(make_jwt({"sub": "user-1", "iss": "https://issuer.example", "name": "Ann", "email": "ann@example.com"}))
who = c.query("conformance:whoami")
assert who["isAdmin"] is False, who
assert who["identity"]["subject"] == "user-1", who
assert who["identity"]["issuer"] == "https://issuer.example", who
assert who["identity"]["tokenIdentifier"] == "https://issuer.example|user-1", who
assert who["identity"]["name"] == "Ann" and who["identity"]["email"] == "ann@example.com", who
expect_raises(lambda: c.query("conformance:internalQuery"), Exception, "Could not find public function")

c.set_admin_auth(sys.argv[2])
assert c.query("conformance:whoami") == {"identity": None, "isAdmin": True}
assert c.query("conformance:internalQuery") == "internal ok"
assert c.mutation("conformance:internalMutation") == "internal mutation ok"

c.clear_auth()
assert c.query("conformance:whoami") == {"identity": None, "isAdmin": False}
print("OK")
