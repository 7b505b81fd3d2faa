package srcconst

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRead reads a package's literal constants by name, leaving out
// tests, aliases and other names.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "package p\n\nconst (\n\tCodeA = \"a\"\n\tCodeB = CodeA\n\tother = 1\n)\n\nconst CodeC, CodeD = 0x10, \"d\"\n")
	write("a_test.go", "package p\n\nconst CodeT = \"t\"\n")
	got, err := Read(func(n string) bool { return strings.HasPrefix(n, "Code") }, filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got {
		names = append(names, c.Name+"="+c.Lit.Value)
	}
	if s := strings.Join(names, " "); s != `CodeA="a" CodeC=0x10 CodeD="d"` {
		t.Errorf("read %s", s)
	}
	if len(got) > 0 && !strings.HasSuffix(got[0].Pos, "a.go:4:2") {
		t.Errorf("CodeA at %s", got[0].Pos)
	}
	if _, err := Read(func(string) bool { return true }, "["); err == nil {
		t.Error("a bad pattern read")
	}
}
