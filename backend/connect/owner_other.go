//go:build !unix

package connect

import (
	"io/fs"

	"freelane/backend/atomicfile"
)

// ownerOf keeps no owner where files have no Unix owners.
func ownerOf(fs.FileInfo) atomicfile.Owner { return atomicfile.NoOwner }
