/**
 * The pages of a live paginated query, each on its own: PageSubscriptions, the subscribed pages of one list by id, the
 * effects that add and stop them, and the rules that look at one page alone (the shape of its value, where it is
 * pinned, where it splits, the list's id in `paginationOpts`). PaginatedQueryState (paginated-state.js) orders them
 * into the list. Part of client.js (see gateway.js).
 */

/**
 * The subscribed pages of one paginated list, by id: the ones shown and the ones waiting to replace some. A page is
 * `{ id, paginationOpts, value, loaded, split: [first, second] | null, wasSplit, pin: the pinned page on its way |
 * null, pinRefused }`. Adding and stopping a page writes it into effects, `{ add: [{ id, paginationOpts }], remove:
 * [id], errors: [error] }` (`PageSubscriptions.effects()` makes an empty one), which the list's owner carries out.
 */
export class PageSubscriptions {
  #pages = new Map();
  #nextId = 0;

  /** No page to add or stop, no failure to report. */
  static effects() {
    return { add: [], remove: [], errors: [] };
  }

  /**
   * A `paginationOpts.id` no other list of this page has used, and most likely no other reader: the time in
   * milliseconds times 1024 plus a random part (below 2^53 until the year 2248), above every id this page gave before.
   * A list puts its id in every page whose end is open, as convex-js puts its list's id in its pages: such a page grows
   * with its query's journal (Convex keeps where it ended), so another reader's page of the same arguments, subscribed
   * earlier, may have grown far past `numItems`; with the id, this list's page is a subscription of its own and starts
   * at `numItems`. Pages pinned at both ends carry no id: they hold the same items whoever reads them, so every reader
   * shares one subscription of each.
   */
  static newListId() {
    lastListId = Math.max(Date.now() * 1024 + Math.floor(Math.random() * 1024), lastListId + 1);
    return lastListId;
  }

  /** Throws a TypeError, naming `name`, unless `numItems` is a whole number of at least 1. */
  static checkNumItems(numItems, name) {
    if (!Number.isInteger(numItems) || numItems < 1) {
      throw new TypeError(`${name} must be a whole number of at least 1`);
    }
  }

  /** Whether `value` is a page as a paginated query returns it: `{page, isDone, continueCursor, …}`. */
  static isResult(value) {
    return Array.isArray(value?.page) && typeof value.isDone === "boolean" && typeof value.continueCursor === "string";
  }

  /**
   * The `paginationOpts` of `page` (which has a value) pinned at its end: `endCursor: <its continueCursor>`, where
   * the deployment's journal ends it, and no list id (a page pinned at both ends is shared by every reader). The end of
   * a page without an `endCursor` is where its first run stopped (the deployment's journal of the subscription), which
   * only the subscription holds, as long as the gateway's upstream subscription lives: on a stream that moved to
   * another replica, the unpinned page would start again at `numItems`.
   */
  static pinned(page) {
    const { id, ...paginationOpts } = page.paginationOpts;
    return { ...paginationOpts, endCursor: page.value.continueCursor };
  }

  /**
   * The `paginationOpts` of the two halves of `page` (which has a value), when its value asks to be split: a
   * `splitCursor` and a `pageStatus` or more than twice `initialNumItems` items. `(cursor, endCursor: splitCursor)`
   * and `(splitCursor, endCursor: <its endCursor, else its continueCursor>)`; null when it is to stay whole.
   */
  static halves(page, initialNumItems) {
    const { page: items, splitCursor, pageStatus } = page.value;
    if (typeof splitCursor !== "string") return null;
    if (pageStatus == null && items.length <= 2 * initialNumItems) return null;
    const { cursor, endCursor = page.value.continueCursor } = page.paginationOpts;
    const numItems = initialNumItems;
    return [{ numItems, cursor, endCursor: splitCursor }, { numItems, cursor: splitCursor, endCursor }];
  }

  /** The subscribed page of `id`, or undefined (never subscribed, or stopped). */
  get(id) {
    return this.#pages.get(id);
  }

  /** Subscribes a new page of `paginationOpts` (into `effects`) and returns it. */
  add(paginationOpts, effects) {
    const id = `p${++this.#nextId}`;
    const page = {
      id, paginationOpts, value: undefined, loaded: false, split: null, wasSplit: false, pin: null, pinRefused: false,
    };
    this.#pages.set(id, page);
    effects.add.push({ id, paginationOpts });
    return page;
  }

  /** Stops `page` (into `effects`) if it is subscribed. */
  remove(page, effects) {
    if (this.#pages.delete(page.id)) effects.remove.push(page.id);
  }

  /** Stops the pinned page on its way for `page`, if any. */
  removePin(page, effects) {
    if (page.pin) this.remove(page.pin, effects);
    page.pin = null;
  }

  /** Stops the halves of a split pending on `page`, if any. */
  removeSplit(page, effects) {
    for (const half of page.split ?? []) this.remove(half, effects);
    page.split = null;
  }

  /** Stops every page (into `effects`). */
  clear(effects) {
    for (const id of this.#pages.keys()) effects.remove.push(id);
    this.#pages.clear();
  }
}

let lastListId = 0;
