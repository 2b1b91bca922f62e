/**
 * The errors the client throws: one class per family of problem+json `code`.
 *
 * Every error the API answers is `application/problem+json`: `{type, title, status, detail,
 * code, errors: [{field, message, code}]}` plus members of its own (a 500 carries
 * `correlation_id`, the id its traceback is logged under on the server). The class is chosen
 * by the HTTP status, which the API ties to the family of the code; the exact `code` is on
 * the error.
 */
/** An error answered by the API (or no answer at all: {@link UnavailableError}). */
export class SynthOrgError extends Error {
    /** the HTTP status (`null`: the server could not be reached) */
    status;
    /** the stable, machine-readable problem code (`memory_not_found`, …) */
    code;
    detail;
    /** per-field errors: `[{field, message, code}]` (empty when none) */
    errors;
    /** the id the server logged the failure under (500s), to quote to the operator */
    correlationId;
    /** the whole problem body, extra members included */
    body;
    /** how many requests were sent (more than 1 after retries) */
    attempts;
    constructor(detail, init = {}) {
        const status = init.status ?? null;
        const code = init.code ?? "error";
        super(status !== null ? `${status} ${code}: ${detail}` : `${code}: ${detail}`, {
            cause: init.cause,
        });
        this.name = new.target.name;
        this.status = status;
        this.code = code;
        this.detail = detail;
        this.errors = init.errors ?? [];
        this.correlationId = init.correlationId ?? null;
        this.body = init.body ?? {};
        this.attempts = init.attempts ?? 1;
    }
}
/** 401 or 403: the key is missing, wrong or revoked, or the caller may not do this. */
export class AuthError extends SynthOrgError {
}
/** 401: no key, a malformed key, or a key that is wrong or revoked. */
export class AuthenticationError extends AuthError {
}
/** 403: the caller is known but may not do this (`agents_only`, …). */
export class PermissionDeniedError extends AuthError {
}
/** 404: nothing by that id is visible to the caller (or the path does not exist). */
export class NotFoundError extends SynthOrgError {
}
/** 400, 413 or 422: the request was refused as invalid; `errors` names the fields. */
export class ValidationError extends SynthOrgError {
}
/** 409: the request conflicts with the current state (a superseded memory, a version). */
export class ConflictError extends SynthOrgError {
}
/** 429: too many requests; `retryAfter` is the wait the server asked for, in seconds. */
export class RateLimitedError extends SynthOrgError {
    retryAfter;
    constructor(detail, init = {}) {
        super(detail, init);
        this.retryAfter = init.retryAfter ?? null;
    }
}
/** 502, 503 or 504, or no answer at all (`status` `null`, code `connection_error`). */
export class UnavailableError extends SynthOrgError {
    retryAfter;
    constructor(detail, init = {}) {
        super(detail, init);
        this.retryAfter = init.retryAfter ?? null;
    }
}
/** 500 (or another 5xx): a bug on the server; quote `correlationId` when reporting. */
export class ServerError extends SynthOrgError {
}
const BY_STATUS = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: ValidationError,
    422: ValidationError,
    429: RateLimitedError,
    502: UnavailableError,
    503: UnavailableError,
    504: UnavailableError,
};
/** The error class of an answer with `status`. */
export function errorClass(status) {
    const known = BY_STATUS[status];
    if (known !== undefined) {
        return known;
    }
    return status >= 500 && status !== 501 ? ServerError : SynthOrgError;
}
