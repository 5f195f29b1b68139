package gemini

import (
	"encoding/json"
	"slices"
	"strings"
)

// Tool parameters and response schemas are written as the API's Schema
// (the parameters and responseSchema fields), a subset of OpenAPI 3.0,
// rather than as the full JSON Schema that parametersJsonSchema and
// responseJsonSchema take. Every model and API version reads Schema, while
// the JSON Schema fields are newer and not served by every model (nor by
// every server that imitates the API); the price is that keywords outside
// the subset are converted where they have an equivalent and dropped
// where they do not. $ref is dropped with the definitions it points into:
// the schema it names is not inlined, so such a property accepts any
// value, which a model handles far better than a refused request.

// schemaKeys are the Schema fields the API accepts, each with how its
// value is converted.
var schemaKeys = map[string]schemaKey{
	"type": keyType, "format": keyString, "title": keyString, "description": keyString,
	"pattern": keyString, "nullable": keyBool, "enum": keyEnum, "const": keyConst,
	"maxItems": keyNumber, "minItems": keyNumber, "minProperties": keyNumber,
	"maxProperties": keyNumber, "minLength": keyNumber, "maxLength": keyNumber,
	"minimum": keyNumber, "maximum": keyNumber, "properties": keyProperties,
	"required": keyRequired, "propertyOrdering": keyRequired, "anyOf": keyAnyOf,
	"oneOf": keyAnyOf, "items": keyItems, "example": keyAny, "default": keyAny,
}

type schemaKey uint8

// The conversions. A value of the wrong JSON type is dropped, as the API
// would refuse it.
const (
	keyAny schemaKey = iota
	keyString
	keyNumber
	keyBool
	keyType
	keyEnum
	keyConst
	keyProperties
	keyRequired // a list of names
	keyAnyOf
	keyItems
)

// schemaFormats are the formats the API accepts, by type; it refuses any
// other.
var schemaFormats = map[string][]string{
	"STRING":  {"enum", "date-time"},
	"NUMBER":  {"float", "double"},
	"INTEGER": {"int32", "int64"},
}

// maxSchemaDepth bounds the nesting converted; deeper schemas are cut to
// accept anything there.
const maxSchemaDepth = 32

// sanitizeSchema converts a JSON Schema to the API's Schema. ok is false
// when nothing usable is left, such as for an object with no properties,
// which the API refuses.
func sanitizeSchema(raw json.RawMessage) (map[string]any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	s := convertSchema(m, 0)
	if props, _ := s["properties"].(map[string]any); len(props) == 0 && (s["type"] == "OBJECT" || s["type"] == nil) {
		return nil, false
	}
	return s, true
}

func convertSchema(in map[string]any, depth int) map[string]any {
	out := map[string]any{}
	if depth >= maxSchemaDepth {
		return out
	}
	// allOf of one schema is that schema, as generators write a $ref
	// with a description beside it.
	if all, ok := in["allOf"].([]any); ok && len(all) == 1 {
		if sub, ok := all[0].(map[string]any); ok {
			for k, v := range convertSchema(sub, depth+1) {
				out[k] = v
			}
		}
	}
	for k, v := range in {
		key, ok := schemaKeys[k]
		if !ok {
			continue
		}
		switch key {
		case keyAny:
			out[k] = v
		case keyString:
			if _, ok := v.(string); ok {
				out[k] = v
			}
		case keyNumber:
			if _, ok := v.(float64); ok {
				out[k] = v
			}
		case keyBool:
			if _, ok := v.(bool); ok {
				out[k] = v
			}
		case keyType:
			convertType(out, v)
		case keyEnum:
			if e := stringList(v); e != nil {
				out["enum"] = e
			}
		case keyConst:
			if s, ok := v.(string); ok {
				out["enum"] = []any{s}
			}
		case keyProperties:
			if props, ok := v.(map[string]any); ok {
				conv := map[string]any{}
				for name, p := range props {
					if ps, ok := p.(map[string]any); ok {
						conv[name] = convertSchema(ps, depth+1)
					} else {
						conv[name] = map[string]any{}
					}
				}
				out["properties"] = conv
			}
		case keyRequired:
			if names := stringList(v); names != nil {
				out[k] = names
			}
		case keyAnyOf:
			convertAnyOf(out, v, depth)
		case keyItems:
			if it, ok := v.(map[string]any); ok {
				out["items"] = convertSchema(it, depth+1)
			}
		}
	}
	if _, ok := out["enum"]; ok && out["type"] == nil {
		out["type"] = "STRING"
	}
	if f, ok := out["format"].(string); !ok || !slices.Contains(schemaFormats[typeName(out)], f) {
		delete(out, "format")
	}
	// The API refuses a required (or ordered) name that is no property.
	for _, k := range []string{"required", "propertyOrdering"} {
		names, ok := out[k]
		if !ok {
			continue
		}
		props, _ := out["properties"].(map[string]any)
		var kept []any
		for _, name := range names.([]any) {
			if _, ok := props[name.(string)]; ok {
				kept = append(kept, name)
			}
		}
		if kept == nil {
			delete(out, k)
		} else {
			out[k] = kept
		}
	}
	// A nested object with no properties is refused by the API; without
	// its type it stands for any value, which is the closest it can say.
	if props, _ := out["properties"].(map[string]any); depth > 0 && out["type"] == "OBJECT" && len(props) == 0 {
		delete(out, "type")
		delete(out, "properties")
	}
	if _, ok := out["items"]; ok && out["type"] == nil {
		out["type"] = "ARRAY"
	}
	return out
}

func typeName(s map[string]any) string {
	t, _ := s["type"].(string)
	return t
}

// convertType writes a JSON Schema type: one name in upper case, a list
// with "null" in it as nullable, a list of several as anyOf.
func convertType(out map[string]any, v any) {
	switch t := v.(type) {
	case string:
		out["type"] = strings.ToUpper(t)
	case []any:
		var types []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				if s == "null" {
					out["nullable"] = true
				} else {
					types = append(types, strings.ToUpper(s))
				}
			}
		}
		switch len(types) {
		case 0:
		case 1:
			out["type"] = types[0]
		default:
			alts := make([]any, len(types))
			for i, s := range types {
				alts[i] = map[string]any{"type": s}
			}
			out["anyOf"] = alts
		}
	}
}

// convertAnyOf writes anyOf (and oneOf, which the API lacks and which the
// model reads the same way). A null alternative is nullable, and a single
// alternative left is merged into the schema, as pydantic writes an
// optional field.
func convertAnyOf(out map[string]any, v any, depth int) {
	list, ok := v.([]any)
	if !ok {
		return
	}
	var alts []any
	for _, a := range list {
		m, ok := a.(map[string]any)
		if !ok {
			continue
		}
		if m["type"] == "null" && len(m) == 1 {
			out["nullable"] = true
			continue
		}
		alts = append(alts, convertSchema(m, depth+1))
	}
	switch len(alts) {
	case 0:
	case 1:
		for k, val := range alts[0].(map[string]any) {
			if _, set := out[k]; !set || k == "type" {
				out[k] = val
			}
		}
	default:
		out["anyOf"] = alts
	}
}

// stringList returns v as a list when every element is a string.
func stringList(v any) []any {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil
	}
	for _, x := range list {
		if _, ok := x.(string); !ok {
			return nil
		}
	}
	return list
}

// toJSONSchema converts the API's Schema from a Gemini client to JSON
// Schema for other dialects: type names in lower case and nullable as a
// type list. Fields only the API knows (propertyOrdering, the enum format)
// are dropped.
func toJSONSchema(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	b, _ := json.Marshal(fromSchema(m, 0))
	return b
}

func fromSchema(in map[string]any, depth int) map[string]any {
	out := map[string]any{}
	if depth >= maxSchemaDepth {
		return out
	}
	for k, v := range in {
		switch k {
		case "propertyOrdering", "nullable":
		case "type":
			if s, ok := v.(string); ok {
				out["type"] = strings.ToLower(s)
			}
		case "format":
			if v != "enum" {
				out[k] = v
			}
		case "properties":
			if props, ok := v.(map[string]any); ok {
				conv := map[string]any{}
				for name, p := range props {
					if ps, ok := p.(map[string]any); ok {
						conv[name] = fromSchema(ps, depth+1)
					}
				}
				out[k] = conv
			}
		case "items":
			if it, ok := v.(map[string]any); ok {
				out[k] = fromSchema(it, depth+1)
			}
		case "anyOf":
			if list, ok := v.([]any); ok {
				var alts []any
				for _, a := range list {
					if m, ok := a.(map[string]any); ok {
						alts = append(alts, fromSchema(m, depth+1))
					}
				}
				out[k] = alts
			}
		default:
			out[k] = v
		}
	}
	if n, _ := in["nullable"].(bool); n {
		if t, ok := out["type"].(string); ok {
			out["type"] = []any{t, "null"}
		}
	}
	if out["type"] == "type_unspecified" {
		delete(out, "type")
	}
	return out
}
