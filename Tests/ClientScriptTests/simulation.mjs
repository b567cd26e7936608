/**
 * Stand-ins for the node tests of client.js' mutation queue and optimistic updates: a seeded random source, a virtual
 * clock whose timers client.js takes (`new ConvexGateway(url, { timers })`), and a simulated gateway answering
 * `POST /mutations` batches as the gateway's contract says, deduplicating resends by (session, request id) as the
 * deployment does.
 */

/** A seeded pseudo-random source (mulberry32): the same seed, the same interleavings. */
export function seededRandom(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  next.int = (low, high) => low + Math.floor(next() * (high - low + 1));
  return next;
}

/** Lets every pending promise reaction run (a macrotask turn after the microtasks). */
export const settle = async (turns = 3) => {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
};

/**
 * A virtual clock: `setTimeout`/`clearTimeout` as client.js calls them, `random` seeded, and `advance(ms)`, which runs
 * every timer due in order, letting promises settle between them. `delays` records each timer's delay.
 */
export class VirtualClock {
  now = 0;
  delays = [];
  #timers = new Map();
  #next = 1;

  constructor(random = Math.random) {
    this.random = random;
    this.setTimeout = (callback, ms = 0) => {
      this.delays.push(ms);
      return this.after(ms, callback);
    };
    this.clearTimeout = (id) => {
      this.#timers.delete(id);
    };
  }

  /** Runs `callback` after `ms` of virtual time, unrecorded (a simulated network's delays). */
  after(ms, callback) {
    const id = this.#next++;
    this.#timers.set(id, { at: this.now + Math.max(0, ms), callback, id });
    return id;
  }

  get pending() {
    return this.#timers.size;
  }

  async advance(ms) {
    const end = this.now + ms;
    await settle();
    for (;;) {
      let due;
      for (const timer of this.#timers.values()) if (timer.at <= end && (!due || timer.at < due.at || (timer.at === due.at && timer.id < due.id))) due = timer;
      if (!due) break;
      this.#timers.delete(due.id);
      this.now = due.at;
      due.callback();
      await settle();
    }
    this.now = end;
  }
}

const json = (status, body, headers = {}) => ({
  ok: status >= 200 && status < 300,
  status,
  headers: new Headers(headers),
  json: async () => body,
});

/**
 * The gateway's `POST /mutations` over a simulated network (`clock`'s time): each batch reaches the "deployment" after
 * `delay()` ms, whose entries commit one after another (a resent request id of the same session is not run again:
 * its first result is answered), and the answer comes back after another `delay()` ms. `down(untilMs)` makes every
 * request fail as unreachable until then; `cutNext` (or `cut()` returning true) loses the answer of the next batch
 * after its entries committed.
 * `commits` lists every mutation run, in commit order: { session, requestId, path, args, ts }, each also given to
 * `onCommit` when set.
 */
export class SimulatedGateway {
  commits = [];
  requests = [];
  #results = new Map();
  #ts = 1000;
  downUntil = -1;
  cutNext = false;
  cut = () => false;

  constructor(clock, delay = () => 5) {
    this.clock = clock;
    this.delay = delay;
    this.fetch = (url, init) => this.#fetch(String(url), init);
  }

  #fetch(url, init) {
    const request = { url, headers: init.headers, body: JSON.parse(init.body), at: this.clock.now };
    this.requests.push(request);
    return new Promise((resolve, reject) => {
      if (this.clock.now < this.downUntil) {
        this.clock.after(3, () => reject(new TypeError("Failed to fetch")));
        return;
      }
      const cut = this.cutNext || this.cut();
      this.cutNext = false;
      this.clock.after(this.delay(), () => {
        const answer = this.#run(request);
        this.clock.after(this.delay(), () => (cut ? reject(new TypeError("network error")) : resolve(answer)));
      });
    });
  }

  #run({ url, headers, body }) {
    if (!url.includes("/mutations?")) return json(404, { error: { code: "NotFound", message: url } });
    const session = headers["Convex-Session-Id"];
    const results = body.mutations.map(({ requestId, path, args }) => {
      const key = `${session} ${requestId}`;
      if (!this.#results.has(key)) {
        const ts = String(++this.#ts);
        this.commits.push({ session, requestId, path, args, ts });
        this.onCommit?.(this.commits.at(-1));
        this.#results.set(key, { requestId, value: { committed: args }, ts });
      }
      return this.#results.get(key);
    });
    return json(200, { results }, { "Convex-Timestamp": results.at(-1).ts });
  }
}
