package clicks

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsListEveryReason keeps the tables of reasons a click is not
// billed, in the README and in docs/API.md, whole: each reason the click
// log and the reports' unbilled_<reason> columns can show is a row of
// both, and each row a reason.
func TestDocsListEveryReason(t *testing.T) {
	for _, doc := range []struct{ file, section string }{
		{"README.md", "\n## Clicks\n"},
		{filepath.Join("docs", "API.md"), "\n## Clicks\n"},
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", doc.file))
		if err != nil {
			t.Fatal(err)
		}
		_, section, ok := strings.Cut(string(b), doc.section)
		if !ok {
			t.Fatalf("%s has no %q section", doc.file, strings.TrimSpace(doc.section))
		}
		section, _, _ = strings.Cut(section, "\n## ")
		rows := map[string]bool{}
		for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(section, -1) {
			rows[m[1]] = true
		}
		for _, r := range Reasons {
			if !rows[r] {
				t.Errorf("%s: the Clicks table has no row for the reason %q", doc.file, r)
			}
			delete(rows, r)
		}
		for r := range rows {
			t.Errorf("%s: the Clicks table lists %q, which is no reason of clicks.Reasons", doc.file, r)
		}
	}
}

// TestAPIDocGivesTheReportColumnsOrder keeps docs/API.md's list of the
// reports' unbilled_<reason> columns in the order the reports give them,
// Reasons', which is not the order of the Clicks table.
func TestAPIDocGivesTheReportColumnsOrder(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	const lead = "Reports give one `unbilled_<reason>` column per reason, in the order"
	_, list, ok := strings.Cut(string(b), lead)
	if !ok {
		t.Fatalf("docs/API.md says nowhere %q", lead)
	}
	list, _, _ = strings.Cut(list, ".\n")
	var got []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(list, -1) {
		got = append(got, m[1])
	}
	if strings.Join(got, ",") != strings.Join(Reasons, ",") {
		t.Errorf("docs/API.md lists the reports' reasons as\n%v\nthe reports give them as\n%v", got, Reasons)
	}
}
