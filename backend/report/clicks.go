package report

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
)

// The range and pages of a listing of clicks (GET /v2/clicks).
const (
	// ClicksMaxDays is the longest range one listing covers.
	ClicksMaxDays = 31
	// ClicksDefaultLimit and ClicksMaxLimit are a page's clicks when the
	// request names no limit, and the most it may name.
	ClicksDefaultLimit = 1000
	ClicksMaxLimit     = 10000
)

// ClickColumns are the columns of a listing of clicks. A click's IP
// address and user agent, a reader's, are not among them.
var ClickColumns = []string{"id", "time", "ad", "ad_type", "type", "site_id", "criterion", "yk_tag", "country",
	"billable", "reason", "bid", "currency"}

// ClicksRequest is one page of a listing of clicks.
type ClicksRequest struct {
	// From and To are the first and last day, dates of Zone, written as
	// midnight UTC of that date.
	From, To time.Time
	// Zone is the time zone whose days the range is and whose offset the
	// clicks' times are written with; nil is UTC.
	Zone *time.Location
	// Billable, when not nil, lists only the clicks billed (true) or not.
	Billable *bool
	// Format is "json" or "csv".
	Format string
	// Limit is the most clicks of the page.
	Limit int
	// Desc lists the newest clicks first (order=desc).
	Desc bool
	// After is the position of the previous page's last click, or zero
	// for the first page.
	After clicks.Position
}

// ParseClicks reads a listing's parameters, from, to, tz, billable,
// format, limit, order and after, at now: every problem, each naming its
// parameter. The range defaults to today, the order to asc. A cursor
// continues the order it was made for: given with the other, it is a
// problem of after.
func ParseClicks(get func(string) string, now time.Time) (ClicksRequest, []Problem) {
	req := ClicksRequest{Format: "json", Limit: ClicksDefaultLimit}
	var problems []Problem
	req.From, req.To, req.Zone, problems = parseDays(get, now, 1, ClicksMaxDays, "a listing of clicks")
	switch v := get("billable"); v {
	case "":
	case "true", "false":
		b := v == "true"
		req.Billable = &b
	default:
		problems = append(problems, Problem{"billable", "billable must be true or false, not " + strconv.Quote(v)})
	}
	switch f := get("format"); f {
	case "", "json":
	case "csv":
		req.Format = f
	default:
		problems = append(problems, Problem{"format", "format must be json or csv, not " + strconv.Quote(f)})
	}
	if v := get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > ClicksMaxLimit || strconv.Itoa(n) != v {
			problems = append(problems, Problem{"limit", "limit must be a whole number from 1 to " + strconv.Itoa(ClicksMaxLimit) + ", not " + strconv.Quote(v)})
		} else {
			req.Limit = n
		}
	}
	badOrder := false
	switch order := get("order"); order {
	case "", "asc":
	case "desc":
		req.Desc = true
	default:
		badOrder = true
		problems = append(problems, Problem{"order", "order must be asc or desc, not " + strconv.Quote(order)})
	}
	if v := get("after"); v != "" {
		p, desc, err := ParseCursor(v)
		switch {
		case err != nil:
			problems = append(problems, Problem{"after", "after must be the next of a listing's page, as it gave it"})
		case desc != req.Desc && !badOrder:
			made := "asc"
			if desc {
				made = "desc"
			}
			problems = append(problems, Problem{"after", "after continues a listing of order=" + made + ": give order=" + made + " with it"})
		default:
			req.After = p
		}
	}
	return req, problems
}

// Query is the click log's query of req for the account acc: a partner's
// clicks (on every site of its api_key), an advertiser's (on its ads),
// or, for the operator, everyone's; false for an account of no kind.
func (req *ClicksRequest) Query(acc accounts.Account) (clicks.Query, bool) {
	start, end := localRange(req.From, req.To, req.zone())
	q := clicks.Query{From: start, To: end, Billable: req.Billable, Desc: req.Desc, After: req.After, Limit: req.Limit}
	switch acc.Kind {
	case accounts.Partner:
		q.APIKey = acc.ID
	case accounts.Advertiser:
		q.Advertiser = acc.ID
	case accounts.Operator:
	default:
		return q, false
	}
	// An account with no id would be everyone's.
	return q, acc.ID != "" || acc.Kind == accounts.Operator
}

// maxCursorID bounds the click id a cursor carries; the server's ids are
// 22 bytes.
const maxCursorID = 64

var cursorEncoding = base64.RawURLEncoding.Strict()

// descBit marks the cursor of a listing newest first in the top bit of
// its time, which a time after 1970 leaves clear: an ascending listing's
// cursor is as it was before listings had an order.
const descBit = 1 << 63

// Cursor is the opaque text of a listing's position, for its next page,
// and of its order: newest first when desc.
func Cursor(p clicks.Position, desc bool) string {
	ns := uint64(p.Time.UnixNano())
	if desc {
		ns |= descBit
	}
	b := binary.BigEndian.AppendUint64(nil, ns)
	return cursorEncoding.EncodeToString(append(b, p.ID...))
}

var errCursor = errors.New("report: not a cursor")

// ParseCursor reads a position and order Cursor wrote. It refuses what
// Cursor would not write: another encoding of one, a time not after
// 1970, an id over 64 bytes or of other characters than a click id's
// (URL-safe base64).
func ParseCursor(s string) (p clicks.Position, desc bool, err error) {
	b, err := cursorEncoding.DecodeString(s)
	if err != nil || len(b) < 8 || len(b) > 8+maxCursorID {
		return clicks.Position{}, false, errCursor
	}
	u := binary.BigEndian.Uint64(b)
	desc = u&descBit != 0
	ns := int64(u &^ descBit)
	if ns <= 0 {
		return clicks.Position{}, false, errCursor
	}
	id := b[8:]
	for _, c := range id {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return clicks.Position{}, false, errCursor
		}
	}
	p = clicks.Position{Time: time.Unix(0, ns).UTC(), ID: string(id)}
	// Only the server's own spelling: the decoder passes over line breaks.
	if Cursor(p, desc) != s {
		return clicks.Position{}, false, errCursor
	}
	return p, desc, nil
}

// Next is the cursor of the page of req's listing after page, or "" when
// more is false.
func Next(req *ClicksRequest, page []clicks.Click, more bool) string {
	if !more || len(page) == 0 {
		return ""
	}
	last := &page[len(page)-1]
	return Cursor(clicks.Position{Time: last.Time, ID: last.ID}, req.Desc)
}

// zone is the request's time zone.
func (req *ClicksRequest) zone() *time.Location {
	if req.Zone == nil {
		return time.UTC
	}
	return req.Zone
}

// clickTime writes a click's time in RFC 3339 to the nanosecond, with
// loc's offset: the local time a reader's own analytics show, and the
// same instant.
func clickTime(c *clicks.Click, loc *time.Location) string {
	return c.Time.In(loc).Format(time.RFC3339Nano)
}

// bid is what c cost: its bid when billed, "" when not, so that the bids
// of a listing add up to the report's spend.
func bid(c *clicks.Click) string {
	if !c.Billable {
		return ""
	}
	return Spend(c.BidMicros)
}

// AppendClicksJSON appends a page of a listing as a JSON object: the
// account, the range, the filter, the columns, the clicks as objects
// with the columns' keys in the columns' order (bid null for a click not
// billed), and next, the cursor of the next page or null.
func AppendClicksJSON(b []byte, acc accounts.Account, req ClicksRequest, page []clicks.Click, next string) []byte {
	b = append(b, `{"account":{"kind":`...)
	b = appendString(b, string(acc.Kind))
	b = append(b, `,"id":`...)
	b = appendString(b, acc.ID)
	b = append(b, `},"from":"`...)
	b = append(b, req.From.Format(time.DateOnly)...)
	b = append(b, `","to":"`...)
	b = append(b, req.To.Format(time.DateOnly)...)
	b = append(b, `","tz":`...)
	b = appendString(b, zoneName(req.Zone))
	b = append(b, `,"billable":`...)
	if req.Billable == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendBool(b, *req.Billable)
	}
	b = append(b, `,"columns":`...)
	b = appendStrings(b, ClickColumns)
	b = append(b, `,"clicks":[`...)
	for i := range page {
		c := &page[i]
		if i > 0 {
			b = append(b, ',')
		}
		for j, v := range clickStrings(c, req.zone()) {
			if j == 0 {
				b = append(b, '{')
			} else {
				b = append(b, ',')
			}
			b = appendString(b, ClickColumns[j])
			b = append(b, ':')
			switch ClickColumns[j] {
			case "billable":
				b = strconv.AppendBool(b, c.Billable)
			case "bid":
				if v == "" {
					b = append(b, "null"...)
				} else {
					b = appendString(b, v)
				}
			default:
				b = appendString(b, v)
			}
		}
		b = append(b, '}')
	}
	b = append(b, `],"next":`...)
	if next == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, next)
	}
	return append(b, '}')
}

// clickStrings are c's values in the order of ClickColumns, its time in
// loc.
func clickStrings(c *clicks.Click, loc *time.Location) []string {
	return []string{c.ID, clickTime(c, loc), c.AdID, c.AdType, c.Type, c.SiteID, c.Criterion, c.YkTag, c.Country,
		strconv.FormatBool(c.Billable), c.Reason, bid(c), c.Currency}
}

// WriteClicksCSV writes a page of a listing as CSV: a header row of
// ClickColumns, then one line per click, its time with loc's offset (nil
// is UTC). A value a spreadsheet would read as a formula is written as
// WriteCSV writes one.
func WriteClicksCSV(w io.Writer, loc *time.Location, page []clicks.Click) error {
	if loc == nil {
		loc = time.UTC
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(ClickColumns); err != nil {
		return err
	}
	for i := range page {
		rec := clickStrings(&page[i], loc)
		for j := range rec {
			rec[j] = inert(rec[j])
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
