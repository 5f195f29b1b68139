// Drives a FreeLane chain with Google's official Node SDK (@google/genai) at
// both API versions, /v1beta and /v1: a plain answer, a streamed one, a
// function call and its response, and a stream that breaks, printing what
// came back as one JSON object for the Go test to check.
import { GoogleGenAI } from "@google/genai";

const model = process.env.FREELANE_MODEL;
const out = {};
const weather = {
  name: "get_weather",
  description: "The weather in a city",
  parameters: { type: "OBJECT", properties: { city: { type: "STRING" } }, required: ["city"] },
};

for (const apiVersion of ["v1beta", "v1"]) {
  const ai = new GoogleGenAI({ apiKey: "unused", httpOptions: { baseUrl: process.env.FREELANE_URL, apiVersion } });
  const r = {};
  const plain = await ai.models.generateContent({ model, contents: "Say hello" });
  r.plain = plain.text;
  r.finish = plain.candidates?.[0]?.finishReason;
  r.usage = plain.usageMetadata?.candidatesTokenCount ?? 0;

  r.streamed = "";
  for await (const chunk of await ai.models.generateContentStream({ model, contents: "Say hello" })) {
    r.streamed += chunk.text ?? "";
  }

  const ask = { role: "user", parts: [{ text: "What is the weather in Paris?" }] };
  const config = { tools: [{ functionDeclarations: [weather] }] };
  let call = null;
  for await (const chunk of await ai.models.generateContentStream({ model, contents: [ask], config })) {
    call ??= chunk.functionCalls?.[0] ?? null;
  }
  r.call_name = call?.name ?? "";
  r.call_args = call?.args ?? null;
  const answered = await ai.models.generateContent({
    model,
    config,
    contents: [
      ask,
      { role: "model", parts: [{ functionCall: call }] },
      { role: "user", parts: [{ functionResponse: { id: call?.id, name: call?.name, response: { temp_c: 18 } } }] },
    ],
  });
  r.after_call = answered.text;

  r.broken = "";
  r.broken_error = "";
  try {
    for await (const chunk of await ai.models.generateContentStream({ model, contents: "Break please" })) {
      r.broken += chunk.text ?? "";
    }
  } catch (e) {
    r.broken_error = String(e?.message ?? e);
  }
  out[apiVersion] = r;
}

process.stdout.write(JSON.stringify(out));
