//go:build smoke && linux

package main

// The desktop smoke test drives the built desktop binary (make build) in a
// real window under Xvfb with a private DBus session bus:
//
//	dbus-run-session -- xvfb-run -a -s "-screen 0 1280x800x24" \
//	    go test -tags smoke -run TestDesktop ./app
//
// make test-desktop runs exactly that.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"freelane/backend/store"
)

// desktopBin is the binary under test, built by make build.
func desktopBin(t *testing.T) string {
	bin := os.Getenv("FREELANE_DESKTOP_BIN")
	if bin == "" {
		bin = "../build/bin/freelane"
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("%v: run make build first", err)
	}
	return abs
}

// proc is a running freelane with its log captured.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  strings.Builder
	done chan struct{}
	err  error
}

func startProc(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", strings.Join(args, " "), p.logText())
		}
	})
	return p
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// waitLog waits until the log contains all of want.
func (p *proc) waitLog(t *testing.T, d time.Duration, want ...string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		text := p.logText()
		all := true
		for _, w := range want {
			if !strings.Contains(text, w) {
				all = false
			}
		}
		if all {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("freelane exited (%v) before logging %q", p.err, want)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("no %q in the log after %s", want, d)
}

// exitCode waits for the process to end and returns its exit code.
func (p *proc) exitCode(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("freelane did not exit within %s", d)
	}
	if p.err == nil {
		return 0
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("waiting for freelane: %v", p.err)
	return -1
}

// fakeUpstream starts build/bin/fakeupstream (a fake OpenAI server) and
// returns its base URL.
func fakeUpstream(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := filepath.Abs("../build/bin/fakeupstream")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%v: run make build first", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("fake upstream: %v", err)
	}
	return strings.TrimSpace(line)
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// notifications is a fake org.freedesktop.Notifications service on the
// session bus, recording what the app shows.
type notifications struct {
	mu   sync.Mutex
	seen []string
}

func (n *notifications) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seen = append(n.seen, summary+": "+body)
	return uint32(len(n.seen)), nil
}

func (n *notifications) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.seen...)
}

func startNotifications(t *testing.T) *notifications {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		t.Fatalf("no session bus (run under dbus-run-session): %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	n := &notifications{}
	if err := conn.Export(n, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("taking the notification service name: %v %v", reply, err)
	}
	return n
}

// trayMenuPath is where fyne.io/systray exports the tray's dbusmenu.
const trayMenuPath = "/StatusNotifierItem/menu"

// menuItem is one entry of the tray's dbusmenu.
type menuItem struct {
	id    int32
	label string
}

// trayMenu reads the tray's menu over DBus (com.canonical.dbusmenu), the
// way a desktop's panel does.
func trayMenu(t *testing.T, conn *dbus.Conn, dest string) []menuItem {
	t.Helper()
	var rev uint32
	var layout []any
	call := conn.Object(dest, trayMenuPath).Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{})
	if call.Err != nil {
		t.Fatalf("GetLayout: %v", call.Err)
	}
	if err := call.Store(&rev, &layout); err != nil {
		t.Fatalf("GetLayout reply: %v", err)
	}
	var items []menuItem
	var walk func(node []any)
	walk = func(node []any) {
		id, _ := node[0].(int32)
		props, _ := node[1].(map[string]dbus.Variant)
		if l, ok := props["label"]; ok {
			items = append(items, menuItem{id: id, label: l.Value().(string)})
		}
		children, _ := node[2].([]dbus.Variant)
		for _, c := range children {
			if sub, ok := c.Value().([]any); ok {
				walk(sub)
			}
		}
	}
	walk(layout)
	return items
}

// trayIconColour reads the tray icon's pixels as a panel does
// (StatusNotifierItem.IconPixmap, ARGB32) and returns the colour of the
// mark's square, left of the lanes.
func trayIconColour(t *testing.T, conn *dbus.Conn, dest string) color.RGBA {
	t.Helper()
	v, err := conn.Object(dest, "/StatusNotifierItem").GetProperty("org.kde.StatusNotifierItem.IconPixmap")
	if err != nil {
		t.Fatalf("IconPixmap: %v", err)
	}
	var icons []struct {
		W, H int32
		Pix  []byte
	}
	if err := dbus.Store([]any{v.Value()}, &icons); err != nil || len(icons) == 0 {
		t.Fatalf("IconPixmap %v: %v", v, err)
	}
	ic := icons[0]
	x, y := int(ic.W)/8, int(ic.H)/2
	i := (y*int(ic.W) + x) * 4
	if len(ic.Pix) < i+4 {
		t.Fatalf("icon of %dx%d has %d bytes", ic.W, ic.H, len(ic.Pix))
	}
	return color.RGBA{R: ic.Pix[i+1], G: ic.Pix[i+2], B: ic.Pix[i+3], A: ic.Pix[i]}
}

func clickTray(t *testing.T, conn *dbus.Conn, dest, label string) {
	t.Helper()
	for _, it := range trayMenu(t, conn, dest) {
		if it.label == label {
			call := conn.Object(dest, trayMenuPath).Call("com.canonical.dbusmenu.Event", 0, it.id, "clicked", dbus.MakeVariant(int32(0)), uint32(0))
			if call.Err != nil {
				t.Fatalf("clicking %q: %v", label, call.Err)
			}
			return
		}
	}
	t.Fatalf("no %q in the tray menu: %+v", label, trayMenu(t, conn, dest))
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestDesktopSmoke(t *testing.T) {
	if os.Getenv("DISPLAY") == "" || os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		t.Fatal("run under dbus-run-session -- xvfb-run (make test-desktop)")
	}
	bin := desktopBin(t)
	freeURL := fakeUpstream(t)
	ownURL := fakeUpstream(t, "-require-key", "sk-the-right-key-000000")
	notes := startNotifications(t)

	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	addr := freePort(t)
	cfg := fmt.Sprintf(`listen: %s
providers:
  - name: mine
    tier: own
    base_url: %s
    api_key: sk-a-rejected-key-111111
    models: [{id: own-model}]
  - name: fake
    tier: free
    base_url: %s
    keyless: true
    models: [{id: fake-large, params_b: 70}]
chains:
  - name: second
    backends: [fake/fake-large]
`, addr, ownURL, freeURL)
	cfgPath := filepath.Join(dir, "freelane.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// LANG=C.UTF-8 is what CI machines have; the app must still render.
	env := []string{"LANG=C.UTF-8", "FREELANE_KEYCHAIN=off", "XDG_CONFIG_HOME=" + filepath.Join(dir, "xdg")}
	started := time.Now()
	app := startProc(t, bin, env, "--config", cfgPath, "--data-dir", data)

	// The window's webview has loaded the dashboard and opened its
	// websocket.
	app.waitLog(t, 90*time.Second, "desktop window open", `msg="dashboard connected" client=window`)
	t.Logf("window connected %s after start", time.Since(started).Round(time.Millisecond))

	// A second launch brings the first forward and leaves with 0.
	second := startProc(t, bin, env, "--config", cfgPath, "--data-dir", data)
	if code := second.exitCode(t, 20*time.Second); code != 0 {
		t.Fatalf("second launch exited %d: %s", code, second.logText())
	}
	if !strings.Contains(second.logText(), "already running at http://"+addr+"/v1; its window was brought forward") {
		t.Errorf("second launch said: %s", second.logText())
	}
	app.waitLog(t, 5*time.Second, "another launch of FreeLane asked for the window", "answer=shown")

	// A chat request through /v1: the own key is rejected (401), so it
	// fails over to the free backend and the user is told about the key.
	base := "http://" + addr
	resp, body := post(t, base+"/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"hello"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("X-FreeLane-Backend") != "fake/fake-large" {
		t.Fatalf("chat: %d %s %s", resp.StatusCode, resp.Header.Get("X-FreeLane-Attempts"), body)
	}
	reqID := resp.Header.Get("X-FreeLane-Request-Id")
	waitFor(t, 10*time.Second, "the rejected-key notification", func() bool {
		for _, n := range notes.all() {
			if strings.Contains(n, "API key refused") && strings.Contains(n, "mine") {
				return true
			}
		}
		return false
	})

	// Screenshot of the whole screen once the dashboard shows the request.
	time.Sleep(1500 * time.Millisecond)
	shots, _ := filepath.Abs("../build/screenshots")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(shots, "desktop.png")
	if out, err := exec.Command("import", "-window", "root", shot).CombinedOutput(); err != nil {
		t.Fatalf("screenshot: %v %s", err, out)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s looks empty: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)

	// The tray: status line, then Pause, then Quit, clicked over DBus.
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dest := fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", app.cmd.Process.Pid)
	// A panel's first GetLayout only gets the top level (fyne's systray
	// does that on purpose); the submenu comes with the next one.
	want := []string{"Open dashboard", "Copy endpoint URL", "Pause routing", "Default chain", "auto", "second", "Start at login", "Quit"}
	var labels []string
	waitFor(t, 5*time.Second, "the whole tray menu", func() bool {
		labels = labels[:0]
		for _, it := range trayMenu(t, conn, dest) {
			labels = append(labels, it.label)
		}
		for _, w := range want {
			if !slices.Contains(labels, w) {
				return false
			}
		}
		return true
	})
	if !strings.HasPrefix(labels[0], "Degraded: serving from fake/fake-large") {
		t.Errorf("tray status line %q, want degraded (the own key is disabled)", labels[0])
	}

	// The icon is amber: the own key is disabled, the free backend serves.
	if c := trayIconColour(t, conn, dest); c != amberColor {
		t.Errorf("tray icon %v, want amber %v", c, amberColor)
	}

	// Default chain: route auto to "second", which has only the free
	// backend, so the own key is no longer even tried.
	clickTray(t, conn, dest, "second")
	waitFor(t, 5*time.Second, "auto to route to the chain second", func() bool {
		resp, _ := post(t, base+"/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"hi"}]}`)
		return resp.StatusCode == 200 && resp.Header.Get("X-FreeLane-Attempts") == "fake/fake-large=ok"
	})
	// With only the free backend in the default chain the tray is green.
	waitFor(t, 5*time.Second, "a green tray icon", func() bool { return trayIconColour(t, conn, dest) == greenColor })

	// Copy endpoint URL puts the /v1 address on the clipboard.
	clickTray(t, conn, dest, "Copy endpoint URL")
	waitFor(t, 5*time.Second, "the endpoint on the clipboard", func() bool {
		out, err := exec.Command("xclip", "-selection", "clipboard", "-o").Output()
		return err == nil && string(out) == base+"/v1"
	})

	// Start at login writes the XDG autostart entry with the flags used.
	clickTray(t, conn, dest, "Start at login")
	entry := filepath.Join(dir, "xdg", "autostart", "freelane.desktop")
	waitFor(t, 5*time.Second, "the autostart entry", func() bool {
		b, err := os.ReadFile(entry)
		return err == nil && strings.Contains(string(b), "Exec="+bin+" --config "+cfgPath+" --data-dir "+data)
	})

	clickTray(t, conn, dest, "Pause routing")
	waitFor(t, 5*time.Second, "503 while paused", func() bool {
		resp, body := post(t, base+"/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"hi"}]}`)
		return resp.StatusCode == 503 && strings.Contains(body, "FreeLane is paused")
	})
	waitFor(t, 5*time.Second, "the tray to offer Resume", func() bool {
		for _, it := range trayMenu(t, conn, dest) {
			if it.label == "Resume routing" {
				return true
			}
		}
		return false
	})
	if c := trayIconColour(t, conn, dest); c != greyColor {
		t.Errorf("paused tray icon %v, want grey %v", c, greyColor)
	}

	clickTray(t, conn, dest, "Quit")
	if code := app.exitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("Quit: exit code %d", code)
	}
	if !strings.Contains(app.logText(), `msg="quit from the tray"`) || !strings.Contains(app.logText(), "msg=stopped") {
		t.Errorf("log does not show a clean quit")
	}

	// The request is in the log, and the window's place was remembered.
	db, err := store.Open(context.Background(), filepath.Join(data, "freelane.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reqs, err := db.RecentRequests(context.Background(), store.RequestQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range reqs {
		if r.ID == reqID && r.Backend == "fake/fake-large" && r.Status == 200 {
			found = true
		}
	}
	if !found {
		t.Errorf("request %s not in the log: %+v", reqID, reqs)
	}
	var geo geometry
	if b, err := os.ReadFile(filepath.Join(data, "window.json")); err != nil || json.Unmarshal(b, &geo) != nil || geo.Width < 400 {
		t.Errorf("window geometry not remembered: %v %+v", err, geo)
	}
}

// TestDesktopHeadlessFallbacks: without a display FreeLane serves headless
// and says so; without a session bus it runs without a tray; both stop
// cleanly on SIGTERM.
func TestDesktopHeadlessFallbacks(t *testing.T) {
	bin := desktopBin(t)
	upURL := fakeUpstream(t)
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"no display", []string{"DISPLAY=", "WAYLAND_DISPLAY="}, "serving headless: no display found"},
		{"no session bus", []string{"DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent/bus"}, "no DBus session bus: running without a tray icon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			addr := freePort(t)
			cfg := fmt.Sprintf("listen: %s\nproviders:\n  - name: fake\n    tier: free\n    base_url: %s\n    keyless: true\n    models: [{id: m}]\n", addr, upURL)
			cfgPath := filepath.Join(dir, "c.yaml")
			if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			env := append([]string{"FREELANE_KEYCHAIN=off", "NO_AT_BRIDGE=1"}, tc.env...)
			p := startProc(t, bin, env, "--config", cfgPath, "--data-dir", filepath.Join(dir, "data"))
			p.waitLog(t, 60*time.Second, tc.want, "FreeLane is serving")
			resp, body := post(t, "http://"+addr+"/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"hi"}]}`)
			if resp.StatusCode != 200 {
				t.Fatalf("chat: %d %s", resp.StatusCode, body)
			}
			if tc.name == "no session bus" {
				p.waitLog(t, 60*time.Second, "desktop window open")
			}
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			if code := p.exitCode(t, 30*time.Second); code != 0 {
				t.Fatalf("exit code %d", code)
			}
		})
	}
}

// TestDesktopBinaryVersion checks that the built binary says its release
// number (build/VERSION), the commit it was built from and when, in UTC.
func TestDesktopBinaryVersion(t *testing.T) {
	out, err := exec.Command(desktopBin(t), "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../build/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^freelane ` + regexp.QuoteMeta(strings.TrimSpace(string(want))) +
		` \(commit [0-9a-f]{12}(-dirty)?, built \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)\n$`)
	if !re.Match(out) {
		t.Fatalf("freelane version printed %q", out)
	}
}
