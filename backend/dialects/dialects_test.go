package dialects

import (
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/protocol/openai"
)

func TestRegistryFindsEveryDialect(t *testing.T) {
	r := Registry()
	for _, name := range []llm.Dialect{llm.DialectOpenAI, llm.DialectResponses, llm.DialectAnthropic, llm.DialectGemini} {
		c, ok := r.Codec(name)
		if !ok || c.Dialect() != name {
			t.Errorf("Codec(%q) = %v, %v", name, c, ok)
		}
	}
	for _, kind := range []string{"openai", "anthropic", "gemini"} {
		if d, ok := r.ByKind(kind); !ok || d.Kind != kind {
			t.Errorf("ByKind(%q) = %+v, %v", kind, d, ok)
		}
	}
	if _, ok := r.ByKind("openai-responses"); ok {
		t.Error("a provider kind no upstream speaks was found")
	}
	if got := r.Kinds(); len(got) != 3 || got[0] != "openai" {
		t.Errorf("Kinds() = %v", got)
	}
}

func TestRegistryRefusesADialectTwice(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a dialect registered twice")
		}
	}()
	protocol.NewRegistry(openai.Dialect, openai.Dialect)
}

func TestEveryDialectAsksOK(t *testing.T) {
	for _, d := range Registry().Dialects() {
		req, err := Registry().Request(d.Name(), protocol.AskOK(), "m")
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		c, err := req.Conversation()
		if err != nil || req.Model != "m" || req.Dialect != d.Name() || len(c.Messages) != 1 ||
			c.Messages[0].Parts[0].Text != "Reply with the word OK." || c.MaxOutput != 5 {
			t.Errorf("%s: %+v %v", d.Name(), req, err)
		}
	}
	if _, err := Registry().Request("nobody", protocol.AskOK(), "m"); err == nil {
		t.Error("a request in an unknown dialect was made")
	}
}
