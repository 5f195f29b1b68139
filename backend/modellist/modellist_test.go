package modellist

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"freelane/backend/dialects"
	"freelane/backend/protocol"
)

const testKey = "sk-test-0123456789abcdef"

// recorder is a real HTTP server that answers with handler and keeps the
// requests it saw.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
	srv  *httptest.Server
}

func serve(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, r.Clone(context.Background()))
		rec.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (r *recorder) requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.reqs...)
}

func jsonAnswer(body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
}

// listOf is the list reader of a provider kind's dialect; nil for a kind
// no dialect has.
func listOf(kind string) protocol.ModelList {
	d, _ := dialects.Registry().ByKind(kind)
	return d.Outbound.Models
}

func fetch(t *testing.T, kind, base string, headers map[string]string) ([]Listed, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return Fetch(ctx, &http.Client{}, listOf(kind), base, testKey, headers)
}

func mustFetch(t *testing.T, dialect, base string, headers map[string]string) []Listed {
	t.Helper()
	got, err := fetch(t, dialect, base, headers)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	return got
}

func byID(list []Listed) map[string]Listed {
	m := map[string]Listed{}
	for _, l := range list {
		m[l.ID] = l
	}
	return m
}

func TestOpenAIStyle(t *testing.T) {
	rec := serve(t, jsonAnswer(`{"object":"list","data":[
		{"id":"gpt-4o-mini","object":"model","created":1,"owned_by":"openai"},
		{"id":"text-embedding-3-small","object":"model"},
		{"id":"whisper-1","object":"model"},
		{"id":"gpt-4o-mini-tts","object":"model"},
		{"id":"dall-e-3","object":"model"},
		{"id":"gpt-4o-mini","object":"model"},
		{"id":"","object":"model"},
		{"id":42},
		{"id":"`+strings.Repeat("x", MaxIDLen+1)+`"}
	]}`))
	got := mustFetch(t, "openai", rec.srv.URL+"/v1/", map[string]string{"X-Title": "FreeLane"})
	if ids := IDs(got); !reflect.DeepEqual(ids, []string{"gpt-4o-mini", "text-embedding-3-small", "whisper-1", "gpt-4o-mini-tts", "dall-e-3"}) {
		t.Fatalf("ids = %q", ids)
	}
	for _, m := range got {
		if want := m.ID == "gpt-4o-mini"; m.Chat != want {
			t.Errorf("%s: Chat = %v, want %v", m.ID, m.Chat, want)
		}
		if m.Priced || m.Free || m.Context != 0 || m.Capabilities != nil {
			t.Errorf("%s: fields the list does not give are set: %+v", m.ID, m)
		}
	}
	reqs := rec.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
		t.Errorf("request %s %s, want GET /v1/models", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	if got := r.Header.Get("X-Title"); got != "FreeLane" {
		t.Errorf("extra header X-Title = %q", got)
	}
}

func TestGroqStyle(t *testing.T) {
	rec := serve(t, jsonAnswer(`{"object":"list","data":[
		{"id":"llama-3.3-70b-versatile","object":"model","owned_by":"Meta","active":true,"context_window":131072,"max_completion_tokens":32768},
		{"id":"whisper-large-v3-turbo","object":"model","active":true,"context_window":448},
		{"id":"old-model","object":"model","active":false,"context_window":8192},
		{"id":"odd-numbers","object":"model","context_window":"8192","max_completion_tokens":null}
	]}`))
	got := byID(mustFetch(t, "openai", rec.srv.URL+"/openai/v1", nil))
	if len(got) != 3 {
		t.Fatalf("got %d models, want 3 (the inactive one skipped): %v", len(got), got)
	}
	l := got["llama-3.3-70b-versatile"]
	if l.Context != 131072 || l.MaxOutput != 32768 || !l.Chat {
		t.Errorf("llama = %+v", l)
	}
	if w := got["whisper-large-v3-turbo"]; w.Chat {
		t.Errorf("whisper is not a chat model: %+v", w)
	}
	if o := got["odd-numbers"]; o.Context != 8192 || o.MaxOutput != 0 {
		t.Errorf("lenient numbers: %+v", o)
	}
	if p := rec.requests()[0].URL.Path; p != "/openai/v1/models" {
		t.Errorf("path %s", p)
	}
}

func TestMistralStyle(t *testing.T) {
	rec := serve(t, jsonAnswer(`{"object":"list","data":[
		{"id":"mistral-small-latest","object":"model","name":"mistral-small-2506","max_context_length":131072,
		 "capabilities":{"completion_chat":true,"completion_fim":false,"function_calling":true,"fine_tuning":false,"vision":true}},
		{"id":"codestral-latest","object":"model","max_context_length":256000,
		 "capabilities":{"completion_chat":true,"completion_fim":true,"function_calling":true,"vision":false}},
		{"id":"mistral-ocr-latest","object":"model","max_context_length":32768,
		 "capabilities":{"completion_chat":false,"function_calling":false,"vision":false}}
	]}`))
	got := byID(mustFetch(t, "openai", rec.srv.URL+"/v1", nil))
	s := got["mistral-small-latest"]
	if s.Name != "mistral-small-2506" || s.Context != 131072 || !s.Chat || !reflect.DeepEqual(s.Capabilities, []string{"tools", "vision"}) {
		t.Errorf("mistral-small = %+v", s)
	}
	if c := got["codestral-latest"]; !reflect.DeepEqual(c.Capabilities, []string{"tools"}) || c.Context != 256000 {
		t.Errorf("codestral = %+v", c)
	}
	if o := got["mistral-ocr-latest"]; o.Chat || o.Capabilities != nil {
		t.Errorf("ocr = %+v", o)
	}
}

func TestVLLMAndTogetherStyle(t *testing.T) {
	vllm := serve(t, jsonAnswer(`{"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model","owned_by":"vllm","max_model_len":32768}]}`))
	if got := mustFetch(t, "openai", vllm.srv.URL+"/v1", nil); len(got) != 1 || got[0].Context != 32768 {
		t.Errorf("vllm = %+v", got)
	}
	// Together answers a bare array with per-million numeric prices,
	// which are not OpenRouter's per-token strings and are not read.
	together := serve(t, jsonAnswer(`[
		{"id":"meta-llama/Llama-3.3-70B-Instruct-Turbo","object":"model","type":"chat","display_name":"Llama 3.3 70B","context_length":131072,"pricing":{"input":0.88,"output":0.88}},
		{"id":"BAAI/bge-large-en-v1.5","object":"model","type":"embedding","context_length":512}
	]`))
	got := byID(mustFetch(t, "openai", together.srv.URL+"/v1", nil))
	l := got["meta-llama/Llama-3.3-70B-Instruct-Turbo"]
	if l.Name != "Llama 3.3 70B" || l.Context != 131072 || !l.Chat || l.Priced {
		t.Errorf("together chat = %+v", l)
	}
	if b := got["BAAI/bge-large-en-v1.5"]; b.Chat {
		t.Errorf("embedding model marked chat: %+v", b)
	}
}

// openRouterList is an OpenRouter-shaped list: a free model, a priced
// one, a promotion priced "0" without the :free suffix and a router
// priced -1.
func openRouterList(freeIDs ...string) string {
	var b strings.Builder
	b.WriteString(`{"data":[`)
	for _, id := range freeIDs {
		fmt.Fprintf(&b, `{"id":%q,"canonical_slug":"x","name":"Free %s","created":1,"context_length":131072,
			"architecture":{"modality":"text->text","input_modalities":["text"],"output_modalities":["text"],"tokenizer":"Other"},
			"pricing":{"prompt":"0","completion":"0","request":"0","image":"0"},
			"top_provider":{"context_length":131072,"max_completion_tokens":null,"is_moderated":false},
			"supported_parameters":["max_tokens","temperature","tools","tool_choice","reasoning","include_reasoning"]},`, id, id)
	}
	b.WriteString(`
		{"id":"openai/gpt-4o-mini","name":"OpenAI: GPT-4o-mini","context_length":128000,
		 "architecture":{"input_modalities":["text","image","file"],"output_modalities":["text"]},
		 "pricing":{"prompt":"0.00000015","completion":"0.0000006","image":"0.000217","web_search":"0"},
		 "top_provider":{"context_length":128000,"max_completion_tokens":16384,"is_moderated":true},
		 "supported_parameters":["max_tokens","response_format","structured_outputs","tools","tool_choice","seed"]},
		{"id":"acme/promo-model","name":"Acme promo","context_length":0,
		 "architecture":{"input_modalities":["text"],"output_modalities":["text"]},
		 "pricing":{"prompt":"0","completion":"0"},
		 "top_provider":{"context_length":65536,"max_completion_tokens":4096}},
		{"id":"openrouter/auto","name":"Auto Router","context_length":2000000,
		 "pricing":{"prompt":"-1","completion":"-1"}},
		{"id":"acme/image-maker","name":"Image maker",
		 "architecture":{"input_modalities":["text"],"output_modalities":["image"]},
		 "pricing":{"prompt":"0.000001","completion":"0.000004"}}
	]}`)
	return b.String()
}

func TestOpenRouterShape(t *testing.T) {
	rec := serve(t, jsonAnswer(openRouterList("openai/gpt-oss-20b:free")))
	got := byID(mustFetch(t, "openai", rec.srv.URL+"/api/v1", map[string]string{"HTTP-Referer": "https://freelane.invalid"}))

	f := got["openai/gpt-oss-20b:free"]
	if !f.Priced || !f.Free || f.Price.Input != 0 || f.Price.Output != 0 {
		t.Errorf("free model: %+v", f)
	}
	if f.Context != 131072 || f.MaxOutput != 0 || f.Name != "Free openai/gpt-oss-20b:free" || !f.Chat {
		t.Errorf("free model fields: %+v", f)
	}
	if !reflect.DeepEqual(f.Capabilities, []string{"reasoning", "tools"}) {
		t.Errorf("free model capabilities = %q", f.Capabilities)
	}

	p := got["openai/gpt-4o-mini"]
	if !p.Priced || p.Free || p.Price.Input != 0.15 || p.Price.Output != 0.6 {
		t.Errorf("priced model: %+v (price %+v)", p, p.Price)
	}
	if p.MaxOutput != 16384 || p.Context != 128000 || !reflect.DeepEqual(p.Capabilities, []string{"json", "tools", "vision"}) {
		t.Errorf("priced model fields: %+v", p)
	}

	promo := got["acme/promo-model"]
	if !promo.Priced || promo.Free {
		t.Errorf("a 0-priced id without :free must not be free: %+v", promo)
	}
	if promo.Context != 65536 || promo.MaxOutput != 4096 {
		t.Errorf("top_provider fallback: %+v", promo)
	}
	if a := got["openrouter/auto"]; a.Priced || a.Free {
		t.Errorf("a -1 price is not a price: %+v", a)
	}
	if im := got["acme/image-maker"]; im.Chat {
		t.Errorf("image-only output is not chat: %+v", im)
	}
	if free := FreeIDs(mustFetch(t, "openai", rec.srv.URL+"/api/v1", nil)); !reflect.DeepEqual(free, []string{"openai/gpt-oss-20b:free"}) {
		t.Errorf("FreeIDs = %q", free)
	}
	if h := rec.requests()[0].Header.Get("HTTP-Referer"); h != "https://freelane.invalid" {
		t.Errorf("HTTP-Referer = %q", h)
	}
}

func TestOpenRouterPagination(t *testing.T) {
	other := serve(t, jsonAnswer(`{"data":[{"id":"elsewhere"}]}`))
	rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("offset") {
		case "":
			jsonAnswer(`{"data":[{"id":"a:free","pricing":{"prompt":"0","completion":"0"}}],"links":{"next":"/api/v1/models?offset=1&limit=1"}}`)(w, r)
		case "1":
			// A next link to another host is not followed.
			jsonAnswer(`{"data":[{"id":"b"}],"links":{"next":"`+other.srv.URL+`/api/v1/models?offset=2"}}`)(w, r)
		default:
			t.Errorf("unexpected page %s", r.URL)
		}
	})
	got := mustFetch(t, "openai", rec.srv.URL+"/api/v1", nil)
	if ids := IDs(got); !reflect.DeepEqual(ids, []string{"a:free", "b"}) {
		t.Errorf("ids = %q", ids)
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("the other host got %d requests", n)
	}

	// A list that pages forever is refused once past MaxPages.
	endless := serve(t, func(w http.ResponseWriter, r *http.Request) {
		n := 0
		_, _ = fmt.Sscan(r.URL.Query().Get("offset"), &n)
		jsonAnswer(fmt.Sprintf(`{"data":[{"id":"m%d"}],"links":{"next":"/v1/models?offset=%d"}}`, n, n+1))(w, r)
	})
	if _, err := fetch(t, "openai", endless.srv.URL+"/v1", nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("endless paging: err = %v, want ErrTooLarge", err)
	}
	if n := len(endless.requests()); n != MaxPages {
		t.Errorf("endless paging read %d pages, want %d", n, MaxPages)
	}
}

func TestAnthropic(t *testing.T) {
	rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("after_id") {
		case "":
			jsonAnswer(`{"data":[
				{"type":"model","id":"claude-opus-4-1","display_name":"Claude Opus 4.1","created_at":"2025-08-05T00:00:00Z"},
				{"type":"model","id":"claude-sonnet-4-5","display_name":"Claude Sonnet 4.5","max_input_tokens":200000,"max_tokens":64000,
				 "capabilities":{"thinking":{"supported":true},"image_input":{"supported":true},"pdf_input":{"supported":true}}}
			],"has_more":true,"first_id":"claude-opus-4-1","last_id":"claude-sonnet-4-5"}`)(w, r)
		case "claude-sonnet-4-5":
			jsonAnswer(`{"data":[{"type":"model","id":"claude-haiku-4-5","display_name":"Claude Haiku 4.5"}],"has_more":false,"first_id":"claude-haiku-4-5","last_id":"claude-haiku-4-5"}`)(w, r)
		default:
			t.Errorf("unexpected page %s", r.URL)
			http.NotFound(w, r)
		}
	})
	got := mustFetch(t, "anthropic", rec.srv.URL+"/v1", nil)
	if ids := IDs(got); !reflect.DeepEqual(ids, []string{"claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5"}) {
		t.Fatalf("ids = %q", ids)
	}
	s := byID(got)["claude-sonnet-4-5"]
	if s.Name != "Claude Sonnet 4.5" || s.Context != 200000 || s.MaxOutput != 64000 || !s.Chat ||
		!reflect.DeepEqual(s.Capabilities, []string{"reasoning", "vision"}) {
		t.Errorf("sonnet = %+v", s)
	}
	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.URL.Path != "/v1/models" || r.URL.Query().Get("limit") != "1000" {
			t.Errorf("request %s", r.URL)
		}
		if r.Header.Get("x-api-key") != testKey || r.Header.Get("anthropic-version") != "2023-06-01" {
			t.Errorf("headers: %v", r.Header)
		}
		if r.Header.Get("Authorization") != "" {
			t.Errorf("Anthropic got an Authorization header")
		}
	}

	// A configured anthropic-version wins over the default.
	mustFetch(t, "anthropic", rec.srv.URL+"/v1", map[string]string{"anthropic-version": "2099-01-01"})
	if v := rec.requests()[2].Header.Get("anthropic-version"); v != "2099-01-01" {
		t.Errorf("configured version = %q", v)
	}
}

func TestGemini(t *testing.T) {
	rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("pageToken") {
		case "":
			jsonAnswer(`{"models":[
				{"name":"models/gemini-2.5-flash","version":"001","displayName":"Gemini 2.5 Flash","inputTokenLimit":1048576,"outputTokenLimit":65536,
				 "supportedGenerationMethods":["generateContent","countTokens","createCachedContent","batchGenerateContent"],"thinking":true},
				{"name":"models/text-embedding-004","displayName":"Text Embedding 004","inputTokenLimit":2048,"outputTokenLimit":1,
				 "supportedGenerationMethods":["embedContent"]}
			],"nextPageToken":"page-2"}`)(w, r)
		case "page-2":
			jsonAnswer(`{"models":[{"name":"models/gemma-3-27b-it","displayName":"Gemma 3 27B","inputTokenLimit":131072,"outputTokenLimit":8192,
				"supportedGenerationMethods":["generateContent","countTokens"]}]}`)(w, r)
		default:
			t.Errorf("unexpected page %s", r.URL)
		}
	})
	got := mustFetch(t, "gemini", rec.srv.URL+"/v1beta", nil)
	if ids := IDs(got); !reflect.DeepEqual(ids, []string{"gemini-2.5-flash", "text-embedding-004", "gemma-3-27b-it"}) {
		t.Fatalf("ids = %q", ids)
	}
	m := byID(got)
	f := m["gemini-2.5-flash"]
	if f.Name != "Gemini 2.5 Flash" || f.Context != 1048576 || f.MaxOutput != 65536 || !f.Chat || !reflect.DeepEqual(f.Capabilities, []string{"reasoning"}) {
		t.Errorf("flash = %+v", f)
	}
	if e := m["text-embedding-004"]; e.Chat {
		t.Errorf("embedding model without generateContent marked chat: %+v", e)
	}
	if g := m["gemma-3-27b-it"]; !g.Chat || g.Context != 131072 {
		t.Errorf("gemma = %+v", g)
	}
	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.URL.Path != "/v1beta/models" || r.URL.Query().Get("pageSize") != "1000" {
			t.Errorf("request %s", r.URL)
		}
		if strings.Contains(r.URL.RawQuery, testKey) || r.URL.Query().Has("key") {
			t.Errorf("the key travelled in the URL: %s", r.URL)
		}
		if r.Header.Get("x-goog-api-key") != testKey || r.Header.Get("Authorization") != "" {
			t.Errorf("headers: %v", r.Header)
		}
	}
}

func TestRejectedKey(t *testing.T) {
	cases := []struct {
		name, dialect string
		status        int
		body          string
		want          string
	}{
		{"openai 401", "openai", 401,
			`{"error":{"message":"Incorrect API key provided: ` + testKey + `. You can find your API key at https://platform.openai.com.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			"Incorrect API key provided"},
		{"anthropic 401", "anthropic", 401,
			`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, "invalid x-api-key"},
		{"403 plain text", "openai", 403, "Forbidden: key " + testKey + " is disabled", "is disabled"},
		{"gemini 400 API_KEY_INVALID", "gemini", 400,
			`{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",
			  "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`,
			"API key not valid"},
		{"gemini openai-compatible 400 array", "openai", 400,
			`[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}]`,
			"API key not valid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := serve(t, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			})
			_, err := fetch(t, c.dialect, rec.srv.URL+"/v1", nil)
			if !errors.Is(err, ErrKeyRejected) {
				t.Fatalf("err = %v, want ErrKeyRejected", err)
			}
			msg := err.Error()
			if strings.Contains(msg, testKey) {
				t.Errorf("the error holds the key: %s", msg)
			}
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, fmt.Sprint(c.status)) {
				t.Errorf("error %q lacks %q or the status", msg, c.want)
			}
			var he *Error
			if !errors.As(err, &he) || he.Status != c.status {
				t.Errorf("errors.As *Error: %#v", he)
			}
		})
	}

	// A 400 that is not about the key is an ordinary failure.
	rec := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"error":{"code":400,"message":"pageSize is too large","status":"INVALID_ARGUMENT"}}`))
	})
	if _, err := fetch(t, "gemini", rec.srv.URL, nil); err == nil || errors.Is(err, ErrKeyRejected) {
		t.Errorf("plain 400: err = %v", err)
	}
}

func TestShortKeyNeverQuoted(t *testing.T) {
	rec := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"error":{"message":"bad key abc"}}`))
	})
	_, err := Fetch(context.Background(), nil, listOf("openai"), rec.srv.URL, "abc", nil)
	if !errors.Is(err, ErrKeyRejected) || strings.Contains(err.Error(), "abc") {
		t.Errorf("err = %v", err)
	}
}

func TestNoList(t *testing.T) {
	for _, status := range []int{404, 405} {
		rec := serve(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":{"message":"Not Found"}}`))
		})
		_, err := fetch(t, "openai", rec.srv.URL+"/v1", nil)
		if !errors.Is(err, ErrNoList) || errors.Is(err, ErrKeyRejected) {
			t.Errorf("%d: err = %v, want ErrNoList", status, err)
		}
	}
}

func TestOtherFailures(t *testing.T) {
	rec := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(429)
		_, _ = w.Write([]byte(`{"error":{"message":"Rate limit reached"}}`))
	})
	_, err := fetch(t, "openai", rec.srv.URL, nil)
	var he *Error
	if !errors.As(err, &he) || he.Status != 429 || errors.Is(err, ErrKeyRejected) || errors.Is(err, ErrNoList) ||
		!strings.Contains(err.Error(), "Rate limit reached") {
		t.Errorf("429: err = %v", err)
	}

	html := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(502)
		_, _ = w.Write([]byte(`<html><body>Bad gateway</body></html>`))
	})
	if _, err := fetch(t, "openai", html.srv.URL, nil); err == nil || !strings.Contains(err.Error(), "502 Bad Gateway") && !strings.Contains(err.Error(), "HTTP 502: Bad Gateway") {
		t.Errorf("502: err = %v", err)
	}

	notList := serve(t, jsonAnswer(`{"hello":"world"}`))
	if _, err := fetch(t, "openai", notList.srv.URL, nil); err == nil {
		t.Error("a body without data was read as a list")
	}
	noIDs := serve(t, jsonAnswer(`{"data":[{"model":"x"},{"model":"y"}]}`))
	if _, err := fetch(t, "openai", noIDs.srv.URL, nil); err == nil {
		t.Error("a list without ids was read as empty")
	}
	empty := serve(t, jsonAnswer(`{"data":[]}`))
	if got, err := fetch(t, "openai", empty.srv.URL, nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("empty list: %v %v", got, err)
	}
	if _, err := fetch(t, "cohere", empty.srv.URL, nil); !errors.Is(err, ErrNoList) {
		t.Errorf("a dialect without a list reader: err = %v, want ErrNoList", err)
	}
	for _, bad := range []string{"ftp://x/v1", "/v1", "http://x/v1?key=1", "::"} {
		if _, err := fetch(t, "openai", bad, nil); err == nil {
			t.Errorf("base URL %q accepted", bad)
		}
	}
}

func TestOversizeBody(t *testing.T) {
	// Declared too large: refused before reading.
	declared := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(MaxBody+1))
		_, _ = w.Write([]byte(`{"data":[`))
	})
	if _, err := fetch(t, "openai", declared.srv.URL, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("declared oversize: err = %v", err)
	}
	// Streamed without a length: refused once past the limit.
	streamed := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"data":[`))
		chunk := []byte(strings.Repeat(`{"id":"m"},`, 10000))
		for n := 0; n <= MaxBody; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`{"id":"last"}]}`))
	})
	if _, err := fetch(t, "openai", streamed.srv.URL, nil); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "limit") {
		t.Errorf("streamed oversize: err = %v", err)
	}
	// Too many models, within the byte limit.
	var b strings.Builder
	b.WriteString(`{"data":[`)
	for i := range MaxModels + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"m%d"}`, i)
	}
	b.WriteString(`]}`)
	many := serve(t, jsonAnswer(b.String()))
	if _, err := fetch(t, "openai", many.srv.URL, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("too many models: err = %v", err)
	}
}

func TestRedirectDoesNotCarryKey(t *testing.T) {
	elsewhere := serve(t, jsonAnswer(`{"data":[{"id":"stolen"}]}`))
	for _, dialect := range []string{"openai", "anthropic", "gemini"} {
		rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.srv.URL+"/v1/models", http.StatusFound)
		})
		_, err := fetch(t, dialect, rec.srv.URL+"/v1", map[string]string{"X-Secret": "header-secret-value"})
		if err == nil {
			t.Fatalf("%s: a redirect was followed", dialect)
		}
		if strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "redirect") {
			t.Errorf("%s: err = %v", dialect, err)
		}
	}
	for _, r := range elsewhere.requests() {
		t.Errorf("the other host got %s with headers %v", r.URL, r.Header)
	}
}

func TestContextBoundsTheCall(t *testing.T) {
	release := make(chan struct{})
	rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Fetch(ctx, nil, listOf("openai"), rec.srv.URL, testKey, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestDiffOpenRouterFreeModels(t *testing.T) {
	yesterday := serve(t, jsonAnswer(openRouterList("openai/gpt-oss-20b:free", "qwen/qwen3-coder:free")))
	today := serve(t, jsonAnswer(openRouterList("openai/gpt-oss-20b:free", "poolside/laguna-s-2.1:free")))
	before := FreeIDs(mustFetch(t, "openai", yesterday.srv.URL+"/api/v1", nil))
	after := FreeIDs(mustFetch(t, "openai", today.srv.URL+"/api/v1", nil))
	joined, withdrawn := Diff(before, after)
	if !reflect.DeepEqual(joined, []string{"poolside/laguna-s-2.1:free"}) || !reflect.DeepEqual(withdrawn, []string{"qwen/qwen3-coder:free"}) {
		t.Errorf("joined %q, withdrawn %q", joined, withdrawn)
	}
}

func TestDiff(t *testing.T) {
	joined, withdrawn := Diff([]string{"c", "a", "b", "a"}, []string{"d", "b", "e", "d"})
	if !reflect.DeepEqual(joined, []string{"d", "e"}) || !reflect.DeepEqual(withdrawn, []string{"a", "c"}) {
		t.Errorf("joined %q, withdrawn %q", joined, withdrawn)
	}
	if j, w := Diff(nil, nil); j != nil || w != nil {
		t.Errorf("empty: %q %q", j, w)
	}
}
