/**
 * The TypeScript client of the SynthOrg Memory REST API (ESM, no runtime dependencies).
 *
 *     import { MemoryClient } from "synthorg-memory";
 *     const client = new MemoryClient({ baseUrl: "http://127.0.0.1:8000", apiKey: KEY });
 *     await client.memories.store({ content: "Billing deploys on Fridays.", category: "semantic" });
 */
import { Approvals, Conversations, Dreams, Executions, Memories, Org, Shared, } from "./resources.js";
import { Transport } from "./transport.js";
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RETRIES = 3;
export const DEFAULT_MAX_RETRY_WAIT_MS = 60_000;
/** The API as an agent (its API key), grouped by resource. */
export class MemoryClient {
    /** the caller's private memories */
    memories;
    /** the company's shared knowledge */
    shared;
    /** org facts and core policies */
    org;
    /** execution reports */
    executions;
    /** conversations and their extraction runs */
    conversations;
    /** deep dreams on request */
    dreams;
    /** approval items the agent asks for */
    approvals;
    constructor(options) {
        const fetcher = options.fetch ?? globalThis.fetch;
        if (typeof fetcher !== "function") {
            throw new TypeError("no fetch: Node 20 or later has one, or pass options.fetch");
        }
        const transport = new Transport({
            baseUrl: options.baseUrl,
            apiKey: options.apiKey,
            timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
            maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
            maxRetryWaitMs: options.maxRetryWaitMs ?? DEFAULT_MAX_RETRY_WAIT_MS,
            fetch: fetcher,
        });
        this.memories = new Memories(transport);
        this.shared = new Shared(transport);
        this.org = new Org(transport);
        this.executions = new Executions(transport);
        this.conversations = new Conversations(transport);
        this.dreams = new Dreams(transport);
        this.approvals = new Approvals(transport);
    }
}
export { AuthError, AuthenticationError, ConflictError, NotFoundError, PermissionDeniedError, RateLimitedError, ServerError, SynthOrgError, UnavailableError, ValidationError, } from "./errors.js";
export { VERSION } from "./transport.js";
