/**
 * The mutation queue: every mutation of a page goes through one ordered queue and the gateway's batch route
 * (`POST /mutations`), so mutations commit in the order they were called, as on convex-js' one WebSocket, and a
 * mutation whose answer was lost is sent again until it is answered. Part of client.js (see gateway.js).
 */

import { Backoff, OutageNotice, defaultTimers, retryAfterMs } from "./backoff.js";
import { checkCall, postJSON } from "./calls.js";
import { ConvexGatewayError } from "./errors.js";

/** The gateway's answers that ran nothing for sure, or only what a resend runs once: tried again later. */
const RETRYABLE = new Set([429, 502, 503, 504]);
const MAX_BATCH = 100;
/** A batch stops growing past this many bytes of arguments (a mutation larger than it goes alone), well inside the
 * gateway's body limit, so that many large mutations called at once never make one body it refuses. */
const MAX_BATCH_BYTES = 1 << 20;

/**
 * RequestQueue: `mutation(path, args, hooks)` enqueues. When no batch is on the wire, every queued mutation (at most
 * 100) goes as one batch in a microtask, so the mutations called in one tick travel together; while a batch is on the
 * wire, new ones wait for its answer and go in the next. A batch carries the page's session id (`Convex-Session-Id`)
 * and each mutation its own request id: a mutation sent again keeps both, and the deployment runs it once.
 *
 * - A network error, or a whole answer 429/502/503/504: the batch is sent again after a backoff (with jitter, honouring
 *   `Retry-After`), for as long as the page lives.
 * - An entry answered 429/502/503/504 (the gateway stopped there): it and every later entry are sent again, in order,
 *   ahead of newer mutations.
 * - A whole answer 401 while the page has a token: sent again at once with `token({ forceRefresh: true })`, once.
 * - Any other answer settles each mutation with its own entry: its value, or a ConvexGatewayError.
 */
export class RequestQueue {
  #client;
  #sessionId;
  #nextRequestId = 0;
  /** Mutations waiting to go, in order: { requestId, path, args, hooks, resolve, reject, sent }. */
  #queued = [];
  /** The batch on the wire (an array of entries), or null. */
  #onWire = null;
  /** A send is scheduled (a microtask, or a backoff timer). */
  #scheduled = false;
  #timer = undefined;
  #timers;
  #backoff;
  #outage;
  #closed = false;
  /** After close(): resolves the promise close() returned, once no batch is on the wire. */
  #idle = null;
  #whenIdle = () => {};

  /**
   * @param {{ base: string, auth: object, seen: object, values: object }} client as callOnce takes it (calls.js).
   * @param {{ timers?: typeof defaultTimers, sessionId?: string, outage?: OutageNotice }} [options]
   */
  constructor(client, { timers = defaultTimers, sessionId = randomSessionId(), outage = new OutageNotice() } = {}) {
    this.#client = client;
    this.#sessionId = sessionId;
    this.#timers = timers;
    this.#backoff = new Backoff({ initialMs: 100, maxMs: 10000, random: timers.random });
    this.#outage = outage;
  }

  /** The page session id every batch carries. */
  get sessionId() {
    return this.#sessionId;
  }

  /**
   * Queues mutation `path`; resolves to its value or rejects with a ConvexGatewayError. `hooks.onSent()` runs when it
   * first goes on the wire, `hooks.onCommit(ts)` with its commit timestamp (a decimal string) just before it resolves,
   * `hooks.onFail()` just before it rejects.
   */
  mutation(path, args, hooks = {}) {
    checkCall(path, args);
    if (this.#closed) return Promise.reject(new ConvexGatewayError(0, closedError));
    const body = this.#client.values.encode(args);
    return new Promise((resolve, reject) => {
      const bytes = path.length + JSON.stringify(body).length;
      this.#queued.push({ requestId: this.#nextRequestId++, path, args: body, bytes, hooks, resolve, reject, sent: false });
      this.#schedule(0);
    });
  }

  /** Stops sending: queued mutations reject, none is sent again; resolves once the batch on the wire is answered. */
  close() {
    this.#closed = true;
    this.#timers.clearTimeout(this.#timer);
    this.#settleAll(this.#queued.splice(0), new ConvexGatewayError(0, closedError));
    if (this.#onWire === null) return Promise.resolve();
    return (this.#idle ??= new Promise((resolve) => (this.#whenIdle = resolve)));
  }

  #schedule(delay) {
    if (this.#scheduled || this.#onWire !== null || this.#queued.length === 0 || this.#closed) return;
    this.#scheduled = true;
    const go = () => {
      this.#scheduled = false;
      this.#timer = undefined;
      this.#send(false);
    };
    if (delay === 0) queueMicrotask(go);
    else this.#timer = this.#timers.setTimeout(go, delay);
  }

  async #send(forceRefresh) {
    if (this.#closed || this.#queued.length === 0) return;
    let count = 1;
    for (let bytes = this.#queued[0].bytes; count < Math.min(MAX_BATCH, this.#queued.length); count++) {
      bytes += this.#queued[count].bytes;
      if (bytes > MAX_BATCH_BYTES) break;
    }
    const batch = (this.#onWire = this.#queued.splice(0, count));
    for (const entry of batch) {
      if (entry.sent) continue;
      entry.sent = true;
      entry.hooks.onSent?.();
    }
    let outcome;
    try {
      outcome = await this.#post(batch, forceRefresh);
    } catch (error) {
      outcome = { fail: error };
    }
    this.#onWire = null;
    if (outcome.refresh) {
      if (!this.#closed) {
        this.#queued.unshift(...batch);
        return this.#send(true);
      }
      outcome = { resend: batch };
    }
    if (outcome.fail) this.#settleAll(batch, outcome.fail);
    const resend = outcome.resend ?? [];
    if (resend.length > 0 && this.#closed) this.#settleAll(resend, new ConvexGatewayError(0, closedError));
    else this.#queued.unshift(...resend);
    if (this.#closed) {
      this.#whenIdle();
      return;
    }
    if (resend.length > 0) {
      if (outcome.unreachable) this.#outage.unreachable();
      this.#schedule(this.#backoff.next(outcome.retryAfterMs ?? 0));
    } else {
      this.#backoff.reset();
      this.#outage.reachable();
      this.#schedule(0);
    }
  }

  /**
   * Sends `batch` and settles what its answer settles. Returns what is left to do: `{ resend, unreachable,
   * retryAfterMs }` (entries to send again), `{ refresh: true }` (send again with a fresh token), `{ fail }` (reject
   * every entry), or `{}`.
   */
  async #post(batch, forceRefresh) {
    const mutations = batch.map(({ requestId, path, args }) => ({ requestId, path, args }));
    const answer = await postJSON(this.#client, "/mutations", { mutations }, forceRefresh, {
      "Convex-Session-Id": this.#sessionId,
    });
    if (answer === null) return { resend: batch, unreachable: true };
    const { token, response, body } = answer;
    if (!response.ok) {
      if (RETRYABLE.has(response.status)) return { resend: batch, retryAfterMs: retryAfterMs(response) };
      if (response.status === 401 && token && !forceRefresh) return { refresh: true };
      return { fail: new ConvexGatewayError(response.status, body?.error) };
    }
    const results = Array.isArray(body?.results) ? body.results : [];
    for (const [index, entry] of batch.entries()) {
      const result = results[index];
      if (result === undefined || result === null || result.requestId !== entry.requestId) {
        // An answer that does not match the batch: nothing can be said about this entry and the later ones.
        this.#settleAll(batch.slice(index), new ConvexGatewayError(502, badAnswer));
        break;
      }
      if (RETRYABLE.has(result.status)) return { resend: batch.slice(index), retryAfterMs: retryAfterMs(response) };
      settle(entry, result, this.#client.values.decode);
    }
    return {};
  }

  #settleAll(entries, error) {
    for (const entry of entries) {
      entry.hooks.onFail?.();
      entry.reject(error);
    }
  }
}

const closedError = { code: "ClientClosed", message: "The client was closed before the mutation was answered" };
const badAnswer = { code: "InvalidResponse", message: "The gateway's answer does not match the mutations sent" };

/** Settles one entry with its result: `{ value, ts }` committed, or `{ status, error }` failed. */
function settle(entry, result, decode) {
  if (result.error !== undefined || result.status !== undefined) {
    entry.hooks.onFail?.();
    entry.reject(new ConvexGatewayError(result.status ?? 500, result.error));
    return;
  }
  let value;
  try {
    value = decode(result.value ?? null);
  } catch (error) {
    entry.hooks.onFail?.();
    entry.reject(error);
    return;
  }
  entry.hooks.onCommit?.(result.ts);
  entry.resolve(value);
}

/**
 * A random lowercase RFC 4122 version 4 UUID: `crypto.randomUUID()`, which browsers give only to secure contexts (HTTPS,
 * localhost), else made from `crypto.getRandomValues`, which they give to every page.
 */
export function randomSessionId() {
  if (typeof globalThis.crypto?.randomUUID === "function") return globalThis.crypto.randomUUID();
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
