// The agent CLIs run in their own process groups inside a Linux network
// namespace, so these tests are for Unix only.

//go:build unix

package gateway_test

// The shared harness of the agent tests: real coding-agent CLIs, installed
// from npm into testdata/agents, run non-interactively against FreeLane in
// front of fake vendors of every dialect.
//
// The tests are named TestAgent* and only run where the process sees no
// network interface but loopback, which `make test-agents` arranges by
// running the test binary in a fresh network namespace. There the CLIs,
// FreeLane and the fake vendors share one loopback and nothing else, so a
// CLI can neither phone home nor reach a real vendor whatever it tries.
// Everywhere else (plain `go test ./...`) they skip.
//
// A test builds an agentEnv with the chains it needs, over the fixed set of
// backends below, scripts the fake vendor's models, and runs a CLI with
// agentEnv.run:
//
//	a := newAgentEnv(t, config.Chain{Name: "agent", Backends: []string{agentOpenAI1, agentGemini1}})
//	a.up.Set("gpt-1", fakeupstream.Behavior{Status: 429})
//	res := a.run(t, agentCmd{Bin: agentBin(t, "claude"), Args: []string{"-p", "hi", "--model", "agent"}, Env: ...})
//	res.mustSucceed(t)
//
// Every request the CLI sends passes a recording proxy on its way to
// FreeLane, so a test can check what the CLI asked for (agentEnv.inbound)
// and how FreeLane routed it (the X-FreeLane-Attempts header of each
// answer, agentEnv.attempts).

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/internal/fakeupstream"
	"freelane/backend/tier"
)

// The backends every agentEnv has: two models on a fake vendor of each
// dialect, so a chain can fail over within one dialect or across two. The
// fake scripts each by its model id (the part after the slash).
const (
	agentOpenAI1    = "oai/gpt-1"
	agentOpenAI2    = "oai/gpt-2"
	agentAnthropic1 = "ant/claude-1"
	agentAnthropic2 = "ant/claude-2"
	agentGemini1    = "gem/gemini-1"
	agentGemini2    = "gem/gemini-2"
)

// agentKey is the API key the CLIs are given. FreeLane has no inbound
// token in these tests, so any key passes; a fixed one lets a test check
// that no key reached a vendor or a log.
const agentKey = "sk-agent-test-0123456789"

// agentTimeouts are looser than the other gateway tests' fastTimeouts: a
// CLI run shares two cores with other test processes, and a slow first
// token must not fail a backend over by accident.
var agentTimeouts = config.Timeouts{Connect: 2 * time.Second, Header: 10 * time.Second, FirstToken: 10 * time.Second, Idle: 10 * time.Second}

// agentEnv is one FreeLane gateway in front of one fake upstream that
// speaks all three dialects, with a recording proxy in front of FreeLane.
type agentEnv struct {
	*env
	*recorder
}

// newAgentEnv starts the fake vendors, FreeLane with the agent backends and
// the given chains, and the recording proxy. The first chain is also the
// default chain (the one "auto" names).
func newAgentEnv(t *testing.T, chains ...config.Chain) *agentEnv {
	t.Helper()
	return newAgentEnvWith(t, nil, chains...)
}

// newAgentEnvWith is newAgentEnv with mutate applied to the config last,
// for a test that needs more, such as an inbound token.
func newAgentEnvWith(t *testing.T, mutate func(*config.Config), chains ...config.Chain) *agentEnv {
	t.Helper()
	e := newEnv(t, func(cfg *config.Config) {
		base := cfg.Providers[0].BaseURL // the fake's OpenAI wire, .../v1
		gemURL := strings.TrimSuffix(base, "/v1") + "/v1beta"
		models := func(ids ...string) []config.Model {
			var ms []config.Model
			for _, id := range ids {
				ms = append(ms, config.Model{ID: id, Context: 1000000, MaxOutput: 8192})
			}
			return ms
		}
		cfg.Providers = []config.Provider{
			{Name: "oai", Kind: config.KindOpenAI, Tier: tier.Free, BaseURL: base, APIKey: "sk-oai-vendor-key",
				Models: models("gpt-1", "gpt-2"), Timeouts: agentTimeouts},
			{Name: "ant", Kind: config.KindAnthropic, Tier: tier.Own, BaseURL: base, APIKey: "sk-ant-vendor-key",
				Models: models("claude-1", "claude-2"), Timeouts: agentTimeouts},
			{Name: "gem", Kind: config.KindGemini, Tier: tier.Free, BaseURL: gemURL, APIKey: "AIza-vendor-key",
				Models: models("gemini-1", "gemini-2"), Timeouts: agentTimeouts},
		}
		cfg.Chains = chains
		if len(chains) > 0 {
			cfg.DefaultChain = chains[0].Name
		}
		if mutate != nil {
			mutate(cfg)
		}
	})
	a := &agentEnv{env: e, recorder: startRecorder(t, e.base)}
	t.Cleanup(func() { a.dump(t) })
	return a
}

// vendorRequests is every request the fake vendors received for model (an
// id such as "gpt-1"), in order.
func (a *agentEnv) vendorRequests(model string) []fakeupstream.Request {
	var out []fakeupstream.Request
	for _, r := range a.up.Requests() {
		if r.Model == model {
			out = append(out, r)
		}
	}
	return out
}

// agentCmd is one CLI run.
type agentCmd struct {
	// Bin is the CLI's executable, usually agentBin's answer.
	Bin  string
	Args []string
	// Env is added to agentBaseEnv's variables (later entries win).
	Env []string
	// Dir is the working directory; a fresh temporary one when empty.
	Dir string
	// Stdin is the CLI's standard input; empty input is closed at once.
	Stdin string
	// Timeout bounds the whole run; the default is two minutes. A CLI
	// still running then is killed with its whole process group.
	Timeout time.Duration
}

// agentResult is how one CLI run ended.
type agentResult struct {
	Stdout, Stderr string
	// Exit is the exit code; -1 when the CLI was killed by a signal or
	// the timeout.
	Exit     int
	TimedOut bool
	Took     time.Duration
}

// String is the run's outcome and output for failure messages.
func (r agentResult) String() string {
	return fmt.Sprintf("exit %d (timed out %v) after %s\n--- stdout\n%s\n--- stderr\n%s", r.Exit, r.TimedOut,
		r.Took.Round(time.Millisecond), r.Stdout, r.Stderr)
}

// mustSucceed fails the test unless the CLI exited 0 in time.
func (r agentResult) mustSucceed(t *testing.T, a *agentEnv) {
	t.Helper()
	if r.Exit != 0 || r.TimedOut {
		t.Fatalf("the CLI failed: %s\nrequests:\n%s", r, a.describeInbound())
	}
}

// run runs one CLI to its end with its own HOME, the isolated environment
// of agentBaseEnv plus cmd.Env, and logs how long it took.
func (a *agentEnv) run(t *testing.T, cmd agentCmd) agentResult {
	t.Helper()
	if cmd.Timeout == 0 {
		cmd.Timeout = 2 * time.Minute
	}
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmd.Timeout)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Bin, cmd.Args...)
	c.Dir = cmd.Dir
	c.Env = append(agentBaseEnv(t), cmd.Env...)
	c.Stdin = strings.NewReader(cmd.Stdin)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	// The CLIs start helpers (shells for their tools, MCP servers); a
	// process group lets the timeout end them all, and WaitDelay stops
	// an orphan holding the output pipes from hanging the test.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	start := time.Now()
	err := c.Run()
	res := agentResult{Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start),
		TimedOut: errors.Is(ctx.Err(), context.DeadlineExceeded)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.Exit = exit.ExitCode()
	default:
		t.Fatalf("running %s: %v", filepath.Base(cmd.Bin), err)
	}
	if res.TimedOut {
		res.Exit = -1
	}
	t.Logf("%s %s: exit %d in %s", filepath.Base(cmd.Bin), strings.Join(shorten(cmd.Args), " "), res.Exit, res.Took.Round(time.Millisecond))
	return res
}

// shorten cuts long arguments (prompts) for the log.
func shorten(args []string) []string {
	out := make([]string, len(args))
	for i, s := range args {
		if len(s) > 40 {
			s = s[:37] + "..."
		}
		out[i] = s
	}
	return out
}

// agentBaseEnv is the environment every CLI starts from: nothing of the
// test process's own but PATH, a fresh HOME with the XDG directories under
// it (so no user config, credential or cache is read or written), no
// proxy, no colour, and every telemetry, update and error-report switch
// the CLIs know turned off. The network namespace is what really keeps
// them offline; these keep them from waiting on requests that cannot
// succeed.
func agentBaseEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	for _, d := range []string{".config", ".local/share", ".cache", "tmp"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"USER=agent",
		"LOGNAME=agent",
		"SHELL=/bin/bash",
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		"FORCE_COLOR=0",
		"TMPDIR=" + filepath.Join(home, "tmp"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local/share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"NO_PROXY=*",
		"no_proxy=*",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"DO_NOT_TRACK=1",
		"NO_UPDATE_NOTIFIER=1",
		"npm_config_update_notifier=false",
	}
}

// agentsDir is the npm project the CLIs are installed in.
const agentsDir = "testdata/agents"

// agentBin is the path of an installed CLI (node_modules/.bin/NAME of
// dir, agentsDir when empty). It skips the test outside an isolated
// network namespace (see requireIsolatedNetwork) and fails it when the
// CLI is missing there, since `make test-agents` installs it first.
func agentBin(t *testing.T, dir, name string) string {
	t.Helper()
	requireIsolatedNetwork(t)
	if dir == "" {
		dir = agentsDir
	}
	p, err := filepath.Abs(filepath.Join(dir, "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the agent CLI %s is not installed in %s: run `make deps-test` (%v)", name, dir, err)
	}
	return p
}

// requireIsolatedNetwork skips the test unless loopback is the only
// network interface that is up, which is how `make test-agents` runs the
// agent tests: real CLIs must not be able to reach the internet.
func requireIsolatedNetwork(t *testing.T) {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Skipf("agent CLIs run only under `make test-agents`: cannot list network interfaces: %v", err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagLoopback == 0 {
			t.Skipf("agent CLIs run only under `make test-agents`, in a network namespace with loopback alone (%s is up here)", i.Name)
		}
	}
}

// newMarker is a random token, MARKER-<hex>, for a test to find in what a
// CLI sent or printed.
func newMarker(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "MARKER-" + hex.EncodeToString(b)
}

// jsonString is s as a JSON string literal, for building tool arguments.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}

// jsonField is the string value of a top-level field of a JSON object, ""
// when body is not an object or the field is not a string.
func jsonField(body []byte, name string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	var s string
	_ = json.Unmarshal(m[name], &s)
	return s
}
