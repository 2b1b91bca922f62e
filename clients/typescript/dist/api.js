/**
 * The served OpenAPI schema as types: an operation's path parameters, query parameters, JSON
 * body and success answer, looked up by path and method in the generated `schema.ts`. A
 * resource method names its endpoint by the schema's path, so a path, a member or a field the
 * API drops stops the client from compiling (`npm run typecheck`).
 */
export {};
