/**
 * Sending calls: the one place requests are built, retried, parsed and turned into errors.
 * A resource method describes its request by the schema's path and method; the transport
 * sends it over `fetch` (Node 20's global one unless the client is given another).
 */
import { RateLimitedError, UnavailableError, errorClass, } from "./errors.js";
export const VERSION = "0.1.0";
export const USER_AGENT = `synthorg-memory-typescript/${VERSION}`;
/** statuses retried (with the server's `Retry-After` when it sends one) */
export const RETRIED = new Set([429, 503]);
/** The members given (`undefined` means "not sent"; `null` is sent). */
export function present(values) {
    return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined));
}
function queryValue(value) {
    if (typeof value === "boolean") {
        return value ? "true" : "false";
    }
    if (Array.isArray(value)) {
        return value.map(String).join(",");
    }
    if (value instanceof Date) {
        return value.toISOString();
    }
    return String(value);
}
/** The `Retry-After` header in seconds (delta-seconds or an HTTP date), if any. */
export function retryAfter(response, now = Date.now()) {
    const header = response.headers.get("Retry-After")?.trim();
    if (!header) {
        return null;
    }
    if (/^\d+(\.\d+)?$/.test(header)) {
        return Number(header);
    }
    const when = Date.parse(header);
    if (Number.isNaN(when)) {
        return null;
    }
    return Math.max(0, (when - now) / 1000);
}
/** The error of an answer (problem+json, or whatever a proxy answered). */
export function problemError(response, text, attempts) {
    let body;
    try {
        const parsed = JSON.parse(text);
        body =
            parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
                ? parsed
                : { detail: text.slice(0, 500) };
    }
    catch {
        body = { detail: text.slice(0, 500) || response.statusText };
    }
    const Class = errorClass(response.status);
    const limited = Class === RateLimitedError || Class === UnavailableError;
    const detail = String(body["detail"] || body["title"] || "");
    return new Class(detail, {
        status: response.status,
        code: String(body["code"] || `http_${response.status}`),
        errors: Array.isArray(body["errors"]) ? body["errors"] : [],
        correlationId: body["correlation_id"] ??
            response.headers.get("X-Correlation-Id") ??
            null,
        body,
        attempts,
        retryAfter: limited ? retryAfter(response) : null,
    });
}
/** A failed fetch in words: Node's `TypeError: fetch failed` names its cause (`ECONNREFUSED`,
 * a timeout) only on `cause`. */
function describe(error) {
    if (!(error instanceof Error)) {
        return String(error);
    }
    const cause = error.cause;
    const why = cause instanceof Error ? ` (${cause.message})` : "";
    return `${error.name}: ${error.message}${why}`;
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export class Transport {
    baseUrl;
    #options;
    #headers;
    constructor(options) {
        if (!Number.isInteger(options.maxRetries) || options.maxRetries < 0) {
            throw new RangeError("maxRetries must be an integer, 0 or more");
        }
        if (!options.baseUrl) {
            throw new TypeError("baseUrl is required");
        }
        if (!options.apiKey) {
            throw new TypeError("apiKey is required");
        }
        this.baseUrl = options.baseUrl.replace(/\/+$/, "");
        this.#options = options;
        this.#headers = {
            Authorization: `Bearer ${options.apiKey}`,
            Accept: "application/json",
            "User-Agent": USER_AGENT,
        };
    }
    /** The URL of a call; `link`: a page's `next` link, followed on the client's own origin
     * only (the key never goes to a host a response named). */
    url(path, parts, link) {
        if (link !== undefined) {
            const next = new URL(link, this.baseUrl);
            return new URL(next.pathname + next.search, new URL(this.baseUrl).origin).toString();
        }
        const params = (parts.path ?? {});
        const filled = path.replace(/\{(\w+)\}/g, (_, name) => {
            const value = params[name];
            if (value === undefined || value === null || value === "") {
                throw new TypeError(`${path} needs ${name}`);
            }
            return encodeURIComponent(String(value));
        });
        const query = new URLSearchParams();
        for (const [key, value] of Object.entries((parts.query ?? {}))) {
            if (value !== undefined && value !== null) {
                query.set(key, queryValue(value));
            }
        }
        const search = query.toString();
        return this.baseUrl + filled + (search ? `?${search}` : "");
    }
    /** Milliseconds to wait before sending again, or `null`: do not retry this answer.
     *
     * Only 429 and 503 are retried (the request was not acted on), at most `maxRetries`
     * times, after the server's `Retry-After` (else 0.5 s, 1 s, 2 s, …), never waiting longer
     * than `maxRetryWaitMs`. */
    waitBeforeRetry(response, attempts) {
        if (!RETRIED.has(response.status) || attempts > this.#options.maxRetries) {
            return null;
        }
        const seconds = retryAfter(response) ?? 0.5 * 2 ** (attempts - 1);
        return Math.min(seconds * 1000, this.#options.maxRetryWaitMs);
    }
    async send(method, url, body) {
        const headers = { ...this.#headers };
        const init = { method: method.toUpperCase(), headers };
        if (body !== undefined) {
            headers["Content-Type"] = "application/json";
            init.body = JSON.stringify(body);
        }
        for (let attempts = 1;; attempts++) {
            let response;
            let text;
            try {
                response = await this.#options.fetch(url, {
                    ...init,
                    signal: AbortSignal.timeout(this.#options.timeoutMs),
                });
                const wait = this.waitBeforeRetry(response, attempts);
                if (wait !== null) {
                    await response.body?.cancel();
                    await sleep(wait);
                    continue;
                }
                text = await response.text(); // the timeout covers the body too
            }
            catch (error) {
                throw new UnavailableError(describe(error), {
                    code: "connection_error",
                    attempts,
                    cause: error,
                });
            }
            if (response.status >= 400) {
                throw problemError(response, text, attempts);
            }
            return response.status === 204 || !text ? undefined : JSON.parse(text);
        }
    }
    /** One call's answer. */
    async call(method, path, parts = {}) {
        const url = this.url(path, parts);
        return (await this.send(method, url, parts.body));
    }
    /** Every item of every page of a paginated list, fetched a page at a time as the caller
     * iterates (the answer's `next` link, until there is none). */
    async *pages(path, parts = {}) {
        let url = this.url(path, parts);
        for (;;) {
            const page = (await this.send("get", url, undefined));
            yield* page.results;
            if (!page.next) {
                return;
            }
            url = this.url(path, {}, page.next);
        }
    }
}
