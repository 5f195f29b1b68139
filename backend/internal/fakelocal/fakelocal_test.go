package fakelocal_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"freelane/backend/internal/fakelocal"
)

func TestChatAndRestart(t *testing.T) {
	s, err := fakelocal.New(fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "qwen2.5:7b"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chat := func(stream bool) string {
		t.Helper()
		body := `{"model":"qwen2.5:7b","messages":[{"role":"user","content":"hi"}]`
		if stream {
			body += `,"stream":true`
		}
		resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(body+"}"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		return string(b)
	}
	if b := chat(false); !strings.Contains(b, "Hello from qwen2.5:7b") {
		t.Errorf("plain answer %s", b)
	}
	if b := chat(true); !strings.Contains(b, `"content":" from "`) || !strings.Contains(b, "data: [DONE]") {
		t.Errorf("stream %s", b)
	}

	port := s.Port()
	s.Stop()
	if _, err := http.Get(s.URL() + "/"); err == nil {
		t.Fatal("stopped server answered")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if s.Port() != port {
		t.Fatalf("port %d, was %d", s.Port(), port)
	}
	resp, err := http.Get(s.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if line != "Ollama is running" {
		t.Errorf("banner %q", line)
	}
	if err := s.Start(); err != fakelocal.ErrRunning {
		t.Errorf("second Start: %v", err)
	}
}

func TestKeyAndKinds(t *testing.T) {
	for _, kind := range fakelocal.Kinds {
		s, err := fakelocal.New(fakelocal.Config{Kind: kind, Models: []fakelocal.Model{{ID: "m", Context: 4096}}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(s.BaseURL() + "/models")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":"m"`) {
			t.Errorf("%s: /v1/models %d %s", kind, resp.StatusCode, b)
		}
		s.Close()
	}
	if _, err := fakelocal.New(fakelocal.Config{Kind: "nope"}); err == nil {
		t.Error("unknown kind accepted")
	}

	s, err := fakelocal.New(fakelocal.Config{Kind: fakelocal.Jan, Key: "k", Models: []fakelocal.Model{{ID: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("no key: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", s.BaseURL()+"/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "Hello from m") {
		t.Errorf("with key: %d %s", resp.StatusCode, b)
	}
}
