/**
 * The errors the client throws: one class per family of problem+json `code`.
 *
 * Every error the API answers is `application/problem+json`: `{type, title, status, detail,
 * code, errors: [{field, message, code}]}` plus members of its own (a 500 carries
 * `correlation_id`, the id its traceback is logged under on the server). The class is chosen
 * by the HTTP status, which the API ties to the family of the code; the exact `code` is on
 * the error.
 */
/** One per-field problem of a refused request. */
export interface FieldError {
    field: string;
    message: string;
    code: string;
    [member: string]: unknown;
}
export interface SynthOrgErrorInit {
    /** the HTTP status (`null`: the server could not be reached) */
    status?: number | null;
    code?: string;
    errors?: FieldError[];
    correlationId?: string | null;
    body?: Record<string, unknown>;
    attempts?: number;
    retryAfter?: number | null;
    cause?: unknown;
}
/** An error answered by the API (or no answer at all: {@link UnavailableError}). */
export declare class SynthOrgError extends Error {
    /** the HTTP status (`null`: the server could not be reached) */
    readonly status: number | null;
    /** the stable, machine-readable problem code (`memory_not_found`, …) */
    readonly code: string;
    readonly detail: string;
    /** per-field errors: `[{field, message, code}]` (empty when none) */
    readonly errors: FieldError[];
    /** the id the server logged the failure under (500s), to quote to the operator */
    readonly correlationId: string | null;
    /** the whole problem body, extra members included */
    readonly body: Record<string, unknown>;
    /** how many requests were sent (more than 1 after retries) */
    readonly attempts: number;
    constructor(detail: string, init?: SynthOrgErrorInit);
}
/** 401 or 403: the key is missing, wrong or revoked, or the caller may not do this. */
export declare class AuthError extends SynthOrgError {
}
/** 401: no key, a malformed key, or a key that is wrong or revoked. */
export declare class AuthenticationError extends AuthError {
}
/** 403: the caller is known but may not do this (`agents_only`, …). */
export declare class PermissionDeniedError extends AuthError {
}
/** 404: nothing by that id is visible to the caller (or the path does not exist). */
export declare class NotFoundError extends SynthOrgError {
}
/** 400, 413 or 422: the request was refused as invalid; `errors` names the fields. */
export declare class ValidationError extends SynthOrgError {
}
/** 409: the request conflicts with the current state (a superseded memory, a version). */
export declare class ConflictError extends SynthOrgError {
}
/** 429: too many requests; `retryAfter` is the wait the server asked for, in seconds. */
export declare class RateLimitedError extends SynthOrgError {
    readonly retryAfter: number | null;
    constructor(detail: string, init?: SynthOrgErrorInit);
}
/** 502, 503 or 504, or no answer at all (`status` `null`, code `connection_error`). */
export declare class UnavailableError extends SynthOrgError {
    readonly retryAfter: number | null;
    constructor(detail: string, init?: SynthOrgErrorInit);
}
/** 500 (or another 5xx): a bug on the server; quote `correlationId` when reporting. */
export declare class ServerError extends SynthOrgError {
}
type ErrorClass = new (detail: string, init?: SynthOrgErrorInit) => SynthOrgError;
/** The error class of an answer with `status`. */
export declare function errorClass(status: number): ErrorClass;
export {};
