package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder fills a Go value from a yaml.Node tree, guided by the value's type
// and its yaml struct tags. Doing this by hand rather than with Node.Decode
// lets it reject unknown keys, expand ${ENV} in scalar values only (so an
// environment value can never change the document's structure), and remember
// the line of every field path for the validator.
type decoder struct {
	lookupEnv func(string) (string, bool)
	// verbatim keeps every value as written, references and "$${"
	// escapes included, while still recording and checking references
	// (see ParseTemplate).
	verbatim bool
	problems []Problem

	// lines maps a field path to the line of its value.
	lines map[string]int
	// set holds the paths given a non-null value, so validation can tell an
	// explicit 0 from an absent key.
	set map[string]bool
	// bad holds the paths whose value could not be decoded; validation stays
	// quiet about them and everything below them to avoid follow-on noise.
	bad map[string]bool
	// envRefs and envUnset map a path to the environment variables its value
	// references and to those of them that are not set.
	envRefs  map[string][]string
	envUnset map[string][]string
	// misspelt holds the paths of known fields that an unknown key was
	// taken for a typo of ("base_ulr" for base_url).
	misspelt map[string]bool
}

func newDecoder(lookupEnv func(string) (string, bool)) *decoder {
	return &decoder{
		lookupEnv: lookupEnv,
		lines:     map[string]int{},
		set:       map[string]bool{},
		bad:       map[string]bool{},
		envRefs:   map[string][]string{},
		envUnset:  map[string][]string{},
		misspelt:  map[string]bool{},
	}
}

var durationType = reflect.TypeFor[time.Duration]()

// fail records a fatal problem with the value at path and marks it bad.
func (d *decoder) fail(path string, line int, format string, args ...any) {
	d.bad[path] = true
	d.problems = append(d.problems, Problem{Line: line, Field: path, Message: fmt.Sprintf(format, args...)})
}

// decode stores n into v, reporting problems against path.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if isNull(n) {
		// An empty value ("key:" or "~") leaves the zero value, which the
		// defaults then fill in.
		return
	}
	d.set[path] = true
	t := v.Type()
	switch {
	case t == durationType:
		d.duration(n, v, path)
	case t.Kind() == reflect.Pointer:
		p := reflect.New(t.Elem())
		d.decode(n, p.Elem(), path)
		v.Set(p)
	case t.Kind() == reflect.Struct:
		d.structure(n, v, path)
	case t.Kind() == reflect.Slice:
		d.sequence(n, v, path)
	case t.Kind() == reflect.Map:
		d.mapping(n, v, path)
	default:
		d.scalar(n, v, path)
	}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge"
}

// structure decodes a mapping into a struct, matching keys to yaml tags.
func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		if path == "" {
			d.fail(path, n.Line, "the config must be a mapping of settings such as listen and providers, got %s", describeNode(n))
		} else {
			d.fail(path, n.Line, "must be a mapping of keys to values, got %s", describeNode(n))
		}
		return
	}
	fields := yamlFields(v.Type())

	// Merge keys ("<<: *anchor") go first so that the mapping's own keys
	// override what they bring in, as YAML specifies. In a list of merged
	// mappings the earlier ones win, so they are applied last.
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if !isMerge(k) {
			continue
		}
		for val.Kind == yaml.AliasNode && val.Alias != nil {
			val = val.Alias
		}
		switch val.Kind {
		case yaml.MappingNode:
			d.structure(val, v, path)
		case yaml.SequenceNode:
			for j := len(val.Content) - 1; j >= 0; j-- {
				m := val.Content[j]
				for m.Kind == yaml.AliasNode && m.Alias != nil {
					m = m.Alias
				}
				if m.Kind != yaml.MappingNode {
					d.fail(path, m.Line, "a merge (<<) takes mappings, got %s", describeNode(m))
					continue
				}
				d.structure(m, v, path)
			}
		default:
			d.fail(path, val.Line, "a merge (<<) takes a mapping or a list of mappings, got %s", describeNode(val))
		}
	}

	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if isMerge(k) {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.fail(path, k.Line, "keys must be plain names, got %s", describeNode(k))
			continue
		}
		name := k.Value
		p := joinField(path, name)
		if first, dup := seen[name]; dup {
			d.fail(p, k.Line, "duplicate key %q (first given on line %d)", name, first)
			continue
		}
		seen[name] = k.Line
		idx, ok := fields[name]
		if !ok {
			msg, guess := unknownField(name, fields)
			if guess != "" {
				d.misspelt[joinField(path, guess)] = true
			}
			d.problems = append(d.problems, Problem{Line: k.Line, Field: p, Message: msg})
			continue
		}
		d.lines[p] = val.Line
		d.decode(val, v.Field(idx), p)
	}
}

// sequence decodes a YAML list into a slice.
func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.fail(path, n.Line, "must be a list, got %s", describeNode(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		d.lines[p] = item.Line
		d.decode(item, s.Index(i), p)
	}
	v.Set(s)
}

// mapping decodes a YAML mapping into a map with string keys. Keys are taken
// literally; only values are expanded.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(path, n.Line, "must be a mapping of keys to values, got %s", describeNode(n))
		return
	}
	t := v.Type()
	m := reflect.MakeMapWithSize(t, len(n.Content)/2)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.fail(path, k.Line, "keys must be plain names, got %s", describeNode(k))
			continue
		}
		p := joinField(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			d.fail(p, k.Line, "duplicate key %q (first given on line %d)", k.Value, first)
			continue
		}
		seen[k.Value] = k.Line
		d.lines[p] = val.Line
		elem := reflect.New(t.Elem()).Elem()
		d.decode(val, elem, p)
		m.SetMapIndex(reflect.ValueOf(k.Value).Convert(t.Key()), elem)
	}
	v.Set(m)
}

// scalar decodes a string, bool or number after ${ENV} expansion.
func (d *decoder) scalar(n *yaml.Node, v reflect.Value, path string) {
	want := describeType(v.Type())
	if n.Kind != yaml.ScalarNode {
		d.fail(path, n.Line, "must be %s, got %s", want, describeNode(n))
		return
	}
	val, ok := d.expand(n.Value, path, n.Line)
	if !ok {
		return
	}
	if v.Kind() == reflect.String {
		// Any scalar is acceptable as a string: an api_key of 12345 means
		// the characters, not the number.
		v.SetString(val)
		return
	}

	// Resolve the expanded text afresh, without the original tag or quoting,
	// because environment values are always strings and their type comes
	// from their content.
	src := &yaml.Node{Kind: yaml.ScalarNode, Value: val}
	if val == n.Value {
		src = n
	}
	var allowed []string
	switch v.Kind() {
	case reflect.Bool:
		allowed = []string{"!!bool"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		// Node.Decode would silently truncate 1.5 to 1, so floats are
		// refused here.
		allowed = []string{"!!int"}
	case reflect.Float32, reflect.Float64:
		allowed = []string{"!!int", "!!float"}
	}
	if !slices.Contains(allowed, src.ShortTag()) {
		d.fail(path, n.Line, "must be %s, got %q", want, val)
		return
	}
	if err := src.Decode(v.Addr().Interface()); err != nil {
		d.fail(path, n.Line, "must be %s, got %q", want, val)
	}
}

// duration decodes a time.Duration written with a unit, such as "30s".
func (d *decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.fail(path, n.Line, "must be %s, got %s", describeType(durationType), describeNode(n))
		return
	}
	val, ok := d.expand(n.Value, path, n.Line)
	if !ok {
		return
	}
	val = strings.TrimSpace(val)
	if val == "0" {
		// A bare 0 needs no unit and means "use the default".
		v.SetInt(0)
		return
	}
	dur, err := time.ParseDuration(val)
	if err != nil {
		msg := fmt.Sprintf("must be %s, got %q", describeType(durationType), val)
		if _, numErr := strconv.ParseFloat(val, 64); numErr == nil {
			msg += fmt.Sprintf("; add a unit, e.g. \"%ss\"", val)
		}
		d.fail(path, n.Line, "%s", msg)
		return
	}
	v.SetInt(int64(dur))
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expand replaces ${NAME} in s with the environment variable NAME and "$${"
// with a literal "${". Unset variables expand to "" and are recorded so that
// the caller can warn about them. ok is false when s has a malformed
// reference, which has then been reported.
func (d *decoder) expand(s, path string, line int) (string, bool) {
	if !strings.Contains(s, "${") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		rest := s[i:]
		switch {
		case strings.HasPrefix(rest, "$${"):
			if d.verbatim {
				b.WriteString("$${")
			} else {
				b.WriteString("${")
			}
			i += 3
		case strings.HasPrefix(rest, "${"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				d.fail(path, line, `unterminated "${" in %q; close it with "}" or write "$${" for a literal "${"`, s)
				return "", false
			}
			name := rest[2:end]
			if !envName.MatchString(name) {
				d.fail(path, line, `invalid environment variable name %q in "${%s}": use letters, digits and '_', or write "$${" for a literal "${"`, name, name)
				return "", false
			}
			if !slices.Contains(d.envRefs[path], name) {
				d.envRefs[path] = append(d.envRefs[path], name)
			}
			i += end + 1
			if d.verbatim {
				b.WriteString(rest[:end+1])
				continue
			}
			val, ok := d.lookupEnv(name)
			if !ok && !slices.Contains(d.envUnset[path], name) {
				d.envUnset[path] = append(d.envUnset[path], name)
			}
			b.WriteString(val)
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), true
}

// yamlFields maps the yaml key of every decodable field of struct type t to
// the field's index. Fields tagged "-" are not read from the file.
func yamlFields(t reflect.Type) map[string]int {
	fields := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = strings.ToLower(f.Name)
		}
		fields[name] = i
	}
	return fields
}

// unknownField explains an unknown key, suggesting the closest known one
// when it looks like a typo and listing the known keys otherwise. guess is
// the suggested key, if any.
func unknownField(name string, fields map[string]int) (msg, guess string) {
	known := make([]string, 0, len(fields))
	for k := range fields {
		known = append(known, k)
	}
	sort.Strings(known)
	best, bestDist := "", -1
	for _, k := range known {
		dist := editDistance(strings.ToLower(name), k)
		if bestDist < 0 || dist < bestDist {
			best, bestDist = k, dist
		}
	}
	// Allow about one edit per three letters, so "base_ulr" finds base_url
	// but "colour" does not turn into "kind".
	if bestDist >= 0 && bestDist <= max(1, len(best)/3) {
		return fmt.Sprintf("unknown field %q (did you mean %s?)", name, best), best
	}
	return fmt.Sprintf("unknown field %q; known fields are %s", name, strings.Join(known, ", ")), ""
}

// editDistance is the optimal-string-alignment distance between a and b:
// insertions, deletions, substitutions and swaps of neighbours cost one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// describeType names what a value of type t should look like in YAML.
func describeType(t reflect.Type) string {
	if t == durationType {
		return `a duration such as "30s" or "1m30s"`
	}
	switch t.Kind() {
	case reflect.Pointer:
		return describeType(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list"
	default:
		return "a mapping of keys to values"
	}
}

// describeNode names what was found, for "must be X, got Y" messages.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	default:
		return "nothing usable"
	}
}

func joinField(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
