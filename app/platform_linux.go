package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/godbus/dbus/v5"
)

// linuxDesktop notifies over the freedesktop notification service and
// starts at login with an XDG autostart entry.
type linuxDesktop struct {
	// configDir is $XDG_CONFIG_HOME (~/.config); tests point it elsewhere.
	configDir string

	mu   sync.Mutex
	conn *dbus.Conn
}

func newDesktopOS() desktopOS {
	dir, err := os.UserConfigDir()
	if err != nil {
		dir = filepath.Join(os.Getenv("HOME"), ".config")
	}
	return &linuxDesktop{configDir: dir}
}

// autostartPath is the XDG autostart entry's path.
func (l *linuxDesktop) autostartPath() string {
	return filepath.Join(l.configDir, "autostart", "freelane.desktop")
}

func (l *linuxDesktop) AutostartEnabled() bool {
	_, err := os.Stat(l.autostartPath())
	return err == nil
}

func (l *linuxDesktop) SetAutostart(on bool, argv []string) error {
	path := l.autostartPath()
	if !on {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing the autostart entry: %w", err)
		}
		return nil
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = desktopExecQuote(a)
	}
	entry := "[Desktop Entry]\n" +
		"Type=Application\n" +
		"Name=FreeLane\n" +
		"Comment=Local LLM router: one OpenAI-compatible endpoint for all your models\n" +
		"Exec=" + strings.Join(quoted, " ") + "\n" +
		"Icon=freelane\n" +
		"Terminal=false\n" +
		"X-GNOME-Autostart-enabled=true\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating the autostart folder: %w", err)
	}
	if err := os.WriteFile(path, []byte(entry), 0o644); err != nil {
		return fmt.Errorf("writing the autostart entry: %w", err)
	}
	return nil
}

// Notify calls org.freedesktop.Notifications.Notify on a private session
// bus connection, so closing the tray's shared connection at shutdown
// cannot break it (nor the other way round).
func (l *linuxDesktop) Notify(n notification) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		c, err := dbus.ConnectSessionBus()
		if err != nil {
			return fmt.Errorf("%w: %w", errNoNotifications, err)
		}
		l.conn = c
	}
	obj := l.conn.Object("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
	call := obj.Call("org.freedesktop.Notifications.Notify", 0,
		"FreeLane", uint32(0), "freelane", n.Title, n.Body, []string{}, map[string]dbus.Variant{}, int32(-1))
	if call.Err != nil {
		return fmt.Errorf("%w: %w", errNoNotifications, call.Err)
	}
	return nil
}

func (l *linuxDesktop) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		_ = l.conn.Close()
		l.conn = nil
	}
}
