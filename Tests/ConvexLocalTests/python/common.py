"""Shared helpers for the conformance scripts: each script takes the deployment URL as argv[1],
asserts what the official client sees, and prints OK on success (non-zero exit otherwise)."""
import base64
import json
import sys
import time

import convex


def url():
    return sys.argv[1]


def client():
    return convex.ConvexClient(url())


def make_jwt(claims):
    def b64(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return b64({"alg": "RS256", "typ": "JWT"}) + "." + b64(claims) + ".c2lnbmF0dXJl"


def expect_raises(fn, exc_type, contains):
    try:
        fn()
    except exc_type as e:
        assert contains in str(e), f"{contains!r} not in {str(e)!r}"
        return e
    raise AssertionError(f"expected {exc_type.__name__} containing {contains!r}")


def wait_for(fn, timeout=60.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting")
