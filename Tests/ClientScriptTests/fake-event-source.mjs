/** A stand-in for the browser's EventSource: records each instance, lets a test emit events to it. */
export class FakeEventSource {
  static instances = [];
  static CLOSED = 2;
  readyState = 1;
  listeners = new Map();
  constructor(url) {
    this.url = new URL(url);
    FakeEventSource.instances.push(this);
  }
  addEventListener(type, listener) {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }
  emit(type, data) {
    for (const listener of this.listeners.get(type) ?? []) listener({ type, data: JSON.stringify(data) });
  }
  close() {
    this.readyState = FakeEventSource.CLOSED;
  }
  /** The subscriptions in the URL: [id, fn, args]. */
  get subscriptions() {
    return [...this.url.searchParams.keys()]
      .filter((key) => key.startsWith("sub."))
      .map((key) => key.slice(4))
      .map((id) => [id, this.url.searchParams.get(`sub.${id}`), JSON.parse(this.url.searchParams.get(`args.${id}`))]);
  }
}
