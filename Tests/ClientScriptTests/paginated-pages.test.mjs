// Unit tests of PageSubscriptions (paginated-pages.js), the pages of client.js's live paginated queries one by one,
// under node's own test runner:
//   node --test Tests/ClientScriptTests/
// The list they make is tested in paginated-state.test.mjs.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PageSubscriptions } from "../../Sources/ConvexGateway/Resources/client/paginated-pages.js";

const value = (count, continueCursor, extra = {}) => ({
  page: Array.from({ length: count }, (_, i) => ({ _id: `d${i}` })),
  isDone: false,
  continueCursor,
  ...extra,
});

test("pages are subscribed and stopped through effects, each id once", () => {
  const pages = new PageSubscriptions();
  const effects = PageSubscriptions.effects();
  assert.deepEqual(effects, { add: [], remove: [], errors: [] });
  const first = pages.add({ numItems: 2, cursor: null, id: 7 }, effects);
  const second = pages.add({ numItems: 2, cursor: "c" }, effects);
  assert.deepEqual(first, {
    id: "p1", paginationOpts: { numItems: 2, cursor: null, id: 7 }, value: undefined, loaded: false, split: null,
    wasSplit: false, pin: null, pinRefused: false,
  });
  assert.deepEqual(effects.add, [
    { id: "p1", paginationOpts: { numItems: 2, cursor: null, id: 7 } },
    { id: "p2", paginationOpts: { numItems: 2, cursor: "c" } },
  ]);
  assert.equal(pages.get("p2"), second);
  pages.remove(second, effects);
  pages.remove(second, effects);
  assert.deepEqual(effects.remove, ["p2"], "a page is stopped once");
  assert.equal(pages.get("p2"), undefined);
  const third = pages.add({ numItems: 1, cursor: "d" }, effects);
  assert.equal(third.id, "p3", "ids are not reused");
  const cleared = PageSubscriptions.effects();
  pages.clear(cleared);
  assert.deepEqual(cleared.remove, ["p1", "p3"]);
  assert.equal(pages.get("p1"), undefined);
});

test("a page's pending pin and split are stopped with it; without one, nothing is", () => {
  const pages = new PageSubscriptions();
  const effects = PageSubscriptions.effects();
  const page = pages.add({ numItems: 2, cursor: null }, effects);
  page.pin = pages.add({ numItems: 2, cursor: null, endCursor: "e" }, effects);
  page.split = [
    pages.add({ numItems: 2, cursor: null, endCursor: "s" }, effects),
    pages.add({ numItems: 2, cursor: "s", endCursor: "e" }, effects),
  ];
  const stopped = PageSubscriptions.effects();
  pages.removePin(page, stopped);
  pages.removeSplit(page, stopped);
  assert.deepEqual(stopped.remove, ["p2", "p3", "p4"]);
  assert.deepEqual([page.pin, page.split], [null, null]);
  pages.removePin(page, stopped);
  pages.removeSplit(page, stopped);
  assert.deepEqual(stopped.remove, ["p2", "p3", "p4"]);
  assert.equal(pages.get("p1"), page, "the page itself stays");
});

test("a page is pinned at its continueCursor, without the list's id", () => {
  const open = { paginationOpts: { numItems: 3, cursor: "a", id: 42 }, value: value(3, "after-c") };
  assert.deepEqual(PageSubscriptions.pinned(open), { numItems: 3, cursor: "a", endCursor: "after-c" });
  assert.deepEqual(open.paginationOpts, { numItems: 3, cursor: "a", id: 42 }, "the page's own arguments stay");
});

test("a page splits at its splitCursor with a pageStatus or more than twice initialNumItems items, up to its end", () => {
  const page = (paginationOpts, pageValue) => ({ paginationOpts, value: pageValue });
  const open = { numItems: 2, cursor: "c0", id: 5 };
  assert.equal(PageSubscriptions.halves(page(open, value(5, "c5")), 2), null, "no splitCursor, no split");
  assert.equal(PageSubscriptions.halves(page(open, value(4, "c4", { splitCursor: "c2" })), 2), null, "not too big");
  assert.deepEqual(PageSubscriptions.halves(page(open, value(5, "c5", { splitCursor: "c2" })), 2), [
    { numItems: 2, cursor: "c0", endCursor: "c2" },
    { numItems: 2, cursor: "c2", endCursor: "c5" },
  ], "an open page splits up to its continueCursor, and the halves carry no list id");
  const pinned = { numItems: 2, cursor: null, endCursor: "end" };
  const stopped = value(1, "c1", { splitCursor: "c0", pageStatus: "SplitRequired" });
  assert.deepEqual(PageSubscriptions.halves(page(pinned, stopped), 2), [
    { numItems: 2, cursor: null, endCursor: "c0" },
    { numItems: 2, cursor: "c0", endCursor: "end" },
  ], "a pageStatus splits a small page; a pinned page splits up to its endCursor");
});

test("a value is a page only with page, isDone and continueCursor; numItems is a whole number of at least 1", () => {
  assert.equal(PageSubscriptions.isResult(value(1, "c")), true);
  assert.equal(PageSubscriptions.isResult({ page: [], isDone: true, continueCursor: "end", splitCursor: null }), true);
  for (const wrong of [undefined, null, [], { page: [] }, { page: {}, isDone: false, continueCursor: "c" },
    { page: [], isDone: "no", continueCursor: "c" }, { page: [], isDone: false, continueCursor: null }]) {
    assert.equal(PageSubscriptions.isResult(wrong), false, JSON.stringify(wrong));
  }
  PageSubscriptions.checkNumItems(1, "numItems");
  for (const wrong of [0, -1, 2.5, "3", NaN, undefined]) {
    assert.throws(() => PageSubscriptions.checkNumItems(wrong, "numItems"), {
      name: "TypeError",
      message: "numItems must be a whole number of at least 1",
    });
  }
});

test("list ids are safe whole numbers, each above the last, even within one millisecond", () => {
  const ids = Array.from({ length: 2000 }, () => PageSubscriptions.newListId());
  assert.ok(ids.every(Number.isSafeInteger), "safe integers");
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `id ${i} above the one before`);
  assert.ok(ids[0] >= (Date.now() - 60_000) * 1024, "the time in milliseconds times 1024");
});
