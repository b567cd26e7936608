/**
 * Live paginated queries (convex-js' `usePaginatedQuery`): PaginatedQueryState, the pages as a state machine with no
 * network and no clock, and PaginatedQuery, what `gateway.paginatedQuery` returns, which drives it with the gateway's
 * subscriptions. Part of client.js (see gateway.js).
 */

import { notify } from "./callbacks.js";
import { stableKey } from "./values.js";

/**
 * A live paginated query, as `gateway.paginatedQuery` returns it: `results` and `status` are what `onUpdate` was last
 * given, `loadMore(numItems)` adds a page (true) when the status is `"CanLoadMore"` (else false), `stop()` ends it.
 */
export class PaginatedQuery {
  #state;
  #args;
  #subscribe;
  #atEndOfPass;
  #onUpdate;
  #onError;
  /** The stop function of each page subscription, by page id. */
  #stops = new Map();
  #results;
  #status;
  /** The first page failure of the current pass, reported at its end. */
  #failure = undefined;
  #stopped = false;
  #finish = () => this.#publish();

  constructor(subscribe, atEndOfPass, args, initialNumItems, onUpdate, onError) {
    this.#state = new PaginatedQueryState(initialNumItems);
    this.#args = args;
    this.#subscribe = subscribe;
    this.#atEndOfPass = atEndOfPass;
    this.#onUpdate = onUpdate;
    this.#onError = onError;
    this.#results = this.#state.results;
    this.#status = this.#state.status;
    this.#apply(this.#state.start());
  }

  /** The visible list: the items of the pages, in order (what `onUpdate` was last given). */
  get results() {
    return this.#results;
  }

  /** `"LoadingFirstPage"`, `"CanLoadMore"`, `"LoadingMore"` or `"Exhausted"` (what `onUpdate` was last given). */
  get status() {
    return this.#status;
  }

  /**
   * Adds a page of up to `numItems` items after the last one, when the status is `"CanLoadMore"`: returns whether it
   * did. The status is `"LoadingMore"` (and `onUpdate` is told so) until the page arrives. Throws a TypeError unless
   * `numItems` is a whole number of at least 1.
   */
  loadMore(numItems) {
    if (this.#stopped) return false;
    const effects = this.#state.loadMore(numItems);
    if (effects === null) return false;
    this.#apply(effects);
    return true;
  }

  /** Ends every page subscription; no callback runs after it. */
  stop() {
    this.#stopped = true;
    for (const stop of this.#stops.values()) stop();
    this.#stops.clear();
  }

  /** Subscribes and stops pages as the state asks, then publishes at the end of the pass. */
  #apply({ add, remove, errors }) {
    if (this.#stopped) return;
    for (const { id, paginationOpts } of add) {
      const stop = this.#subscribe(
        { ...this.#args, paginationOpts },
        (value) => this.#apply(this.#state.receive(id, value)),
        (error) => this.#apply(this.#state.fail(id, error)),
      );
      this.#stops.set(id, stop);
    }
    for (const id of remove) {
      this.#stops.get(id)?.();
      this.#stops.delete(id);
    }
    if (errors.length > 0) this.#failure ??= errors[0];
    this.#atEndOfPass(this.#finish);
  }

  #publish() {
    if (this.#stopped) return;
    const results = this.#state.results;
    const status = this.#state.status;
    const failure = this.#failure;
    this.#failure = undefined;
    if (results !== this.#results || status !== this.#status) {
      this.#results = results;
      this.#status = status;
      notify(this.#onUpdate, results, status);
    }
    if (failure !== undefined) notify(this.#onError, failure);
  }
}

/**
 * The pages of one live paginated query, as a state machine with no network and no clock: `ConvexGateway`'s
 * `paginatedQuery` feeds it each page's values and errors and does what it answers. Every method returns the
 * effects `{ add: [{ id, paginationOpts }], remove: [id], errors: [error] }`: the page subscriptions to add (with the
 * `paginationOpts` argument of each), those to stop, and the failures to report. `results` and `status` are the
 * visible list and the status.
 *
 * - The first page is `{ numItems: initialNumItems, cursor: null, id }`. `id`, the list's own number, is in every page
 *   whose end is open (the first, and the last one `loadMore` adds), as convex-js puts its list's id in its pages: such
 *   a page grows with its query's journal (Convex keeps where it ended), so another reader's page of the same
 *   arguments, subscribed earlier, may have grown far past `numItems`; with the id, this list's page is a subscription
 *   of its own and starts at `numItems`. Pages pinned at both ends carry no id: they hold the same items whoever
 *   reads them, so every reader shares one subscription of each.
 * - Once the last page has a value and no end cursor (only the last page can lack one), it is pinned: subscribed
 *   again with `endCursor: <its continueCursor>` (and no id), where the deployment's journal ends it, and replaced by
 *   that pinned page when it has a value. The journal lives only as long as the gateway's upstream subscription: on a
 *   stream that moved to another replica, the unpinned page would start again at `numItems`; pinned, every loaded page
 *   has its boundaries in the subscriptions' arguments.
 * - `loadMore(n)`, when the last page has loaded and is not done and no other page is loading, adds the page
 *   `{ numItems: n, cursor: <the last page's end>, id }`. A last page not yet swapped for its pinned page is replaced by
 *   that pinned page (subscribed again if its end moved since) and the new page together, when both have values; a
 *   split pending on it is given up (the pinned page may split in its turn).
 * - A page whose value has a `splitCursor` and a `pageStatus` or more than twice `initialNumItems` items is split
 *   once: `(cursor, endCursor: splitCursor)` and `(splitCursor, endCursor: <its endCursor, else its
 *   continueCursor>)` replace it when both have values.
 * - `InvalidCursor` on any page drops every page and starts again from a first page `{ numItems: initialNumItems,
 *   cursor: null, id }` with a new id, which makes it a new subscription, since the deployment may hold the old one's
 *   journal (where the page ended), a cursor of the query as it was. The list shown stays until
 *   the new first page arrives (status `"LoadingFirstPage"` meanwhile). After a start-over and until a loadMore, split
 *   or pin completes, an `InvalidCursor` is reported instead (and the loadMore, split or pin it belongs to given up;
 *   a page whose pin was refused is not pinned again): the new first page refused before its first value, or a cursor
 *   it gave refused. Only the new first page failing after
 *   it had a value (the query changed again) starts over again. Nothing repeats by itself.
 * - Any other failure is reported; the page keeps its last value, and its next value counts as recovery.
 */
export class PaginatedQueryState {
  #initialNumItems;
  /** The list's `paginationOpts.id`, in each page whose end is open; a start-over takes a new one. */
  #listId;
  /** Makes list ids. */
  #newId;
  /** The shown pages, in order: { id, paginationOpts, value, loaded, split: [first, second] | null, wasSplit, pin: the
   * pinned page on its way | null, pinRefused }. */
  #pages = [];
  /** Every subscribed page by id: the shown ones and the ones waiting to replace some. */
  #subscribed = new Map();
  /** The pending loadMore: { last: the unpinned page it replaces (null if the last page was pinned), pinned, next }. */
  #loading = null;
  #nextId = 0;
  /** The list shown when the pages were dropped, shown until the new first page arrives. */
  #stale = undefined;
  /** The pages were dropped for an InvalidCursor (so the first page is the new one), and no loadMore, split or pin has
   * completed since. */
  #restarted = false;
  #results = [];
  #dirty = false;

  /**
   * @param {number} initialNumItems The first page's size, and the measure of a page to split (twice this).
   * @param {{ newId?: () => number }} [options] Where list ids come from (`newPaginationId` unless a test says).
   */
  constructor(initialNumItems, { newId = newPaginationId } = {}) {
    checkNumItems(initialNumItems, "initialNumItems");
    this.#initialNumItems = initialNumItems;
    this.#newId = newId;
    this.#listId = newId();
  }

  /** Subscribes the first page. */
  start() {
    const effects = noEffects();
    this.#pages = [this.#add({ numItems: this.#initialNumItems, cursor: null, id: this.#listId }, effects)];
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
    checkNumItems(numItems, "numItems");
    if (this.status !== "CanLoadMore") return null;
    const effects = noEffects();
    const last = this.#pages.at(-1);
    const { endCursor } = last.paginationOpts;
    if (endCursor !== undefined) {
      const next = this.#add({ numItems, cursor: endCursor, id: this.#listId }, effects);
      this.#loading = { last: null, pinned: null, next };
    } else {
      const end = last.value.continueCursor;
      if (last.split) {
        for (const half of last.split) this.#remove(half, effects);
        last.split = null;
      }
      // A pin already on its way is the one this needs, unless the page's end has moved since it was asked for.
      let pinned = last.pin;
      last.pin = null;
      if (pinned?.paginationOpts.endCursor !== end) {
        if (pinned) this.#remove(pinned, effects);
        pinned = this.#add({ ...withoutId(last.paginationOpts), endCursor: end }, effects);
      }
      this.#loading = {
        last,
        pinned,
        next: this.#add({ numItems, cursor: end, id: this.#listId }, effects),
      };
    }
    return effects;
  }

  /** A page subscription's value. */
  receive(id, value) {
    const effects = noEffects();
    const page = this.#subscribed.get(id);
    if (!page) return effects;
    if (!Array.isArray(value?.page) || typeof value.isDone !== "boolean" || typeof value.continueCursor !== "string") {
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
    const effects = noEffects();
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
    for (const id of this.#subscribed.keys()) effects.remove.push(id);
    this.#subscribed.clear();
    this.#loading = null;
    this.#restarted = true;
    this.#listId = this.#newId();
    this.#pages = [this.#add({ numItems: this.#initialNumItems, cursor: null, id: this.#listId }, effects)];
    this.#dirty = true;
    return effects;
  }

  #add(paginationOpts, effects) {
    const id = `p${++this.#nextId}`;
    const page = {
      id, paginationOpts, value: undefined, loaded: false, split: null, wasSplit: false, pin: null, pinRefused: false,
    };
    this.#subscribed.set(page.id, page);
    effects.add.push({ id: page.id, paginationOpts });
    return page;
  }

  #remove(page, effects) {
    if (this.#subscribed.delete(page.id)) effects.remove.push(page.id);
  }

  /** Gives up the pending loadMore or split that `page` would complete, if any. */
  #giveUp(page, effects) {
    const loading = this.#loading;
    if (loading && (page === loading.pinned || page === loading.next)) {
      if (loading.last && loading.pinned && page !== loading.pinned) {
        // The last page keeps its pinned page: only the new page failed.
        loading.last.pin = loading.pinned;
      } else if (loading.pinned) {
        this.#remove(loading.pinned, effects);
        if (loading.last) loading.last.pinRefused = true;
      }
      this.#remove(loading.next, effects);
      this.#loading = null;
      return;
    }
    for (const shown of this.#pages) {
      if (shown.pin === page) {
        // Not asked for again (each new value of the page would be refused in turn): the page stays unpinned.
        this.#remove(page, effects);
        shown.pin = null;
        shown.pinRefused = true;
      }
      if (shown.split?.includes(page)) {
        for (const half of shown.split) this.#remove(half, effects);
        shown.split = null;
      }
    }
  }

  /** Swaps in what has all its values, and starts the pins and splits that are due. */
  #settle(effects) {
    for (const page of [...this.#pages]) {
      if (page.pin?.loaded) {
        // Most often the pinned page holds what the page held: then the list shown does not change.
        if (stableKey(page.pin.value.page) !== stableKey(page.value.page)) this.#dirty = true;
        this.#pages.splice(this.#pages.indexOf(page), 1, page.pin);
        this.#remove(page, effects);
        page.pin = null;
        this.#restarted = false;
      }
    }
    const loading = this.#loading;
    if (loading && (loading.pinned?.loaded ?? true) && loading.next.loaded) {
      if (loading.last) {
        this.#pages.splice(this.#pages.indexOf(loading.last), 1, loading.pinned, loading.next);
        this.#remove(loading.last, effects);
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
        this.#remove(page, effects);
        this.#restarted = false;
        this.#dirty = true;
      }
    }
    for (const page of this.#pages) {
      if (!page.loaded || page.wasSplit || page === this.#loading?.last) continue;
      const { page: items, splitCursor, pageStatus } = page.value;
      if (typeof splitCursor !== "string") continue;
      if (pageStatus == null && items.length <= 2 * this.#initialNumItems) continue;
      page.wasSplit = true;
      if (page.pin) {
        // The split's halves pin the page's end themselves.
        this.#remove(page.pin, effects);
        page.pin = null;
      }
      const { cursor, endCursor = page.value.continueCursor } = page.paginationOpts;
      const numItems = this.#initialNumItems;
      page.split = [
        this.#add({ numItems, cursor, endCursor: splitCursor }, effects),
        this.#add({ numItems, cursor: splitCursor, endCursor }, effects),
      ];
    }
    // The last page's end is where its first run stopped (the deployment's journal of the subscription), which only
    // the subscription holds: a reconnect to another replica would start it again from `numItems`. Once it has a
    // value, the page is subscribed again with that end in its arguments, and swapped for it when that has a value.
    const last = this.#pages.at(-1);
    const open = last?.loaded && last.paginationOpts.endCursor === undefined;
    if (open && !last.pin && !last.pinRefused && !last.split && last !== this.#loading?.last) {
      last.pin = this.#add({ ...withoutId(last.paginationOpts), endCursor: last.value.continueCursor }, effects);
    }
  }
}

let lastPaginationId = 0;

/**
 * A `paginationOpts.id` no other list of this page has used, and most likely no other reader: the time in milliseconds
 * times 1024 plus a random part (below 2^53 until the year 2248), above every id this page gave before.
 */
function newPaginationId() {
  lastPaginationId = Math.max(Date.now() * 1024 + Math.floor(Math.random() * 1024), lastPaginationId + 1);
  return lastPaginationId;
}

/** `paginationOpts` without the list's id (a page pinned at both ends is shared by every reader). */
function withoutId({ id, ...paginationOpts }) {
  return paginationOpts;
}

function noEffects() {
  return { add: [], remove: [], errors: [] };
}

function checkNumItems(numItems, name) {
  if (!Number.isInteger(numItems) || numItems < 1) throw new TypeError(`${name} must be a whole number of at least 1`);
}
