package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"freelane/backend/atomicfile"
)

// socketDirRecord is the file in the data directory that names the private
// directory FreeLane made for its socket under a random name. The data
// directory is the user's own, and the record is checked before it is
// believed, so a launch that finds the usual directory taken by another
// user still meets the running instance.
const socketDirRecord = "instance-dir"

// maxRecord bounds what is read of the record: one path.
const maxRecord = 4096

// locateSocket is socketPath; note, when not empty, says for the log that
// the usual temporary directory was taken and which one is used instead.
// It is only set by the launch that made the new directory.
func locateSocket(dataDir string) (path, note string, err error) {
	path = filepath.Join(dataDir, instanceSocket)
	if len(path) <= maxSocketPath && privateDir(dataDir) == nil {
		return path, "", nil
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	sum := sha256.Sum256([]byte(abs))
	name := "freelane-" + hex.EncodeToString(sum[:8]) + ".sock"
	if rt := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(rt) && len(filepath.Join(rt, name)) <= maxSocketPath && privateDir(rt) == nil {
		return filepath.Join(rt, name), "", nil
	}
	dir, note, err := ownTempDir(dataDir, name)
	if err != nil {
		return "", "", err
	}
	return filepath.Join(dir, name), note, nil
}

// ownTempDir is the user's private directory in the temporary directory
// for the socket called name: the one the data directory's record names
// when that is still a private directory of this user's, else
// TMPDIR/freelane-UID, created 0700 when missing. When that name is taken
// by something this user cannot trust (a directory of another user's, one
// others may write to, a symlink), it makes a fresh directory under a
// random name and records it; waiting for the other user to remove theirs
// would let anyone on the machine keep FreeLane from starting.
func ownTempDir(dataDir, name string) (dir, note string, err error) {
	// Launches that find the usual directory taken must agree on one new
	// directory, or each would claim an instance of its own.
	record := filepath.Join(dataDir, socketDirRecord)
	usual := filepath.Join(os.TempDir(), fmt.Sprintf("freelane-%d", os.Getuid()))
	unlock, err := lockClaim(record)
	if errors.Is(err, os.ErrNotExist) {
		// No data directory, so no FreeLane runs with it (freelane
		// dashboard-url asks before any start): nothing to find or make.
		return usual, "", nil
	}
	if err != nil {
		return "", "", err
	}
	defer unlock()
	// A recorded directory comes first: a running instance may be in it
	// even after the usual directory has become free again.
	recorded, rerr := readSocketDirRecord(record, name)
	if rerr == nil {
		return recorded, "", nil
	}
	if err := os.Mkdir(usual, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", "", fmt.Errorf("creating %s for the single-instance socket: %w", usual, err)
	}
	why := privateDir(usual)
	if why == nil {
		return usual, "", nil
	}
	fresh, err := os.MkdirTemp(os.TempDir(), "freelane-")
	if err != nil {
		return "", "", fmt.Errorf("%s cannot hold the single-instance socket (%w), and a private directory could not be made instead: %w", usual, why, err)
	}
	if err := privateDir(fresh); err != nil {
		_ = os.Remove(fresh)
		return "", "", fmt.Errorf("the new socket directory is not private: %w", err)
	}
	if err := atomicfile.Write(record, []byte(fresh+"\n")); err != nil {
		_ = os.Remove(fresh)
		return "", "", fmt.Errorf("recording the single-instance socket's directory: %w", err)
	}
	note = fmt.Sprintf("%s cannot hold the single-instance socket: %v; another user may have made it. Using the private directory %s instead (named in %s)", usual, why, fresh, record)
	if !errors.Is(rerr, os.ErrNotExist) {
		note += fmt.Sprintf("; the directory recorded before was not used: %v", rerr)
	}
	return fresh, note, nil
}

// readSocketDirRecord returns the directory the record names, when it is
// still one a socket called name can be trusted in: an absolute path to a
// private directory of this user's, short enough for the socket. It
// returns an error wrapping os.ErrNotExist when there is no record.
func readSocketDirRecord(record, name string) (string, error) {
	fi, err := os.Lstat(record)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", record)
	}
	f, err := os.Open(record)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord))
	if err != nil {
		return "", err
	}
	dir := strings.TrimSpace(string(b))
	switch {
	case !filepath.IsAbs(dir) || filepath.Clean(dir) != dir:
		return "", fmt.Errorf("%s does not name a directory", record)
	case len(filepath.Join(dir, name)) > maxSocketPath:
		return "", fmt.Errorf("%s is too long a directory for the socket", dir)
	}
	if err := privateDir(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			// The temporary directory was cleaned: not a missing record.
			return "", fmt.Errorf("%s is gone", dir)
		}
		return "", err
	}
	return dir, nil
}
