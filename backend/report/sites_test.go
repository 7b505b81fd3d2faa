package report

import (
	"bytes"
	"github.com/adlink/adlink/backend/clicks"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// FuzzParseSites: whatever the parameters, ParseSites either names each
// problem's parameter or gives a range of whole UTC hours, from before
// to, of at most MaxReviewDays days, a limit from 1 to MaxReviewLimit, a
// rank of ctr (the default) or refused, a min_impressions and a
// min_clicks of 0 or more, and only the rank's bound given.
func FuzzParseSites(f *testing.F) {
	f.Add("", "", "", "", "", "")
	f.Add("2026-11-20", "2026-11-27", "1000", "50", "", "")
	f.Add("2026-11-20T09:00:00Z", "2026-11-20T13:00:00+01:00", "0", "1000", "ctr", "")
	f.Add("2026-11-20T09:30:00Z", "2026-11-20", "-1", "0", "", "")
	f.Add("2026-08-21", "2026-11-20", "x", "1001", "", "")
	f.Add("2026-11-21", "", "", "", "refused", "")
	f.Add("", "1900-01-01", "", "", "refused", "100")
	f.Add("2200-12-31", "", "", "", "refused", "0")
	f.Add("2026-11-20T09:00:00.5Z", "2026-02-30", "99999999999999999999", "+5", "Refused", "-1")
	f.Add("", "", "1000", "", "refused", "x")
	f.Add("", "", "", "", "", "100")
	f.Add("", "", "", "", "refused\x00", "99999999999999999999")
	now := time.Date(2026, 11, 29, 12, 34, 56, 0, time.UTC)
	f.Fuzz(func(t *testing.T, from, to, minImps, limit, rank, minClicks string) {
		v := map[string]string{"from": from, "to": to, "min_impressions": minImps, "limit": limit, "rank": rank, "min_clicks": minClicks}
		req, problems := ParseSites(func(k string) string { return v[k] }, now)
		for _, p := range problems {
			if !slices.Contains([]string{"from", "to", "min_impressions", "limit", "rank", "min_clicks"}, p.Param) || p.Message == "" {
				t.Fatalf("problem %+v", p)
			}
		}
		if rank != "" && rank != RankCTR && rank != RankRefused && !slices.ContainsFunc(problems, func(p Problem) bool { return p.Param == "rank" }) {
			t.Fatalf("rank %q taken", rank)
		}
		if len(problems) > 0 {
			return
		}
		switch {
		case req.Rank != RankCTR && req.Rank != RankRefused, rank == "" && req.Rank != RankCTR, rank != "" && req.Rank != rank:
			t.Fatalf("rank %q read as %q", rank, req.Rank)
		case req.MinClicks < 0 || minClicks == "" && req.MinClicks != ReviewMinClicks:
			t.Fatalf("min_clicks %q read as %d", minClicks, req.MinClicks)
		case minClicks != "" && req.Rank != RankRefused, minImps != "" && req.Rank != RankCTR:
			t.Fatalf("rank %s with min_clicks %q and min_impressions %q", req.Rank, minClicks, minImps)
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
// UTC days, today included, of sites of 1,000 impressions ranked by CTR,
// 50 listed; a day given alone is the first or last of 7.
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
		if len(problems) > 0 || !req.From.Equal(c.start) || !req.To.Equal(c.end) || req.Limit != ReviewLimit || req.MinImpressions != ReviewMinImpressions ||
			req.Rank != RankCTR || req.MinClicks != ReviewMinClicks {
			t.Errorf("from %q to %q: %+v %v, want %v..%v", c.from, c.to, req, problems, c.start, c.end)
		}
	}
}

// TestSiteReviewTableOddIDs: a site id with control characters, a tab, a
// line break, a quote or a right-to-left mark is one row of the table,
// none of its characters reaching the terminal as they are, and the
// flags of adlink invalidate the row ends with give a shell (bash) the
// id exactly.
func TestSiteReviewTableOddIDs(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"tech-blog", "title\x1b]0;pwned\x07blog", "red\x1b[31mtext", "tab\there", "line\nbreak", "it's",
		"\u202egnp.exe", "two words", "ünïcode", "back\\slash\x7f", "bad\xffutf8", "$(touch x)`y`"}
	from, to := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	review := SiteReview{From: from, To: to, MinImpressions: 1000, Reviewed: len(ids) + 1}
	for _, id := range append(ids, "nul\x00id") {
		review.Sites = append(review.Sites, SiteRow{APIKey: "k-" + id, SiteID: id, Spend: map[string]int64{}})
	}
	var out bytes.Buffer
	if err := review.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if bad := strings.IndexFunc(text, func(r rune) bool { return r != '\n' && !unicode.IsPrint(r) }); bad >= 0 || !utf8.ValidString(text) {
		t.Errorf("the table holds a character that does not print at %d:\n%q", bad, text)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 2+len(review.Sites) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), 2+len(review.Sites), text)
	}
	for i, id := range ids {
		line := lines[2+i]
		if want := cell(id); !strings.Contains(line, want+" ") {
			t.Errorf("row %d: %q does not show %q", i, line, want)
		}
		// The flags the row ends with, given to a shell as they are.
		flags := line[strings.Index(line, "-api-key "):]
		cmd := exec.Command(bash, "-c", `printf '%s\0' `+strings.TrimSpace(flags))
		cmd.Dir = t.TempDir()
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("row %d: bash: %v", i, err)
		}
		want := strings.Join([]string{"-api-key", "k-" + id, "-site-id", id, "-from", "2026-11-20T00:00:00Z", "-to", "2026-11-27T00:00:00Z"}, "\x00") + "\x00"
		if string(got) != want {
			t.Errorf("row %d: bash reads %q as %q, want %q", i, flags, got, want)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, `"nul\x00id"`) || !strings.HasSuffix(strings.TrimSpace(last), "POST /admin/invalidate takes it") {
		t.Errorf("the site id with a NUL byte: %q", last)
	}
}

// Over a median of 0 (most sites with no click refused) a site has no
// ratio: the JSON gives none and the table a dash, not a 0 that would
// rank it with the sites like the rest.
func TestSiteReviewNoRatioOverZeroMedian(t *testing.T) {
	from, to := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	review := SiteReview{From: from, To: to, Rank: RankRefused, MinClicks: 100, Reviewed: 3, Median: 0,
		Sites: []SiteRow{{APIKey: "k", SiteID: "scripted", Measures: clicks.Measures{Clicks: 200}, Refused: 150, RefusedShare: 0.75, Spend: map[string]int64{}}}}
	if js := string(review.JSON()); strings.Contains(js, "over_median") {
		t.Errorf("a ratio over a median of 0: %s", js)
	}
	var out bytes.Buffer
	if err := review.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if row := strings.Split(out.String(), "\n")[2]; !strings.Contains(row, " -  ") {
		t.Errorf("the row gives a ratio over a median of 0: %q", row)
	}
	review.Median, review.Sites[0].OverMedian = 0.25, 3
	if js := string(review.JSON()); !strings.Contains(js, `"refused_over_median":3`) {
		t.Errorf("no ratio over a median of 0.25: %s", js)
	}
}
