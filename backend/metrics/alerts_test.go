package metrics

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// alertRules is the alerting rules file the README offers operators.
var alertRules = filepath.Join("..", "..", "docs", "alerts.yml")

// TestAlertRules runs docs/alerts.yml through Prometheus's own checker and
// the unit tests of testdata/alerts_test.yml (each alert fires on the
// series it is for, and not on healthy ones), with promtool from Debian's
// prometheus package.
func TestAlertRules(t *testing.T) {
	promtool := tool(t, "prometheus", "promtool")
	for _, args := range [][]string{{"check", "rules", alertRules}, {"test", "rules", filepath.Join("testdata", "alerts_test.yml")}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestAlertRulesNameWhatExists: every metric an alert reads is one the
// server registers (a renamed metric would silence its alert for good),
// and every runbook is a section of the README.
func TestAlertRulesNameWhatExists(t *testing.T) {
	b, err := os.ReadFile(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	rules := string(b)
	metrics := registered(t)
	used := regexp.MustCompile(`\badlink_[a-z0-9_]+`).FindAllString(rules, -1)
	if len(used) < 10 {
		t.Fatalf("found %d metrics in the rules: %v", len(used), used)
	}
	for _, m := range used {
		if base := strings.TrimSuffix(m, "_bucket"); !metrics[base] {
			t.Errorf("an alert reads %s, which is not registered", m)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, h := range regexp.MustCompile(`(?m)^#{2,4} (.+)$`).FindAllStringSubmatch(string(readme), -1) {
		anchors[slug(h[1])] = true
	}
	for _, m := range regexp.MustCompile(`runbook: "([^"#]+)(?:#([^"]+))?"`).FindAllStringSubmatch(rules, -1) {
		if _, err := os.Stat(filepath.Join("..", "..", m[1])); err != nil {
			t.Errorf("runbook %s: %v", m[1], err)
		}
		if m[2] != "" && (m[1] != "README.md" || !anchors[m[2]]) {
			t.Errorf("runbook %s#%s: no such section", m[1], m[2])
		}
	}
}

// slug is a heading's anchor as GitHub makes it.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// tool is the path of the first of names installed, from Debian's package
// pkg. Without it the test skips, and fails when CI is set (.ci/run
// installs pkg).
func tool(t *testing.T, pkg string, names ...string) string {
	t.Helper()
	for _, name := range names {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed (apt-get install %s); CI is set, so this test may not skip", strings.Join(names, " or "), pkg)
	}
	t.Skipf("skipping: %s is not installed (install Debian's %s package; .ci/run does)", strings.Join(names, " or "), pkg)
	return ""
}
