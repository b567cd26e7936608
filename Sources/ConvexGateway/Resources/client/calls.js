/**
 * One-shot calls: a query or an action is one `POST /<kind>/<fn>?format=…`, answered or rejected once (an action is
 * never sent twice, as with convex-js). What every request of client.js shares lives here too: the `format` it asks
 * for and the checks of a call's function and arguments. Part of client.js (see gateway.js).
 */

import { callHeaders } from "./authentication.js";
import { ConvexGatewayError } from "./errors.js";
import { decodeConvexValue, encodeConvexValue } from "./values.js";

/**
 * How a client sends and reads values: `format` is the gateway's output format it asks for on every request (`plain`,
 * or `encoded` with `values: "convex"`; asked for always, since a gateway's default may be `clean`, which quotes
 * int64), `encode` turns arguments into what is sent and `decode` an answer's value into what the page gets.
 */
export function valueFormat(convex) {
  return convex
    ? { format: "encoded", encode: encodeConvexValue, decode: decodeConvexValue }
    : { format: "plain", encode: (value) => value, decode: (value) => value };
}

/** Throws a TypeError unless `fn` is a function name and `args` an object. */
export function checkCall(fn, args) {
  if (typeof fn !== "string" || fn === "") throw new TypeError("the function name must be a non-empty string");
  if (args === null || typeof args !== "object" || Array.isArray(args)) {
    throw new TypeError(`the arguments of ${fn} must be an object`);
  }
}

/**
 * POSTs `payload` as JSON to `path` in the client's value format, with its token and the highest timestamp it has seen
 * (raised by the answer's `Convex-Timestamp`) and `headers` besides. `client` is `{ base, auth, seen, values }`: the
 * base URL, the Authentication, the SeenTimestamp and the valueFormat. Resolves to `{ token, response, body }` (`body`
 * the answer's JSON, or null), or to null when the gateway could not be reached.
 */
export async function postJSON(client, path, payload, forceRefresh, headers = {}) {
  const token = await client.auth.token(forceRefresh);
  let response;
  try {
    response = await fetch(`${client.base}${path}?format=${client.values.format}`, {
      method: "POST",
      headers: { ...callHeaders(token, client.seen.value), ...headers },
      body: JSON.stringify(payload),
    });
  } catch {
    return null;
  }
  client.seen.see(response.headers?.get("Convex-Timestamp"));
  const body = await response.json().catch(() => null);
  return { token, response, body };
}

/**
 * Runs query or action `fn` once (through postJSON) and resolves to its value, or rejects with a ConvexGatewayError
 * (status 0: the gateway could not be reached). A refused token ran nothing: the call is sent once more with a fresh
 * one.
 */
export async function callOnce(client, kind, fn, args, forceRefresh = false) {
  checkCall(fn, args);
  const answer = await postJSON(client, `/${kind}/${encodeURI(fn)}`, client.values.encode(args), forceRefresh);
  if (answer === null) throw new ConvexGatewayError(0);
  const { token, response, body } = answer;
  if (response.ok) return client.values.decode(body);
  if (response.status === 401 && token && !forceRefresh) return callOnce(client, kind, fn, args, true);
  throw new ConvexGatewayError(response.status, body?.error);
}
