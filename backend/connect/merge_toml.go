package connect

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// mergeCodex sets model_provider and model at the root of Codex's
// config.toml and replaces its [model_providers.freelane] table, editing
// the text line by line so the user's comments, order and formatting stay.
// The result is parsed again and must hold exactly the user's settings plus
// FreeLane's; anything else is refused rather than written.
func mergeCodex(path string, old []byte, o Options) ([]byte, error) {
	var before map[string]any
	if err := toml.Unmarshal(old, &before); err != nil {
		return nil, tomlError(path, err)
	}
	if before == nil {
		before = map[string]any{}
	}
	doc, err := scanTOML(path, old)
	if err != nil {
		return nil, err
	}
	nl := "\n"
	if bytes.Contains(old, []byte("\r\n")) {
		nl = "\r\n"
	}

	drop := make([]bool, len(doc.lines))
	rootAt := -1 // where the root keys go: where model or model_provider was
	for _, kv := range doc.kvs {
		if kv.section == -1 && len(kv.key) == 1 && (kv.key[0] == "model" || kv.key[0] == "model_provider") {
			if rootAt == -1 {
				rootAt = kv.start
			}
			for l := kv.start; l <= kv.end; l++ {
				drop[l] = true
			}
		}
	}
	for i, h := range doc.headers {
		if !hasPrefix(h.key, "model_providers", codexProvider) {
			continue
		}
		// The header, then every line up to the section's last key; the
		// comments after it may be about the next table and stay.
		last := h.line
		for _, kv := range doc.kvs {
			if kv.section == i {
				last = max(last, kv.end)
			}
		}
		for l := h.line; l <= last; l++ {
			drop[l] = true
		}
	}
	if rootAt == -1 {
		switch {
		case len(doc.kvs) > 0 && doc.kvs[0].section == -1:
			rootAt = doc.kvs[0].start
		case len(doc.headers) > 0:
			rootAt = doc.headers[0].line
		default:
			rootAt = len(doc.lines)
		}
	}

	var b strings.Builder
	writeRoot := func() {
		for _, kv := range codexRoot(o) {
			b.WriteString(kv[0] + " = " + tomlString(kv[1]) + nl)
		}
	}
	// A removed table leaves the blank lines on both sides of it; one is
	// enough.
	blank, dropped := false, false
	for i, line := range doc.lines {
		if i == rootAt {
			writeRoot()
			blank = false
		}
		if drop[i] {
			dropped = true
			continue
		}
		isBlank := strings.TrimSpace(line) == ""
		if isBlank && blank && dropped {
			continue
		}
		b.WriteString(line)
		blank, dropped = isBlank, false
	}
	if rootAt == len(doc.lines) {
		writeRoot()
	}
	out := b.String()
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += nl
	}
	if strings.TrimSpace(out) != "" && !strings.HasSuffix(out, nl+nl) {
		out += nl
	}
	out += "[model_providers." + codexProvider + "]" + nl
	for _, kv := range codexTable(o) {
		out += kv[0] + " = " + tomlString(kv[1]) + nl
	}

	if err := checkCodex(path, doc, before, []byte(out), o); err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// checkCodex parses the merged file and compares it with the original:
// FreeLane's keys must read as written and everything else as before.
func checkCodex(path string, doc *tomlDoc, before map[string]any, merged []byte, o Options) error {
	var after map[string]any
	if err := toml.Unmarshal(merged, &after); err != nil {
		return refuseCodex(path, doc, fmt.Errorf("the merged file would not parse: %w", err))
	}
	want := map[string]any{}
	for _, kv := range codexTable(o) {
		want[kv[0]] = kv[1]
	}
	providers, _ := after["model_providers"].(map[string]any)
	if after["model_provider"] != codexProvider || after["model"] != o.Model || !reflect.DeepEqual(providers[codexProvider], want) {
		return refuseCodex(path, doc, errors.New("FreeLane's settings would not read back as written"))
	}
	strip := func(m map[string]any) {
		delete(m, "model_provider")
		delete(m, "model")
		if p, ok := m["model_providers"].(map[string]any); ok {
			delete(p, codexProvider)
			if len(p) == 0 {
				delete(m, "model_providers")
			}
		}
	}
	strip(before)
	strip(after)
	if !reflect.DeepEqual(before, after) {
		return refuseCodex(path, doc, errors.New("merging would change other settings"))
	}
	return nil
}

// refuseCodex explains a file whose FreeLane provider is written in a form
// the line edit cannot replace, such as an inline table or dotted keys.
func refuseCodex(path string, doc *tomlDoc, err error) error {
	line := 0
	for _, kv := range doc.kvs {
		full := kv.key
		if kv.section >= 0 {
			full = append(slices.Clone(doc.headers[kv.section].key), kv.key...)
		}
		if hasPrefix(full, "model_providers", codexProvider) || (len(full) == 1 && full[0] == "model_providers") {
			line = kv.start + 1
			break
		}
	}
	return &ParseError{File: path, Line: line, Err: fmt.Errorf("%w; write model_providers.%s as a [model_providers.%s] table, or remove it, and run this again", err, codexProvider, codexProvider)}
}

func hasPrefix(key []string, prefix ...string) bool {
	return len(key) >= len(prefix) && slices.Equal(key[:len(prefix)], prefix)
}

// tomlDoc is a TOML file's lines and where its keys and table headers are.
type tomlDoc struct {
	// lines keep their line endings.
	lines   []string
	kvs     []tomlKV
	headers []tomlHeader
}

type tomlKV struct {
	// section is the index of the table header above, -1 for the root.
	section    int
	key        []string
	start, end int // 0-based lines, inclusive
}

type tomlHeader struct {
	key  []string
	line int
}

func scanTOML(path string, b []byte) (*tomlDoc, error) {
	doc := &tomlDoc{lines: strings.SplitAfter(string(b), "\n")}
	if n := len(doc.lines); n > 0 && doc.lines[n-1] == "" {
		doc.lines = doc.lines[:n-1]
	}
	var p unstable.Parser
	p.Reset(b)
	var heads [][]string
	section := -1
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.KeyValue:
			sh := p.Shape(e.Raw)
			doc.kvs = append(doc.kvs, tomlKV{section: section, key: keyParts(e), start: sh.Start.Line - 1, end: sh.End.Line - 1})
		case unstable.Table, unstable.ArrayTable:
			heads = append(heads, keyParts(e))
			section = len(heads) - 1
		}
	}
	if err := p.Error(); err != nil {
		return nil, tomlError(path, err)
	}
	// Table headers are the lines outside every key's value that start
	// with '[': a multi-line string is inside its key's lines.
	covered := make([]bool, len(doc.lines))
	for _, kv := range doc.kvs {
		for l := kv.start; l <= kv.end && l < len(covered); l++ {
			covered[l] = true
		}
	}
	for i, line := range doc.lines {
		if !covered[i] && strings.HasPrefix(strings.TrimSpace(line), "[") {
			if len(doc.headers) == len(heads) {
				return nil, &ParseError{File: path, Line: i + 1, Err: errors.New("FreeLane cannot tell this line's table apart")}
			}
			doc.headers = append(doc.headers, tomlHeader{key: heads[len(doc.headers)], line: i})
		}
	}
	if len(doc.headers) != len(heads) {
		return nil, &ParseError{File: path, Err: errors.New("FreeLane cannot find every table header")}
	}
	return doc, nil
}

func keyParts(n *unstable.Node) []string {
	var parts []string
	it := n.Key()
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

func tomlError(path string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return &ParseError{File: path, Line: row, Err: errors.New(de.Error())}
	}
	var pe *unstable.ParserError
	if errors.As(err, &pe) {
		return &ParseError{File: path, Err: errors.New(pe.Message)}
	}
	return &ParseError{File: path, Err: err}
}
