package wiretypes

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite "+File+" from the Go types")

// root is the repository, seen from this package's directory.
const root = "../.."

// TestWireTypes fails while the committed TypeScript is not what the Go
// types generate; with -update it rewrites the file.
func TestWireTypes(t *testing.T) {
	s, err := Describe(root)
	if err != nil {
		t.Fatalf("describing the wire types:\n%v", err)
	}
	want := s.TypeScript()
	path := filepath.Join(root, File)
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run `make wiretypes` to write it", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what the Go types generate (- committed, + generated):\n%s\n"+
			"Run `make wiretypes` (go test ./backend/wiretypes -run TestWireTypes -update), then fix the dashboard where `npm run check` complains.",
			File, lineDiff(string(got), string(want)))
	}
}

// lineDiff shows the lines between the longest common head and tail, with
// two lines of context.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	head := 0
	for head < len(al) && head < len(bl) && al[head] == bl[head] {
		head++
	}
	tail := 0
	for tail < len(al)-head && tail < len(bl)-head && al[len(al)-1-tail] == bl[len(bl)-1-tail] {
		tail++
	}
	const context = 2
	from := max(head-context, 0)
	out := []string{fmt.Sprintf("@@ line %d", from+1)}
	for _, l := range al[from:head] {
		out = append(out, "  "+l)
	}
	for _, l := range al[head : len(al)-tail] {
		out = append(out, "- "+l)
	}
	for _, l := range bl[head : len(bl)-tail] {
		out = append(out, "+ "+l)
	}
	for _, l := range al[len(al)-tail : min(len(al)-tail+context, len(al))] {
		out = append(out, "  "+l)
	}
	if len(out) > 45 {
		out = append(out[:45], fmt.Sprintf("... and %d more lines", len(out)-45))
	}
	return strings.Join(out, "\n")
}

// TestEnumsListEveryConstant fails when a package declares a constant of
// an enum that the contract's table does not list, or when the table
// lists a value no constant has.
func TestEnumsListEveryConstant(t *testing.T) {
	src := newSources(root)
	for _, e := range freelane.Enums {
		if e.Dir == "" || e.Scan {
			continue
		}
		typ := e.ConstType
		if typ == "" && e.Type != nil {
			typ = e.Type.Name()
		}
		consts, err := src.constants(e.Dir, typ, e.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range slices.Sorted(maps.Keys(consts)) {
			if !slices.Contains(e.Values, consts[name]) {
				t.Errorf("enum %s lacks %s (%q) from %s: add it to the table in contract.go", e.Name, name, consts[name], e.Dir)
			}
		}
		for _, v := range e.Values {
			if !slices.Contains(slices.Collect(maps.Values(consts)), v) {
				t.Errorf("enum %s has %q, which no constant in %s has", e.Name, v, e.Dir)
			}
		}
	}
}

// TestEndpointsCoverEveryRoute fails when the API registers a route the
// contract does not describe, or the contract describes one that is gone.
func TestEndpointsCoverEveryRoute(t *testing.T) {
	registered, err := newSources(root).routes("backend/api")
	if err != nil {
		t.Fatal(err)
	}
	var described []string
	for _, ep := range freelane.Endpoints {
		described = append(described, ep.Route)
	}
	slices.Sort(described)
	for _, r := range registered {
		if !slices.Contains(described, r) {
			t.Errorf("backend/api registers %q, which contract.go does not describe", r)
		}
	}
	for _, r := range described {
		if !slices.Contains(registered, r) {
			t.Errorf("contract.go describes %q, which backend/api does not register", r)
		}
	}
}

// TestMirrorsMatchTheHandlers compares each stand-in type with the struct
// it stands in for, in the handlers' source.
func TestMirrorsMatchTheHandlers(t *testing.T) {
	src := newSources(root)
	local := map[string]reflect.Type{}
	for _, m := range freelane.Mirrors {
		if m.TypeName != "" {
			local[m.TypeName] = m.Type
		}
	}
	for _, m := range freelane.Mirrors {
		var st *ast.StructType
		if m.TypeName != "" {
			ts, _, err := src.namedType(m.Dir, m.TypeName)
			if err != nil {
				t.Fatal(err)
			}
			if ts == nil {
				t.Errorf("%s has no type %s for %s to stand in for", m.Dir, m.TypeName, m.Type)
				continue
			}
			st, _ = ts.Type.(*ast.StructType)
		} else {
			var err error
			if st, err = src.handlerStruct(m.Dir, m.Func, m.Route); err != nil {
				t.Errorf("%s: %v", m.Type, err)
				continue
			}
		}
		if err := sameStruct(st, m.Type, local); err != nil {
			t.Errorf("%s no longer matches %s%s%s in %s: %v", m.Type, m.TypeName, m.Func, m.Route, m.Dir, err)
		}
	}
}

// The types below try the generator's rules on a small contract.

type sample struct {
	Name   string            `json:"name"`
	Count  int64             `json:"count,omitempty"`
	At     time.Time         `json:"at"`
	Until  time.Time         `json:"until,omitzero"`
	Took   time.Duration     `json:"took_ns"`
	Next   *time.Time        `json:"next"`
	Maybe  *other            `json:"maybe,omitempty"`
	List   []other           `json:"list"`
	Full   []string          `json:"full"`
	Tags   map[string]string `json:"tags,omitempty"`
	Color  color             `json:"color"`
	Mode   string            `json:"mode"`
	Hidden string            `json:"-"`
	//lint:ignore U1000 an unexported field the generator must leave out
	internal string
	Inner    struct {
		On bool `json:"on"`
	} `json:"inner"`
	embedded
}

type embedded struct {
	Extra float64 `json:"extra"`
}

type other struct {
	ID string `json:"id"`
}

type color string

const (
	red  color = "red"
	blue color = "blue"
)

var sampleContract = contract{
	Endpoints: []endpoint{{Route: "GET /api/sample", Response: typeOf[sample]()}},
	Enums: []enum{
		{Name: "Color", Type: typeOf[color](), Values: values(red, blue)},
		{Name: "Mode", Fields: []fieldKey{field[sample]("Mode")}, Values: []string{"fast", "slow"}},
	},
	NeverNull: []fieldKey{field[sample]("Full")},
}

func TestGeneratorRules(t *testing.T) {
	s, err := build(root, sampleContract)
	if err != nil {
		t.Fatal(err)
	}
	ts := string(s.TypeScript())
	for _, want := range []string{
		"export type Color = \"red\" | \"blue\";",
		"export type Mode = \"fast\" | \"slow\";",
		"  name: string;\n",
		"  count?: number;\n",
		"  at: string;\n",
		"  until?: string;\n",
		"  took_ns: number;\n",
		"  next: string | null;\n",
		"  maybe?: Other;\n",
		"  list: Other[] | null;\n",
		"  full: string[];\n",
		"  tags?: Record<string, string>;\n",
		"  color: Color;\n",
		"  mode: Mode;\n",
		"  inner: SampleInner;\n",
		"  extra: number;\n",
		"export interface SampleInner {\n  on: boolean;\n}",
		"\"GET /api/sample\": {\n    request: void;\n    response: Sample;\n  };",
	} {
		if !strings.Contains(ts, want) {
			t.Errorf("the TypeScript lacks %q:\n%s", want, ts)
		}
	}
	for _, not := range []string{"Hidden", "internal", "embedded"} {
		if strings.Contains(ts, not) {
			t.Errorf("the TypeScript has %q:\n%s", not, ts)
		}
	}
}

type marshalsItself struct{}

func (marshalsItself) MarshalJSON() ([]byte, error) { return []byte(`1`), nil }

type withCustom struct {
	V marshalsItself `json:"v"`
	S color          `json:"s"`
}

type renamed struct {
	A string `json:"a"`
}

func TestGeneratorRefusesWhatItCannotTell(t *testing.T) {
	c := contract{
		Endpoints: []endpoint{{Route: "GET /x", Response: typeOf[withCustom]()}, {Route: "GET /y", Response: typeOf[renamed]()}},
		NeverNull: []fieldKey{field[renamed]("B"), field[renamed]("A")},
	}
	_, err := build(root, c)
	for _, want := range []string{
		"has its own MarshalJSON",
		"wiretypes.color is a named string type",
		"wiretypes.renamed.B is never null, but no wire type has that field",
		"wiretypes.renamed.A is never null, but it cannot be null anyway",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestCheck(t *testing.T) {
	s, err := build(root, sampleContract)
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]any{
		"name": "n", "at": "2026-11-30T12:00:00Z", "took_ns": 5, "next": nil, "list": nil, "full": []string{},
		"color": "red", "mode": "fast", "inner": map[string]any{"on": true}, "extra": 1.5,
	}
	check := func(v map[string]any) error {
		b, _ := json.Marshal(v)
		return s.Check(Named("Sample"), b)
	}
	if err := check(good); err != nil {
		t.Fatalf("a good document: %v", err)
	}
	for _, c := range []struct {
		change func(map[string]any)
		want   string
	}{
		{func(m map[string]any) { delete(m, "name") }, `$: has no key "name", which Sample declares`},
		{func(m map[string]any) { m["surprise"] = 1 }, `$: has the key "surprise", which Sample does not declare`},
		{func(m map[string]any) { m["full"] = nil }, `$.full: is null, want string[]`},
		{func(m map[string]any) { m["color"] = "green" }, `$.color: is "green", which is none of "red" | "blue"`},
		{func(m map[string]any) { m["took_ns"] = "5s" }, `$.took_ns: is a string "5s", want number`},
		{func(m map[string]any) { m["list"] = []any{map[string]any{"id": 1}} }, `$.list[0].id: is a number 1, want string`},
		{func(m map[string]any) { m["inner"] = map[string]any{} }, `$.inner: has no key "on", which SampleInner declares`},
	} {
		m := maps.Clone(good)
		c.change(m)
		if err := check(m); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}
