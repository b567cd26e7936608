// Unit and property tests of PaginatedQueryState (paginated-state.js), the pages of client.js's live paginated queries
// as a state machine, under node's own test runner:
//   node --test Tests/ClientScriptTests/
// The state is driven directly. The property test pages through a simulated server that follows the contract of the
// gateway's PageReader (Sources/ConvexLocal/Pagination/PageReader.swift).
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConvexGatewayError } from "../../Sources/ConvexGateway/Resources/client/errors.js";
import { PaginatedQueryState } from "../../Sources/ConvexGateway/Resources/client/paginated-state.js";
import { FeedServer, invalidCursorBody, shownItems } from "./feed-server.mjs";
import { seededRandom as random } from "./simulation.mjs";

// MARK: Helpers

const item = (id) => ({ _id: id });
const ids = (list) => list.map((entry) => entry._id);
const result = (page, continueCursor, extra = {}) => ({ page: page.map(item), isDone: false, continueCursor, ...extra });
const invalidCursor = () => new ConvexGatewayError(undefined, invalidCursorBody);

/** `paginationOpts` without the list's id: the tests below name pages by their bounds (the ids have tests of their own). */
const withoutId = ({ id, ...paginationOpts }) => paginationOpts;

/** PaginatedQueryState with the set of subscriptions its effects describe, checked to be consistent. */
class Pages {
  subscribed = new Map();
  errors = [];
  constructor(initialNumItems, options) {
    this.state = new PaginatedQueryState(initialNumItems, options);
    this.apply(this.state.start());
  }
  apply(effects) {
    for (const { id, paginationOpts } of effects.add) {
      assert.ok(!this.subscribed.has(id), `${id} added twice`);
      this.subscribed.set(id, paginationOpts);
    }
    for (const id of effects.remove) {
      assert.ok(this.subscribed.delete(id), `${id} removed but not subscribed`);
    }
    this.errors.push(...effects.errors);
    return effects;
  }
  /** The id of the subscription whose paginationOpts, but for the list's id, are `opts`. */
  id(opts) {
    const found = [...this.subscribed].filter(([, value]) => JSON.stringify(withoutId(value)) === JSON.stringify(withoutId(opts)));
    assert.equal(found.length, 1, `one subscription ${JSON.stringify(opts)} in ${JSON.stringify([...this.subscribed])}`);
    return found[0][0];
  }
  receive(opts, value) {
    return this.apply(this.state.receive(this.id(opts), value));
  }
  fail(opts, error) {
    return this.apply(this.state.fail(this.id(opts), error));
  }
  loadMore(numItems) {
    const effects = this.state.loadMore(numItems);
    return effects && this.apply(effects);
  }
  /** The subscribed pages' paginationOpts, but for the list's id. */
  get opts() {
    return [...this.subscribed.values()].map(withoutId);
  }
  get results() {
    return ids(this.state.results);
  }
  get status() {
    return this.state.status;
  }
}

const first = { numItems: 3, cursor: null };
const first2 = { numItems: 2, cursor: null };

/** The one page a start-over adds: a first page with an id of its own. */
const restartedFirst = (effects, numItems = 3) => {
  assert.equal(effects.add.length, 1);
  const opts = effects.add[0].paginationOpts;
  assert.ok(Number.isInteger(opts.id), "a start-over's first page has an id");
  assert.deepEqual(opts, { numItems, cursor: null, id: opts.id });
  return opts;
};

// MARK: PaginatedQueryState

test("the first page: LoadingFirstPage, then its items, CanLoadMore or Exhausted", () => {
  const pages = new Pages(3);
  assert.deepEqual(pages.opts, [first]);
  assert.equal(pages.status, "LoadingFirstPage");
  assert.deepEqual(pages.results, []);
  assert.equal(pages.state.loadMore(3), null, "nothing to load more from yet");
  pages.receive(first, result(["a", "b", "c"], "after-c"));
  assert.deepEqual(pages.results, ["a", "b", "c"]);
  assert.equal(pages.status, "CanLoadMore");
  const before = pages.state.results;
  assert.equal(pages.state.results, before, "the same array while nothing changed");
  pages.receive(first, { page: [item("a")], isDone: true, continueCursor: "end" });
  assert.deepEqual(pages.results, ["a"]);
  assert.equal(pages.status, "Exhausted");
  assert.equal(pages.state.loadMore(3), null, "an exhausted query loads no more");
  assert.throws(() => pages.state.loadMore(0), TypeError);
  assert.throws(() => new PaginatedQueryState(2.5), TypeError);
});

test("pages with an open end carry the list's id, pages pinned at both ends none; each list and start-over has its own", () => {
  let next = 41;
  const pages = new Pages(3, { newId: () => ++next });
  assert.deepEqual([...pages.subscribed.values()], [{ numItems: 3, cursor: null, id: 42 }]);
  const pin = pages.receive(first, result(["a", "b", "c"], "after-c"));
  assert.deepEqual(pin.add.map((add) => add.paginationOpts), [{ numItems: 3, cursor: null, endCursor: "after-c" }],
    "once it has a value, the page is subscribed again pinned at its end: shared by every reader");
  const more = pages.loadMore(2);
  assert.deepEqual(more.add.map((add) => add.paginationOpts), [{ numItems: 2, cursor: "after-c", id: 42 }],
    "the new last page is this list's");
  pages.receive({ numItems: 3, cursor: null, endCursor: "after-c" }, result(["a", "b", "c"], "after-c"));
  const pinLast = pages.receive({ numItems: 2, cursor: "after-c" }, result(["d", "e"], "after-e"));
  assert.deepEqual(pinLast.add.map((add) => add.paginationOpts), [{ numItems: 2, cursor: "after-c", endCursor: "after-e" }]);
  const last = pages.loadMore(2);
  assert.deepEqual(last.add.map((add) => add.paginationOpts), [{ numItems: 2, cursor: "after-e", id: 42 }]);
  assert.equal(new Pages(3, { newId: () => ++next }).state.pages[0].paginationOpts.id, 43, "another list, another id");
  const restart = pages.fail({ numItems: 3, cursor: null, endCursor: "after-c" }, invalidCursor());
  assert.equal(restartedFirst(restart).id, 44, "a start-over takes a new id");
  // Without a test's ids: whole numbers, each above the last.
  const ids = [new PaginatedQueryState(1), new PaginatedQueryState(1)].map((state) => state.start().add[0].paginationOpts.id);
  assert.ok(ids.every(Number.isSafeInteger) && ids[1] > ids[0], `ids ${ids}`);
});

test("the last page is pinned at its end once it has a value, and swapped for the pinned page when that has one", () => {
  const pages = new Pages(3);
  const pinning = pages.receive(first, result(["a", "b", "c"], "after-c"));
  assert.deepEqual(pinning.add.map((add) => add.paginationOpts), [{ numItems: 3, cursor: null, endCursor: "after-c" }]);
  assert.deepEqual(pinning.remove, [], "the unpinned page stays until the pinned one has a value");
  assert.deepEqual([pages.results, pages.status], [["a", "b", "c"], "CanLoadMore"]);
  // A post at the start: the page grows (the deployment keeps where it ended), and so does the pinned one.
  pages.receive(first, result(["z", "a", "b", "c"], "after-c"));
  const shown = pages.state.results;
  const pinned = { numItems: 3, cursor: null, endCursor: "after-c" };
  const swap = pages.receive(pinned, result(["z", "a", "b", "c"], "after-c"));
  assert.equal(swap.remove.length, 1, "the unpinned page goes");
  assert.equal(pages.state.results, shown, "the same items: the list shown does not change");
  assert.deepEqual(pages.opts, [pinned]);
  assert.deepEqual(pages.state.pages.map((page) => withoutId(page.paginationOpts)), [pinned]);
  // The unpinned page started again from numItems (its stream moved to a replica that does not hold where it ended)
  // before the pinned page had a value: the pinned page's items, up to where the page ended, replace it.
  const moved = new Pages(3);
  moved.receive(first, result(["a", "b", "c"], "after-c"));
  moved.receive(first, result(["z", "a", "b"], "after-b"));
  moved.receive(pinned, result(["z", "a", "b", "c"], "after-c"));
  assert.deepEqual([moved.results, moved.status, moved.errors], [["z", "a", "b", "c"], "CanLoadMore", []]);
});

test("a pinned page of Convex values (BigInt, bytes) is compared by value: swapped in, and a change is shown", () => {
  const pages = new Pages(2);
  const doc = (n, bytes) => ({ _id: `d${n}`, n: BigInt(n), data: new Uint8Array(bytes).buffer });
  const value = (docs) => ({ page: docs, isDone: true, continueCursor: "end" });
  pages.receive(first2, value([doc(1, [1]), doc(2, [2])]));
  const shown = pages.state.results;
  pages.receive({ ...first2, endCursor: "end" }, value([doc(1, [1]), doc(2, [2])]));
  assert.equal(pages.state.results, shown, "the same values: no new list");
  assert.deepEqual(pages.opts, [{ ...first2, endCursor: "end" }]);
  pages.receive({ ...first2, endCursor: "end" }, value([doc(1, [1]), doc(2, [3])]));
  assert.notEqual(pages.state.results, shown, "a changed bytes field is a change");
  assert.deepEqual(new Uint8Array(pages.state.results[1].data), new Uint8Array([3]));
  assert.deepEqual(pages.errors, []);
});

test("loadMore adds a page at the last one's end and swaps both in only when the pinned and the new page have values", () => {
  const pages = new Pages(3);
  pages.receive(first, result(["a", "b", "c"], "after-c"));
  const effects = pages.loadMore(2);
  assert.deepEqual(effects.add.map((add) => withoutId(add.paginationOpts)), [{ numItems: 2, cursor: "after-c" }],
    "the pinned page on its way is the one the new page needs");
  assert.deepEqual(effects.remove, [], "the unpinned page stays until its replacements have values");
  assert.equal(pages.status, "LoadingMore");
  assert.equal(pages.state.loadMore(2), null, "one loadMore at a time");

  // Meanwhile a post at the start: the unpinned page moves, and is still what is shown.
  pages.receive(first, result(["z", "a", "b"], "after-b"));
  assert.deepEqual(pages.results, ["z", "a", "b"]);
  pages.receive({ numItems: 3, cursor: null, endCursor: "after-c" }, result(["z", "a", "b", "c"], "after-c"));
  assert.deepEqual(pages.results, ["z", "a", "b"], "the pinned page alone changes nothing");
  assert.equal(pages.status, "LoadingMore");
  const swap = pages.receive({ numItems: 2, cursor: "after-c" }, result(["d", "e"], "after-e"));
  assert.equal(swap.remove.length, 1, "the unpinned page goes");
  assert.deepEqual(swap.add.map((add) => withoutId(add.paginationOpts)), [
    { numItems: 2, cursor: "after-c", endCursor: "after-e" },
  ], "the new last page is pinned in its turn");
  assert.deepEqual(pages.results, ["z", "a", "b", "c", "d", "e"], "no gap, no duplicate");
  assert.equal(pages.status, "CanLoadMore");
  assert.deepEqual(
    pages.state.pages.map((page) => withoutId(page.paginationOpts)),
    [{ numItems: 3, cursor: null, endCursor: "after-c" }, { numItems: 2, cursor: "after-c" }],
  );

  // A loadMore before the last page's pinned page has a value; the new page may arrive before the pinned one.
  pages.loadMore(4);
  pages.receive({ numItems: 4, cursor: "after-e" }, { page: [item("f")], isDone: true, continueCursor: "end" });
  assert.deepEqual(pages.results, ["z", "a", "b", "c", "d", "e"]);
  assert.equal(pages.status, "LoadingMore");
  pages.receive({ numItems: 2, cursor: "after-c", endCursor: "after-e" }, result(["d", "e"], "after-e"));
  assert.deepEqual(pages.results, ["z", "a", "b", "c", "d", "e", "f"]);
  assert.equal(pages.status, "Exhausted", "the last page is done");
  assert.deepEqual(pages.opts, [
    { numItems: 3, cursor: null, endCursor: "after-c" },
    { numItems: 2, cursor: "after-c", endCursor: "after-e" },
    { numItems: 4, cursor: "after-e" },
    { numItems: 4, cursor: "after-e", endCursor: "end" },
  ], "a done page is pinned too, at the end, which posts after it still reach");
  assert.deepEqual(pages.errors, []);
});

test("Exhausted follows the last page: an item added after its end makes it CanLoadMore again", () => {
  const pages = new Pages(3);
  pages.receive(first, { page: [item("a"), item("b")], isDone: true, continueCursor: "end" });
  assert.equal(pages.status, "Exhausted");
  pages.receive(first, { page: [item("a"), item("b"), item("c")], isDone: true, continueCursor: "end" });
  assert.equal(pages.status, "Exhausted");
  pages.receive(first, result(["a", "b", "c"], "after-c"));
  assert.equal(pages.status, "CanLoadMore");
});

test("a page is split in two when it holds more than twice initialNumItems, swapped in when both halves have values", () => {
  const pages = new Pages(2);
  const firstPage = { numItems: 2, cursor: null };
  pages.receive(firstPage, result(["a", "b"], "after-b"));
  pages.loadMore(2);
  pages.receive({ numItems: 2, cursor: null, endCursor: "after-b" }, result(["a", "b"], "after-b"));
  pages.receive({ numItems: 2, cursor: "after-b" }, result(["c", "d"], "after-d"));
  assert.deepEqual(pages.results, ["a", "b", "c", "d"]);

  // Posts at the start grow the pinned first page to 5 items (more than 2 × 2): it splits at its splitCursor.
  const pinned = { numItems: 2, cursor: null, endCursor: "after-b" };
  const grown = result(["x", "y", "z", "a", "b"], "after-b", { splitCursor: "after-z" });
  const effects = pages.receive(pinned, grown);
  assert.deepEqual(pages.results, ["x", "y", "z", "a", "b", "c", "d"]);
  assert.deepEqual(effects.add.map((add) => withoutId(add.paginationOpts)), [
    { numItems: 2, cursor: null, endCursor: "after-z" },
    { numItems: 2, cursor: "after-z", endCursor: "after-b" },
  ]);
  assert.deepEqual(effects.remove, []);
  assert.equal(pages.status, "CanLoadMore", "a split is no loadMore");

  // Split at most once: another value of the same page starts no second split.
  const again = pages.receive(pinned, result(["w", "x", "y", "z", "a", "b"], "after-b", { splitCursor: "after-y" }));
  assert.deepEqual(again.add, []);
  assert.deepEqual(pages.results, ["w", "x", "y", "z", "a", "b", "c", "d"]);

  const shown = pages.state.results;
  pages.receive({ numItems: 2, cursor: null, endCursor: "after-z" }, result(["w", "x", "y", "z"], "after-z"));
  assert.equal(pages.state.results, shown, "one half alone changes nothing");
  const swap = pages.receive({ numItems: 2, cursor: "after-z", endCursor: "after-b" }, result(["a", "b"], "after-b"));
  assert.equal(swap.remove.length, 1, "the split page goes");
  assert.deepEqual(pages.results, ["w", "x", "y", "z", "a", "b", "c", "d"]);
  assert.deepEqual(
    pages.state.pages.map((page) => withoutId(page.paginationOpts)),
    [
      { numItems: 2, cursor: null, endCursor: "after-z" },
      { numItems: 2, cursor: "after-z", endCursor: "after-b" },
      { numItems: 2, cursor: "after-b" },
    ],
  );
  // The first half (4 items, no more than 2 × 2, no pageStatus) stays whole even with a splitCursor.
  assert.deepEqual(
    pages.receive(
      { numItems: 2, cursor: null, endCursor: "after-z" },
      result(["w", "x", "y", "z"], "after-z", { splitCursor: "after-x" }),
    ).add,
    [],
  );
});

test("a pageStatus splits a small page; a SplitRequired page splits up to its endCursor, not where it stopped", () => {
  const pages = new Pages(3);
  pages.receive(first, result(["a", "b", "c"], "after-c"));
  pages.loadMore(3);
  pages.receive({ numItems: 3, cursor: null, endCursor: "after-c" }, result(["a", "b", "c"], "after-c"));
  pages.receive({ numItems: 3, cursor: "after-c" }, result(["d", "e", "f"], "after-f"));
  // The pinned first page reached the read limit after "b": it stopped there, its continueCursor is not its end.
  const effects = pages.receive(
    { numItems: 3, cursor: null, endCursor: "after-c" },
    result(["a", "b"], "after-b", { splitCursor: "after-a", pageStatus: "SplitRequired" }),
  );
  assert.deepEqual(effects.add.map((add) => withoutId(add.paginationOpts)), [
    { numItems: 3, cursor: null, endCursor: "after-a" },
    { numItems: 3, cursor: "after-a", endCursor: "after-c" },
  ]);
  // The unpinned last page splits up to its continueCursor, and SplitRecommended is enough.
  const last = pages.receive(
    { numItems: 3, cursor: "after-c" },
    result(["d", "e"], "after-f", { splitCursor: "after-d", pageStatus: "SplitRecommended" }),
  );
  assert.deepEqual(last.add.map((add) => withoutId(add.paginationOpts)), [
    { numItems: 3, cursor: "after-c", endCursor: "after-d" },
    { numItems: 3, cursor: "after-d", endCursor: "after-f" },
  ]);
  // A loadMore from a pinned last page starts at its endCursor, not where a SplitRequired read stopped: the split
  // fills the page up to its end, so starting before it would show items twice.
  const tail = new Pages(1);
  tail.receive({ numItems: 1, cursor: null }, result(["a", "b", "c"], "after-c", { splitCursor: "after-b" }));
  tail.receive({ numItems: 1, cursor: null, endCursor: "after-b" }, result(["a", "b"], "after-b"));
  tail.receive({ numItems: 1, cursor: "after-b", endCursor: "after-c" }, result(["c"], "after-c"));
  assert.deepEqual(tail.results, ["a", "b", "c"]);
  tail.receive({ numItems: 1, cursor: "after-b", endCursor: "after-c" },
    result(["b2", "b3"], "after-b3", { splitCursor: "after-b2", pageStatus: "SplitRequired" }));
  const fromEnd = tail.loadMore(2);
  assert.deepEqual(fromEnd.add.map((add) => withoutId(add.paginationOpts)).at(-1), { numItems: 2, cursor: "after-c" });
  // Without a splitCursor nothing splits, whatever the size.
  const lone = new Pages(1);
  const lonePage = result(["a"], "after-a", { pageStatus: "SplitRecommended" });
  assert.deepEqual(lone.receive({ numItems: 1, cursor: null }, lonePage).add.map((add) => withoutId(add.paginationOpts)), [
    { numItems: 1, cursor: null, endCursor: "after-a" },
  ], "only its pinned page");
});

test("loadMore gives up a split pending on the unpinned last page; on a pinned last page the split goes on", () => {
  const pages = new Pages(1);
  const firstPage = { numItems: 1, cursor: null };
  pages.receive(firstPage, result(["a"], "after-a", { splitCursor: "after-a", pageStatus: "SplitRecommended" }));
  assert.equal(pages.subscribed.size, 3, "the page and its two halves");
  const effects = pages.loadMore(2);
  assert.equal(effects.remove.length, 2, "the halves are stopped");
  assert.deepEqual(pages.opts, [
    firstPage,
    { numItems: 1, cursor: null, endCursor: "after-a" },
    { numItems: 2, cursor: "after-a" },
  ]);
  // While a loadMore replaces it, the unpinned page starts no split, however big it grows (the pinned page may).
  const busy = new Pages(1);
  busy.receive(firstPage, result(["a"], "after-a"));
  busy.loadMore(2);
  const grown = result(["z", "y", "x", "a"], "after-a", { splitCursor: "after-y", pageStatus: "SplitRecommended" });
  assert.deepEqual(busy.receive(firstPage, grown).add, []);
  busy.receive({ numItems: 1, cursor: null, endCursor: "after-a" }, result(["z", "y", "x", "a"], "after-a"));
  busy.receive({ numItems: 2, cursor: "after-a" }, result(["b"], "end", { isDone: true }));
  assert.deepEqual(busy.results, ["z", "y", "x", "a", "b"]);

  const pinned = new Pages(1);
  pinned.receive(firstPage, result(["a"], "after-a"));
  pinned.loadMore(1);
  pinned.receive({ numItems: 1, cursor: null, endCursor: "after-a" }, result(["a"], "after-a"));
  pinned.receive({ numItems: 1, cursor: "after-a" }, result(["b"], "after-b"));
  pinned.loadMore(1);
  pinned.receive({ numItems: 1, cursor: "after-a", endCursor: "after-b" }, result(["b"], "after-b"));
  pinned.receive({ numItems: 1, cursor: "after-b" }, result(["c"], "after-c"));
  // The pinned middle page grows and splits; then a loadMore from the (unpinned) last page.
  pinned.receive(
    { numItems: 1, cursor: "after-a", endCursor: "after-b" },
    result(["a2", "a3", "b"], "after-b", { splitCursor: "after-a2" }),
  );
  assert.equal(pinned.subscribed.size, 6, "three pages, the last one's pinned page and the middle one's halves");
  const more = pinned.loadMore(1);
  assert.deepEqual(more.remove, [], "the middle page's split is not the last page's");
  assert.equal(pinned.subscribed.size, 7);
});

test("InvalidCursor drops every page and starts again; the list stays shown until the new first page arrives", () => {
  const pages = new Pages(3);
  pages.receive(first, result(["a", "b", "c"], "after-c"));
  pages.loadMore(3);
  pages.receive({ numItems: 3, cursor: null, endCursor: "after-c" }, result(["a", "b", "c"], "after-c"));
  pages.receive({ numItems: 3, cursor: "after-c" }, result(["d", "e", "f"], "after-f"));
  pages.loadMore(3);
  assert.equal(pages.subscribed.size, 4);
  const shown = pages.state.results;
  const effects = pages.fail({ numItems: 3, cursor: "after-c" }, invalidCursor());
  assert.equal(effects.remove.length, 4, "every page, shown or pending");
  const fresh = restartedFirst(effects);
  assert.deepEqual(effects.errors, [], "an InvalidCursor that starts again is no failure to report");
  assert.equal(pages.status, "LoadingFirstPage");
  assert.equal(pages.state.results, shown, "the list stays until the new first page arrives");
  assert.equal(pages.state.loadMore(3), null);
  const pin = pages.receive(fresh, result(["A", "B", "C"], "new-after-C"));
  assert.deepEqual(pages.results, ["A", "B", "C"]);
  assert.equal(pages.status, "CanLoadMore");
  // The page is pinned at the new query's cursor, with no id (shared by every reader); the new last page has the
  // start-over's id.
  assert.deepEqual(pin.add.map((add) => add.paginationOpts), [{ ...withoutId(fresh), endCursor: "new-after-C" }]);
  const more = pages.loadMore(3);
  assert.deepEqual(more.add.map((add) => add.paginationOpts), [{ numItems: 3, cursor: "new-after-C", id: fresh.id }]);
});

test("InvalidCursor on the very first page (a journal's old cursor) starts over with a new subscription", () => {
  // The deployment's journal of the first page holds where it ended, in the query as it was: a new `id` makes the
  // start-over's first page a new subscription, without that journal.
  const pages = new Pages(3);
  pages.receive(first, result(["a", "b", "c"], "after-c"));
  const effects = pages.fail(first, invalidCursor());
  assert.deepEqual(effects.remove.length, 2, "the page and its pinned page");
  const fresh = restartedFirst(effects);
  assert.deepEqual(pages.results, ["a", "b", "c"]);
  pages.receive(fresh, result(["c", "b", "a"], "after-a"));
  // The query changes again: the new first page, which had a value, starts over once more, with another id.
  const again = restartedFirst(pages.fail(fresh, invalidCursor()));
  assert.notEqual(again.id, fresh.id);
  assert.deepEqual(pages.errors, []);
  // A new first page refused before its first value is reported: starting over again would loop.
  const error = invalidCursor();
  assert.deepEqual(pages.fail(again, error), { add: [], remove: [], errors: [error] });
  assert.equal(pages.status, "LoadingFirstPage");
  pages.receive(again, result(["x"], "after-x"));
  assert.deepEqual([pages.results, pages.status], [["x"], "CanLoadMore"], "a later value recovers");
});

test("InvalidCursor that starting over did not cure is reported and given up, not looped on", () => {
  const pages = new Pages(3);
  pages.receive(first, result(["a", "b", "c"], "after-c"));
  pages.loadMore(3);
  const fresh = restartedFirst(pages.fail({ numItems: 3, cursor: "after-c" }, invalidCursor()));

  // After a start-over and before any loadMore completed: a loadMore page failing is reported and given up.
  pages.receive(fresh, result(["a", "b", "c"], "after-c"));
  pages.loadMore(3);
  const givenUp = pages.fail({ numItems: 3, cursor: "after-c" }, invalidCursor());
  assert.deepEqual([givenUp.add.length, givenUp.remove.length, givenUp.errors.length], [0, 1, 1]);
  assert.equal(pages.status, "CanLoadMore", "the loadMore is given up, so it may be asked again");
  assert.deepEqual(pages.opts, [withoutId(fresh), { ...withoutId(fresh), endCursor: "after-c" }],
    "the page keeps its pinned page on its way");

  // Once a loadMore completed, cursors are proven again, and a later InvalidCursor starts over once more.
  pages.loadMore(3);
  pages.receive({ ...fresh, endCursor: "after-c" }, result(["a", "b", "c"], "after-c"));
  pages.receive({ numItems: 3, cursor: "after-c" }, result(["d"], "end", { isDone: true }));
  assert.equal(pages.status, "Exhausted");
  const restart = pages.apply(pages.state.fail(pages.id({ numItems: 3, cursor: "after-c" }), invalidCursor()));
  restartedFirst(restart);
  assert.deepEqual(restart.errors, []);

  // A split's half failing after a start-over: the split is given up and not tried again.
  const split = new Pages(1);
  split.receive({ numItems: 1, cursor: null }, result(["a"], "after-a"));
  split.loadMore(1);
  const splitFresh = restartedFirst(split.fail({ numItems: 1, cursor: null, endCursor: "after-a" }, invalidCursor()), 1);
  const big = result(["a", "b"], "after-b", { splitCursor: "after-a", pageStatus: "SplitRecommended" });
  split.receive(splitFresh, big);
  assert.equal(split.subscribed.size, 3);
  const half = split.fail({ numItems: 1, cursor: "after-a", endCursor: "after-b" }, invalidCursor());
  assert.deepEqual([half.remove.length, half.errors.length], [2, 1]);
  assert.deepEqual(half.add.map((add) => withoutId(add.paginationOpts)), [
    { numItems: 1, cursor: null, endCursor: "after-b" },
  ], "the page is pinned instead");
  const bigger = { ...big, page: [item("a"), item("b"), item("c")] };
  assert.deepEqual(split.receive(splitFresh, bigger).add, [], "split once");
});

test("a page's failure is reported and its items stay; its next value recovers", () => {
  const pages = new Pages(3);
  pages.receive(first, result(["a", "b", "c"], "after-c"));
  const error = new ConvexGatewayError(undefined, { code: "FunctionFailed", message: "boom" });
  assert.deepEqual(pages.fail(first, error).errors, [error]);
  assert.deepEqual(pages.results, ["a", "b", "c"]);
  assert.equal(pages.status, "CanLoadMore");
  pages.receive(first, result(["a", "b", "d"], "after-d"));
  assert.deepEqual(pages.results, ["a", "b", "d"]);
  // A failing loadMore page keeps the status LoadingMore until it has a value.
  pages.loadMore(1);
  pages.fail({ numItems: 1, cursor: "after-d" }, error);
  assert.equal(pages.status, "LoadingMore");
  pages.receive({ numItems: 3, cursor: null, endCursor: "after-d" }, result(["a", "b", "d"], "after-d"));
  pages.receive({ numItems: 1, cursor: "after-d" }, result(["e"], "after-e"));
  assert.deepEqual(pages.results, ["a", "b", "d", "e"]);
  // A value that is not a page is reported; values of stopped pages are ignored.
  const wrong = pages.receive({ numItems: 1, cursor: "after-d" }, ["not", "a", "page"]);
  assert.ok(wrong.errors[0] instanceof TypeError);
  assert.deepEqual(pages.state.receive("p999", result(["x"], "after-x")), { add: [], remove: [], errors: [] });
  assert.deepEqual(pages.results, ["a", "b", "d", "e"]);
});

// MARK: Property: PaginatedQueryState against the simulated server

test("property: the list is always the server's items of the pages' range, with no duplicate and no gap", () => {
  let checks = 0;
  let restarts = 0;
  let splits = 0;
  let loads = 0;
  for (let seed = 1; seed <= 60; seed++) {
    const rand = random(seed);
    const server = new FeedServer(rand, { splitRecommendedAbove: seed % 3 === 0 ? 9 : Infinity });
    const channel = seed % 2 === 0 ? "general" : undefined;
    const channels = ["general", "random"];
    for (let i = 0; i < 8; i++) server.insert(channels[i % 2]);
    const initialNumItems = 1 + Math.floor(rand() * 3);
    const state = new PaginatedQueryState(initialNumItems);
    const journals = seed % 4 < 2 ? new Map() : undefined;
    // The subscriptions: arguments, the JSON last delivered, and how many transitions until it first has a value
    // (a new subscription joins the stream a little later).
    const subscriptions = new Map();
    const apply = (effects) => {
      for (const { id, paginationOpts } of effects.add) {
        subscriptions.set(id, { args: { channel, paginationOpts }, sent: undefined, wait: Math.floor(rand() * 3) });
      }
      for (const id of effects.remove) assert.ok(subscriptions.delete(id));
      for (const error of effects.errors) assert.equal(error.data?.paginationError, "InvalidCursor", String(error));
    };
    apply(state.start());
    // One transition: every joined subscription whose value changed, applied before the list is looked at.
    const transition = () => {
      const changes = [];
      for (const [id, subscription] of subscriptions) {
        if (subscription.wait-- > 0) continue;
        const answer = server.run(subscription.args, journals);
        const json = JSON.stringify(answer);
        if (json !== subscription.sent) {
          subscription.sent = json;
          changes.push([id, answer]);
        }
      }
      for (const [id, answer] of changes) {
        const before = state.status;
        if (answer.error) {
          apply(state.fail(id, new ConvexGatewayError(undefined, answer.error)));
          if (state.status === "LoadingFirstPage" && before !== "LoadingFirstPage") restarts += 1;
        } else {
          const effects = state.receive(id, answer.value);
          const halves = effects.add.filter((add) => add.paginationOpts.endCursor !== undefined);
          if (effects.add.length === 2 && halves.length === 2) splits += 1;
          apply(effects);
        }
      }
      check();
    };
    const check = () => {
      if (state.status === "LoadingFirstPage") return;
      const pages = state.pages;
      const last = pages.at(-1);
      const end = server.decode(last.paginationOpts.endCursor ?? last.value.continueCursor, false);
      const expected = server.matching(channel).filter((doc) => !FeedServer.follows(end, doc));
      const shown = shownItems(state.results);
      assert.deepEqual(shown, shownItems(expected), `seed ${seed}: the pages' range, exactly`);
      assert.equal(new Set(shown).size, shown.length, `seed ${seed}: no duplicates`);
      if (state.status === "Exhausted") assert.deepEqual(shown, shownItems(server.matching(channel)));
      checks += 1;
    };
    for (let step = 0; step < 150; step++) {
      const roll = rand();
      if (roll < 0.03) server.version += 1; // every cursor becomes invalid
      else if (roll < 0.75) server.mutate(channels);
      if (rand() < 0.3 && state.status === "CanLoadMore") {
        apply(state.loadMore(1 + Math.floor(rand() * 3)));
        loads += 1;
      }
      transition();
    }
    // Quiet: everything joins; then page to the end.
    for (let i = 0; i < 4; i++) transition();
    for (let i = 0; i < 200 && state.status !== "Exhausted"; i++) {
      if (state.status === "CanLoadMore") apply(state.loadMore(initialNumItems));
      transition();
    }
    assert.equal(state.status, "Exhausted", `seed ${seed}`);
    assert.deepEqual(shownItems(state.results), shownItems(server.matching(channel)), `seed ${seed}: everything`);
  }
  assert.ok(checks > 5000, `only ${checks} checks`);
  assert.ok(restarts > 10, `only ${restarts} start-overs`);
  assert.ok(splits > 50, `only ${splits} splits`);
  assert.ok(loads > 500, `only ${loads} loadMores`);
});
