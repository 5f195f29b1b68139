package main

// trayState is everything the tray shows.
type trayState struct {
	view         trayView
	paused       bool
	chains       []string
	defaultChain string
	autostart    bool
}

// trayUI is the system tray icon and its menu. tray_systray.go implements
// it with fyne.io/systray; where there is no tray (no session bus, macOS)
// noTray stands in.
type trayUI interface {
	start()
	end()
	update(trayState)
	available() bool
}

// trayActions is what the tray's menu does; the desktop app provides it.
type trayActions interface {
	show() bool
	copyEndpoint()
	setPaused(bool)
	setDefaultChain(string)
	setAutostart(bool)
	quit()
}

// noTray is the tray where none can be shown: the window and the router
// work the same, the app just has no icon.
type noTray struct{}

func (noTray) start()           {}
func (noTray) end()             {}
func (noTray) update(trayState) {}
func (noTray) available() bool  { return false }
