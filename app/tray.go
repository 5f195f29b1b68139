package main

import "freelane/backend/config"

// trayState is everything the tray shows.
type trayState struct {
	view         trayView
	paused       bool
	chains       []string
	defaultChain string
	// gear is the default chain's gear (config.GearAuto or GearManual).
	gear      string
	autostart bool
}

// gearTitle is the tray's gear item for the default chain: checked when
// the chain is in the manual gear, its listed order.
func gearTitle(s trayState) string {
	return "Manual gear for " + s.defaultChain
}

// otherGear is the gear a click on the gear item switches to.
func otherGear(gear string) string {
	if gear == config.GearManual {
		return config.GearAuto
	}
	return config.GearManual
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
	// setGear switches the gear of a chain.
	setGear(chain, gear string)
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
