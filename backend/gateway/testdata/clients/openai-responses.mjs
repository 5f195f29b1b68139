// Drives a FreeLane chain with the official Node OpenAI SDK's Responses
// API: responses.create with a function tool and its output on the next
// turn, then the responses.stream helper, a turn continued by
// previous_response_id and a stream broken after its first text, printing
// what came back as one JSON object for the Go test to check.
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.FREELANE_URL,
  apiKey: "unused",
  // FreeLane is the only retry layer.
  maxRetries: 0,
});
const model = process.env.FREELANE_MODEL;

const tools = [
  {
    type: "function",
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
    strict: true,
  },
];

const ask = [{ role: "user", content: "What is the weather in Paris?" }];
const first = await client.responses.create({ model, input: ask, tools, store: false });
const call = first.output.find((item) => item.type === "function_call") ?? { name: "", arguments: "", call_id: "" };
const second = await client.responses.create({
  model,
  tools,
  store: false,
  input: [
    ...ask,
    { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
    { type: "function_call_output", call_id: call.call_id, output: JSON.stringify({ temp_c: 18 }) },
  ],
});

const events = [];
let streamed = "";
const stream = client.responses.stream({ model, input: "Say hello" });
stream.on("response.output_text.delta", (event) => {
  streamed += event.delta;
});
for await (const event of stream) {
  events.push(event.type);
}
const final = await stream.finalResponse();

const continued = await client.responses.create({ model, input: "And once more", previous_response_id: final.id });

// The Go test cuts this stream after its first text: the SDK must throw,
// not hand back a truncated answer as if it were whole.
let broken = "";
let before = "";
try {
  const cut = client.responses.stream({ model, input: "Say hello" });
  for await (const event of cut) {
    if (event.type === "response.output_text.delta") before += event.delta;
  }
  await cut.finalResponse();
} catch (err) {
  broken = String(err?.message ?? err);
}

process.stdout.write(
  JSON.stringify({
    tool_name: call.name,
    tool_args: call.arguments,
    after_tool: second.output_text,
    streamed,
    final: final.output_text,
    events,
    continued: continued.output_text,
    broken,
    before_break: before,
  }),
);
