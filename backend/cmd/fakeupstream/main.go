// Command fakeupstream runs the scriptable fake upstream as a process, for
// browser and desktop tests that drive the real FreeLane binary. It prints
// its OpenAI base URL on the first line of stdout, the Anthropic and Gemini
// base URLs of the same server on stderr, and serves until it gets SIGINT
// or SIGTERM.
//
// Models whose name starts with "fail-" answer 503, "slow-" wait a second
// before answering, "cache-a" counts the prompt it shares with an earlier
// request to it as read from a prompt cache (see Behavior.PrefixCache),
// anything else answers normally. With -require-key K every request
// without "Authorization: Bearer K" gets 401.
// The Gemini wire's explicit caches (POST /v1beta/cachedContents) are
// refused below -cache-min-tokens tokens, Gemini Flash's 1024 by default.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"freelane/backend/internal/fakeupstream"
)

func main() {
	requireKey := flag.String("require-key", "", "answer 401 unless requests carry this API key")
	cacheMin := flag.Int("cache-min-tokens", fakeupstream.DefaultCacheMinTokens, "the fewest tokens a Gemini explicit cache may hold")
	flag.Parse()
	up := fakeupstream.Start()
	defer up.Close()
	up.SetRecording(false)
	up.SetCacheMinTokens(*cacheMin)
	if *requireKey != "" {
		up.RequireKey(*requireKey)
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
	fmt.Println(up.URL)
	fmt.Fprintf(os.Stderr, "fakeupstream: anthropic %s, gemini %s\n", up.AnthropicURL(), up.GeminiURL())
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	<-c
}
