package main

import (
	"os"
	"strings"
	"testing"
)

func TestDesktopExecQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/freelane":     "/usr/bin/freelane",
		"/home/a b/freelane":    `"/home/a b/freelane"`,
		`/x/"q"`:                `"/x/\"q\""`,
		"/x/$HOME":              `"/x/\$HOME"`,
		"/x/100%":               `"/x/100%%"`,
		"":                      `""`,
		`C:\a`:                  `"C:\\a"`,
		"--config=/tmp/f.yaml":  `"--config=/tmp/f.yaml"`,
		"/home/user/.config/fl": "/home/user/.config/fl",
	} {
		if got := desktopExecQuote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestLinuxAutostart(t *testing.T) {
	l := &linuxDesktop{configDir: t.TempDir()}
	if l.AutostartEnabled() {
		t.Fatal("enabled before anything was written")
	}
	if err := l.SetAutostart(true, []string{"/opt/Free Lane/freelane", "--config", "/home/u/fl.yaml"}); err != nil {
		t.Fatal(err)
	}
	if !l.AutostartEnabled() {
		t.Fatal("not enabled after SetAutostart(true)")
	}
	b, err := os.ReadFile(l.autostartPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[Desktop Entry]", "Type=Application", "Name=FreeLane", `Exec="/opt/Free Lane/freelane" --config /home/u/fl.yaml`, "X-GNOME-Autostart-enabled=true"} {
		if !strings.Contains(string(b), want+"\n") && !strings.HasPrefix(string(b), want) {
			t.Errorf("autostart entry lacks %q:\n%s", want, b)
		}
	}
	if err := l.SetAutostart(false, nil); err != nil {
		t.Fatal(err)
	}
	if l.AutostartEnabled() {
		t.Error("still enabled after SetAutostart(false)")
	}
	// Turning off twice is fine.
	if err := l.SetAutostart(false, nil); err != nil {
		t.Error(err)
	}
}
