// Ready-to-paste code for the SDKs. The coding agents' settings come from
// the server (GET /api/connect), which also writes them into their config
// files; these are the snippets for code the user writes themselves.
//
// FreeLane ignores the API key clients send unless it requires its inbound
// token, but every SDK insists on one, so the snippets use "freelane"; with
// a token they read it from the FREELANE_TOKEN environment variable, never
// holding the secret.

export const CLIENT_KEY = "freelane";
export const TOKEN_VAR = "FREELANE_TOKEN";

export interface Snippet {
  id: string;
  title: string;
  lang: string;
  note: string;
  code: string;
}

/**
 * FreeLane's /v1 URL as this page reaches it: the dashboard and /v1 share
 * one origin, so the page's own is the address of the FreeLane that runs,
 * whatever port it listens on.
 */
export function originEndpoint(origin: string): string {
  return `${origin.replace(/\/+$/, "")}/v1`;
}

/** Quotes a value for a POSIX shell, in single quotes. */
function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export function snippets(endpoint: string, model = "auto", tokenRequired = false): Snippet[] {
  const pyKey = tokenRequired ? `os.environ["${TOKEN_VAR}"]` : `"${CLIENT_KEY}"`;
  const jsKey = tokenRequired ? `process.env.${TOKEN_VAR}` : `"${CLIENT_KEY}"`;
  const shKey = tokenRequired ? `"$${TOKEN_VAR}"` : CLIENT_KEY;
  const body = JSON.stringify({ model, messages: [{ role: "user", content: "Say hello" }] });
  return [
    {
      id: "curl",
      title: "curl",
      lang: "sh",
      note: "One chat completion from a terminal, to see that FreeLane answers.",
      code: `curl ${endpoint}/chat/completions \\
  -H "Content-Type: application/json" \\
  -H "Authorization: Bearer ${tokenRequired ? `$${TOKEN_VAR}` : CLIENT_KEY}" \\
  -d ${shQuote(body)}
`,
    },
    {
      id: "python",
      title: "OpenAI Python SDK",
      lang: "python",
      note: "pip install openai",
      code: `${tokenRequired ? "import os\n\n" : ""}from openai import OpenAI

client = OpenAI(base_url="${endpoint}", api_key=${pyKey})
reply = client.chat.completions.create(
    model="${model}",
    messages=[{"role": "user", "content": "Say hello"}],
)
print(reply.choices[0].message.content)
`,
    },
    {
      id: "node",
      title: "OpenAI Node SDK",
      lang: "javascript",
      note: "npm install openai",
      code: `import OpenAI from "openai";

const client = new OpenAI({ baseURL: "${endpoint}", apiKey: ${jsKey} });
const reply = await client.chat.completions.create({
  model: "${model}",
  messages: [{ role: "user", content: "Say hello" }],
});
console.log(reply.choices[0].message.content);
`,
    },
    {
      id: "env",
      title: "Go SDK and other tools (environment variables)",
      lang: "sh",
      note: "openai-go and most OpenAI-compatible tools read these; pass the model name in the request.",
      code: `export OPENAI_BASE_URL=${endpoint}
export OPENAI_API_KEY=${shKey}
`,
    },
  ];
}
