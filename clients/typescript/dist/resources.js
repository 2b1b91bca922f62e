/**
 * The API grouped by resource: `client.memories`, `client.shared`, `client.org`,
 * `client.executions`, `client.conversations`, `client.dreams`, `client.approvals`.
 *
 * Each method names its endpoint by the schema's path and method and sends only the members
 * given; a paginated list is an async iterator over every item of every page.
 */
import { present } from "./transport.js";
class Resource {
    transport;
    constructor(transport) {
        this.transport = transport;
    }
}
function withScores(response) {
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
    async store(input) {
        const result = (await this.transport.call("post", "/api/v1/memories", {
            body: present(input),
        }));
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
    get(id) {
        return this.transport.call("get", "/api/v1/memories/{id}", { path: { id } });
    }
    /** Change the members given (new text is re-embedded); `expires_at: null` removes the
     * expiry. Returns the memory. */
    update(id, changes) {
        return this.transport.call("patch", "/api/v1/memories/{id}", {
            path: { id },
            body: present(changes),
        });
    }
    /** Delete a memory for good (audited). */
    async delete(id) {
        await this.transport.call("delete", "/api/v1/memories/{id}", { path: { id } });
    }
    /** Every matching memory, newest first, fetched a page at a time as you iterate. */
    list(filters = {}) {
        const { tags, ...rest } = filters;
        const query = present({ ...rest, tag: tags });
        return this.transport.pages("/api/v1/memories", { query });
    }
    /** How many live memories the caller has. */
    count(filters = {}) {
        return this.transport.call("get", "/api/v1/memories/count", { query: present(filters) });
    }
    /** Hybrid search: `results` are hits with `memory` and `score`, best first. */
    async search(input) {
        return withScores(await this.transport.call("post", "/api/v1/memories/search", { body: present(input) }));
    }
    /** Chat messages of the caller's memories for a prompt, within `token_budget`. */
    context(input) {
        return this.transport.call("post", "/api/v1/memories/context", { body: present(input) });
    }
    /** The memory's corrections, oldest first (the text each replaced, who, when and why). */
    history(id, options = {}) {
        return this.transport.pages("/api/v1/memories/{id}/history", {
            path: { id },
            query: present(options),
        });
    }
}
/** The company's shared knowledge. */
export class Shared extends Resource {
    /** Publish shared knowledge (what the store did; the members are a memory's). */
    publish(input) {
        return this.transport.call("post", "/api/v1/shared", { body: present(input) });
    }
    /** Search the company's shared knowledge. */
    async search(input) {
        return withScores(await this.transport.call("post", "/api/v1/shared/search", { body: present(input) }));
    }
    /** Retract shared knowledge the caller published (others: 403). */
    async retract(id) {
        await this.transport.call("delete", "/api/v1/shared/{id}", { path: { id } });
    }
}
/** Org memory: facts (versioned, append-only) and core policies. */
export class Org extends Resource {
    /** Every live fact (as of a time), oldest first, a page at a time. */
    facts(filters = {}) {
        return this.transport.pages("/api/v1/org/facts", { query: present(filters) });
    }
    fact(factId, options = {}) {
        return this.transport.call("get", "/api/v1/org/facts/{fact_id}", {
            path: { fact_id: factId },
            query: present(options),
        });
    }
    /** Publish a fact, or (`fact_id`) a new version of one. */
    publish(input) {
        return this.transport.call("post", "/api/v1/org/facts", { body: present(input) });
    }
    /** Facts relevant to `context`. */
    query(input = {}) {
        return this.transport.call("post", "/api/v1/org/facts/query", { body: present(input) });
    }
    /** Retract a fact (`expected_version` guards against a newer version). */
    retract(factId, input = {}) {
        return this.transport.call("post", "/api/v1/org/facts/{fact_id}/retract", {
            path: { fact_id: factId },
            body: present(input),
        });
    }
    /** Every version of a fact, oldest first. */
    history(factId) {
        return this.transport.call("get", "/api/v1/org/facts/{fact_id}/history", {
            path: { fact_id: factId },
        });
    }
    /** The core policies every agent's prompt carries, a page at a time. */
    policies(filters = {}) {
        return this.transport.pages("/api/v1/org/policies", { query: present(filters) });
    }
}
/** Execution reports: what a task's run did, from which lessons are learnt. */
export class Executions extends Resource {
    /** Report an outcome; `error` is `{category, message}`, each tool call `{name, status,
     * error, duration_ms}`. */
    report(input) {
        return this.transport.call("post", "/api/v1/executions", { body: present(input) });
    }
    /** Execution reports, newest first, a page at a time. */
    list(filters = {}) {
        return this.transport.pages("/api/v1/executions", { query: present(filters) });
    }
    get(id) {
        return this.transport.call("get", "/api/v1/executions/{id}", { path: { id } });
    }
}
/** Conversations: messages flushed as they happen, extracted into memories later. */
export class Conversations extends Resource {
    list(filters = {}) {
        return this.transport.pages("/api/v1/conversations", { query: present(filters) });
    }
    /** Flush messages (`{role, content, name?, created_at?}`) of a conversation. */
    addMessages(conversationId, messages, options = {}) {
        return this.transport.call("post", "/api/v1/conversations/{conversation_id}/messages", {
            path: { conversation_id: conversationId },
            body: present({ ...options, messages }),
        });
    }
    messages(conversationId, filters = {}) {
        return this.transport.pages("/api/v1/conversations/{conversation_id}/messages", {
            path: { conversation_id: conversationId },
            query: present(filters),
        });
    }
    /** The running summary and recent messages within `token_budget`. */
    context(conversationId, input) {
        return this.transport.call("post", "/api/v1/conversations/{conversation_id}/context", {
            path: { conversation_id: conversationId },
            body: present(input),
        });
    }
    extractions(conversationId, filters = {}) {
        return this.transport.pages("/api/v1/conversations/{conversation_id}/extractions", {
            path: { conversation_id: conversationId },
            query: present(filters),
        });
    }
    extraction(conversationId, runId) {
        return this.transport.call("get", "/api/v1/conversations/{conversation_id}/extractions/{run_id}", { path: { conversation_id: conversationId, run_id: runId } });
    }
}
/** Deep dreams (the journal consolidated into the agent's core memory), on request. */
export class Dreams extends Resource {
    /** Ask for a dream now; rate-limited per agent and per company (429, retried after
     * `Retry-After`). */
    request() {
        return this.transport.call("post", "/api/v1/dreams");
    }
    get(requestId) {
        return this.transport.call("get", "/api/v1/dreams/requests/{request_id}", {
            path: { request_id: requestId },
        });
    }
}
/** The approval queue, as the agent that asks: a human of the company decides. */
export class Approvals extends Resource {
    /** Ask a human to approve an action (the pending item). */
    request(input) {
        return this.transport.call("post", "/api/v1/approvals", { body: present(input) });
    }
    /** The items the caller asked for, newest first, a page at a time. */
    list(filters = {}) {
        return this.transport.pages("/api/v1/approvals", { query: present(filters) });
    }
    get(itemId) {
        return this.transport.call("get", "/api/v1/approvals/{item_id}", {
            path: { item_id: itemId },
        });
    }
    /** Mark an approved item as applied (the requesting agent, once). */
    consume(itemId) {
        return this.transport.call("post", "/api/v1/approvals/{item_id}/consume", {
            path: { item_id: itemId },
        });
    }
}
