// Optimistic updates of client.js: the state machine (OptimisticUpdates, no I/O), the paginated helpers, and the
// client's passes with stand-ins for its stream reader and fetch. Run with `node --test Tests/ClientScriptTests/`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConvexGateway } from "../../Sources/ConvexGateway/Resources/client/gateway.js";
import {
  OptimisticUpdates,
  insertAtBottomIfLoaded,
  insertAtTop,
  optimisticallyUpdateValueInPaginatedQuery,
  queryKey,
} from "../../Sources/ConvexGateway/Resources/client/optimistic.js";
import { FakeEventStream } from "./fake-event-stream.mjs";

const until = async (condition, what = "timed out") => {
  for (let i = 0; i < 400 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(condition(), what);
};

const serverOf = (entries) => new Map(entries.map(([fn, args, value]) => [queryKey(fn, args), { fn, args, value }]));

// MARK: OptimisticUpdates

test("updates replay over the server's values in the order their mutations were called", () => {
  const updates = new OptimisticUpdates();
  const server = serverOf([["list", {}, ["a"]], ["count", {}, 1]]);
  updates.add((store) => store.setQuery("list", {}, [...store.getQuery("list", {}), "b"]));
  updates.add((store) => {
    store.setQuery("list", {}, [...store.getQuery("list", {}), "c"]);
    store.setQuery("count", {}, store.getQuery("count", {}) + 1);
  });
  const shown = updates.replay(server);
  assert.deepEqual(shown.get(queryKey("list", {})).value, ["a", "b", "c"], "stacked in order");
  assert.equal(shown.get(queryKey("count", {})).value, 2);
  assert.deepEqual(server.get(queryKey("list", {})).value, ["a"], "the server's values are untouched");
  assert.deepEqual(updates.replay(serverOf([["list", {}, ["a", "x"]], ["count", {}, 5]])).get(queryKey("list", {})).value,
    ["a", "x", "b", "c"], "replayed on top of new server values");
});

test("an update stays until the values reach its mutation's commit; a failure removes it at once", () => {
  const updates = new OptimisticUpdates();
  const first = updates.add(() => {});
  const second = updates.add(() => {});
  const third = updates.add(() => {});
  assert.equal(updates.answered(first, 2000n, 1500n), false, "held values older than the commit: kept");
  assert.equal(updates.answered(second, 1400n, 1500n), true, "held values already at the commit: dropped now");
  assert.equal(updates.awaitedTs, 2000n);
  assert.equal(updates.reached(1999n), false, "a transition before the commit drops nothing");
  assert.equal(updates.reached(2000n), true, "the transition at the commit drops it");
  assert.equal(updates.size, 1, "the unanswered mutation's update stays whatever the stream reaches");
  assert.equal(updates.reached(10n ** 18n), false);
  assert.equal(updates.remove(third), true, "a failed mutation's update is rolled back");
  assert.equal(updates.remove(third), false);
  assert.equal(updates.size, 0);
  const unknown = updates.add(() => {});
  assert.equal(updates.answered(unknown, undefined, undefined), true, "an answer without a timestamp drops it now");
});

test("transitions are held from the time an update's mutation is sent until every sent one is answered or failed", () => {
  const updates = new OptimisticUpdates();
  const first = updates.add(() => {});
  const second = updates.add(() => {});
  assert.equal(updates.holding, false, "not sent: a transition cannot hold the change yet");
  updates.sent(first);
  updates.sent(second);
  assert.equal(updates.holding, true);
  updates.hold("t1");
  updates.hold("t2");
  assert.equal(updates.answered(first, 2000n, 1000n), false);
  assert.deepEqual(updates.release(), [], "the second is still on the wire");
  updates.sent(first);
  assert.equal(updates.holding, true, "a resend of an answered mutation changes nothing");
  updates.remove(second);
  assert.equal(updates.holding, false);
  assert.deepEqual(updates.release(), ["t1", "t2"], "in the order they came");
  assert.deepEqual(updates.release(), [], "given once");
});

test("an update that throws is reported and skipped; the others still apply", () => {
  const updates = new OptimisticUpdates();
  const reported = [];
  const reportError = globalThis.reportError;
  globalThis.reportError = (error) => reported.push(error.message);
  try {
    updates.add(() => {
      throw new Error("broken update");
    });
    updates.add((store) => store.setQuery("count", {}, 7));
    assert.equal(updates.replay(serverOf([["count", {}, 1]])).get(queryKey("count", {})).value, 7);
    assert.deepEqual(reported, ["broken update"]);
  } finally {
    globalThis.reportError = reportError;
  }
});

test("the local store reads every live query of a function and treats a missing value as loading", () => {
  const updates = new OptimisticUpdates();
  let all;
  let missing;
  updates.add((store) => {
    all = store.getAllQueries("messages:list");
    missing = store.getQuery("messages:list", { channel: "none" });
  });
  updates.replay(serverOf([
    ["messages:list", { channel: "a" }, [1]],
    ["messages:list", { channel: "b" }, undefined],
    ["other", {}, 3],
  ]));
  assert.deepEqual(all, [{ args: { channel: "a" }, value: [1] }, { args: { channel: "b" }, value: undefined }]);
  assert.equal(missing, undefined);
});

// MARK: Paginated helpers

const page = (items, { isDone = false, cursor = null, id } = {}) => ({
  args: { channel: "c", paginationOpts: { numItems: 3, cursor, ...(id === undefined ? {} : { id }) } },
  value: { page: items, isDone, continueCursor: `after-${items.at(-1)}` },
});

function pagedStore(pages) {
  const updates = new OptimisticUpdates();
  const server = new Map(pages.map(({ args, value }) => [queryKey("feed:list", args), { fn: "feed:list", args, value }]));
  return { updates, server, pageItems: (shown) => [...shown.values()].map(({ value }) => value?.page) };
}

test("insertAtTop puts the item first in the first page of each matching list, once it has loaded", () => {
  const { updates, server, pageItems } = pagedStore([
    page(["b", "c", "d"], { id: 1 }),
    page(["e"], { cursor: "after-d", isDone: true, id: 1 }),
    page(["x"], { id: 2 }),
  ]);
  server.set(queryKey("feed:list", { channel: "other", paginationOpts: { numItems: 3, cursor: null } }), {
    fn: "feed:list", args: { channel: "other", paginationOpts: { numItems: 3, cursor: null } }, value: { page: ["o"], isDone: true, continueCursor: "z" },
  });
  updates.add((localQueryStore) =>
    insertAtTop({ paginatedQuery: "feed:list", argsToMatch: { channel: "c" }, localQueryStore, item: "a" }));
  assert.deepEqual(pageItems(updates.replay(server)), [["a", "b", "c", "d"], ["e"], ["a", "x"], ["o"]]);
});

test("insertAtBottomIfLoaded appends only to a loaded last page; the value updater maps every matching page", () => {
  const loaded = pagedStore([page(["a"], { id: 1 }), page(["b"], { cursor: "after-a", isDone: true, id: 1 })]);
  loaded.updates.add((localQueryStore) =>
    insertAtBottomIfLoaded({ paginatedQuery: "feed:list", localQueryStore, item: "z" }));
  loaded.updates.add((store) => optimisticallyUpdateValueInPaginatedQuery(store, "feed:list", { channel: "c" }, (item) => item.toUpperCase()));
  assert.deepEqual(loaded.pageItems(loaded.updates.replay(loaded.server)), [["A"], ["B", "Z"]]);

  const notLoaded = pagedStore([page(["a"], { id: 1 })]);
  notLoaded.updates.add((localQueryStore) =>
    insertAtBottomIfLoaded({ paginatedQuery: "feed:list", localQueryStore, item: "z" }));
  notLoaded.updates.add((store) => optimisticallyUpdateValueInPaginatedQuery(store, "feed:list", { channel: "d" }, () => "no"));
  assert.deepEqual(notLoaded.pageItems(notLoaded.updates.replay(notLoaded.server)), [["a"]], "no last page, no match: unchanged");
});

// MARK: The client

/** A gateway whose calls wait for the test to answer them, and its stream. */
async function pageWithStream(options = {}) {
  FakeEventStream.instances = [];
  const calls = [];
  globalThis.fetch = (url, init) => new Promise((resolve) => calls.push({ url: String(url), init, resolve }));
  const gateway = new ConvexGateway("http://gateway.test", { debounceMs: 0, eventStreamReader: FakeEventStream, ...options });
  const states = [];
  gateway.subscribe("messages:list", {}, (messages) => states.push(["list", messages]));
  gateway.subscribe("count", {}, (count) => states.push(["count", count]));
  await until(() => FakeEventStream.instances.length === 1);
  const stream = FakeEventStream.instances[0];
  stream.emit("open", {});
  stream.emit("transition", {
    ts: "1000", changes: [{ sub: "q1", value: ["a"], v: "h1" }, { sub: "q2", value: 1, v: "c1" }],
  });
  // Answers batch `index`: every mutation in it committed at `ts` with value `body` (status 200), or failed with
  // `status` and `body.error`.
  const answer = (index, status, ts, body) => {
    const { mutations } = JSON.parse(calls[index].init.body);
    const results = mutations.map(({ requestId }) =>
      status === 200 ? { requestId, value: body, ts } : { requestId, status, error: body.error });
    calls[index].resolve({
      ok: true, status: 200, headers: new Headers(ts === null ? {} : { "Convex-Timestamp": ts }), json: async () => ({ results }),
    });
  };
  return { gateway, states, stream, calls, answer };
}

const send = (gateway, body) =>
  gateway.mutation("messages:send", { body }, {
    optimisticUpdate: (store, args) => {
      const list = store.getQuery("messages:list", {});
      if (list !== undefined) store.setQuery("messages:list", {}, [...list, args.body]);
      store.setQuery("count", {}, store.getQuery("count", {}) + 1);
    },
  });

test("an optimistic update shows at once, stays over older transitions, and gives way to the mutation's own transition in one pass", async () => {
  const { gateway, states, stream, calls, answer } = await pageWithStream();
  states.length = 0;
  const sent = send(gateway, "b");
  assert.deepEqual(states, [["list", ["a", "b"]], ["count", 2]], "shown at once, before the answer");
  assert.deepEqual(gateway.current("messages:list", {}), ["a", "b"]);
  await until(() => calls.length === 1);
  assert.equal(calls[0].init.headers["Convex-Min-Timestamp"], "1000");

  // Another change while the mutation is on the wire: held until its answer, then applied with the update on top.
  states.length = 0;
  stream.emit("transition", { ts: "1500", changes: [{ sub: "q1", value: ["a", "x"], v: "h2" }] });
  assert.deepEqual(states, [], "held while the mutation is on the wire");
  answer(0, 200, "2000", null);
  await sent;
  assert.deepEqual(states, [["list", ["a", "x", "b"]]], "applied once answered, the update still on top");
  states.length = 0;
  stream.emit("transition", { ts: "1800", changes: [{ sub: "q2", value: 1, v: "c1b" }] });
  assert.deepEqual(states, [], "a transition before the commit keeps the update: nothing shown changes");

  states.length = 0;
  stream.emit("transition", {
    ts: "2000", changes: [{ sub: "q1", value: ["a", "x", "b"], v: "h3" }, { sub: "q2", value: 2, v: "c2" }],
  });
  assert.deepEqual(states, [], "the server's values replace it, equal to what was shown: no callback");
  states.length = 0;
  stream.emit("transition", { ts: "2100", changes: [{ sub: "q1", value: ["a", "x", "b", "c"], v: "h4" }] });
  assert.deepEqual(states, [["list", ["a", "x", "b", "c"]]], "dropped: later values are the server's alone");
  gateway.close();
});

test("a failed mutation rolls its update back at once; the ones after it stay stacked", async () => {
  const { gateway, states, calls, answer, stream } = await pageWithStream();
  states.length = 0;
  const first = send(gateway, "b");
  await until(() => calls.length === 1);
  // Called while the first is on the wire: it goes in the next batch.
  const second = send(gateway, "c");
  assert.deepEqual(states.at(-2), ["list", ["a", "b", "c"]]);
  assert.deepEqual(states.at(-1), ["count", 3]);
  states.length = 0;
  answer(0, 422, "1900", { error: { code: "ConvexError", message: "no" } });
  await assert.rejects(first, { code: "ConvexError" });
  assert.deepEqual(states, [["list", ["a", "c"]], ["count", 2]], "the failed one is gone, the other still shown");
  await until(() => calls.length === 2);
  assert.deepEqual(JSON.parse(calls[1].init.body).mutations.map(({ args }) => args.body), ["c"]);
  answer(1, 200, "2000", null);
  await second;
  states.length = 0;
  stream.emit("transition", { ts: "2000", changes: [{ sub: "q1", value: ["a", "c"], v: "h5" }, { sub: "q2", value: 2, v: "c5" }] });
  assert.deepEqual(states, [], "the server's values equal what was shown");
  stream.emit("transition", { ts: "2100", changes: [{ sub: "q2", value: 3, v: "c6" }] });
  assert.deepEqual(states, [["count", 3]], "dropped: the server's values alone");
  gateway.close();
});

test("the mutation's transition arriving before its answer is held until the answer, which drops the update: nothing shows twice", async () => {
  const { gateway, states, stream, calls, answer } = await pageWithStream();
  const sent = send(gateway, "b");
  await until(() => calls.length === 1);
  states.length = 0;
  stream.emit("transition", { ts: "2000", changes: [{ sub: "q1", value: ["a", "b"], v: "h2" }, { sub: "q2", value: 2, v: "c2" }] });
  assert.deepEqual(states, [], "held: not applied under the update");
  assert.deepEqual(gateway.current("messages:list", {}), ["a", "b"]);
  answer(0, 200, "2000", null);
  await sent;
  assert.deepEqual(states, [], "the server's values replace the update in one pass, equal to what was shown");
  stream.emit("transition", { ts: "2100", changes: [{ sub: "q2", value: 5, v: "c3" }] });
  assert.deepEqual(states, [["count", 5]], "dropped: the server's values alone");
  gateway.close();
});

test("when no transition reaches the commit, the stream is opened again at it and its first transition drops the update", async () => {
  const { gateway, states, calls, answer } = await pageWithStream({ catchUpMs: 20 });
  const sent = send(gateway, "b");
  await until(() => calls.length === 1);
  answer(0, 200, "3000", null);
  await sent;
  await until(() => FakeEventStream.instances.length === 2, "the stream was not opened again");
  const again = FakeEventStream.instances[1];
  assert.equal(again.headers["Convex-Min-Timestamp"], "3000", "opened at the commit");
  assert.deepEqual(again.subscriptions.map(([id, fn]) => [id, fn]), [["q1", "messages:list"], ["q2", "count"]]);
  states.length = 0;
  // The mutation changed neither query: the same values, at the commit.
  again.emit("transition", { ts: "3000", changes: [{ sub: "q1", value: ["a"], v: "h1" }, { sub: "q2", value: 1, v: "c1" }] });
  assert.deepEqual(states, [["list", ["a"]], ["count", 1]], "the server's values, in one pass");
  gateway.close();
});
