/**
 * client.js: the gateway's browser client, a dependency-free ES module served at `GET /client.js`. Its modules are
 * the files of Sources/ConvexGateway/Resources/client/ (this one, gateway.js, last), served as one file.
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
 */

import { EventStreamReader } from "./event-stream.js";

/**
 * A failure: `code`, `message`, `data` when a function threw a ConvexError, and `status`, the HTTP status of the
 * refusing response (undefined for an error that arrived on an open stream, 0 when the gateway was unreachable).
 */
export class ConvexGatewayError extends Error {
  constructor(status, error) {
    super(error?.message ?? (status === 0 ? "The gateway could not be reached" : `HTTP ${status}`));
    this.name = "ConvexGatewayError";
    this.status = status;
    this.code = error?.code ?? (status === 0 ? "NetworkError" : `Http${status}`);
    this.data = error?.data;
  }
}

export class ConvexGateway {
  #base;
  #token;
  #debounceMs;
  /** Live queries by function and arguments: { id, fn, args, listeners, hash, value, refused }; `hash` is the
   * gateway's hash of `value` (what a patch names as its base), `refused` the error of a query whose input the
   * gateway refused. */
  #queries = new Map();
  #nextId = 0;
  #source = null;
  /** Bumped whenever the stream is replaced or closed, so callbacks of an old one do nothing. */
  #generation = 0;
  #timer = undefined;
  #ticket = null;
  #failures = 0;
  /** Values as convex-js gives them (`values: "convex"`), else plain JSON. */
  #convex;
  /** The highest Convex timestamp seen (decimal string), sent as `Convex-Min-Timestamp`; undefined before the first. */
  #timestamp = undefined;
  /** While listeners are being called (one pass): the work to run once at its end, after every listener. */
  #pass = null;
  /** The class that reads the stream: EventStreamReader, or a stand-in a test gives. */
  #Reader;

  /**
   * @param {string} url The gateway's base URL, e.g. "https://gateway.example.com".
   * @param {{ token?: (options: { forceRefresh: boolean, forceRefreshToken: boolean }) =>
   *             Promise<string | null | undefined> | string | null | undefined,
   *           debounceMs?: number, values?: "json" | "convex", eventStreamReader?: typeof EventStreamReader }} [options]
   *   `eventStreamReader` replaces the stream's transport, as convex-js' `webSocketConstructor` does (tests).
   */
  constructor(url, options = {}) {
    this.#base = new URL(String(url), globalThis.location?.href).href.replace(/\/+$/, "");
    const token = options.token ?? (() => null);
    this.#token = async (forceRefresh) => (await token({ forceRefresh, forceRefreshToken: forceRefresh })) ?? null;
    this.#debounceMs = options.debounceMs ?? 10;
    if (options.values !== undefined && options.values !== "json" && options.values !== "convex") {
      throw new TypeError(`values must be "json" or "convex", not ${options.values}`);
    }
    this.#convex = options.values === "convex";
    this.#Reader = options.eventStreamReader ?? EventStreamReader;
  }

  /**
   * The highest Convex timestamp this client has seen, as a decimal string (undefined before its first answer): what
   * it sends as `Convex-Min-Timestamp`, so that its queries read at least what it wrote and saw.
   */
  get timestamp() {
    return this.#timestamp;
  }

  /**
   * The value a live query holds now (undefined before its first value): inside a callback, the value of the same
   * transition as the one being delivered.
   */
  current(fn, args = {}) {
    return this.#queries.get(`${fn}\n${stableKey(args)}`)?.value;
  }

  /** Runs a query once and resolves to its value; rejects with a ConvexGatewayError. */
  query(fn, args = {}) {
    return this.#call("query", fn, args);
  }

  /** Runs a mutation and resolves to its value; rejects with a ConvexGatewayError. */
  mutation(fn, args = {}) {
    return this.#call("mutation", fn, args);
  }

  /** Runs an action and resolves to its value; rejects with a ConvexGatewayError. */
  action(fn, args = {}) {
    return this.#call("action", fn, args);
  }

  /**
   * Follows a query: `onValue(value)` with its current value and each change, `onError(error)` with a
   * ConvexGatewayError when it fails (a later value means it recovered). Returns a function that stops it.
   */
  subscribe(fn, args, onValue, onError = (error) => console.error(`${fn}:`, error)) {
    args ??= {};
    checkCall(fn, args);
    const key = `${fn}\n${stableKey(args)}`;
    let query = this.#queries.get(key);
    const listener = { onValue, onError };
    if (!query) {
      query = { id: `q${++this.#nextId}`, fn, args, listeners: new Set(), hash: undefined, value: undefined };
      this.#queries.set(key, query);
      this.#scheduleOpen();
    } else if (query.refused || query.hash !== undefined) {
      queueMicrotask(() =>
        this.#inPass(() => {
          if (!query.listeners.has(listener)) return;
          if (query.refused) notify(listener.onError, query.refused);
          else notify(listener.onValue, query.value);
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
    this.#generation += 1;
    this.#replaceStream(null);
  }

  async #call(kind, fn, args, forceRefresh = false) {
    checkCall(fn, args);
    const token = await this.#token(forceRefresh);
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
    this.#timestamp = laterTimestamp(this.#timestamp, response.headers?.get("Convex-Timestamp"));
    const body = await response.json().catch(() => null);
    if (response.ok) return this.#convex ? decodeConvexValue(body) : body;
    // A refused token ran nothing: retrying once with a fresh one is safe, even for a mutation.
    if (response.status === 401 && token && !forceRefresh) return this.#call(kind, fn, args, true);
    throw new ConvexGatewayError(response.status, body?.error);
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

  #replaceStream(source) {
    this.#source?.close();
    this.#source = source;
  }

  /** Opens a stream for the current set; the old one goes on until the new one replaces it. */
  async #open(forceRefresh = false) {
    const generation = ++this.#generation;
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
      const ticket = await this.#streamTicket(forceRefresh);
      if (ticket) url.searchParams.set("ticket", ticket);
    } catch (error) {
      if (generation === this.#generation) this.#retry(error, byId);
      return;
    }
    if (generation !== this.#generation) return;
    const source = new this.#Reader(url);
    this.#replaceStream(source);
    const current = () => generation === this.#generation;
    source.addEventListener("open", () => current() && (this.#failures = 0));
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
      // Every value of the transition is held now; its callbacks run in one pass.
      this.#inPass(() => {
        for (const change of changes) {
          if (change.error !== undefined) this.#fail(change.query, new ConvexGatewayError(undefined, change.error));
          else for (const listener of [...change.query.listeners]) notify(listener.onValue, change.value);
        }
      });
    });
    source.addEventListener("fatal", (event) => {
      if (!current()) return;
      // The whole stream failed and ends; an expired token is the usual reason.
      const { error } = JSON.parse(event.data);
      this.#generation += 1;
      this.#replaceStream(null);
      this.#retry(new ConvexGatewayError(undefined, error), byId);
    });
    // Lost connections are tried again by the reader (with Last-Event-ID); a refusal ends it.
    source.addEventListener("refused", ({ status, error }) => current() && this.#refused(status, error, byId));
  }

  /** Mints a stream ticket from the current token, or reuses the last one while it has time left. */
  async #streamTicket(forceRefresh) {
    const token = await this.#token(forceRefresh);
    if (!token) return null;
    const last = this.#ticket;
    if (!forceRefresh && last?.token === token && last.expiresAt - Date.now() > 5000) return last.ticket;
    let response;
    try {
      response = await fetch(`${this.#base}/stream-tickets`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}` },
      });
    } catch {
      throw new ConvexGatewayError(0);
    }
    const body = await response.json().catch(() => null);
    if (!response.ok) throw new ConvexGatewayError(response.status, body?.error);
    this.#ticket = { token, ticket: body.ticket, expiresAt: body.expiresAt };
    return body.ticket;
  }

  /** Reacts to the gateway's refusal of the stream: its status and error body (`error.sub` names a subscription). */
  #refused(status, error, byId) {
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
 * A live paginated query, as `gateway.paginatedQuery` returns it: `results` and `status` are what `onUpdate` was last
 * given, `loadMore(numItems)` adds a page (true) when the status is `"CanLoadMore"` (else false), `stop()` ends it.
 */
class PaginatedQuery {
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
 * - The first page is `{ numItems: initialNumItems, cursor: null }`.
 * - `loadMore(n)`, when the last page has loaded and is not done and no other page is loading, adds the page
 *   `{ numItems: n, cursor: <the last page's end> }`. A last page without an end cursor (only the last page can lack
 *   one) is pinned: subscribed again with `endCursor: <its continueCursor>`, so its end no longer moves and the page
 *   boundaries are all in the subscriptions' arguments. The unpinned page stays shown until the pinned one and the
 *   new page both have values; then both replace it at once. A split pending on that page is given up (the pinned
 *   page may split in its turn).
 * - A page whose value has a `splitCursor` and a `pageStatus` or more than twice `initialNumItems` items is split
 *   once: `(cursor, endCursor: splitCursor)` and `(splitCursor, endCursor: <its endCursor, else its
 *   continueCursor>)` replace it when both have values.
 * - `InvalidCursor` on any page drops every page and starts again from a first page `{ numItems: initialNumItems,
 *   cursor: null, id }`: `id`, a number this client has not used, makes it a new subscription, since the deployment
 *   may hold the old one's journal (where the page ended), a cursor of the query as it was. The list shown stays until
 *   the new first page arrives (status `"LoadingFirstPage"` meanwhile). After a start-over and until a loadMore or
 *   split completes, an `InvalidCursor` is reported instead (and the loadMore or split it belongs to given up): the
 *   new first page refused before its first value, or a cursor it gave refused. Only the new first page failing after
 *   it had a value (the query changed again) starts over again. Nothing repeats by itself.
 * - Any other failure is reported; the page keeps its last value, and its next value counts as recovery.
 */
export class PaginatedQueryState {
  #initialNumItems;
  /** The shown pages, in order: { id, paginationOpts, value, loaded, split: [first, second] | null, wasSplit }. */
  #pages = [];
  /** Every subscribed page by id: the shown ones and the ones waiting to replace some. */
  #subscribed = new Map();
  /** The pending loadMore: { last: the unpinned page it replaces (null if the last page was pinned), pinned, next }. */
  #loading = null;
  #nextId = 0;
  /** The list shown when the pages were dropped, shown until the new first page arrives. */
  #stale = undefined;
  /** The pages were dropped for an InvalidCursor (so the first page is the new one), and no loadMore or split has
   * completed since. */
  #restarted = false;
  #results = [];
  #dirty = false;

  /** @param {number} initialNumItems The first page's size, and the measure of a page to split (twice this). */
  constructor(initialNumItems) {
    checkNumItems(initialNumItems, "initialNumItems");
    this.#initialNumItems = initialNumItems;
  }

  /** Subscribes the first page. */
  start() {
    const effects = noEffects();
    this.#pages = [this.#add({ numItems: this.#initialNumItems, cursor: null }, effects)];
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
      this.#loading = { last: null, pinned: null, next: this.#add({ numItems, cursor: endCursor }, effects) };
    } else {
      const end = last.value.continueCursor;
      if (last.split) {
        for (const half of last.split) this.#remove(half, effects);
        last.split = null;
      }
      this.#loading = {
        last,
        pinned: this.#add({ ...last.paginationOpts, endCursor: end }, effects),
        next: this.#add({ numItems, cursor: end }, effects),
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
      effects.errors.push(error);
      return effects;
    }
    this.#stale = this.results;
    for (const id of this.#subscribed.keys()) effects.remove.push(id);
    this.#subscribed.clear();
    this.#loading = null;
    this.#restarted = true;
    this.#pages = [this.#add({ numItems: this.#initialNumItems, cursor: null, id: newPaginationId() }, effects)];
    this.#dirty = true;
    return effects;
  }

  #add(paginationOpts, effects) {
    const id = `p${++this.#nextId}`;
    const page = { id, paginationOpts, value: undefined, loaded: false, split: null, wasSplit: false };
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
      if (loading.pinned) this.#remove(loading.pinned, effects);
      this.#remove(loading.next, effects);
      this.#loading = null;
      return;
    }
    for (const shown of this.#pages) {
      if (shown.split?.includes(page)) {
        for (const half of shown.split) this.#remove(half, effects);
        shown.split = null;
      }
    }
  }

  /** Swaps in what has all its values, and starts the splits that are due. */
  #settle(effects) {
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
      const { cursor, endCursor = page.value.continueCursor } = page.paginationOpts;
      const numItems = this.#initialNumItems;
      page.split = [
        this.#add({ numItems, cursor, endCursor: splitCursor }, effects),
        this.#add({ numItems, cursor: splitCursor, endCursor }, effects),
      ];
    }
  }
}

let lastPaginationId = 0;

/** A `paginationOpts.id` this page has not used: the time in milliseconds, or more. */
function newPaginationId() {
  lastPaginationId = Math.max(Date.now(), lastPaginationId + 1);
  return lastPaginationId;
}

function noEffects() {
  return { add: [], remove: [], errors: [] };
}

function checkNumItems(numItems, name) {
  if (!Number.isInteger(numItems) || numItems < 1) throw new TypeError(`${name} must be a whole number of at least 1`);
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

/**
 * The headers of a call: JSON, `Authorization: Bearer <token>` when there is a token, and `Convex-Min-Timestamp` when
 * the client has seen a timestamp.
 */
export function callHeaders(token, timestamp) {
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (timestamp !== undefined) headers["Convex-Min-Timestamp"] = timestamp;
  return headers;
}

/**
 * Applies one `event: transition` of the stream to the live queries it names, all or nothing, calling no one.
 * `queries` maps a subscription id to its query (`{ hash, value }`, updated here); `message` is the event's data;
 * `decode` turns a value as sent into the value callbacks get. Returns the changes to announce, in order:
 * `{ query, value }` for a new value, `{ query, error }` for a failure (a value equal to the one held is left out). Returns
 * null, changing nothing, when a patch was made for a value other than the one held.
 */
export function applyTransition(queries, message, decode = (value) => value) {
  const next = [];
  for (const change of message.changes) {
    const query = queries.get(change.sub);
    if (!query) continue;
    if (change.error !== undefined) {
      next.push({ query, hash: undefined, error: change.error });
    } else if (change.ops !== undefined) {
      if (query.hash === undefined || query.hash !== change.base) return null;
      let value;
      try {
        value = applyPatch(
          query.value,
          change.ops.map((op) => (op.value === undefined ? op : { ...op, value: decode(op.value) })),
        );
      } catch {
        return null;
      }
      next.push({ query, hash: change.v, value });
    } else if (query.hash !== change.v || change.v === undefined) {
      next.push({ query, hash: change.v, value: decode(change.value) });
    }
  }
  const announced = [];
  for (const { query, hash, value, error } of next) {
    query.hash = hash;
    if (error !== undefined) {
      announced.push({ query, error });
    } else {
      query.value = value;
      announced.push({ query, value });
    }
  }
  return announced;
}

/**
 * Applies RFC 6902 operations (the gateway sends add, remove, replace and move) without changing `document`: the
 * objects and arrays along each changed path are copied once, the rest is shared. Throws on a path that does not fit.
 */
export function applyPatch(document, operations) {
  const root = [document]; // the document is root[0], so that every path has a parent
  const copies = new Set([root]);
  const index = (key, array, allowEnd) => {
    const n = key === "-" && allowEnd ? array.length : /^(0|[1-9][0-9]*)$/.test(key) ? Number(key) : -1;
    if (n < 0 || n > array.length || (n === array.length && !allowEnd)) throw new Error(`no index ${key}`);
    return n;
  };
  // The (copied) container of the pointer's last key, and that key.
  const locate = (pointer) => {
    if (pointer !== "" && !pointer.startsWith("/")) throw new Error(`not a JSON pointer: ${pointer}`);
    let parent = root;
    let key = "0";
    for (const part of pointer === "" ? [] : pointer.slice(1).split("/")) {
      let child = parent[key];
      if (child === null || typeof child !== "object") throw new Error(`nothing at ${pointer}`);
      if (!copies.has(child)) {
        child = Array.isArray(child) ? child.slice() : { ...child };
        parent[key] = child;
        copies.add(child);
      }
      parent = child;
      key = part.replaceAll("~1", "/").replaceAll("~0", "~");
    }
    return [parent, key];
  };
  const add = (pointer, value) => {
    const [parent, key] = locate(pointer);
    if (Array.isArray(parent) && parent !== root) parent.splice(index(key, parent, true), 0, value);
    else parent[key] = value;
  };
  const remove = (pointer) => {
    const [parent, key] = locate(pointer);
    if (parent === root) throw new Error("cannot remove the document");
    if (Array.isArray(parent)) return parent.splice(index(key, parent, false), 1)[0];
    if (!Object.hasOwn(parent, key)) throw new Error(`nothing at ${pointer}`);
    const value = parent[key];
    delete parent[key];
    return value;
  };
  for (const { op, path, from, value } of operations) {
    if (op === "add") add(path, value);
    else if (op === "remove") remove(path);
    else if (op === "replace") {
      const [parent, key] = locate(path);
      if (Array.isArray(parent) && parent !== root) parent[index(key, parent, false)] = value;
      else if (parent === root || Object.hasOwn(parent, key)) parent[key] = value;
      else throw new Error(`nothing at ${path}`);
    } else if (op === "move") add(path, remove(from));
    else throw new Error(`unsupported operation ${op}`);
  }
  return root[0];
}

/**
 * A value in Convex's JSON encoding (the gateway's `format=encoded`) as convex-js gives it: `{"$integer"}` as a
 * BigInt, `{"$bytes"}` as an ArrayBuffer, `{"$float"}` as the number (NaN, ±Infinity, -0), the rest as it is.
 */
export function decodeConvexValue(value) {
  if (Array.isArray(value)) return value.map(decodeConvexValue);
  if (value === null || typeof value !== "object") return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0].startsWith("$")) {
    const text = value[keys[0]];
    if (keys[0] === "$integer") return new DataView(base64Bytes(text, 8).buffer).getBigInt64(0, true);
    if (keys[0] === "$float") return new DataView(base64Bytes(text, 8).buffer).getFloat64(0, true);
    if (keys[0] === "$bytes") return base64Bytes(text).buffer;
  }
  const decoded = {};
  for (const key of keys) decoded[key] = decodeConvexValue(value[key]);
  return decoded;
}

/**
 * A value as convex-js takes it (BigInt, ArrayBuffer or a typed array's view, numbers) in Convex's JSON encoding:
 * BigInt as `{"$integer"}` (it must fit in 64 bits), bytes as `{"$bytes"}`, NaN, ±Infinity and -0 as `{"$float"}`.
 */
export function encodeConvexValue(value) {
  if (typeof value === "bigint") {
    if (value < -(2n ** 63n) || value >= 2n ** 63n) throw new TypeError(`${value} does not fit in an int64`);
    const view = new DataView(new ArrayBuffer(8));
    view.setBigInt64(0, value, true);
    return { $integer: bytesBase64(new Uint8Array(view.buffer)) };
  }
  if (typeof value === "number" && (!Number.isFinite(value) || Object.is(value, -0))) {
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, value, true);
    return { $float: bytesBase64(new Uint8Array(view.buffer)) };
  }
  if (value instanceof ArrayBuffer) return { $bytes: bytesBase64(new Uint8Array(value)) };
  if (ArrayBuffer.isView(value)) {
    return { $bytes: bytesBase64(new Uint8Array(value.buffer, value.byteOffset, value.byteLength)) };
  }
  if (Array.isArray(value)) return value.map(encodeConvexValue);
  if (value === null || typeof value !== "object") return value;
  const encoded = {};
  for (const [key, field] of Object.entries(value)) if (field !== undefined) encoded[key] = encodeConvexValue(field);
  return encoded;
}

function base64Bytes(text, length) {
  const binary = atob(text);
  if (length !== undefined && binary.length !== length) throw new TypeError(`not ${length} bytes of base64: ${text}`);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function bytesBase64(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** Arguments as a key: equal arguments (BigInt and bytes included) make equal keys. */
function stableKey(args) {
  return JSON.stringify(encodeConvexValue(args));
}

function checkCall(fn, args) {
  if (typeof fn !== "string" || fn === "") throw new TypeError("the function name must be a non-empty string");
  if (args === null || typeof args !== "object" || Array.isArray(args)) {
    throw new TypeError(`the arguments of ${fn} must be an object`);
  }
}

/** Calls a listener; one that throws is reported without disturbing the others. */
function notify(callback, ...values) {
  try {
    callback(...values);
  } catch (error) {
    (globalThis.reportError ?? console.error)(error);
  }
}
