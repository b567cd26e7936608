/**
 * client.js: the gateway's browser client, a dependency-free ES module served at `GET /client.js`. Its modules are
 * the files of Sources/ConvexGateway/Resources/client/, served as one file (ClientScript.swift) with this one,
 * gateway.js, last: errors.js, event-stream.js (the transport), authentication.js (tokens and stream tickets),
 * values.js, patching.js, callbacks.js, paginated.js, optimistic.js (optimistic updates).
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
 * All subscriptions of one ConvexGateway share ONE event stream (`GET /subscribe?sub.<id>=…&args.<id>=…`), so a
 * page holds any number of live queries on a single HTTP/1.1 connection. When the set changes the stream is
 * re-opened after a short debounce, and a value equal to the one last delivered is not delivered again. Changes
 * arrive as JSON Patches (`delta=json-patch`), applied to a copy of the value the subscription holds; a patch whose
 * base is not that value re-opens the stream for full values.
 *
 * Consistency: every event of the stream is one Convex transition. All its values are stored before any callback
 * runs, and its callbacks run in one synchronous pass, so a callback that reads another live query (`current()`)
 * sees the same snapshot of the database, as with Convex's own client. A paginated query's pages are subscriptions of
 * the same stream; its callback runs once at the end of the pass, with the list of that snapshot.
 *
 * Values: plain JSON by default (int64 as numbers, bytes as base64). With `values: "convex"` they are as convex-js
 * gives them: int64 as BigInt and bytes as ArrayBuffer, exact at any size (the gateway's `encoded` format, decoded
 * here); arguments may then hold BigInt and ArrayBuffer too.
 *
 * The stream is read with fetch (EventStreamReader, event-stream.js), so a refused stream's status and error body
 * are known at once. A signed-in stream carries a short-lived ticket minted from the token (`POST /stream-tickets`),
 * as a plain EventSource's would, so the token never sits in a URL; calls send `Authorization: Bearer <token>`. When the gateway refuses the token (a 401,
 * or the stream ending with `Unauthenticated` because the token expired), the client asks
 * `token({ forceRefresh: true, forceRefreshToken: true })` for a new one and carries on (`forceRefreshToken` is the
 * flag convex-js' `setAuth(fetchToken)` passes, so Convex auth adapters plug in unchanged). With `token` returning null, calls and streams are
 * anonymous, or signed in by the gateway's auth cookie if it has one.
 *
 * Read your writes: the client keeps the highest Convex timestamp it has seen, from the `Convex-Timestamp` header of
 * every answer (a mutation's commit, the snapshot a query read) and the `ts` of every transition of its stream, and
 * sends it as `Convex-Min-Timestamp` on each call. Behind a load balancer, a query therefore reads a snapshot at least
 * as new as this client's last mutation, whichever gateway replica answers (one that cannot reach it in time answers
 * 504 `UpstreamTimeout`). `gateway.timestamp` is that timestamp, a decimal string (undefined before the first). A
 * live query follows the stream's own replica, which catches up.
 *
 * Optimistic updates: a mutation's `optimisticUpdate` changes the values the page shows at once, in one callback pass,
 * through a local store (`getQuery`, `setQuery`, `getAllQueries`, and the paginated helpers of optimistic.js), as
 * convex-js' does. The page shows the stream's values with every pending update applied again on top, in the order
 * the mutations were called. An update is dropped in the pass of the first transition at or after its mutation's
 * commit (`Convex-Timestamp`), whose values replace it, so the page never shows the value from before the mutation in
 * between; a failed mutation rolls it back at once. When the mutation changed none of the stream's queries, no
 * transition comes (a Convex session's snapshot moves only when one of its queries changes): after `catchUpMs` the
 * stream is opened again with `Convex-Min-Timestamp`, whose first transition holds at the commit or later.
 *
 * Connection state: `gateway.connectionState()` and `gateway.subscribeToConnectionState(callback)` give what
 * convex-js' ConvexClient gives, for the stream in place of its WebSocket (ConnectionState below): calls in flight,
 * whether the stream is open, how often it opened and how often it failed since it was last open.
 */

import { Authentication, callHeaders } from "./authentication.js";
import { notify } from "./callbacks.js";
import { ConvexGatewayError } from "./errors.js";
import { EventStreamReader } from "./event-stream.js";
import { PaginatedQuery } from "./paginated.js";
import { OptimisticUpdates, queryKey } from "./optimistic.js";
import { applyTransition } from "./patching.js";
import { decodeConvexValue, encodeConvexValue, stableKey } from "./values.js";

export class ConvexGateway {
  #base;
  /** The page's tokens and the stream tickets minted from them (authentication.js). */
  #auth;
  #debounceMs;
  /** Live queries by function and arguments: { id, fn, args, listeners, hash, value, shown, refused }; `value` is the
   * server's, `hash` the gateway's hash of it (what a patch names as its base), `shown` what the listeners were last
   * given (the value with the optimistic updates applied), `refused` the error of a query whose input the gateway
   * refused. */
  #queries = new Map();
  #nextId = 0;
  #source = null;
  /** Bumped whenever the stream is replaced or closed, so callbacks of an old one do nothing. */
  #streamEpoch = 0;
  #timer = undefined;
  #failures = 0;
  /** Values as convex-js gives them (`values: "convex"`), else plain JSON. */
  #convex;
  /** The highest Convex timestamp seen (decimal string), sent as `Convex-Min-Timestamp`; undefined before the first. */
  #timestamp = undefined;
  /** While listeners are being called (one pass): the work to run once at its end, after every listener. */
  #pass = null;
  /** The class that reads the stream: EventStreamReader, or a stand-in a test gives. */
  #Reader;
  /** The stream's side of the connection state. */
  #stream = { open: false, hasEverConnected: false, connectionCount: 0, connectionRetries: 0 };
  /** Calls in flight, by a number of their own: { kind, since } (`since` in milliseconds since 1970). */
  #inflight = new Map();
  #nextCall = 0;
  /** Who hears of each change of the connection state. */
  #connectionListeners = new Set();
  /** The optimistic updates of the mutations in flight (optimistic.js). */
  #optimistic = new OptimisticUpdates();
  /** The Convex timestamp (BigInt) the values held hold at: the `ts` of the last transition applied. */
  #heldTs = undefined;
  /** Milliseconds an answered mutation's update waits for a transition before the stream is opened again. */
  #catchUpMs;
  #catchUpTimer = undefined;
  /** Whether the values last shown had optimistic updates applied (so dropping the last one shows the server's). */
  #showsOptimistic = false;

  /**
   * @param {string} url The gateway's base URL, e.g. "https://gateway.example.com".
   * @param {{ token?: (options: { forceRefresh: boolean, forceRefreshToken: boolean }) =>
   *             Promise<string | null | undefined> | string | null | undefined,
   *           debounceMs?: number, values?: "json" | "convex", eventStreamReader?: typeof EventStreamReader,
   *           catchUpMs?: number }} [options]
   *   `eventStreamReader` replaces the stream's transport, as convex-js' `webSocketConstructor` does (tests);
   *   `catchUpMs` (default 250) is how long an optimistic update whose mutation was answered waits for the stream to
   *   reach the mutation's commit before the stream is opened again at it.
   */
  constructor(url, options = {}) {
    this.#base = new URL(String(url), globalThis.location?.href).href.replace(/\/+$/, "");
    this.#auth = new Authentication(this.#base, options.token);
    this.#debounceMs = options.debounceMs ?? 10;
    if (options.values !== undefined && options.values !== "json" && options.values !== "convex") {
      throw new TypeError(`values must be "json" or "convex", not ${options.values}`);
    }
    this.#convex = options.values === "convex";
    this.#Reader = options.eventStreamReader ?? EventStreamReader;
    this.#catchUpMs = options.catchUpMs ?? 250;
  }

  /**
   * The highest Convex timestamp this client has seen, as a decimal string (undefined before its first answer): what
   * it sends as `Convex-Min-Timestamp`, so that its queries read at least what it wrote and saw.
   */
  get timestamp() {
    return this.#timestamp;
  }

  /**
   * The value a live query shows now, optimistic updates included (undefined before its first value): inside a
   * callback, the value of the same transition as the one being delivered.
   */
  current(fn, args = {}) {
    return this.#queries.get(queryKey(fn, args))?.shown;
  }

  /** Runs a query once and resolves to its value; rejects with a ConvexGatewayError. */
  query(fn, args = {}) {
    return this.#inFlight("query", () => this.#call("query", fn, args));
  }

  /**
   * Runs a mutation and resolves to its value; rejects with a ConvexGatewayError. With `optimisticUpdate`, as with
   * convex-js, `optimisticUpdate(localStore, args)` changes the values the page shows at once (see the top of this
   * file): `localStore.getQuery(fn, args)`, `localStore.setQuery(fn, args, value)` and `localStore.getAllQueries(fn)`
   * read and write the page's live queries, and `insertAtTop`, `insertAtBottomIfLoaded` and
   * `optimisticallyUpdateValueInPaginatedQuery` its paginated lists. Make new values; never change one in place.
   * @param {{ optimisticUpdate?: (localStore: object, args: object) => void }} [options]
   */
  mutation(fn, args = {}, options = {}) {
    const update = options?.optimisticUpdate;
    if (update === undefined) return this.#inFlight("mutation", () => this.#call("mutation", fn, args));
    checkCall(fn, args);
    if (typeof update !== "function") throw new TypeError("optimisticUpdate must be a function");
    const id = this.#optimistic.add((localStore) => update(localStore, args));
    this.#inPass(() => this.#show());
    return this.#inFlight("mutation", async () => {
      try {
        return await this.#call("mutation", fn, args, false, (ts) => this.#answered(id, ts));
      } catch (error) {
        // The mutation failed (or its answer was lost): its update is rolled back at once.
        if (this.#optimistic.remove(id)) this.#inPass(() => this.#show());
        throw error;
      }
    });
  }

  /** Runs an action and resolves to its value; rejects with a ConvexGatewayError. */
  action(fn, args = {}) {
    return this.#inFlight("action", () => this.#call("action", fn, args));
  }

  /**
   * The connection state, as convex-js' `ConvexClient.connectionState()` gives it, with the stream in place of the
   * WebSocket: `{ hasInflightRequests, isStreamConnected, timeOfOldestInflightRequest (a Date, or null),
   * hasEverConnected, connectionCount, connectionRetries, inflightMutations, inflightActions }`.
   * `isStreamConnected` is true while the stream of the page's live queries is open (false while it has none);
   * `connectionCount` counts the times a stream opened (a changed set of live queries opens a new one), and
   * `connectionRetries` the failures since one was last open.
   */
  connectionState() {
    const calls = [...this.#inflight.values()];
    const oldest = calls.length === 0 ? null : Math.min(...calls.map((call) => call.since));
    return {
      hasInflightRequests: calls.length > 0,
      isStreamConnected: this.#stream.open,
      timeOfOldestInflightRequest: oldest === null ? null : new Date(oldest),
      hasEverConnected: this.#stream.hasEverConnected,
      connectionCount: this.#stream.connectionCount,
      connectionRetries: this.#stream.connectionRetries,
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
    const key = queryKey(fn, args);
    let query = this.#queries.get(key);
    const listener = { onValue, onError };
    if (!query) {
      query = { id: `q${++this.#nextId}`, fn, args, listeners: new Set(), hash: undefined, value: undefined, shown: undefined };
      this.#queries.set(key, query);
      this.#scheduleOpen();
    } else if (query.refused || query.shown !== undefined) {
      queueMicrotask(() =>
        this.#inPass(() => {
          if (!query.listeners.has(listener)) return;
          if (query.refused) notify(listener.onError, query.refused);
          else notify(listener.onValue, query.shown);
        }),
      );
    }
    query.listeners.add(listener);
    return () => {
      if (query.listeners.delete(listener) && query.listeners.size === 0) {
        this.#queries.delete(key);
        this.#scheduleOpen();
      }
    };
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
      (finish) => this.#atEndOfPass(finish),
      args,
      options?.initialNumItems,
      onUpdate,
      onError,
    );
  }

  /** Stops every subscription and closes the stream. */
  close() {
    this.#queries.clear();
    clearTimeout(this.#timer);
    clearTimeout(this.#catchUpTimer);
    this.#catchUpTimer = undefined;
    this.#streamEpoch += 1;
    this.#replaceStream(null);
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

  /** The stream opened (`true`) or failed (`false`): the connection state changes. */
  #streamIs(open) {
    const stream = this.#stream;
    if (open) {
      Object.assign(stream, { open, hasEverConnected: true, connectionRetries: 0 });
      stream.connectionCount += 1;
    } else {
      Object.assign(stream, { open, connectionRetries: stream.connectionRetries + 1 });
    }
    this.#connectionChanged();
  }

  #connectionChanged() {
    if (this.#connectionListeners.size === 0) return;
    const state = this.connectionState();
    for (const listener of [...this.#connectionListeners]) notify(listener.callback, state);
  }

  /** One call; `onCommit(ts)` hears a successful answer's own `Convex-Timestamp` (a mutation's commit) first. */
  async #call(kind, fn, args, forceRefresh = false, onCommit = undefined) {
    checkCall(fn, args);
    const token = await this.#auth.token(forceRefresh);
    const headers = callHeaders(token, this.#timestamp);
    let response;
    try {
      const format = this.#convex ? "?format=encoded" : "";
      response = await fetch(`${this.#base}/${kind}/${encodeURI(fn)}${format}`, {
        method: "POST",
        headers,
        body: JSON.stringify(this.#convex ? encodeConvexValue(args) : args),
      });
    } catch {
      throw new ConvexGatewayError(0);
    }
    const timestamp = response.headers?.get("Convex-Timestamp");
    this.#timestamp = laterTimestamp(this.#timestamp, timestamp);
    const body = await response.json().catch(() => null);
    if (response.ok) {
      const value = this.#convex ? decodeConvexValue(body) : body;
      onCommit?.(timestamp);
      return value;
    }
    // A refused token ran nothing: retrying once with a fresh one is safe, even for a mutation.
    if (response.status === 401 && token && !forceRefresh) return this.#call(kind, fn, args, true, onCommit);
    throw new ConvexGatewayError(response.status, body?.error);
  }

  /**
   * Update `id`'s mutation was answered, committed at `timestamp` (the answer's `Convex-Timestamp`): the update is
   * dropped now if the values shown hold at the commit already (or nothing is shown), else by the first transition
   * that reaches it; if none comes within `catchUpMs` (the mutation changed none of the stream's queries, so the
   * stream's snapshot does not move), the stream is opened again at the commit (`Convex-Min-Timestamp`).
   */
  #answered(id, timestamp) {
    const ts = this.#queries.size === 0 ? undefined : parseTimestamp(timestamp);
    if (this.#optimistic.answered(id, ts, this.#heldTs)) {
      this.#inPass(() => this.#show());
      return;
    }
    if (this.#catchUpTimer !== undefined) return;
    this.#catchUpTimer = setTimeout(() => {
      this.#catchUpTimer = undefined;
      const awaited = this.#optimistic.awaitedTs;
      if (awaited !== undefined && (this.#heldTs === undefined || this.#heldTs < awaited)) this.#scheduleOpen(0);
    }, this.#catchUpMs);
  }

  /**
   * Gives listeners what changed, in the current pass: the failures among `changes` (from applyTransition), and each
   * live query's value to show (the server's, with the pending optimistic updates applied on top in order) when it is
   * not the one they were last given.
   */
  #show(changes = []) {
    for (const change of changes) {
      if (change.error !== undefined) this.#fail(change.query, new ConvexGatewayError(undefined, change.error));
    }
    // Every value is in place (`current()` reads them) before the first listener runs.
    const delivered = [];
    if (this.#optimistic.size === 0 && !this.#showsOptimistic) {
      // No update applied, now or before: the server's values, in the order of the transition.
      for (const change of changes) {
        if (change.error !== undefined) continue;
        change.query.shown = change.value;
        delivered.push(change.query);
      }
    } else {
      const server = new Map();
      for (const [key, { fn, args, hash, value }] of this.#queries) {
        server.set(key, { fn, args, value: hash === undefined ? undefined : value });
      }
      const shown = this.#optimistic.replay(server);
      this.#showsOptimistic = this.#optimistic.size > 0;
      for (const [key, query] of this.#queries) {
        const value = shown.get(key)?.value;
        if (value === undefined || Object.is(value, query.shown)) continue;
        // An update applied again makes new objects: one equal to what is shown is not news (and is not delivered).
        if (query.shown !== undefined && stableKey(value) === stableKey(query.shown)) continue;
        query.shown = value;
        delivered.push(query);
      }
    }
    for (const query of delivered) {
      for (const listener of [...query.listeners]) notify(listener.onValue, query.shown);
    }
  }

  /**
   * Calls listeners in one pass: `deliver` calls them, then each piece of work they queued with #atEndOfPass runs
   * once (again if it is queued again meanwhile), before the pass returns.
   */
  #inPass(deliver) {
    if (this.#pass) return deliver();
    const pass = (this.#pass = new Set());
    try {
      deliver();
      // A Set's iteration also visits what is added (or deleted and re-added) while it runs.
      for (const finish of pass) finish();
    } finally {
      this.#pass = null;
    }
  }

  /** Runs `finish` at the end of the current pass (once, however often it is queued), or now outside a pass. */
  #atEndOfPass(finish) {
    if (!this.#pass) return finish();
    this.#pass.delete(finish);
    this.#pass.add(finish);
  }

  #scheduleOpen(delay = this.#debounceMs) {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#open(), delay);
  }

  /** Puts `source` in place of the current stream; with `null` (no live query left, or closed) none is open. */
  #replaceStream(source) {
    this.#source?.close();
    this.#source = source;
    if (source === null && this.#stream.open) {
      this.#stream.open = false;
      this.#connectionChanged();
    }
  }

  /** Opens a stream for the current set; the old one goes on until the new one replaces it. */
  async #open(forceRefresh = false) {
    const epoch = ++this.#streamEpoch;
    const byId = new Map();
    const url = new URL(`${this.#base}/subscribe`);
    url.searchParams.set("delta", "json-patch");
    for (const query of this.#queries.values()) {
      if (query.refused) continue;
      byId.set(query.id, query);
      url.searchParams.append(`sub.${query.id}`, query.fn);
      url.searchParams.append(`args.${query.id}`, JSON.stringify(this.#convex ? encodeConvexValue(query.args) : query.args));
    }
    if (this.#convex) url.searchParams.set("format", "encoded");
    if (byId.size === 0) return this.#replaceStream(null);
    try {
      const ticket = await this.#auth.streamTicket(forceRefresh);
      if (ticket) url.searchParams.set("ticket", ticket);
    } catch (error) {
      if (epoch !== this.#streamEpoch) return;
      this.#streamIs(false);
      this.#retry(error, byId);
      return;
    }
    if (epoch !== this.#streamEpoch) return;
    // Its first transition holds at least what this client wrote and saw (read your writes; an optimistic update's
    // catch-up).
    const headers = this.#timestamp === undefined ? {} : { "Convex-Min-Timestamp": this.#timestamp };
    const source = new this.#Reader(url, { headers });
    this.#replaceStream(source);
    const current = () => epoch === this.#streamEpoch;
    // A stream that replaces an open one (a changed set of live queries) leaves the state open until it opens or fails.
    source.addEventListener("open", () => {
      if (!current()) return;
      this.#failures = 0;
      this.#streamIs(true);
    });
    source.addEventListener("lost", () => current() && this.#streamIs(false));
    const decode = this.#convex ? decodeConvexValue : (value) => value;
    source.addEventListener("transition", (event) => {
      if (!current()) return;
      const message = JSON.parse(event.data);
      this.#timestamp = laterTimestamp(this.#timestamp, message.ts);
      const changes = applyTransition(byId, message, decode);
      if (changes === null) {
        // A patch was made for a value this page does not hold: start again from full values.
        this.#scheduleOpen(0);
        return;
      }
      const ts = parseTimestamp(message.ts);
      if (ts !== undefined) this.#heldTs = ts;
      // Every value of the transition is held now; its callbacks run in one pass, in which the optimistic updates of
      // the mutations it holds are dropped.
      this.#inPass(() => {
        if (ts !== undefined) this.#optimistic.reached(ts);
        this.#show(changes);
      });
    });
    source.addEventListener("fatal", (event) => {
      if (!current()) return;
      // The whole stream failed and ends; an expired token is the usual reason.
      const { error } = JSON.parse(event.data);
      this.#streamEpoch += 1;
      this.#replaceStream(null);
      this.#streamIs(false);
      this.#retry(new ConvexGatewayError(undefined, error), byId);
    });
    // Lost connections are tried again by the reader (with Last-Event-ID); a refusal ends it.
    source.addEventListener("refused", ({ status, error }) => current() && this.#refused(status, error, byId));
  }

  /** Reacts to the gateway's refusal of the stream: its status and error body (`error.sub` names a subscription). */
  #refused(status, error, byId) {
    this.#streamIs(false);
    const failure = new ConvexGatewayError(status, error);
    const named = typeof error?.sub === "string" ? byId.get(error.sub) : undefined;
    const refused = status >= 400 && status < 500 && status !== 401 && status !== 429;
    if (refused && named) {
      // One subscription's unknown function or bad arguments: it alone gets the error, the others go on without it.
      named.refused = failure;
      this.#inPass(() => this.#fail(named, failure));
      this.#scheduleOpen(0);
    } else if (refused) {
      this.#inPass(() => {
        for (const query of byId.values()) this.#fail(query, failure);
      });
    } else {
      this.#retry(failure, byId);
    }
  }

  /**
   * Re-opens after a failure: at once with a fresh token after a first refusal of the token, else backing off.
   * Listeners hear of every failure except a lost connection, that first refusal and a replica that is shutting down
   * (a restart or a rolling deploy: the next try reaches the new process or another replica).
   */
  #retry(failure, byId) {
    const unauthenticated = failure.status === 401 || failure.code === "Unauthenticated";
    const immediately = unauthenticated && this.#failures === 0;
    if (failure.status !== 0 && !immediately && failure.code !== "ShuttingDown") {
      this.#inPass(() => {
        for (const query of byId.values()) this.#fail(query, failure);
      });
    }
    const delay = Math.min(30000, 250 * 2 ** this.#failures) * (0.5 + Math.random() / 2);
    this.#failures += 1;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#open(unauthenticated), immediately ? 0 : delay);
  }

  #fail(query, error) {
    for (const listener of [...query.listeners]) notify(listener.onError, error);
  }
}

/**
 * The later of two Convex timestamps, decimal strings compared as BigInt: `seen` when `known` is undefined or older,
 * else `known`. A `seen` that is not a Convex timestamp (a missing header; not decimal digits; above 2^63 - 1, which
 * the gateway would refuse in `Convex-Min-Timestamp`) is ignored.
 */
export function laterTimestamp(known, seen) {
  if (typeof seen !== "string" || !/^[0-9]{1,20}$/.test(seen)) return known;
  const value = BigInt(seen);
  if (value >= 2n ** 63n) return known;
  if (known !== undefined && BigInt(known) >= value) return known;
  return value.toString(); // canonical: no leading zeros
}

/** A Convex timestamp (decimal string) as a BigInt; undefined when it is not one. */
function parseTimestamp(text) {
  const known = laterTimestamp(undefined, text);
  return known === undefined ? undefined : BigInt(known);
}

function checkCall(fn, args) {
  if (typeof fn !== "string" || fn === "") throw new TypeError("the function name must be a non-empty string");
  if (args === null || typeof args !== "object" || Array.isArray(args)) {
    throw new TypeError(`the arguments of ${fn} must be an object`);
  }
}
