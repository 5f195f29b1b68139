// Drives a FreeLane chain with the official Node OpenAI SDK: a streamed
// answer, a streamed tool call, the tool's result and an image, printing
// what came back as one JSON object for the Go test to check.
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.FREELANE_URL,
  apiKey: "unused",
  // FreeLane is the only retry layer.
  maxRetries: 0,
});
const model = process.env.FREELANE_MODEL;
const backends = [];

async function streamed(params) {
  const { data: stream, response } = await client.chat.completions
    .create({ ...params, model, stream: true, stream_options: { include_usage: true } })
    .withResponse();
  backends.push(response.headers.get("x-freelane-backend"));
  let text = "";
  let finish = "";
  const calls = [];
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      text += choice.delta.content ?? "";
      for (const tc of choice.delta.tool_calls ?? []) {
        calls[tc.index] ??= { id: "", name: "", args: "" };
        calls[tc.index].id ||= tc.id ?? "";
        calls[tc.index].name ||= tc.function?.name ?? "";
        calls[tc.index].args += tc.function?.arguments ?? "";
      }
      finish = choice.finish_reason ?? finish;
    }
  }
  return { text, finish, calls };
}

const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "The weather in a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  },
];

const ask = [{ role: "user", content: "What is the weather in Paris?" }];
const first = await streamed({ messages: ask, tools });
const call = first.calls[0] ?? { id: "", name: "", args: "" };
const second = await streamed({
  tools,
  messages: [
    ...ask,
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: call.id, type: "function", function: { name: call.name, arguments: call.args } }],
    },
    { role: "tool", tool_call_id: call.id, content: JSON.stringify({ temp_c: 18 }) },
  ],
});
const image = await streamed({
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: "What is in this picture?" },
        { type: "image_url", image_url: { url: process.env.IMAGE_URL } },
      ],
    },
  ],
});

process.stdout.write(
  JSON.stringify({
    streamed: first.text + second.text,
    tool_name: call.name,
    tool_args: call.args,
    finish: first.finish,
    after_tool: second.text,
    image_reply: image.text,
    backends,
  }),
);
