package metrics

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAPIDocListsEveryMetric keeps docs/API.md's table of metrics whole:
// every metric this package registers is a row, and every row one of
// them.
func TestAPIDocListsEveryMetric(t *testing.T) {
	metrics := registered(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(adlink_[a-z0-9_]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		rows[m[1]] = true
	}
	for m := range metrics {
		if !rows[m] {
			t.Errorf("docs/API.md's table of metrics has no row for %s", m)
		}
	}
	for m := range rows {
		if !metrics[m] {
			t.Errorf("docs/API.md's table of metrics lists %s, which is not registered", m)
		}
	}
}

// registered returns the names of the metrics this package registers, as
// its source spells them.
func registered(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`(?:Name:\s*|NewDesc\()"(adlink_[a-z0-9_]+)"`)
	metrics := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllStringSubmatch(string(b), -1) {
			metrics[m[1]] = true
		}
	}
	if len(metrics) < 20 {
		t.Fatalf("found %d metrics in the source, want them all: %v", len(metrics), metrics)
	}
	return metrics
}
