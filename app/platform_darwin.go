package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// darwinDesktop notifies through osascript and starts at login with a
// LaunchAgent.
type darwinDesktop struct{ home string }

func newDesktopOS() desktopOS {
	home, _ := os.UserHomeDir()
	return &darwinDesktop{home: home}
}

const launchAgentLabel = "dev.freelane.router"

func (d *darwinDesktop) plistPath() string {
	return filepath.Join(d.home, "Library", "LaunchAgents", launchAgentLabel+".plist")
}

func (d *darwinDesktop) AutostartEnabled() bool {
	_, err := os.Stat(d.plistPath())
	return err == nil
}

func (d *darwinDesktop) SetAutostart(on bool, argv []string) error {
	path := d.plistPath()
	if !on {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing the launch agent: %w", err)
		}
		return nil
	}
	var args strings.Builder
	for _, a := range argv {
		args.WriteString("\t\t<string>" + xmlEscape(a) + "</string>\n")
	}
	plist := `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>` + launchAgentLabel + `</string>
	<key>ProgramArguments</key>
	<array>
` + args.String() + `	</array>
	<key>RunAtLoad</key>
	<true/>
</dict>
</plist>
`
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating the LaunchAgents folder: %w", err)
	}
	if err := os.WriteFile(path, []byte(plist), 0o644); err != nil {
		return fmt.Errorf("writing the launch agent: %w", err)
	}
	return nil
}

func (d *darwinDesktop) Notify(n notification) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	script := "display notification " + strconv.Quote(n.Body) + " with title " + strconv.Quote(n.Title)
	if err := exec.CommandContext(ctx, "osascript", "-e", script).Run(); err != nil {
		return fmt.Errorf("%w: %w", errNoNotifications, err)
	}
	return nil
}

func (d *darwinDesktop) Close() {}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
