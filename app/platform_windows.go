package main

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/windows/registry"
)

// windowsDesktop starts at login through the user's Run key. Toast
// notifications need a registered AppUserModelID, which an unpackaged
// executable does not have, so alerts stay in the tray and the dashboard.
type windowsDesktop struct{}

func newDesktopOS() desktopOS { return windowsDesktop{} }

const runKey = `Software\Microsoft\Windows\CurrentVersion\Run`

func (windowsDesktop) AutostartEnabled() bool {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.QUERY_VALUE)
	if err != nil {
		return false
	}
	defer k.Close()
	_, _, err = k.GetStringValue("FreeLane")
	return err == nil
}

func (windowsDesktop) SetAutostart(on bool, argv []string) error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKey, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("opening the Run key: %w", err)
	}
	defer k.Close()
	if !on {
		if err := k.DeleteValue("FreeLane"); err != nil && !errors.Is(err, registry.ErrNotExist) {
			return fmt.Errorf("removing FreeLane from the Run key: %w", err)
		}
		return nil
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = `"` + strings.ReplaceAll(a, `"`, `\"`) + `"`
	}
	if err := k.SetStringValue("FreeLane", strings.Join(quoted, " ")); err != nil {
		return fmt.Errorf("adding FreeLane to the Run key: %w", err)
	}
	return nil
}

func (windowsDesktop) Notify(notification) error { return errNoNotifications }

func (windowsDesktop) Close() {}
