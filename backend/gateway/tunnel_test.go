package gateway_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// forward listens on a free loopback port and relays every connection to
// addr, as ssh -L does, so a client reaches FreeLane under a port number
// that is not FreeLane's own. It stops when the test ends.
func forward(t *testing.T, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(up, c); up.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// TestTunnelOnAnotherPort is a client behind a port forward: its requests
// name the forward's port in Host, and FreeLane serves them.
func TestTunnelOnAnotherPort(t *testing.T) {
	e := newEnv(t, nil)
	local := forward(t, e.g.Addr())
	if strings.HasSuffix(e.g.Addr(), local[strings.LastIndex(local, ":"):]) {
		t.Fatalf("the forward %s shares FreeLane's port %s", local, e.g.Addr())
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		base := "http://" + host + local[strings.LastIndex(local, ":"):] + "/v1"
		c := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("freelane"), option.WithMaxRetries(0))
		got, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:    "main",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		if err != nil {
			t.Fatalf("through %s: %v", base, err)
		}
		if !strings.Contains(got.Choices[0].Message.Content, "Hello") {
			t.Errorf("through %s: %q", base, got.Choices[0].Message.Content)
		}
	}
}
