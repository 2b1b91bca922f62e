/**
 * The served OpenAPI schema as types: an operation's path parameters, query parameters, JSON
 * body and success answer, looked up by path and method in the generated `schema.ts`. A
 * resource method names its endpoint by the schema's path, so a path, a member or a field the
 * API drops stops the client from compiling (`npm run typecheck`).
 */

import type { components, paths } from "./schema.js";

export type Schemas = components["schemas"];
export type Method = "get" | "post" | "patch" | "put" | "delete";
export type Path = keyof paths;

type Operation<P extends Path, M extends Method> = NonNullable<paths[P][M]>;

/** The JSON body the operation takes. */
export type BodyOf<P extends Path, M extends Method> =
  Operation<P, M> extends { requestBody?: { content: { "application/json": infer B } } }
    ? B
    : never;

/** The operation's query parameters. */
export type QueryOf<P extends Path, M extends Method> =
  Operation<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/** The operation's path parameters (`{id: string}`). */
export type PathParamsOf<P extends Path, M extends Method> =
  Operation<P, M> extends { parameters: { path: infer A } } ? A : never;

type JsonOf<R> = R extends { content: { "application/json": infer J } } ? J : never;

/** The JSON of the operation's success answer (`undefined`: it answers without a body). */
export type ResultOf<P extends Path, M extends Method> =
  Operation<P, M> extends { responses: infer R }
    ? {
        [S in keyof R]: S extends 200 | 201 | 202 | 204
          ? [JsonOf<R[S]>] extends [never]
            ? undefined
            : JsonOf<R[S]>
          : never;
      }[keyof R]
    : never;

/** An item of a paginated answer (`{next, results}`). */
export type ItemOf<R> = R extends { results: (infer I)[] } ? I : never;

/** The operations a paginated list may be read from (a GET whose answer has `results`). */
export type PagedPath = {
  [P in Path]: ItemOf<ResultOf<P, "get">> extends never ? never : P;
}[Path];
