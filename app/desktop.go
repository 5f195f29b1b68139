//go:build desktop

package main

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"
	"github.com/wailsapp/wails/v2/pkg/runtime"

	"freelane/backend/config"
	"freelane/backend/events"
	"freelane/backend/gateway"
)

// desktopBuilt is true in binaries built with the desktop tag.
const desktopBuilt = true

// trayRefresh is how often the tray re-reads the router's state. Changes
// announced on the event bus refresh it at once; this catches the rest
// (recovered backends, today's count).
const trayRefresh = 2 * time.Second

// quitRetry is how often a signal's quit is asked again until the app has
// ended.
const quitRetry = 500 * time.Millisecond

// desktop is the running desktop app: one window, one tray, the router.
type desktop struct {
	g      *gateway.Gateway
	inst   *instance
	f      *serveFlags
	log    *slog.Logger
	os     desktopOS
	tray   trayUI
	alerts *alerter

	url     string // the dashboard, served by the router itself
	geoPath string

	mu    sync.Mutex
	wctx  context.Context // Wails' context, set at startup
	geo   geometry
	ready bool

	stop  context.CancelFunc // stops the loops below
	loops sync.WaitGroup
	// quitMu keeps a repeated quit from saving the geometry twice at once.
	quitMu sync.Mutex
}

// runDesktop opens the window and the tray and returns when the user quits
// or a signal arrives; the caller then shuts the router down.
func runDesktop(g *gateway.Gateway, inst *instance, f *serveFlags, log *slog.Logger) int {
	fixLocale(log)
	d := &desktop{
		g: g, inst: inst, f: f, log: log, os: newDesktopOS(), alerts: newAlerter(),
		url:     "http://" + loopbackAddr(g.Addr()) + "/",
		geoPath: filepath.Join(f.dataDir, "window.json"),
		geo:     geometry{Width: 1280, Height: 820},
	}
	defer d.os.Close()
	d.loadGeometry()
	d.tray = newTray(d, log)

	// A signal that arrives before GTK's main loop runs is lost by Wails'
	// own handler (its quit finds no loop to end), and the app would then
	// run on. So the window also owns SIGINT and SIGTERM, and keeps asking
	// to quit until it has.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ended := make(chan struct{})
	defer close(ended)
	go d.quitOnSignal(sigs, ended)

	err := wails.Run(&options.App{
		Title:     "FreeLane",
		Width:     d.geo.Width,
		Height:    d.geo.Height,
		MinWidth:  720,
		MinHeight: 480,
		// Closing the window hides it; the router keeps serving and the
		// tray brings it back. Quit is in the tray menu.
		HideWindowOnClose: true,
		AssetServer:       &assetserver.Options{Handler: http.HandlerFunc(d.redirect)},
		BackgroundColour:  &options.RGBA{R: 0xf8, G: 0xfa, B: 0xfc, A: 0xff},
		OnStartup:         d.startup,
		OnDomReady:        d.domReady,
		OnBeforeClose:     d.beforeQuit,
		OnShutdown:        d.shutdown,
		Linux: &linux.Options{
			Icon:        markPNG(256, brandColor),
			ProgramName: "freelane",
			// No GPU on many machines this runs on (and none under Xvfb);
			// software rendering is plenty for a dashboard.
			WebviewGpuPolicy: linux.WebviewGpuPolicyNever,
		},
	})
	if err != nil {
		log.Error("the desktop window failed", "err", err)
		return 1
	}
	return 0
}

// redirect is the only page Wails' own asset server serves: it sends the
// webview to the router's dashboard, so the window and a browser use one
// origin and one websocket (Wails' asset server cannot upgrade websockets).
// The link carries a fresh one-time login code in its fragment, which the
// dashboard's page exchanges for a session, so the window is signed in
// without the user doing anything; only this process's webview loads this
// page.
func (d *desktop) redirect(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	link := d.g.LoginURL()
	u := html.EscapeString(link)
	// One navigation only: a meta refresh next to the script could open
	// the link a second time, and the second use of a code is refused.
	fmt.Fprintf(w, `<!doctype html><meta charset="utf-8"><title>FreeLane</title>`+
		`<script>location.replace(%q)</script>`+
		`<p style="font-family:sans-serif">Opening the dashboard at <a href="%s">%s</a>…</p>`, link, u, html.EscapeString(d.url))
}

func (d *desktop) startup(ctx context.Context) {
	d.mu.Lock()
	d.wctx = ctx
	d.mu.Unlock()
	d.tray.start()
	d.inst.setShow(d.show, "http://"+loopbackAddr(d.g.Addr())+"/v1")

	loopCtx, stop := context.WithCancel(context.Background())
	d.stop = stop
	sub := d.g.Events().Subscribe(256)
	notes := d.g.Notifications().Subscribe(64)
	d.loops.Add(3)
	go func() {
		defer d.loops.Done()
		defer sub.Close()
		d.watch(loopCtx, sub)
	}()
	go func() {
		defer d.loops.Done()
		defer notes.Close()
		showNotices(loopCtx, notes, d.notify)
	}()
	go func() {
		defer d.loops.Done()
		d.trackGeometry(loopCtx)
	}()
	d.log.Info("desktop window open", "dashboard", d.url, "tray", d.tray.available())
}

func (d *desktop) domReady(ctx context.Context) {
	d.mu.Lock()
	first := !d.ready
	d.ready = true
	geo := d.geo
	d.mu.Unlock()
	if first && geo.Placed {
		runtime.WindowSetPosition(ctx, geo.X, geo.Y)
	}
}

// beforeQuit runs when the app is about to quit (tray Quit, a signal):
// remember the window and stop the loops that talk to it.
func (d *desktop) beforeQuit(ctx context.Context) bool {
	d.quitMu.Lock()
	defer d.quitMu.Unlock()
	if d.stop != nil {
		d.stop()
		d.loops.Wait()
	}
	d.saveGeometry()
	return false
}

func (d *desktop) shutdown(ctx context.Context) {
	d.tray.end()
}

// show brings the window forward (second launch, tray "Open dashboard").
func (d *desktop) show() bool {
	d.mu.Lock()
	ctx := d.wctx
	d.mu.Unlock()
	if ctx == nil {
		return false
	}
	runtime.WindowShow(ctx)
	runtime.WindowUnminimise(ctx)
	return true
}

// quit ends the app; the router shuts down after the window closes.
func (d *desktop) quit() {
	d.mu.Lock()
	ctx := d.wctx
	d.mu.Unlock()
	if ctx != nil {
		d.log.Info("quit from the tray")
		runtime.Quit(ctx)
	}
}

// quitOnSignal quits the app when a signal has not ended it within
// quitRetry, and again every quitRetry until it has, because a quit asked
// before the main loop started does nothing. It leaves the first quit to
// Wails' own signal handler: two quits at once end GTK's main loop from
// two threads together, which aborts the process.
func (d *desktop) quitOnSignal(sigs <-chan os.Signal, ended <-chan struct{}) {
	select {
	case <-sigs:
	case <-ended:
		return
	}
	d.log.Info("signal received: closing the window")
	t, tick := d.g.Clock().NewTicker(quitRetry)
	defer t.Stop()
	for {
		select {
		case <-tick:
		case <-ended:
			return
		}
		d.mu.Lock()
		ctx := d.wctx
		d.mu.Unlock()
		if ctx != nil {
			runtime.Quit(ctx)
		}
	}
}

func (d *desktop) copyEndpoint() {
	d.mu.Lock()
	ctx := d.wctx
	d.mu.Unlock()
	if ctx == nil {
		return
	}
	if err := runtime.ClipboardSetText(ctx, "http://"+loopbackAddr(d.g.Addr())+"/v1"); err != nil {
		d.log.Warn("copying the endpoint to the clipboard", "err", err)
	}
}

func (d *desktop) setPaused(on bool) {
	d.g.SetRoutingPaused(on)
	d.refresh()
}

func (d *desktop) setDefaultChain(name string) {
	if err := d.g.Control().SetDefaultChain(context.Background(), name); err != nil {
		d.log.Warn("setting the default chain", "chain", name, "err", err)
	}
	d.refresh()
}

func (d *desktop) setGear(chain, gear string) {
	if err := d.g.SwitchGear(context.Background(), chain, gear); err != nil {
		d.log.Warn("switching the gear", "chain", chain, "gear", gear, "err", err)
	}
	d.refresh()
}

func (d *desktop) setAutostart(on bool) {
	exe, err := os.Executable()
	if err != nil {
		d.log.Warn("start at login: cannot find this program", "err", err)
		return
	}
	argv := []string{exe}
	if d.f.config != "" {
		if abs, err := filepath.Abs(d.f.config); err == nil {
			argv = append(argv, "--config", abs)
		}
	}
	if d.f.dataDir != defaultDataDir() {
		argv = append(argv, "--data-dir", d.f.dataDir)
	}
	if d.f.listen != "" {
		argv = append(argv, "--listen", d.f.listen)
	}
	if err := d.os.SetAutostart(on, argv); err != nil {
		d.log.Warn("start at login", "err", err)
	}
	d.refresh()
}

// watch refreshes the tray on every event and every trayRefresh, and
// raises notifications for alerts the user must act on.
func (d *desktop) watch(ctx context.Context, sub *events.Subscription) {
	t, tick := d.g.Clock().NewTicker(trayRefresh)
	defer t.Stop()
	d.refresh()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub.C():
			if !ok {
				return
			}
			// A failing backend publishes events in bursts; handle every
			// one already waiting, then read the state once.
			for more := true; more; {
				if n, ok := d.alerts.fromEvent(e, d.g.Clock().Now()); ok {
					d.notify(n)
				}
				select {
				case e, more = <-sub.C():
				default:
					more = false
				}
			}
			d.refresh()
		case <-tick:
			d.refresh()
		}
	}
}

func (d *desktop) refresh() {
	snap := d.g.Snapshot()
	v := computeTray(trayInputFrom(snap))
	if n, ok := d.alerts.fromTray(v, d.g.Clock().Now()); ok {
		d.notify(n)
	}
	var chains []string
	current, gear := "auto", config.GearAuto
	for _, c := range snap.Chains {
		chains = append(chains, c.Name)
		if c.Default {
			current, gear = c.Name, c.Gear
		}
	}
	d.tray.update(trayState{view: v, paused: snap.RoutingPaused, chains: chains, defaultChain: current, gear: gear, autostart: d.os.AutostartEnabled()})
}

func (d *desktop) notify(n notification) {
	d.log.Info("notification", "title", n.Title, "body", n.Body)
	if err := d.os.Notify(n); err != nil {
		d.log.Debug("notification not shown", "err", err)
	}
}

// trackGeometry remembers the window's size and position while it is on
// screen. GTK hides a closed window without telling Wails, so polling is
// the only way to know where the user left it.
func (d *desktop) trackGeometry(ctx context.Context) {
	t, tick := d.g.Clock().NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		d.mu.Lock()
		wctx := d.wctx
		d.mu.Unlock()
		if wctx == nil || runtime.WindowIsMinimised(wctx) {
			continue
		}
		w, h := runtime.WindowGetSize(wctx)
		x, y := runtime.WindowGetPosition(wctx)
		if w < 200 || h < 200 {
			continue
		}
		d.mu.Lock()
		d.geo = geometry{Width: w, Height: h, X: x, Y: y, Placed: true}
		d.mu.Unlock()
	}
}

func (d *desktop) loadGeometry() {
	if g, ok := readGeometry(d.geoPath); ok {
		d.geo = g
	}
}

func (d *desktop) saveGeometry() {
	d.mu.Lock()
	g := d.geo
	d.mu.Unlock()
	if err := writeGeometry(d.geoPath, g); err != nil {
		d.log.Warn("remembering the window's place", "err", err)
	}
}

// fixLocale works around WebKitGTK reporting the page language as "c"
// under LANG=C, which makes Intl throw and leaves the window blank, and
// around blank windows with the DMA-BUF renderer on some GPUs.
func fixLocale(log *slog.Logger) {
	isC := func(v string) bool {
		base, _, _ := strings.Cut(v, ".")
		return base == "C" || base == "POSIX"
	}
	if v := os.Getenv("LC_ALL"); v != "" && isC(v) {
		os.Setenv("LC_ALL", "en_US.UTF-8")
	}
	if v := os.Getenv("LANG"); v == "" || isC(v) {
		log.Debug("locale is C: the window uses en_US.UTF-8", "LANG", v)
		os.Setenv("LANG", "en_US.UTF-8")
	}
	if os.Getenv("WEBKIT_DISABLE_DMABUF_RENDERER") == "" {
		os.Setenv("WEBKIT_DISABLE_DMABUF_RENDERER", "1")
	}
}

// loopbackAddr turns a listen address such as 0.0.0.0:7788 or [::]:7788
// into one the window can open.
func loopbackAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
