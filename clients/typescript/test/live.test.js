// The client against the real server: tests/clients/test_typescript_client.py starts the
// product (uvicorn on a free port), creates agents with real keys and runs these tests with
// them in SYNTHORG_TS_FIXTURE; it then checks the database for what they report in
// SYNTHORG_TS_FIXTURE.reportDir. Run alone (`npm test`), they are skipped.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import {
  AuthError,
  AuthenticationError,
  ConflictError,
  MemoryClient,
  NotFoundError,
  RateLimitedError,
  SynthOrgError,
  ValidationError,
} from "../dist/index.js";

const fixture = process.env.SYNTHORG_TS_FIXTURE
  ? JSON.parse(process.env.SYNTHORG_TS_FIXTURE)
  : null;
const live = { skip: fixture ? false : "needs the server: pytest tests/clients/test_typescript_client.py" };
const CONTENT = "The billing service deploys every Friday at noon UTC.";

function clientOf(key, options = {}) {
  return new MemoryClient({ baseUrl: fixture.url, apiKey: key, ...options });
}

/** A fetch that keeps the status of every answer. */
function recording() {
  const statuses = [];
  const fetcher = async (url, init) => {
    const response = await fetch(url, init);
    statuses.push(response.status);
    return response;
  };
  return { statuses, fetch: fetcher };
}

/** The same call without the client, for comparing answers. */
async function rest(key, method, path, body) {
  const response = await fetch(`${fixture.url}/api/v1${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

async function all(iterable) {
  const items = [];
  for await (const item of iterable) {
    items.push(item);
  }
  return items;
}

function report(name, value) {
  writeFileSync(join(fixture.reportDir, `${name}.json`), JSON.stringify(value));
}

async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("the call did not fail");
}

test("store, search, context, get, history, update, list, delete: a round trip", live, async () => {
  const { key } = fixture.roundTrip;
  const client = clientOf(key);
  const stored = await client.memories.store({
    content: CONTENT,
    category: "semantic",
    tags: ["Deploy", "billing"],
  });
  assert.equal(stored.content, CONTENT);
  assert.deepEqual(stored.tags, ["deploy", "billing"]);
  assert.deepEqual(
    [stored.stored, stored.deduplicated, stored.warnings, stored.agent_id],
    [true, false, [], fixture.roundTrip.agentId],
  );
  const again = await client.memories.store({ content: CONTENT, category: "semantic" });
  assert.deepEqual([again.id, again.stored, again.deduplicated], [stored.id, true, true]);

  const question = { query: "when does billing deploy", limit: 10 };
  const found = await client.memories.search(question);
  const direct = await rest(key, "POST", "/memories/search", question);
  assert.deepEqual(
    found.results.map((hit) => [hit.memory.id, hit.memory.content]),
    [[stored.id, CONTENT]],
  );
  assert.deepEqual(
    found.results.map((hit) => hit.score),
    direct.json.results.map((hit) => hit.combined),
  );
  assert.ok(found.results[0].score > 0);
  assert.deepEqual(found.degraded, []);

  const ask = { query: "when does billing deploy", token_budget: 800 };
  const context = await client.memories.context(ask);
  assert.deepEqual(context.messages, (await rest(key, "POST", "/memories/context", ask)).json.messages);
  assert.equal(context.messages.filter((m) => m.content.includes(CONTENT)).length, 1);
  assert.deepEqual(context.included.map((entry) => entry.id), [stored.id]);

  assert.deepEqual(await all(client.memories.history(stored.id)), []);
  assert.equal((await client.memories.get(stored.id)).content, CONTENT);
  const updated = await client.memories.update(stored.id, { tags: ["deploy"], expires_at: null });
  assert.deepEqual([updated.tags, updated.expires_at], [["deploy"], null]);
  assert.equal((await client.memories.count()).count, 1);
  assert.equal((await client.memories.count({ category: "episodic" })).count, 0);
  assert.deepEqual((await all(client.memories.list({ tags: ["deploy"] }))).map((m) => m.id), [stored.id]);
  assert.deepEqual(await all(client.memories.list({ tags: ["billing"] })), []);

  const doomed = await client.memories.store({ content: "Ana leads billing.", category: "social" });
  assert.equal(await client.memories.delete(doomed.id), undefined);
  const gone = await rejection(all(client.memories.history(doomed.id)));
  assert.ok(gone instanceof NotFoundError);
  assert.deepEqual([gone.status, gone.code], [404, "memory_not_found"]);
  report("round-trip", { kept: stored.id, deleted: doomed.id });
});

test("errors carry the server's problem", live, async () => {
  const { key, foreignMemory } = fixture.errors;
  const refused = await rejection(clientOf(`${key}x`).memories.count());
  const direct = await rest(`${key}x`, "GET", "/memories/count");
  assert.ok(refused instanceof AuthenticationError && refused instanceof AuthError);
  assert.ok(refused instanceof SynthOrgError && refused instanceof Error);
  assert.deepEqual(
    [refused.name, refused.status, refused.code, refused.detail, refused.attempts],
    ["AuthenticationError", 401, direct.json.code, direct.json.detail, 1],
  );
  assert.equal(refused.code, "invalid_credentials");
  const malformed = await rejection(clientOf("wrong").memories.count());
  assert.deepEqual([malformed.status, malformed.code], [401, "malformed_credentials"]);

  const client = clientOf(key);
  const missing = await rejection(client.memories.get(foreignMemory));
  assert.ok(missing instanceof NotFoundError);
  assert.deepEqual(
    [missing.status, missing.code, missing.detail],
    [404, "memory_not_found", "No such memory."],
  );
  const invalid = await rejection(client.memories.store({ content: "x", category: "bogus" }));
  assert.ok(invalid instanceof ValidationError);
  assert.deepEqual([invalid.status, invalid.code, invalid.correlationId], [400, "validation_error", null]);
  assert.deepEqual(invalid.errors.map((e) => e.field), ["category"]);
  // a member the API does not declare (the types refuse it; plain JavaScript may send it)
  const undeclared = await rejection(
    client.memories.store({ content: "x", category: "semantic", colour: "blue" }),
  );
  assert.ok(undeclared instanceof ValidationError);
  assert.deepEqual(
    [undeclared.status, undeclared.code, undeclared.errors.map((e) => [e.field, e.code])],
    [400, "validation_error", [["colour", "unknown_field"]]],
  );
});

test("a 429 is sent again after its Retry-After, a bounded number of times", live, async () => {
  const { key } = fixture.limited;
  const recorder = recording();
  const client = clientOf(key, { maxRetries: 1, fetch: recorder.fetch });
  const first = await client.dreams.request();
  // Refused for a second (Retry-After: 1): accepted only if the client waited that long.
  const second = await client.dreams.request();
  assert.deepEqual(recorder.statuses, [202, 429, 202]);
  assert.notEqual(first.id, second.id);
  assert.equal((await client.dreams.get(first.id)).id, first.id);

  const once = await rejection(clientOf(key, { maxRetries: 0 }).dreams.request());
  assert.ok(once instanceof RateLimitedError);
  assert.deepEqual([once.status, once.code, once.attempts], [429, "dream_rate_limited", 1]);
  assert.ok(once.retryAfter > 0 && once.retryAfter <= 1, `retryAfter ${once.retryAfter}`);
  report("limited", { dreams: [first.id, second.id] });
});

test("lists and history iterate over every page, a page at a time", live, async () => {
  const { key, newestFirst, revised } = fixture.pager;
  const recorder = recording();
  const client = clientOf(key, { fetch: recorder.fetch });
  const listed = (await all(client.memories.list({ page_size: 2 }))).map((m) => m.id);
  assert.deepEqual(listed, newestFirst);
  assert.deepEqual(recorder.statuses, [200, 200, 200]); // pages of 2, 2, 1

  recorder.statuses.length = 0;
  for await (const memory of client.memories.list({ page_size: 2 })) {
    assert.equal(memory.id, newestFirst[0]);
    break; // the iterator stops: no further page is fetched
  }
  assert.deepEqual(recorder.statuses, [200]);

  recorder.statuses.length = 0;
  const revisions = await all(client.memories.history(revised, { page_size: 2 }));
  assert.deepEqual(revisions.map((r) => r.reason), ["r0", "r1", "r2"]);
  assert.deepEqual(revisions.map((r) => r.previous_content), fixture.pager.previousContents);
  assert.deepEqual(recorder.statuses, [200, 200]);
});

test("shared, org, executions, conversations and approvals against the server", live, async () => {
  const client = clientOf(fixture.resources.key);
  const published = await client.shared.publish({
    content: "The VPN is split-tunnel for the office network.",
    category: "semantic",
  });
  assert.deepEqual([published.stored, published.deduplicated], [true, false]);
  const hits = (await client.shared.search({ query: "VPN split-tunnel" })).results;
  assert.deepEqual(hits.map((h) => [h.memory.id, h.is_shared, h.score === h.combined]), [
    [published.id, true, true],
  ]);
  assert.equal(await client.shared.retract(published.id), undefined);

  const fact = await client.org.publish({
    content: "Branches are named after the ticket.",
    category: "convention",
    tags: ["git"],
  });
  assert.deepEqual(
    [fact.version, fact.content, fact.tags, fact.author.is_human],
    [1, "Branches are named after the ticket.", ["git"], false],
  );
  assert.deepEqual(await client.org.fact(fact.fact_id), fact);
  assert.deepEqual((await all(client.org.facts({ category: "convention" }))).map((f) => f.fact_id), [
    fact.fact_id,
  ]);
  const queried = await client.org.query({ context: "how are branches named", limit: 5 });
  assert.deepEqual(queried.results.map((f) => f.fact_id), [fact.fact_id]);
  const newer = await client.org.publish({
    content: "Branches are named after the ticket id.",
    category: "convention",
    fact_id: fact.fact_id,
    expected_version: 1,
  });
  assert.equal(newer.version, 2);
  const stale = await rejection(
    client.org.publish({ content: "x", category: "convention", fact_id: fact.fact_id, expected_version: 1 }),
  );
  assert.ok(stale instanceof ConflictError);
  assert.equal(stale.status, 409);
  const retracted = await client.org.retract(fact.fact_id, { reason: "moved to the wiki" });
  assert.notEqual(retracted.retracted_at, null);
  assert.deepEqual(
    (await client.org.history(fact.fact_id)).map((e) => [e.version, e.operation_type]),
    [[1, "PUBLISH"], [2, "PUBLISH"], [retracted.version, "RETRACT"]],
  );
  assert.deepEqual(await all(client.org.policies()), []);

  const accepted = await client.executions.report({
    outcome: "failed",
    task_title: "Deploy billing",
    error: { category: "timeout", message: "the deploy hung" },
    tool_calls: [{ name: "deploy", status: "timeout", duration_ms: 1200 }],
    duration_ms: 1500,
  });
  const execution = await client.executions.get(accepted.id);
  assert.deepEqual(
    [execution.id, execution.outcome, execution.task_title, execution.error.category],
    [accepted.id, "failed", "Deploy billing", "timeout"],
  );
  assert.deepEqual((await all(client.executions.list({ outcome: "failed" }))).map((r) => r.id), [
    accepted.id,
  ]);

  const flushed = await client.conversations.addMessages("chat-7", [
    { role: "user", content: "Where do invoices go?" },
    { role: "assistant", content: "To the billing inbox." },
  ]);
  assert.deepEqual(
    [flushed.conversation_id, flushed.accepted, flushed.first_seq, flushed.last_seq],
    ["chat-7", 2, 1, 2],
  );
  assert.deepEqual((await all(client.conversations.list())).map((c) => c.conversation_id), ["chat-7"]);
  const messages = await all(client.conversations.messages("chat-7", { page_size: 1 }));
  assert.deepEqual(messages.map((m) => [m.seq, m.role, m.content]), [
    [1, "user", "Where do invoices go?"],
    [2, "assistant", "To the billing inbox."],
  ]);
  const context = await client.conversations.context("chat-7", { token_budget: 500 });
  assert.deepEqual(context.messages.map((m) => m.content), messages.map((m) => m.content));
  assert.deepEqual(await all(client.conversations.extractions("chat-7")), []);

  const item = await client.approvals.request({
    action_type: "deploy",
    title: "Deploy billing on Friday",
    risk_level: "high",
    evidence: { change: "billing v2" },
  });
  assert.deepEqual([item.status, item.title, item.risk_level], ["pending", "Deploy billing on Friday", "high"]);
  assert.deepEqual((await all(client.approvals.list({ status: "pending" }))).map((i) => i.id), [item.id]);
  assert.equal((await client.approvals.get(item.id)).id, item.id);
  const early = await rejection(client.approvals.consume(item.id));
  assert.ok(early instanceof ConflictError);
  assert.equal(early.status, 409);
  report("resources", {
    fact: fact.fact_id,
    execution: accepted.id,
    approval: item.id,
    retracted: published.id,
    staleCode: stale.code,
    earlyCode: early.code,
  });
});
