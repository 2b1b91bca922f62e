/**
 * The API grouped by resource: `client.memories`, `client.shared`, `client.org`,
 * `client.executions`, `client.conversations`, `client.dreams`, `client.approvals`.
 *
 * Each method names its endpoint by the schema's path and method and sends only the members
 * given; a paginated list is an async iterator over every item of every page.
 */

import type { Transport } from "./transport.js";
import { present } from "./transport.js";
import type * as t from "./types.js";
import type { Schemas } from "./api.js";

abstract class Resource {
  constructor(protected readonly transport: Transport) {}
}

function withScores(response: Schemas["SearchResponse"]): t.SearchResponse {
  return {
    ...response,
    results: response.results.map((hit) => ({ ...hit, score: hit.combined })),
  };
}

/** The calling agent's private memories. */
export class Memories extends Resource {
  /** Store a memory and return it, read back (`POST /memories`, then `GET /memories/{id}`):
   * a near duplicate returns the memory it matched (`deduplicated: true`); `null` when the
   * agent's memory level is `none` (nothing is stored). */
  async store(input: t.StoreInput): Promise<t.StoredMemory | null> {
    const result = (await this.transport.call("post", "/api/v1/memories", {
      body: present(input),
    })) as t.StoreResult;
    if (result.id === null || result.id === undefined) {
      return null;
    }
    const memory = await this.get(result.id);
    return {
      ...memory,
      stored: result.stored,
      deduplicated: result.deduplicated,
      warnings: result.warnings ?? [],
    };
  }

  /** One of the caller's memories. */
  get(id: string): Promise<t.Memory> {
    return this.transport.call("get", "/api/v1/memories/{id}", { path: { id } });
  }

  /** Change the members given (new text is re-embedded); `expires_at: null` removes the
   * expiry. Returns the memory. */
  update(id: string, changes: t.MemoryUpdate): Promise<t.Memory> {
    return this.transport.call("patch", "/api/v1/memories/{id}", {
      path: { id },
      body: present(changes),
    });
  }

  /** Delete a memory for good (audited). */
  async delete(id: string): Promise<void> {
    await this.transport.call("delete", "/api/v1/memories/{id}", { path: { id } });
  }

  /** Every matching memory, newest first, fetched a page at a time as you iterate. */
  list(filters: t.MemoryFilters = {}): AsyncGenerator<t.Memory, void, undefined> {
    const { tags, ...rest } = filters;
    const query = present({ ...rest, tag: tags });
    return this.transport.pages("/api/v1/memories", { query });
  }

  /** How many live memories the caller has. */
  count(filters: t.CountFilters = {}): Promise<t.MemoryCount> {
    return this.transport.call("get", "/api/v1/memories/count", { query: present(filters) });
  }

  /** Hybrid search: `results` are hits with `memory` and `score`, best first. */
  async search(input: t.SearchInput): Promise<t.SearchResponse> {
    return withScores(
      await this.transport.call("post", "/api/v1/memories/search", { body: present(input) }),
    );
  }

  /** Chat messages of the caller's memories for a prompt, within `token_budget`. */
  context(input: t.ContextInput): Promise<t.MemoryContext> {
    return this.transport.call("post", "/api/v1/memories/context", { body: present(input) });
  }

  /** The memory's corrections, oldest first (the text each replaced, who, when and why). */
  history(
    id: string,
    options: t.HistoryOptions = {},
  ): AsyncGenerator<t.MemoryRevision, void, undefined> {
    return this.transport.pages("/api/v1/memories/{id}/history", {
      path: { id },
      query: present(options),
    });
  }
}

/** The company's shared knowledge. */
export class Shared extends Resource {
  /** Publish shared knowledge (what the store did; the members are a memory's). */
  publish(input: t.SharedPublishInput): Promise<t.StoreResult> {
    return this.transport.call("post", "/api/v1/shared", { body: present(input) });
  }

  /** Search the company's shared knowledge. */
  async search(input: t.SharedSearchInput): Promise<t.SearchResponse> {
    return withScores(
      await this.transport.call("post", "/api/v1/shared/search", { body: present(input) }),
    );
  }

  /** Retract shared knowledge the caller published (others: 403). */
  async retract(id: string): Promise<void> {
    await this.transport.call("delete", "/api/v1/shared/{id}", { path: { id } });
  }
}

/** Org memory: facts (versioned, append-only) and core policies. */
export class Org extends Resource {
  /** Every live fact (as of a time), oldest first, a page at a time. */
  facts(filters: t.FactFilters = {}): AsyncGenerator<t.Fact, void, undefined> {
    return this.transport.pages("/api/v1/org/facts", { query: present(filters) });
  }

  fact(factId: string, options: t.FactOptions = {}): Promise<t.Fact> {
    return this.transport.call("get", "/api/v1/org/facts/{fact_id}", {
      path: { fact_id: factId },
      query: present(options),
    });
  }

  /** Publish a fact, or (`fact_id`) a new version of one. */
  publish(input: t.FactPublishInput): Promise<t.Fact> {
    return this.transport.call("post", "/api/v1/org/facts", { body: present(input) });
  }

  /** Facts relevant to `context`. */
  query(input: t.FactQueryInput = {}): Promise<t.FactQueryResult> {
    return this.transport.call("post", "/api/v1/org/facts/query", { body: present(input) });
  }

  /** Retract a fact (`expected_version` guards against a newer version). */
  retract(factId: string, input: t.FactRetractInput = {}): Promise<t.Fact> {
    return this.transport.call("post", "/api/v1/org/facts/{fact_id}/retract", {
      path: { fact_id: factId },
      body: present(input),
    });
  }

  /** Every version of a fact, oldest first. */
  history(factId: string): Promise<t.LogEntry[]> {
    return this.transport.call("get", "/api/v1/org/facts/{fact_id}/history", {
      path: { fact_id: factId },
    });
  }

  /** The core policies every agent's prompt carries, a page at a time. */
  policies(filters: t.PolicyFilters = {}): AsyncGenerator<t.Policy, void, undefined> {
    return this.transport.pages("/api/v1/org/policies", { query: present(filters) });
  }
}

/** Execution reports: what a task's run did, from which lessons are learnt. */
export class Executions extends Resource {
  /** Report an outcome; `error` is `{category, message}`, each tool call `{name, status,
   * error, duration_ms}`. */
  report(input: t.ExecutionReportInput): Promise<t.ExecutionReportAccepted> {
    return this.transport.call("post", "/api/v1/executions", { body: present(input) });
  }

  /** Execution reports, newest first, a page at a time. */
  list(filters: t.ExecutionFilters = {}): AsyncGenerator<t.ExecutionReport, void, undefined> {
    return this.transport.pages("/api/v1/executions", { query: present(filters) });
  }

  get(id: string): Promise<t.ExecutionReport> {
    return this.transport.call("get", "/api/v1/executions/{id}", { path: { id } });
  }
}

/** Conversations: messages flushed as they happen, extracted into memories later. */
export class Conversations extends Resource {
  list(filters: t.ConversationFilters = {}): AsyncGenerator<t.Conversation, void, undefined> {
    return this.transport.pages("/api/v1/conversations", { query: present(filters) });
  }

  /** Flush messages (`{role, content, name?, created_at?}`) of a conversation. */
  addMessages(
    conversationId: string,
    messages: t.FlushInput["messages"],
    options: Omit<t.FlushInput, "messages"> = {},
  ): Promise<t.FlushResult> {
    return this.transport.call("post", "/api/v1/conversations/{conversation_id}/messages", {
      path: { conversation_id: conversationId },
      body: present({ ...options, messages }),
    });
  }

  messages(
    conversationId: string,
    filters: t.MessageFilters = {},
  ): AsyncGenerator<t.ConversationMessage, void, undefined> {
    return this.transport.pages("/api/v1/conversations/{conversation_id}/messages", {
      path: { conversation_id: conversationId },
      query: present(filters),
    });
  }

  /** The running summary and recent messages within `token_budget`. */
  context(
    conversationId: string,
    input: t.ConversationContextInput,
  ): Promise<t.ConversationContext> {
    return this.transport.call("post", "/api/v1/conversations/{conversation_id}/context", {
      path: { conversation_id: conversationId },
      body: present(input),
    });
  }

  extractions(
    conversationId: string,
    filters: t.ExtractionFilters = {},
  ): AsyncGenerator<t.ExtractionRun, void, undefined> {
    return this.transport.pages("/api/v1/conversations/{conversation_id}/extractions", {
      path: { conversation_id: conversationId },
      query: present(filters),
    });
  }

  extraction(conversationId: string, runId: string): Promise<t.ExtractionRunDetail> {
    return this.transport.call(
      "get",
      "/api/v1/conversations/{conversation_id}/extractions/{run_id}",
      { path: { conversation_id: conversationId, run_id: runId } },
    );
  }
}

/** Deep dreams (the journal consolidated into the agent's core memory), on request. */
export class Dreams extends Resource {
  /** Ask for a dream now; rate-limited per agent and per company (429, retried after
   * `Retry-After`). */
  request(): Promise<t.DreamRequest> {
    return this.transport.call("post", "/api/v1/dreams");
  }

  get(requestId: string): Promise<t.DreamRequest> {
    return this.transport.call("get", "/api/v1/dreams/requests/{request_id}", {
      path: { request_id: requestId },
    });
  }
}

/** The approval queue, as the agent that asks: a human of the company decides. */
export class Approvals extends Resource {
  /** Ask a human to approve an action (the pending item). */
  request(input: t.ApprovalRequestInput): Promise<t.ApprovalItem> {
    return this.transport.call("post", "/api/v1/approvals", { body: present(input) });
  }

  /** The items the caller asked for, newest first, a page at a time. */
  list(filters: t.ApprovalFilters = {}): AsyncGenerator<t.ApprovalItem, void, undefined> {
    return this.transport.pages("/api/v1/approvals", { query: present(filters) });
  }

  get(itemId: string): Promise<t.ApprovalItem> {
    return this.transport.call("get", "/api/v1/approvals/{item_id}", {
      path: { item_id: itemId },
    });
  }

  /** Mark an approved item as applied (the requesting agent, once). */
  consume(itemId: string): Promise<t.ApprovalItem> {
    return this.transport.call("post", "/api/v1/approvals/{item_id}/consume", {
      path: { item_id: itemId },
    });
  }
}
