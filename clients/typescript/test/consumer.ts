// What a TypeScript caller gets: the package by its name (self-reference, through
// package.json's "exports" and dist/*.d.ts), typed results, and compile errors for what the
// API does not take. Compiled, never run: `npm run typecheck` (and the drift test).

import {
  type Memory,
  MemoryClient,
  NotFoundError,
  type SearchHit,
  type StoredMemory,
} from "synthorg-memory";

const client = new MemoryClient({ baseUrl: "http://127.0.0.1:8000", apiKey: "key" });

export async function roundTrip(): Promise<string[]> {
  const stored: StoredMemory | null = await client.memories.store({
    content: "Billing deploys every Friday.",
    category: "semantic",
    tags: ["deploy"],
  });
  const hits: SearchHit[] = (await client.memories.search({ query: "deploy", limit: 3 })).results;
  const first: Memory | undefined = hits[0]?.memory;
  const messages = (await client.memories.context({ query: "deploy", token_budget: 800 })).messages;
  const reasons: string[] = [];
  for await (const revision of client.memories.history(stored?.id ?? "")) {
    reasons.push(revision.reason);
  }
  try {
    await client.memories.get(first?.id ?? "");
  } catch (error) {
    if (error instanceof NotFoundError) {
      reasons.push(error.code, error.detail, String(error.status));
    }
  }
  return [...reasons, ...messages.map((message) => message.content)];
}

export async function refused(): Promise<void> {
  // @ts-expect-error: `colour` is not a member the API declares
  await client.memories.store({ content: "x", category: "semantic", colour: "blue" });
  // @ts-expect-error: not a memory category
  await client.memories.store({ content: "x", category: "bogus" });
  // @ts-expect-error: a search needs no `token_budget`; a context call does
  await client.memories.context({ query: "x" });
  // @ts-expect-error: pages are the iterator's business
  client.memories.list({ page: 2 });
}
