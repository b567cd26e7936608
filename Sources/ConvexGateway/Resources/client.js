/**
 * client.js: the gateway's browser client, a dependency-free ES module served at `GET /client.js`.
 *
 *   import { ConvexGateway } from "http://127.0.0.1:8080/client.js";
 *   const gateway = new ConvexGateway("http://127.0.0.1:8080", { token: async () => currentJwtOrNull });
 *   const stop = gateway.subscribe("messages:list", { channel: "general" }, (messages) => render(messages),
 *                                  (error) => console.warn(error.code, error.message));
 *   await gateway.mutation("messages:send", { body: "hi", channel: "general" });   // also query(), action()
 *   stop();
 *
 * All subscriptions of one ConvexGateway share ONE event stream (`GET /subscribe?sub.<id>=…&args.<id>=…`), so a
 * page holds any number of live queries on a single HTTP/1.1 connection. When the set changes the stream is
 * re-opened after a short debounce, and a value equal to the one last delivered is not delivered again. Changes
 * arrive as JSON Patches (`delta=json-patch`), applied to a copy of the value the subscription holds; a patch whose
 * base is not that value re-opens the stream for full values.
 *
 * An EventSource cannot send headers, so a signed-in stream carries a short-lived ticket minted from the token
 * (`POST /stream-tickets`); calls send `Authorization: Bearer <token>`. When the gateway refuses the token (a 401,
 * or the stream ending with `Unauthenticated` because the token expired), the client asks
 * `token({ forceRefresh: true })` for a new one and carries on. With `token` returning null, calls and streams are
 * anonymous, or signed in by the gateway's auth cookie if it has one.
 */

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

const SUBSCRIPTION_ERROR = /^Subscription '([A-Za-z0-9_-]+)'/;

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

  /**
   * @param {string} url The gateway's base URL, e.g. "https://gateway.example.com".
   * @param {{ token?: (options: { forceRefresh: boolean }) => Promise<string | null> | string | null,
   *           debounceMs?: number }} [options]
   */
  constructor(url, options = {}) {
    this.#base = new URL(String(url), globalThis.location?.href).href.replace(/\/+$/, "");
    this.#token = options.token ?? (() => null);
    this.#debounceMs = options.debounceMs ?? 10;
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
    const key = `${fn}\n${JSON.stringify(args)}`;
    let query = this.#queries.get(key);
    const listener = { onValue, onError };
    if (!query) {
      query = { id: `q${++this.#nextId}`, fn, args, listeners: new Set(), hash: undefined, value: undefined };
      this.#queries.set(key, query);
      this.#scheduleOpen();
    } else if (query.refused || query.hash !== undefined) {
      queueMicrotask(() => {
        if (!query.listeners.has(listener)) return;
        if (query.refused) notify(listener.onError, query.refused);
        else notify(listener.onValue, query.value);
      });
    }
    query.listeners.add(listener);
    return () => {
      if (query.listeners.delete(listener) && query.listeners.size === 0) {
        this.#queries.delete(key);
        this.#scheduleOpen();
      }
    };
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
    const token = await this.#token({ forceRefresh });
    const headers = { "Content-Type": "application/json" };
    if (token) headers.Authorization = `Bearer ${token}`;
    let response;
    try {
      response = await fetch(`${this.#base}/${kind}/${encodeURI(fn)}`, {
        method: "POST",
        headers,
        body: JSON.stringify(args),
      });
    } catch {
      throw new ConvexGatewayError(0);
    }
    const body = await response.json().catch(() => null);
    if (response.ok) return body;
    // A refused token ran nothing: retrying once with a fresh one is safe, even for a mutation.
    if (response.status === 401 && token && !forceRefresh) return this.#call(kind, fn, args, true);
    throw new ConvexGatewayError(response.status, body?.error);
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
      url.searchParams.append(`args.${query.id}`, JSON.stringify(query.args));
    }
    if (byId.size === 0) return this.#replaceStream(null);
    try {
      const ticket = await this.#streamTicket(forceRefresh);
      if (ticket) url.searchParams.set("ticket", ticket);
    } catch (error) {
      if (generation === this.#generation) this.#retry(error, byId);
      return;
    }
    if (generation !== this.#generation) return;
    const source = new EventSource(url);
    this.#replaceStream(source);
    const current = () => generation === this.#generation;
    source.addEventListener("open", () => current() && (this.#failures = 0));
    const deliver = (query, hash, value) => {
      query.hash = hash;
      query.value = value;
      for (const listener of [...query.listeners]) notify(listener.onValue, value);
    };
    source.addEventListener("value", (event) => {
      const message = JSON.parse(event.data);
      const query = current() && byId.get(message.sub);
      if (query && query.hash !== message.v) deliver(query, message.v, message.value);
    });
    source.addEventListener("patch", (event) => {
      const message = JSON.parse(event.data);
      const query = current() && byId.get(message.sub);
      if (!query) return;
      let value;
      try {
        if (query.hash === undefined || query.hash !== message.base) throw new Error("not the patch's base");
        value = applyPatch(query.value, message.ops);
      } catch {
        // The value held is not the one the patch was made for: start again from full values.
        this.#scheduleOpen(0);
        return;
      }
      deliver(query, message.v, value);
    });
    // The gateway's `event: error` and the EventSource's own connection errors share this name.
    source.addEventListener("error", (event) => {
      if (!current()) return;
      if (typeof event.data !== "string") {
        // Lost connections are retried by the EventSource itself (with Last-Event-ID); a refused one is closed.
        if (source.readyState === EventSource.CLOSED) this.#diagnose(url, byId, generation);
        return;
      }
      const { sub, error } = JSON.parse(event.data);
      if (sub !== undefined) {
        const query = byId.get(sub);
        if (query) {
          query.hash = undefined;
          this.#fail(query, new ConvexGatewayError(undefined, error));
        }
        return;
      }
      // The whole stream failed and ends; an expired token is the usual reason.
      this.#generation += 1;
      this.#replaceStream(null);
      this.#retry(new ConvexGatewayError(undefined, error), byId);
    });
  }

  /** Mints a stream ticket from the current token, or reuses the last one while it has time left. */
  async #streamTicket(forceRefresh) {
    const token = await this.#token({ forceRefresh });
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

  /** Asks the gateway why it refused the stream (an EventSource cannot tell), then reacts. */
  async #diagnose(url, byId, generation) {
    let failure = new ConvexGatewayError(0);
    const controller = new AbortController();
    try {
      const response = await fetch(url, { headers: { Accept: "text/event-stream" }, signal: controller.signal });
      const body = response.ok ? null : await response.json().catch(() => null);
      failure = new ConvexGatewayError(response.status, body?.error);
    } catch {
      // No response: the gateway is unreachable.
    } finally {
      controller.abort();
    }
    if (generation !== this.#generation) return;
    const named = byId.get(SUBSCRIPTION_ERROR.exec(failure.message)?.[1]);
    const refused = failure.status >= 400 && failure.status < 500 && failure.status !== 401 && failure.status !== 429;
    if (refused && named) {
      // One subscription's unknown function or bad arguments: it alone gets the error, the others go on without it.
      named.refused = failure;
      this.#fail(named, failure);
      this.#scheduleOpen(0);
    } else if (refused) {
      for (const query of byId.values()) this.#fail(query, failure);
    } else {
      this.#retry(failure, byId);
    }
  }

  /**
   * Re-opens after a failure: at once with a fresh token after a first refusal of the token, else backing off.
   * Listeners hear of every failure except a lost connection and that first refusal.
   */
  #retry(failure, byId) {
    const unauthenticated = failure.status === 401 || failure.code === "Unauthenticated";
    const immediately = unauthenticated && this.#failures === 0;
    if (failure.status !== 0 && !immediately) for (const query of byId.values()) this.#fail(query, failure);
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
 * Applies RFC 6902 operations (the gateway sends add, remove, replace and move) without changing `document`: the
 * objects and arrays along each changed path are copied once, the rest is shared. Throws on a path that does not fit.
 */
function applyPatch(document, operations) {
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

function checkCall(fn, args) {
  if (typeof fn !== "string" || fn === "") throw new TypeError("the function name must be a non-empty string");
  if (args === null || typeof args !== "object" || Array.isArray(args)) {
    throw new TypeError(`the arguments of ${fn} must be an object`);
  }
}

/** Calls a listener; one that throws is reported without disturbing the others. */
function notify(callback, value) {
  try {
    callback(value);
  } catch (error) {
    (globalThis.reportError ?? console.error)(error);
  }
}
