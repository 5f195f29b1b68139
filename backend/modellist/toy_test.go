package modellist

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"freelane/backend/protocol"
	"freelane/backend/protocol/openai"
)

// toyList is the list reader of a dialect that only this test registers:
// its list is at /catalogue, its key travels in Toy-Key beside a version
// header, its pages are {"items": [...], "cursor": "..."}, and it answers a
// bad key with 418 and the word "nokey".
type toyList struct{}

func (toyList) Path() string { return "/catalogue?per=2" }

func (toyList) Header(h http.Header, key string) {
	if key != "" {
		h.Set("Toy-Key", key)
	}
	h.Set("Toy-Version", "7")
}

func (toyList) ReadPage(body []byte) (protocol.ModelPage, error) {
	var doc struct {
		Items []struct {
			Handle string `json:"handle"`
			Window int    `json:"window"`
			Talks  bool   `json:"talks"`
		} `json:"items"`
		Cursor string `json:"cursor"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return protocol.ModelPage{}, err
	}
	var p protocol.ModelPage
	for _, it := range doc.Items {
		p.Models = append(p.Models, protocol.ListedModel{ID: it.Handle, Context: it.Window, Chat: it.Talks})
	}
	if doc.Cursor != "" {
		p.Next = "?" + url.Values{"per": {"2"}, "from": {doc.Cursor}}.Encode()
	}
	return p, nil
}

func (toyList) RefusesKey(status int, body []byte) bool {
	return status == http.StatusTeapot && strings.Contains(string(body), "nokey")
}

// toyRegistry holds the toy dialect alone, under the provider kind "toy".
// Its codec and wire are borrowed: only its list reader is its own.
var toyRegistry = protocol.NewRegistry(protocol.Dialect{Codec: openai.Codec, Kind: "toy",
	Outbound: protocol.Outbound{Wire: openai.Codec, Models: toyList{}}})

// A dialect's list reader is all Fetch knows of a vendor: the list of a
// dialect registered only here is read at its path, with its headers and
// its pages, and its own way of refusing a key is ErrKeyRejected.
func TestFetchReadsAListOnlyItsDialectKnows(t *testing.T) {
	d, ok := toyRegistry.ByKind("toy")
	if !ok {
		t.Fatal("the toy kind is not registered")
	}
	pages := map[string]string{
		"":   `{"items":[{"handle":"alpha","window":4096,"talks":true},{"handle":""}],"cursor":"c2"}`,
		"c2": `{"items":[{"handle":"beta","talks":false},{"handle":"alpha"}],"cursor":"c3"}`,
		"c3": `{"items":[],"cursor":""}`,
	}
	rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Query().Get("from")]
		if r.URL.Path != "/toy/v2/catalogue" || !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	})
	got, err := Fetch(t.Context(), nil, d.Outbound.Models, rec.srv.URL+"/toy/v2/", testKey, map[string]string{"X-Extra": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "alpha" || got[0].Context != 4096 || !got[0].Chat || got[1].ID != "beta" || got[1].Chat {
		t.Fatalf("listed %+v, want alpha (4096, chat) and beta", got)
	}
	reqs := rec.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want one per page", len(reqs))
	}
	for i, r := range reqs {
		if r.Header.Get("Toy-Key") != testKey || r.Header.Get("Toy-Version") != "7" || r.Header.Get("X-Extra") != "1" {
			t.Errorf("page %d headers: %v", i+1, r.Header)
		}
		if r.Header.Get("Authorization") != "" || r.URL.Query().Get("per") != "2" {
			t.Errorf("page %d: %s with Authorization %q", i+1, r.URL, r.Header.Get("Authorization"))
		}
	}

	refuse := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("nokey: " + testKey))
	})
	_, err = Fetch(t.Context(), nil, d.Outbound.Models, refuse.srv.URL, testKey, nil)
	if !errors.Is(err, ErrKeyRejected) || strings.Contains(err.Error(), testKey) {
		t.Fatalf("the toy's refusal: err = %v, want ErrKeyRejected without the key", err)
	}
	// The same answer is not a refused key to a dialect that words its
	// refusals otherwise.
	_, err = Fetch(t.Context(), nil, listOf("openai"), refuse.srv.URL, testKey, nil)
	if err == nil || errors.Is(err, ErrKeyRejected) {
		t.Fatalf("an OpenAI-style list took the toy's refusal for its own: %v", err)
	}
}
