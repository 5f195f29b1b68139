//go:build unix

package connect_test

import (
	"os"
	"syscall"
	"testing"
)

// owner is the user and group owning path.
func owner(t *testing.T, path string) (uid, gid int) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Sys().(*syscall.Stat_t)
	return int(s.Uid), int(s.Gid)
}
