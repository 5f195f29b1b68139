// Ready-to-paste settings for common clients. FreeLane ignores the API key
// clients send, but every SDK insists on one, so the snippets use "freelane".

export const CLIENT_KEY = "freelane";

export interface Snippet {
  id: string;
  title: string;
  lang: string;
  note: string;
  code: string;
}

export function snippets(endpoint: string, model = "auto"): Snippet[] {
  return [
    {
      id: "python",
      title: "OpenAI Python SDK",
      lang: "python",
      note: "pip install openai",
      code: `from openai import OpenAI

client = OpenAI(base_url="${endpoint}", api_key="${CLIENT_KEY}")
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

const client = new OpenAI({ baseURL: "${endpoint}", apiKey: "${CLIENT_KEY}" });
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
export OPENAI_API_KEY=${CLIENT_KEY}
`,
    },
    {
      id: "continue",
      title: "Continue (config.yaml)",
      lang: "yaml",
      note: "Add to ~/.continue/config.yaml.",
      code: `name: FreeLane
version: 1.0.0
schema: v1
models:
  - name: FreeLane ${model}
    provider: openai
    model: ${model}
    apiBase: ${endpoint}
    apiKey: ${CLIENT_KEY}
    roles:
      - chat
      - edit
      - apply
`,
    },
    {
      id: "cline",
      title: "Cline (and Roo Code)",
      lang: "text",
      note: "Settings → API Provider.",
      code: `API Provider: OpenAI Compatible
Base URL:     ${endpoint}
API Key:      ${CLIENT_KEY}
Model ID:     ${model}
`,
    },
    {
      id: "cursor",
      title: "Cursor",
      lang: "text",
      note: "Settings → Models. Some Cursor features call the model from Cursor's own servers, which cannot reach a router on this machine.",
      code: `OpenAI API Key:           ${CLIENT_KEY}
Override OpenAI Base URL: ${endpoint}
Add model:                ${model}
`,
    },
  ];
}
