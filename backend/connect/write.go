package connect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"freelane/backend/atomicfile"
	"freelane/backend/clock"
)

// maxFile bounds the config file Write reads; tools' config files are a few
// kilobytes.
const maxFile = 4 << 20

// backupLayout dates a backup's name, in the clock's zone, to the second.
const backupLayout = "20060102-150405"

// Written says what Write did, for the user to read.
type Written struct {
	// File is the file written.
	File string
	// Backup is the copy of the file as it was; "" when there was none.
	Backup string
	// Undo is the shell command that puts things back as they were.
	Undo string
	// Unchanged is set when the file already held these settings; nothing
	// was written then and there is no backup.
	Unchanged bool
	// Also are the other files the tool needs set, written the same way.
	Also []Written
}

// companion is a second file a tool needs besides its own config file.
type companion struct {
	path  string // relative to HOME, with '/'
	merge func(path string, old []byte, o Options) ([]byte, error)
}

// companions are the files written with each tool's own. Gemini CLI reads
// its key and base URL from ~/.gemini/.env, but a run without a terminal
// stops unless settings.json names the sign-in method.
var companions = map[string][]companion{
	"gemini-cli": {{path: ".gemini/settings.json", merge: mergeGeminiSettings}},
}

// planned is one file Write is about to write.
type planned struct {
	path        string
	old, merged []byte
	existed     bool
}

// ParseError is a config file Write will not touch because it cannot read
// it.
type ParseError struct {
	File string
	// Line is 1-based; 0 when the parser did not say.
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	where := e.File
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return fmt.Sprintf("%s: cannot be read, so FreeLane left it untouched: %v; fix the file or move it away, then run this again", where, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// ErrNoFile is returned by Write for tools set up in a GUI.
var ErrNoFile = errors.New("this tool is set up in its settings screen, not in a file")

// Write merges the tool's settings into its config file under home: it sets
// only FreeLane's keys, keeps everything else the file holds, and keeps a
// dated copy of the file as it was next to it. A file it cannot parse is
// left as it is and reported as a *ParseError.
func Write(ctx context.Context, home, id string, o Options, clk clock.Clock) (Written, error) {
	if err := ctx.Err(); err != nil {
		return Written{}, err
	}
	t, err := ForTool(id, o)
	if err != nil {
		return Written{}, err
	}
	if t.File == nil {
		return Written{}, fmt.Errorf("%s: %w; follow its steps", t.Name, ErrNoFile)
	}
	if home == "" {
		return Written{}, errors.New("no home directory to write into")
	}
	o, _ = o.normalize() // ForTool checked it
	// Every file is read and merged before any is written, so a file that
	// cannot be parsed leaves all of them as they were.
	plans := make([]planned, 0, 1+len(companions[id]))
	p, err := plan(home, t.File.Path, func(path string, old []byte, existed bool) ([]byte, error) {
		return merge(id, path, old, existed, o)
	})
	if err != nil {
		return Written{}, err
	}
	plans = append(plans, p)
	for _, c := range companions[id] {
		p, err := plan(home, c.path, func(path string, old []byte, existed bool) ([]byte, error) {
			if !existed {
				old = nil
			}
			return c.merge(path, old, o)
		})
		if err != nil {
			return Written{}, err
		}
		plans = append(plans, p)
	}
	var out Written
	for i, p := range plans {
		w, err := p.write(clk)
		if err != nil {
			if i > 0 {
				return out, fmt.Errorf("%w; the files written so far are put back with: %s", err, undoAll(out))
			}
			return Written{}, err
		}
		if i == 0 {
			out = w
		} else {
			out.Also = append(out.Also, w)
		}
	}
	return out, nil
}

// plan reads the file at rel under home and merges FreeLane's settings in.
func plan(home, rel string, mergeFn func(path string, old []byte, existed bool) ([]byte, error)) (planned, error) {
	path := filepath.Join(home, filepath.FromSlash(rel))
	// A config file kept elsewhere and linked into place (dotfile managers
	// do this) is written where it lives, so the link stays.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	old, existed, err := readLimited(path)
	if err != nil {
		return planned{}, err
	}
	merged, err := mergeFn(path, old, existed)
	if err != nil {
		return planned{}, err
	}
	return planned{path: path, old: old, merged: merged, existed: existed}, nil
}

// write writes one planned file, keeping a backup of the old one.
func (p planned) write(clk clock.Clock) (Written, error) {
	w := Written{File: p.path}
	if p.existed && bytes.Equal(p.merged, p.old) {
		w.Unchanged = true
		return w, nil
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o700); err != nil {
		return Written{}, fmt.Errorf("creating %s: %w", filepath.Dir(p.path), err)
	}
	var err error
	if p.existed {
		w.Backup, err = backup(p.path, p.old, clk)
		if err != nil {
			return Written{}, err
		}
		w.Undo = "mv " + shellQuote(w.Backup) + " " + shellQuote(p.path)
	} else {
		w.Undo = "rm " + shellQuote(p.path)
	}
	if err := atomicfile.Write(p.path, p.merged); err != nil {
		return Written{}, err
	}
	return w, nil
}

// undoAll is the command that undoes w and the files written with it.
func undoAll(w Written) string {
	var cmds []string
	for _, x := range append([]Written{w}, w.Also...) {
		if x.Undo != "" {
			cmds = append(cmds, x.Undo)
		}
	}
	return strings.Join(cmds, " && ")
}

// UndoAll is the one shell command that puts back every file Write wrote.
func (w Written) UndoAll() string { return undoAll(w) }

func merge(id, path string, old []byte, existed bool, o Options) ([]byte, error) {
	if !existed {
		old = nil
	}
	switch id {
	case "claude-code":
		return mergeClaude(path, old, o)
	case "codex":
		return mergeCodex(path, old, o)
	case "gemini-cli":
		return mergeDotenv(path, old, geminiVars(o))
	case "opencode":
		return mergeOpencode(path, old, o)
	case "continue":
		return mergeContinue(path, old, o)
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownTool, id)
}

// readLimited reads the file at path, reporting whether it exists.
func readLimited(path string) ([]byte, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a regular file; FreeLane left it untouched", path)
	}
	if st.Size() > maxFile {
		return nil, false, fmt.Errorf("%s is larger than %d MiB, too large for a config file; FreeLane left it untouched", path, maxFile>>20)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	return b, true, nil
}

// backup writes old next to path under a dated name, never over another
// file: two writes within a second get -2, -3 and so on.
func backup(path string, old []byte, clk clock.Clock) (string, error) {
	stamp := clock.OrReal(clk).Now().Format(backupLayout)
	base := path + ".freelane-backup-" + stamp
	for n := 1; n < 100; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("backing up %s: %w", path, err)
		}
		if _, err := f.Write(old); err != nil {
			_ = f.Close()
			_ = os.Remove(name)
			return "", fmt.Errorf("backing up %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			_ = f.Close()
			_ = os.Remove(name)
			return "", fmt.Errorf("backing up %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			_ = os.Remove(name)
			return "", fmt.Errorf("backing up %s: %w", path, err)
		}
		return name, nil
	}
	return "", fmt.Errorf("backing up %s: too many backups named %s*; remove old ones", path, base)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/+:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lineOf is the 1-based line of a byte offset.
func lineOf(b []byte, offset int64) int {
	if offset > int64(len(b)) {
		offset = int64(len(b))
	}
	return bytes.Count(b[:offset], []byte("\n")) + 1
}
