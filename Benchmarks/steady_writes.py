"""A steady write load for the read-your-writes benchmark: signed-in `POST /mutation/conformance:increment` of the
counter `writes` at RATE per second for SECONDS seconds, through the gateway (each write is another upstream
connection's commit, which the hot GETs meanwhile must not read behind). Prints the writes sent and their statuses.

Usage: steady_writes.py GATEWAY_PORT RATE SECONDS
"""

import base64
import http.client
import json
import sys
import time


def unsigned_jwt(subject):
    def part(value):
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return part({"alg": "none"}) + "." + part({"sub": subject, "iss": "https://issuer.test"}) + ".sig"


def main():
    port, rate, seconds = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    connection = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + unsigned_jwt("benchmark-writer")}
    body = json.dumps({"name": "writes"})
    statuses = {}
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < seconds:
        due = start + sent / rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        connection.request("POST", "/mutation/conformance:increment", body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        statuses[response.status] = statuses.get(response.status, 0) + 1
        sent += 1
    elapsed = time.monotonic() - start
    print(f"writes sent={sent} in {elapsed:.1f} s ({sent / elapsed:.0f}/s) statuses={statuses}")


if __name__ == "__main__":
    main()
