package report

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSpend(t *testing.T) {
	for micros, want := range map[int64]string{0: "0.00", 10_000: "0.01", 450_000: "0.45", 1_500_000: "1.50",
		123: "0.000123", 1_234_567: "1.234567", 25_000_000: "25.00", 1_000_001_000: "1000.001"} {
		if got := Spend(micros); got != want {
			t.Errorf("Spend(%d) = %q, want %q", micros, got, want)
		}
	}
}

func TestInert(t *testing.T) {
	for in, want := range map[string]string{"=1+1": "'=1+1", "+49": "'+49", "-3": "'-3", "@x": "'@x", "\tx": "'\tx",
		"handy": "handy", "": "", "a=b": "a=b"} {
		if got := inert(in); got != want {
			t.Errorf("inert(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParse: whatever the parameters, Parse either names a problem's
// parameter or gives a range of 1 to MaxDays days and known groups, each
// once.
func FuzzParse(f *testing.F) {
	f.Add("2026-11-01", "2026-11-24", "day,site_id", "csv")
	f.Add("", "", "", "")
	f.Add("2026-02-30", "x", "day,day", "xml")
	f.Add("2025-01-01", "2026-11-24", " ad , hour", "json")
	now := time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, from, to, groups, format string) {
		v := map[string]string{"from": from, "to": to, "group_by": groups, "format": format}
		req, problems := Parse(func(k string) string { return v[k] }, now)
		for _, p := range problems {
			if !slices.Contains([]string{"from", "to", "group_by", "format"}, p.Param) || p.Message == "" {
				t.Fatalf("problem %+v", p)
			}
		}
		if len(problems) > 0 {
			return
		}
		days := int(req.To.Sub(req.From).Hours()/24) + 1
		if days < 1 || days > MaxDays || req.From.Hour() != 0 || req.To.Hour() != 0 {
			t.Fatalf("range %v..%v", req.From, req.To)
		}
		seen := map[string]bool{}
		for _, g := range req.GroupBy {
			if !slices.Contains(Groups, g) || seen[g] {
				t.Fatalf("groups %q from %q", req.GroupBy, groups)
			}
			seen[g] = true
		}
		if req.Format != "json" && req.Format != "csv" {
			t.Fatalf("format %q", req.Format)
		}
		if cols := req.Columns(); !strings.Contains(strings.Join(cols, ","), "spend") {
			t.Fatalf("columns %q", cols)
		}
	})
}
