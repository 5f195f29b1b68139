package connect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	pathpkg "path"
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
	// path is where the file is written: the tool's file with its links
	// resolved, name its slash-separated name inside dir, the tool's
	// config directory, which lies in home (with its links resolved).
	path, dir, name, home string
	old, merged           []byte
	existed               bool
	// perm and owner are what the written file (and its backup) get: the
	// old file's, or 0600 for a new one, which may hold a key.
	perm  fs.FileMode
	owner atomicfile.Owner
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
	realHome, err := filepath.EvalSymlinks(home)
	if err != nil {
		return planned{}, fmt.Errorf("the home directory %s: %w", home, err)
	}
	toolDir := filepath.Join(realHome, filepath.FromSlash(pathpkg.Dir(rel)))
	want := filepath.Join(toolDir, pathpkg.Base(rel))
	// Dotfile managers link a whole tool directory (~/.claude, or
	// ~/.config) to a folder of their own in the home directory; that
	// folder is then the tool's directory. A directory linked out of the
	// home is refused like a file linked out of the tool's directory.
	dir, err := resolveLinks(toolDir, 0)
	if err != nil {
		return planned{}, fmt.Errorf("reading %s: %w", toolDir, err)
	}
	if _, ok := inside(realHome, dir); !ok {
		return planned{}, &LinkError{File: want, Target: dir, Dir: realHome}
	}
	// A config file linked to another file in the tool's directory (a
	// profile switcher does this) is written where it lives, so the link
	// stays. A link that leads anywhere else is not followed: whoever can
	// write the home directory (its owner, when FreeLane runs as root with
	// that HOME) could otherwise make FreeLane overwrite any file it may
	// write, such as /etc/passwd.
	path, err := resolveLinks(want, 0)
	if err != nil {
		return planned{}, fmt.Errorf("reading %s: %w", want, err)
	}
	name, ok := inside(dir, path)
	if !ok {
		return planned{}, &LinkError{File: want, Target: path, Dir: dir}
	}
	old, fi, err := readLimited(path)
	if err != nil {
		return planned{}, err
	}
	existed := fi != nil
	merged, err := mergeFn(path, old, existed)
	if err != nil {
		return planned{}, err
	}
	p := planned{path: path, dir: dir, name: name, home: realHome, old: old, merged: merged, existed: existed, perm: 0o600, owner: atomicfile.NoOwner}
	if existed {
		// A rewrite keeps the file as the user set it up: a file shared
		// with a group stays readable by it. Only root can give a file
		// back to its owner, and must, or the tool's user could no longer
		// read their own settings.
		p.perm = fi.Mode().Perm()
		if os.Geteuid() == 0 {
			p.owner = ownerOf(fi)
		}
	}
	return p, nil
}

// maxLinks bounds the links resolveLinks follows, as the kernel does.
const maxLinks = 40

// resolveLinks returns path with every symbolic link on it resolved, also
// when the file, or a link's target, does not exist yet.
func resolveLinks(path string, depth int) (string, error) {
	if depth > maxLinks {
		return "", fmt.Errorf("more than %d symbolic links", maxLinks)
	}
	real, err := filepath.EvalSymlinks(path)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	parent := filepath.Dir(path)
	if parent == path {
		return path, nil
	}
	realParent, err := resolveLinks(parent, depth)
	if err != nil {
		return "", err
	}
	here := filepath.Join(realParent, filepath.Base(path))
	fi, err := os.Lstat(here)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		// Missing: it is made where its resolved directory is.
		return here, nil
	}
	// A link whose target does not exist yet.
	target, err := os.Readlink(here)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(realParent, target)
	}
	return resolveLinks(target, depth+1)
}

// inside reports whether path lies inside dir, and its slash-separated
// name there.
func inside(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// LinkError is a config file Write does not write because a symbolic link
// (the file itself, or a directory on its way) leads out of the tool's
// config directory.
type LinkError struct {
	// File is the tool's config file, Target where the links lead and Dir
	// the tool's config directory.
	File, Target, Dir string
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s leads through a symbolic link to %s, outside %s: FreeLane does not write through links that leave the tool's config directory (or the home directory), so nothing was written; put the file itself in %s, or add the settings that freelane connect prints without --write by hand",
		e.File, e.Target, e.Dir, e.Dir)
}

// write writes one planned file, keeping a backup of the old one.
func (p planned) write(clk clock.Clock) (Written, error) {
	w := Written{File: p.path}
	if p.existed && bytes.Equal(p.merged, p.old) {
		w.Unchanged = true
		return w, nil
	}
	// Missing directories are made through the home directory, so a link
	// put in their way since the plan cannot lead outside it either.
	if err := mkdirIn(p.home, filepath.Dir(p.path)); err != nil {
		return Written{}, fmt.Errorf("creating %s: %w", filepath.Dir(p.path), err)
	}
	// Every write goes through the tool's directory, opened once: a link
	// made inside it since the plan cannot lead the file out of it. The
	// directory itself must still be the one planned.
	if real, err := filepath.EvalSymlinks(p.dir); err != nil || real != p.dir {
		return Written{}, &LinkError{File: filepath.Join(p.dir, filepath.FromSlash(p.name)), Target: real, Dir: p.dir}
	}
	root, err := os.OpenRoot(p.dir)
	if err != nil {
		return Written{}, fmt.Errorf("opening %s: %w", p.dir, err)
	}
	defer root.Close()
	if p.existed {
		name, err := backup(root, p.name, p.old, p.perm, p.owner, clk)
		if err != nil {
			return Written{}, fmt.Errorf("backing up %s: %w", p.path, err)
		}
		w.Backup = filepath.Join(p.dir, filepath.FromSlash(name))
		w.Undo = "mv " + shellQuote(w.Backup) + " " + shellQuote(p.path)
	} else {
		w.Undo = "rm " + shellQuote(p.path)
	}
	if err := atomicfile.WriteIn(root, p.name, p.merged, p.perm, p.owner); err != nil {
		return Written{}, err
	}
	return w, nil
}

// mkdirIn makes dir, which lies inside home, and the directories up to it,
// 0700, through home opened as a root.
func mkdirIn(home, dir string) error {
	rel, err := filepath.Rel(home, dir)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(home)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.MkdirAll(filepath.ToSlash(rel), 0o700)
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

// readLimited reads the file at path; its FileInfo is nil when it does
// not exist.
func readLimited(path string) ([]byte, fs.FileInfo, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file; FreeLane left it untouched", path)
	}
	if st.Size() > maxFile {
		return nil, nil, fmt.Errorf("%s is larger than %d MiB, too large for a config file; FreeLane left it untouched", path, maxFile>>20)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > maxFile {
		return nil, nil, fmt.Errorf("%s is larger than %d MiB, too large for a config file; FreeLane left it untouched", path, maxFile>>20)
	}
	return b, st, nil
}

// backup writes old next to name inside root under a dated name, with the
// old file's mode and owner, never over another file: two writes within a
// second get -2, -3 and so on. It returns the backup's name in root.
func backup(root *os.Root, name string, old []byte, perm fs.FileMode, owner atomicfile.Owner, clk clock.Clock) (string, error) {
	stamp := clock.OrReal(clk).Now().Format(backupLayout)
	base := name + ".freelane-backup-" + stamp
	for n := 1; n < 100; n++ {
		bname := base
		if n > 1 {
			bname = fmt.Sprintf("%s-%d", base, n)
		}
		f, err := atomicfile.CreateIn(root, bname, perm, owner)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(old)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = root.Remove(bname)
			return "", err
		}
		return bname, nil
	}
	return "", fmt.Errorf("too many backups named %s*; remove old ones", base)
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
