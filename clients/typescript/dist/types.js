/**
 * The API's answers and requests by name: aliases of the generated `schema.ts` (the served
 * OpenAPI schema), so they change when the API does. Ids are strings, timestamps ISO 8601
 * strings.
 */
export {};
