package web

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/clicks"
)

// TestDashboardExplainsEveryReason: the clicks' table names why a click
// did not bill by its reason's code; the page says what each code means,
// every one a click can have and no other.
func TestDashboardExplainsEveryReason(t *testing.T) {
	page, err := os.ReadFile("dashboard.html")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(page), `<details class="reasons" id="reasons">`)
	block, _, closed := strings.Cut(block, "</details>")
	if !ok || !closed {
		t.Fatal("dashboard.html has no list of the reasons a click is not billed")
	}
	var explained []string
	for _, m := range regexp.MustCompile(`<dt>([a-z_]+)</dt><dd>[^<]+</dd>`).FindAllStringSubmatch(block, -1) {
		explained = append(explained, m[1])
	}
	want := slices.Sorted(slices.Values(clicks.Reasons))
	if slices.Sort(explained); !slices.Equal(explained, want) {
		t.Errorf("the page explains %q, want every reason %q", explained, want)
	}
}
