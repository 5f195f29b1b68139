package discovery

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/internal/fakelocal"
)

func start(t *testing.T, c fakelocal.Config) *fakelocal.Server {
	t.Helper()
	s, err := fakelocal.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// scanOne scans the single port of s and returns what was found there.
func scanOne(t *testing.T, port int) *Server {
	t.Helper()
	got := Scan(context.Background(), Options{Ports: []int{port}})
	if len(got) > 1 {
		t.Fatalf("one port, %d servers: %+v", len(got), got)
	}
	if len(got) == 0 {
		return nil
	}
	return &got[0]
}

func model(t *testing.T, s *Server, id string) Model {
	t.Helper()
	for _, m := range s.Models {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("no model %q in %+v", id, s.Models)
	return Model{}
}

func TestOllama(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{
		// Loaded: /api/ps's live window beats both num_ctx and the trained one.
		{ID: "qwen2.5:7b", Context: 8192, NumCtx: 16384, TrainedContext: 32768, ParameterSize: "7.6B", Loaded: true,
			Capabilities: []string{"completion", "tools", "thinking"}},
		// Not loaded: num_ctx is what a request will get.
		{ID: "llama3.2:3b", NumCtx: 4096, TrainedContext: 131072, ParameterSize: "3.2B", Capabilities: []string{"completion", "vision"}},
		// Neither: unknown, never the trained maximum.
		{ID: "phi4:14b", TrainedContext: 16384, ParameterSize: "14.7B"},
		{ID: "nomic-embed-text:latest", Embedding: true, ParameterSize: "137M"},
	}})
	got := scanOne(t, s.Port())
	if got == nil || got.Kind != KindOllama || got.Name != "Ollama" || got.Version != "0.12.3" || got.NeedsKey {
		t.Fatalf("got %+v", got)
	}
	if want := "http://127.0.0.1:" + strconv.Itoa(s.Port()) + "/v1"; got.BaseURL != want || got.BaseURL != s.BaseURL() {
		t.Errorf("BaseURL %q, want %q", got.BaseURL, want)
	}
	ids := []string{}
	for _, m := range got.Models {
		ids = append(ids, m.ID)
	}
	if want := []string{"llama3.2:3b", "phi4:14b", "qwen2.5:7b", "nomic-embed-text:latest"}; !slices.Equal(ids, want) {
		t.Errorf("models %v, want chat models by id then embeddings: %v", ids, want)
	}
	q := model(t, got, "qwen2.5:7b")
	if q.Context != 8192 || q.TrainedContext != 32768 || !q.Loaded || q.ParamsB != 7.6 || !slices.Equal(q.Capabilities, []string{"tools", "reasoning"}) || q.Embedding {
		t.Errorf("qwen2.5:7b %+v", q)
	}
	l := model(t, got, "llama3.2:3b")
	if l.Context != 4096 || l.TrainedContext != 131072 || l.Loaded || !slices.Equal(l.Capabilities, []string{"vision"}) {
		t.Errorf("llama3.2:3b %+v", l)
	}
	if p := model(t, got, "phi4:14b"); p.Context != 0 || p.TrainedContext != 16384 || p.Capabilities != nil {
		t.Errorf("phi4:14b %+v", p)
	}
	if e := model(t, got, "nomic-embed-text:latest"); !e.Embedding || e.ParamsB != 0.137 {
		t.Errorf("embedding %+v", e)
	}
}

func TestLMStudio(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.LMStudio, Models: []fakelocal.Model{
		{ID: "qwen/qwen3-8b", Context: 4096, TrainedContext: 40960, Loaded: true, ParameterSize: "8B", Capabilities: []string{"tools"}},
		{ID: "google/gemma-3-12b", TrainedContext: 131072, Capabilities: []string{"vision"}},
		{ID: "text-embedding-nomic-embed-text-v1.5", TrainedContext: 2048, Embedding: true},
	}})
	got := scanOne(t, s.Port())
	if got == nil || got.Kind != KindLMStudio || got.Name != "LM Studio" {
		t.Fatalf("got %+v", got)
	}
	if q := model(t, got, "qwen/qwen3-8b"); q.Context != 4096 || q.TrainedContext != 40960 || !q.Loaded || q.ParamsB != 8 || !slices.Equal(q.Capabilities, []string{"tools"}) {
		t.Errorf("loaded %+v", q)
	}
	if g := model(t, got, "google/gemma-3-12b"); g.Context != 0 || g.TrainedContext != 131072 || g.Loaded || !slices.Equal(g.Capabilities, []string{"vision"}) {
		t.Errorf("not loaded %+v", g)
	}
	if e := model(t, got, "text-embedding-nomic-embed-text-v1.5"); !e.Embedding {
		t.Errorf("embedding %+v", e)
	}
	if got.Models[len(got.Models)-1].ID != "text-embedding-nomic-embed-text-v1.5" {
		t.Errorf("embedding model not last: %+v", got.Models)
	}
}

func TestLMStudioWithKey(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.LMStudio, Key: "sk-lm", Models: []fakelocal.Model{{ID: "m"}}})
	got := scanOne(t, s.Port())
	if got == nil || !got.NeedsKey || len(got.Models) != 0 {
		t.Fatalf("got %+v", got)
	}
}

func TestLlamaCpp(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.LlamaCpp, Models: []fakelocal.Model{
		{ID: "Qwen2.5-7B-Instruct-Q4_K_M.gguf", Context: 8192, TrainedContext: 32768, NParams: 7615616512},
	}})
	got := scanOne(t, s.Port())
	if got == nil || got.Kind != KindLlamaCpp || got.Name != "llama.cpp" || got.Version != "b6500-fake" {
		t.Fatalf("got %+v", got)
	}
	m := model(t, got, "Qwen2.5-7B-Instruct-Q4_K_M.gguf")
	if m.Context != 8192 || m.TrainedContext != 32768 || !m.Loaded || m.ParamsB < 7.6 || m.ParamsB > 7.62 {
		t.Errorf("model %+v: n_ctx must beat n_ctx_train", m)
	}
}

func TestVLLM(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.VLLM, Models: []fakelocal.Model{{ID: "Qwen/Qwen2.5-7B-Instruct", Context: 32768}}})
	got := scanOne(t, s.Port())
	if got == nil || got.Kind != KindVLLM || got.Version != "0.10.2" {
		t.Fatalf("got %+v", got)
	}
	if m := model(t, got, "Qwen/Qwen2.5-7B-Instruct"); m.Context != 32768 || !m.Loaded {
		t.Errorf("model %+v", m)
	}
}

func TestKoboldCpp(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.KoboldCpp, Models: []fakelocal.Model{{ID: "koboldcpp/L3-8B-Stheno", Context: 12288}}})
	got := scanOne(t, s.Port())
	if got == nil || got.Kind != KindKoboldCpp || got.Version != "1.99" {
		t.Fatalf("got %+v", got)
	}
	if m := model(t, got, "koboldcpp/L3-8B-Stheno"); m.Context != 12288 || !m.Loaded {
		t.Errorf("model %+v", m)
	}
}

func TestJan(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.Jan, Models: []fakelocal.Model{
		{ID: "Jan-v1-4B-Q4_K_M"}, {ID: "gpt-4o", Remote: true},
	}})
	got := scanOne(t, s.Port())
	if got == nil || got.Kind != KindJan || got.Name != "Jan" || got.NeedsKey {
		t.Fatalf("got %+v", got)
	}
	if len(got.Models) != 1 || got.Models[0].ID != "Jan-v1-4B-Q4_K_M" || got.Models[0].Context != 0 {
		t.Errorf("models %+v: hosted models must be left out", got.Models)
	}
}

func TestJanNeedsKey(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.Jan, Key: "jan-key", Models: []fakelocal.Model{{ID: "m"}}})
	got := scanOne(t, s.Port())
	if got == nil || got.Kind != KindJan || !got.NeedsKey || len(got.Models) != 0 {
		t.Fatalf("got %+v", got)
	}
}

func TestUnknownOpenAIServer(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.OpenAI, Models: []fakelocal.Model{{ID: "b"}, {ID: "a"}}})
	got := scanOne(t, s.Port())
	if got == nil || got.Kind != KindOpenAI || got.Name != "OpenAI-compatible server" || len(got.Models) != 2 || got.Models[0].ID != "a" {
		t.Fatalf("got %+v", got)
	}
}

// LocalAI answers Ollama's model routes, and claims an Ollama version, but
// not Ollama's banner; it shares llama.cpp's default port.
func TestLocalAIIsNotOllamaNorLlamaCpp(t *testing.T) {
	ms := []fakelocal.Model{{ID: "qwen3-8b", Context: 8192, TrainedContext: 32768, Loaded: true}}
	l := start(t, fakelocal.Config{Kind: fakelocal.LocalAI, Models: ms})
	port := l.Port()
	got := scanOne(t, port)
	if got == nil || got.Kind != KindLocalAI || got.Version != "v3.5.0" {
		t.Fatalf("got %+v", got)
	}
	if m := model(t, got, "qwen3-8b"); m.Context != 0 {
		t.Errorf("LocalAI reports no window, got %+v", m)
	}
	l.Close()

	// The same port number, now llama.cpp.
	c := start(t, fakelocal.Config{Kind: fakelocal.LlamaCpp, Port: port, Models: ms})
	got = scanOne(t, c.Port())
	if got == nil || got.Kind != KindLlamaCpp || got.Port != port {
		t.Fatalf("second run: got %+v", got)
	}
	if m := model(t, got, "qwen3-8b"); m.Context != 8192 {
		t.Errorf("model %+v", m)
	}
}

// freePort returns a loopback port where nothing listens.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

func TestNothingListening(t *testing.T) {
	port := freePort(t)
	done := make(chan []Server)
	go func() { done <- Scan(context.Background(), Options{Ports: []int{port}, Timeout: 10 * time.Second}) }()
	select {
	case got := <-done:
		if len(got) != 0 {
			t.Fatalf("got %+v", got)
		}
	case <-time.After(5 * time.Second):
		// A refused connection is immediate; waiting out the timeout would
		// mean the scanner retried or hung.
		t.Fatal("scan of a closed port did not end promptly")
	}
}

func TestGarbageIsSkipped(t *testing.T) {
	for name, body := range map[string]string{
		"text":      "garbage\x00{",
		"truncated": `{"data":[{"id":"x"`,
		"wrongtype": `{"data":"nope","models":7,"result":3,"default_generation_settings":[]}`,
		"html":      "<html><body>router login</body></html>",
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
			}))
			defer srv.Close()
			if got := scanOne(t, srv.Listener.Addr().(*net.TCPAddr).Port); got != nil {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	long := strings.Repeat("x", MaxID+1)
	var b strings.Builder
	b.WriteString(`{"object":"list","data":[{"id":"` + long + `"},{"id":"bad\nid"},{"id":""},{"id":"ok"},{"id":"ok"}`)
	for i := range MaxModels + 10 {
		b.WriteString(`,{"id":"m` + strconv.Itoa(i) + `"}`)
	}
	b.WriteString(`]}`)
	list := b.String()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = w.Write([]byte(list))
		case "/":
			_, _ = w.Write([]byte("hi"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	got := scanOne(t, srv.Listener.Addr().(*net.TCPAddr).Port)
	if got == nil || got.Kind != KindOpenAI {
		t.Fatalf("got %+v", got)
	}
	if len(got.Models) > MaxModels {
		t.Errorf("%d models kept, limit %d", len(got.Models), MaxModels)
	}
	for _, m := range got.Models {
		if !ValidID(m.ID) {
			t.Errorf("invalid id kept: %q", m.ID)
		}
	}
	if model(t, got, "ok").ID != "ok" {
		t.Error("valid id lost")
	}

	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			_, _ = w.Write([]byte("hi"))
			return
		}
		_, _ = w.Write([]byte(`{"data":[{"id":"a","pad":"`))
		_, _ = w.Write([]byte(strings.Repeat("x", MaxBody)))
		_, _ = w.Write([]byte(`"}]}`))
	}))
	defer huge.Close()
	if got := scanOne(t, huge.Listener.Addr().(*net.TCPAddr).Port); got != nil {
		t.Fatalf("a body over the limit was read: %+v", got)
	}
}

func TestScanOrdersByPortAndSkipsEmpty(t *testing.T) {
	a := start(t, fakelocal.Config{Kind: fakelocal.VLLM, Models: []fakelocal.Model{{ID: "v", Context: 4096}}})
	b := start(t, fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "o"}}})
	closed := freePort(t)
	ports := []int{b.Port(), closed, a.Port(), a.Port(), 0, 70000}
	got := Scan(context.Background(), Options{Ports: ports})
	if len(got) != 2 || got[0].Port > got[1].Port {
		t.Fatalf("got %+v", got)
	}
}

// recordingDialer dials like the default client but notes every address.
type recordingDialer struct {
	mu    sync.Mutex
	addrs []string
}

func (d *recordingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, network+" "+addr)
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func TestOnlyLoopbackIsDialled(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "a"}, {ID: "b"}}})
	rec := &recordingDialer{}
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: rec.dial}}
	got := Scan(context.Background(), Options{Client: c, Ports: append([]int{s.Port()}, DefaultPorts...)})
	if len(got) == 0 {
		t.Fatal("nothing found")
	}
	// The transport may still finish a dial it started for its pool after
	// Scan has its answers, so the record is read under its lock.
	rec.mu.Lock()
	addrs := slices.Clone(rec.addrs)
	rec.mu.Unlock()
	if len(addrs) == 0 {
		t.Fatal("no dial recorded")
	}
	for _, a := range addrs {
		network, addr, _ := strings.Cut(a, " ")
		host, _, err := net.SplitHostPort(addr)
		if network != "tcp" || err != nil || host != "127.0.0.1" {
			t.Errorf("dialled %s", a)
		}
	}
}

func TestDefaultClientRefusesOtherHosts(t *testing.T) {
	c := NewClient()
	tr := c.Transport.(*http.Transport)
	if tr.Proxy != nil {
		t.Error("the default client uses a proxy")
	}
	for _, addr := range []string{"example.com:80", "10.0.0.1:80", "[::1]:11434", "localhost:11434", "127.0.0.2:80"} {
		if conn, err := tr.DialContext(context.Background(), "tcp", addr); err == nil {
			conn.Close()
			t.Errorf("dialled %s", addr)
		}
	}
	// A redirect, even to loopback, is not followed.
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("redirect followed") }))
	defer target.Close()
	redir := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusFound))
	defer redir.Close()
	resp, err := c.Get(redir.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("status %d", resp.StatusCode)
	}
}

func TestParseParams(t *testing.T) {
	for in, want := range map[string]float64{"7.6B": 7.6, "135M": 0.135, "1.2T": 1200, "": 0, "B": 0, "abc": 0, "-3B": 0} {
		if got := parseParams(in); got != want {
			t.Errorf("parseParams(%q) = %v, want %v", in, got, want)
		}
	}
}

// BenchmarkScanNothingListening measures a scan of ports where nothing
// answers, the common case on a machine without local servers, which the
// watcher repeats every minute.
func BenchmarkScanNothingListening(b *testing.B) {
	var ports []int
	for range 6 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
	}
	ctx := context.Background()
	for b.Loop() {
		if got := Scan(ctx, Options{Ports: ports}); len(got) != 0 {
			b.Fatalf("found %v", got)
		}
	}
}
