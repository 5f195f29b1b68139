// Command freelane is the FreeLane local LLM router: one OpenAI-compatible
// endpoint on 127.0.0.1:7788 in front of an ordered chain of model backends.
//
//	freelane         [--config FILE] [--data-dir DIR] [--listen ADDR]   desktop app (headless without a display)
//	freelane serve   [--config FILE] [--data-dir DIR] [--listen ADDR]   headless server
//	freelane check   --config FILE
//	freelane dashboard-url [--data-dir DIR]
//	freelane connect [TOOL [--write]] [--url URL] [--model M] [--config FILE] [--data-dir DIR]
//	freelane version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"freelane/backend/auth"
	"freelane/backend/clock"
	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/frontend"
)

// version, commit and date are set at build time with -ldflags "-X
// main.version=... -X main.commit=... -X main.date=...": the release
// number (build/VERSION), the git commit built and when, in UTC.
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

// versionLine is what `freelane version` prints and the dashboard shows.
func versionLine() string {
	return fmt.Sprintf("%s (commit %s, built %s)", version, commit, date)
}

// shutdownGrace bounds how long in-flight requests may run after a signal.
const shutdownGrace = 20 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	// The one clock of the whole program: everything that dates, schedules
	// or measures reads it.
	clk := clock.Real{}
	cmd := "app"
	switch {
	case len(args) > 0 && !strings.HasPrefix(args[0], "-"):
		cmd, args = args[0], args[1:]
	case len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "--version"):
		// These are commands, not flags of the desktop app.
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "app":
		return serve(args, stdout, stderr, true, clk)
	case "serve":
		return serve(args, stdout, stderr, false, clk)
	case "check":
		return check(args, stdout, stderr)
	case "dashboard-url":
		return dashboardURL(args, stdout, stderr)
	case "connect":
		return connectCmd(args, stdout, stderr, clk)
	case "version", "--version":
		fmt.Fprintln(stdout, "freelane", versionLine())
		return 0
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "freelane: unknown command %q\n\n", cmd)
		usage(stderr)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `FreeLane: one OpenAI-compatible endpoint in front of all your model backends.

Usage:
  freelane         [--config FILE] [--data-dir DIR] [--listen ADDR]   the desktop app: window, tray and router
                                                                       (headless when there is no display)
  freelane serve   [--config FILE] [--data-dir DIR] [--listen ADDR]   run the router headless
  freelane check   --config FILE                                       validate a config file
  freelane dashboard-url [--data-dir DIR]                              print a fresh one-time link that signs a
                                                                       browser in to the running FreeLane's dashboard
  freelane connect [TOOL] [--write] [--url URL] [--model M] [--config FILE] [--data-dir DIR]
                                                                       print the settings that point a tool at FreeLane
                                                                       (claude-code, codex, gemini-cli, opencode, continue,
                                                                       cline, cursor); --write merges them into the tool's
                                                                       config file, keeping a backup; no TOOL lists them
  freelane version                                                     print the version

Point tools at http://127.0.0.1:7788/v1 with model "auto"; freelane connect TOOL has each agent's settings.
To listen off loopback, set an inbound token (FREELANE_TOKEN or server.token in the config).
`)
}

type serveFlags struct {
	config   string
	dataDir  string
	listen   string
	logLevel string
}

func parseServeFlags(name string, args []string, stderr io.Writer) (*serveFlags, error) {
	f := &serveFlags{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.config, "config", "", "YAML config file (providers, chains, settings)")
	fs.StringVar(&f.dataDir, "data-dir", defaultDataDir(), "directory for the database")
	fs.StringVar(&f.listen, "listen", "", "address to listen on (default 127.0.0.1:7788, or listen: in the config)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return f, nil
}

// defaultDataDir is the OS user config dir plus /freelane
// (~/.config/freelane on Linux).
func defaultDataDir() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ".freelane"
	}
	return filepath.Join(dir, "freelane")
}

func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// serve runs FreeLane. With desktop set it opens the window and the tray
// when the binary has them and a display exists, and serves headless
// otherwise.
func serve(args []string, stdout, stderr io.Writer, desktop bool, clk clock.Clock) int {
	name := "serve"
	if desktop {
		name = "freelane"
	}
	f, err := parseServeFlags(name, args, stderr)
	if err != nil {
		return 2
	}
	log, err := newLogger(f.logLevel, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "freelane:", err)
		return 2
	}
	var cfg *config.Config
	if f.config != "" {
		var warnings []config.Problem
		cfg, warnings, err = config.Load(f.config)
		if err != nil {
			fmt.Fprintln(stderr, "freelane: the config file has problems:")
			fmt.Fprintln(stderr, err)
			return 1
		}
		for _, w := range warnings {
			log.Warn("config", "file", f.config, "problem", w.String())
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// One FreeLane per data directory: a second launch brings the first
	// one's window forward and leaves.
	inst, err := acquireInstance(f.dataDir, log)
	if err != nil {
		var running *RunningError
		if errors.As(err, &running) {
			if running.Reply == replyShown {
				fmt.Fprintf(stdout, "FreeLane is already running at %s; its window was brought forward.\n", running.Endpoint)
			} else {
				fmt.Fprintf(stdout, "FreeLane is already running (headless) at %s.\n", running.Endpoint)
			}
			if desktop {
				return 0
			}
			fmt.Fprintf(stderr, "freelane serve: another FreeLane uses the data directory %s; stop it or pass another --data-dir\n", f.dataDir)
			return 1
		}
		log.Error("cannot start", "err", err)
		return 1
	}
	defer func() {
		if err := inst.Close(); err != nil {
			log.Warn("removing the instance socket", "err", err)
		}
	}()

	g, err := gateway.New(ctx, gateway.Options{
		Config: cfg, ConfigPath: f.config, Listen: f.listen, DataDir: f.dataDir,
		Logger: log, Version: versionLine(), Assets: frontend.Assets(),
		Clock: clk,
		// FREELANE_KEYCHAIN=off keeps the key vault's master key in a file
		// in the data directory, for servers without a Secret Service.
		Keychain: os.Getenv("FREELANE_KEYCHAIN") != "off",
		// The inbound token, required to listen off loopback.
		Token: os.Getenv("FREELANE_TOKEN"),
	})
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	if err := g.Start(); err != nil {
		log.Error("cannot start", "err", err)
		_ = g.Shutdown(context.Background())
		return 1
	}
	inst.setShow(nil, "http://"+g.Addr()+"/v1")
	inst.setLoginURL(g.LoginURL)
	announce(g, stdout, log)

	if desktop {
		switch why := desktopUnavailable(); why {
		case "":
			// The window owns the process from here; it returns once the
			// user quits or a signal arrives.
			stop()
			code := runDesktop(g, inst, f, log)
			return shutdown(g, log, code)
		default:
			log.Info("serving headless: "+why, "endpoint", "http://"+g.Addr()+"/v1")
		}
	}
	<-ctx.Done()
	stop()
	return shutdown(g, log, 0)
}

// announce prints where the dashboard is, with a one-time link that signs
// a browser in, and warns loudly when other machines can reach FreeLane.
func announce(g *gateway.Gateway, stdout io.Writer, log *slog.Logger) {
	link := g.LoginURL()
	if g.OffLoopback() {
		fmt.Fprintf(stdout, "WARNING: FreeLane listens on %s, reachable from other machines. /v1 requires the inbound token; traffic is not encrypted.\n", g.Addr())
	}
	fmt.Fprintf(stdout, "FreeLane dashboard: %s\n(the link signs one browser in, once, within %s; run freelane dashboard-url for a new one)\n", link, auth.LoginTTL)
	log.Info("dashboard login link (works once, within 10 minutes)", "url", link)
}

// dashboardURL prints a fresh dashboard login link, minted by the running
// FreeLane of the data directory.
func dashboardURL(args []string, stdout, stderr io.Writer) int {
	f, err := parseServeFlags("dashboard-url", args, stderr)
	if err != nil {
		return 2
	}
	u, err := askLoginURL(f.dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "freelane dashboard-url:", err)
		return 1
	}
	fmt.Fprintln(stdout, u)
	return 0
}

// shutdown finishes requests in flight, flushes the request log and
// returns the exit code.
func shutdown(g *gateway.Gateway, log *slog.Logger, code int) int {
	log.Info("shutting down: finishing requests in flight", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := g.Shutdown(sctx); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	log.Info("stopped")
	return code
}

// desktopUnavailable says why the desktop app cannot open here, or "".
func desktopUnavailable() string {
	if !desktopBuilt {
		return "this binary was built without the desktop app (build with make build)"
	}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" && !displayAlwaysPresent {
		return "no display found (DISPLAY and WAYLAND_DISPLAY are unset)"
	}
	return ""
}

func check(args []string, stdout, stderr io.Writer) int {
	f, err := parseServeFlags("check", args, stderr)
	if err != nil {
		return 2
	}
	if f.config == "" {
		fmt.Fprintln(stderr, "freelane check: --config FILE is required")
		return 2
	}
	cfg, problems, err := config.Load(f.config)
	for _, p := range problems {
		if p.Warning {
			fmt.Fprintf(stdout, "%s:%s\n", f.config, p.String())
		}
	}
	if err != nil {
		var ve *config.ValidationError
		if errors.As(err, &ve) {
			fmt.Fprintln(stdout, ve.Error())
			fmt.Fprintf(stdout, "%s: %d problem(s)\n", f.config, len(ve.Problems))
			return 1
		}
		fmt.Fprintln(stderr, "freelane check:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: OK (%d providers, %d chains)\n", f.config, len(cfg.Providers), len(cfg.Chains))
	return 0
}
