/**
 * The API's answers and requests by name: aliases of the generated `schema.ts` (the served
 * OpenAPI schema), so they change when the API does. Ids are strings, timestamps ISO 8601
 * strings.
 */

import type { BodyOf, QueryOf, Schemas } from "./api.js";

export type Memory = Schemas["Memory"];
export type StoreResult = Schemas["StoreResult"];
export type StoreWarning = NonNullable<StoreResult["warnings"]>[number];
/** The memory a store wrote (or, deduplicated, the one it matched), read back, with what
 * the store said about it. */
export type StoredMemory = Memory & {
  readonly stored: boolean;
  readonly deduplicated: boolean;
  readonly warnings: StoreWarning[];
};
/** A search hit; `score` is its fused score (`combined`), the one results are ordered by. */
export type SearchHit = Schemas["SearchHit"] & { readonly score: number };
export type SearchResponse = Omit<Schemas["SearchResponse"], "results"> & {
  results: SearchHit[];
};
export type MemoryContext = Schemas["MemoryContext"];
export type MemoryCount = Schemas["MemoryCount"];
export type MemoryRevision = Schemas["MemoryRevision"];
export type Fact = Schemas["Fact"];
export type FactQueryResult = Schemas["FactQueryResult"];
export type LogEntry = Schemas["LogEntry"];
export type Policy = Schemas["Policy"];
export type ExecutionReportAccepted = Schemas["ExecutionReportAccepted"];
export type ExecutionReport = Schemas["ExecutionReport"];
export type Conversation = Schemas["Conversation"];
export type ConversationMessage = Schemas["ConversationMessage"];
export type FlushResult = Schemas["FlushResult"];
export type ConversationContext = Schemas["ContextResult"];
export type ExtractionRun = Schemas["ExtractionRun"];
export type ExtractionRunDetail = Schemas["ExtractionRunDetail"];
export type DreamRequest = Schemas["DreamRequest"];
export type ApprovalItem = Schemas["ApprovalItem"];

/** What a page is read with is the client's business. */
type Listing<Q> = Omit<Q, "cursor" | "page">;

export type StoreInput = Schemas["MemoryStoreRequest"];
export type MemoryUpdate = BodyOf<"/api/v1/memories/{id}", "patch">;
/** `GET /memories`'s filters; `tags`: memories carrying all of them (sent as `tag`). */
export type MemoryFilters = Listing<Omit<QueryOf<"/api/v1/memories", "get">, "tag">> & {
  tags?: QueryOf<"/api/v1/memories", "get">["tag"];
};
export type CountFilters = QueryOf<"/api/v1/memories/count", "get">;
export type SearchInput = Schemas["MemorySearchRequestRequest"];
export type ContextInput = Schemas["MemoryContextRequestRequest"];
export type HistoryOptions = Listing<QueryOf<"/api/v1/memories/{id}/history", "get">>;
export type SharedPublishInput = BodyOf<"/api/v1/shared", "post">;
export type SharedSearchInput = BodyOf<"/api/v1/shared/search", "post">;
export type FactFilters = Listing<QueryOf<"/api/v1/org/facts", "get">>;
export type FactOptions = QueryOf<"/api/v1/org/facts/{fact_id}", "get">;
export type FactPublishInput = BodyOf<"/api/v1/org/facts", "post">;
export type FactQueryInput = BodyOf<"/api/v1/org/facts/query", "post">;
export type FactRetractInput = BodyOf<"/api/v1/org/facts/{fact_id}/retract", "post">;
export type PolicyFilters = Listing<QueryOf<"/api/v1/org/policies", "get">>;
export type ExecutionReportInput = BodyOf<"/api/v1/executions", "post">;
export type ExecutionFilters = Listing<QueryOf<"/api/v1/executions", "get">>;
export type ConversationFilters = Listing<QueryOf<"/api/v1/conversations", "get">>;
export type FlushInput = BodyOf<"/api/v1/conversations/{conversation_id}/messages", "post">;
export type ConversationContextInput = BodyOf<
  "/api/v1/conversations/{conversation_id}/context",
  "post"
>;
export type MessageFilters = Listing<
  QueryOf<"/api/v1/conversations/{conversation_id}/messages", "get">
>;
export type ExtractionFilters = Listing<
  QueryOf<"/api/v1/conversations/{conversation_id}/extractions", "get">
>;
export type ApprovalRequestInput = BodyOf<"/api/v1/approvals", "post">;
export type ApprovalFilters = Listing<QueryOf<"/api/v1/approvals", "get">>;
