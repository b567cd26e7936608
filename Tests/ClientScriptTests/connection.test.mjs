// The page's stream (connection.js): reconnects after a lost stream and after refusals back off with jitter to the
// ceiling, the console hears of an outage once, and a stream that delivers starts the backoff over. The real
// EventStreamReader runs on a virtual clock (simulation.mjs). Run with `node --test Tests/ClientScriptTests/`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConvexGateway } from "../../Sources/ConvexGateway/Resources/client/gateway.js";
import { FakeEventStream } from "./fake-event-stream.mjs";
import { VirtualClock, seededRandom } from "./simulation.mjs";

/** A fetch for the stream: unreachable while `server.down`, else a stream the test writes to (`server.streams`). */
function streamServer() {
  const server = { down: false, streams: [], requests: [] };
  globalThis.fetch = async (url, init) => {
    server.requests.push({ url: new URL(url), headers: init.headers });
    if (server.down) throw new TypeError("Failed to fetch");
    let controller;
    const body = new ReadableStream({ start: (c) => (controller = c) });
    const encoder = new TextEncoder();
    server.streams.push({ write: (text) => controller.enqueue(encoder.encode(text)), end: () => controller.close() });
    init.signal.addEventListener("abort", () => controller.error(new DOMException("aborted", "AbortError")));
    return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
  };
  return server;
}

const transition = (ts, value) =>
  `retry: 400\nevent: transition\nid: ${ts}\ndata: ${JSON.stringify({ ts, changes: [{ sub: "q1", value, v: `h${ts}` }] })}\n\n`;

test("a lost stream is tried again after its retry:, then with delays doubling to the ceiling, told once per outage", async () => {
  const warn = console.warn;
  const warnings = [];
  console.warn = (line) => warnings.push(line);
  try {
    const clock = new VirtualClock(() => 0.5);
    const server = streamServer();
    const gateway = new ConvexGateway("http://gateway.test", { timers: clock, debounceMs: 0 });
    const values = [];
    gateway.subscribe("messages:list", {}, (value) => values.push(value));
    await clock.advance(1);
    assert.equal(server.requests[0].url.searchParams.get("format"), "plain", "asks for the format it reads");
    server.streams[0].write(transition("1", ["a"]));
    await clock.advance(1);
    assert.deepEqual(values, [["a"]]);

    // The gateway goes away: the first try after the stream's retry:, the next ones backing off to 10 s.
    server.down = true;
    clock.delays.length = 0;
    server.streams[0].end();
    await clock.advance(60000);
    assert.deepEqual(clock.delays.slice(0, 11), [400, 100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000, 10000]);
    assert.ok(clock.delays.every((delay) => delay <= 10000));
    assert.deepEqual(warnings, ["client.js: the gateway is unreachable; retrying with backoff"], "once, not per try");
    assert.ok(gateway.connectionState().connectionRetries >= 11);
    assert.equal(gateway.connectionState().isWebSocketConnected, false);

    // Back: the stream resumes (Last-Event-ID), delivers, and the next loss is tried quickly again.
    server.down = false;
    await clock.advance(10000);
    assert.equal(server.streams.length, 2);
    assert.equal(server.requests.at(-1).headers["Last-Event-ID"], "1");
    assert.equal(gateway.connectionState().isWebSocketConnected, true);
    assert.equal(gateway.connectionState().isStreamConnected, true);
    server.streams[1].write(transition("2", ["a", "b"]));
    await clock.advance(1);
    assert.deepEqual(values, [["a"], ["a", "b"]]);
    server.down = true;
    clock.delays.length = 0;
    server.streams[1].end();
    await clock.advance(1000);
    assert.deepEqual(clock.delays.slice(0, 3), [400, 100, 200], "the backoff started over");
    assert.equal(warnings.length, 2, "a new outage is told once more");
    gateway.close();
  } finally {
    console.warn = warn;
  }
});

test("refusals of the stream back off with jitter to the ceiling, as lost connections do", async () => {
  for (const [random, factor] of [[() => 0.5, 1], [() => 0, 0.5], [() => 0.999, 1.499]]) {
    FakeEventStream.instances = [];
    const clock = new VirtualClock(random);
    const gateway = new ConvexGateway("http://gateway.test", { timers: clock, debounceMs: 0, eventStreamReader: FakeEventStream });
    const errors = [];
    gateway.subscribe("messages:list", {}, () => {}, (error) => errors.push(error.code));
    await clock.advance(0);
    const delays = [];
    for (let n = 0; n < 10; n++) {
      const before = clock.delays.length;
      FakeEventStream.instances.at(-1).refuse(503, { code: "Overloaded", message: "Too many streams" });
      delays.push(...clock.delays.slice(before));
      await clock.advance(20000);
      assert.equal(FakeEventStream.instances.length, n + 2, "opened again");
    }
    const bases = [100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000, 10000];
    delays.forEach((delay, n) => assert.ok(Math.abs(delay - bases[n] * factor) < bases[n] * 0.002, `${delay} for ${bases[n]}`));
    assert.equal(errors.length, 10, "each refusal heard");
    gateway.close();
  }
});

test("over seeded random jitter, every reconnect delay lies within ±50 % of its doubling base, and the ceiling is reached", async () => {
  const bases = [100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000, 10000, 10000, 10000];
  for (let round = 0; round < 20; round++) {
    FakeEventStream.instances = [];
    const clock = new VirtualClock(seededRandom(700 + round));
    const gateway = new ConvexGateway("http://gateway.test", { timers: clock, debounceMs: 0, eventStreamReader: FakeEventStream });
    gateway.subscribe("messages:list", {}, () => {}, () => {});
    await clock.advance(0);
    const delays = [];
    for (const base of bases) {
      const before = clock.delays.length;
      FakeEventStream.instances.at(-1).refuse(503, { code: "UpstreamUnavailable", message: "down" });
      const [delay] = clock.delays.slice(before);
      assert.ok(delay >= base * 0.5 && delay < base * 1.5, `round ${round}: ${delay} for ${base}`);
      delays.push(delay);
      await clock.advance(20000);
    }
    assert.ok(Math.max(...delays.slice(7)) >= 5000, "at the ceiling");
    assert.ok(new Set(delays.slice(7)).size > 1, "jittered, not all the same");
    gateway.close();
  }
});
