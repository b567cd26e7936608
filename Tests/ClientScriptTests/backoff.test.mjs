// Backoff, the Retry-After reader and the outage notice of client.js (backoff.js). Run with `node --test Tests/ClientScriptTests/`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Backoff, OutageNotice, retryAfterMs } from "../../Sources/ConvexGateway/Resources/client/backoff.js";

test("delays double from the initial delay to the ceiling, with ±50 % jitter, and start over after reset()", () => {
  const middle = new Backoff({ initialMs: 100, maxMs: 10000, random: () => 0.5 });
  const delays = Array.from({ length: 10 }, () => middle.next());
  assert.deepEqual(delays, [100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000, 10000]);
  assert.equal(middle.failures, 10);
  middle.reset();
  assert.equal(middle.next(), 100);
  const low = new Backoff({ random: () => 0 });
  const high = new Backoff({ random: () => 0.999999 });
  for (let n = 0; n < 12; n++) {
    const base = Math.min(10000, 100 * 2 ** n);
    assert.equal(low.next(), base / 2);
    const up = high.next();
    assert.ok(up >= base * 1.49 && up < base * 1.5, `${up} for ${base}`);
  }
});

test("a Retry-After longer than the backoff wins; a quick first try does not count in the doubling", () => {
  const backoff = new Backoff({ random: () => 0.5 });
  assert.equal(backoff.next(2000), 2000);
  assert.equal(backoff.next(50), 200);
  backoff.reset();
  assert.equal(backoff.nextAfterQuick(400), 400, "the first try after a lost connection: the server's retry");
  assert.deepEqual([backoff.nextAfterQuick(400), backoff.nextAfterQuick(400), backoff.next()], [100, 200, 400]);
  assert.equal(backoff.failures, 4);
});

test("retryAfterMs reads seconds or an HTTP date, and 0 without the header", () => {
  const response = (value) => ({ headers: new Headers(value === undefined ? {} : { "Retry-After": value }) });
  assert.equal(retryAfterMs(response("3")), 3000);
  assert.equal(retryAfterMs(response(undefined)), 0);
  assert.equal(retryAfterMs(response("soon")), 0);
  const later = retryAfterMs(response(new Date(Date.now() + 60000).toUTCString()));
  assert.ok(later > 55000 && later <= 60000, `${later}`);
  assert.equal(retryAfterMs({}), 0, "no headers at all");
});

test("an outage is told once, until the gateway is reachable again", () => {
  const warn = console.warn;
  const lines = [];
  console.warn = (line) => lines.push(line);
  try {
    const notice = new OutageNotice();
    notice.unreachable();
    notice.unreachable();
    assert.deepEqual(lines, ["client.js: the gateway is unreachable; retrying with backoff"]);
    notice.reachable();
    notice.unreachable();
    assert.equal(lines.length, 2);
  } finally {
    console.warn = warn;
  }
});
