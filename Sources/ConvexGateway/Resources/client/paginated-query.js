/**
 * Live paginated queries through the gateway (convex-js' `usePaginatedQuery`): PaginatedQuery, what
 * `gateway.paginatedQuery` returns, which drives a PaginatedQueryState (paginated-state.js) with the gateway's
 * subscriptions, one a page, and publishes its list once a pass. Part of client.js (see gateway.js).
 */

import { notify } from "./callbacks.js";
import { PaginatedQueryState } from "./paginated-state.js";

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
