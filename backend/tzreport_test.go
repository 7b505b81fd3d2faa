package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/store"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// zoneClicks are the clicks the time zone tests record on the demo
// partner's site, billed at bid micros each, at these UTC times: two
// late on Nov 28 (Nov 28 and Nov 29 in Berlin), November's edges in
// Berlin, and the day Berlin's clocks go back (2026-10-25, 25 hours)
// with its first and last hours, the hour it has twice, and the hours
// just outside it.
var zoneClicks = []string{
	"2026-11-28T22:30:00Z", "2026-11-28T23:30:00Z",
	"2026-10-31T23:30:00Z", "2026-11-01T00:30:00Z", "2026-11-15T12:00:00Z", "2026-11-30T22:59:59Z", "2026-11-30T23:00:00Z",
	"2026-10-24T21:50:00Z", "2026-10-24T22:10:00Z", "2026-10-24T22:40:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z",
	"2026-10-25T22:50:00Z", "2026-10-25T23:10:00Z",
	// Amman set its clocks back from 01:00 to midnight on 2021-10-29: its
	// first hour passed twice, from 21:00Z on the 28th.
	"2021-10-28T21:30:00Z", "2021-10-28T22:30:00Z",
}

// recordZoneClicks records zoneClicks in l, each billable (a decision
// and network of its own), and one not billed at 23:30 on Nov 28.
func recordZoneClicks(t *testing.T, l clicks.Ledger) {
	t.Helper()
	for i, at := range append(zoneClicks, "2026-11-28T23:30:00Z") {
		ts, err := time.Parse(time.RFC3339, at)
		if err != nil {
			t.Fatal(err)
		}
		c := clicks.Click{ID: clicks.NewID(), Time: ts, AdID: "handy-bestkauf.de", AdType: "advertiser", Type: "search", APIKey: "demo", SiteID: "demo",
			Criterion: "lg handy", IP: "2001:db8:" + strconv.Itoa(i+1) + "::1", UserAgent: "Mozilla/5.0 (X11) Firefox/133.0",
			Advertiser: "handy-bestkauf.de", BidMicros: int64(100_000 * (i + 1)), Currency: "EUR"}
		if i == len(zoneClicks) {
			c.Reason = clicks.ReasonBot
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = l.Record(ctx, &c, clicks.Use{D: "d" + strconv.Itoa(i), Expires: ts.Add(time.Hour)})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if c.Billable != (i < len(zoneClicks)) {
			t.Fatalf("click %d at %s: billable %v %q", i, at, c.Billable, c.Reason)
		}
	}
}

// getAs asks base+path with the demo partner's report token.
func getAs(t *testing.T, base, path string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+partners.DemoReportToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

type zoneReport struct {
	TZ   string
	Rows []struct {
		Day, Hour      string
		Clicks         int64
		BillableClicks int64 `json:"billable_clicks"`
		Spend          string
	}
}

// reportIn is the report of query from the server at base, in tz.
func reportIn(t *testing.T, base, tz, query string) zoneReport {
	t.Helper()
	res, body := getAs(t, base, "/v2/report?tz="+url.QueryEscape(tz)+"&"+query)
	var rep zoneReport
	if err := json.Unmarshal(body, &rep); res.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("report tz=%s %s: %d %v %s", tz, query, res.StatusCode, err, body)
	}
	if got := res.Header.Get("X-Adlink-Timezone"); got != tz || rep.TZ != tz {
		t.Errorf("report tz=%s: X-Adlink-Timezone %q, tz %q", tz, got, rep.TZ)
	}
	return rep
}

// days are a report's clicks by day.
func (r zoneReport) days() map[string]int64 {
	out := map[string]int64{}
	for _, row := range r.Rows {
		out[row.Day] += row.Clicks
	}
	return out
}

// testZoneReports checks the reports and the listing of the server at
// base, whose store holds recordZoneClicks' clicks, in UTC and in Berlin.
func testZoneReports(t *testing.T, base string) {
	// Late on Nov 28: both on the 28th in UTC; in Berlin the second is
	// on the 29th.
	if got := reportIn(t, base, "UTC", "from=2026-11-28&to=2026-11-29&group_by=day").days(); got["2026-11-28"] != 3 || got["2026-11-29"] != 0 {
		t.Errorf("UTC days %v, want 3 clicks on 2026-11-28 and none on 2026-11-29", got)
	}
	if got := reportIn(t, base, "Europe/Berlin", "from=2026-11-28&to=2026-11-29&group_by=day").days(); got["2026-11-28"] != 1 || got["2026-11-29"] != 2 {
		t.Errorf("Berlin days %v, want 1 click on 2026-11-28 and 2 on 2026-11-29", got)
	}
	// The default is UTC, said as such.
	res, body := getAs(t, base, "/v2/report?from=2026-11-28&to=2026-11-28")
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Adlink-Timezone") != "UTC" || !strings.Contains(string(body), `"tz":"UTC"`) {
		t.Errorf("report without tz: %d %q %s", res.StatusCode, res.Header.Get("X-Adlink-Timezone"), body)
	}

	// November in Berlin: its total is the sum of its days, and of the
	// listing's billed bids over the same days.
	month := reportIn(t, base, "Europe/Berlin", "from=2026-11-01&to=2026-11-30")
	byDay := reportIn(t, base, "Europe/Berlin", "from=2026-11-01&to=2026-11-30&group_by=day")
	if len(month.Rows) != 1 {
		t.Fatalf("November in Berlin: %+v", month)
	}
	var sumClicks, sumSpend int64
	for _, row := range byDay.Rows {
		sumClicks += row.Clicks
		m, _ := accounts.ParseMicros(row.Spend)
		sumSpend += m
		if !strings.HasPrefix(row.Day, "2026-11-") {
			t.Errorf("November in Berlin has a row of %s", row.Day)
		}
	}
	total, _ := accounts.ParseMicros(month.Rows[0].Spend)
	// Oct 31 23:30Z, Nov 1 00:30Z, Nov 15, Nov 28 twice, Nov 30 22:59:59Z,
	// and the click not billed; not Nov 30 23:00Z, Dec 1 in Berlin.
	if month.Rows[0].Clicks != 7 || month.Rows[0].BillableClicks != 6 || sumClicks != 7 || sumSpend != total {
		t.Errorf("November in Berlin: %d clicks, %d billed, spend %d; its days add up to %d clicks, spend %d",
			month.Rows[0].Clicks, month.Rows[0].BillableClicks, total, sumClicks, sumSpend)
	}
	var bids, listed int64
	times := map[string]string{}
	for after := ""; ; {
		res, body := getAs(t, base, "/v2/clicks?tz=Europe/Berlin&from=2026-11-01&to=2026-11-30&limit=3&after="+url.QueryEscape(after))
		var page struct {
			TZ     string
			Clicks []struct {
				ID, Time string
				Bid      *string
			}
			Next *string
		}
		if err := json.Unmarshal(body, &page); res.StatusCode != http.StatusOK || err != nil || page.TZ != "Europe/Berlin" ||
			res.Header.Get("X-Adlink-Timezone") != "Europe/Berlin" {
			t.Fatalf("listing in Berlin: %d %v %s", res.StatusCode, err, body)
		}
		for _, c := range page.Clicks {
			listed++
			times[c.Time] = c.ID
			if c.Bid != nil {
				m, err := accounts.ParseMicros(*c.Bid)
				if err != nil {
					t.Fatal(err)
				}
				bids += m
			}
		}
		if page.Next == nil {
			break
		}
		after = *page.Next
	}
	if listed != 7 || bids != total {
		t.Errorf("the listing of November in Berlin gives %d clicks, bids %d micros; the report %d clicks, spend %d", listed, bids, month.Rows[0].Clicks, total)
	}
	// Times in Berlin's offset: the same instants, on the report's days.
	for _, want := range []string{"2026-11-01T00:30:00+01:00", "2026-11-29T00:30:00+01:00", "2026-11-28T23:30:00+01:00", "2026-11-30T23:59:59+01:00"} {
		if _, ok := times[want]; !ok {
			t.Errorf("the listing in Berlin has no click at %s: %v", want, times)
		}
	}

	// The day Berlin's clocks go back has 25 hours, all counted; the hour
	// it has twice is two rows, in order of time.
	if got := reportIn(t, base, "Europe/Berlin", "from=2026-10-25&to=2026-10-25&group_by=day").days(); len(got) != 1 || got["2026-10-25"] != 5 {
		t.Errorf("2026-10-25 in Berlin: %v, want 5 clicks", got)
	}
	if got := reportIn(t, base, "UTC", "from=2026-10-25&to=2026-10-25&group_by=day").days(); got["2026-10-25"] != 4 {
		t.Errorf("2026-10-25 in UTC: %v, want 4 clicks", got)
	}
	var hours []string
	for _, row := range reportIn(t, base, "Europe/Berlin", "from=2026-10-25&to=2026-10-25&group_by=hour").Rows {
		hours = append(hours, row.Hour)
	}
	if want := "2026-10-25T00:00+02:00 2026-10-25T02:00+02:00 2026-10-25T02:00+01:00 2026-10-25T23:00+01:00"; strings.Join(hours, " ") != want {
		t.Errorf("hours of 2026-10-25 in Berlin: %q, want %q", hours, want)
	}

	// The day a clock is set back to midnight starts at the first
	// midnight: both clicks of its first hour are on it.
	if got := reportIn(t, base, "Asia/Amman", "from=2021-10-28&to=2021-10-29&group_by=day").days(); got["2021-10-28"] != 0 || got["2021-10-29"] != 2 {
		t.Errorf("2021-10-28 and 29 in Amman: %v, want both clicks on the 29th", got)
	}

	// A zone whose offset is not whole hours, a zone no one knows, and
	// the server's own are refused by name.
	for _, tz := range []string{"Asia/Kolkata", "Asia/Kathmandu", "Mars/Olympus", "Local", "localtime", "Europe/./Berlin", "../../etc/passwd"} {
		for _, path := range []string{"/v2/report?from=2026-11-01&to=2026-11-30&tz=", "/v2/clicks?tz="} {
			res, body := getAs(t, base, path+url.QueryEscape(tz))
			var e struct {
				Error struct{ Code, Param, Message string }
			}
			if err := json.Unmarshal(body, &e); err != nil || res.StatusCode != http.StatusBadRequest || e.Error.Param != "tz" ||
				!strings.Contains(e.Error.Message, "tz") {
				t.Errorf("%s%s: %d %s, want 400 naming tz", path, tz, res.StatusCode, body)
			}
		}
	}
	// The listing's range is limited in the zone's days too.
	if res, body := getAs(t, base, "/v2/clicks?tz=Europe/Berlin&from=2026-10-01&to=2026-11-01"); res.StatusCode != http.StatusBadRequest ||
		!strings.Contains(string(body), `"param":"from"`) {
		t.Errorf("32 days in Berlin: %d %s", res.StatusCode, body)
	}
}

// TestReportsInTimeZones: a server keeping its clicks in bbolt reports
// and lists them by the days of the zone asked for; "adlink report -tz"
// prints the same from its data directory.
func TestReportsInTimeZones(t *testing.T) {
	data := t.TempDir()
	db, err := store.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := clicks.NewLedger(db)
	if err != nil {
		t.Fatal(err)
	}
	recordZoneClicks(t, ledger)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	base, stop := startRun(t, "-data", data, "-demo")
	testZoneReports(t, base)
	_, served := getAs(t, base, "/v2/report?tz=Europe/Berlin&from=2026-10-25&to=2026-11-30&group_by=day")
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	if err := run(context.Background(), []string{"report", "-data", data, "-tz", "Europe/Berlin", "-from", "2026-10-25", "-to", "2026-11-30",
		"-partner", "demo", "-format", "json"}, noEnv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(out.Bytes()), served) || !bytes.Contains(served, []byte(`"day":"2026-11-29"`)) {
		t.Errorf("adlink report -tz Europe/Berlin printed\n%s\nthe server answered\n%s", out.Bytes(), served)
	}
	err = run(context.Background(), []string{"report", "-data", data, "-tz", "Asia/Kolkata"}, noEnv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-tz") {
		t.Errorf("adlink report -tz Asia/Kolkata: %v, want an error naming -tz", err)
	}
}

// TestReportsInTimeZonesFromPostgres: the same with the clicks kept in
// Postgres, and "adlink report -postgres -tz".
func TestReportsInTimeZonesFromPostgres(t *testing.T) {
	pgURL := testpg.New(t)
	base, stop := startRun(t, "-data", t.TempDir(), "-demo", "-postgres", pgURL)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := pgstore.Open(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recordZoneClicks(t, db.Ledger())
	testZoneReports(t, base)

	_, served := getAs(t, base, "/v2/report?tz=America/New_York&from=2026-10-25&to=2026-11-30&group_by=day,hour")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"report", "-postgres", pgURL, "-tz", "America/New_York", "-from", "2026-10-25", "-to", "2026-11-30",
		"-group-by", "day,hour", "-partner", "demo", "-format", "json"}, noEnv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	// New York: 23:30Z on Nov 28 is 18:30 on Nov 28, and Nov 30 23:00Z is
	// 18:00 on Nov 30 (EST, -05:00).
	if !bytes.Equal(bytes.TrimSpace(out.Bytes()), served) || !bytes.Contains(served, []byte(`"day":"2026-11-30","hour":"2026-11-30T18:00-05:00"`)) {
		t.Errorf("adlink report -postgres -tz America/New_York printed\n%s\nthe server answered\n%s", out.Bytes(), served)
	}
}
