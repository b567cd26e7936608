// client.js in node 20: REPS times, twenty mutations called without awaiting (messages:send to a fresh channel, bodies
// "0" … "19"), timed from the first call until the last promise settled; then messages:list of that channel must show
// them in call order. Before each, one awaited mutation alone: the time of one round trip. Prints name=value lines
// (Benchmarks/mutation-order/run reads them).
//
// Usage: node client_js.mjs GATEWAY_URL [REPS]   GATEWAY_URL is the gateway's, or a proxy's in front of it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { performance } from "node:perf_hooks";

const [url, repsText = "5"] = process.argv.slice(2);
const reps = Number(repsText);
const COUNT = 20;

// client.js as the gateway serves it, imported from a temporary file.
const source = await (await fetch(`${url}/client.js`)).text();
const dir = mkdtempSync(join(tmpdir(), "client-js-"));
const file = join(dir, "client.mjs");
writeFileSync(file, source);
const { ConvexGateway } = await import(pathToFileURL(file).href);
rmSync(dir, { recursive: true });

// How many POST /mutations each timing took.
let posts = 0;
const plainFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  if (String(input).includes("/mutations")) posts += 1;
  return plainFetch(input, init);
};

const gateway = new ConvexGateway(url);
const tag = `${process.pid}-${Date.now()}`;
// Warm-up: the keep-alive connection and the session's deployment connection are open before the first timing.
await gateway.mutation("messages:send", { body: "warm-up", channel: `warm-${tag}` });

for (let rep = 0; rep < reps; rep++) {
  let start = performance.now();
  await gateway.mutation("messages:send", { body: "one", channel: `one-${tag}` });
  const single = performance.now() - start;

  const channel = `order-${tag}-${rep}`;
  posts = 0;
  start = performance.now();
  const calls = [];
  for (let i = 0; i < COUNT; i++) calls.push(gateway.mutation("messages:send", { body: String(i), channel }));
  const outcomes = await Promise.allSettled(calls);
  const elapsed = performance.now() - start;
  const failed = outcomes.filter((outcome) => outcome.status === "rejected");
  if (failed.length > 0) throw new Error(`${failed.length} of ${COUNT} mutations failed: ${failed[0].reason}`);

  const bodies = (await gateway.query("messages:list", { channel })).map((message) => message.body).join(",");
  const expected = Array.from({ length: COUNT }, (_, i) => String(i)).join(",");
  if (bodies !== expected) throw new Error(`channel ${channel} holds ${bodies}, not ${expected}`);
  console.log(`client=client.js mutations20_ms=${elapsed.toFixed(1)} single_ms=${single.toFixed(1)} posts=${posts} order=ok`);
}
gateway.close();
process.exit(0);
