package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// usageFlag is one flag as adlink -h prints it.
type usageFlag struct {
	variable string // ADLINK_* named in its usage, "" for none
	def      string // its default as printed, unquoted; "" for none
}

// TestReadmeFlagTable keeps the README's Configure table true to the
// binary: every flag of adlink -h is a row and every row a flag, with the
// variable the usage names, which Load reads, and the default the flag
// has.
func TestReadmeFlagTable(t *testing.T) {
	flags := usageFlags(t)
	rows := readmeFlagRows(t)
	src, err := os.ReadFile("config.go")
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range flags {
		row, ok := rows[name]
		if !ok {
			t.Errorf("README's Configure table has no row for -%s", name)
			continue
		}
		if row.variable != f.variable {
			t.Errorf("-%s: README names the variable %q, -h %q", name, row.variable, f.variable)
		}
		if f.variable != "" && !bytes.Contains(src, []byte(strconv.Quote(f.variable))) {
			t.Errorf("-%s: Load reads no variable %s, which -h names", name, f.variable)
		}
		if !sameDefault(f.def, row.def) {
			t.Errorf("-%s: README's default is %q, -h says %q", name, row.def, f.def)
		}
	}
	for name := range rows {
		if _, ok := flags[name]; !ok {
			t.Errorf("README's Configure table lists -%s, which adlink -h does not know", name)
		}
	}
}

// usageFlags returns the flags of adlink -h by name.
func usageFlags(t *testing.T) map[string]usageFlag {
	t.Helper()
	var out bytes.Buffer
	if _, err := Load([]string{"-h"}, func(string) string { return "" }, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Load(-h): %v, want flag.ErrHelp", err)
	}
	head := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	variable := regexp.MustCompile(`\((ADLINK_[A-Z0-9_]+)`)
	def := regexp.MustCompile(`\(default (.*)\)$`)
	flags := map[string]usageFlag{}
	var name string
	for line := range strings.Lines(out.String()) {
		line = strings.TrimRight(line, "\n")
		if m := head.FindStringSubmatch(line); m != nil {
			name = m[1]
			flags[name] = usageFlag{}
			continue
		}
		if name == "" || !strings.HasPrefix(line, "    \t") {
			continue
		}
		f := flags[name]
		if m := variable.FindStringSubmatch(line); m != nil && f.variable == "" {
			f.variable = m[1]
		}
		if m := def.FindStringSubmatch(line); m != nil {
			f.def = m[1]
			if s, err := strconv.Unquote(f.def); err == nil {
				f.def = s
			}
		}
		flags[name] = f
	}
	if len(flags) < 20 {
		t.Fatalf("read %d flags from -h, want them all:\n%s", len(flags), out.String())
	}
	return flags
}

// readmeFlagRows returns the rows of the README's flag table by flag
// name: the variable, and the default as the first code span of its cell
// ("" for a cell without one, such as "none").
func readmeFlagRows(t *testing.T) map[string]usageFlag {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Configure\n")
	if !ok {
		t.Fatal(`README.md has no "## Configure" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `-([a-z0-9-]+)` \\|([^|]*)\\|([^|]*)\\|")
	code := regexp.MustCompile("`([^`]*)`")
	rows := map[string]usageFlag{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		if _, dup := rows[m[1]]; dup {
			t.Errorf("README's Configure table lists -%s twice", m[1])
		}
		var r usageFlag
		if c := code.FindStringSubmatch(m[2]); c != nil {
			r.variable = c[1]
		}
		if c := code.FindStringSubmatch(m[3]); c != nil {
			r.def = c[1]
		}
		rows[m[1]] = r
	}
	if len(rows) < 20 {
		t.Fatalf("read %d rows of README's flag table, want them all", len(rows))
	}
	return rows
}

// sameDefault reports whether the README's default says what -h does. A
// flag whose default is its zero value, or is worked out at start-up
// (http://<addr>), prints none.
func sameDefault(usage, readme string) bool {
	if usage == "" {
		return readme == "" || readme == "false" || readme == "0" || strings.Contains(readme, "<")
	}
	if u, err := time.ParseDuration(usage); err == nil {
		r, err := time.ParseDuration(readme)
		return err == nil && r == u
	}
	if u, err := strconv.ParseFloat(usage, 64); err == nil {
		r, err := strconv.ParseFloat(readme, 64)
		return err == nil && r == u
	}
	return strings.EqualFold(usage, readme)
}
