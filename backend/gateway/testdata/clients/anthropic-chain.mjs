// Drives a FreeLane chain with the official Node Anthropic SDK: a plain
// message, a streamed one, a streamed tool call and its result, and a
// stream that breaks, printing what came back as one JSON object for the
// Go test to check.
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({
  baseURL: process.env.FREELANE_URL,
  apiKey: "unused",
  // FreeLane is the only retry layer.
  maxRetries: 0,
});
const model = process.env.FREELANE_MODEL;
const backends = [];
const text = (msg) => msg.content.filter((b) => b.type === "text").map((b) => b.text).join("");

const ask = [{ role: "user", content: "Say hello" }];
const { data: plain, response } = await client.messages
  .create({ model, max_tokens: 256, messages: ask })
  .withResponse();
backends.push(response.headers.get("x-freelane-backend"));

const stream = client.messages.stream({ model, max_tokens: 256, messages: ask });
let deltas = "";
stream.on("text", (t) => (deltas += t));
const streamed = await stream.finalMessage();

const tools = [
  {
    name: "get_weather",
    description: "The weather in a city",
    input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
];
const weather = [{ role: "user", content: "What is the weather in Paris?" }];
const called = await client.messages.stream({ model, max_tokens: 256, messages: weather, tools }).finalMessage();
const use = called.content.find((b) => b.type === "tool_use") ?? { id: "", name: "", input: null };
const answered = await client.messages.create({
  model,
  max_tokens: 256,
  tools,
  messages: [
    ...weather,
    { role: "assistant", content: called.content },
    { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: JSON.stringify({ temp_c: 18 }) }] },
  ],
});

let broken = "";
let brokenError = "";
try {
  const s = client.messages.stream({ model, max_tokens: 256, messages: [{ role: "user", content: "Break please" }] });
  s.on("text", (t) => (broken += t));
  await s.finalMessage();
} catch (e) {
  brokenError = String(e?.message ?? e);
}

process.stdout.write(
  JSON.stringify({
    plain: text(plain),
    plain_stop: plain.stop_reason,
    plain_usage: plain.usage.output_tokens,
    streamed: text(streamed),
    deltas,
    tool_name: use.name,
    tool_input: use.input,
    tool_stop: called.stop_reason,
    after_tool: text(answered),
    broken,
    broken_error: brokenError,
    backends,
  }),
);
