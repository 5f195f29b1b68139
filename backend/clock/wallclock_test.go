package clock_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// wallClock lists the only places outside this package that may read the
// wall clock or make its timers, each with the reason. A key is a file (for
// a whole file) or "file:function".
var wallClock = map[string]string{
	"app/main.go:run":                                     "the composition root makes the program's one clock",
	"backend/hub/hub.go:socketTicker":                     "paces broadcasts and pings written to real sockets, in real time whatever dates their content",
	"backend/store/store.go:Open":                         "the default for a database opened without WithClock (tools and read-only tests)",
	"backend/cmd/loadbench/main.go:main":                  "the load benchmark's composition root makes its one clock, real: it measures real throughput and latency",
	"backend/internal/fakeupstream/fakeupstream.go:start": "the fake upstream stands for a remote server, whose time no test can move",
	"backend/internal/fakeupstream/tls.go:StartTLS":       "a remote server's certificate is valid by the real time of the clients that check it",
	"backend/internal/clocktest/clocktest.go":             "the fake clock's following mode moves with real time",
	"backend/internal/fakelocal/process.go:StartProcess":  "waits for a real child process to say it listens, in real time",
	"backend/internal/teamtest/teamtest.go":               "starts and stops real Redis, PostgreSQL and HAProxy processes for tests and waits for them in real time",
	"backend/internal/teamtest/haproxy.go:command":        "bounds a real exchange with HAProxy's admin socket in real time",
}

// banned are the time package's functions that read the wall clock or arm
// its timers.
var banned = map[string]bool{
	"Now": true, "Since": true, "Until": true, "NewTicker": true, "NewTimer": true,
	"After": true, "AfterFunc": true, "Tick": true, "Sleep": true,
}

// TestOneClock fails when code outside this package reads the wall clock,
// so that everything a test can observe runs on the injected clock.
func TestOneClock(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	var bad []string
	for _, dir := range []string{"app", "backend"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if strings.HasPrefix(rel, "backend/clock/") {
				return nil
			}
			for _, hit := range wallClockCalls(t, path) {
				if _, ok := wallClock[rel]; ok {
					used[rel] = true
					continue
				}
				key := rel + ":" + hit.fn
				if _, ok := wallClock[key]; ok {
					used[key] = true
					continue
				}
				bad = append(bad, rel+":"+strconv.Itoa(hit.line)+": "+hit.call+" in "+hit.fn)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s reads the wall clock; take the injected clock.Clock instead, or add the place to wallClock with the reason", b)
	}
	for key := range wallClock {
		if !used[key] {
			t.Errorf("wallClock lists %s, which no longer reads the wall clock; remove the entry", key)
		}
	}
}

type hit struct {
	line     int
	call, fn string
}

// wallClockCalls finds the uses of the time package's clock functions and
// of clock.Real in a file, with the function each is in.
func wallClockCalls(t *testing.T, path string) []hit {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{} // local import name -> import path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = p
	}
	var out []hit
	for _, decl := range f.Decls {
		fn := "(package level)"
		if fd, ok := decl.(*ast.FuncDecl); ok {
			fn = fd.Name.Name
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch names[id.Name] {
			case "time":
				if !banned[sel.Sel.Name] {
					return true
				}
			case "freelane/backend/clock":
				if sel.Sel.Name != "Real" {
					return true
				}
			default:
				return true
			}
			out = append(out, hit{line: fset.Position(sel.Pos()).Line, call: id.Name + "." + sel.Sel.Name, fn: fn})
			return true
		})
	}
	return out
}
