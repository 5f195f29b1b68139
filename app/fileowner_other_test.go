//go:build !unix

package main

import "os"

// fileUID reports no owner where files have no Unix owners.
func fileUID(os.FileInfo) (uint32, bool) { return 0, false }
