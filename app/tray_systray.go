//go:build desktop && !darwin

package main

import (
	"log/slog"
	"runtime"
	"slices"
	"sync"

	"fyne.io/systray"
	"github.com/godbus/dbus/v5"

	"freelane/backend/config"
)

// systrayUI is the tray on Linux (StatusNotifierItem over DBus) and
// Windows (notification area).
type systrayUI struct {
	act trayActions
	log *slog.Logger

	startFn, endFn func()

	ready chan struct{} // closed once the menu is built
	mu    sync.Mutex    // guards the menu items and last
	last  trayState
	level trayLevel
	first bool

	status, open, copyURL, pause, chainMenu, gear, autostart, quit *systray.MenuItem
	chainItems                                                     map[string]*systray.MenuItem
	chainOrder                                                     []string
	chainsStop                                                     chan struct{} // ends the current chain items' click loops
	stopClicks                                                     chan struct{}
	// work queues the clicked items' actions for one goroutine that runs
	// them in order. The systray library drops a click that nobody is
	// receiving at that moment, so the loops that receive clicks only
	// queue and never wait on an action.
	work chan func()
}

// clickQueue is how many clicked actions may wait for the one before.
const clickQueue = 32

// newTray returns the tray, or noTray when none can run here. Without a
// DBus session bus fyne's systray would crash at shutdown (it closes a
// connection it never opened), so check first.
func newTray(act trayActions, log *slog.Logger) trayUI {
	if runtime.GOOS == "linux" {
		conn, err := dbus.SessionBus()
		if err != nil {
			log.Info("no DBus session bus: running without a tray icon", "err", err)
			return noTray{}
		}
		_ = conn // shared; systray uses the same connection
	}
	t := &systrayUI{act: act, log: log, ready: make(chan struct{}), chainItems: map[string]*systray.MenuItem{},
		stopClicks: make(chan struct{}), work: make(chan func(), clickQueue), first: true}
	t.startFn, t.endFn = systray.RunWithExternalLoop(t.onReady, nil)
	return t
}

func (t *systrayUI) available() bool { return true }

func (t *systrayUI) start() { t.startFn() }

func (t *systrayUI) end() {
	close(t.stopClicks)
	t.endFn()
}

// onReady builds the menu. Item order is fixed so the desktop smoke test
// and screen readers find the same menu every time.
func (t *systrayUI) onReady() {
	systray.SetIcon(markPNG(64, greenColor))
	systray.SetTitle("FreeLane")
	systray.SetTooltip("FreeLane")
	t.mu.Lock()
	t.status = systray.AddMenuItem("Starting…", "How routing is doing")
	t.status.Disable()
	systray.AddSeparator()
	t.open = systray.AddMenuItem("Open dashboard", "Show the FreeLane window")
	t.copyURL = systray.AddMenuItem("Copy endpoint URL", "Copy the /v1 address for your tools")
	t.pause = systray.AddMenuItem("Pause routing", "Answer 503 to every /v1 request until resumed")
	t.chainMenu = systray.AddMenuItem("Default chain", "The chain the model \"auto\" routes to")
	t.gear = systray.AddMenuItemCheckbox("Manual gear", "Route the default chain in its listed order instead of by its strategy", false)
	t.autostart = systray.AddMenuItemCheckbox("Start at login", "Start FreeLane when you log in", false)
	systray.AddSeparator()
	t.quit = systray.AddMenuItem("Quit", "Stop routing and quit FreeLane")
	t.mu.Unlock()
	close(t.ready)
	go t.clicks()
	go t.runActions()
}

// runActions runs the queued actions of clicks, in click order, until the
// tray ends.
func (t *systrayUI) runActions() {
	for {
		select {
		case <-t.stopClicks:
			return
		case f := <-t.work:
			f()
		}
	}
}

// do queues a click's action.
func (t *systrayUI) do(f func()) {
	select {
	case t.work <- f:
	case <-t.stopClicks:
	}
}

// clicks runs the fixed items' actions until the tray ends.
func (t *systrayUI) clicks() {
	for {
		select {
		case <-t.stopClicks:
			return
		case <-t.open.ClickedCh:
			t.do(func() { t.act.show() })
		case <-t.copyURL.ClickedCh:
			t.do(t.act.copyEndpoint)
		case <-t.pause.ClickedCh:
			// The state is read when the action runs, so two quick clicks
			// pause and resume.
			t.do(func() {
				t.mu.Lock()
				paused := t.last.paused
				t.mu.Unlock()
				t.act.setPaused(!paused)
			})
		case <-t.gear.ClickedCh:
			// Like Pause, the gear is read when the action runs.
			t.do(func() {
				t.mu.Lock()
				chain, gear := t.last.defaultChain, t.last.gear
				t.mu.Unlock()
				t.act.setGear(chain, otherGear(gear))
			})
		case <-t.autostart.ClickedCh:
			t.do(func() { t.act.setAutostart(!t.autostart.Checked()) })
		case <-t.quit.ClickedCh:
			t.do(t.act.quit)
			return
		}
	}
}

// update shows a new state; only what changed is sent over the bus.
func (t *systrayUI) update(s trayState) {
	select {
	case <-t.ready:
	default:
		return // the menu is not built yet; the next refresh will do
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.first || s.view.Level != t.level {
		systray.SetIcon(markPNG(64, s.view.Level.color()))
		t.level = s.view.Level
	}
	if t.first || s.view.Status != t.last.view.Status {
		t.status.SetTitle(s.view.Status)
	}
	if t.first || s.view.Tooltip != t.last.view.Tooltip {
		systray.SetTooltip(s.view.Tooltip)
	}
	if t.first || s.paused != t.last.paused {
		if s.paused {
			t.pause.SetTitle("Resume routing")
		} else {
			t.pause.SetTitle("Pause routing")
		}
	}
	if t.first || s.gear != t.last.gear || s.defaultChain != t.last.defaultChain {
		t.gear.SetTitle(gearTitle(s))
		if s.gear == config.GearManual {
			t.gear.Check()
		} else {
			t.gear.Uncheck()
		}
	}
	if t.first || s.autostart != t.last.autostart {
		if s.autostart {
			t.autostart.Check()
		} else {
			t.autostart.Uncheck()
		}
	}
	if !slices.Equal(s.chains, t.chainOrder) {
		t.rebuildChains(s.chains)
	}
	for name, it := range t.chainItems {
		if name == s.defaultChain {
			it.Check()
		} else {
			it.Uncheck()
		}
	}
	t.last, t.first = s, false
}

// rebuildChains replaces the Default chain submenu's items after chains
// were added, removed or renamed.
func (t *systrayUI) rebuildChains(chains []string) {
	for _, it := range t.chainItems {
		it.Remove()
	}
	if t.chainsStop != nil {
		close(t.chainsStop)
	}
	stop := make(chan struct{})
	t.chainsStop = stop
	t.chainItems = map[string]*systray.MenuItem{}
	t.chainOrder = slices.Clone(chains)
	for _, name := range chains {
		it := t.chainMenu.AddSubMenuItemCheckbox(name, "Route \"auto\" to "+name, false)
		t.chainItems[name] = it
		go func(name string, it *systray.MenuItem) {
			for {
				select {
				case <-t.stopClicks:
					return
				case <-stop:
					return
				case _, ok := <-it.ClickedCh:
					if !ok {
						return
					}
					t.do(func() { t.act.setDefaultChain(name) })
				}
			}
		}(name, it)
	}
}
