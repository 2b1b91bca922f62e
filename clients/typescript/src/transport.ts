/**
 * Sending calls: the one place requests are built, retried, parsed and turned into errors.
 * A resource method describes its request by the schema's path and method; the transport
 * sends it over `fetch` (Node 20's global one unless the client is given another).
 */

import type {
  BodyOf,
  ItemOf,
  Method,
  PagedPath,
  Path,
  PathParamsOf,
  QueryOf,
  ResultOf,
} from "./api.js";
import {
  type FieldError,
  RateLimitedError,
  SynthOrgError,
  UnavailableError,
  errorClass,
} from "./errors.js";

export const VERSION = "0.1.0";
export const USER_AGENT = `synthorg-memory-typescript/${VERSION}`;
/** statuses retried (with the server's `Retry-After` when it sends one) */
export const RETRIED: ReadonlySet<number> = new Set([429, 503]);

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

type Json = Record<string, unknown>;

/** The members given (`undefined` means "not sent"; `null` is sent). */
export function present<T extends object>(values: T): T {
  return Object.fromEntries(
    Object.entries(values).filter(([, value]) => value !== undefined),
  ) as T;
}

function queryValue(value: unknown): string {
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
export function retryAfter(response: Response, now: number = Date.now()): number | null {
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
export function problemError(response: Response, text: string, attempts: number): SynthOrgError {
  let body: Json;
  try {
    const parsed: unknown = JSON.parse(text);
    body =
      parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
        ? (parsed as Json)
        : { detail: text.slice(0, 500) };
  } catch {
    body = { detail: text.slice(0, 500) || response.statusText };
  }
  const Class = errorClass(response.status);
  const limited = Class === RateLimitedError || Class === UnavailableError;
  const detail = String(body["detail"] || body["title"] || "");
  return new Class(detail, {
    status: response.status,
    code: String(body["code"] || `http_${response.status}`),
    errors: Array.isArray(body["errors"]) ? (body["errors"] as FieldError[]) : [],
    correlationId:
      (body["correlation_id"] as string | undefined) ??
      response.headers.get("X-Correlation-Id") ??
      null,
    body,
    attempts,
    retryAfter: limited ? retryAfter(response) : null,
  });
}

/** A failed fetch in words: Node's `TypeError: fetch failed` names its cause (`ECONNREFUSED`,
 * a timeout) only on `cause`. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) {
    return String(error);
  }
  const cause = error.cause;
  const why = cause instanceof Error ? ` (${cause.message})` : "";
  return `${error.name}: ${error.message}${why}`;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class Transport {
  readonly baseUrl: string;
  readonly #options: TransportOptions;
  readonly #headers: Record<string, string>;

  constructor(options: TransportOptions) {
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
  url(path: string, parts: CallParts<Path, Method>, link?: string): string {
    if (link !== undefined) {
      const next = new URL(link, this.baseUrl);
      return new URL(next.pathname + next.search, new URL(this.baseUrl).origin).toString();
    }
    const params = (parts.path ?? {}) as Record<string, unknown>;
    const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = params[name];
      if (value === undefined || value === null || value === "") {
        throw new TypeError(`${path} needs ${name}`);
      }
      return encodeURIComponent(String(value));
    });
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries((parts.query ?? {}) as Record<string, unknown>)) {
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
  waitBeforeRetry(response: Response, attempts: number): number | null {
    if (!RETRIED.has(response.status) || attempts > this.#options.maxRetries) {
      return null;
    }
    const seconds = retryAfter(response) ?? 0.5 * 2 ** (attempts - 1);
    return Math.min(seconds * 1000, this.#options.maxRetryWaitMs);
  }

  async send(method: Method, url: string, body: unknown): Promise<unknown> {
    const headers: Record<string, string> = { ...this.#headers };
    const init: RequestInit = { method: method.toUpperCase(), headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    for (let attempts = 1; ; attempts++) {
      let response: Response;
      let text: string;
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
      } catch (error) {
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
  async call<P extends Path, M extends Method>(
    method: M,
    path: P,
    parts: CallParts<P, M> = {},
  ): Promise<ResultOf<P, M>> {
    const url = this.url(path, parts as CallParts<Path, Method>);
    return (await this.send(method, url, parts.body)) as ResultOf<P, M>;
  }

  /** Every item of every page of a paginated list, fetched a page at a time as the caller
   * iterates (the answer's `next` link, until there is none). */
  async *pages<P extends PagedPath>(
    path: P,
    parts: CallParts<P, "get"> = {},
  ): AsyncGenerator<ItemOf<ResultOf<P, "get">>, void, undefined> {
    let url = this.url(path, parts as CallParts<Path, Method>);
    for (;;) {
      const page = (await this.send("get", url, undefined)) as {
        next?: string | null;
        results: ItemOf<ResultOf<P, "get">>[];
      };
      yield* page.results;
      if (!page.next) {
        return;
      }
      url = this.url(path, {}, page.next);
    }
  }
}
