package llm

import (
	"errors"
	"testing"
)

func TestBackendIDRoundTrip(t *testing.T) {
	for _, id := range []BackendID{
		{Provider: "groq", Model: "llama-3.3-70b-versatile"},
		{Provider: "ollama", Model: "library/llama3.2:3b"},
		{Provider: "openrouter", Key: "work", Model: "meta-llama/llama-3.3-70b-instruct:free"},
		{Provider: "acme", Key: "k2", Model: "m@v1"},
	} {
		s := id.String()
		got, err := ParseBackendID(s)
		if err != nil || got != id {
			t.Errorf("ParseBackendID(%q) = %+v, %v; want %+v", s, got, err, id)
		}
	}
	if s := (BackendID{Provider: "groq", Model: "x"}).String(); s != "groq/x" {
		t.Errorf("a backend without a key label reads %q, want the plain provider/model form", s)
	}
	if k := (BackendID{Provider: "groq", Key: "b", Model: "x"}).KeyID(); k.String() != "groq@b" {
		t.Errorf("KeyID = %q", k)
	}
}

func TestParseBackendIDRejects(t *testing.T) {
	for _, s := range []string{"", "groq", "groq/", "/m", "@k/m", "groq@/m", "groq@a@b/m"} {
		if _, err := ParseBackendID(s); !errors.Is(err, ErrBadBackendID) {
			t.Errorf("ParseBackendID(%q) error = %v, want ErrBadBackendID", s, err)
		}
	}
}

func BenchmarkBackendIDLookup(b *testing.B) {
	m := map[BackendID]int{}
	ids := make([]BackendID, 20)
	for i := range ids {
		ids[i] = BackendID{Provider: "p" + string(rune('a'+i)), Model: "model-" + string(rune('a'+i))}
		m[ids[i]] = i
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		n += m[ids[i%len(ids)]]
	}
	if n < 0 {
		b.Fatal(n)
	}
}
