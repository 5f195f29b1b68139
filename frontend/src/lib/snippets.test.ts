import { describe, expect, it } from "vitest";
import { originEndpoint, snippets } from "./snippets";

describe("snippets", () => {
  it("carry the address of the FreeLane that runs, on its own port", () => {
    const endpoint = originEndpoint("http://127.0.0.1:40123");
    expect(endpoint).toBe("http://127.0.0.1:40123/v1");
    const all = snippets(endpoint, "coding");
    expect(all.map((s) => s.id)).toEqual(["curl", "python", "node", "env"]);
    for (const s of all) {
      expect(s.code, s.id).toContain("http://127.0.0.1:40123/v1");
      expect(s.code, s.id).not.toContain("7788");
    }
  });

  it("give a curl chat completion that a shell runs as written", () => {
    const [curl] = snippets("http://10.0.0.2:9000/v1", "it's-mine");
    expect(curl.id).toBe("curl");
    expect(curl.code).toContain("curl http://10.0.0.2:9000/v1/chat/completions \\\n");
    expect(curl.code).toContain('-H "Authorization: Bearer freelane"');
    // The body is JSON in single quotes; a quote in the model name is
    // closed, escaped and reopened.
    const body = /-d '(.*)'\n$/s.exec(curl.code)?.[1] ?? "";
    expect(JSON.parse(body.replace(/'\\''/g, "'"))).toEqual({
      model: "it's-mine",
      messages: [{ role: "user", content: "Say hello" }],
    });
  });

  it("read the inbound token from the environment, never holding it", () => {
    const [curl, py, node, env] = snippets("http://127.0.0.1:7788/v1", "auto", true);
    expect(curl.code).toContain('-H "Authorization: Bearer $FREELANE_TOKEN"');
    expect(py.code).toContain('os.environ["FREELANE_TOKEN"]');
    expect(node.code).toContain("process.env.FREELANE_TOKEN");
    expect(env.code).toContain('OPENAI_API_KEY="$FREELANE_TOKEN"');
  });

  it("take the origin with or without a trailing slash", () => {
    expect(originEndpoint("http://[::1]:8080/")).toBe("http://[::1]:8080/v1");
  });
});
