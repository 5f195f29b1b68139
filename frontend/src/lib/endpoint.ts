// Which API a request came in on, as the request log and the usage screen
// name it: the path the client called and the dialect it spoke,
// "/v1/messages · Anthropic".

import type { Dialect, Trace } from "./types";

/** The dialects in a word, as they follow a path. */
const DIALECT_WORDS: Record<Dialect, string> = {
  openai: "OpenAI",
  "openai-responses": "Responses",
  anthropic: "Anthropic",
  gemini: "Gemini",
};

/** The word for a dialect; one this dashboard does not know is shown as the server wrote it. */
export function dialectWord(d: string | undefined): string {
  if (!d) return "";
  return (DIALECT_WORDS as Record<string, string>)[d] ?? d;
}

/** The dialect a path belongs to; "" for a path this dashboard does not know. */
export function dialectOfPath(path: string): Dialect | "" {
  if (path === "/v1/messages") return "anthropic";
  if (path === "/v1/responses" || path.startsWith("/v1/responses/")) return "openai-responses";
  if (/:(stream)?generateContent$/i.test(path)) return "gemini";
  if (path === "/v1/chat/completions" || path === "/v1/completions" || path === "/v1/embeddings") return "openai";
  return "";
}

/**
 * The path a request came in on. Requests logged before the server kept
 * the path get the one their dialect and kind came in on: Anthropic's
 * Messages and the Responses API each have one, Gemini's the method
 * (the version is not known), and OpenAI's the kind of request, which was
 * the only dialect before dialects were recorded.
 */
export function requestPath(t: Pick<Trace, "path" | "dialect" | "endpoint" | "stream">): string {
  if (t.path) return t.path;
  switch (t.dialect) {
    case "anthropic":
      return "/v1/messages";
    case "openai-responses":
      return "/v1/responses";
    case "gemini":
      return t.stream ? "…:streamGenerateContent" : "…:generateContent";
  }
  return t.endpoint ? `/v1/${t.endpoint}` : "";
}

/**
 * A path as the dashboard shows it: a Gemini path has the client's model
 * in it, which the row shows already, so it reads
 * "/v1beta/models/…:generateContent".
 */
export function shortPath(path: string): string {
  return path.replace("/{model}:", "/…:");
}

/** A path and its dialect in one label: "/v1/messages · Anthropic"; "" when neither is known. */
export function apiLabel(path: string, dialect?: string): string {
  const word = dialectWord(dialect || dialectOfPath(path));
  const p = shortPath(path);
  if (!p) return word;
  return word ? `${p} · ${word}` : p;
}

/** The label of the API a request came in on. */
export function requestAPI(t: Pick<Trace, "path" | "dialect" | "endpoint" | "stream">): string {
  return apiLabel(requestPath(t), t.dialect);
}
