// Unit tests of client.js's pure parts and of how it applies a transition, under node's own test runner:
//   node --test Tests/ClientScriptTests/
// No packages: the stream reader (FakeEventStream) and fetch are stand-ins. The JSON Patch replay reads the patch sequences the
// Swift property test (JSONPatchPropertyTests) writes to .build/patch-sequences/, so run that first (scripts/test does).
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { Authentication, callHeaders } from "../../Sources/ConvexGateway/Resources/client/authentication.js";
import { ConvexGateway } from "../../Sources/ConvexGateway/Resources/client/gateway.js";
import { applyPatch, applyTransition } from "../../Sources/ConvexGateway/Resources/client/patching.js";
import { decodeConvexValue, encodeConvexValue, laterTimestamp } from "../../Sources/ConvexGateway/Resources/client/values.js";
import { FakeEventStream } from "./fake-event-stream.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

// MARK: applyPatch

test("applyPatch applies add, remove, replace and move to copies, sharing what did not change", () => {
  const doc = { list: [{ _id: "a" }, { _id: "b" }, { _id: "c" }], other: { deep: [1, 2] }, n: 1 };
  const frozen = structuredClone(doc);
  const next = applyPatch(doc, [
    { op: "add", path: "/list/1", value: { _id: "new" } },
    { op: "remove", path: "/list/3" },
    { op: "replace", path: "/n", value: 2 },
    { op: "move", from: "/list/0", path: "/list/-" },
    { op: "add", path: "/a~1b", value: "slash" },
  ]);
  assert.deepEqual(next, { list: [{ _id: "new" }, { _id: "b" }, { _id: "a" }], other: { deep: [1, 2] }, n: 2, "a/b": "slash" });
  assert.deepEqual(doc, frozen, "the original is untouched");
  assert.equal(next.other, doc.other, "an unchanged branch is shared");
  assert.equal(next.list[1], doc.list[1], "an unchanged element is shared");
});

test("applyPatch replaces the whole document and refuses paths that do not fit", () => {
  assert.deepEqual(applyPatch({ a: 1 }, [{ op: "replace", path: "", value: [1] }]), [1]);
  assert.throws(() => applyPatch({ a: 1 }, [{ op: "remove", path: "/b" }]));
  assert.throws(() => applyPatch([1], [{ op: "replace", path: "/1", value: 2 }]));
  assert.throws(() => applyPatch([1], [{ op: "add", path: "/01", value: 2 }]));
  assert.throws(() => applyPatch({ a: 1 }, [{ op: "replace", path: "/a/b", value: 2 }]));
  assert.throws(() => applyPatch({ a: 1 }, [{ op: "copy", from: "/a", path: "/b" }]));
  assert.throws(() => applyPatch({ a: 1 }, [{ op: "remove", path: "" }]));
});

test("applyPatch gives every next value of the server's property-test patch sequences, in every output mode", () => {
  const directory = join(root, ".build", "patch-sequences");
  let files = [];
  try {
    files = readdirSync(directory).filter((name) => name.endsWith(".json"));
  } catch {
    // reported below
  }
  assert.ok(files.length >= 3, `no patch sequences in ${directory}: run the Swift JSONPatchPropertyTests first`);
  let patches = 0;
  for (const file of files) {
    const convex = file.startsWith("encoded");
    const decode = convex ? decodeConvexValue : (value) => value;
    const sequences = JSON.parse(readFileSync(join(directory, file), "utf8"));
    for (const [s, sequence] of sequences.entries()) {
      let value = decode(sequence.start);
      for (const [t, step] of sequence.steps.entries()) {
        // As the client applies them: to the value it holds (decoded), with the operations' values decoded.
        const ops = step.ops.map((op) => (op.value === undefined ? op : { ...op, value: decode(op.value) }));
        value = applyPatch(value, ops);
        assert.deepStrictEqual(value, decode(step.full), `${file}: sequence ${s} step ${t}`);
        patches += 1;
      }
    }
  }
  assert.ok(patches > 1000, `only ${patches} patches`);
});

// MARK: Values

test("decodeConvexValue gives int64 as BigInt, bytes as ArrayBuffer and special floats as numbers, exactly", () => {
  const decoded = decodeConvexValue({
    max: { $integer: "/////////38=" },
    min: { $integer: "AAAAAAAAAIA=" },
    wins: { $integer: "UAAAAAAAAAA=" },
    bytes: { $bytes: "AAH/" },
    nan: { $float: "AAAAAAAA+H8=" },
    negativeZero: { $float: "AAAAAAAAAIA=" },
    list: [1.5, { $integer: "AQAAAAAAAAA=" }, null, "text"],
  });
  assert.equal(decoded.max, 9223372036854775807n);
  assert.equal(decoded.min, -9223372036854775808n);
  assert.equal(decoded.wins, 80n);
  assert.ok(decoded.bytes instanceof ArrayBuffer);
  assert.deepEqual([...new Uint8Array(decoded.bytes)], [0, 1, 255]);
  assert.ok(Number.isNaN(decoded.nan));
  assert.ok(Object.is(decoded.negativeZero, -0));
  assert.deepEqual(decoded.list, [1.5, 1n, null, "text"]);
  assert.throws(() => decodeConvexValue({ $integer: "AAAA" }), "an int64 is 8 bytes");
});

test("encodeConvexValue is decodeConvexValue's inverse and refuses a BigInt beyond 64 bits", () => {
  const value = {
    big: 2n ** 63n - 1n,
    small: -(2n ** 63n),
    bytes: new Uint8Array([9, 8, 7]).buffer,
    floats: [Infinity, -Infinity, -0, 0.25],
    nested: { list: [1n, "a", null, true] },
  };
  const encoded = encodeConvexValue(value);
  assert.deepEqual(encoded.big, { $integer: "/////////38=" });
  assert.deepEqual(encoded.bytes, { $bytes: "CQgH" });
  assert.deepStrictEqual(decodeConvexValue(JSON.parse(JSON.stringify(encoded))), value);
  assert.deepEqual(encodeConvexValue({ view: new Uint8Array([1, 2, 3]).subarray(1) }), { view: { $bytes: "AgM=" } });
  assert.throws(() => encodeConvexValue(2n ** 63n), TypeError);
});

// MARK: Transitions

const query = (hash, value) => ({ hash, value, listeners: new Set() });

test("applyTransition applies every change of a transition and reports them in order", () => {
  const queries = new Map([["a", query("1", { n: 1 })], ["b", query("2", [1, 2])], ["c", query("3", "same")]]);
  const changes = applyTransition(queries, {
    ts: "100",
    changes: [
      { sub: "a", value: { n: 2 }, v: "4" },
      { sub: "b", base: "2", v: "5", ops: [{ op: "add", path: "/-", value: 3 }] },
      { sub: "c", value: "same", v: "3" },
    ],
  });
  assert.deepEqual(changes.map((change) => change.value), [{ n: 2 }, [1, 2, 3]], "an unchanged value is left out");
  assert.equal(queries.get("a").hash, "4");
  assert.deepEqual(queries.get("b").value, [1, 2, 3]);
  assert.equal(queries.get("b").hash, "5");
});

test("applyTransition changes nothing when one patch misses its base", () => {
  const queries = new Map([["a", query("1", 1)], ["b", query("2", [1])]]);
  const result = applyTransition(queries, {
    ts: "7",
    changes: [
      { sub: "a", value: 2, v: "9" },
      { sub: "b", base: "other", v: "8", ops: [{ op: "add", path: "/-", value: 2 }] },
    ],
  });
  assert.equal(result, null);
  assert.deepEqual([queries.get("a").value, queries.get("a").hash], [1, "1"], "the whole transition or none of it");
});

test("applyTransition reports a subscription's error in the middle of a transition and applies the rest", () => {
  const queries = new Map([["a", query("1", 1)], ["b", query("2", 2)], ["c", query("3", 3)]]);
  const changes = applyTransition(queries, {
    ts: "7",
    changes: [
      { sub: "a", value: 10, v: "10" },
      { sub: "b", error: { code: "FunctionFailed", message: "boom" } },
      { sub: "c", value: 30, v: "30" },
    ],
  });
  assert.deepEqual(changes.map((change) => change.error?.code ?? change.value), [10, "FunctionFailed", 30]);
  assert.equal(queries.get("b").hash, undefined, "after an error the next value is delivered whatever its hash");
  assert.equal(queries.get("c").value, 30);
});

test("applyTransition decodes values and patch operations with the given decoder", () => {
  const queries = new Map([["a", query("1", { wins: 80n })]]);
  const changes = applyTransition(
    queries,
    { ts: "1", changes: [{ sub: "a", base: "1", v: "2", ops: [{ op: "replace", path: "/wins", value: { $integer: "UQAAAAAAAAA=" } }] }] },
    decodeConvexValue,
  );
  assert.deepEqual(changes[0].value, { wins: 81n });
});

// MARK: Timestamps (read your writes)

test("laterTimestamp keeps the highest Convex timestamp, compared as integers, not as text or float64", () => {
  assert.equal(laterTimestamp(undefined, "5"), "5");
  assert.equal(laterTimestamp("5", "10"), "10", "not compared as text");
  assert.equal(laterTimestamp("10", "9"), "10");
  assert.equal(laterTimestamp("10", "10"), "10");
  // Above 2^53, float64 cannot tell these apart.
  assert.equal(laterTimestamp("9007199254740993", "9007199254740992"), "9007199254740993");
  assert.equal(laterTimestamp("9223372036854775806", "9223372036854775807"), "9223372036854775807");
  assert.equal(laterTimestamp(undefined, "0007"), "7", "kept in canonical form");
});

test("laterTimestamp ignores what is not a Convex timestamp: decimal digits, at most 2^63 - 1", () => {
  const beyond = ["9223372036854775808", "18446744073709551615", "123456789012345678901"];
  for (const seen of [undefined, null, "", " 5", "5 ", "-1", "1.5", "1e3", "0x10", "abc", ...beyond, 7, 7n]) {
    assert.equal(laterTimestamp("3", seen), "3", `${typeof seen} ${String(seen)}`);
    assert.equal(laterTimestamp(undefined, seen), undefined, `${typeof seen} ${String(seen)}`);
  }
});

test("callHeaders sends JSON, the token and Convex-Min-Timestamp only when there are some", () => {
  assert.deepEqual(callHeaders(null, undefined), { "Content-Type": "application/json" });
  assert.deepEqual(callHeaders("jwt", "42"), {
    "Content-Type": "application/json",
    Authorization: "Bearer jwt",
    "Convex-Min-Timestamp": "42",
  });
  assert.deepEqual(callHeaders(undefined, "0"), { "Content-Type": "application/json", "Convex-Min-Timestamp": "0" });
});

// MARK: The client with stand-ins for its stream reader and fetch

const until = async (condition) => {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(condition(), "timed out");
};

test("the callbacks of one transition run after all its values are held, in one synchronous pass", async () => {
  FakeEventStream.instances = [];
  const gateway = new ConvexGateway("http://gateway.test", { debounceMs: 0, eventStreamReader: FakeEventStream });
  const seen = [];
  const division = { division: "AL Central" };
  gateway.subscribe("mlb:first_place_team", division, (leader) => {
    // Reading the other live query inside the callback: the same transition's value.
    const row = gateway.current("mlb:teams", division).find((team) => team.name === leader.name);
    seen.push(["leader", leader.wins, row.wins]);
  });
  gateway.subscribe("mlb:teams", division, (teams) => {
    const leader = gateway.current("mlb:first_place_team", division);
    seen.push(["teams", leader.wins, teams.find((team) => team.name === leader.name).wins]);
  });
  await until(() => FakeEventStream.instances.length === 1);
  const source = FakeEventStream.instances[0];
  const ids = [...source.url.searchParams.keys()].filter((key) => key.startsWith("sub.")).map((key) => key.slice(4));
  assert.deepEqual(ids, ["q1", "q2"]);
  assert.equal(source.url.searchParams.get("delta"), "json-patch");
  source.emit("transition", {
    ts: "1",
    changes: [
      { sub: "q1", value: { name: "Guardians", wins: 80 }, v: "a" },
      { sub: "q2", value: [{ name: "Guardians", wins: 80 }, { name: "Twins", wins: 70 }], v: "b" },
    ],
  });
  source.emit("transition", {
    ts: "2",
    changes: [
      { sub: "q1", value: { name: "Guardians", wins: 81 }, v: "c" },
      { sub: "q2", base: "b", v: "d", ops: [{ op: "replace", path: "/0/wins", value: 81 }] },
    ],
  });
  assert.deepEqual(seen, [
    ["leader", 80, 80],
    ["teams", 80, 80],
    ["leader", 81, 81],
    ["teams", 81, 81],
  ]);
  gateway.close();
});

test("the token callback gets forceRefresh and forceRefreshToken, and a refused call is retried once", async () => {
  const asked = [];
  const requests = [];
  globalThis.fetch = async (url, init) => {
    requests.push({ url, init });
    const status = requests.length === 1 ? 401 : 200;
    const done = { results: [{ requestId: 0, value: "done", ts: "1" }] };
    return { ok: status === 200, status, json: async () => (status === 200 ? done : { error: { code: "Unauthenticated" } }) };
  };
  const gateway = new ConvexGateway("http://gateway.test", {
    token: (options) => {
      asked.push(options);
      return options.forceRefreshToken ? "fresh" : "stale";
    },
  });
  assert.equal(await gateway.mutation("messages:send", { body: "hi" }), "done");
  assert.deepEqual(asked, [
    { forceRefresh: false, forceRefreshToken: false },
    { forceRefresh: true, forceRefreshToken: true },
  ]);
  assert.equal(requests[1].init.headers.Authorization, "Bearer fresh");
  assert.equal(requests[1].init.body, requests[0].init.body, "the same mutation, the same request id");
  assert.equal(requests[1].init.headers["Convex-Session-Id"], requests[0].init.headers["Convex-Session-Id"]);
});

test('values: "convex" sends and reads the encoded format, int64 as BigInt and bytes as ArrayBuffer', async () => {
  const requests = [];
  globalThis.fetch = async (url, init) => {
    requests.push({ url, init });
    return { ok: true, status: 200, json: async () => ({ wins: { $integer: "UQAAAAAAAAA=" }, logo: { $bytes: "AAE=" } }) };
  };
  FakeEventStream.instances = [];
  const gateway = new ConvexGateway("http://gateway.test", { values: "convex", debounceMs: 0, eventStreamReader: FakeEventStream });
  const team = await gateway.query("mlb:team", { id: 2n ** 62n });
  assert.equal(requests[0].url, "http://gateway.test/query/mlb:team?format=encoded");
  assert.deepEqual(JSON.parse(requests[0].init.body), { id: { $integer: "AAAAAAAAAEA=" } });
  assert.equal(team.wins, 81n);
  assert.deepEqual([...new Uint8Array(team.logo)], [0, 1]);

  const values = [];
  gateway.subscribe("mlb:team", { id: 5n }, (value) => values.push(value));
  await until(() => FakeEventStream.instances.length === 1);
  const source = FakeEventStream.instances[0];
  assert.equal(source.url.searchParams.get("format"), "encoded");
  assert.equal(source.url.searchParams.get("args.q1"), JSON.stringify({ id: { $integer: "BQAAAAAAAAA=" } }));
  source.emit("transition", { ts: "1", changes: [{ sub: "q1", value: { wins: { $integer: "UAAAAAAAAAA=" } }, v: "x" }] });
  assert.deepEqual(values, [{ wins: 80n }]);
  assert.deepEqual(gateway.current("mlb:team", { id: 5n }), { wins: 80n });
  gateway.close();
  assert.throws(() => new ConvexGateway("http://gateway.test", { values: "bigint" }), TypeError);
});

test("calls send the highest Convex-Timestamp seen on answers and transitions as Convex-Min-Timestamp", async () => {
  const requests = [];
  // Each answer: [status, Convex-Timestamp header or null, body].
  const answers = [
    [200, "1000", 1],
    [200, "999", 1],
    [422, "1500", { error: { code: "ConvexError", message: "no" } }],
    [200, null, 2],
    [200, "1700", 3],
  ];
  globalThis.fetch = async (url, init) => {
    requests.push({ url, init });
    const [status, timestamp, value] = answers.shift();
    const headers = new Headers(timestamp === null ? {} : { "Convex-Timestamp": timestamp });
    // A mutation goes in a batch (POST /mutations), answered entry by entry.
    const { mutations } = JSON.parse(init.body);
    const body = String(url).includes("/mutations?") ? { results: [{ requestId: mutations[0].requestId, value, ts: timestamp }] } : value;
    return { ok: status === 200, status, headers, json: async () => body };
  };
  FakeEventStream.instances = [];
  const gateway = new ConvexGateway("http://gateway.test", { debounceMs: 0, eventStreamReader: FakeEventStream });
  const sent = () => requests.at(-1).init.headers["Convex-Min-Timestamp"];
  assert.equal(gateway.timestamp, undefined);

  assert.equal(await gateway.mutation("conformance:increment", { name: "a" }), 1);
  assert.equal(sent(), undefined, "nothing seen yet: no header");
  assert.equal(gateway.timestamp, "1000");
  await gateway.query("conformance:counter", { name: "a" });
  assert.equal(sent(), "1000", "the query reads at least the mutation's commit");
  assert.equal(gateway.timestamp, "1000", "an older snapshot does not lower it");
  await assert.rejects(gateway.action("conformance:convexErrorAction"), { code: "ConvexError" });
  assert.equal(sent(), "1000");
  assert.equal(gateway.timestamp, "1500", "a refusal's timestamp counts too");
  await gateway.query("conformance:counter", { name: "a" });
  assert.equal(sent(), "1500");
  assert.equal(gateway.timestamp, "1500", "an answer without the header leaves it");

  const values = [];
  gateway.subscribe("conformance:counter", { name: "a" }, (value) => values.push(value));
  await until(() => FakeEventStream.instances.length === 1);
  const source = FakeEventStream.instances[0];
  source.emit("transition", { ts: "1600", changes: [{ sub: "q1", value: 1, v: "x" }] });
  assert.equal(gateway.timestamp, "1600", "a transition's ts counts");
  source.emit("transition", { ts: "1550", changes: [] });
  assert.equal(gateway.timestamp, "1600");
  await gateway.mutation("conformance:increment", { name: "a" });
  assert.equal(sent(), "1600");
  assert.equal(gateway.timestamp, "1700");
  assert.throws(() => {
    gateway.timestamp = "1";
  }, TypeError, "read-only");
  assert.deepEqual(values, [1]);
  gateway.close();
});

test("a refusal naming a subscription (error.sub) fails that query alone, from the refusal's status and body", async () => {
  FakeEventStream.instances = [];
  const gateway = new ConvexGateway("http://gateway.test", { debounceMs: 0, eventStreamReader: FakeEventStream });
  const errors = { good: [], gone: [] };
  const values = [];
  gateway.subscribe("messages:list", {}, (value) => values.push(value), (error) => errors.good.push(error));
  gateway.subscribe("nothing:here", {}, () => assert.fail("no value"), (error) => errors.gone.push(error));
  await until(() => FakeEventStream.instances.length === 1);
  const refusal = { code: "FunctionNotFound", message: "Subscription 'q2': no such function", sub: "q2" };
  FakeEventStream.instances[0].refuse(404, refusal);
  assert.equal(errors.gone.length, 1);
  assert.equal(errors.gone[0].status, 404);
  assert.equal(errors.gone[0].code, "FunctionNotFound");
  assert.equal(errors.good.length, 0, "the other query goes on");
  await until(() => FakeEventStream.instances.length === 2);
  assert.deepEqual(FakeEventStream.instances[1].subscriptions, [["q1", "messages:list", {}]], "reopened without it");
  FakeEventStream.instances[1].emit("transition", { ts: "1", changes: [{ sub: "q1", value: [], v: "a" }] });
  assert.deepEqual(values, [[]]);

  // A refusal of the whole stream (no `sub`) reaches every query, and the stream is not reopened.
  FakeEventStream.instances[1].refuse(403, { code: "OriginNotAllowed", message: "Origin not allowed" });
  assert.equal(errors.good.at(-1).status, 403);
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.equal(FakeEventStream.instances.length, 2);
  gateway.close();
});

test("every kind of refusal naming a subscription before the stream opens drops that one: the good ones get values", async () => {
  FakeEventStream.instances = [];
  const gateway = new ConvexGateway("http://gateway.test", { debounceMs: 0, eventStreamReader: FakeEventStream });
  const values = [];
  const pages = [];
  const errors = new Map();
  // Errors heard, by the subscription's function and arguments.
  const key = (fn, args) => `${fn} ${JSON.stringify(args)}`;
  const failed = (name) => (error) => errors.set(name, [...(errors.get(name) ?? []), error]);
  gateway.subscribe("messages:list", {}, (value) => values.push(value), failed("good"));
  const feed = gateway.paginatedQuery("feed:list", {}, { initialNumItems: 2 }, (results, status) => pages.push(status),
    failed("feed"));
  // The refusals the gateway gives these, before the stream opens: a 400 or a 404 naming the subscription in `sub`.
  const bad = [
    ["messages.list", {}, 400, "InvalidFunctionPath"],
    [":x", {}, 400, "InvalidFunctionPath"],
    ["mlb::x", {}, 400, "InvalidFunctionPath"],
    ["fn.js", {}, 404, "FunctionNotFound"],
    ["conformance:typed", { x: 1.5 }, 400, "ArgumentValidationError"],
    ["messages:list", { channel: 12 }, 400, "ArgumentValidationError"],
  ];
  for (const [fn, args] of bad) gateway.subscribe(fn, args, () => assert.fail(`a value for ${fn}`), failed(key(fn, args)));
  await until(() => FakeEventStream.instances.length === 1);
  assert.equal(FakeEventStream.instances[0].subscriptions.length, 2 + bad.length, "one stream for all");
  // The gateway refuses one bad subscription per URL (the first it finds); the client drops it and opens again.
  for (const [index, [fn, args, status, code]] of bad.entries()) {
    const source = FakeEventStream.instances.at(-1);
    const [id] = source.subscriptions.find(([, f, a]) => f === fn && JSON.stringify(a) === JSON.stringify(args));
    source.refuse(status, { code, message: `Subscription '${id}': refused`, sub: id });
    assert.equal(errors.get(key(fn, args))?.at(-1)?.code, code, `${fn} hears its own refusal`);
    assert.equal(errors.get(key(fn, args))?.at(-1)?.status, status);
    await until(() => FakeEventStream.instances.length === index + 2);
  }
  const last = FakeEventStream.instances.at(-1);
  assert.deepEqual(last.subscriptions.map(([, fn]) => fn), ["messages:list", "feed:list"], "only the good ones are left");
  assert.equal(errors.get("good"), undefined, "the good query heard no refusal");
  assert.equal(errors.get("feed"), undefined, "the feed heard no refusal");
  for (const [fn, args] of bad) assert.equal(errors.get(key(fn, args)).length, 1, `${fn} hears of it once`);
  const [[listId], [pageId]] = last.subscriptions;
  last.emit("transition", {
    ts: "1",
    changes: [
      { sub: listId, value: ["hi"], v: "a" },
      { sub: pageId, value: { page: [{ _id: "p1" }], isDone: true, continueCursor: "end" }, v: "b" },
    ],
  });
  assert.deepEqual(values, [["hi"]]);
  assert.equal(feed.status, "Exhausted");
  assert.deepEqual(pages.at(-1), "Exhausted");
  // The feed's page, once it has a value, is subscribed again pinned at its end: the stream opens again for that.
  const pinned = ([, fn, args]) => fn === "feed:list" && args.paginationOpts.endCursor === "end";
  await until(() => FakeEventStream.instances.at(-1).subscriptions.some(pinned));
  const settled = FakeEventStream.instances.at(-1);
  // A refused subscription asked for again hears the refusal at once, and the stream is not reopened for it.
  const again = [];
  gateway.subscribe("messages.list", {}, () => assert.fail("a value"), (error) => again.push(error.code));
  await until(() => again.length === 1);
  assert.deepEqual(again, ["InvalidFunctionPath"]);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(FakeEventStream.instances.at(-1), settled);
  gateway.close();
});

test("a refusal naming a subscription this stream does not hold, or a 5xx naming one, is the whole stream's", async () => {
  FakeEventStream.instances = [];
  const gateway = new ConvexGateway("http://gateway.test", { debounceMs: 0, eventStreamReader: FakeEventStream });
  const errors = [];
  gateway.subscribe("messages:list", {}, () => {}, (error) => errors.push(error.code));
  await until(() => FakeEventStream.instances.length === 1);
  FakeEventStream.instances[0].refuse(400, { code: "InvalidSubscriptions", message: "args.zz without sub.zz", sub: "zz" });
  assert.deepEqual(errors, ["InvalidSubscriptions"]);
  gateway.close();

  FakeEventStream.instances = [];
  const retried = new ConvexGateway("http://gateway.test", { debounceMs: 0, eventStreamReader: FakeEventStream });
  const heard = [];
  retried.subscribe("messages:list", {}, () => {}, (error) => heard.push(error.code));
  await until(() => FakeEventStream.instances.length === 1);
  const [[id]] = FakeEventStream.instances[0].subscriptions;
  FakeEventStream.instances[0].refuse(503, { code: "Overloaded", message: "Subscription limit reached", sub: id });
  assert.deepEqual(heard, ["Overloaded"], "heard, and the subscription is kept");
  await until(() => FakeEventStream.instances.length === 2);
  assert.deepEqual(FakeEventStream.instances[1].subscriptions.map(([, fn]) => fn), ["messages:list"]);
  retried.close();
});

test("a fatal event (the token expired) reopens the stream with a token asked for with forceRefresh", async () => {
  FakeEventStream.instances = [];
  const asked = [];
  globalThis.fetch = async (url, init) => ({
    ok: true,
    status: 201,
    json: async () => ({ ticket: `ticket-for-${init.headers.Authorization}`, expiresAt: Date.now() + 60000 }),
  });
  const gateway = new ConvexGateway("http://gateway.test", {
    debounceMs: 0,
    eventStreamReader: FakeEventStream,
    token: ({ forceRefresh }) => (asked.push(forceRefresh), forceRefresh ? "fresh" : "stale"),
  });
  const errors = [];
  gateway.subscribe("conformance:whoami", {}, () => {}, (error) => errors.push(error));
  await until(() => FakeEventStream.instances.length === 1);
  assert.equal(FakeEventStream.instances[0].url.searchParams.get("ticket"), "ticket-for-Bearer stale");
  FakeEventStream.instances[0].emit("fatal", { error: { code: "Unauthenticated", message: "token expired" } });
  assert.ok(FakeEventStream.instances[0].closed);
  await until(() => FakeEventStream.instances.length === 2);
  assert.equal(FakeEventStream.instances[1].url.searchParams.get("ticket"), "ticket-for-Bearer fresh");
  assert.deepEqual(asked, [false, true]);
  assert.equal(errors.length, 0, "a first refusal of the token is not reported");
  gateway.close();
});

test("a replica that is shutting down refuses the stream quietly: it is opened again, no listener hears of it", async () => {
  FakeEventStream.instances = [];
  const gateway = new ConvexGateway("http://gateway.test", { debounceMs: 0, eventStreamReader: FakeEventStream });
  const errors = [];
  gateway.subscribe("messages:list", {}, () => {}, (error) => errors.push(error));
  await until(() => FakeEventStream.instances.length === 1);
  FakeEventStream.instances[0].refuse(503, { code: "ShuttingDown", message: "Gateway is shutting down" });
  await until(() => FakeEventStream.instances.length === 2);
  FakeEventStream.instances[1].refuse(503, { code: "Overloaded", message: "Too many streams" });
  assert.deepEqual(errors.map((error) => error.code), ["Overloaded"], "other refusals are heard");
  gateway.close();
});

test("Authentication reuses a ticket while its token is the same and has time left, and mints anew otherwise", async () => {
  const minted = [];
  let answer = (token) => ({ ok: true, status: 201, json: async () => ({ ticket: `t${minted.length}`, expiresAt: Date.now() + 60000 }) });
  globalThis.fetch = async (url, init) => {
    minted.push([url, init.headers.Authorization]);
    return answer(init.headers.Authorization);
  };
  let current = "jwt-1";
  const auth = new Authentication("http://gateway.test", ({ forceRefresh }) => (forceRefresh ? "jwt-fresh" : current));
  assert.equal(await auth.streamTicket(false), "t1");
  assert.equal(await auth.streamTicket(false), "t1", "the same token: the same ticket");
  current = "jwt-2";
  assert.equal(await auth.streamTicket(false), "t2", "another token: a new ticket");
  assert.equal(await auth.streamTicket(true), "t3", "forceRefresh: a fresh token and a new ticket");
  assert.deepEqual(minted.map(([url, authorization]) => [url, authorization]), [
    ["http://gateway.test/stream-tickets", "Bearer jwt-1"],
    ["http://gateway.test/stream-tickets", "Bearer jwt-2"],
    ["http://gateway.test/stream-tickets", "Bearer jwt-fresh"],
  ]);
  assert.equal(await new Authentication("http://gateway.test").streamTicket(false), null, "signed out: no ticket");
  assert.equal(await new Authentication("http://gateway.test", null).token(false), null, "token: null is signed out");
  answer = () => ({ ok: false, status: 401, json: async () => ({ error: { code: "Unauthenticated", message: "expired" } }) });
  await assert.rejects(auth.streamTicket(true), { name: "ConvexGatewayError", status: 401, code: "Unauthenticated" });
  globalThis.fetch = async () => {
    throw new TypeError("Failed to fetch");
  };
  await assert.rejects(auth.streamTicket(true), { status: 0, code: "NetworkError" });
});

// MARK: Connection state

test("the connection state follows the stream and the calls in flight, as convex-js' connectionState does", async () => {
  FakeEventStream.instances = [];
  const answers = [];
  globalThis.fetch = (url) => new Promise((resolve) => answers.push({ url: String(url), resolve }));
  // Answers the call whose URL has `path` in it.
  const answer = (path, value) => {
    const call = answers.find(({ url }) => url.includes(path));
    call.resolve({
      ok: true, status: 200, headers: new Map(),
      json: async () => (path === "/mutations?" ? { results: [{ requestId: 0, value, ts: "1" }] } : value),
    });
  };
  const gateway = new ConvexGateway("http://gateway.test", { debounceMs: 0, eventStreamReader: FakeEventStream });
  const initial = gateway.connectionState();
  assert.deepEqual(initial, {
    hasInflightRequests: false, isWebSocketConnected: false, isStreamConnected: false, timeOfOldestInflightRequest: null, hasEverConnected: false,
    connectionCount: 0, connectionRetries: 0, inflightMutations: 0, inflightActions: 0,
  });
  const seen = [];
  const stop = gateway.subscribeToConnectionState((state) => seen.push(state));

  // Calls in flight: counted by kind, the oldest one's time given, until each is answered.
  const before = Date.now();
  const mutation = gateway.mutation("messages:send", { body: "hi" });
  const action = gateway.action("conformance:add", { a: 1, b: 2 });
  await until(() => answers.length === 2);
  let state = gateway.connectionState();
  assert.equal(state.hasInflightRequests, true);
  assert.deepEqual([state.inflightMutations, state.inflightActions], [1, 1]);
  assert.ok(state.timeOfOldestInflightRequest instanceof Date);
  assert.ok(state.timeOfOldestInflightRequest.getTime() >= before && state.timeOfOldestInflightRequest.getTime() <= Date.now());
  answer("/mutations?", null);
  await mutation;
  assert.deepEqual([gateway.connectionState().inflightMutations, gateway.connectionState().inflightActions], [0, 1]);
  answer("/action/", 3);
  assert.equal(await action, 3);
  assert.equal(gateway.connectionState().hasInflightRequests, false);
  assert.equal(gateway.connectionState().timeOfOldestInflightRequest, null);

  // The stream: open, lost (a retry), open again; a changed set of live queries opens a new stream without a gap.
  gateway.subscribe("messages:list", {}, () => {});
  await until(() => FakeEventStream.instances.length === 1);
  FakeEventStream.instances[0].emit("open", {});
  state = gateway.connectionState();
  assert.deepEqual([state.isStreamConnected, state.hasEverConnected, state.connectionCount, state.connectionRetries], [true, true, 1, 0]);
  FakeEventStream.instances[0].emit("lost", {});
  FakeEventStream.instances[0].emit("lost", {});
  state = gateway.connectionState();
  assert.deepEqual([state.isStreamConnected, state.hasEverConnected, state.connectionRetries], [false, true, 2]);
  FakeEventStream.instances[0].emit("open", {});
  assert.deepEqual([gateway.connectionState().connectionCount, gateway.connectionState().connectionRetries], [2, 0]);
  const count = seen.length;
  gateway.subscribe("mlb:teams", {}, () => {});
  await until(() => FakeEventStream.instances.length === 2);
  assert.equal(gateway.connectionState().isStreamConnected, true, "still open while the new stream opens");
  FakeEventStream.instances[1].emit("open", {});
  assert.equal(gateway.connectionState().connectionCount, 3);
  FakeEventStream.instances[0].emit("lost", {});
  assert.equal(gateway.connectionState().isStreamConnected, true, "the replaced stream is no longer heard");
  assert.ok(seen.length > count);

  // A refusal is a failure too; closing leaves no stream open; a stopped listener hears nothing more.
  FakeEventStream.instances[1].refuse(503, { code: "UpstreamUnavailable", message: "down" });
  assert.deepEqual([gateway.connectionState().isStreamConnected, gateway.connectionState().connectionRetries], [false, 1]);
  assert.deepEqual(seen.at(-1), gateway.connectionState(), "each change is told with the state after it");
  stop();
  const heard = seen.length;
  gateway.close();
  assert.equal(gateway.connectionState().isStreamConnected, false);
  assert.equal(seen.length, heard);
});

test("close() ends the stream and every live query: no stream opens again, and the state says none is open", async () => {
  FakeEventStream.instances = [];
  const gateway = new ConvexGateway("http://gateway.test", { debounceMs: 0, eventStreamReader: FakeEventStream });
  const values = [];
  gateway.subscribe("messages:list", {}, (value) => values.push(value));
  await until(() => FakeEventStream.instances.length === 1);
  const source = FakeEventStream.instances[0];
  source.emit("open", {});
  assert.equal(gateway.connectionState().isStreamConnected, true);
  gateway.close();
  assert.equal(source.closed, true);
  assert.equal(gateway.connectionState().isStreamConnected, false);
  source.emit("transition", { ts: "1", changes: [{ sub: "q1", value: ["late"], v: "a" }] });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(values, [], "nothing is delivered after close()");
  assert.equal(FakeEventStream.instances.length, 1, "no stream opens again");
});

test("client.js always asks for the format it reads: numbers stay numbers on a gateway whose default is clean", async () => {
  // A gateway started with --format clean: int64 as decimal strings unless the request asks for another format.
  const render = (url, wins) => {
    const format = new URL(url).searchParams.get("format") ?? "clean";
    if (format === "clean") return String(wins);
    if (format === "encoded") return { $integer: Buffer.from(new BigInt64Array([BigInt(wins)]).buffer).toString("base64") };
    return wins;
  };
  const urls = [];
  globalThis.fetch = async (url, init) => {
    urls.push(String(url));
    const wins = render(String(url), 81);
    const body = String(url).includes("/mutations?")
      ? { results: JSON.parse(init.body).mutations.map(({ requestId }) => ({ requestId, value: { wins }, ts: "5" })) }
      : { wins };
    return { ok: true, status: 200, headers: new Headers(), json: async () => body };
  };
  for (const [values, expected] of [[undefined, 81], ["json", 81], ["convex", 81n]]) {
    FakeEventStream.instances = [];
    urls.length = 0;
    const gateway = new ConvexGateway("http://gateway.test", { values, debounceMs: 0, eventStreamReader: FakeEventStream });
    assert.deepEqual(await gateway.query("mlb:team", {}), { wins: expected });
    assert.deepEqual(await gateway.mutation("mlb:record_win", {}), { wins: expected });
    assert.deepEqual(await gateway.action("mlb:refresh", {}), { wins: expected });
    const format = values === "convex" ? "encoded" : "plain";
    assert.deepEqual(urls.map((url) => new URL(url).searchParams.get("format")), [format, format, format]);
    gateway.subscribe("mlb:team", {}, () => {});
    await until(() => FakeEventStream.instances.length === 1);
    assert.equal(FakeEventStream.instances[0].url.searchParams.get("format"), format, "the stream too");
    await gateway.close();
  }
});
