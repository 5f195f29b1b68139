package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// Owner is a file's owner to keep on a file that replaces it; UID -1
// keeps whoever writes it.
type Owner struct{ UID, GID int }

// NoOwner leaves a new file owned by the process that writes it.
var NoOwner = Owner{UID: -1, GID: -1}

// WriteIn replaces name, a slash-separated path inside root, with b as
// Write does: through a temporary file next to it, synced, given perm and
// owner, then renamed into place. Every step goes through root, so a
// symbolic link on the way cannot send the file outside it.
func WriteIn(root *os.Root, name string, b []byte, perm fs.FileMode, owner Owner) error {
	where := path.Join(root.Name(), name)
	tmp, tmpName, err := createIn(root, name, perm, owner)
	if err != nil {
		return fmt.Errorf("writing %s: %w", where, err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = root.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("writing %s: %w", where, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", where, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", where, err)
	}
	if err := root.Rename(tmpName, name); err != nil {
		return fmt.Errorf("writing %s: %w", where, err)
	}
	done = true
	return nil
}

// CreateIn creates name inside root, failing when it exists, with the
// mode perm (whatever the umask) and owner; the caller writes and closes
// it.
func CreateIn(root *os.Root, name string, perm fs.FileMode, owner Owner) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := setModeOwner(f, perm, owner); err != nil {
		_ = f.Close()
		_ = root.Remove(name)
		return nil, err
	}
	return f, nil
}

// createIn makes a temporary file next to name inside root.
func createIn(root *os.Root, name string, perm fs.FileMode, owner Owner) (*os.File, string, error) {
	dir, base := path.Split(name)
	for range 100 {
		var r [6]byte
		_, _ = rand.Read(r[:])
		tmpName := dir + "." + base + ".freelane-" + hex.EncodeToString(r[:])
		f, err := CreateIn(root, tmpName, perm, owner)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, tmpName, err
	}
	return nil, "", fmt.Errorf("no free temporary name next to %s", name)
}

// setModeOwner gives the open file f its mode and owner. The mode is set
// after the owner, since changing the owner may clear set-id bits.
func setModeOwner(f *os.File, perm fs.FileMode, owner Owner) error {
	if owner.UID >= 0 {
		if err := f.Chown(owner.UID, owner.GID); err != nil {
			return err
		}
	}
	return f.Chmod(perm)
}
