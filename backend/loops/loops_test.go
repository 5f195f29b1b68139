package loops

import (
	"context"
	"slices"
	"testing"
)

// Stop ends every loop and waits for it: a loop that returns only when
// its context ends is not running once Stop returns, and one started
// after Stop returns at once.
func TestStopEndsEveryLoop(t *testing.T) {
	g := New()
	entered := make(chan struct{})
	for _, name := range []string{"a", "b", "b"} {
		g.Go(name, func(ctx context.Context) {
			entered <- struct{}{}
			<-ctx.Done()
		})
	}
	for range 3 {
		<-entered
	}
	if got := g.Running(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("running before Stop: %v", got)
	}
	g.Stop()
	if got := g.Running(); len(got) != 0 {
		t.Fatalf("running after Stop: %v", got)
	}
	g.Go("late", func(ctx context.Context) { <-ctx.Done() })
	g.Stop()
	if got, want := g.Started(), []string{"a", "b", "b", "late"}; !slices.Equal(got, want) {
		t.Fatalf("started %v, want %v", got, want)
	}
	if got := g.Running(); len(got) != 0 {
		t.Fatalf("running after the second Stop: %v", got)
	}
}
