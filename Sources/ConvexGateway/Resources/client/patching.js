/**
 * How a stream's transitions change the values a page holds: applyTransition (one `event: transition`, all or
 * nothing) and applyPatch (RFC 6902 JSON Patch on copies). No network, no callbacks. Part of client.js (see
 * gateway.js).
 */

/**
 * Applies one `event: transition` of the stream to the live queries it names, all or nothing, calling no one.
 * `queries` maps a subscription id to its query (`{ hash, value }`, updated here); `message` is the event's data;
 * `decode` turns a value as sent into the value callbacks get. Returns the changes to announce, in order:
 * `{ query, value }` for a new value, `{ query, error }` for a failure (a value equal to the one held is left out). Returns
 * null, changing nothing, when a patch was made for a value other than the one held.
 */
export function applyTransition(queries, message, decode = (value) => value) {
  const next = [];
  for (const change of message.changes) {
    const query = queries.get(change.sub);
    if (!query) continue;
    if (change.error !== undefined) {
      next.push({ query, hash: undefined, error: change.error });
    } else if (change.ops !== undefined) {
      if (query.hash === undefined || query.hash !== change.base) return null;
      let value;
      try {
        value = applyPatch(
          query.value,
          change.ops.map((op) => (op.value === undefined ? op : { ...op, value: decode(op.value) })),
        );
      } catch {
        return null;
      }
      next.push({ query, hash: change.v, value });
    } else if (query.hash !== change.v || change.v === undefined) {
      next.push({ query, hash: change.v, value: decode(change.value) });
    }
  }
  const announced = [];
  for (const { query, hash, value, error } of next) {
    query.hash = hash;
    if (error !== undefined) {
      announced.push({ query, error });
    } else {
      query.value = value;
      announced.push({ query, value });
    }
  }
  return announced;
}

/**
 * Applies RFC 6902 operations (the gateway sends add, remove, replace and move) without changing `document`: the
 * objects and arrays along each changed path are copied once, the rest is shared. Throws on a path that does not fit.
 */
export function applyPatch(document, operations) {
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
