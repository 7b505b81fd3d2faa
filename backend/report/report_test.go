package report

import (
	"bytes"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
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
// parameter or gives a range of 1 to MaxDays days of a zone whole hours
// from UTC over it, named as asked, and known groups, each once.
func FuzzParse(f *testing.F) {
	f.Add("2026-11-01", "2026-11-24", "", "day,site_id", "csv")
	f.Add("", "", "", "", "")
	f.Add("2026-02-30", "x", "Local", "day,day", "xml")
	f.Add("2025-01-01", "2026-11-24", "Europe/Berlin", " ad , hour", "json")
	f.Add("2026-10-25", "2026-10-25", "Asia/Kolkata", "day", "")
	f.Add("1900-01-01", "1900-01-31", "Europe/Amsterdam", "hour", "")
	f.Add("", "", "../../../etc/localtime", "", "")
	f.Add("2026-09-06", "2026-09-06", "America/Santiago", "day", "")
	f.Add("2011-12-30", "2011-12-30", "Pacific/Apia", "day", "")
	now := time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, from, to, tz, groups, format string) {
		v := map[string]string{"from": from, "to": to, "tz": tz, "group_by": groups, "format": format}
		req, problems := Parse(func(k string) string { return v[k] }, now)
		for _, p := range problems {
			if !slices.Contains([]string{"from", "to", "tz", "group_by", "format"}, p.Param) || p.Message == "" {
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
		if name := req.ZoneName(); name != tz && (tz != "" || name != "UTC") {
			t.Fatalf("tz %q read as %q", tz, name)
		}
		start, end := req.Range()
		// A day may be skipped whole (Pacific/Apia's 2011-12-30), none is
		// over 25 hours, and the range starts on from.
		if start.After(end) || end.Sub(start) > time.Duration(days)*25*time.Hour || start.In(req.Zone).Format(time.DateOnly) < req.From.Format(time.DateOnly) {
			t.Fatalf("%d days of %s: %v..%v", days, tz, start, end)
		}
		for at := start; at.Before(end); at = at.Add(time.Hour) {
			if _, off := at.In(req.Zone).Zone(); off%3600 != 0 {
				t.Fatalf("%s is %d s from UTC at %v", tz, off, at)
			}
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

// TestParseZones: tz names an IANA zone whose days the range is; a zone
// not whole hours from UTC in the range, an unknown one and the server's
// own are refused, naming tz.
func TestParseZones(t *testing.T) {
	now := time.Date(2026, 11, 28, 23, 30, 0, 0, time.UTC)
	for _, tt := range []struct {
		tz, from, to string
		problem      string // in the message of tz's problem; "" for none
		start, end   string // the instants of the range, RFC 3339
	}{
		{"", "2026-11-28", "2026-11-28", "", "2026-11-28T00:00:00Z", "2026-11-29T00:00:00Z"},
		{"UTC", "", "", "", "2026-10-30T00:00:00Z", "2026-11-29T00:00:00Z"},
		// Today in Berlin is the 29th already.
		{"Europe/Berlin", "", "", "", "2026-10-30T23:00:00Z", "2026-11-29T23:00:00Z"},
		{"Europe/Berlin", "2026-10-25", "2026-10-25", "", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"},
		{"Europe/Berlin", "2026-03-29", "2026-03-29", "", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"},
		{"America/New_York", "2026-11-01", "2026-11-01", "", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"},
		// Santiago sets its clocks forward at midnight: Sep 6 starts at
		// 01:00, and Sep 5 ends then.
		{"America/Santiago", "2026-09-06", "2026-09-06", "", "2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z"},
		{"America/Santiago", "2026-09-05", "2026-09-05", "", "2026-09-05T04:00:00Z", "2026-09-06T04:00:00Z"},
		// Amman set its clocks back from 01:00 to midnight: Oct 29 starts
		// at the first midnight, and Oct 28 ends there.
		{"Asia/Amman", "2021-10-29", "2021-10-29", "", "2021-10-28T21:00:00Z", "2021-10-29T22:00:00Z"},
		{"Asia/Amman", "2021-10-28", "2021-10-28", "", "2021-10-27T21:00:00Z", "2021-10-28T21:00:00Z"},
		// Apia skipped 2011-12-30: the 29th ends where the 31st starts.
		{"Pacific/Apia", "2011-12-29", "2011-12-30", "", "2011-12-29T10:00:00Z", "2011-12-30T10:00:00Z"},
		{"Asia/Kolkata", "2026-11-01", "2026-11-01", "UTC+5:30", "", ""},
		{"Asia/Kathmandu", "", "", "UTC+5:45", "", ""},
		{"America/St_Johns", "2026-12-01", "2026-12-01", "UTC-3:30", "", ""},
		// Whole hours today, not in 1935, when Amsterdam was 19 minutes 32 s
		// from UTC.
		{"Europe/Amsterdam", "1935-01-01", "1935-01-01", "UTC+0:19", "", ""},
		{"Mars/Olympus", "", "", "IANA time zone", "", ""},
		{"Local", "", "", "IANA time zone", "", ""},
		{"/etc/localtime", "", "", "IANA time zone", "", ""},
		// The host's own zone by the link zoneinfo has to /etc/localtime,
		// and a zone by another spelling of its path.
		{"localtime", "", "", "IANA time zone", "", ""},
		{"Europe/./Berlin", "", "", "IANA time zone", "", ""},
		{"Europe//Berlin", "", "", "IANA time zone", "", ""},
		{"America/Argentina/Buenos_Aires", "2026-11-01", "2026-11-01", "", "2026-11-01T03:00:00Z", "2026-11-02T03:00:00Z"},
		{"Etc/GMT+5", "2026-11-01", "2026-11-01", "", "2026-11-01T05:00:00Z", "2026-11-02T05:00:00Z"},
	} {
		v := map[string]string{"tz": tt.tz, "from": tt.from, "to": tt.to}
		req, problems := Parse(func(k string) string { return v[k] }, now)
		if tt.problem != "" {
			if len(problems) != 1 || problems[0].Param != "tz" || !strings.Contains(problems[0].Message, tt.problem) {
				t.Errorf("tz=%s from=%s: problems %+v, want tz's with %q", tt.tz, tt.from, problems, tt.problem)
			}
			continue
		}
		start, end := req.Range()
		if len(problems) > 0 || start.UTC().Format(time.RFC3339) != tt.start || end.UTC().Format(time.RFC3339) != tt.end {
			t.Errorf("tz=%s from=%s to=%s: %v..%v %+v, want %s..%s", tt.tz, tt.from, tt.to, start.UTC(), end.UTC(), problems, tt.start, tt.end)
		}
	}
}

// TestParseDaysInTheStoresRange: a day the stores cannot hold (their
// nanoseconds wrap before 1678 and after 2262) is refused, naming its
// parameter, for a report and a listing alike.
func TestParseDaysInTheStoresRange(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct{ from, to, param string }{
		{"1677-01-01", "1677-01-05", "from"},
		{"1899-12-31", "1900-01-02", "from"},
		{"2300-01-01", "2300-01-05", "from"},
		{"2200-12-30", "2201-01-02", "to"},
	} {
		q := url.Values{"from": {tt.from}, "to": {tt.to}}
		_, problems := Parse(q.Get, now)
		_, listed := ParseClicks(q.Get, now)
		for _, ps := range [][]Problem{problems, listed} {
			if !slices.ContainsFunc(ps, func(p Problem) bool { return p.Param == tt.param }) {
				t.Errorf("from=%s to=%s: problems %v, want one of %s", tt.from, tt.to, ps, tt.param)
			}
		}
	}
	q := url.Values{"from": {"1900-01-01"}, "to": {"1900-01-05"}}
	if _, problems := Parse(q.Get, now); len(problems) != 0 {
		t.Errorf("1900-01-01..05: %v, want none", problems)
	}
}

// WriteJSON writes, a part at a time, what AppendJSON appends, and stops
// at the writer's error.
func TestWriteJSONAsAppendJSON(t *testing.T) {
	acc := accounts.Account{Kind: accounts.Partner, ID: "demo"}
	req := Request{From: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC),
		GroupBy: []string{"site_id", "criterion"}, Format: "json"}
	for _, n := range []int{0, 1, 5000} {
		rows := make([]Row, n)
		for i := range rows {
			rows[i] = Row{Groups: []string{"site-" + strconv.Itoa(i%7), "handy \"hülle\" " + strconv.Itoa(i)}, Currency: "EUR",
				Measures: clicks.Measures{Impressions: int64(i), Clicks: int64(i % 3), SpendMicros: int64(i) * 1000}}
		}
		want := AppendJSON(nil, acc, req, rows)
		var w chunks
		if err := WriteJSON(&w, acc, req, rows); err != nil {
			t.Fatal(err)
		}
		if got := bytes.Join(w, nil); !bytes.Equal(got, want) {
			t.Errorf("%d rows: WriteJSON wrote %d bytes unlike AppendJSON's %d", n, len(got), len(want))
		}
		if n == 5000 && len(w) < 2 {
			t.Errorf("%d rows, %d bytes written in %d part", n, len(want), len(w))
		}
	}
	gone := errors.New("the client is gone")
	if err := WriteJSON(failing{gone}, acc, req, nil); !errors.Is(err, gone) {
		t.Errorf("WriteJSON to a failing writer: %v, want its error", err)
	}
}

// chunks are what each Write wrote.
type chunks [][]byte

func (c *chunks) Write(b []byte) (int, error) {
	*c = append(*c, slices.Clone(b))
	return len(b), nil
}

// failing is a writer that fails with its error.
type failing struct{ err error }

func (f failing) Write([]byte) (int, error) { return 0, f.err }
