package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestAPIDocListsEveryErrorCode keeps docs/API.md's error table whole: a
// client that gets a code finds it there, and no row names a code that
// nothing answers with. The codes are the Code constants of this package
// and of contract, which the page's module answers with too.
func TestAPIDocListsEveryErrorCode(t *testing.T) {
	codes := errorCodes(t)
	if len(codes) < 10 {
		t.Fatalf("found %d error code constants, want the whole set: %v", len(codes), codes)
	}
	rows := apiDocErrorRows(t)
	for code, constant := range codes {
		if _, ok := rows[code]; !ok {
			t.Errorf("docs/API.md's Errors table has no row for %q (%s)", code, constant)
		}
	}
	for code := range rows {
		if _, ok := codes[code]; !ok {
			t.Errorf("docs/API.md's Errors table lists %q, which no Code constant defines", code)
		}
	}
}

// errorCodes returns the string value of every constant named Code* in
// this package's and contract's source, with the constant's name.
func errorCodes(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("../../contract/*.go")
	if err != nil || len(more) == 0 {
		t.Fatalf("contract's source: %v", err)
	}
	codes := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range append(files, more...) {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Code") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue // an alias of contract's, read there
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					codes[s] = id.Name
				}
			}
		}
	}
	return codes
}

// apiDocErrorRows returns the codes of the table under docs/API.md's
// "## Errors", each with its row.
func apiDocErrorRows(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Errors\n")
	if !ok {
		t.Fatal(`docs/API.md has no "## Errors" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| ([^|]+) \\| `([a-z_]+)` \\|.*$")
	rows := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		if m[1] == "Status" {
			continue // the header
		}
		if _, dup := rows[m[2]]; dup {
			t.Errorf("docs/API.md's Errors table lists %q twice", m[2])
		}
		rows[m[2]] = m[0]
	}
	if len(rows) == 0 {
		t.Fatal("docs/API.md's Errors section has no table rows")
	}
	return rows
}
