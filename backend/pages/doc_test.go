package pages

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAPIDocNamesEveryFailureReason keeps docs/API.md's page context
// whole: each reason a failed analysis can answer with
// ({"status":"failed","reason":...}) is named there, so that a client
// that gets one can look it up. A reason built with a value ("HTTP status
// 404") is named by its start.
func TestAPIDocNamesEveryFailureReason(t *testing.T) {
	literal := regexp.MustCompile(`(?:Reason: |fail\(|reason = |reason := )"([^"]+)"`)
	reasons := map[string]bool{}
	for _, name := range []string{"fetch.go", "service.go"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllStringSubmatch(string(b), -1) {
			reasons[m[1]] = true
		}
	}
	if len(reasons) < 10 {
		t.Fatalf("found %d failure reasons in the source, want them all: %v", len(reasons), reasons)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Page context\n")
	if !ok {
		t.Fatal(`docs/API.md has no "## Page context" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	section = strings.Join(strings.Fields(section), " ")
	for r := range reasons {
		if !strings.Contains(section, "`\""+r) {
			t.Errorf("docs/API.md's page context does not name the failure reason %q", r)
		}
	}
}
