package connect

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// mergeContinue adds FreeLane's entry to the models list of Continue's
// config.yaml, or replaces the entry named FreeLane, through yaml.v3's
// node tree so comments and the order of everything else stay. The merged
// file must decode to the user's settings plus FreeLane's entry, or it is
// not written.
func mergeContinue(path string, old []byte, o Options) ([]byte, error) {
	entry := continueNode(o)
	if len(bytes.TrimSpace(old)) == 0 {
		doc := mapping(
			scalar("name"), scalar("Local Config"),
			scalar("version"), scalar("1.0.0"),
			scalar("schema"), scalar("v1"),
			scalar("models"), &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{entry}},
		)
		return encodeYAML(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{doc}})
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(old, &doc); err != nil {
		return nil, yamlError(path, err)
	}
	var before map[string]any
	if err := yaml.Unmarshal(old, &before); err != nil {
		return nil, yamlError(path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &ParseError{File: path, Line: 1, Err: errors.New("the file is not a YAML mapping (name:, version:, schema:, models: ...)")}
	}
	root := doc.Content[0]
	var models *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "models" {
			models = root.Content[i+1]
			break
		}
	}
	switch {
	case models == nil:
		models = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		root.Content = append(root.Content, scalar("models"), models)
	case models.Kind == yaml.ScalarNode && models.Tag == "!!null":
		*models = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	case models.Kind != yaml.SequenceNode:
		return nil, &ParseError{File: path, Line: models.Line, Err: errors.New("models is not a list")}
	}
	var wantEntry map[string]any
	if err := entry.Decode(&wantEntry); err != nil {
		return nil, fmt.Errorf("continue entry: %w", err)
	}
	replaced := false
	for i, m := range models.Content {
		if !isFreeLaneEntry(m) {
			continue
		}
		var have map[string]any
		if err := m.Decode(&have); err == nil && reflect.DeepEqual(have, wantEntry) {
			// Already there: the file stays byte for byte.
			return old, nil
		}
		models.Content[i] = entry
		replaced = true
		break
	}
	if !replaced {
		models.Content = append(models.Content, entry)
	}
	out, err := encodeYAML(&doc)
	if err != nil {
		return nil, err
	}
	var after map[string]any
	if err := yaml.Unmarshal(out, &after); err != nil {
		return nil, &ParseError{File: path, Err: fmt.Errorf("the merged file would not parse: %w", err)}
	}
	if !sameExceptFreeLane(before, after) {
		return nil, &ParseError{File: path, Err: errors.New("merging would change other settings (anchors or aliases in models?); add the FreeLane entry by hand")}
	}
	return out, nil
}

func isFreeLaneEntry(m *yaml.Node) bool {
	if m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "name" && m.Content[i+1].Value == continueModelName {
			return true
		}
	}
	return false
}

// sameExceptFreeLane compares two decoded files without FreeLane's entry
// in models.
func sameExceptFreeLane(a, b map[string]any) bool {
	strip := func(m map[string]any) map[string]any {
		c := map[string]any{}
		for k, v := range m {
			c[k] = v
		}
		list, _ := c["models"].([]any)
		var kept []any
		for _, e := range list {
			if em, ok := e.(map[string]any); ok && em["name"] == continueModelName {
				continue
			}
			kept = append(kept, e)
		}
		c["models"] = kept
		return c
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

func continueNode(o Options) *yaml.Node {
	var content []*yaml.Node
	for _, kv := range continueEntry(o) {
		key := scalar(kv[0].(string))
		switch v := kv[1].(type) {
		case string:
			content = append(content, key, scalar(v))
		case []string:
			seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for _, s := range v {
				seq.Content = append(seq.Content, scalar(s))
			}
			content = append(content, key, seq)
		}
	}
	return mapping(content...)
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func mapping(content ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: content}
}

func encodeYAML(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("writing YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing YAML: %w", err)
	}
	return b.Bytes(), nil
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

func yamlError(path string, err error) error {
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	return &ParseError{File: path, Line: line, Err: err}
}
