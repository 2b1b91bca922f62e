/**
 * The API grouped by resource: `client.memories`, `client.shared`, `client.org`,
 * `client.executions`, `client.conversations`, `client.dreams`, `client.approvals`.
 *
 * Each method names its endpoint by the schema's path and method and sends only the members
 * given; a paginated list is an async iterator over every item of every page.
 */
import type { Transport } from "./transport.js";
import type * as t from "./types.js";
declare abstract class Resource {
    protected readonly transport: Transport;
    constructor(transport: Transport);
}
/** The calling agent's private memories. */
export declare class Memories extends Resource {
    /** Store a memory and return it, read back (`POST /memories`, then `GET /memories/{id}`):
     * a near duplicate returns the memory it matched (`deduplicated: true`); `null` when the
     * agent's memory level is `none` (nothing is stored). */
    store(input: t.StoreInput): Promise<t.StoredMemory | null>;
    /** One of the caller's memories. */
    get(id: string): Promise<t.Memory>;
    /** Change the members given (new text is re-embedded); `expires_at: null` removes the
     * expiry. Returns the memory. */
    update(id: string, changes: t.MemoryUpdate): Promise<t.Memory>;
    /** Delete a memory for good (audited). */
    delete(id: string): Promise<void>;
    /** Every matching memory, newest first, fetched a page at a time as you iterate. */
    list(filters?: t.MemoryFilters): AsyncGenerator<t.Memory, void, undefined>;
    /** How many live memories the caller has. */
    count(filters?: t.CountFilters): Promise<t.MemoryCount>;
    /** Hybrid search: `results` are hits with `memory` and `score`, best first. */
    search(input: t.SearchInput): Promise<t.SearchResponse>;
    /** Chat messages of the caller's memories for a prompt, within `token_budget`. */
    context(input: t.ContextInput): Promise<t.MemoryContext>;
    /** The memory's corrections, oldest first (the text each replaced, who, when and why). */
    history(id: string, options?: t.HistoryOptions): AsyncGenerator<t.MemoryRevision, void, undefined>;
}
/** The company's shared knowledge. */
export declare class Shared extends Resource {
    /** Publish shared knowledge (what the store did; the members are a memory's). */
    publish(input: t.SharedPublishInput): Promise<t.StoreResult>;
    /** Search the company's shared knowledge. */
    search(input: t.SharedSearchInput): Promise<t.SearchResponse>;
    /** Retract shared knowledge the caller published (others: 403). */
    retract(id: string): Promise<void>;
}
/** Org memory: facts (versioned, append-only) and core policies. */
export declare class Org extends Resource {
    /** Every live fact (as of a time), oldest first, a page at a time. */
    facts(filters?: t.FactFilters): AsyncGenerator<t.Fact, void, undefined>;
    fact(factId: string, options?: t.FactOptions): Promise<t.Fact>;
    /** Publish a fact, or (`fact_id`) a new version of one. */
    publish(input: t.FactPublishInput): Promise<t.Fact>;
    /** Facts relevant to `context`. */
    query(input?: t.FactQueryInput): Promise<t.FactQueryResult>;
    /** Retract a fact (`expected_version` guards against a newer version). */
    retract(factId: string, input?: t.FactRetractInput): Promise<t.Fact>;
    /** Every version of a fact, oldest first. */
    history(factId: string): Promise<t.LogEntry[]>;
    /** The core policies every agent's prompt carries, a page at a time. */
    policies(filters?: t.PolicyFilters): AsyncGenerator<t.Policy, void, undefined>;
}
/** Execution reports: what a task's run did, from which lessons are learnt. */
export declare class Executions extends Resource {
    /** Report an outcome; `error` is `{category, message}`, each tool call `{name, status,
     * error, duration_ms}`. */
    report(input: t.ExecutionReportInput): Promise<t.ExecutionReportAccepted>;
    /** Execution reports, newest first, a page at a time. */
    list(filters?: t.ExecutionFilters): AsyncGenerator<t.ExecutionReport, void, undefined>;
    get(id: string): Promise<t.ExecutionReport>;
}
/** Conversations: messages flushed as they happen, extracted into memories later. */
export declare class Conversations extends Resource {
    list(filters?: t.ConversationFilters): AsyncGenerator<t.Conversation, void, undefined>;
    /** Flush messages (`{role, content, name?, created_at?}`) of a conversation. */
    addMessages(conversationId: string, messages: t.FlushInput["messages"], options?: Omit<t.FlushInput, "messages">): Promise<t.FlushResult>;
    messages(conversationId: string, filters?: t.MessageFilters): AsyncGenerator<t.ConversationMessage, void, undefined>;
    /** The running summary and recent messages within `token_budget`. */
    context(conversationId: string, input: t.ConversationContextInput): Promise<t.ConversationContext>;
    extractions(conversationId: string, filters?: t.ExtractionFilters): AsyncGenerator<t.ExtractionRun, void, undefined>;
    extraction(conversationId: string, runId: string): Promise<t.ExtractionRunDetail>;
}
/** Deep dreams (the journal consolidated into the agent's core memory), on request. */
export declare class Dreams extends Resource {
    /** Ask for a dream now; rate-limited per agent and per company (429, retried after
     * `Retry-After`). */
    request(): Promise<t.DreamRequest>;
    get(requestId: string): Promise<t.DreamRequest>;
}
/** The approval queue, as the agent that asks: a human of the company decides. */
export declare class Approvals extends Resource {
    /** Ask a human to approve an action (the pending item). */
    request(input: t.ApprovalRequestInput): Promise<t.ApprovalItem>;
    /** The items the caller asked for, newest first, a page at a time. */
    list(filters?: t.ApprovalFilters): AsyncGenerator<t.ApprovalItem, void, undefined>;
    get(itemId: string): Promise<t.ApprovalItem>;
    /** Mark an approved item as applied (the requesting agent, once). */
    consume(itemId: string): Promise<t.ApprovalItem>;
}
export {};
