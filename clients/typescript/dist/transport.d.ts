/**
 * Sending calls: the one place requests are built, retried, parsed and turned into errors.
 * A resource method describes its request by the schema's path and method; the transport
 * sends it over `fetch` (Node 20's global one unless the client is given another).
 */
import type { BodyOf, ItemOf, Method, PagedPath, Path, PathParamsOf, QueryOf, ResultOf } from "./api.js";
import { SynthOrgError } from "./errors.js";
export declare const VERSION = "0.1.0";
export declare const USER_AGENT = "synthorg-memory-typescript/0.1.0";
/** statuses retried (with the server's `Retry-After` when it sends one) */
export declare const RETRIED: ReadonlySet<number>;
export interface TransportOptions {
    baseUrl: string;
    apiKey: string;
    /** milliseconds a request may take before it fails (`connection_error`) */
    timeoutMs: number;
    /** how many times a 429 or 503 answer is sent again (0: never) */
    maxRetries: number;
    /** the longest single wait before a retry, in milliseconds */
    maxRetryWaitMs: number;
    fetch: typeof fetch;
}
/** What a call sends besides its method and path. */
export interface CallParts<P extends Path, M extends Method> {
    path?: PathParamsOf<P, M>;
    query?: QueryOf<P, M>;
    body?: BodyOf<P, M>;
}
/** The members given (`undefined` means "not sent"; `null` is sent). */
export declare function present<T extends object>(values: T): T;
/** The `Retry-After` header in seconds (delta-seconds or an HTTP date), if any. */
export declare function retryAfter(response: Response, now?: number): number | null;
/** The error of an answer (problem+json, or whatever a proxy answered). */
export declare function problemError(response: Response, text: string, attempts: number): SynthOrgError;
export declare class Transport {
    #private;
    readonly baseUrl: string;
    constructor(options: TransportOptions);
    /** The URL of a call; `link`: a page's `next` link, followed on the client's own origin
     * only (the key never goes to a host a response named). */
    url(path: string, parts: CallParts<Path, Method>, link?: string): string;
    /** Milliseconds to wait before sending again, or `null`: do not retry this answer.
     *
     * Only 429 and 503 are retried (the request was not acted on), at most `maxRetries`
     * times, after the server's `Retry-After` (else 0.5 s, 1 s, 2 s, …), never waiting longer
     * than `maxRetryWaitMs`. */
    waitBeforeRetry(response: Response, attempts: number): number | null;
    send(method: Method, url: string, body: unknown): Promise<unknown>;
    /** One call's answer. */
    call<P extends Path, M extends Method>(method: M, path: P, parts?: CallParts<P, M>): Promise<ResultOf<P, M>>;
    /** Every item of every page of a paginated list, fetched a page at a time as the caller
     * iterates (the answer's `next` link, until there is none). */
    pages<P extends PagedPath>(path: P, parts?: CallParts<P, "get">): AsyncGenerator<ItemOf<ResultOf<P, "get">>, void, undefined>;
}
