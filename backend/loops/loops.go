// Package loops gives a program's background loops one owner: each loop
// is started by name in a Group, they all stop on one call, and the owner
// can tell which have started and which still run.
package loops

import (
	"context"
	"slices"
	"sync"
)

// Group runs loops until Stop. The zero value is not usable; use New.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	started []string
	running map[string]int
}

// New makes a group whose loops run until Stop.
func New() *Group {
	ctx, cancel := context.WithCancel(context.Background())
	return &Group{ctx: ctx, cancel: cancel, running: map[string]int{}}
}

// Go runs loop in its own goroutine until it returns; the context it is
// given ends with Stop. A loop started after Stop gets an ended context.
func (g *Group) Go(name string, loop func(ctx context.Context)) {
	g.mu.Lock()
	g.started = append(g.started, name)
	g.running[name]++
	g.mu.Unlock()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer g.ended(name)
		loop(g.ctx)
	}()
}

func (g *Group) ended(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[name]--; g.running[name] == 0 {
		delete(g.running, name)
	}
}

// Stop ends the loops' context and waits until every loop has returned.
// It may be called more than once.
func (g *Group) Stop() {
	g.cancel()
	g.wg.Wait()
}

// Started names the loops started, in the order they were.
func (g *Group) Started() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.started)
}

// Running names the loops that have not returned yet, sorted.
func (g *Group) Running() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for name := range g.running {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
