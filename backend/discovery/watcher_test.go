package discovery

import (
	"context"
	"sync"
	"testing"
	"time"

	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/fakelocal"
)

func TestWatcher(t *testing.T) {
	s := start(t, fakelocal.Config{Kind: fakelocal.Ollama, Models: []fakelocal.Model{{ID: "qwen2.5:7b", Context: 8192, Loaded: true}}})
	clk := clocktest.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	changes := make(chan []Server, 10)
	scans := make(chan struct{}, 10)
	w := NewWatcher(WatchOptions{
		Options:  Options{Ports: []int{s.Port()}},
		Clock:    clk,
		OnChange: func(l []Server) { changes <- l },
	})
	w.afterScan = func() { scans <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	// next waits for a scheduled scan to end and returns the change it
	// reported, or nil when it reported none.
	next := func(what string) []Server {
		t.Helper()
		select {
		case <-scans:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no scan", what)
		}
		select {
		case l := <-changes:
			if l == nil {
				l = []Server{}
			}
			return l
		default:
			return nil
		}
	}
	if l := next("start"); len(l) != 1 || l[0].Kind != KindOllama || l[0].Models[0].Context != 8192 {
		t.Fatalf("first scan: %+v", l)
	}
	if l := w.Servers(); len(l) != 1 {
		t.Fatalf("Servers: %+v", l)
	}
	clk.Advance(time.Minute)
	if l := next("unchanged"); l != nil {
		t.Fatalf("unchanged scan reported %+v", l)
	}
	s.Stop()
	clk.Advance(time.Minute)
	if l := next("gone"); l == nil || len(l) != 0 {
		t.Fatalf("server gone: %+v", l)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if l := next("back"); len(l) != 1 || l[0].Port != s.Port() {
		t.Fatalf("server back: %+v", l)
	}
	// A model loaded with another window is a change too; ScanNow reports
	// it at once, without waiting for the minute.
	s.SetModels([]fakelocal.Model{{ID: "qwen2.5:7b", Context: 32768, Loaded: true}})
	got := w.ScanNow(ctx)
	<-scans
	l := <-changes
	if len(got) != 1 || got[0].Models[0].Context != 32768 || len(l) != 1 || l[0].Models[0].Context != 32768 {
		t.Fatalf("ScanNow %+v, change %+v", got, l)
	}
	// Callers get copies.
	got[0].Models[0].ID = "changed"
	if w.Servers()[0].Models[0].ID != "qwen2.5:7b" {
		t.Error("Servers shares its slices")
	}
}

func TestWatcherFirstScanEmpty(t *testing.T) {
	clk := clocktest.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	var calls [][]Server
	w := NewWatcher(WatchOptions{
		Options:  Options{Ports: []int{freePort(t)}},
		Clock:    clk,
		OnChange: func(l []Server) { calls = append(calls, l) },
	})
	w.ScanNow(context.Background())
	w.ScanNow(context.Background())
	if len(calls) != 1 || len(calls[0]) != 0 {
		t.Fatalf("calls %+v: the first scan is always reported, an unchanged one never", calls)
	}
}
