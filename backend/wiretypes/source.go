package wiretypes

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// modulePath is this module's path in go.mod; packages under it are read
// from the repository for their doc comments.
const modulePath = "freelane"

// sources reads the repository's Go files (tests left out), each package
// once.
type sources struct {
	root string
	fset *token.FileSet
	pkgs map[string][]*ast.File // by directory relative to root
}

func newSources(root string) *sources {
	return &sources{root: root, fset: token.NewFileSet(), pkgs: map[string][]*ast.File{}}
}

// files parses the package in dir (such as "backend/gateway").
func (s *sources) files(dir string) ([]*ast.File, error) {
	if fs, ok := s.pkgs[dir]; ok {
		return fs, nil
	}
	names, err := filepath.Glob(filepath.Join(s.root, dir, "*.go"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var fs []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(s.fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("reading Go source: %w", err)
		}
		fs = append(fs, f)
	}
	if len(fs) == 0 {
		return nil, fmt.Errorf("no Go files in %s: %w", filepath.Join(s.root, dir), os.ErrNotExist)
	}
	s.pkgs[dir] = fs
	return fs, nil
}

// dirOf is the directory of a package of this module, "" for others.
func dirOf(pkgPath string) string {
	if rest, ok := strings.CutPrefix(pkgPath, modulePath+"/"); ok {
		return rest
	}
	return ""
}

// typeSpec finds the declaration of a named type of this module and its
// doc comment; nil for types declared elsewhere or in tests.
func (s *sources) typeSpec(t reflect.Type) (*ast.TypeSpec, string, error) {
	dir := dirOf(t.PkgPath())
	if dir == "" {
		return nil, "", nil
	}
	return s.namedType(dir, t.Name())
}

// namedType finds the declaration of the type called name in dir.
func (s *sources) namedType(dir, name string) (*ast.TypeSpec, string, error) {
	fs, err := s.files(dir)
	if err != nil {
		return nil, "", err
	}
	for _, f := range fs {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, sp := range g.Specs {
				ts := sp.(*ast.TypeSpec)
				if ts.Name.Name != name {
					continue
				}
				doc := ts.Doc
				if doc == nil && len(g.Specs) == 1 {
					doc = g.Doc
				}
				return ts, doc.Text(), nil
			}
		}
	}
	return nil, "", nil
}

// fieldDocs maps the fields of a struct's source to their comments: the
// doc comment above, else the comment at the end of the line.
func fieldDocs(st *ast.StructType) map[string]*ast.Field {
	out := map[string]*ast.Field{}
	if st == nil {
		return out
	}
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			out[n.Name] = f
		}
	}
	return out
}

func fieldDoc(f *ast.Field) string {
	if f == nil {
		return ""
	}
	if f.Doc != nil {
		return f.Doc.Text()
	}
	return f.Comment.Text()
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}

// constants lists the string constants declared in dir, by name, whose
// declared type is typeName or, for typeName "", which are untyped and
// whose names start with prefix. A value is a string literal, or the
// conversion T(C) of another constant C of dir written as one.
func (s *sources) constants(dir, typeName, prefix string) (map[string]string, error) {
	fs, err := s.files(dir)
	if err != nil {
		return nil, err
	}
	literal := map[string]string{}
	for _, f := range fs {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, sp := range g.Specs {
					vs := sp.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if v, ok := stringLit(vs.Values[i]); ok {
								literal[n.Name] = v
							}
						}
					}
				}
			}
		}
	}
	value := func(e ast.Expr) (string, bool) {
		if c, ok := e.(*ast.CallExpr); ok && len(c.Args) == 1 {
			if id, ok := c.Args[0].(*ast.Ident); ok {
				v, ok := literal[id.Name]
				return v, ok
			}
		}
		return stringLit(e)
	}
	out := map[string]string{}
	for _, f := range fs {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				typ := ""
				if id, ok := vs.Type.(*ast.Ident); ok {
					typ = id.Name
				}
				if typ != typeName {
					continue
				}
				for i, n := range vs.Names {
					if !n.IsExported() || typeName == "" && !strings.HasPrefix(n.Name, prefix) || i >= len(vs.Values) {
						continue
					}
					if v, ok := value(vs.Values[i]); ok {
						out[n.Name] = v
					}
				}
			}
		}
	}
	return out, nil
}

// isType reports whether e names the type typeName: T or pkg.T.
func isType(e ast.Expr, typeName string) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == typeName
	case *ast.SelectorExpr:
		return e.Sel.Name == typeName
	}
	return false
}

// assigned lists the string literals that the code in dir stores in field
// of the struct type typeName: in keyed composite literals of the type,
// and in assignments to v.field where v was declared in the same function
// as a value of the type (v := T{...} or var v T).
func (s *sources) assigned(dir, typeName, field string) ([]string, error) {
	fs, err := s.files(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, f := range fs {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			vars := map[string]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					if !isType(n.Type, typeName) {
						return true
					}
					for _, el := range n.Elts {
						kv, ok := el.(*ast.KeyValueExpr)
						if k, isID := kv.Key.(*ast.Ident); ok && isID && k.Name == field {
							if v, ok := stringLit(kv.Value); ok {
								seen[v] = true
							}
						}
					}
				case *ast.ValueSpec:
					if n.Type != nil && isType(n.Type, typeName) {
						for _, id := range n.Names {
							vars[id.Name] = true
						}
					}
				case *ast.AssignStmt:
					if n.Tok == token.DEFINE && len(n.Lhs) == len(n.Rhs) {
						for i, r := range n.Rhs {
							if cl, ok := r.(*ast.CompositeLit); ok && isType(cl.Type, typeName) {
								if id, ok := n.Lhs[i].(*ast.Ident); ok {
									vars[id.Name] = true
								}
							}
						}
					}
					if len(n.Lhs) != len(n.Rhs) {
						return true
					}
					for i, l := range n.Lhs {
						sel, ok := l.(*ast.SelectorExpr)
						if !ok || sel.Sel.Name != field {
							continue
						}
						if id, ok := sel.X.(*ast.Ident); ok && vars[id.Name] {
							if v, ok := stringLit(n.Rhs[i]); ok {
								seen[v] = true
							}
						}
					}
				}
				return true
			})
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("no string literal is stored in %s.%s in %s", typeName, field, dir)
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil
}

var routePattern = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE) /api/`)

// routes lists the admin routes registered in dir: every call whose first
// argument is a string such as "GET /api/state".
func (s *sources) routes(dir string) ([]string, error) {
	fs, err := s.files(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range fs {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && len(call.Args) > 0 {
				if v, ok := stringLit(call.Args[0]); ok && routePattern.MatchString(v) {
					out = append(out, v)
				}
			}
			return true
		})
	}
	slices.Sort(out)
	return out, nil
}

// handlerStruct finds the struct a handler decodes its body into: the
// struct type of `var in struct{...}` inside the method or function called
// fn, or inside the function literal registered for route.
func (s *sources) handlerStruct(dir, fn, route string) (*ast.StructType, error) {
	fs, err := s.files(dir)
	if err != nil {
		return nil, err
	}
	var found *ast.StructType
	inVar := func(body ast.Node) {
		ast.Inspect(body, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && vs.Names[0].Name == "in" {
				if st, ok := vs.Type.(*ast.StructType); ok && found == nil {
					found = st
				}
			}
			return true
		})
	}
	for _, f := range fs {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if fn != "" && fd.Name.Name == fn {
				inVar(fd.Body)
				continue
			}
			if route == "" {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) < 2 {
					return true
				}
				if v, ok := stringLit(call.Args[0]); ok && v == route {
					if lit, ok := call.Args[1].(*ast.FuncLit); ok {
						inVar(lit.Body)
					}
				}
				return true
			})
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no `var in struct{...}` in %s %s%s", dir, fn, route)
	}
	return found, nil
}

// sameStruct compares a struct's source with a Go type field by field:
// names, tags and types. local maps type names declared next to the
// source to the Go types that stand in for them.
func sameStruct(st *ast.StructType, t reflect.Type, local map[string]reflect.Type) error {
	var src []string
	for _, f := range st.Fields.List {
		typ := typeString(f.Type, local)
		tag := ""
		if f.Tag != nil {
			tag, _ = strconv.Unquote(f.Tag.Value)
		}
		for _, n := range f.Names {
			src = append(src, fmt.Sprintf("%s %s %q", n.Name, typ, tag))
		}
	}
	var got []string
	for i := range t.NumField() {
		f := t.Field(i)
		got = append(got, fmt.Sprintf("%s %s %q", f.Name, f.Type, f.Tag))
	}
	if !slices.Equal(src, got) {
		return fmt.Errorf("the source declares\n\t%s\nbut %s has\n\t%s", strings.Join(src, "\n\t"), t, strings.Join(got, "\n\t"))
	}
	return nil
}

// typeString writes a type expression of the source the way reflect
// writes the type.
func typeString(e ast.Expr, local map[string]reflect.Type) string {
	switch e := e.(type) {
	case *ast.Ident:
		if t, ok := local[e.Name]; ok {
			return t.String()
		}
		if e.Name == "any" {
			return "interface {}"
		}
		return e.Name
	case *ast.SelectorExpr:
		return typeString(e.X, nil) + "." + e.Sel.Name
	case *ast.StarExpr:
		return "*" + typeString(e.X, local)
	case *ast.ArrayType:
		if e.Len == nil {
			return "[]" + typeString(e.Elt, local)
		}
	case *ast.MapType:
		return "map[" + typeString(e.Key, local) + "]" + typeString(e.Value, local)
	case *ast.InterfaceType:
		if e.Methods == nil || len(e.Methods.List) == 0 {
			return "interface {}"
		}
	}
	return fmt.Sprintf("%T", e)
}
