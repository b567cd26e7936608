/**
 * The page's one stream: Connection opens `GET /subscribe` for the live queries (live-queries.js), re-opens it when
 * their set changes or it fails, backing off with jitter, and keeps the stream's side of the connection state. Part
 * of client.js (see gateway.js).
 */

import { Backoff, OutageNotice, defaultTimers } from "./backoff.js";
import { ConvexGatewayError } from "./errors.js";

/** Milliseconds a stream must stay open (or deliver an event) before a failure starts the backoff from the start. */
const STABLE_MS = 10000;

/**
 * All subscriptions share ONE stream (`GET /subscribe?sub.<id>=…&args.<id>=…&delta=json-patch&format=…`); when the set
 * changes it is re-opened after a debounce, the old one going on until the new one replaces it. A lost connection is
 * tried again by the reader (with `Last-Event-ID`): the first time after the server's `retry:`, then with the same
 * backoff as after a refusal (100 ms doubling to 10 s, ±50 % jitter), which starts over once a stream has delivered
 * an event or stayed open 10 s. The console hears of an outage once, not once per try.
 */
export class Connection {
  #base;
  #auth;
  #seen;
  #values;
  #queries;
  #Reader;
  #timers;
  #debounceMs;
  #onChange;
  #backoff;
  #outage;
  #source = null;
  /** Bumped whenever the stream is replaced or closed, so callbacks of an old one do nothing. */
  #epoch = 0;
  #timer = undefined;
  #stableTimer = undefined;
  #closed = false;
  /** The stream's side of the connection state. */
  state = { open: false, hasEverConnected: false, connectionCount: 0, connectionRetries: 0 };

  /**
   * @param {{ base: string, auth: object, seen: object, values: object }} client as callOnce takes it (calls.js).
   * @param {object} queries The LiveQueries the stream feeds.
   * @param {{ Reader: Function, timers?: typeof defaultTimers, debounceMs: number, onChange: () => void,
   *   outage?: OutageNotice }} options `Reader` is the stream's transport (EventStreamReader or a test's stand-in);
   *   `onChange()` runs on every change of `state`.
   */
  constructor(client, queries, { Reader, timers = defaultTimers, debounceMs, onChange, outage = new OutageNotice() }) {
    this.#base = client.base;
    this.#auth = client.auth;
    this.#seen = client.seen;
    this.#values = client.values;
    this.#queries = queries;
    this.#Reader = Reader;
    this.#timers = timers;
    this.#debounceMs = debounceMs;
    this.#onChange = onChange;
    this.#backoff = new Backoff({ initialMs: 100, maxMs: 10000, random: timers.random });
    this.#outage = outage;
  }

  /** Opens the stream for the current set of live queries after `delay` ms (the debounce by default). */
  scheduleOpen(delay = this.#debounceMs) {
    if (this.#closed) return;
    this.#timers.clearTimeout(this.#timer);
    this.#timer = this.#timers.setTimeout(() => this.#open(), delay);
  }

  close() {
    this.#closed = true;
    this.#timers.clearTimeout(this.#timer);
    this.#timers.clearTimeout(this.#stableTimer);
    this.#epoch += 1;
    this.#replace(null);
  }

  /** Puts `source` in place of the current stream; with `null` (no live query left, or closed) none is open. */
  #replace(source) {
    this.#source?.close();
    this.#source = source;
    if (source === null && this.state.open) {
      this.state.open = false;
      this.#onChange();
    }
  }

  /** The stream opened (`true`) or failed (`false`). */
  #streamIs(open) {
    const state = this.state;
    if (open) {
      Object.assign(state, { open, hasEverConnected: true, connectionRetries: 0 });
      state.connectionCount += 1;
    } else {
      Object.assign(state, { open, connectionRetries: state.connectionRetries + 1 });
    }
    this.#onChange();
  }

  /** A stream proved itself (an event, or open long enough): the next failure is tried again quickly. */
  #stable() {
    this.#timers.clearTimeout(this.#stableTimer);
    this.#backoff.reset();
    this.#outage.reachable();
  }

  /** Opens a stream for the current set; the old one goes on until the new one replaces it. */
  async #open(forceRefresh = false) {
    const epoch = ++this.#epoch;
    const byId = new Map();
    const url = new URL(`${this.#base}/subscribe`);
    url.searchParams.set("delta", "json-patch");
    for (const query of this.#queries.forStream()) {
      byId.set(query.id, query);
      url.searchParams.append(`sub.${query.id}`, query.fn);
      url.searchParams.append(`args.${query.id}`, JSON.stringify(this.#values.encode(query.args)));
    }
    url.searchParams.set("format", this.#values.format);
    if (byId.size === 0) return this.#replace(null);
    try {
      const ticket = await this.#auth.streamTicket(forceRefresh);
      if (ticket) url.searchParams.set("ticket", ticket);
    } catch (error) {
      if (epoch !== this.#epoch) return;
      this.#streamIs(false);
      this.#retry(error, byId);
      return;
    }
    if (epoch !== this.#epoch) return;
    // Its first transition holds at least what this client wrote and saw (read your writes; an optimistic update's
    // catch-up).
    const headers = this.#seen.value === undefined ? {} : { "Convex-Min-Timestamp": this.#seen.value };
    const source = new this.#Reader(url, { headers, backoff: this.#backoff, timers: this.#timers });
    this.#replace(source);
    const current = () => epoch === this.#epoch;
    // A stream that replaces an open one (a changed set of live queries) leaves the state open until it opens or fails.
    source.addEventListener("open", () => {
      if (!current()) return;
      this.#timers.clearTimeout(this.#stableTimer);
      this.#stableTimer = this.#timers.setTimeout(() => current() && this.#stable(), STABLE_MS);
      this.#streamIs(true);
    });
    source.addEventListener("lost", () => {
      if (!current()) return;
      this.#timers.clearTimeout(this.#stableTimer);
      // The reader tries again at once the first time; a second failure in a row is an outage.
      if (this.#backoff.failures > 0) this.#outage.unreachable();
      this.#streamIs(false);
    });
    const decode = this.#values.decode;
    source.addEventListener("transition", (event) => {
      if (!current()) return;
      this.#stable();
      this.#queries.receive(byId, JSON.parse(event.data), decode);
    });
    source.addEventListener("fatal", (event) => {
      if (!current()) return;
      // The whole stream failed and ends; an expired token is the usual reason.
      const { error } = JSON.parse(event.data);
      this.#epoch += 1;
      this.#replace(null);
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
      this.#queries.refuse(named, failure);
      this.scheduleOpen(0);
    } else if (refused) {
      this.#queries.failAll(byId.values(), failure);
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
    const immediately = unauthenticated && this.#backoff.failures === 0;
    if (failure.status !== 0 && !immediately && failure.code !== "ShuttingDown") {
      this.#queries.failAll(byId.values(), failure);
    }
    if (failure.status === 0 && this.#backoff.failures > 0) this.#outage.unreachable();
    const delay = this.#backoff.next();
    if (this.#closed) return;
    this.#timers.clearTimeout(this.#timer);
    this.#timer = this.#timers.setTimeout(() => this.#open(unauthenticated), immediately ? 0 : delay);
  }
}
