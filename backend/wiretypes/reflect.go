package wiretypes

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"reflect"
	"slices"
	"strings"
	"time"
)

// fieldKey names one field of one Go struct type.
type fieldKey struct {
	t    reflect.Type
	name string
}

func (k fieldKey) String() string { return k.t.String() + "." + k.name }

// field names the field called name of the struct type T.
func field[T any](name string) fieldKey { return fieldKey{reflect.TypeFor[T](), name} }

// values turns constants of a string type into their strings.
func values[S ~string](vs ...S) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

var thisPackage = reflect.TypeFor[endpoint]().PkgPath()

// marshalled are the types with their own JSON encoding, and what that
// encoding is. A type with a MarshalJSON or MarshalText method that is not
// listed here stops the generator, since reflection cannot tell what it
// writes.
var marshalled = map[reflect.Type]Type{
	reflect.TypeFor[time.Time]():       {Kind: String},
	reflect.TypeFor[json.RawMessage](): {Kind: Unknown},
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func customMarshal(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
		return false
	}
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) || p.Implements(jsonMarshaler) || p.Implements(textMarshaler)
}

// jsonField is one key of a struct's JSON, with the struct that declares
// it (an embedded struct's fields are promoted, as encoding/json does).
type jsonField struct {
	owner     reflect.Type
	sf        reflect.StructField
	name      string
	omitempty bool
	omitzero  bool
	asString  bool
}

func jsonFields(t reflect.Type) ([]jsonField, error) {
	var out []jsonField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				inner, err := jsonFields(ft)
				if err != nil {
					return nil, err
				}
				out = append(out, inner...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := jsonField{owner: t, sf: sf, name: name}
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "omitempty":
				f.omitempty = true
			case "omitzero":
				f.omitzero = true
			case "string":
				f.asString = true
			}
		}
		out = append(out, f)
	}
	for i, f := range out {
		if slices.ContainsFunc(out[:i], func(g jsonField) bool { return g.name == f.name }) {
			return nil, fmt.Errorf("%s has two fields written as %q", t, f.name)
		}
	}
	return out, nil
}

// emptyable reports whether omitempty leaves out some values of t.
func emptyable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		return false
	case reflect.Array:
		return t.Len() == 0
	}
	return true
}

func nilable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	}
	return false
}

// builder turns the contract's Go types into declarations.
type builder struct {
	src       *sources
	names     map[reflect.Type]string
	enums     map[reflect.Type]*enum
	fieldEnum map[fieldKey]*enum
	nonNull   map[fieldKey]bool
	used      map[fieldKey]bool
	usedEnum  map[string]bool
	decls     map[string]*Decl
	declOf    map[string]reflect.Type
	astOf     map[reflect.Type]*ast.StructType
	errs      []error
}

func (b *builder) fail(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf(format, args...))
}

// build describes every type of the contract c.
func build(root string, c contract) (*Schema, error) {
	b := &builder{
		src:       newSources(root),
		names:     map[reflect.Type]string{},
		enums:     map[reflect.Type]*enum{},
		fieldEnum: map[fieldKey]*enum{},
		nonNull:   map[fieldKey]bool{},
		used:      map[fieldKey]bool{},
		usedEnum:  map[string]bool{},
		decls:     map[string]*Decl{},
		declOf:    map[string]reflect.Type{},
		astOf:     map[reflect.Type]*ast.StructType{},
	}
	// Scanned values are filled in on a copy: the contract stays as written.
	c.Enums = slices.Clone(c.Enums)
	for i := range c.Enums {
		e := &c.Enums[i]
		if e.Type != nil {
			b.enums[e.Type] = e
		}
		for _, k := range e.Fields {
			b.fieldEnum[k] = e
		}
		if e.Scan {
			if len(e.Fields) == 0 {
				b.fail("enum %s scans source but names no field", e.Name)
				continue
			}
			k := e.Fields[0]
			vs, err := b.src.assigned(e.Dir, k.t.Name(), k.name)
			if err != nil {
				b.fail("enum %s: %w", e.Name, err)
			}
			e.Values = vs
		}
	}
	for _, k := range c.NeverNull {
		b.nonNull[k] = true
	}

	var roots []reflect.Type
	for _, ep := range c.Endpoints {
		roots = append(roots, ep.Request, ep.Response)
		roots = append(roots, ep.Messages...)
	}
	roots = append(roots, c.Roots...)
	b.nameStructs(roots)

	var routes []Field
	for _, ep := range c.Endpoints {
		routes = append(routes, b.endpoint(ep))
	}
	for _, t := range c.Roots {
		b.expr(t, "")
	}
	b.add(&Decl{Name: "Endpoints", Fields: routes, Doc: "Endpoints lists every admin route with the JSON body it takes and what it\n" +
		"answers with status 2xx (void: no body). Any route answers an ErrorBody\non 4xx and 5xx."}, nil)

	for _, e := range c.Enums {
		if e.Name == "" {
			continue
		}
		doc := e.Doc
		if doc == "" && e.Type != nil {
			if _, d, err := b.src.typeSpec(e.Type); err == nil {
				doc = retitle(d, e.Type.Name(), e.Name)
			}
		}
		if len(e.Values) == 0 {
			b.fail("enum %s has no values", e.Name)
			continue
		}
		if !b.usedEnum[e.Name] {
			b.fail("enum %s is in the contract, but no wire type uses it", e.Name)
		}
		t := b.enumType(&e)
		b.add(&Decl{Name: e.Name, Doc: doc, Alias: &t}, nil)
	}
	for k := range b.nonNull {
		if !b.used[k] {
			b.fail("the contract says %s is never null, but no wire type has that field", k)
		}
	}
	for k := range b.fieldEnum {
		if !b.used[k] {
			b.fail("the contract gives %s an enum, but no wire type has that field", k)
		}
	}
	decls := make([]Decl, 0, len(b.decls))
	for _, d := range b.decls {
		decls = append(decls, *d)
	}
	return newSchema(decls), errors.Join(b.errs...)
}

func (b *builder) add(d *Decl, t reflect.Type) bool {
	if prev, ok := b.decls[d.Name]; ok {
		if b.declOf[d.Name] != t || t == nil {
			b.fail("two declarations are called %s (%s and %s)", d.Name, prev.From, d.From)
		}
		return false
	}
	b.decls[d.Name], b.declOf[d.Name] = d, t
	return true
}

// nameStructs names every named struct reachable from roots after its Go
// type, with its package's name in front when two packages declare a
// struct of the same name.
func (b *builder) nameStructs(roots []reflect.Type) {
	seen := map[reflect.Type]bool{}
	var structs []reflect.Type
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		if _, ok := marshalled[t]; ok {
			return
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(t.Elem())
		case reflect.Struct:
			if t.Name() != "" {
				structs = append(structs, t)
			}
			fs, err := jsonFields(t)
			if err != nil {
				b.fail("%w", err)
			}
			for _, f := range fs {
				walk(f.sf.Type)
			}
		}
	}
	for _, t := range roots {
		walk(t)
	}
	byName := map[string][]reflect.Type{}
	for _, t := range structs {
		n := capitalize(t.Name())
		byName[n] = append(byName[n], t)
	}
	for n, ts := range byName {
		for _, t := range ts {
			if len(ts) > 1 {
				b.names[t] = capitalize(packageName(t)) + n
			} else {
				b.names[t] = n
			}
		}
	}
}

// retitle makes a Go doc comment, which starts with the Go name, start
// with the TypeScript name instead.
func retitle(doc, goName, tsName string) string {
	doc = strings.TrimSpace(doc)
	if rest, ok := strings.CutPrefix(doc, goName+" "); ok {
		return tsName + " " + rest
	}
	return doc
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func packageName(t reflect.Type) string {
	p := t.PkgPath()
	return p[strings.LastIndex(p, "/")+1:]
}

// goName is how the declaration names its Go type in its doc comment.
func goName(t reflect.Type) string { return packageName(t) + "." + t.Name() }

func (b *builder) endpoint(ep endpoint) Field {
	body := func(t reflect.Type) Type {
		if t == nil {
			return Type{Kind: Void}
		}
		return b.expr(t, "")
	}
	res := body(ep.Response)
	switch {
	case ep.Text:
		res = Type{Kind: String}
	case len(ep.Messages) > 0:
		var alts []Type
		for _, m := range ep.Messages {
			alts = append(alts, b.expr(m, ""))
		}
		u := Type{Kind: Union, Alts: alts}
		b.add(&Decl{Name: "WebSocketMessage", Doc: "WebSocketMessage is one message of /api/ws: a snapshot first and after\nevery configuration change, updates in between.", Alias: &u}, nil)
		res = Type{Kind: Ref, Name: "WebSocketMessage"}
	case ep.NeverNull:
		res = stripNull(res)
	}
	return Field{Name: ep.Route, Doc: ep.Doc, Type: Type{Kind: Object, Fields: []Field{
		{Name: "request", Type: body(ep.Request)},
		{Name: "response", Type: res},
	}}}
}

// enumType is the union of enum e's values.
func (b *builder) enumType(e *enum) Type {
	alts := make([]Type, len(e.Values))
	for i, v := range e.Values {
		alts[i] = Type{Kind: Literal, Name: v}
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return Type{Kind: Union, Alts: alts}
}

// enumRef is the type of a value of enum e: its alias, or its one value
// written inline when it has no name.
func (b *builder) enumRef(e *enum) Type {
	b.usedEnum[e.Name] = true
	if e.Name == "" {
		if len(e.Values) != 1 {
			b.fail("an enum of %v needs a name", e.Values)
		}
		return b.enumType(e)
	}
	return Type{Kind: Ref, Name: e.Name}
}

func stripNull(t Type) Type {
	if t.Kind != Union {
		return t
	}
	var alts []Type
	for _, a := range t.Alts {
		if a.Kind != Null {
			alts = append(alts, a)
		}
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return Type{Kind: Union, Alts: alts}
}

func hasNull(t Type) bool {
	return t.Kind == Union && slices.ContainsFunc(t.Alts, func(a Type) bool { return a.Kind == Null })
}

// orNull is t | null.
func orNull(t Type) Type {
	if hasNull(t) {
		return t
	}
	if t.Kind == Union {
		return Type{Kind: Union, Alts: append(slices.Clone(t.Alts), Type{Kind: Null})}
	}
	return nullable(t)
}

// expr is the JSON type of Go type t; hint names an anonymous struct.
func (b *builder) expr(t reflect.Type, hint string) Type {
	if m, ok := marshalled[t]; ok {
		return m
	}
	if e := b.enums[t]; e != nil {
		return b.enumRef(e)
	}
	if customMarshal(t) {
		b.fail("%s has its own MarshalJSON or MarshalText: add what it writes to the marshalled table", t)
		return Type{Kind: Unknown}
	}
	switch t.Kind() {
	case reflect.String:
		if t.PkgPath() != "" {
			b.fail("%s is a named string type: add it to the contract's enums", t)
		}
		return Type{Kind: String}
	case reflect.Bool:
		return Type{Kind: Boolean}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return Type{Kind: Number}
	case reflect.Pointer:
		return orNull(b.expr(t.Elem(), hint))
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			// encoding/json writes []byte as base64.
			return orNull(Type{Kind: String})
		}
		el := b.expr(t.Elem(), hint)
		return nullable(Type{Kind: Array, Elem: &el})
	case reflect.Array:
		el := b.expr(t.Elem(), hint)
		return Type{Kind: Array, Elem: &el}
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String, reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		default:
			b.fail("%s: map keys must be strings or integers", t)
		}
		el := b.expr(t.Elem(), hint)
		return nullable(Type{Kind: Record, Elem: &el})
	case reflect.Interface:
		return Type{Kind: Unknown}
	case reflect.Struct:
		name := b.names[t]
		if t.Name() == "" {
			if hint == "" {
				b.fail("an anonymous struct %s has nothing to be named after", t)
			}
			name = hint
		}
		b.declare(t, name)
		return Type{Kind: Ref, Name: name}
	}
	b.fail("%s cannot cross the wire as JSON", t)
	return Type{Kind: Unknown}
}

// declare adds the interface of struct t.
func (b *builder) declare(t reflect.Type, name string) {
	d := &Decl{Name: name}
	if t.Name() != "" {
		d.From = goName(t)
	}
	if !b.add(d, t) {
		return
	}
	st := b.astOf[t]
	if t.Name() != "" {
		ts, doc, err := b.src.typeSpec(t)
		if err != nil {
			b.fail("%w", err)
		}
		if ts != nil {
			st, _ = ts.Type.(*ast.StructType)
		}
		d.Doc = retitle(doc, t.Name(), name)
		// The stand-ins declared here name their handler in their doc.
		if t.PkgPath() != thisPackage {
			d.Doc = strings.TrimSpace(d.Doc + "\n\nGo: " + goName(t) + ".")
		}
	}
	fs, err := jsonFields(t)
	if err != nil {
		b.fail("%w", err)
	}
	docs := map[reflect.Type]map[string]*ast.Field{t: fieldDocs(st)}
	for _, f := range fs {
		if _, ok := docs[f.owner]; !ok {
			var ost *ast.StructType
			if ts, _, _ := b.src.typeSpec(f.owner); ts != nil {
				ost, _ = ts.Type.(*ast.StructType)
			}
			docs[f.owner] = fieldDocs(ost)
		}
		af := docs[f.owner][f.sf.Name]
		if af != nil {
			if inner, ok := af.Type.(*ast.StructType); ok {
				b.astOf[f.sf.Type] = inner
			}
		}
		d.Fields = append(d.Fields, b.field(name, f, fieldDoc(af)))
	}
}

func (b *builder) field(parent string, f jsonField, doc string) Field {
	key := fieldKey{f.owner, f.sf.Name}
	ft := f.sf.Type
	var typ Type
	if e := b.fieldEnum[key]; e != nil {
		b.used[key] = true
		switch {
		case ft.Kind() == reflect.String:
			typ = b.enumRef(e)
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.String:
			typ = nullable(b.enumRef(e))
		default:
			b.fail("%s holds enum %s but is a %s, not a string", key, e.Name, ft)
		}
	} else {
		typ = b.expr(ft, parent+f.sf.Name)
	}
	if f.asString {
		switch ft.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			typ = Type{Kind: String}
		}
	}
	optional := f.omitzero || f.omitempty && emptyable(ft)
	if optional && nilable(ft) {
		// A nil value is left out, never written as null.
		typ = stripNull(typ)
	}
	if b.nonNull[key] {
		b.used[key] = true
		if !hasNull(typ) {
			b.fail("the contract says %s is never null, but it cannot be null anyway", key)
		}
		typ = stripNull(typ)
	}
	return Field{Name: f.name, Doc: doc, Optional: optional, Type: typ}
}
