package discovery

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"freelane/backend/internal/fakelocal"
)

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"qwen2.5:7b":                     true,
		"library/llama3.2:3b":            true,
		"hf.co/unsloth/Qwen3-8B-GGUF:Q4": true,
		"paid/gpt-x":                     true, // a name, not a route: see the router's pins
		"../../etc/passwd":               true,
		"model with inner spaces":        true,
		"":                               false,
		strings.Repeat("x", MaxID):       true,
		strings.Repeat("x", MaxID+1):     false,
		strings.Repeat("x", 5000):        false,
		" lead":                          false,
		"trail\t":                        false,
		"bad\nid":                        false,
		"\x1b[31mred":                    false,
		"evil\u202egnp.exe":              false, // right-to-left override
		"zero\u200bwidth":                false,
		"private\ue000use":               false,
		"ref${HOME}":                     false,
		string([]byte{0xff, 0xfe, 'a'}):  false,
		"line\u2028separator":            false,
		"emoji-🦙":                        true,
	} {
		if got := ValidID(id); got != want {
			t.Errorf("ValidID(%s) = %v, want %v", Sample(id), got, want)
		}
	}
}

func TestSample(t *testing.T) {
	long := strings.Repeat("a", 5000)
	if got := Sample(long); got != `"`+strings.Repeat("a", 40)+`"… (5000 bytes)` {
		t.Errorf("Sample(long) = %s", got)
	}
	if got := Sample("\x1b[31mred\n"); got != `"\x1b[31mred\n"` {
		t.Errorf("Sample(escape) = %s", got)
	}
}

func TestContextClaims(t *testing.T) {
	for in, want := range map[string]int{
		"8192": 8192, "1e9": MaxContext, "1e400": MaxContext, "10485761": MaxContext, "10485760": MaxContext,
		"-5": 0, "0": 0, "4096.5": 0, `"8192"`: 0, "null": 0, "{}": 0, "[1]": 0, "true": 0,
	} {
		var tk tokens
		if err := tk.UnmarshalJSON([]byte(in)); err != nil || int(tk) != want {
			t.Errorf("tokens(%s) = %d, %v; want %d", in, tk, err, want)
		}
	}
}

// A hostile server's model list: names no configured model could have
// are dropped and counted, never kept or logged in full; an absurd window
// is cut to MaxContext and a garbage one is unknown, without losing the
// rest of the answer.
func TestHostileModelList(t *testing.T) {
	long := strings.Repeat("A", 5000)
	entries := []string{
		`{"id":"good","owned_by":"vllm","max_model_len":8192}`,
		`{"id":"paid/gpt-x","owned_by":"vllm","max_model_len":1e9}`,
		`{"id":"../../etc/passwd","owned_by":"vllm","max_model_len":-5}`,
		`{"id":"frac","owned_by":"vllm","max_model_len":4096.5}`,
		`{"id":"str","owned_by":"vllm","max_model_len":"8192"}`,
		`{"id":"` + long + `","owned_by":"vllm"}`,
		`{"id":"\u001b[31mred","owned_by":"vllm"}`,
		`{"id":"evil\u202egnp.exe","owned_by":"vllm"}`,
	}
	body := `{"object":"list","data":[` + strings.Join(entries, ",") + `]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			_, _ = w.Write([]byte("ok"))
		case "/v1/models":
			_, _ = w.Write([]byte(body))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	var logs bytes.Buffer
	got := Scan(context.Background(), Options{Ports: []int{srv.Listener.Addr().(*net.TCPAddr).Port},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if len(got) != 1 || got[0].Kind != KindVLLM {
		t.Fatalf("got %+v", got)
	}
	s := &got[0]
	if len(s.Models) != 5 {
		t.Fatalf("models %+v", s.Models)
	}
	for id, want := range map[string]int{"good": 8192, "paid/gpt-x": MaxContext, "../../etc/passwd": 0, "frac": 0, "str": 0} {
		if m := model(t, s, id); m.Context != want {
			t.Errorf("%s: context %d, want %d", id, m.Context, want)
		}
	}
	if s.Dropped != 3 || s.DroppedSample != `"`+strings.Repeat("A", 40)+`"… (5000 bytes)` {
		t.Errorf("dropped %d, sample %s", s.Dropped, s.DroppedSample)
	}
	if strings.Contains(logs.String(), long) || strings.Contains(logs.String(), "\x1b") {
		t.Error("the log holds a refused name raw")
	}
}

// Ollama's answers with absurd windows: /api/ps and num_ctx are cut,
// and a list longer than MaxModels is cut and counted.
func TestOllamaHostileWindowsAndCount(t *testing.T) {
	ms := []fakelocal.Model{{ID: "huge", Context: 1_000_000_000, Loaded: true, TrainedContext: 2_000_000_000}, {ID: "numctx", NumCtx: 999_999_999}}
	for i := range MaxModels + 5 {
		ms = append(ms, fakelocal.Model{ID: "m" + strconv.Itoa(i)})
	}
	s := start(t, fakelocal.Config{Kind: fakelocal.Ollama, Models: ms})
	got := scanOne(t, s.Port())
	if got == nil || len(got.Models) != MaxModels || got.Dropped != 7 {
		t.Fatalf("kept %d models, dropped %d", len(got.Models), got.Dropped)
	}
	if m := model(t, got, "huge"); m.Context != MaxContext || m.TrainedContext != MaxContext {
		t.Errorf("huge %+v", m)
	}
	if m := model(t, got, "numctx"); m.Context != MaxContext {
		t.Errorf("numctx %+v", m)
	}
}

// A server that lists many models and answers each question slowly
// cannot hold a scan past PortTimeout.
func TestSlowServerIsCutOff(t *testing.T) {
	var list strings.Builder
	list.WriteString(`{"models":[`)
	for i := range 200 {
		if i > 0 {
			list.WriteString(",")
		}
		list.WriteString(`{"name":"m` + strconv.Itoa(i) + `"}`)
	}
	list.WriteString(`]}`)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			_, _ = w.Write([]byte("Ollama is running"))
		case "/api/tags":
			_, _ = w.Write([]byte(list.String()))
		case "/api/show":
			select {
			case <-r.Context().Done():
			case <-release:
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	got := Scan(context.Background(), Options{Ports: []int{srv.Listener.Addr().(*net.TCPAddr).Port}, Timeout: 2 * time.Second, PortTimeout: 300 * time.Millisecond})
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the scan took %v; 200 stalled questions 4 at a time would take 100 s", d)
	}
	if len(got) != 1 || len(got[0].Models) != 200 {
		t.Fatalf("got %+v", got)
	}
}
