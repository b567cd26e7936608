// One-shot calls of client.js (calls.js): a query or an action is one request, in the format the client reads, retried
// once only after a refused token, never after a lost answer. Run with `node --test Tests/ClientScriptTests/`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Authentication } from "../../Sources/ConvexGateway/Resources/client/authentication.js";
import { callOnce, checkCall, valueFormat } from "../../Sources/ConvexGateway/Resources/client/calls.js";
import { SeenTimestamp } from "../../Sources/ConvexGateway/Resources/client/values.js";

const client = (convex, token) => ({
  base: "http://gateway.test",
  auth: new Authentication("http://gateway.test", token),
  seen: new SeenTimestamp(),
  values: valueFormat(convex),
});

test("a call asks for its format, sends the timestamp seen, and raises it with the answer's", async () => {
  const requests = [];
  globalThis.fetch = async (url, init) => {
    requests.push({ url, init });
    return { ok: true, status: 200, headers: new Headers({ "Convex-Timestamp": "12" }), json: async () => ({ $integer: "BQAAAAAAAAA=" }) };
  };
  const encoded = client(true);
  encoded.seen.see("10");
  assert.equal(await callOnce(encoded, "action", "mlb:refresh", { n: 1n }), 5n);
  assert.equal(requests[0].url, "http://gateway.test/action/mlb:refresh?format=encoded");
  assert.deepEqual(JSON.parse(requests[0].init.body), { n: { $integer: "AQAAAAAAAAA=" } });
  assert.equal(requests[0].init.headers["Convex-Min-Timestamp"], "10");
  assert.equal(encoded.seen.value, "12");
  const plain = client(false);
  assert.deepEqual(await callOnce(plain, "query", "mlb:teams", {}), { $integer: "BQAAAAAAAAA=" }, "plain: as sent");
  assert.equal(requests[1].url, "http://gateway.test/query/mlb:teams?format=plain");
});

test("a refused token is refreshed once; a lost answer is not sent again", async () => {
  let answers = [401, 401];
  let sent = 0;
  globalThis.fetch = async () => {
    sent += 1;
    const status = answers.shift();
    if (status === undefined) throw new TypeError("Failed to fetch");
    return { ok: false, status, headers: new Headers(), json: async () => ({ error: { code: "Unauthenticated", message: "no" } }) };
  };
  const asked = [];
  const signedIn = client(false, ({ forceRefresh }) => (asked.push(forceRefresh), "jwt"));
  await assert.rejects(callOnce(signedIn, "action", "a:b", {}), { status: 401, code: "Unauthenticated" });
  assert.deepEqual([sent, asked], [2, [false, true]]);
  await assert.rejects(callOnce(signedIn, "action", "a:b", {}), { status: 0, code: "NetworkError" });
  assert.equal(sent, 3, "an action whose answer was lost is not sent twice");
  answers = [401];
  await assert.rejects(callOnce(client(false), "query", "a:b", {}), { status: 401 }, "no token: nothing to refresh");
  assert.equal(sent, 4);
});

test("checkCall refuses a missing function name and arguments that are not an object", () => {
  assert.throws(() => checkCall("", {}), TypeError);
  assert.throws(() => checkCall(7, {}), TypeError);
  for (const args of [null, [], "x", 1]) assert.throws(() => checkCall("a:b", args), TypeError);
  checkCall("a:b", {});
});
