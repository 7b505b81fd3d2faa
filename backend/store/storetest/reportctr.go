package storetest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/report"
)

// reportCTR: a report's ctr is the clicks on ads in pages per impression
// of ads in pages, in every row, whatever its groups: a search answer's
// clicks, which have no impressions but those a partner's page may
// beacon, are counted as clicks and left out of the rate. The report
// reads the rollups as they are (by UTC day) and as the store sums them
// (by the day of another zone).
func reportCTR(t *testing.T, fresh func(t *testing.T) Opener[LedgerParts]) {
	p, _ := open(t, fresh(t))
	if p.Rollups == nil {
		t.Skip("the ledger keeps no rollups")
	}
	day1 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	day2 := day1.Add(24 * time.Hour)
	const adv = "shop.example"
	n := 0
	traffic := func(at time.Time, ad, context string, clickCount, impressions int) {
		t.Helper()
		for range clickCount {
			n++
			c := clicks.Click{Time: at.Add(time.Duration(n) * time.Minute), AdID: ad, AdType: "advertiser", Type: context,
				APIKey: "k", SiteID: "s", Criterion: "handy", Advertiser: adv, Currency: "EUR", BidMicros: 10_000,
				IP: "198.51.100." + strconv.Itoa(n), UserAgent: "Mozilla/5.0 (X11) Firefox/133.0"}
			if err := p.Ledger.Record(within(t, 10*time.Second), &c, clicks.Use{D: "ctr" + strconv.Itoa(n), Expires: day2.Add(48 * time.Hour)}); err != nil {
				t.Fatalf("Record: %v", err)
			}
		}
		var imps []clicks.Impression
		for i := range impressions {
			imps = append(imps, clicks.Impression{Time: at.Add(time.Duration(i) * time.Minute), AdID: ad, AdType: "advertiser",
				Type: context, APIKey: "k", SiteID: "s", Criterion: "handy", Advertiser: adv, Currency: "EUR"})
		}
		if len(imps) > 0 {
			if _, err := p.Impressions.Append(within(t, 10*time.Second), imps); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Day 1: a1 shown 4 times in pages, clicked there once; shown twice
	// in search answers (a page beaconed them), clicked there 3 times. a2
	// shown 5 times, clicked twice. Day 2: a1 shown once in a search
	// answer, clicked twice there; a2 shown twice, clicked once.
	traffic(day1, "a1", "intext", 1, 4)
	traffic(day1, "a1", "search", 3, 2)
	traffic(day1, "a2", "intext", 2, 5)
	traffic(day2, "a1", "search", 2, 1)
	traffic(day2, "a2", "intext", 1, 2)

	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// Each row: its groups, joined by "|", then impressions, clicks and
	// ctr ("null" for none).
	for _, c := range []struct {
		groups string
		want   []string
	}{
		{"", []string{"14 9 0.3636"}},
		{"day", []string{"2026-11-22 11 6 0.3333", "2026-11-23 3 3 0.5"}},
		{"ad", []string{"a1 7 6 0.25", "a2 7 3 0.4286"}},
		{"context", []string{"intext 11 4 0.3636", "search 3 5 null"}},
		{"day,ad", []string{"2026-11-22|a1 6 4 0.25", "2026-11-22|a2 5 2 0.4", "2026-11-23|a1 1 2 null", "2026-11-23|a2 2 1 0.5"}},
		{"day,context", []string{"2026-11-22|intext 9 3 0.3333", "2026-11-22|search 2 3 null", "2026-11-23|intext 2 1 0.5",
			"2026-11-23|search 1 2 null"}},
		{"ad,context", []string{"a1|intext 4 1 0.25", "a1|search 3 5 null", "a2|intext 7 3 0.4286"}},
	} {
		for _, zone := range []*time.Location{nil, berlin} {
			for _, acc := range []accounts.Account{{Kind: accounts.Advertiser, ID: adv}, {Kind: accounts.Partner, ID: "k"}, {Kind: accounts.Operator}} {
				req := report.Request{From: day1.Truncate(24 * time.Hour), To: day2.Truncate(24 * time.Hour), Zone: zone, Format: "json"}
				if c.groups != "" {
					req.GroupBy = strings.Split(c.groups, ",")
				}
				rows, err := report.Run(t.Context(), p.Rollups, acc, req)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range rows {
					ctr := "null"
					if v, ok := report.CTR(&r.Measures); ok {
						ctr = strconv.FormatFloat(v, 'f', -1, 64)
					}
					got = append(got, strings.TrimPrefix(strings.Join(r.Groups, "|")+" ", " ")+
						strconv.FormatInt(r.Impressions, 10)+" "+strconv.FormatInt(r.Clicks, 10)+" "+ctr)
				}
				if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
					t.Errorf("%s report by %q in %v: rows %q, want %q", acc.Kind, c.groups, zone, got, c.want)
				}
			}
		}
	}
}
