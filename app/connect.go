package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"freelane/backend/clock"
	"freelane/backend/config"
	"freelane/backend/connect"
	"freelane/backend/defaults"
)

// connectCmd prints a tool's settings for this FreeLane, or writes them into
// the tool's config file with --write; without a tool it lists the tools.
func connectCmd(args []string, stdout, stderr io.Writer, clk clock.Clock) int {
	// The tool may come before or after the flags.
	id := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("connect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.Bool("write", false, "merge the settings into the tool's config file (with a backup)")
	rawURL := fs.String("url", "", "FreeLane's address as tools reach it (default: the running FreeLane's, else the config's listen address, else http://127.0.0.1:7788)")
	dataDir := fs.String("data-dir", defaultDataDir(), "the data directory of the FreeLane to ask for its address")
	model := fs.String("model", connect.DefaultModel, "the model tools ask for: a chain name or provider/model")
	cfgPath := fs.String("config", "", "FreeLane's YAML config, for its listen address and server.token")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if id == "" && fs.NArg() > 0 {
		id = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return 2
		}
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "freelane connect: unexpected argument %q\n", fs.Arg(0))
		return 2
	}

	o, err := connectOptions(*cfgPath, *rawURL, *model, *dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "freelane connect:", err)
		return 2
	}
	if id == "" {
		if *write {
			fmt.Fprintf(stderr, "freelane connect: --write needs a tool: freelane connect TOOL --write (one of %s)\n", strings.Join(connect.IDs, ", "))
			return 2
		}
		return listTools(o, stdout, stderr)
	}
	t, err := connect.ForTool(id, o)
	if err != nil {
		fmt.Fprintln(stderr, "freelane connect:", err)
		return 2
	}
	if !*write {
		printTool(t, stdout)
		return 0
	}
	if t.File == nil {
		fmt.Fprintf(stderr, "freelane connect: %s is set up in its settings screen, not in a file; freelane connect %s prints the steps\n", t.Name, t.ID)
		return 2
	}
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintln(stderr, "freelane connect: no home directory to write into:", err)
		return 1
	}
	w, err := connect.Write(context.Background(), home, t.ID, o, clk)
	if err != nil {
		fmt.Fprintln(stderr, "freelane connect:", err)
		return 1
	}
	if w.UndoAll() == "" {
		fmt.Fprintf(stdout, "%s already has these settings; nothing was written.\n", w.File)
		return 0
	}
	for _, f := range append([]connect.Written{w}, w.Also...) {
		if f.Unchanged {
			fmt.Fprintf(stdout, "%s already has these settings; nothing was written there.\n", f.File)
			continue
		}
		fmt.Fprintf(stdout, "Wrote FreeLane's settings for %s into %s\n", t.Name, f.File)
		if f.Backup != "" {
			fmt.Fprintf(stdout, "The file as it was:  %s\n", f.Backup)
		}
	}
	fmt.Fprintf(stdout, "To undo:             %s\n", w.UndoAll())
	for _, n := range t.Notes {
		if o.TokenRequired && strings.Contains(n, connect.TokenVar) {
			fmt.Fprintln(stdout, "Note: "+n)
		}
	}
	return 0
}

// connectOptions finds the FreeLane the settings point at: --url; else
// the FreeLane running with the data directory, which says where it
// listens; else the listen address of --config; else the default one. A
// token is required when FREELANE_TOKEN or server.token is set, as the
// server decides.
func connectOptions(cfgPath, rawURL, model, dataDir string) (connect.Options, error) {
	listen := defaults.Listen
	token := os.Getenv("FREELANE_TOKEN") != ""
	if cfgPath != "" {
		cfg, _, err := config.Load(cfgPath)
		if err != nil {
			return connect.Options{}, fmt.Errorf("the config file has problems (freelane check --config %s lists them): %w", cfgPath, err)
		}
		listen = cfg.Listen
		token = token || cfg.Server.Token != ""
	}
	base := rawURL
	if base == "" && dataDir != "" {
		base = runningBase(dataDir)
	}
	if base == "" {
		var err error
		if base, err = connect.BaseFromListen(listen); err != nil {
			return connect.Options{}, err
		}
	}
	o := connect.Options{Base: base, TokenRequired: token, Model: model}
	// Checked here so a bad --url or --model is a usage error before
	// anything else is said.
	if _, err := connect.For(o); err != nil {
		if rawURL != "" {
			err = errors.New(strings.Replace(err.Error(), "the URL", "--url", 1))
		}
		return connect.Options{}, err
	}
	return o, nil
}

// runningBase is the address of the FreeLane running with dataDir, as
// tools reach it, or "" when none runs there (or it is not serving yet).
func runningBase(dataDir string) string {
	endpoint, err := askAddress(dataDir)
	if err != nil {
		return ""
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return ""
	}
	// It answers with the address it listens on: 0.0.0.0 is reached as
	// 127.0.0.1 from this machine.
	base, err := connect.BaseFromListen(u.Host)
	if err != nil {
		return ""
	}
	return base
}

func listTools(o connect.Options, stdout, stderr io.Writer) int {
	s, err := connect.For(o)
	if err != nil {
		fmt.Fprintln(stderr, "freelane connect:", err)
		return 2
	}
	fmt.Fprintf(stdout, "Settings for pointing tools at FreeLane (%s):\n\n", s.Base)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TOOL\tNAME\tSPEAKS\tSETTINGS")
	for _, t := range s.Tools {
		where := "its settings screen"
		if t.File != nil {
			where = "~/" + t.File.Path
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", t.ID, t.Name, t.Dialect, where)
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	fmt.Fprintf(stdout, `
freelane connect TOOL           prints the tool's settings
freelane connect TOOL --write   merges them into its config file, keeping a backup

OpenAI SDKs and other OpenAI-compatible tools:
  export OPENAI_BASE_URL=%s
  export OPENAI_API_KEY=%s
`, s.OpenAIBase, s.Key)
	return 0
}

func printTool(t connect.ToolSetup, w io.Writer) {
	fmt.Fprintf(w, "%s calls %s (%s).\n", t.Name, t.Endpoint, t.Dialect)
	if t.Shell != "" {
		fmt.Fprintf(w, "\nEnvironment variables:\n\n%s", indent(t.Shell))
	}
	if t.File != nil {
		lead := "In"
		if t.Shell != "" {
			lead = "Or in"
		}
		fmt.Fprintf(w, "\n%s ~/%s (%%USERPROFILE%%\\%s on Windows):\n\n%s", lead, t.File.Path, t.File.Windows, indent(t.File.Content))
	}
	if len(t.Steps) > 0 {
		fmt.Fprintln(w, "\nIn its settings:")
		fmt.Fprintln(w)
		for i, s := range t.Steps {
			fmt.Fprintf(w, "  %d. %s\n", i+1, s)
		}
	}
	if len(t.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range t.Notes {
			fmt.Fprintln(w, "- "+n)
		}
	}
	if t.Write != "" {
		fmt.Fprintf(w, "\nTo merge this into your own ~/%s (other settings kept, the old file backed up):\n\n  %s\n", t.File.Path, t.Write)
	}
}

func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		switch l {
		case "":
		case "\n":
			b.WriteString(l)
		default:
			b.WriteString("  " + l)
		}
	}
	return b.String()
}
