// Tests of client.js's transport (Resources/client/event-stream.js) under node's own test runner:
//   node --test Tests/ClientScriptTests/
// The reader is given a stand-in fetch answering real Response objects whose bodies the test writes piece by piece.
import assert from "node:assert/strict";
import { test } from "node:test";
import { EventStreamParser, EventStreamReader } from "../../Sources/ConvexGateway/Resources/client/event-stream.js";

const until = async (condition, what = "timed out") => {
  for (let i = 0; i < 400 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(condition(), what);
};

/** A fetch whose every call answers with the next of `answers`: a status and JSON body, or a stream to write to. */
function fakeFetch() {
  const calls = [];
  const streams = [];
  const answers = [];
  const fetch = async (url, init) => {
    calls.push({ url, init });
    const answer = answers.shift() ?? { stream: true };
    if (answer.throws) throw new TypeError("Failed to fetch");
    if (!answer.stream) {
      return new Response(JSON.stringify(answer.body), { status: answer.status, headers: { "Content-Type": "application/json" } });
    }
    let controller;
    const body = new ReadableStream({ start: (c) => (controller = c) });
    const encoder = new TextEncoder();
    streams.push({
      write: (text) => controller.enqueue(encoder.encode(text)),
      end: () => controller.close(),
      aborted: init.signal,
    });
    init.signal.addEventListener("abort", () => controller.error(new DOMException("aborted", "AbortError")));
    return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
  };
  return { fetch, calls, streams, answers };
}

test("the parser reads events split anywhere, CR, LF and CRLF line ends, comments, id and retry", () => {
  const seen = [];
  const parser = new EventStreamParser((event) => seen.push(event));
  const text = ": hello\r\nevent: transition\rid: 7-a\ndata: {\"a\":\r\ndata: 1}\r\n\r\ndata:x\n\nretry: 50\nid: 8\0\nevent: fatal\ndata\n\n";
  for (const piece of text.split(/(?<=\r)|(?<=\n)|(?<=a)/)) parser.push(piece);
  assert.deepEqual(seen, [
    { id: "7-a" },
    { dispatch: true, type: "transition", data: '{"a":\n1}' },
    { dispatch: true, type: "message", data: "x" },
    { retry: 50 },
    { dispatch: true, type: "fatal", data: "" },
  ]);
});

test("a CR that ends one piece and the LF that starts the next are one line end", () => {
  const seen = [];
  const parser = new EventStreamParser((event) => seen.push(event));
  // Read as two line ends, the LF would be a blank line that dispatches "a" alone.
  for (const piece of ["data: a\r", "\ndata: b\r", "\n\r", "\n"]) parser.push(piece);
  assert.deepEqual(seen, [{ dispatch: true, type: "message", data: "a\nb" }]);
});

test("the reader delivers named events and, after a lost connection, connects again with Last-Event-ID", async () => {
  const server = fakeFetch();
  const reader = new EventStreamReader("http://gateway.test/subscribe?sub.a=x:y", { fetch: server.fetch, retry: 5 });
  const seen = [];
  for (const type of ["open", "transition", "lost"]) reader.addEventListener(type, (event) => seen.push([type, event.data]));
  await until(() => server.streams.length === 1);
  assert.equal(server.calls[0].init.headers.Accept, "text/event-stream");
  assert.equal(server.calls[0].init.headers["Last-Event-ID"], undefined);
  server.streams[0].write('event: transition\nid: 5-ab\ndata: {"ts":"1"}\n\n');
  await until(() => seen.length === 2);
  server.streams[0].end();
  await until(() => server.streams.length === 2, "connects again");
  assert.equal(server.calls[1].init.headers["Last-Event-ID"], "5-ab");
  assert.equal(reader.lastEventId, "5-ab");
  assert.deepEqual(seen, [
    ["open", undefined],
    ["transition", '{"ts":"1"}'],
    ["lost", undefined],
    ["open", undefined],
  ]);
  reader.close();
});

test("a refusal reaches the listener with its status and error body, and the reader stops", async () => {
  const server = fakeFetch();
  const error = { code: "FunctionNotFound", message: "Subscription 'b': no such function", sub: "b" };
  server.answers.push({ status: 404, body: { error } });
  const reader = new EventStreamReader("http://gateway.test/subscribe", { fetch: server.fetch, retry: 5 });
  const refusals = [];
  reader.addEventListener("refused", (event) => refusals.push(event));
  await until(() => refusals.length === 1);
  assert.equal(refusals[0].status, 404);
  assert.deepEqual(refusals[0].error, error);
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.equal(server.calls.length, 1, "no second request");
});

test("an unreachable gateway is tried again; close() stops the reader and silences it", async () => {
  const server = fakeFetch();
  server.answers.push({ throws: true }, { throws: true });
  const reader = new EventStreamReader("http://gateway.test/subscribe", { fetch: server.fetch, retry: 5 });
  const seen = [];
  for (const type of ["open", "lost", "message"]) reader.addEventListener(type, () => seen.push(type));
  await until(() => server.streams.length === 1, "the third try connects");
  assert.deepEqual(seen, ["lost", "lost", "open"]);
  reader.close();
  await until(() => server.streams[0].aborted.aborted, "the request is aborted");
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.deepEqual(seen, ["lost", "lost", "open"], "nothing after close");
  assert.equal(server.calls.length, 3);
});
