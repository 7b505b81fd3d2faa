package report

import (
	"slices"
	"testing"
	"time"
)

// FuzzParseSites: whatever the parameters, ParseSites either names each
// problem's parameter or gives a range of whole UTC hours, from before
// to, of at most MaxReviewDays days, a limit from 1 to MaxReviewLimit and
// a min_impressions of 0 or more.
func FuzzParseSites(f *testing.F) {
	f.Add("", "", "", "")
	f.Add("2026-11-20", "2026-11-27", "1000", "50")
	f.Add("2026-11-20T09:00:00Z", "2026-11-20T13:00:00+01:00", "0", "1000")
	f.Add("2026-11-20T09:30:00Z", "2026-11-20", "-1", "0")
	f.Add("2026-08-21", "2026-11-20", "x", "1001")
	f.Add("2026-11-21", "", "", "")
	f.Add("", "1900-01-01", "", "")
	f.Add("2200-12-31", "", "", "")
	f.Add("2026-11-20T09:00:00.5Z", "2026-02-30", "99999999999999999999", "+5")
	now := time.Date(2026, 11, 29, 12, 34, 56, 0, time.UTC)
	f.Fuzz(func(t *testing.T, from, to, minImps, limit string) {
		v := map[string]string{"from": from, "to": to, "min_impressions": minImps, "limit": limit}
		req, problems := ParseSites(func(k string) string { return v[k] }, now)
		for _, p := range problems {
			if !slices.Contains([]string{"from", "to", "min_impressions", "limit"}, p.Param) || p.Message == "" {
				t.Fatalf("problem %+v", p)
			}
		}
		if len(problems) > 0 {
			return
		}
		if !req.From.Before(req.To) || req.To.Sub(req.From) > MaxReviewDays*24*time.Hour ||
			!req.From.Truncate(time.Hour).Equal(req.From) || !req.To.Truncate(time.Hour).Equal(req.To) ||
			req.From.Location() != time.UTC || req.To.Location() != time.UTC {
			t.Fatalf("range %v..%v", req.From, req.To)
		}
		if req.Limit < 1 || req.Limit > MaxReviewLimit || req.MinImpressions < 0 {
			t.Fatalf("limit %d, min_impressions %d", req.Limit, req.MinImpressions)
		}
		if from == "" && to == "" && (!req.To.Equal(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)) || req.To.Sub(req.From) != ReviewDays*24*time.Hour) {
			t.Fatalf("default range %v..%v", req.From, req.To)
		}
	})
}

// TestParseSitesDefaults: without parameters a review covers the last 7
// UTC days, today included, of sites of 1,000 impressions, 50 listed; a
// day given alone is the first or last of 7.
func TestParseSitesDefaults(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		from, to   string
		start, end time.Time
	}{
		{"", "", day(23), day(30)},
		{"2026-11-01", "", day(1), day(8)},
		{"", "2026-11-10", day(4), day(11)},
		{"2026-11-10T22:00:00+01:00", "2026-11-11", time.Date(2026, 11, 10, 21, 0, 0, 0, time.UTC), day(12)},
	} {
		v := map[string]string{"from": c.from, "to": c.to}
		req, problems := ParseSites(func(k string) string { return v[k] }, now)
		if len(problems) > 0 || !req.From.Equal(c.start) || !req.To.Equal(c.end) || req.Limit != ReviewLimit || req.MinImpressions != ReviewMinImpressions {
			t.Errorf("from %q to %q: %+v %v, want %v..%v", c.from, c.to, req, problems, c.start, c.end)
		}
	}
}
