/**
 * EventStreamReader: the transport of client.js, one Server-Sent Events stream read with `fetch`. It behaves as an
 * EventSource does (named events, `Last-Event-ID` on reconnect, `retry:`), with one difference a page needs: when the
 * gateway refuses the stream, the reader hears the status and the JSON error body of the refusal (an EventSource only
 * says that it closed), so no second request is needed to learn why.
 *
 * Events, each given to the listeners of its type as `{ type, data, lastEventId }`:
 * - the stream's own events, by their `event:` name (`message` when unnamed);
 * - `open`: a connection was answered 200 (again after each reconnect);
 * - `refused`: a connection was answered with another status, as `{ type, status, error }` where `error` is the
 *   body's `error` object (undefined if there is none). The reader stops;
 * - `lost`: the connection failed or ended; the reader connects again with `Last-Event-ID`, after `retry` ms, or,
 *   given a `backoff` (backoff.js), after `retry` ms the first time and the backoff's growing delays after that, until
 *   its owner resets it (a page's Connection does once a stream has proved itself).
 */
export class EventStreamReader {
  #url;
  #fetch;
  #headers;
  #listeners = new Map();
  #controller = null;
  #closed = false;
  #timer = undefined;
  #backoff;
  #timers;
  /** The `id:` of the last event, sent back as `Last-Event-ID` when connecting again. */
  lastEventId = "";
  /** Milliseconds to wait before connecting again; an event's `retry:` field changes it. */
  retry;

  /**
   * @param {string | URL} url
   * @param {{ fetch?: typeof fetch, retry?: number, headers?: Record<string, string>, backoff?: object,
   *   timers?: { setTimeout: Function, clearTimeout: Function } }} [options] `fetch` and `timers` for tests; `retry` the
   *   first reconnection delay; `headers` sent on every connection besides `Accept` and `Last-Event-ID`; `backoff`
   *   the delays of repeated failures (a Backoff).
   */
  constructor(url, options = {}) {
    this.#url = String(url);
    this.#headers = options.headers ?? {};
    this.#fetch = options.fetch ?? ((...args) => globalThis.fetch(...args));
    this.retry = options.retry ?? 1000;
    this.#backoff = options.backoff;
    this.#timers = options.timers ?? globalThis;
    queueMicrotask(() => this.#connect());
  }

  get url() {
    return this.#url;
  }

  addEventListener(type, listener) {
    this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener]);
  }

  /** Stops reading; no listener is called after this. */
  close() {
    this.#closed = true;
    this.#timers.clearTimeout(this.#timer);
    this.#controller?.abort();
  }

  #emit(type, fields) {
    if (this.#closed) return;
    for (const listener of this.#listeners.get(type) ?? []) listener({ type, ...fields });
  }

  async #connect() {
    if (this.#closed) return;
    const controller = (this.#controller = new AbortController());
    const headers = { ...this.#headers, Accept: "text/event-stream" };
    if (this.lastEventId !== "") headers["Last-Event-ID"] = this.lastEventId;
    let response;
    try {
      response = await this.#fetch(this.#url, { headers, cache: "no-store", signal: controller.signal });
    } catch {
      return this.#lost();
    }
    if (!response.ok || !response.body) {
      const body = await response.json().catch(() => null);
      this.#emit("refused", { status: response.status, error: body?.error });
      this.close();
      return;
    }
    this.#emit("open", {});
    const parser = new EventStreamParser((event) => {
      if (event.retry !== undefined) this.retry = event.retry;
      if (event.id !== undefined) this.lastEventId = event.id;
      if (event.dispatch) this.#emit(event.type, { data: event.data, lastEventId: this.lastEventId });
    });
    try {
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done || this.#closed) break;
        parser.push(decoder.decode(value, { stream: true }));
      }
    } catch {
      // The connection broke: connect again below.
    }
    this.#lost();
  }

  #lost() {
    if (this.#closed) return;
    this.#emit("lost", {});
    if (this.#closed) return;
    const delay = this.#backoff ? this.#backoff.nextAfterQuick(this.retry) : this.retry;
    this.#timers.clearTimeout(this.#timer);
    this.#timer = this.#timers.setTimeout(() => this.#connect(), delay);
  }
}

/**
 * The event-stream format as the WHATWG HTML standard reads it: lines end at CRLF, LF or CR; `data:` lines join with
 * LF; `event:`, `id:` (without NUL) and `retry:` (digits) fields; a line starting with `:` is a comment; a blank line
 * dispatches the event (not when it has no data). `onEvent` gets `{ id }` or `{ retry }` as they are read and
 * `{ dispatch: true, type, data }` for each event.
 */
export class EventStreamParser {
  #onEvent;
  #buffer = "";
  #afterCR = false;
  #type = "";
  #data = [];

  constructor(onEvent) {
    this.#onEvent = onEvent;
  }

  /** Reads the next piece of text (any split, even inside a CRLF). */
  push(text) {
    if (this.#afterCR && text.startsWith("\n")) text = text.slice(1);
    this.#afterCR = false;
    this.#buffer += text;
    const lines = this.#buffer.split(/\r\n|\r|\n/);
    // The last piece has no line end yet; a CR that ends the text may be the first half of a CRLF.
    this.#buffer = lines.pop();
    this.#afterCR = this.#buffer === "" && text.endsWith("\r");
    for (const line of lines) this.#line(line);
  }

  #line(line) {
    if (line === "") {
      if (this.#data.length > 0) this.#onEvent({ dispatch: true, type: this.#type || "message", data: this.#data.join("\n") });
      this.#type = "";
      this.#data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") this.#data.push(value);
    else if (name === "event") this.#type = value;
    else if (name === "id" && !value.includes("\0")) this.#onEvent({ id: value });
    else if (name === "retry" && /^[0-9]+$/.test(value)) this.#onEvent({ retry: Number(value) });
  }
}
