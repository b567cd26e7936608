/**
 * The page's live queries: LiveQueries holds each one's server value and the value shown (optimistic updates applied),
 * applies the stream's transitions and calls the page's callbacks in passes. It opens no connection: the stream
 * (connection.js) hands it transitions, the mutation queue (request-queue.js) its optimistic mutations' progress.
 * Part of client.js (see gateway.js).
 */

import { defaultTimers } from "./backoff.js";
import { notify } from "./callbacks.js";
import { ConvexGatewayError } from "./errors.js";
import { OptimisticUpdates, queryKey } from "./optimistic.js";
import { applyTransition } from "./patching.js";
import { parseTimestamp, stableKey } from "./values.js";

/**
 * Consistency: all values of one transition are stored before any callback runs, and its callbacks run in one
 * synchronous pass, so a callback that reads another live query (`current()`) sees the same snapshot of the database.
 *
 * Optimistic updates: what a page shows is the stream's values with every pending update applied again on top, in the
 * order the mutations were called (OptimisticUpdates). While an update's mutation is on the wire the stream's
 * transitions are held, and applied, each in its own pass, once it is answered: the update is dropped in the pass of
 * the first one at or after its commit, so nothing shows twice whichever connection brings what first. When no held
 * transition reaches the commit, the update waits for one; after `catchUpMs` without it (a mutation that changed none
 * of the stream's queries moves no snapshot), `onBehind()` has the stream opened again at the commit.
 */
export class LiveQueries {
  /** By function and arguments: { id, fn, args, listeners, hash, value, shown, refused }; `value` is the server's,
   * `hash` the gateway's hash of it (what a patch names as its base), `shown` what the listeners were last given,
   * `refused` the error of a query whose input the gateway refused. */
  #queries = new Map();
  #nextId = 0;
  /** While listeners are being called (one pass): the work to run once at its end, after every listener. */
  #pass = null;
  #optimistic = new OptimisticUpdates();
  /** The Convex timestamp (BigInt) the values held hold at: the `ts` of the last transition applied. */
  #heldTs = undefined;
  /** Whether the values last shown had optimistic updates applied (so dropping the last one shows the server's). */
  #showsOptimistic = false;
  #seen;
  #timers;
  #catchUpMs;
  #catchUpTimer = undefined;
  #onSetChanged;
  #onBehind;
  #closed = false;

  /**
   * @param {{ seen: object, timers?: typeof defaultTimers, catchUpMs?: number, onSetChanged: () => void,
   *   onBehind: () => void }} options `seen` is the client's SeenTimestamp; `onSetChanged()` runs when a query is added
   *   or removed, `onBehind()` when the stream must be opened again now (a patch for a value not held, a catch-up).
   */
  constructor({ seen, timers = defaultTimers, catchUpMs = 250, onSetChanged, onBehind }) {
    this.#seen = seen;
    this.#timers = timers;
    this.#catchUpMs = catchUpMs;
    this.#onSetChanged = onSetChanged;
    this.#onBehind = onBehind;
  }

  /** The value a live query shows now, optimistic updates included (undefined before its first value). */
  current(fn, args) {
    return this.#queries.get(queryKey(fn, args))?.shown;
  }

  /** The queries a stream should follow now (not the refused ones), in the order they were added. */
  forStream() {
    return [...this.#queries.values()].filter((query) => !query.refused);
  }

  /** Adds a listener to live query `fn(args)` (which it creates if new). Returns a function that removes it. */
  subscribe(fn, args, onValue, onError) {
    const key = queryKey(fn, args);
    let query = this.#queries.get(key);
    const listener = { onValue, onError };
    if (!query) {
      query = { id: `q${++this.#nextId}`, fn, args, listeners: new Set(), hash: undefined, value: undefined, shown: undefined };
      this.#queries.set(key, query);
      this.#onSetChanged();
    } else if (query.refused || query.shown !== undefined) {
      queueMicrotask(() =>
        this.inPass(() => {
          if (!query.listeners.has(listener)) return;
          if (query.refused) notify(listener.onError, query.refused);
          else notify(listener.onValue, query.shown);
        }),
      );
    }
    query.listeners.add(listener);
    return () => {
      if (query.listeners.delete(listener) && query.listeners.size === 0 && this.#queries.get(key) === query) {
        this.#queries.delete(key);
        this.#onSetChanged();
      }
    };
  }

  /** Forgets every query and held transition; nothing is called after this. */
  close() {
    this.#closed = true;
    this.#queries.clear();
    this.#timers.clearTimeout(this.#catchUpTimer);
    this.#catchUpTimer = undefined;
  }

  /**
   * One transition of the stream (`message`, the event's data), for the queries `byId` (the stream's ids); `decode`
   * turns a value as sent into the page's. Held while an optimistic update's mutation is on the wire, else applied.
   */
  receive(byId, message, decode) {
    this.#seen.see(message.ts);
    if (this.#optimistic.holding) this.#optimistic.hold({ byId, message, decode });
    else this.#apply({ byId, message, decode });
  }

  /** Query `query`'s subscription was refused (bad input): it alone hears `failure`, and leaves the stream. */
  refuse(query, failure) {
    query.refused = failure;
    this.inPass(() => this.#fail(query, failure));
  }

  /** Every query of `queries` hears `failure` (they stay subscribed), in one pass. */
  failAll(queries, failure) {
    this.inPass(() => {
      for (const query of queries) this.#fail(query, failure);
    });
  }

  /** Applies optimistic update `update(localStore)` at once, in one pass; returns its id. */
  addOptimistic(update) {
    const id = this.#optimistic.add(update);
    this.inPass(() => this.#show());
    return id;
  }

  /** Update `id`'s mutation went on the wire: the stream's transitions are held until its answer. */
  sent(id) {
    this.#optimistic.sent(id);
  }

  /**
   * Update `id`'s mutation committed at `timestamp` (a decimal string): dropped now if the values shown hold at the
   * commit already (or nothing is shown), else in the pass of the first transition that reaches it, held or to come.
   */
  answered(id, timestamp) {
    const ts = this.#queries.size === 0 ? undefined : parseTimestamp(timestamp);
    if (this.#optimistic.answered(id, ts, this.#heldTs)) this.inPass(() => this.#show());
    this.#releaseHeld();
    const awaited = () => this.#optimistic.awaitedTs;
    const behind = () => awaited() !== undefined && (this.#heldTs === undefined || this.#heldTs < awaited());
    if (this.#catchUpTimer !== undefined || !behind()) return;
    this.#catchUpTimer = this.#timers.setTimeout(() => {
      this.#catchUpTimer = undefined;
      if (!this.#closed && behind()) this.#onBehind();
    }, this.#catchUpMs);
  }

  /** Update `id`'s mutation failed: rolled back at once, and the transitions held for it are applied. */
  failed(id) {
    if (this.#optimistic.remove(id)) this.inPass(() => this.#show());
    this.#releaseHeld();
  }

  #releaseHeld() {
    for (const transition of this.#optimistic.release()) this.#apply(transition);
  }

  #apply({ byId, message, decode }) {
    if (this.#closed) return;
    const changes = applyTransition(byId, message, decode);
    if (changes === null) {
      // A patch was made for a value this page does not hold: start again from full values.
      this.#onBehind();
      return;
    }
    const ts = parseTimestamp(message.ts);
    if (ts !== undefined) this.#heldTs = ts;
    // Its callbacks run in one pass, in which the optimistic updates of the mutations it holds are dropped.
    this.inPass(() => {
      if (ts !== undefined) this.#optimistic.reached(ts);
      this.#show(changes);
    });
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
   * Calls listeners in one pass: `deliver` calls them, then each piece of work they queued with atEndOfPass runs once
   * (again if it is queued again meanwhile), before the pass returns.
   */
  inPass(deliver) {
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
  atEndOfPass(finish) {
    if (!this.#pass) return finish();
    this.#pass.delete(finish);
    this.#pass.add(finish);
  }

  #fail(query, error) {
    for (const listener of [...query.listeners]) notify(listener.onError, error);
  }
}
