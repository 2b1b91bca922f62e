// The client's answers to a server that is down, limited or misbehaving: retries honouring
// Retry-After, the error of each failure, page links kept on the client's origin. Against a
// scripted HTTP server (scripted-server.js); the real server's tests are live.test.js.

import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, test } from "node:test";

import {
  MemoryClient,
  RateLimitedError,
  ServerError,
  SynthOrgError,
  UnavailableError,
} from "../dist/index.js";
import { problem, startScriptedServer } from "./scripted-server.js";

const SEARCH = "/api/v1/memories/search";
const EMPTY = { results: [], degraded: [] };
const DOWN = "The database is unavailable; retry shortly.";

let server;
before(async () => {
  server = await startScriptedServer();
});
after(() => server.close());

function unavailable(retryAfter) {
  const json = problem(503, "database_unavailable", DOWN, { correlation_id: "c0ffee" });
  return { status: 503, json, headers: { "Retry-After": retryAfter } };
}

function clientOf(options = {}) {
  return new MemoryClient({ baseUrl: server.baseUrl, apiKey: "k", ...options });
}

test("a 503 is retried after Retry-After, in seconds or as an HTTP date", async () => {
  const path = SEARCH;
  const before = server.to(path).length;
  const past = new Date(Date.now() - 30_000).toUTCString();
  server.enqueue(path, unavailable("0"), unavailable(past), { json: EMPTY });
  const found = await clientOf().memories.search({ query: "deploys" });
  assert.deepEqual(found, { results: [], degraded: [] });
  const sent = server.to(path).slice(before);
  assert.equal(sent.length, 3);
  assert.deepEqual(
    sent.map((r) => [r.method, r.body, r.headers.authorization, r.headers["content-type"]]),
    Array(3).fill(["POST", { query: "deploys" }, "Bearer k", "application/json"]),
  );
  assert.match(sent[0].headers["user-agent"], /^synthorg-memory-typescript\//);
});

test("a 429 is sent again only after the wait its Retry-After asked for", async () => {
  // The server refuses until a second has passed since its 429 (as the API's rate limits
  // do): with one retry allowed, the call succeeds only if the client waited.
  const path = "/api/v1/dreams";
  let refusedAt;
  const limited = () => {
    if (refusedAt !== undefined && performance.now() - refusedAt >= 1000) {
      return { status: 202, json: { id: "d2", status: "pending" } };
    }
    refusedAt ??= performance.now();
    const json = problem(429, "dream_rate_limited", "Too soon.", { retry_after: 1 });
    return { status: 429, json, headers: { "Retry-After": "1" } };
  };
  server.enqueue(path, limited, limited);
  const accepted = await clientOf({ maxRetries: 1 }).dreams.request();
  assert.deepEqual(accepted, { id: "d2", status: "pending" });
  assert.equal(server.to(path).length, 2);
});

test("the error surfaces after the last retry with the server's problem", async () => {
  const before = server.to(SEARCH).length;
  server.enqueue(SEARCH, unavailable("5"), unavailable("5"), unavailable("5"));
  const client = clientOf({ maxRetries: 2, maxRetryWaitMs: 10 });
  const error = await client.memories.search({ query: "deploys" }).catch((e) => e);
  assert.ok(error instanceof UnavailableError && error instanceof SynthOrgError);
  assert.equal(server.to(SEARCH).length - before, 3);
  assert.deepEqual(
    [error.name, error.status, error.code, error.detail, error.attempts],
    ["UnavailableError", 503, "database_unavailable", DOWN, 3],
  );
  assert.deepEqual([error.retryAfter, error.correlationId], [5, "c0ffee"]);
  assert.equal(error.body.correlation_id, "c0ffee");
  assert.equal(error.message, `503 database_unavailable: ${DOWN}`);

  server.enqueue(SEARCH, {
    status: 429,
    json: problem(429, "rate_limited", "Slow down."),
    headers: { "Retry-After": "2" },
  });
  const once = await clientOf({ maxRetries: 0 }).memories.search({ query: "x" }).catch((e) => e);
  assert.ok(once instanceof RateLimitedError);
  assert.deepEqual([once.code, once.attempts, once.retryAfter], ["rate_limited", 1, 2]);
});

test("other failures are not retried", async () => {
  const before = server.to(SEARCH).length;
  const bug = problem(500, "internal_error", "Internal server error.", { correlation_id: "5e1f" });
  server.enqueue(
    SEARCH,
    { status: 500, json: bug },
    { status: 502, body: "<html>Bad gateway</html>" },
  );
  const client = clientOf();
  const failed = await client.memories.search({ query: "x" }).catch((e) => e);
  assert.ok(failed instanceof ServerError);
  assert.deepEqual([failed.status, failed.code, failed.correlationId], [500, "internal_error", "5e1f"]);
  const proxy = await client.memories.search({ query: "x" }).catch((e) => e);
  assert.ok(proxy instanceof UnavailableError);
  assert.deepEqual(
    [proxy.status, proxy.code, proxy.detail, proxy.retryAfter],
    [502, "http_502", "<html>Bad gateway</html>", null],
  );
  assert.equal(server.to(SEARCH).length - before, 2);
});

test("no server is unavailable without a status, and is not retried", async () => {
  const port = await new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port)); // closed again: nothing listens there
    });
  });
  const client = new MemoryClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "k" });
  const down = await client.memories.count().catch((e) => e);
  assert.ok(down instanceof UnavailableError);
  assert.deepEqual([down.status, down.code, down.attempts], [null, "connection_error", 1]);
  assert.match(down.detail, /^TypeError: fetch failed/);
});

test("a request that takes longer than timeoutMs fails as unavailable, unretried", async () => {
  const path = "/api/v1/memories/count";
  server.enqueue(path, { hang: true }, { json: { count: 1, category: null } });
  const slow = await clientOf({ timeoutMs: 200 }).memories.count().catch((e) => e);
  assert.ok(slow instanceof UnavailableError);
  assert.deepEqual([slow.status, slow.code, slow.attempts], [null, "connection_error", 1]);
  assert.match(slow.detail, /^TimeoutError: /);
  assert.equal(server.to(path).length, 1);
  assert.deepEqual(await clientOf().memories.count(), { count: 1, category: null });
});

test("a page's next link is followed on the client's own origin only", async () => {
  const path = "/api/v1/memories";
  const memory = (id) => ({ id, content: `memory ${id}` });
  server.enqueue(
    path,
    { json: { count: 3, next: "http://elsewhere.example:9/api/v1/memories?page=2&page_size=2", results: [memory("a"), memory("b")] } },
    { json: { count: 3, next: null, results: [memory("c")] } },
  );
  const before = server.to(path).length;
  const seen = [];
  for await (const item of clientOf().memories.list({ page_size: 2, tags: ["deploy", "billing"] })) {
    seen.push(item.id);
  }
  assert.deepEqual(seen, ["a", "b", "c"]);
  const sent = server.to(path).slice(before);
  assert.deepEqual(
    sent.map((r) => [r.search, r.headers.authorization]),
    [
      ["?page_size=2&tag=deploy%2Cbilling", "Bearer k"],
      ["?page=2&page_size=2", "Bearer k"],
    ],
  );
});

test("options are checked when the client is made", () => {
  assert.throws(() => new MemoryClient({ baseUrl: server.baseUrl, apiKey: "" }), /apiKey is required/);
  assert.throws(
    () => new MemoryClient({ baseUrl: server.baseUrl, apiKey: "k", maxRetries: -1 }),
    /maxRetries must be an integer, 0 or more/,
  );
});
