package wiretypes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// maxProblems bounds what Check reports; past it, more of the same help
// nobody.
const maxProblems = 20

// Check reports every way the JSON document doc differs from type t: a key
// t does not declare, a declared key that is missing, a value of another
// type, a null where t has none, a string that is none of an enum's values.
func (s *Schema) Check(t Type, doc []byte) error {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("the answer is not JSON: %w", err)
	}
	c := &checker{s: s}
	c.value("$", t, v)
	if len(c.problems) > maxProblems {
		c.problems = append(c.problems[:maxProblems], fmt.Sprintf("and %d more", len(c.problems)-maxProblems))
	}
	if len(c.problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(c.problems, "\n"))
}

// Named is the type declared as name.
func Named(name string) Type { return Type{Kind: Ref, Name: name} }

// Endpoint returns the request and response types of an admin route such
// as "GET /api/state".
func (s *Schema) Endpoint(route string) (request, response Type, err error) {
	d, ok := s.Decl("Endpoints")
	if ok {
		for _, f := range d.Fields {
			if f.Name == route {
				return f.Type.Fields[0].Type, f.Type.Fields[1].Type, nil
			}
		}
	}
	return Type{}, Type{}, fmt.Errorf("wiretypes: no endpoint %q", route)
}

type checker struct {
	s        *Schema
	problems []string
}

func (c *checker) problem(path, format string, args ...any) {
	c.problems = append(c.problems, path+": "+fmt.Sprintf(format, args...))
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// short writes a value for a message, cut to a readable length.
func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

func (c *checker) value(path string, t Type, v any) {
	want := func(ok bool) {
		switch {
		case ok:
		case v == nil:
			c.problem(path, "is null, want %s", t.ts(""))
		default:
			c.problem(path, "is %s %s, want %s", kindOf(v), short(v), t.ts(""))
		}
	}
	switch t.Kind {
	case String:
		_, ok := v.(string)
		want(ok)
	case Number:
		_, ok := v.(json.Number)
		want(ok)
	case Boolean:
		_, ok := v.(bool)
		want(ok)
	case Null:
		want(v == nil)
	case Void:
		c.problem(path, "is a body, want none")
	case Unknown:
	case Literal:
		want(v == t.Name)
	case Ref:
		d, ok := c.s.Decl(t.Name)
		switch {
		case !ok:
			c.problem(path, "has the undeclared type %s", t.Name)
		case d.Alias != nil:
			c.value(path, *d.Alias, v)
		default:
			c.object(path, t.Name, d.Fields, v)
		}
	case Array:
		a, ok := v.([]any)
		want(ok)
		for i, el := range a {
			c.value(fmt.Sprintf("%s[%d]", path, i), *t.Elem, el)
		}
	case Record:
		m, ok := v.(map[string]any)
		want(ok)
		for _, k := range sortedKeys(m) {
			c.value(path+"."+k, *t.Elem, m[k])
		}
	case Object:
		c.object(path, "the object", t.Fields, v)
	case Union:
		c.union(path, t, v)
	}
}

func (c *checker) union(path string, t Type, v any) {
	var alts []Type
	for _, a := range t.Alts {
		if a.Kind == Null {
			if v == nil {
				return
			}
			continue
		}
		alts = append(alts, a)
	}
	if v == nil {
		c.problem(path, "is null, want %s", t.ts(""))
		return
	}
	// Report the problems of the alternative that came closest.
	var best []string
	for _, a := range alts {
		sub := &checker{s: c.s}
		sub.value(path, a, v)
		if len(sub.problems) == 0 {
			return
		}
		if best == nil || len(sub.problems) < len(best) {
			best = sub.problems
		}
	}
	if s, ok := v.(string); ok && slices.ContainsFunc(alts, func(a Type) bool { return a.Kind == Literal }) {
		c.problem(path, "is %q, which is none of %s", s, t.ts(""))
		return
	}
	c.problems = append(c.problems, best...)
}

func (c *checker) object(path, name string, fields []Field, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		c.problem(path, "is %s %s, want %s", kindOf(v), short(v), name)
		return
	}
	declared := map[string]bool{}
	for _, f := range fields {
		declared[f.Name] = true
		fv, present := m[f.Name]
		if !present {
			if !f.Optional {
				c.problem(path, "has no key %q, which %s declares", f.Name, name)
			}
			continue
		}
		c.value(path+"."+f.Name, f.Type, fv)
	}
	for _, k := range sortedKeys(m) {
		if !declared[k] {
			c.problem(path, "has the key %q, which %s does not declare", k, name)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
