/**
 * Convex values as convex-js gives them (BigInt, ArrayBuffer) to and from the gateway's `encoded` format, the key of a
 * query's arguments, and Convex timestamps. Part of client.js (see gateway.js).
 */

/**
 * A value in Convex's JSON encoding (the gateway's `format=encoded`) as convex-js gives it: `{"$integer"}` as a
 * BigInt, `{"$bytes"}` as an ArrayBuffer, `{"$float"}` as the number (NaN, ±Infinity, -0), the rest as it is.
 */
export function decodeConvexValue(value) {
  if (Array.isArray(value)) return value.map(decodeConvexValue);
  if (value === null || typeof value !== "object") return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0].startsWith("$")) {
    const text = value[keys[0]];
    if (keys[0] === "$integer") return new DataView(base64Bytes(text, 8).buffer).getBigInt64(0, true);
    if (keys[0] === "$float") return new DataView(base64Bytes(text, 8).buffer).getFloat64(0, true);
    if (keys[0] === "$bytes") return base64Bytes(text).buffer;
  }
  const decoded = {};
  for (const key of keys) decoded[key] = decodeConvexValue(value[key]);
  return decoded;
}

/**
 * A value as convex-js takes it (BigInt, ArrayBuffer or a typed array's view, numbers) in Convex's JSON encoding:
 * BigInt as `{"$integer"}` (it must fit in 64 bits), bytes as `{"$bytes"}`, NaN, ±Infinity and -0 as `{"$float"}`.
 */
export function encodeConvexValue(value) {
  if (typeof value === "bigint") {
    if (value < -(2n ** 63n) || value >= 2n ** 63n) throw new TypeError(`${value} does not fit in an int64`);
    const view = new DataView(new ArrayBuffer(8));
    view.setBigInt64(0, value, true);
    return { $integer: bytesBase64(new Uint8Array(view.buffer)) };
  }
  if (typeof value === "number" && (!Number.isFinite(value) || Object.is(value, -0))) {
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, value, true);
    return { $float: bytesBase64(new Uint8Array(view.buffer)) };
  }
  if (value instanceof ArrayBuffer) return { $bytes: bytesBase64(new Uint8Array(value)) };
  if (ArrayBuffer.isView(value)) {
    return { $bytes: bytesBase64(new Uint8Array(value.buffer, value.byteOffset, value.byteLength)) };
  }
  if (Array.isArray(value)) return value.map(encodeConvexValue);
  if (value === null || typeof value !== "object") return value;
  const encoded = {};
  for (const [key, field] of Object.entries(value)) if (field !== undefined) encoded[key] = encodeConvexValue(field);
  return encoded;
}

function base64Bytes(text, length) {
  const binary = atob(text);
  if (length !== undefined && binary.length !== length) throw new TypeError(`not ${length} bytes of base64: ${text}`);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function bytesBase64(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** Arguments as a key: equal arguments (BigInt and bytes included) make equal keys. */
export function stableKey(args) {
  return JSON.stringify(encodeConvexValue(args));
}

/**
 * The later of two Convex timestamps, decimal strings compared as BigInt: `seen` when `known` is undefined or older,
 * else `known`. A `seen` that is not a Convex timestamp (a missing header; not decimal digits; above 2^63 - 1, which
 * the gateway would refuse in `Convex-Min-Timestamp`) is ignored.
 */
export function laterTimestamp(known, seen) {
  if (typeof seen !== "string" || !/^[0-9]{1,20}$/.test(seen)) return known;
  const value = BigInt(seen);
  if (value >= 2n ** 63n) return known;
  if (known !== undefined && BigInt(known) >= value) return known;
  return value.toString(); // canonical: no leading zeros
}

/** A Convex timestamp (decimal string) as a BigInt; undefined when it is not one. */
export function parseTimestamp(text) {
  const known = laterTimestamp(undefined, text);
  return known === undefined ? undefined : BigInt(known);
}

/**
 * The highest Convex timestamp a client has seen (call answers, its stream's transitions), as a decimal string
 * (undefined before the first): sent as `Convex-Min-Timestamp`, so that what it reads holds what it wrote and saw.
 */
export class SeenTimestamp {
  value = undefined;

  see(text) {
    this.value = laterTimestamp(this.value, text);
  }
}
