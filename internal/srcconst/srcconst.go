// Package srcconst reads the constants a Go package's source declares
// with a literal value, for tests that check them against each other or
// against documents.
package srcconst

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
)

// Const is one constant declared with a literal value.
type Const struct {
	Name string
	// Lit is the literal, as written (a quoted string, 0x61646c70).
	Lit *ast.BasicLit
	// Pos is where the constant is declared, file:line:column.
	Pos string
}

// Read returns the constants whose name keep accepts, declared with a
// literal value in the .go files (tests left out) matching each of the
// patterns (filepath.Glob's), in the order of the files and their
// declarations. A constant so named whose value is not a literal (an
// alias, an expression) is left out.
func Read(keep func(name string) bool, patterns ...string) ([]Const, error) {
	var out []Const
	fset := token.NewFileSet()
	for _, pattern := range patterns {
		files, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		for _, name := range files {
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				return nil, err
			}
			for _, decl := range f.Decls {
				gen, ok := decl.(*ast.GenDecl)
				if !ok || gen.Tok != token.CONST {
					continue
				}
				for _, spec := range gen.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, id := range vs.Names {
						if !keep(id.Name) || i >= len(vs.Values) {
							continue
						}
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
							out = append(out, Const{Name: id.Name, Lit: lit, Pos: fset.Position(id.Pos()).String()})
						}
					}
				}
			}
		}
	}
	return out, nil
}
