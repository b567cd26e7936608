/**
 * client.js: the gateway's browser client, a dependency-free ES module served at `GET /client.js`. Its modules are
 * the files of Sources/ConvexGateway/Resources/client/, served as one file (ClientScript.swift) with this one,
 * gateway.js, the public ConvexGateway, last. As convex-js splits its client: errors.js, event-stream.js (the stream's
 * transport), authentication.js (tokens and stream tickets), values.js (values, timestamps), patching.js,
 * callbacks.js, paginated-pages.js, paginated-state.js and paginated-query.js (live paginated queries: the pages, their
 * list as a state machine, its subscriptions), optimistic.js (optimistic updates), backoff.js, calls.js (queries and
 * actions), request-queue.js (the ordered mutation queue), live-queries.js (values, transitions, callback passes) and
 * connection.js (the stream and its reconnects).
 *
 *   import { ConvexGateway } from "http://127.0.0.1:8080/client.js";
 *   const gateway = new ConvexGateway("http://127.0.0.1:8080", { token: async () => currentJwtOrNull });
 *   const stop = gateway.subscribe("messages:list", { channel: "general" }, (messages) => render(messages),
 *                                  (error) => console.warn(error.code, error.message));
 *   await gateway.mutation("messages:send", { body: "hi", channel: "general" });   // also query(), action()
 *   stop();
 *   const feed = gateway.paginatedQuery("feed:list", { channel: "general" }, { initialNumItems: 10 },
 *                                       (posts, status) => render(posts, status));
 *   feed.loadMore(10);                                    // live pages, as convex-js' usePaginatedQuery
 *   await gateway.mutation("messages:send", { body: "hi", channel: "general" }, {
 *     optimisticUpdate: (localStore, args) => {            // shown at once, as with convex-js
 *       const list = localStore.getQuery("messages:list", { channel: args.channel });
 *       if (list !== undefined) localStore.setQuery("messages:list", { channel: args.channel }, [...list, args]);
 *     },
 *   });
 *
 * Live queries share one stream (connection.js); their callbacks run one pass per transition (live-queries.js).
 * Mutations go through one ordered queue (request-queue.js): they commit in the order they were called, and one whose
 * answer was lost is sent again, run once. Values are plain JSON by default (int64 as numbers, bytes as base64); with
 * `values: "convex"` as convex-js gives them (BigInt, ArrayBuffer: the gateway's `encoded` format, decoded here).
 * Tokens: `token({ forceRefresh, forceRefreshToken })` is asked before each call and stream; a refused token is
 * refreshed once. Read your writes: every request carries the highest Convex timestamp seen (`Convex-Min-Timestamp`).
 */

import { Authentication } from "./authentication.js";
import { OutageNotice, defaultTimers } from "./backoff.js";
import { notify } from "./callbacks.js";
import { callOnce, checkCall, valueFormat } from "./calls.js";
import { Connection } from "./connection.js";
import { EventStreamReader } from "./event-stream.js";
import { LiveQueries } from "./live-queries.js";
import { PaginatedQuery } from "./paginated-query.js";
import { RequestQueue } from "./request-queue.js";
import { SeenTimestamp } from "./values.js";

export class ConvexGateway {
  #seen = new SeenTimestamp();
  #queries;
  #connection;
  #mutations;
  #client;
  /** Calls in flight, by a number of their own: { kind, since } (`since` in milliseconds since 1970). */
  #inflight = new Map();
  #nextCall = 0;
  /** Who hears of each change of the connection state. */
  #connectionListeners = new Set();

  /**
   * @param {string} url The gateway's base URL, e.g. "https://gateway.example.com".
   * @param {{ token?: (options: { forceRefresh: boolean, forceRefreshToken: boolean }) =>
   *             Promise<string | null | undefined> | string | null | undefined,
   *           debounceMs?: number, values?: "json" | "convex", eventStreamReader?: typeof EventStreamReader,
   *           catchUpMs?: number, timers?: typeof defaultTimers }} [options]
   *   `eventStreamReader` replaces the stream's transport, as convex-js' `webSocketConstructor` does (tests), and
   *   `timers` the timers and randomness of backoffs (tests); `catchUpMs` (default 250) is how long an optimistic
   *   update whose mutation was answered waits for the stream to reach its commit before the stream is opened again.
   */
  constructor(url, options = {}) {
    const base = new URL(String(url), globalThis.location?.href).href.replace(/\/+$/, "");
    if (options.values !== undefined && options.values !== "json" && options.values !== "convex") {
      throw new TypeError(`values must be "json" or "convex", not ${options.values}`);
    }
    const timers = options.timers ?? defaultTimers;
    const auth = new Authentication(base, options.token);
    this.#client = { base, auth, seen: this.#seen, values: valueFormat(options.values === "convex") };
    const outage = new OutageNotice();
    this.#queries = new LiveQueries({
      seen: this.#seen,
      timers,
      catchUpMs: options.catchUpMs ?? 250,
      onSetChanged: () => this.#connection.scheduleOpen(),
      onBehind: () => this.#connection.scheduleOpen(0),
    });
    this.#connection = new Connection(this.#client, this.#queries, {
      Reader: options.eventStreamReader ?? EventStreamReader,
      timers,
      debounceMs: options.debounceMs ?? 10,
      onChange: () => this.#connectionChanged(),
      outage,
    });
    this.#mutations = new RequestQueue(this.#client, { timers, outage });
  }

  /**
   * The highest Convex timestamp this client has seen, as a decimal string (undefined before its first answer): what
   * it sends as `Convex-Min-Timestamp`, so that its queries read at least what it wrote and saw.
   */
  get timestamp() {
    return this.#seen.value;
  }

  /**
   * The value a live query shows now, optimistic updates included (undefined before its first value): inside a
   * callback, the value of the same transition as the one being delivered.
   */
  current(fn, args = {}) {
    return this.#queries.current(fn, args);
  }

  /** Runs a query once and resolves to its value; rejects with a ConvexGatewayError. */
  query(fn, args = {}) {
    return this.#inFlight("query", () => callOnce(this.#client, "query", fn, args));
  }

  /**
   * Runs a mutation and resolves to its value; rejects with a ConvexGatewayError. Mutations are sent in the order they
   * were called (request-queue.js), and one whose answer is lost is sent again (run once) until it is answered. With
   * `optimisticUpdate`, as with convex-js, `optimisticUpdate(localStore, args)` changes the values the page shows at
   * once: `localStore.getQuery(fn, args)`, `localStore.setQuery(fn, args, value)` and `localStore.getAllQueries(fn)`
   * read and write the page's live queries, and `insertAtTop`, `insertAtBottomIfLoaded` and
   * `optimisticallyUpdateValueInPaginatedQuery` its paginated lists. Make new values; never change one in place.
   * @param {{ optimisticUpdate?: (localStore: object, args: object) => void }} [options]
   */
  mutation(fn, args = {}, options = {}) {
    const update = options?.optimisticUpdate;
    if (update === undefined) return this.#inFlight("mutation", () => this.#mutations.mutation(fn, args));
    checkCall(fn, args);
    if (typeof update !== "function") throw new TypeError("optimisticUpdate must be a function");
    const id = this.#queries.addOptimistic((localStore) => update(localStore, args));
    return this.#inFlight("mutation", () =>
      this.#mutations.mutation(fn, args, {
        onSent: () => this.#queries.sent(id),
        onCommit: (ts) => this.#queries.answered(id, ts),
        onFail: () => this.#queries.failed(id),
      }),
    );
  }

  /** Runs an action and resolves to its value; rejects with a ConvexGatewayError. An action is never sent twice. */
  action(fn, args = {}) {
    return this.#inFlight("action", () => callOnce(this.#client, "action", fn, args));
  }

  /**
   * The connection state, as convex-js' `ConvexClient.connectionState()` gives it, with the stream in place of the
   * WebSocket: `{ hasInflightRequests, isWebSocketConnected, isStreamConnected, timeOfOldestInflightRequest (a Date,
   * or null), hasEverConnected, connectionCount, connectionRetries, inflightMutations, inflightActions }`.
   * `isStreamConnected` (and its convex-js name `isWebSocketConnected`) is true while the stream of the page's live
   * queries is open (false while it has none); `connectionCount` counts the times a stream opened (a changed set of
   * live queries opens a new one), and `connectionRetries` the failures since one was last open.
   */
  connectionState() {
    const calls = [...this.#inflight.values()];
    const oldest = calls.length === 0 ? null : Math.min(...calls.map((call) => call.since));
    const stream = this.#connection.state;
    return {
      hasInflightRequests: calls.length > 0,
      isWebSocketConnected: stream.open,
      isStreamConnected: stream.open,
      timeOfOldestInflightRequest: oldest === null ? null : new Date(oldest),
      hasEverConnected: stream.hasEverConnected,
      connectionCount: stream.connectionCount,
      connectionRetries: stream.connectionRetries,
      inflightMutations: calls.filter((call) => call.kind === "mutation").length,
      inflightActions: calls.filter((call) => call.kind === "action").length,
    };
  }

  /**
   * Calls `callback(state)` with the connection state (see connectionState()) whenever it changes, as convex-js'
   * `subscribeToConnectionState` does. Returns a function that stops it.
   */
  subscribeToConnectionState(callback) {
    const listener = { callback };
    this.#connectionListeners.add(listener);
    return () => {
      this.#connectionListeners.delete(listener);
    };
  }

  /**
   * Follows a query: `onValue(value)` with its current value and each change, `onError(error)` with a
   * ConvexGatewayError when it fails (a later value means it recovered). Returns a function that stops it.
   */
  subscribe(fn, args, onValue, onError = (error) => console.error(`${fn}:`, error)) {
    args ??= {};
    checkCall(fn, args);
    return this.#queries.subscribe(fn, args, onValue, onError);
  }

  /**
   * Follows a paginated query (one whose function takes `paginationOpts` and returns Convex's `{page, isDone,
   * continueCursor, …}`) as convex-js' `usePaginatedQuery` does: `onUpdate(results, status)` after every change, with
   * the whole visible list (the pages' items in order) and the status, `"LoadingFirstPage"`, `"CanLoadMore"`,
   * `"LoadingMore"` or `"Exhausted"`; `onError(error)` when a page fails (a later value means it recovered). Returns
   * `{ results, status, loadMore(numItems), stop() }`. Each page is a subscription of this gateway's stream, so all
   * pages move together, and a page whose end is known carries it in its arguments (`endCursor`): its boundaries
   * survive a reconnect to any gateway replica. See PaginatedQueryState for the rules.
   * @param {{ initialNumItems: number }} options
   */
  paginatedQuery(fn, args, options, onUpdate, onError = (error) => console.error(`${fn}:`, error)) {
    args ??= {};
    checkCall(fn, args);
    return new PaginatedQuery(
      (pageArgs, onValue, onPageError) => this.subscribe(fn, pageArgs, onValue, onPageError),
      (finish) => this.#queries.atEndOfPass(finish),
      args,
      options?.initialNumItems,
      onUpdate,
      onError,
    );
  }

  /**
   * Stops every subscription, closes the stream and stops sending mutations (those not yet sent reject); resolves,
   * as convex-js' `close()` does, once the mutations on the wire are answered.
   */
  close() {
    this.#queries.close();
    this.#connection.close();
    return this.#mutations.close();
  }

  /** Runs `call`, counted in the connection state while it is in flight. */
  async #inFlight(kind, call) {
    const id = ++this.#nextCall;
    this.#inflight.set(id, { kind, since: Date.now() });
    this.#connectionChanged();
    try {
      return await call();
    } finally {
      this.#inflight.delete(id);
      this.#connectionChanged();
    }
  }

  #connectionChanged() {
    if (this.#connectionListeners.size === 0) return;
    const state = this.connectionState();
    for (const listener of [...this.#connectionListeners]) notify(listener.callback, state);
  }
}
