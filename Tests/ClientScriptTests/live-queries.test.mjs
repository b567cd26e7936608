// The page's live queries (live-queries.js): transitions held while an optimistic update's mutation is on the wire and
// applied, each in its own pass, once it is answered; and, through the whole client on a virtual clock, optimistic
// updates written without a guard never shown twice nor reordered, whichever connection brings what first.
// Run with `node --test Tests/ClientScriptTests/`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConvexGateway } from "../../Sources/ConvexGateway/Resources/client/gateway.js";
import { LiveQueries } from "../../Sources/ConvexGateway/Resources/client/live-queries.js";
import { SeenTimestamp } from "../../Sources/ConvexGateway/Resources/client/values.js";
import { FakeEventStream } from "./fake-event-stream.mjs";
import { SimulatedGateway, VirtualClock, seededRandom } from "./simulation.mjs";

const ROUNDS = 30;

/** An unguarded optimistic add, as Convex's docs write one. */
const add = (body) => (store) => {
  const list = store.getQuery("list", {});
  if (list !== undefined) store.setQuery("list", {}, [...list, `${body}*`]);
};

function liveList() {
  const clock = new VirtualClock();
  const behind = [];
  const queries = new LiveQueries({ seen: new SeenTimestamp(), timers: clock, onSetChanged: () => {}, onBehind: () => behind.push(clock.now) });
  const shown = [];
  queries.subscribe("list", {}, (value) => shown.push(value), (error) => shown.push(error.code));
  const [query] = queries.forStream();
  const byId = new Map([[query.id, query]]);
  const transition = (ts, value) => queries.receive(byId, { ts, changes: [{ sub: query.id, value, v: `h${ts}` }] }, (v) => v);
  transition("1", ["x"]);
  return { queries, shown, transition, clock, behind };
}

test("transitions that come while an update's mutation is on the wire are applied after its answer, each in its own pass", () => {
  const { queries, shown, transition } = liveList();
  const id = queries.addOptimistic(add("m"));
  transition("2", ["x", "y"]);
  assert.deepEqual(shown, [["x"], ["x", "m*"], ["x", "y", "m*"]], "not sent yet: applied under the update");
  queries.sent(id);
  transition("3", ["x", "y", "z"]);
  transition("4", ["x", "y", "z", "m"]);
  transition("5", ["x", "y", "z", "m", "w"]);
  assert.equal(shown.length, 3, "held while the mutation is on the wire");
  queries.answered(id, "4");
  assert.deepEqual(shown.slice(3), [["x", "y", "z", "m*"], ["x", "y", "z", "m"], ["x", "y", "z", "m", "w"]],
    "one pass per transition; the update dropped in the pass of its commit");
});

test("a failed mutation rolls its update back and releases the transitions held for it", () => {
  const { queries, shown, transition } = liveList();
  const id = queries.addOptimistic(add("m"));
  queries.sent(id);
  transition("2", ["x", "y"]);
  assert.deepEqual(shown, [["x"], ["x", "m*"]]);
  queries.failed(id);
  assert.deepEqual(shown, [["x"], ["x", "m*"], ["x"], ["x", "y"]]);
});

test("an answer whose commit no transition has reached waits catchUpMs, then has the stream opened again", async () => {
  const { queries, shown, transition, clock, behind } = liveList();
  const id = queries.addOptimistic(add("m"));
  queries.sent(id);
  queries.answered(id, "9");
  await clock.advance(249);
  assert.deepEqual(behind, []);
  await clock.advance(1);
  assert.deepEqual(behind, [250]);
  transition("9", ["x"]);
  assert.deepEqual(shown, [["x"], ["x", "m*"], ["x"]], "the mutation changed nothing shown: the update goes");
});

test("unguarded optimistic adds never show an item twice or out of order, the stream 300 ms before or after the answer", async () => {
  const orders = { before: 0, after: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const random = seededRandom(500 + round);
    const clock = new VirtualClock(random);
    const server = new SimulatedGateway(clock, () => random.int(0, 300));
    globalThis.fetch = server.fetch;
    FakeEventStream.instances = [];
    const gateway = new ConvexGateway("http://gateway.test", { timers: clock, debounceMs: 0, eventStreamReader: FakeEventStream, catchUpMs: 5000 });
    const shown = [];
    gateway.subscribe("list", {}, (value) => shown.push(value));
    await clock.advance(0);
    FakeEventStream.instances[0].emit("transition", { ts: "1000", changes: [{ sub: "q1", value: [], v: "h0" }] });
    // The server's list, and its stream: one transition per commit, in commit order, 0–600 ms after it.
    let list = [];
    let lastEmit = 0;
    const emitted = new Map();
    server.onCommit = ({ args, ts }) => {
      list = [...list, args.body];
      const value = list;
      lastEmit = Math.max(lastEmit, clock.now + random.int(0, 600));
      emitted.set(args.body, lastEmit);
      clock.after(lastEmit - clock.now, () =>
        FakeEventStream.instances.at(-1).emit("transition", { ts, changes: [{ sub: "q1", value, v: `h${ts}` }] }));
    };
    const n = random.int(1, 3);
    const answered = new Map();
    for (let i = 0; i < n; i++) {
      const body = `m${i}`;
      gateway.mutation("messages:send", { body }, { optimisticUpdate: add(body) }).then(() => answered.set(body, clock.now));
      await clock.advance(random.int(0, 400));
    }
    await clock.advance(10000);
    for (const state of shown) {
      const items = state.map((item) => item.replace("*", ""));
      assert.equal(new Set(items).size, items.length, `round ${round}: shown twice in ${JSON.stringify(state)}`);
      assert.deepEqual(items, [...items].sort(), `round ${round}: reordered in ${JSON.stringify(state)}`);
    }
    for (const [index, state] of shown.entries()) {
      if (index > 0) assert.ok(state.length >= shown[index - 1].length, `round ${round}: an item went away: ${JSON.stringify(shown)}`);
    }
    assert.deepEqual(shown.at(-1), list, "ends with the server's list");
    assert.equal(list.length, n);
    for (const [body, at] of emitted) orders[at < answered.get(body) ? "before" : "after"] += 1;
    gateway.close();
  }
  assert.ok(orders.before >= 5 && orders.after >= 5, `both orders seen: ${JSON.stringify(orders)}`);
});
