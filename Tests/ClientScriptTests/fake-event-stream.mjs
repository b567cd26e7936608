/**
 * A stand-in for client.js's EventStreamReader, given to `new ConvexGateway(url, { eventStreamReader:
 * FakeEventStream })`: records each instance, lets a test emit the gateway's events and refusals to it at once.
 */
export class FakeEventStream {
  static instances = [];
  closed = false;
  listeners = new Map();
  constructor(url, options = {}) {
    this.url = new URL(url);
    /** The headers the gateway asked for besides Accept (Convex-Min-Timestamp). */
    this.headers = options.headers ?? {};
    FakeEventStream.instances.push(this);
  }
  addEventListener(type, listener) {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }
  emit(type, data) {
    for (const listener of this.listeners.get(type) ?? []) listener({ type, data: JSON.stringify(data) });
  }
  /** The gateway answered `status` with `{ error }` instead of a stream: the reader stops. */
  refuse(status, error) {
    for (const listener of this.listeners.get("refused") ?? []) listener({ type: "refused", status, error });
    this.closed = true;
  }
  close() {
    this.closed = true;
  }
  /** The subscriptions in the URL: [id, fn, args]. */
  get subscriptions() {
    return [...this.url.searchParams.keys()]
      .filter((key) => key.startsWith("sub."))
      .map((key) => key.slice(4))
      .map((id) => [id, this.url.searchParams.get(`sub.${id}`), JSON.parse(this.url.searchParams.get(`args.${id}`))]);
  }
}
