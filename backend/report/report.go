// Package report answers reports over the click and impression rollups:
// what a partner's sites or an advertiser's ads did over a range of days
// in a time zone (UTC by default), grouped as asked, as JSON or CSV. The sums are the click log's,
// to the micro: the rollups are written in each click's own commit.
package report

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
)

// MaxDays is the longest range one report covers.
const MaxDays = 366

// MaxRows is the most rows one report answers. A report is kept whole
// in memory until it is written, at most some 1.4 KB a row: a year by
// the hour and every dimension of a large partner would be millions of
// rows, gigabytes for one request. A var so that tests can lower it.
var MaxRows = 200_000

// TooManyRows is Run's error for a report of more than MaxRows rows.
type TooManyRows struct{ Max int }

func (e *TooManyRows) Error() string {
	return "the report has over " + strconv.Itoa(e.Max) + " rows: ask for fewer days or fewer groups"
}

// DefaultDays is the range a report covers when it names none: the last
// 30 days, today included.
const DefaultDays = 30

// Groups are the dimensions a report may group by, in the order its
// columns give them.
var Groups = []string{"day", "hour", "site_id", "ad", "advertiser", "criterion", "yk_tag", "context", "country"}

// dims are the rollup dimension each group needs (day and hour need none:
// they are the rows' periods).
var dims = map[string]clicks.Dimension{"site_id": clicks.DimSiteID, "ad": clicks.DimAdID, "advertiser": clicks.DimAdvertiser,
	"criterion": clicks.DimCriterion, "yk_tag": clicks.DimYkTag, "context": clicks.DimContext, "country": clicks.DimCountry}

// Request is a report's range, grouping and format.
type Request struct {
	// From and To are the first and last day, dates of Zone, written as
	// midnight UTC of that date.
	From, To time.Time
	// Zone is the time zone whose days the range and the day and hour
	// groups are; nil is UTC.
	Zone *time.Location
	// GroupBy are names of Groups, each once, in the order asked.
	GroupBy []string
	// Format is "json" or "csv".
	Format string
}

// Problem is what is wrong with one parameter of a request.
type Problem struct {
	Param, Message string
}

// Parse reads a report request's parameters, from, to, tz, group_by and
// format, at now: every problem, each naming its parameter.
func Parse(get func(string) string, now time.Time) (Request, []Problem) {
	req := Request{Format: "json"}
	var problems []Problem
	req.From, req.To, req.Zone, problems = parseDays(get, now, DefaultDays, MaxDays, "a report")
	if v := get("group_by"); v != "" {
		// The first bad group is named, not every one: a list of
		// thousands would make an answer of megabytes.
		for g := range strings.SplitSeq(v, ",") {
			g = strings.TrimSpace(g)
			p := Problem{Param: "group_by"}
			switch {
			case !slices.Contains(Groups, g):
				p.Message = "group_by takes " + strings.Join(Groups, ", ") + "; not " + strconv.Quote(g)
			case slices.Contains(req.GroupBy, g):
				p.Message = "group_by names " + strconv.Quote(g) + " twice"
			default:
				req.GroupBy = append(req.GroupBy, g)
				continue
			}
			problems = append(problems, p)
			break
		}
	}
	switch f := get("format"); f {
	case "", "json":
	case "csv":
		req.Format = f
	default:
		problems = append(problems, Problem{"format", "format must be json or csv, not " + strconv.Quote(f)})
	}
	return req, problems
}

// parseDays reads the time zone tz and the range of its days from..to,
// to included, which defaults to the last days days, today (in tz)
// included, and covers at most max days; what names the answer in a
// problem ("a report"). A zone whose offset from UTC in the range is not
// a whole number of hours is a problem: the rollups are hours of UTC.
func parseDays(get func(string) string, now time.Time, days, max int, what string) (from, to time.Time, loc *time.Location, problems []Problem) {
	loc, problems = parseZone(get)
	y, m, d := now.In(loc).Date()
	to = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	day := func(name string, dst *time.Time) {
		v := get(name)
		if v == "" {
			return
		}
		d, err := time.Parse(time.DateOnly, v)
		if err != nil || d.Format(time.DateOnly) != v {
			problems = append(problems, Problem{name, name + " must be a date written YYYY-MM-DD, not " + strconv.Quote(v)})
			return
		}
		if d.Before(clicks.FirstDay) || d.After(clicks.LastDay) {
			problems = append(problems, Problem{name, name + " must be a day from " + clicks.FirstDay.Format(time.DateOnly) + " to " + clicks.LastDay.Format(time.DateOnly) + ", not " + v})
			return
		}
		*dst = d
	}
	day("to", &to)
	from = to.AddDate(0, 0, 1-days)
	day("from", &from)
	if len(problems) == 0 {
		switch n := int(to.Sub(from).Hours()/24) + 1; {
		case from.After(to):
			problems = append(problems, Problem{"from", "from must not be after to"})
		case n > max:
			problems = append(problems, Problem{"from", what + " covers at most " + strconv.Itoa(max) + " days, not " + strconv.Itoa(n)})
		default:
			start, end := localRange(from, to, loc)
			if whole, _, at, off := zoneHours(loc, start, end); !whole {
				problems = append(problems, zoneProblem(loc, at, off))
			}
		}
	}
	return from, to, loc, problems
}

// zone is the request's time zone.
func (r *Request) zone() *time.Location {
	if r.Zone == nil {
		return time.UTC
	}
	return r.Zone
}

// Range is the instants the report covers: from local midnight of From
// to local midnight after To, in Zone.
func (r *Request) Range() (start, end time.Time) { return localRange(r.From, r.To, r.zone()) }

// Columns are a report's columns: its groups, the currency, and the
// measures (one unbilled_<reason> per reason a click is not billed).
func (r *Request) Columns() []string {
	cols := append(slices.Clone(r.GroupBy), "currency", "impressions", "clicks", "billable_clicks")
	for _, reason := range clicks.Reasons {
		cols = append(cols, "unbilled_"+reason)
	}
	return append(cols, "ctr", "spend")
}

// Row is one row of a report: its groups' values, in the request's
// order, its currency and its measures.
type Row struct {
	Groups   []string
	Currency string
	clicks.Measures
	// hour is the start of the row's period, which orders the hour group.
	hour time.Time
}

// hourLayout writes the hour group: "2026-11-28T22:00Z" in UTC, and with
// the zone's offset in another, "2026-11-28T23:00+01:00".
const hourLayout = "2006-01-02T15:04Z07:00"

// Run reads the rows of req for account acc from rollups: a partner's
// (every site of its api_key), an advertiser's (its ads), or, for the
// operator, everyone's. Rows come sorted by their groups, then currency;
// one row per currency where a group has several. A report of more than
// MaxRows rows is a *TooManyRows, read no further.
func Run(ctx context.Context, rollups clicks.RollupReader, acc accounts.Account, req Request) ([]Row, error) {
	return RunHolding(ctx, rollups, acc, req, nil)
}

// RunHolding is Run that, when hold is not nil, asks hold(n) before the
// report comes to hold its nth row: a server bounds so the rows of all
// the reports it runs. hold is asked inside the store's read (a Postgres
// connection, a bbolt read transaction), so it must not wait. hold's
// error stops the report and is returned as it is.
func RunHolding(ctx context.Context, rollups clicks.RollupReader, acc accounts.Account, req Request, hold func(rows int) error) ([]Row, error) {
	// grouped are the dimensions the report's rows are told apart by.
	grouped := []clicks.Dimension{clicks.DimCurrency}
	for _, g := range req.GroupBy {
		if d, ok := dims[g]; ok {
			grouped = append(grouped, d)
		}
	}
	need := append([]clicks.Dimension{clicks.DimAPIKey, clicks.DimAdvertiser}, grouped...)
	loc := req.zone()
	start, end := req.Range()
	// Days of a zone other than UTC are summed from its hours: a zone
	// whose offset is not whole hours cannot be, and Parse refuses it.
	whole, utc, _, _ := zoneHours(loc, start, end)
	if !whole {
		return nil, errors.New("report: " + loc.String() + " is not whole hours from UTC over the range")
	}
	hourly := slices.Contains(req.GroupBy, "hour")
	grain := clicks.SmallestGrain(hourly || !utc, need...)
	// The store sums the hours by the report's rows: its groups, and the
	// account's own dimension, which is one value.
	maxRows := MaxRows
	sums := clicks.HourSums{End: end, Dims: grouped, Limit: maxRows + 1}
	// A partner's or an advertiser's report reads only its own rows (in
	// Postgres, from the index of its kind of account); the operator's
	// reads everyone's.
	// Rows are still kept by account as they come: SumHours takes an
	// empty account as everyone's.
	scan := func(fn func(*clicks.Rollup) error) error { return rollups.ScanRollups(ctx, grain, start, end, fn) }
	keep := func(r *clicks.Rollup) bool { return true }
	switch acc.Kind {
	case accounts.Partner, accounts.Advertiser:
		kind := clicks.DimAPIKey
		if acc.Kind == accounts.Partner {
			sums.APIKey = acc.ID
		} else {
			kind, sums.Advertiser = clicks.DimAdvertiser, acc.ID
		}
		sums.Dims = append(sums.Dims, kind)
		scan = func(fn func(*clicks.Rollup) error) error {
			return rollups.ScanAccountRollups(ctx, grain, start, end, kind, acc.ID, fn)
		}
		keep = func(r *clicks.Rollup) bool {
			if kind == clicks.DimAPIKey {
				return r.APIKey == acc.ID
			}
			return r.Advertiser == acc.ID
		}
	case accounts.Operator:
	default:
		return nil, nil
	}
	summed := hourly || !utc
	if summed {
		// The hours, summed by the store (in Postgres, by the database)
		// into the report's periods and rows: a row each the report has,
		// not every hour of every dimension, so that the store stops at
		// MaxRows+1 rows, the answer being known, rather than summing and
		// sending them all.
		switch {
		case hourly:
			for h := start; h.Before(end); h = h.Add(time.Hour) {
				sums.Starts = append(sums.Starts, h)
			}
		case slices.Contains(req.GroupBy, "day"):
			for d := req.From; !d.After(req.To); d = d.AddDate(0, 0, 1) {
				// A day a zone skipped (Pacific/Apia's 2011-12-30) starts
				// where the next one does, and has no hours.
				if s := dayStart(d, loc); len(sums.Starts) == 0 || s.After(sums.Starts[len(sums.Starts)-1]) {
					sums.Starts = append(sums.Starts, s)
				}
			}
		default:
			sums.Starts = []time.Time{start}
		}
		scan = func(fn func(*clicks.Rollup) error) error { return rollups.SumHours(ctx, sums, fn) }
	}
	rows := map[string]*Row{}
	var key []byte
	vals := make([]string, len(req.GroupBy))
	var at time.Time
	var day, hour string
	err := scan(func(r *clicks.Rollup) error {
		if !keep(r) {
			return nil
		}
		if !r.Start.Equal(at) {
			at = r.Start
			local := r.Start.In(loc)
			day, hour = local.Format(time.DateOnly), local.Format(hourLayout)
		}
		key = key[:0]
		for i, g := range req.GroupBy {
			switch g {
			case "day":
				vals[i] = day
			case "hour":
				vals[i] = hour
			default:
				vals[i] = value(r, g)
			}
			key = append(append(key, vals[i]...), 0)
		}
		key = append(key, r.Currency...)
		row := rows[string(key)]
		if row == nil {
			if len(rows) == maxRows {
				return &TooManyRows{Max: maxRows}
			}
			if hold != nil {
				if err := hold(len(rows) + 1); err != nil {
					return err
				}
			}
			row = &Row{Groups: slices.Clone(vals), Currency: r.Currency, hour: at}
			rows[string(key)] = row
		}
		row.Add(&r.Measures)
		// A scan's rows keep their context and leave the page's
		// measures 0; SumHours' sums give them.
		if !summed && r.Context != clicks.SearchContext {
			row.PageImpressions += r.Impressions
			row.PageClicks += r.Clicks
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Row) int {
		for i := range a.Groups {
			// Hours sort by their time: the hour a clock is set back
			// comes twice, its offsets in the wrong order as text.
			if req.GroupBy[i] == "hour" {
				if c := a.hour.Compare(b.hour); c != 0 {
					return c
				}
				continue
			}
			if c := strings.Compare(a.Groups[i], b.Groups[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Currency, b.Currency)
	})
	return out, nil
}

// value is r's value of group g.
func value(r *clicks.Rollup, g string) string {
	switch g {
	case "site_id":
		return r.SiteID
	case "ad":
		return r.AdID
	case "advertiser":
		return r.Advertiser
	case "criterion":
		return r.Criterion
	case "yk_tag":
		return r.YkTag
	case "context":
		return r.Context
	case "country":
		return r.Country
	}
	return ""
}

// Spend writes micros as a decimal of at least two places: "1.50",
// "0.000123".
func Spend(micros int64) string {
	s := strconv.FormatInt(micros/1e6, 10) + "." + strconv.FormatInt(1e6+micros%1e6, 10)[1:]
	for strings.HasSuffix(s, "0") && len(s)-strings.IndexByte(s, '.') > 3 {
		s = s[:len(s)-1]
	}
	return s
}

// CTR is the clicks on ads in pages per impression of ads in pages,
// rounded to four places, and false when there were no such impressions.
// A search answer's clicks are left out: its ads have no impressions but
// those a partner's page may beacon, also left out.
func CTR(m *clicks.Measures) (float64, bool) {
	if m.PageImpressions == 0 {
		return 0, false
	}
	return float64(int64(float64(m.PageClicks)/float64(m.PageImpressions)*1e4+0.5)) / 1e4, true
}
