// Command fakelocal runs a fake local model server as a process, for
// browser and desktop tests that drive the real FreeLane binary. It answers
// the discovery routes of one kind of server (-kind ollama, lmstudio, jan,
// llamacpp, vllm, localai, koboldcpp or openai) with the models given by
// -model (repeatable, "id" or "id:context"), plus OpenAI chat completions
// that answer "Hello from MODEL". It prints its OpenAI base URL on the
// first line of stdout and serves until it gets SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"freelane/backend/internal/fakelocal"
)

// models collects the repeated -model flags.
type models []fakelocal.Model

func (m *models) String() string { return fmt.Sprint(len(*m), " models") }

func (m *models) Set(v string) error {
	// An Ollama tag such as "qwen2.5:7b" has a colon too; only a number
	// after the last colon is a context window.
	id, n := v, 0
	if i := strings.LastIndex(v, ":"); i >= 0 {
		if c, err := strconv.Atoi(v[i+1:]); err == nil && c > 0 {
			id, n = v[:i], c
		}
	}
	if id == "" {
		return fmt.Errorf("empty model id in %q", v)
	}
	*m = append(*m, fakelocal.Model{ID: id, Context: n, TrainedContext: max(n, 32768), Loaded: true})
	return nil
}

func main() {
	kind := flag.String("kind", fakelocal.Ollama, "the kind of server: "+strings.Join(fakelocal.Kinds, ", "))
	port := flag.Int("port", 0, "the loopback port to listen on (0: a free one)")
	key := flag.String("key", "", "refuse the model list and chat without this API key")
	var ms models
	flag.Var(&ms, "model", "a model to offer, id or id:context (repeatable)")
	flag.Parse()
	if len(ms) == 0 {
		ms = models{{ID: "local-model", Context: 8192, TrainedContext: 32768, Loaded: true}}
	}
	s, err := fakelocal.New(fakelocal.Config{Kind: *kind, Port: *port, Key: *key, Models: ms})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer s.Close()
	s.Upstream().SetRecording(false)
	fmt.Println(s.BaseURL())
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	<-c
}
