/**
 * The TypeScript client of the SynthOrg Memory REST API (ESM, no runtime dependencies).
 *
 *     import { MemoryClient } from "synthorg-memory";
 *     const client = new MemoryClient({ baseUrl: "http://127.0.0.1:8000", apiKey: KEY });
 *     await client.memories.store({ content: "Billing deploys on Fridays.", category: "semantic" });
 */
import { Approvals, Conversations, Dreams, Executions, Memories, Org, Shared } from "./resources.js";
export declare const DEFAULT_TIMEOUT_MS = 30000;
export declare const DEFAULT_MAX_RETRIES = 3;
export declare const DEFAULT_MAX_RETRY_WAIT_MS = 60000;
export interface MemoryClientOptions {
    /** the server's root, e.g. `http://127.0.0.1:8000` (the client adds `/api/v1/…`) */
    baseUrl: string;
    /** the agent's API key */
    apiKey: string;
    /** how long one request may take, in milliseconds (default 30 000) */
    timeoutMs?: number;
    /** how many times a 429 or 503 answer is sent again (default 3; 0: never) */
    maxRetries?: number;
    /** the longest single wait before a retry, in milliseconds (default 60 000) */
    maxRetryWaitMs?: number;
    /** a `fetch` of yours (proxies, certificates, instrumentation); default the global one */
    fetch?: typeof fetch;
}
/** The API as an agent (its API key), grouped by resource. */
export declare class MemoryClient {
    /** the caller's private memories */
    readonly memories: Memories;
    /** the company's shared knowledge */
    readonly shared: Shared;
    /** org facts and core policies */
    readonly org: Org;
    /** execution reports */
    readonly executions: Executions;
    /** conversations and their extraction runs */
    readonly conversations: Conversations;
    /** deep dreams on request */
    readonly dreams: Dreams;
    /** approval items the agent asks for */
    readonly approvals: Approvals;
    constructor(options: MemoryClientOptions);
}
export { AuthError, AuthenticationError, ConflictError, type FieldError, NotFoundError, PermissionDeniedError, RateLimitedError, ServerError, SynthOrgError, UnavailableError, ValidationError, } from "./errors.js";
export { VERSION } from "./transport.js";
export type { components, paths } from "./schema.js";
export type * from "./types.js";
