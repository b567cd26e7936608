/**
 * Waiting between tries, as convex-js does: Backoff (exponential delays with jitter, to a ceiling), the clock and
 * randomness it reads (injectable, so tests can check the delays), and the one console warning of an outage. Part of
 * client.js (see gateway.js).
 */

/** The timers and randomness client.js uses; a test gives its own to check delays without waiting for them. */
export const defaultTimers = {
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout: (timer) => globalThis.clearTimeout(timer),
  random: () => Math.random(),
};

/**
 * Exponential backoff with ±50 % jitter: the n-th delay after the last success is `initialMs · 2^n`, at most `maxMs`,
 * times a random factor in [0.5, 1.5), so that the pages of one outage do not all come back at the same moment.
 * (A quick first try, `nextAfterQuick`, does not count in n.)
 */
export class Backoff {
  #initialMs;
  #maxMs;
  #random;
  /** Failures since the last `reset()`. */
  failures = 0;
  /** 1 when the first of them was tried again quickly. */
  #quick = 0;

  /** @param {{ initialMs?: number, maxMs?: number, random?: () => number }} [options] */
  constructor({ initialMs = 100, maxMs = 10000, random = defaultTimers.random } = {}) {
    this.#initialMs = initialMs;
    this.#maxMs = maxMs;
    this.#random = random;
  }

  /** The delay before the next try (and counts a failure); never less than `atLeastMs` (a `Retry-After`). */
  next(atLeastMs = 0) {
    const base = Math.min(this.#maxMs, this.#initialMs * 2 ** Math.min(this.failures - this.#quick, 30));
    this.failures += 1;
    return Math.max(atLeastMs, base * (0.5 + this.#random()));
  }

  /** The delay before a first try after one failure may be `quickMs` (an event stream's `retry:`); later ones back off. */
  nextAfterQuick(quickMs) {
    if (this.failures > 0) return this.next();
    this.failures = 1;
    this.#quick = 1;
    return quickMs;
  }

  /** Succeeded: the next failure starts from `initialMs` again. */
  reset() {
    this.failures = 0;
    this.#quick = 0;
  }
}

/**
 * The console's one line about an outage: `unreachable()` warns the first time after the last `reachable()`, so a page
 * whose gateway is down says so once, not once per try (the browser itself logs each failed request).
 */
export class OutageNotice {
  #warned = false;

  unreachable() {
    if (this.#warned) return;
    this.#warned = true;
    console.warn("client.js: the gateway is unreachable; retrying with backoff");
  }

  reachable() {
    this.#warned = false;
  }
}

/** Milliseconds a `Retry-After` header asks for (seconds, or an HTTP date); 0 when there is none. */
export function retryAfterMs(response) {
  const text = response.headers?.get?.("Retry-After");
  if (typeof text !== "string" || text.trim() === "") return 0;
  if (/^[0-9]+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? 0 : Math.max(0, date - Date.now());
}
