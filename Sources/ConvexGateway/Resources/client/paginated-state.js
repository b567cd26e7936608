/**
 * The pages of a live paginated query as one list, by convex-js' `usePaginatedQuery` rules: PaginatedQueryState, a
 * state machine with no network and no clock over the pages of paginated-pages.js, which PaginatedQuery
 * (paginated-query.js) drives with the gateway's subscriptions. Part of client.js (see gateway.js).
 */

import { PageSubscriptions } from "./paginated-pages.js";
import { stableKey } from "./values.js";

/**
 * The pages of one live paginated query, as a state machine with no network and no clock: `ConvexGateway`'s
 * `paginatedQuery` feeds it each page's values and errors and does what it answers. Every method returns the effects
 * of PageSubscriptions: the page subscriptions to add (with the `paginationOpts` argument of each), those to stop, and
 * the failures to report. `results` and `status` are the visible list and the status.
 *
 * - The first page is `{ numItems: initialNumItems, cursor: null, id }`. `id`, the list's own number, is in every page
 *   whose end is open (the first, and the last one `loadMore` adds), so that the page is a subscription of its own and
 *   starts at `numItems` (see `PageSubscriptions.newListId`). Pages pinned at both ends carry no id.
 * - Once the last page has a value and no end cursor (only the last page can lack one), it is pinned: subscribed
 *   again with its end in its arguments (`PageSubscriptions.pinned`), and replaced by that pinned page when it has a
 *   value. Pinned, every loaded page has its boundaries in the subscriptions' arguments.
 * - `loadMore(n)`, when the last page has loaded and is not done and no other page is loading, adds the page
 *   `{ numItems: n, cursor: <the last page's end>, id }`. A last page not yet swapped for its pinned page is replaced by
 *   that pinned page (subscribed again if its end moved since) and the new page together, when both have values; a
 *   split pending on it is given up (the pinned page may split in its turn).
 * - A page whose value asks to be split (`PageSubscriptions.halves`) is split once: its two halves replace it when both
 *   have values.
 * - `InvalidCursor` on any page drops every page and starts again from a first page `{ numItems: initialNumItems,
 *   cursor: null, id }` with a new id, which makes it a new subscription, since the deployment may hold the old one's
 *   journal (where the page ended), a cursor of the query as it was. The list shown stays until the new first page
 *   arrives (status `"LoadingFirstPage"` meanwhile). After a start-over and until a loadMore, split or pin completes,
 *   an `InvalidCursor` is reported instead (and the loadMore, split or pin it belongs to given up; a page whose pin was
 *   refused is not pinned again): the new first page refused before its first value, or a cursor it gave refused. Only
 *   the new first page failing after it had a value (the query changed again) starts over again. Nothing repeats by
 *   itself.
 * - Any other failure is reported; the page keeps its last value, and its next value counts as recovery.
 */
export class PaginatedQueryState {
  #initialNumItems;
  /** The list's `paginationOpts.id`, in each page whose end is open; a start-over takes a new one. */
  #listId;
  /** Makes list ids. */
  #newId;
  /** The shown pages, in order (each as PageSubscriptions describes a page). */
  #pages = [];
  /** Every subscribed page by id: the shown ones and the ones waiting to replace some. */
  #subscribed = new PageSubscriptions();
  /** The pending loadMore: { last: the unpinned page it replaces (null if the last page was pinned), pinned, next }. */
  #loading = null;
  /** The list shown when the pages were dropped, shown until the new first page arrives. */
  #stale = undefined;
  /** The pages were dropped for an InvalidCursor (so the first page is the new one), and no loadMore, split or pin has
   * completed since. */
  #restarted = false;
  #results = [];
  #dirty = false;

  /**
   * @param {number} initialNumItems The first page's size, and the measure of a page to split (twice this).
   * @param {{ newId?: () => number }} [options] Where list ids come from (a test's, or `PageSubscriptions.newListId`).
   */
  constructor(initialNumItems, { newId = PageSubscriptions.newListId } = {}) {
    PageSubscriptions.checkNumItems(initialNumItems, "initialNumItems");
    this.#initialNumItems = initialNumItems;
    this.#newId = newId;
    this.#listId = newId();
  }

  /** Subscribes the first page. */
  start() {
    const effects = PageSubscriptions.effects();
    this.#pages = [this.#subscribed.add({ numItems: this.#initialNumItems, cursor: null, id: this.#listId }, effects)];
    return effects;
  }

  /** The visible list: the concatenation of the shown pages' `page` arrays (the same array while it is unchanged). */
  get results() {
    if (this.#dirty) {
      this.#dirty = false;
      this.#results = this.#pages[0]?.loaded ? this.#pages.flatMap((page) => page.value.page) : (this.#stale ?? []);
    }
    return this.#results;
  }

  get status() {
    if (!this.#pages[0]?.loaded) return "LoadingFirstPage";
    if (this.#loading) return "LoadingMore";
    return this.#pages.at(-1).value.isDone ? "Exhausted" : "CanLoadMore";
  }

  /** The shown pages, in order: `{ id, paginationOpts, value }` (value undefined before the first page's). */
  get pages() {
    return this.#pages.map(({ id, paginationOpts, value }) => ({ id, paginationOpts, value }));
  }

  /** Adds a page of up to `numItems` after the last (see above); null, changing nothing, unless `"CanLoadMore"`. */
  loadMore(numItems) {
    PageSubscriptions.checkNumItems(numItems, "numItems");
    if (this.status !== "CanLoadMore") return null;
    const effects = PageSubscriptions.effects();
    const last = this.#pages.at(-1);
    const { endCursor } = last.paginationOpts;
    if (endCursor !== undefined) {
      const next = this.#subscribed.add({ numItems, cursor: endCursor, id: this.#listId }, effects);
      this.#loading = { last: null, pinned: null, next };
    } else {
      this.#subscribed.removeSplit(last, effects);
      // A pin already on its way is the one this needs, unless the page's end has moved since it was asked for.
      const end = PageSubscriptions.pinned(last);
      let pinned = last.pin;
      last.pin = null;
      if (pinned?.paginationOpts.endCursor !== end.endCursor) {
        if (pinned) this.#subscribed.remove(pinned, effects);
        pinned = this.#subscribed.add(end, effects);
      }
      const next = this.#subscribed.add({ numItems, cursor: end.endCursor, id: this.#listId }, effects);
      this.#loading = { last, pinned, next };
    }
    return effects;
  }

  /** A page subscription's value. */
  receive(id, value) {
    const effects = PageSubscriptions.effects();
    const page = this.#subscribed.get(id);
    if (!page) return effects;
    if (!PageSubscriptions.isResult(value)) {
      effects.errors.push(new TypeError("a paginated query must return {page, isDone, continueCursor}"));
      return effects;
    }
    page.value = value;
    page.loaded = true;
    if (this.#pages.includes(page)) this.#dirty = true;
    if (page === this.#pages[0]) this.#stale = undefined;
    this.#settle(effects);
    return effects;
  }

  /** A page subscription's failure. */
  fail(id, error) {
    const effects = PageSubscriptions.effects();
    const page = this.#subscribed.get(id);
    if (!page) return effects;
    if (error?.data?.paginationError !== "InvalidCursor") {
      effects.errors.push(error);
      return effects;
    }
    if (this.#restarted && !(page === this.#pages[0] && page.loaded)) {
      // Starting again did not cure it (the new first page is refused, or cursors it gave): report, do not loop.
      this.#giveUp(page, effects);
      // Swaps in a pin that had arrived meanwhile.
      this.#settle(effects);
      effects.errors.push(error);
      return effects;
    }
    this.#stale = this.results;
    this.#subscribed.clear(effects);
    this.#loading = null;
    this.#restarted = true;
    this.#listId = this.#newId();
    this.#pages = [this.#subscribed.add({ numItems: this.#initialNumItems, cursor: null, id: this.#listId }, effects)];
    this.#dirty = true;
    return effects;
  }

  /** Gives up the pending loadMore or split that `page` would complete, if any. */
  #giveUp(page, effects) {
    const loading = this.#loading;
    if (loading && (page === loading.pinned || page === loading.next)) {
      if (loading.last && loading.pinned && page !== loading.pinned) {
        // The last page keeps its pinned page: only the new page failed.
        loading.last.pin = loading.pinned;
      } else if (loading.pinned) {
        this.#subscribed.remove(loading.pinned, effects);
        if (loading.last) loading.last.pinRefused = true;
      }
      this.#subscribed.remove(loading.next, effects);
      this.#loading = null;
      return;
    }
    for (const shown of this.#pages) {
      if (shown.pin === page) {
        // Not asked for again (each new value of the page would be refused in turn): the page stays unpinned.
        this.#subscribed.removePin(shown, effects);
        shown.pinRefused = true;
      }
      if (shown.split?.includes(page)) this.#subscribed.removeSplit(shown, effects);
    }
  }

  /** Swaps in what has all its values, and starts the pins and splits that are due. */
  #settle(effects) {
    for (const page of [...this.#pages]) {
      if (page.pin?.loaded) {
        // Most often the pinned page holds what the page held: then the list shown does not change.
        if (stableKey(page.pin.value.page) !== stableKey(page.value.page)) this.#dirty = true;
        this.#pages.splice(this.#pages.indexOf(page), 1, page.pin);
        this.#subscribed.remove(page, effects);
        page.pin = null;
        this.#restarted = false;
      }
    }
    const loading = this.#loading;
    if (loading && (loading.pinned?.loaded ?? true) && loading.next.loaded) {
      if (loading.last) {
        this.#pages.splice(this.#pages.indexOf(loading.last), 1, loading.pinned, loading.next);
        this.#subscribed.remove(loading.last, effects);
      } else {
        this.#pages.push(loading.next);
      }
      this.#loading = null;
      this.#restarted = false;
      this.#dirty = true;
    }
    for (const page of [...this.#pages]) {
      if (page.split?.every((half) => half.loaded)) {
        this.#pages.splice(this.#pages.indexOf(page), 1, ...page.split);
        this.#subscribed.remove(page, effects);
        this.#restarted = false;
        this.#dirty = true;
      }
    }
    for (const page of this.#pages) {
      if (!page.loaded || page.wasSplit || page === this.#loading?.last) continue;
      const halves = PageSubscriptions.halves(page, this.#initialNumItems);
      if (!halves) continue;
      page.wasSplit = true;
      // The split's halves pin the page's end themselves.
      this.#subscribed.removePin(page, effects);
      page.split = halves.map((paginationOpts) => this.#subscribed.add(paginationOpts, effects));
    }
    // The last page, once it has a value, is subscribed again pinned at its end (see PageSubscriptions.pinned).
    const last = this.#pages.at(-1);
    const open = last?.loaded && last.paginationOpts.endCursor === undefined;
    if (open && !last.pin && !last.pinRefused && !last.split && last !== this.#loading?.last) {
      last.pin = this.#subscribed.add(PageSubscriptions.pinned(last), effects);
    }
  }
}
