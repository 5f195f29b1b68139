// Command fakeupstream runs the scriptable fake upstream as a process, for
// browser and desktop tests that drive the real FreeLane binary and for the
// load benchmark. It prints its OpenAI base URL on the first line of
// stdout, the Anthropic and Gemini base URLs of the same server on stderr,
// and serves until it gets SIGINT or SIGTERM.
//
// Models whose name starts with "fail-" answer 503, "slow-" wait a second
// before answering, "cache-a" counts the prompt it shares with an earlier
// request to it as read from a prompt cache (see Behavior.PrefixCache),
// anything else answers normally. With -require-key K every request
// that does not carry K as its API key gets 401. Explicit caches on the
// Gemini wire are refused below -cache-min-tokens tokens, Gemini
// Flash's 1024 by default.
//
// With -tls-cert FILE it serves HTTPS (and HTTP/2, as vendors' endpoints
// do) with a certificate for 127.0.0.1 made at start, written to FILE for
// clients to trust (SSL_CERT_FILE for a Go program), and prints an https
// URL.
//
// -chunks, -chunk-delay and -header-delay shape the normal answer of every
// model without a script of its own, and each -model NAME=SPEC scripts one
// model, SPEC being the same settings as a comma-separated list, such as
// -model long=chunks=60,chunk-delay=1s or -model slow=header-delay=2s.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"freelane/backend/internal/fakeupstream"
)

func main() {
	requireKey := flag.String("require-key", "", "answer 401 unless requests carry this API key")
	cacheMin := flag.Int("cache-min-tokens", fakeupstream.DefaultCacheMinTokens, "the fewest tokens a Gemini explicit cache may hold")
	chunks := flag.Int("chunks", 0, "content chunks of every normal answer (0: the fake's default of three)")
	chunkDelay := flag.Duration("chunk-delay", 0, "pause between the content chunks of a stream")
	headerDelay := flag.Duration("header-delay", 0, "wait before answering each request")
	tlsCert := flag.String("tls-cert", "", "serve HTTPS and HTTP/2, writing the certificate clients must trust to this file")
	models := map[string]fakeupstream.Behavior{}
	flag.Func("model", "NAME=SPEC: script one model, SPEC as in chunks=60,chunk-delay=1s,header-delay=2s (repeatable)", func(v string) error {
		name, spec, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return fmt.Errorf("want NAME=SPEC, got %q", v)
		}
		b, err := parseSpec(spec)
		if err != nil {
			return err
		}
		models[name] = b
		return nil
	})
	flag.Parse()
	if *chunks < 0 {
		fmt.Fprintln(os.Stderr, "fakeupstream: -chunks must not be negative")
		os.Exit(2)
	}

	var up *fakeupstream.Server
	if *tlsCert != "" {
		var cert []byte
		up, cert = fakeupstream.StartTLS()
		if err := os.WriteFile(*tlsCert, cert, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fakeupstream: writing the certificate:", err)
			up.Close()
			os.Exit(1)
		}
	} else {
		up = fakeupstream.Start()
	}
	defer up.Close()
	up.SetRecording(false)
	up.SetCacheMinTokens(*cacheMin)
	if *requireKey != "" {
		up.RequireKey(*requireKey)
	}
	if *chunks > 0 || *chunkDelay > 0 || *headerDelay > 0 {
		up.SetDefault(fakeupstream.Behavior{Chunks: chunkText(*chunks), ChunkDelay: *chunkDelay, HeaderDelay: *headerDelay})
	}
	for _, m := range []string{"fail-a", "fail-b", "fail-c"} {
		up.Set(m, fakeupstream.Behavior{Status: 503})
	}
	for _, m := range []string{"slow-a", "slow-b"} {
		up.Set(m, fakeupstream.Behavior{HeaderDelay: time.Second})
	}
	// The browser tests show a prompt-cache share and its savings; a
	// vendor's cache is the only place such numbers come from.
	up.Set("cache-a", fakeupstream.Behavior{PrefixCache: true})
	for name, b := range models {
		up.Set(name, b)
	}
	fmt.Println(up.URL)
	fmt.Fprintf(os.Stderr, "fakeupstream: anthropic %s, gemini %s\n", up.AnthropicURL(), up.GeminiURL())
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	<-c
}

// parseSpec reads a comma-separated list of chunks=N, chunk-delay=D and
// header-delay=D into a behaviour.
func parseSpec(spec string) (fakeupstream.Behavior, error) {
	var b fakeupstream.Behavior
	for _, kv := range strings.Split(spec, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return b, fmt.Errorf("want KEY=VALUE in %q, got %q", spec, kv)
		}
		switch k {
		case "chunks":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return b, fmt.Errorf("chunks must be a positive number, got %q", v)
			}
			b.Chunks = chunkText(n)
		case "chunk-delay", "header-delay":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return b, fmt.Errorf("%s must be a duration such as 1s, got %q", k, v)
			}
			if k == "chunk-delay" {
				b.ChunkDelay = d
			} else {
				b.HeaderDelay = d
			}
		default:
			return b, fmt.Errorf("unknown setting %q (want chunks, chunk-delay or header-delay)", k)
		}
	}
	return b, nil
}

// chunkText returns n content pieces about the size of a token each, so a
// stream of n chunks looks like a short answer; 0 keeps the fake's default.
func chunkText(n int) []string {
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	out[0] = "Hello"
	for i := 1; i < n; i++ {
		out[i] = " word" + strconv.Itoa(i)
	}
	return out
}
