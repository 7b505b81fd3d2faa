package catalog

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeExamples loads the feed examples of testdata/catalog/README.md,
// so the documentation cannot drift from the reader.
func TestReadmeExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "catalog", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```(json|csv|xml|tsv)\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	if len(blocks) != 4 {
		t.Fatalf("found %d example blocks, want 4", len(blocks))
	}
	for _, m := range blocks {
		ext := map[string]string{"json": ".jsonl", "csv": ".csv", "xml": ".xml", "tsv": ".tsv"}[m[1]]
		ads, err := Load(strings.NewReader(m[2]), "README"+ext, Options{Markets: []string{"de-DE"}})
		if err != nil || len(ads) == 0 {
			t.Errorf("%s example: %d ads, %v", m[1], len(ads), err)
		}
	}
}
