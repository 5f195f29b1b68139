//go:build unix

package connect

import (
	"io/fs"
	"syscall"

	"freelane/backend/atomicfile"
)

// ownerOf is the owner of the file fi describes.
func ownerOf(fi fs.FileInfo) atomicfile.Owner {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return atomicfile.Owner{UID: int(st.Uid), GID: int(st.Gid)}
	}
	return atomicfile.NoOwner
}
