/**
 * Optimistic updates (convex-js' `mutation(fn, args, { optimisticUpdate })`): OptimisticUpdates, the pending updates
 * and the stream's transitions held back while one's mutation is on the wire, as a state machine with no network and
 * no callbacks; the local store an update reads and writes; and the paginated helpers convex-js gives for it. Part of
 * client.js (see gateway.js).
 */

import { stableKey } from "./values.js";

/**
 * The optimistic updates of a page's mutations in flight, in the order the mutations were called. What a page shows
 * is the server's values with every pending update applied again, in order, on top (`replay`), after each change of
 * the server's values, as convex-js' OptimisticQueryResults does:
 *
 * - `add(update)` when the mutation is called: the update shows at once.
 * - `sent(id)` when its mutation goes on the wire: from then until its answer, the stream's transitions are held
 *   (`holding`, `hold`), since one of them may already hold the mutation's change and the update, applied again on
 *   top, would show it twice. The answer and the stream come over two connections, in either order; holding them
 *   back gives the order of convex-js' one WebSocket, where the answer always comes first.
 * - `answered(id, ts)` when its mutation succeeded, committed at Convex timestamp `ts` (a BigInt): the update stays
 *   until the values shown hold at `ts` or later, so that the page never shows the value from before the mutation in
 *   between. `ts` undefined (an answer without `Convex-Timestamp`) drops it at once.
 * - `reached(ts)` when the values shown are those of a transition at `ts`: drops every update whose mutation
 *   committed at or before it, in the same pass as the values that replace it.
 * - `remove(id)` when the mutation failed: the update is rolled back at once.
 * - `release()` after an answer or a failure: the held transitions, in order, once no update's mutation is on the
 *   wire any more (each is then applied in a pass of its own, with `reached`).
 */
export class OptimisticUpdates {
  /** { id, update, ts, sent }: `ts` undefined until the mutation is answered, `sent` once it went on the wire. */
  #pending = [];
  #nextId = 0;
  /** The stream's transitions held while `holding`, in the order they came. */
  #held = [];

  /** The number of updates still applied. */
  get size() {
    return this.#pending.length;
  }

  /** Adds `update(localStore)`; returns its id. */
  add(update) {
    const id = ++this.#nextId;
    this.#pending.push({ id, update, ts: undefined, sent: false });
    return id;
  }

  /** Update `id`'s mutation went on the wire (a resend of it changes nothing). */
  sent(id) {
    const pending = this.#pending.find((entry) => entry.id === id);
    if (pending) pending.sent = true;
  }

  /** Whether transitions are held: an update's mutation has been sent and not answered. */
  get holding() {
    return this.#pending.some((entry) => entry.sent && entry.ts === undefined);
  }

  /** Keeps a transition (whatever the caller needs to apply it later) until `release()` gives it back. */
  hold(transition) {
    this.#held.push(transition);
  }

  /** The held transitions, in order, when nothing is held any more (they are then forgotten here); else none. */
  release() {
    if (this.holding || this.#held.length === 0) return [];
    return this.#held.splice(0);
  }

  /**
   * Update `id`'s mutation committed at `ts` (BigInt, or undefined when unknown). `heldTs` is the timestamp the values
   * shown hold at (undefined before the first): when it is at `ts` or later, or `ts` is unknown, the update is dropped
   * now. Returns whether it was.
   */
  answered(id, ts, heldTs) {
    const pending = this.#pending.find((entry) => entry.id === id);
    if (!pending) return false;
    pending.ts = ts;
    if (ts === undefined || (heldTs !== undefined && heldTs >= ts)) return this.remove(id);
    return false;
  }

  /** Rolls update `id` back (its mutation failed). Returns whether it was pending. */
  remove(id) {
    const before = this.#pending.length;
    this.#pending = this.#pending.filter((entry) => entry.id !== id);
    return this.#pending.length !== before;
  }

  /** The values shown now hold at `ts` (BigInt): drops every update whose mutation committed at or before it. */
  reached(ts) {
    const before = this.#pending.length;
    this.#pending = this.#pending.filter((entry) => entry.ts === undefined || entry.ts > ts);
    return this.#pending.length !== before;
  }

  /** The latest commit timestamp among the answered updates still waiting for the values to reach it (or undefined). */
  get awaitedTs() {
    let latest;
    for (const { ts } of this.#pending) if (ts !== undefined && (latest === undefined || ts > latest)) latest = ts;
    return latest;
  }

  /**
   * Applies every pending update, in order, to a copy of `server` (a Map from query key to `{ fn, args, value }`,
   * `value` undefined for a query without a value) and returns the copy: the values to show. An update that throws
   * is reported and skipped; what it set before throwing stays, as with convex-js.
   */
  replay(server) {
    const results = new Map(server);
    if (this.#pending.length === 0) return results;
    const store = new LocalStore(results);
    for (const { update } of this.#pending) {
      try {
        update(store);
      } catch (error) {
        (globalThis.reportError ?? console.error)(error);
      }
    }
    return results;
  }
}

/** The key of a query in a page's store: its function and its arguments in a stable order. */
export function queryKey(fn, args) {
  return `${fn}\n${stableKey(args ?? {})}`;
}

/**
 * What an optimistic update is given (convex-js' OptimisticLocalStore): the page's live query values with the updates
 * before it applied. Values are the page's own objects: an update makes new ones (`{ ...value, … }`), never changes
 * them in place.
 */
class LocalStore {
  #results;

  constructor(results) {
    this.#results = results;
  }

  /** The value of a live query (undefined when the page does not follow it, or has no value for it yet). */
  getQuery(fn, args = {}) {
    return this.#results.get(queryKey(fn, args))?.value;
  }

  /** Every live query of function `fn`: `[{ args, value }]` (value undefined when it has none yet). */
  getAllQueries(fn) {
    const queries = [];
    for (const { fn: name, args, value } of this.#results.values()) if (name === fn) queries.push({ args, value });
    return queries;
  }

  /** Sets the value shown for a query (undefined: shown as loading, so its callbacks are not called). */
  setQuery(fn, args, value) {
    this.#results.set(queryKey(fn, args), { fn, args: args ?? {}, value });
  }
}

/**
 * convex-js' `optimisticallyUpdateValueInPaginatedQuery`: in every loaded page of paginated query `fn` whose arguments
 * other than `paginationOpts` are `args`, each item becomes `updateValue(item)`.
 */
export function optimisticallyUpdateValueInPaginatedQuery(localStore, fn, args, updateValue) {
  const wanted = stableKey(args ?? {});
  for (const { args: pageArgs, value } of localStore.getAllQueries(fn)) {
    if (!Array.isArray(value?.page)) continue;
    const { paginationOpts, ...rest } = pageArgs;
    if (stableKey(rest) !== wanted) continue;
    localStore.setQuery(fn, pageArgs, { ...value, page: value.page.map(updateValue) });
  }
}

/**
 * convex-js' `insertAtTop`: `item` goes first in the first page (`cursor: null`) of paginated query `paginatedQuery`
 * whose arguments hold `argsToMatch` (every first page of this client that does, one per list), once it has loaded.
 */
export function insertAtTop({ paginatedQuery, argsToMatch, localQueryStore, item }) {
  for (const page of matchingPages(localQueryStore, paginatedQuery, argsToMatch)) {
    if (page.args.paginationOpts?.cursor !== null || !Array.isArray(page.value?.page)) continue;
    localQueryStore.setQuery(paginatedQuery, page.args, { ...page.value, page: [item, ...page.value.page] });
  }
}

/**
 * convex-js' `insertAtBottomIfLoaded`: `item` goes last in the last page (`isDone`) of paginated query `paginatedQuery`
 * whose arguments hold `argsToMatch`, only when that page has loaded (else it would show in the middle of the list).
 */
export function insertAtBottomIfLoaded({ paginatedQuery, argsToMatch, localQueryStore, item }) {
  for (const page of matchingPages(localQueryStore, paginatedQuery, argsToMatch)) {
    if (page.value?.isDone !== true || !Array.isArray(page.value.page)) continue;
    localQueryStore.setQuery(paginatedQuery, page.args, { ...page.value, page: [...page.value.page, item] });
  }
}

function matchingPages(localStore, fn, argsToMatch) {
  return localStore.getAllQueries(fn).filter(
    ({ args }) =>
      argsToMatch === undefined ||
      Object.keys(argsToMatch).every((key) => stableKey({ v: argsToMatch[key] }) === stableKey({ v: args[key] })),
  );
}
