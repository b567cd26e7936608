// The mutation queue of client.js (request-queue.js): call order, batching, resends with the same session and request
// id, backoff, and the answers that settle a batch, against a simulated gateway on a virtual clock (simulation.mjs).
// Run with `node --test Tests/ClientScriptTests/`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConvexGateway } from "../../Sources/ConvexGateway/Resources/client/gateway.js";
import { randomSessionId } from "../../Sources/ConvexGateway/Resources/client/request-queue.js";
import { FakeEventStream } from "./fake-event-stream.mjs";
import { SimulatedGateway, VirtualClock, seededRandom, settle } from "./simulation.mjs";

const ROUNDS = 25;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A page on `server`, with its clock; console.warn lines are collected in `warnings`. */
function page(server, clock, options = {}) {
  globalThis.fetch = server.fetch;
  return new ConvexGateway("http://gateway.test", { timers: clock, debounceMs: 0, eventStreamReader: FakeEventStream, ...options });
}

async function collectingWarnings(body) {
  const warn = console.warn;
  const warnings = [];
  console.warn = (...line) => warnings.push(line.join(" "));
  try {
    await body(warnings);
  } finally {
    console.warn = warn;
  }
}

/** Checks what every request sent: one lowercase UUID session for the page, request ids increasing in each batch. */
function checkRequests(server) {
  const sessions = new Set(server.requests.map(({ headers }) => headers["Convex-Session-Id"]));
  assert.equal(sessions.size, 1, "one session per page");
  assert.match([...sessions][0], uuid);
  for (const { url, body } of server.requests) {
    assert.equal(url, "http://gateway.test/mutations?format=plain");
    const ids = body.mutations.map(({ requestId }) => requestId);
    assert.ok(ids.length >= 1 && ids.length <= 100);
    assert.ok(ids.every((id, index) => index === 0 || id > ids[index - 1]), `increasing: ${ids}`);
  }
  // A request id sent twice carries the same mutation.
  const byId = new Map();
  for (const { body } of server.requests) {
    for (const mutation of body.mutations) {
      const known = byId.get(mutation.requestId);
      if (known) assert.deepEqual(mutation, known, "a resend is the same mutation");
      byId.set(mutation.requestId, mutation);
    }
  }
}

test("unawaited mutations commit in call order, batched, through a gateway answering after random delays", async () => {
  let requests = 0;
  let mutations = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const random = seededRandom(100 + round);
    const clock = new VirtualClock(random);
    const server = new SimulatedGateway(clock, () => random.int(0, 40));
    const gateway = page(server, clock);
    const n = random.int(4, 40);
    const values = [];
    for (let i = 0; i < n; i++) {
      gateway.mutation("messages:send", { n: i }).then((value) => values.push([i, value.committed.n]));
      // Some in the same tick, some while a batch is on the wire.
      if (random() < 0.4) await clock.advance(random.int(0, 30));
    }
    await clock.advance(10000);
    assert.deepEqual(server.commits.map(({ args }) => args.n), [...Array(n).keys()], `round ${round}: call order`);
    assert.deepEqual(values.map(([i]) => i), [...Array(n).keys()], "settled in order");
    assert.ok(values.every(([i, value]) => i === value), "each with its own result");
    checkRequests(server);
    assert.equal(gateway.connectionState().inflightMutations, 0);
    requests += server.requests.length;
    mutations += n;
  }
  assert.ok(requests < mutations / 2, `batched: ${requests} requests for ${mutations} mutations`);
});

test("a mutation called while the gateway is unreachable stays pending with its optimistic value and commits once", async () => {
  await collectingWarnings(async (warnings) => {
    for (let round = 0; round < ROUNDS; round++) {
      const random = seededRandom(200 + round);
      const clock = new VirtualClock(random);
      const server = new SimulatedGateway(clock, () => random.int(1, 20));
      FakeEventStream.instances = [];
      const gateway = page(server, clock);
      const shown = [];
      gateway.subscribe("messages:list", {}, (list) => shown.push(list));
      await clock.advance(1);
      const stream = FakeEventStream.instances[0];
      stream.emit("open", {});
      stream.emit("transition", { ts: "1000", changes: [{ sub: "q1", value: [], v: "h0" }] });
      server.downUntil = clock.now + 1500;
      warnings.length = 0;
      await clock.advance(random.int(0, 200));
      let settled = false;
      const sent = gateway.mutation("messages:send", { body: "m" }, {
        optimisticUpdate: (store, args) => store.setQuery("messages:list", {}, [...store.getQuery("messages:list", {}), `${args.body}*`]),
      });
      sent.then(() => (settled = true));
      while (clock.now < server.downUntil - 50) {
        await clock.advance(random.int(10, 200));
        assert.equal(settled, false, `round ${round}: still pending at ${clock.now}`);
        assert.deepEqual(gateway.current("messages:list", {}), ["m*"], "the optimistic value shown");
        assert.equal(gateway.connectionState().inflightMutations, 1, "counted in flight");
      }
      await clock.advance(15000);
      assert.deepEqual(await sent, { committed: { body: "m" } });
      assert.equal(server.commits.length, 1, "committed once");
      assert.ok(server.requests.length > 2, "sent again while unreachable");
      checkRequests(server);
      assert.equal(warnings.length, 1, `said once: ${warnings}`);
      // No transition came within catchUpMs: the stream was opened again at the commit; its first transition holds it.
      assert.equal(FakeEventStream.instances.length, 2);
      assert.equal(FakeEventStream.instances[1].headers["Convex-Min-Timestamp"], server.commits[0].ts);
      FakeEventStream.instances[1].emit("transition", { ts: server.commits[0].ts, changes: [{ sub: "q1", value: ["m"], v: "h1" }] });
      assert.deepEqual(shown, [[], ["m*"], ["m"]], "never rolled back, never twice");
      gateway.close();
    }
  });
});

test("a batch whose answer is cut after it committed is sent again with the same session and request ids, and runs once", async () => {
  for (let round = 0; round < ROUNDS; round++) {
    const random = seededRandom(300 + round);
    const clock = new VirtualClock(random);
    const server = new SimulatedGateway(clock, () => random.int(0, 30));
    server.cut = () => random() < 0.35;
    const gateway = page(server, clock);
    const n = random.int(3, 25);
    const values = [];
    for (let i = 0; i < n; i++) {
      gateway.mutation("counter:add", { n: i }).then((value) => values.push(value.committed.n));
      if (random() < 0.5) await clock.advance(random.int(0, 40));
    }
    await clock.advance(60000);
    assert.deepEqual(server.commits.map(({ args }) => args.n), [...Array(n).keys()], `round ${round}: each once, in order`);
    assert.deepEqual(values, [...Array(n).keys()]);
    checkRequests(server);
  }
});

/** A fetch the test answers by hand: `requests[i].answer(status, body, headers)`. */
function scriptedFetch() {
  const requests = [];
  globalThis.fetch = (url, init) =>
    new Promise((resolve) => {
      requests.push({
        url: String(url),
        init,
        body: JSON.parse(init.body),
        answer: (status, body, headers = {}) =>
          resolve({ ok: status === 200, status, headers: new Headers(headers), json: async () => body }),
      });
    });
  return requests;
}

const committed = (requestId, value) => ({ requestId, value, ts: String(2000 + requestId) });

test("an entry the gateway could not run is sent again with every later one, ahead of newer mutations", async () => {
  const clock = new VirtualClock(() => 0.5);
  const requests = scriptedFetch();
  const gateway = new ConvexGateway("http://gateway.test", { timers: clock });
  const results = [];
  const call = (n) => gateway.mutation("m:n", { n }).then((value) => results.push([n, value]), (error) => results.push([n, error.code]));
  [0, 1, 2].forEach(call);
  await clock.advance(0);
  assert.deepEqual(requests[0].body.mutations.map(({ requestId }) => requestId), [0, 1, 2], "one batch");
  call(3);
  const unavailable = { code: "UpstreamUnavailable", message: "down" };
  requests[0].answer(200, {
    results: [committed(0, "a"), { requestId: 1, status: 503, error: unavailable }, { requestId: 2, status: 503, error: unavailable }],
  });
  await clock.advance(0);
  assert.deepEqual(results, [[0, "a"]]);
  assert.equal(requests.length, 1, "backing off");
  await clock.advance(100);
  assert.deepEqual(requests[1].body.mutations.map(({ requestId, args }) => [requestId, args.n]), [[1, 1], [2, 2], [3, 3]]);
  requests[1].answer(200, {
    results: [committed(1, "b"), { requestId: 2, status: 400, error: { code: "ConvexError", message: "no" } }, committed(3, "d")],
  });
  await clock.advance(0);
  assert.deepEqual(results, [[0, "a"], [1, "b"], [2, "ConvexError"], [3, "d"]], "a function's own failure fails that entry only");
});

test("whole-request answers: 429 waits Retry-After, 401 refreshes the token once, 400 rejects the batch", async () => {
  const clock = new VirtualClock(() => 0.5);
  const requests = scriptedFetch();
  const asked = [];
  const gateway = new ConvexGateway("http://gateway.test", {
    timers: clock,
    token: (options) => (asked.push(options.forceRefreshToken), options.forceRefresh ? "fresh" : "stale"),
  });
  const first = gateway.mutation("m:n", { n: 0 });
  await clock.advance(0);
  requests[0].answer(429, { error: { code: "RateLimited", message: "slow down" } }, { "Retry-After": "2" });
  await clock.advance(1990);
  assert.equal(requests.length, 1, "waits the Retry-After");
  await clock.advance(20);
  assert.equal(requests.length, 2);
  assert.equal(requests[1].init.headers.Authorization, "Bearer stale");
  requests[1].answer(401, { error: { code: "Unauthenticated", message: "expired" } });
  await clock.advance(0);
  assert.equal(requests.length, 3, "sent again at once");
  assert.equal(requests[2].init.headers.Authorization, "Bearer fresh");
  assert.deepEqual(requests[2].body, requests[0].body, "the same request id");
  requests[2].answer(200, { results: [committed(0, "ok")] });
  assert.equal(await first, "ok");

  const second = gateway.mutation("m:n", { n: 1 });
  const third = gateway.mutation("m:n", { n: 2 });
  await clock.advance(0);
  requests[3].answer(400, { error: { code: "BadRequest", message: "bad body" } });
  await assert.rejects(second, { status: 400, code: "BadRequest" });
  await assert.rejects(third, { status: 400, code: "BadRequest" });
  const fourth = gateway.mutation("m:n", { n: 3 });
  await clock.advance(0);
  requests[4].answer(401, { error: { code: "Unauthenticated", message: "no" } });
  await clock.advance(0);
  requests[5].answer(401, { error: { code: "Unauthenticated", message: "still no" } });
  await assert.rejects(fourth, { status: 401, message: "still no" }, "refreshed once only");
  assert.deepEqual(asked, [false, false, true, false, false, true]);
});

test("close() stops resends, rejects the mutations not on the wire, and resolves once the batch on the wire is answered", async () => {
  const clock = new VirtualClock(() => 0.5);
  const requests = scriptedFetch();
  const gateway = new ConvexGateway("http://gateway.test", { timers: clock });
  const onWire = gateway.mutation("m:n", { n: 0 });
  const cut = gateway.mutation("m:n", { n: 1 });
  await clock.advance(0);
  const waiting = gateway.mutation("m:n", { n: 2 });
  let closed = false;
  const closing = gateway.close().then(() => (closed = true));
  assert.ok(closing instanceof Promise);
  await assert.rejects(waiting, { code: "ClientClosed" });
  await settle();
  assert.equal(closed, false, "a batch is on the wire");
  requests[0].answer(200, { results: [committed(0, "a"), { requestId: 1, status: 503, error: { code: "UpstreamUnavailable" } }] });
  assert.equal(await onWire, "a");
  await assert.rejects(cut, { code: "ClientClosed" }, "not sent again after close()");
  await closing;
  await clock.advance(60000);
  assert.equal(requests.length, 1);
  assert.equal(gateway.connectionState().inflightMutations, 0);
  await assert.rejects(gateway.mutation("m:n", { n: 3 }), { code: "ClientClosed" });
});

test("a batch carries at most 100 mutations; the rest go in the next, in order", async () => {
  const clock = new VirtualClock(() => 0.5);
  const requests = scriptedFetch();
  const gateway = new ConvexGateway("http://gateway.test", { timers: clock });
  const all = Array.from({ length: 150 }, (_, n) => gateway.mutation("m:n", { n }));
  await clock.advance(0);
  assert.equal(requests.length, 1);
  assert.equal(requests[0].body.mutations.length, 100);
  requests[0].answer(200, { results: requests[0].body.mutations.map(({ requestId }) => committed(requestId, requestId)) });
  await clock.advance(0);
  assert.deepEqual(requests[1].body.mutations.map(({ args }) => args.n), Array.from({ length: 50 }, (_, i) => 100 + i));
  requests[1].answer(200, { results: requests[1].body.mutations.map(({ requestId }) => committed(requestId, requestId)) });
  assert.deepEqual(await Promise.all(all), [...Array(150).keys()]);
});

test("a batch stops growing past a mebibyte of arguments; a larger mutation goes alone, in order", async () => {
  const clock = new VirtualClock(() => 0.5);
  const requests = scriptedFetch();
  const gateway = new ConvexGateway("http://gateway.test", { timers: clock });
  const sizes = [400, 400, 300, 1500, 10, 10];
  const all = sizes.map((kib, n) => gateway.mutation("m:n", { n, text: "x".repeat(kib * 1024) }));
  const batches = [];
  for (let i = 0; i < 4; i++) {
    await clock.advance(0);
    const request = requests[i];
    batches.push(request.body.mutations.map(({ args }) => args.n));
    request.answer(200, { results: request.body.mutations.map(({ requestId }) => committed(requestId, requestId)) });
  }
  assert.deepEqual(batches, [[0, 1], [2], [3], [4, 5]]);
  assert.deepEqual(await Promise.all(all), [0, 1, 2, 3, 4, 5]);
});

test("a page's session id is a lowercase version 4 UUID, also where crypto.randomUUID is missing (plain HTTP pages)", () => {
  assert.match(randomSessionId(), uuid);
  const randomUUID = crypto.randomUUID;
  try {
    Object.defineProperty(crypto, "randomUUID", { value: undefined, configurable: true });
    const ids = new Set(Array.from({ length: 200 }, () => randomSessionId()));
    assert.equal(ids.size, 200);
    for (const id of ids) assert.match(id, uuid);
  } finally {
    Object.defineProperty(crypto, "randomUUID", { value: randomUUID, configurable: true, writable: true });
  }
});
