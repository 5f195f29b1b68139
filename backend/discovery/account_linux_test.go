package discovery

import (
	"context"
	"testing"

	"freelane/backend/internal/fakelocal"
	"freelane/backend/sockowner"
)

// A real server run by another account (nobody, uid 65534) is told apart
// from one run by this account, through the connections the scan made and
// the kernel's own answer of who owns the far end of each.
func TestRealAccounts(t *testing.T) {
	bin := fakelocal.BuildBinary(t)
	theirs := fakelocal.StartProcess(t, bin, 65534, "ollama", "qwen2.5:7b:8192")
	mine := fakelocal.StartProcess(t, bin, -1, "ollama", "qwen2.5:7b:8192")
	got := Scan(context.Background(), Options{Ports: []int{theirs, mine}, Owner: sockowner.PeerUID})
	if len(got) != 2 {
		t.Fatalf("found %+v", got)
	}
	byPort := map[int]Owner{got[0].Port: got[0].Owner, got[1].Port: got[1].Owner}
	if o := byPort[theirs]; o != (Owner{UID: 65534, Known: true}) || o.TrustedBy(0) {
		t.Errorf("nobody's server: %+v", o)
	}
	if o := byPort[mine]; o != (Owner{UID: 0, Known: true}) || !o.TrustedBy(0) {
		t.Errorf("root's own server: %+v", o)
	}
}
