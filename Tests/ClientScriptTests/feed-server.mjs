/**
 * A simulated server for the node tests of client.js' live paginated queries (paginated-state.test.mjs,
 * paginated-query.test.mjs): the `feed` table and `feed:list`, paged as the gateway's PageReader
 * (Sources/ConvexLocal/Pagination/PageReader.swift) pages it, journals included.
 */

/** The stream's error body for a cursor of another query, as the embedded deployment and Convex fail a page. */
export const invalidCursorBody = {
  code: "ConvexError",
  message: "InvalidCursor: Tried to run a query starting from a cursor, but it looks like this cursor is from a different query.",
  data: { isConvexSystemError: true, paginationError: "InvalidCursor" },
};

/**
 * The `feed` table and `feed:list`, as the gateway's PageReader pages it: newest first (descending
 * `_creationTime`, then `_id`), filtered by `channel`; cursors name the query's version, and a migration (a change of
 * the query) turns every cursor into an InvalidCursor.
 */
export class FeedServer {
  docs = [];
  version = 1;
  #next = 0;
  constructor(rand, { splitRecommendedAbove = Infinity } = {}) {
    this.rand = rand;
    this.splitRecommendedAbove = splitRecommendedAbove;
  }
  static before(a, b) {
    // Whether a comes before b in the feed's order.
    return a.time !== b.time ? a.time > b.time : a.id > b.id;
  }
  /** A post: mostly a new one (the start of the feed), sometimes anywhere; always the newest with `newest`. */
  insert(channel, newest = false) {
    const doc = {
      _id: `d${String(++this.#next).padStart(5, "0")}`,
      _creationTime: newest || this.rand() < 0.6 ? 1000 + this.#next : Math.floor(this.rand() * (1000 + this.#next)),
      channel,
      body: `post ${this.#next}`,
    };
    const key = { time: doc._creationTime, id: doc._id };
    const at = this.docs.findIndex((other) => FeedServer.before(key, FeedServer.key(other)));
    this.docs.splice(at < 0 ? this.docs.length : at, 0, doc);
  }
  remove() {
    if (this.docs.length > 0) this.docs.splice(Math.floor(this.rand() * this.docs.length), 1);
  }
  edit() {
    if (this.docs.length === 0) return;
    const at = Math.floor(this.rand() * this.docs.length);
    this.docs[at] = { ...this.docs[at], body: `${this.docs[at].body}!` };
  }
  static key(doc) {
    return { time: doc._creationTime, id: doc._id };
  }
  after(doc) {
    return `v${this.version}|${doc._creationTime}|${doc._id}`;
  }
  get end() {
    return `v${this.version}|end`;
  }
  /** A cursor's position: "end", or the key of the document it follows; `version` false reads any version. */
  decode(cursor, version = true) {
    const [v, time, id] = cursor.split("|");
    if (version && v !== `v${this.version}`) throw new Error("InvalidCursor");
    return time === "end" ? "end" : { time: Number(time), id };
  }
  /** Whether `doc` comes after the position `position`. */
  static follows(position, doc) {
    return position !== "end" && FeedServer.before(position, FeedServer.key(doc));
  }
  matching(channel) {
    return this.docs.filter((doc) => channel === undefined || doc.channel === channel);
  }
  /**
   * `feed:list`'s value for `args`, or its error (the stream's error body). With `journals` (a Map by arguments), as
   * the deployment's journal of a subscription: a page without an endCursor ends where its previous run ended. Here a
   * journal is never dropped, as if every subscription stayed warm: after a migration, a first page fails too.
   */
  run(args, journals = undefined) {
    const { channel, paginationOpts: { numItems, cursor } } = args;
    const key = JSON.stringify(args);
    const endCursor = args.paginationOpts.endCursor ?? journals?.get(key) ?? null;
    let start = null;
    let end = null;
    try {
      start = cursor === null ? null : this.decode(cursor);
      end = endCursor === null ? null : this.decode(endCursor);
    } catch {
      return { error: invalidCursorBody };
    }
    const items = [];
    let rowsRead = 0;
    let lastRead = null;
    let exhausted = true;
    if (start !== "end") {
      for (const doc of this.docs) {
        if (start !== null && !FeedServer.follows(start, doc)) continue;
        if (end !== null && FeedServer.follows(end, doc)) {
          exhausted = false;
          break;
        }
        if (end === null && items.length === numItems) {
          exhausted = false;
          break;
        }
        rowsRead += 1;
        lastRead = doc;
        if (channel === undefined || doc.channel === channel) items.push(doc);
      }
    }
    let continueCursor;
    let isDone;
    if (end !== null) {
      continueCursor = endCursor;
      isDone = end === "end";
    } else if (exhausted) {
      continueCursor = this.end;
      isDone = true;
    } else {
      continueCursor = lastRead ? this.after(lastRead) : (cursor ?? this.end);
      isDone = false;
    }
    const value = { page: items.map((doc) => ({ ...doc })), isDone, continueCursor };
    if (items.length > 1) value.splitCursor = this.after(items[Math.floor((items.length - 1) / 2)]);
    if (rowsRead > this.splitRecommendedAbove) value.pageStatus = "SplitRecommended";
    journals?.set(key, continueCursor);
    return { value };
  }
  /** A random change: mostly posts, some removals and edits. */
  mutate(channels) {
    const roll = this.rand();
    if (roll < 0.55) this.insert(channels[Math.floor(this.rand() * channels.length)]);
    else if (roll < 0.8) this.remove();
    else this.edit();
  }
}

/** The items of a list as `<_id>:<body>`, to compare lists by content. */
export const shownItems = (list) => list.map((doc) => `${doc._id}:${doc.body}`);
