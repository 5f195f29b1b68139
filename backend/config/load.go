package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"freelane/backend/catalog"
)

// Load reads and parses the config file at path, expanding ${NAME} from the
// process environment. See Parse for the results.
func Load(path string) (*Config, []Problem, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse parses and validates a config file. filename is used only in error
// messages; lookupEnv resolves ${NAME} references (os.LookupEnv in
// production) and may be nil, which treats every variable as unset.
//
// A valid file yields the config with defaults applied, any warnings, and a
// nil error. An invalid one yields a nil config, every problem found
// (warnings included), and a *ValidationError holding the fatal ones. YAML
// syntax errors are reported the same way, at the line yaml gives. An empty
// file is valid and yields Default().
func Parse(filename string, data []byte, lookupEnv func(string) (string, bool)) (*Config, []Problem, error) {
	return ParseWith(filename, data, ParseOptions{LookupEnv: lookupEnv})
}

// ParseOptions are the inputs of ParseWith besides the document.
type ParseOptions struct {
	// LookupEnv resolves ${NAME} references; nil treats every variable
	// as unset.
	LookupEnv func(string) (string, bool)
	// Verbatim keeps values as written, as ParseTemplate does.
	Verbatim bool
	// Catalog completes the providers that name a catalog entry; nil
	// means the catalog built into the binary.
	Catalog *catalog.Catalog
}

// ParseWith parses and validates a document as Parse or ParseTemplate
// does, with the given catalog.
func ParseWith(filename string, data []byte, o ParseOptions) (*Config, []Problem, error) {
	if o.LookupEnv == nil || o.Verbatim {
		o.LookupEnv = func(string) (string, bool) { return "", false }
	}
	if o.Catalog == nil {
		o.Catalog = catalog.Embedded()
	}
	d := newDecoder(o.LookupEnv)
	d.verbatim = o.Verbatim
	return parse(filename, data, d, o.Catalog)
}

// ParseTemplate parses and validates a document as Parse does, but keeps
// every value as written: ${NAME} references and "$${" escapes stay in the
// text, and APIKeyEnv still names the variables api_key refers to. It is
// for a configuration that is stored and edited, and expanded with Parse
// only when it is used, so that a value stays what it was written as.
// Validation sees the unexpanded text.
func ParseTemplate(filename string, data []byte) (*Config, []Problem, error) {
	return ParseWith(filename, data, ParseOptions{Verbatim: true})
}

// Escape returns the text of s as a literal value: "${" in it becomes
// "$${", so expanding the result gives s back and never reads the
// environment. Values that come from anywhere but the config file, such as
// the admin API, are stored escaped.
func Escape(s string) string { return strings.ReplaceAll(s, "${", "$${") }

// Unescape is the text a value without references expands to: what
// Escape was given.
func Unescape(s string) string { return strings.ReplaceAll(s, "$${", "${") }

// HasRef reports whether the value s refers to an environment variable.
func HasRef(s string) bool {
	return strings.Contains(strings.ReplaceAll(s, "$${", ""), "${")
}

func parse(filename string, data []byte, d *decoder, cat *catalog.Catalog) (*Config, []Problem, error) {
	root, problem := parseYAML(data)
	if problem != nil {
		return nil, []Problem{*problem}, &ValidationError{File: filename, Problems: []Problem{*problem}}
	}

	cfg := &Config{}
	if root != nil {
		d.decode(root, reflect.ValueOf(cfg).Elem(), "")
	}
	for i := range cfg.Providers {
		p := &cfg.Providers[i]
		p.APIKeyEnv = d.envRefs[fmt.Sprintf("providers[%d].api_key", i)]
		if p.Name == "" {
			p.Name = p.Catalog
		}
	}

	// Providers that name a catalog entry are validated as the catalog
	// completes them. A verbatim document is handed back as written, so
	// that what is stored is only what the user gave.
	filled := d.fillCatalog(cfg, cat)
	v := &validator{d: d, problems: d.problems}
	v.validate(filled)
	problems := v.problems
	sort.SliceStable(problems, func(i, j int) bool { return lineKey(problems[i]) < lineKey(problems[j]) })

	var fatal []Problem
	for _, p := range problems {
		if !p.Warning {
			fatal = append(fatal, p)
		}
	}
	if len(fatal) > 0 {
		return nil, problems, &ValidationError{File: filename, Problems: fatal}
	}
	if d.verbatim {
		for i := range cfg.Providers {
			if cfg.Providers[i].Catalog != "" {
				cfg.Providers[i].APIKeyEnv = filled.Providers[i].APIKeyEnv
			}
		}
	} else {
		cfg = filled
	}
	applyDefaults(cfg)
	return cfg, problems, nil
}

// lineKey orders problems by line, with those of unknown line last.
func lineKey(p Problem) int {
	if p.Line <= 0 {
		return int(^uint(0) >> 1)
	}
	return p.Line
}

// parseYAML parses data into the content node of its single document. It
// returns a nil node for a file without content, and a problem for a YAML
// syntax error or a second document.
func parseYAML(data []byte) (*yaml.Node, *Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxProblem(err, data)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxProblem(err, data)
	default:
		return nil, &Problem{Line: next.Line, Message: "the file holds more than one YAML document (\"---\"); put the whole config in one"}
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, nil
	}
	return doc.Content[0], nil
}

var yamlErrLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// syntaxProblem turns a yaml error such as "yaml: line 3: mapping values are
// not allowed in this context" into a Problem at that line.
func syntaxProblem(err error, data []byte) *Problem {
	msg := err.Error()
	p := &Problem{}
	if m := yamlErrLine.FindStringSubmatch(msg); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	p.Message = "invalid YAML: " + msg
	// Tabs are the most common cause of this message and the hardest to see.
	if p.Line > 0 && strings.Contains(msg, "cannot start any token") {
		lines := bytes.Split(data, []byte("\n"))
		if p.Line <= len(lines) && bytes.ContainsRune(lines[p.Line-1], '\t') {
			p.Message += "; indent with spaces, YAML does not allow tabs"
		}
	}
	return p
}
