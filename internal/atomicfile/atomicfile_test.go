package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: a new file, then one replaced, hold what was written last,
// and no temporary file is left beside them; a directory that does not
// exist is an error that leaves nothing.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, want := range []string{`{"v":1}`, `{"v":2}`} {
		if err := Write(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want the file alone", len(entries))
	}
	if err := Write(filepath.Join(dir, "missing", "state.json"), []byte("x")); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after a failed write the directory holds %d entries", len(entries))
	}
}
