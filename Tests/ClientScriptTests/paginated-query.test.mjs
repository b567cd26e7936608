// Tests of `gateway.paginatedQuery` (PaginatedQuery, paginated-query.js), client.js's live paginated queries over the
// gateway's shared stream, under node's own test runner:
//   node --test Tests/ClientScriptTests/
// The gateway reads a stand-in stream (FakeEventStream) served from a simulated server that follows the contract of
// the gateway's PageReader (Sources/ConvexLocal/Pagination/PageReader.swift).
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConvexGateway } from "../../Sources/ConvexGateway/Resources/client/gateway.js";
import { FakeEventStream } from "./fake-event-stream.mjs";
import { FeedServer, shownItems } from "./feed-server.mjs";
import { seededRandom as random } from "./simulation.mjs";

const ids = (list) => list.map((entry) => entry._id);

// MARK: gateway.paginatedQuery over the shared stream

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));
const until = async (condition) => {
  for (let i = 0; i < 200 && !condition(); i++) await tick();
  assert.ok(condition(), "timed out");
};

/**
 * Serves the latest stream from `server`: the first event of a stream holds every value, later ones the changes.
 * `emitted` is the server's feed as of the last transition sent, what the client's values are of.
 */
class StreamServer {
  streams = new Map();
  transitions = 0;
  emitted = [];
  constructor(server, journals = undefined) {
    this.server = server;
    this.journals = journals;
  }
  get source() {
    const source = FakeEventStream.instances.at(-1);
    return source?.closed ? undefined : source;
  }
  emit() {
    const source = this.source;
    if (!source) return;
    const sent = this.streams.get(source) ?? new Map();
    this.streams.set(source, sent);
    const changes = [];
    for (const [id, fn, args] of source.subscriptions) {
      const answer = fn === "feed:list" ? this.server.run(args, this.journals) : { value: [] };
      const json = JSON.stringify(answer);
      if (sent.get(id) === json) continue;
      sent.set(id, json);
      changes.push(answer.error ? { sub: id, error: answer.error } : { sub: id, value: answer.value, v: json });
    }
    this.emitted = this.server.docs.map((doc) => ({ ...doc }));
    if (changes.length === 0) return;
    this.transitions += 1;
    source.emit("transition", { ts: String(this.transitions), changes });
  }
  /** Emits until the client stops re-opening its stream. */
  async settle() {
    for (let quiet = 0; quiet < 2; ) {
      const count = FakeEventStream.instances.length;
      await tick();
      await tick();
      if (FakeEventStream.instances.length !== count) {
        this.emit();
        quiet = 0;
      } else {
        quiet += 1;
      }
    }
  }
}

test("paginatedQuery: pages ride the one stream, and each transition makes one callback with the whole list", async () => {
  FakeEventStream.instances = [];
  const gateway = new ConvexGateway("http://gateway.test", { debounceMs: 0, eventStreamReader: FakeEventStream });
  const server = new FeedServer(random(7));
  for (let i = 0; i < 5; i++) server.insert("general");
  const stream = new StreamServer(server);
  const updates = [];
  const errors = [];
  const feed = gateway.paginatedQuery("feed:list", { channel: "general" }, { initialNumItems: 2 },
    (results, status) => updates.push([ids(results), status]),
    (error) => errors.push(error));
  const other = [];
  gateway.subscribe("messages:list", {}, (value) => other.push(value));
  assert.equal(feed.status, "LoadingFirstPage");
  assert.deepEqual(feed.results, []);
  assert.equal(feed.loadMore(2), false);
  await until(() => FakeEventStream.instances.length === 1);
  const listId = FakeEventStream.instances[0].subscriptions[0][2].paginationOpts.id;
  assert.ok(Number.isInteger(listId), "the first page carries the list's id");
  assert.deepEqual(FakeEventStream.instances[0].subscriptions.map(([, fn, args]) => [fn, args]), [
    ["feed:list", { channel: "general", paginationOpts: { numItems: 2, cursor: null, id: listId } }],
    ["messages:list", {}],
  ], "one stream for the pages and the other live queries");
  const all = ids(server.matching("general"));
  stream.emit();
  assert.deepEqual(updates, [[all.slice(0, 2), "CanLoadMore"]]);
  assert.deepEqual(other, [[]]);
  assert.deepEqual([ids(feed.results), feed.status], [all.slice(0, 2), "CanLoadMore"]);

  // loadMore: at once LoadingMore (the same list), then the pinned and the new page swap in in one callback.
  assert.equal(feed.loadMore(2), true);
  assert.deepEqual(updates.at(-1), [all.slice(0, 2), "LoadingMore"]);
  updates.length = 0;
  await stream.settle();
  assert.deepEqual(updates, [[all.slice(0, 4), "CanLoadMore"]], "one callback, no torn list");
  const pageArgs = stream.source.subscriptions
    .filter(([, fn]) => fn === "feed:list")
    .map(([, , args]) => args.paginationOpts);
  assert.equal(pageArgs.length, 2, "the unpinned page was stopped");
  assert.equal(pageArgs[0].endCursor, pageArgs[1].cursor, "the first page is pinned where the second starts");

  // A post at the start and the removal of the 4th post change both pages in one transition: one callback.
  updates.length = 0;
  server.insert("general", true);
  server.docs.splice(server.docs.findIndex((doc) => doc._id === all[3]), 1);
  stream.emit();
  assert.equal(updates.length, 1);
  const expected = ids(server.matching("general"));
  assert.deepEqual(updates[0][0], expected.slice(0, updates[0][0].length));

  // A page's failure: onError once for the pass; a later value recovers. InvalidCursor starts over.
  const source = stream.source;
  const pageIds = source.subscriptions.filter(([, fn]) => fn === "feed:list").map(([id]) => id);
  assert.equal(pageIds.length, 2);
  const [pinnedId, lastId] = pageIds;
  source.emit("transition", {
    ts: "90",
    changes: [
      { sub: pinnedId, error: { code: "FunctionFailed", message: "boom" } },
      { sub: lastId, error: { code: "FunctionFailed", message: "boom again" } },
    ],
  });
  assert.deepEqual(errors.map((error) => error.message), ["boom"], "one report per pass");
  updates.length = 0;
  server.version += 1;
  stream.emit();
  assert.deepEqual(updates.map(([, status]) => status), ["LoadingFirstPage"]);
  assert.deepEqual(updates[0][0], expected.slice(0, updates[0][0].length), "the list stays until the first page");
  assert.equal(errors.length, 1, "a start-over is not reported");
  await stream.settle();
  assert.deepEqual(updates.at(-1), [ids(server.matching("general")).slice(0, 2), "CanLoadMore"]);
  const openFirstPages = FakeEventStream.instances
    .flatMap((source) => source.subscriptions)
    .map(([, fn, args]) => fn === "feed:list" && args.paginationOpts)
    .filter((opts) => opts && opts.cursor === null && opts.endCursor === undefined);
  const restartId = openFirstPages.at(-1).id;
  assert.ok(Number.isInteger(restartId), "a new subscription: the old one's journal is of the old query");
  assert.notEqual(restartId, listId);
  const restarted = stream.source.subscriptions.filter(([, fn]) => fn === "feed:list").map(([, , args]) => args);
  assert.equal(restarted.length, 1);
  const { endCursor } = restarted[0].paginationOpts;
  assert.equal(typeof endCursor, "string");
  assert.deepEqual(restarted[0], { channel: "general", paginationOpts: { numItems: 2, cursor: null, endCursor } },
    "then pinned at its end");

  feed.stop();
  const count = updates.length;
  await stream.settle();
  assert.deepEqual(stream.source.subscriptions.map(([, fn]) => fn), ["messages:list"], "stop() ends every page");
  assert.equal(feed.loadMore(2), false);
  assert.equal(updates.length, count);
  gateway.close();
});

test("property: through the gateway, every callback shows a prefix of the server's list, without tears", async () => {
  FakeEventStream.instances = [];
  let callbacks = 0;
  // A callback's failed assertion would only be reported (client.js catches what a listener throws): keep it.
  const problems = [];
  const checked = (check) => (...values) => {
    try {
      check(...values);
    } catch (error) {
      problems.push(error);
    }
  };
  for (let seed = 1; seed <= 6; seed++) {
    const rand = random(1000 + seed);
    const server = new FeedServer(rand, { splitRecommendedAbove: seed % 2 === 0 ? 7 : Infinity });
    for (let i = 0; i < 6; i++) server.insert(i % 3 === 0 ? "random" : "general");
    const stream = new StreamServer(server, seed % 4 < 2 ? new Map() : undefined);
    const gateway = new ConvexGateway("http://gateway.test", { debounceMs: 0, eventStreamReader: FakeEventStream });
    let perTransition = 0;
    const onUpdate = checked((results, status) => {
      perTransition += 1;
      callbacks += 1;
      if (status === "LoadingFirstPage") return; // the list of before a start-over
      // The server as of the last transition: a loadMore's own callback may come after a change not yet sent.
      const expected = shownItems(stream.emitted.filter((doc) => doc.channel === "general"));
      const shown = shownItems(results);
      assert.deepEqual(shown, expected.slice(0, shown.length), `seed ${seed}: a prefix of the server's list`);
      if (status === "Exhausted") assert.equal(shown.length, expected.length, `seed ${seed}: everything`);
    });
    // Only an InvalidCursor that starting over could not cure is reported (a second invalidation soon after one).
    const onError = checked((error) => assert.equal(error.data?.paginationError, "InvalidCursor", String(error)));
    const feed = gateway.paginatedQuery("feed:list", { channel: "general" }, { initialNumItems: 2 }, onUpdate, onError);
    await stream.settle();
    for (let step = 0; step < 60; step++) {
      const roll = rand();
      if (roll < 0.04) server.version += 1;
      // Sometimes several changes in one transition (one mutation writing many posts), so several pages change.
      else for (let n = 1 + Math.floor(rand() * 3); n > 0; n--) server.mutate(["general", "random"]);
      if (rand() < 0.3) feed.loadMore(1 + Math.floor(rand() * 3));
      perTransition = 0;
      stream.emit();
      assert.ok(perTransition <= 1, `seed ${seed}: one callback per transition`);
      if (problems.length > 0) throw problems[0];
      if (rand() < 0.5) await stream.settle();
    }
    await stream.settle();
    for (let i = 0; i < 100 && feed.status !== "Exhausted"; i++) {
      feed.loadMore(3);
      await stream.settle();
    }
    assert.equal(feed.status, "Exhausted", `seed ${seed}`);
    assert.deepEqual(shownItems(feed.results), shownItems(server.matching("general")));
    gateway.close();
  }
  if (problems.length > 0) throw problems[0];
  assert.ok(callbacks > 100, `only ${callbacks} callbacks`);
});
