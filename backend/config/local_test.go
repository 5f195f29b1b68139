package config

import (
	"errors"
	"strings"
	"testing"
)

// A chain and a budget may name a recorded local server, whose models are
// whatever it lists when it answers; a provider nobody recorded is still
// refused, and the message names the recorded servers too.
func TestLocalRecordsAreProviders(t *testing.T) {
	cfg, problems, err := Parse("t.yaml", withGroq(
		"local:",
		"  - {name: ollama, kind: ollama, port: 11434}",
		"  - {name: box, kind: lmstudio, port: 1234, hidden: true, limits: {rpm: 5}}",
		"chains:",
		"  - name: mix",
		"    backends: [groq/llama-3.3-70b-versatile, ollama/qwen2.5:7b, box/any-model]",
		"budgets:",
		"  - {scope: provider:ollama, period: day, limit: 1, action: block}",
	), nil)
	if err != nil {
		t.Fatalf("a chain and a budget naming recorded local servers: %v", err)
	}
	for _, p := range problems {
		if !p.Warning {
			t.Errorf("problem %v", p)
		}
	}
	if l, ok := cfg.LocalAt("lmstudio", 1234); !ok || l.Name != "box" || !l.Hidden || l.Limits == nil || l.Limits.RPM != 5 {
		t.Fatalf("local records = %+v", cfg.Local)
	}

	_, _, err = Parse("t.yaml", withGroq(
		"local:",
		"  - {name: ollama, kind: ollama, port: 11434}",
		"chains:",
		"  - {name: mix, backends: [nobody/m]}",
	), nil)
	var ve *ValidationError
	if !errors.As(err, &ve) || !strings.Contains(ve.Problems[0].Message, `unknown provider "nobody"`) ||
		!strings.Contains(ve.Problems[0].Message, "local servers are: ollama") {
		t.Fatalf("a provider nobody knew: %v", err)
	}
}

func TestLocalRecordErrors(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		field string
		msg   string
	}{
		{"no name", []string{"local:", "  - {kind: ollama, port: 11434}"}, "local[0].name", "is required"},
		{"bad name", []string{"local:", "  - {name: My Box, kind: ollama, port: 11434}"}, "local[0].name", "must be lower-case"},
		{"name of a provider", []string{"local:", "  - {name: groq, kind: ollama, port: 11434}"}, "local[0].name", `a provider is already called "groq"`},
		{"two of one name", []string{"local:", "  - {name: box, kind: ollama, port: 11434}", "  - {name: box, kind: vllm, port: 8000}"},
			"local[1].name", "already uses the name"},
		{"one server twice", []string{"local:", "  - {name: a, kind: ollama, port: 11434}", "  - {name: b, kind: ollama, port: 11434}"},
			"local[1].port", "already records the ollama server on port 11434"},
		{"no kind", []string{"local:", "  - {name: box, port: 11434}"}, "local[0].kind", "is required"},
		{"bad kind", []string{"local:", "  - {name: box, kind: \"Olla ma\", port: 11434}"}, "local[0].kind", "must be a kind of local server"},
		{"bad port", []string{"local:", "  - {name: box, kind: ollama, port: 70000}"}, "local[0].port", "from 1 to 65535"},
		{"bad limits", []string{"local:", "  - {name: box, kind: ollama, port: 11434, limits: {rpm: -1}}"}, "local[0].limits.rpm", ">= 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse("t.yaml", withGroq(tt.lines...), nil)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v", err)
			}
			p, ok := findProblem(ve.Problems, tt.field)
			if !ok || !strings.Contains(p.Message, tt.msg) {
				t.Fatalf("problems %v, want %q on %s", ve.Problems, tt.msg, tt.field)
			}
		})
	}
}
