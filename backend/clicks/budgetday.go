package clicks

import (
	"context"
	"sync"
	"time"
)

// BudgetDay is a budget's day: the days from 1970-01-01 to a calendar
// date, the date in the advertiser's time zone. A UTC advertiser's is the
// UTC day's number; a zone changed in the middle of a day keeps adding to
// the same date's spend.
type BudgetDay int64

// BudgetDayIn is the date of at in loc, as a BudgetDay.
func BudgetDayIn(at time.Time, loc *time.Location) BudgetDay {
	y, m, d := at.In(loc).Date()
	return BudgetDay(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// Start is the first instant of d in loc: its local midnight, the first
// instant after it where a clock change skips midnight, or the first of
// two midnights where the clocks go back over it (01:00 to 00:00), of
// which time.Date may give the later.
func (d BudgetDay) Start(loc *time.Location) time.Time {
	t := time.Unix(int64(d)*86400, 0).UTC()
	s := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	for BudgetDayIn(s, loc) < d {
		s = s.Add(time.Hour)
	}
	// Clock changes fall on quarter hours.
	for BudgetDayIn(s.Add(-15*time.Minute), loc) == d {
		s = s.Add(-15 * time.Minute)
	}
	return s
}

// SpendReader reads what advertisers spent. BoltRollups read the spend
// of the server's bbolt file.
type SpendReader interface {
	// SpentOn returns what the advertiser's billable clicks cost on its
	// budget's day (Use.BudgetDay), in millionths of their currency,
	// including every click whose Ledger.Record returned before the call.
	SpentOn(ctx context.Context, advertiser string, day BudgetDay) (int64, error)
	// SpentAllOn returns what each of advertisers' billable clicks cost
	// on day, one of its budget's days, as SpentOn would for each, in one
	// read of the store. It reads those advertisers alone, not every one
	// with spend: one it leaves out spent nothing, and it holds none that
	// advertisers does not name. The advertisers' budget days are their
	// own dates: one whose zone is on another date is read with that date.
	SpentAllOn(ctx context.Context, day BudgetDay, advertisers []string) (map[string]int64, error)
}

var _ SpendReader = BoltRollups{}

// zones caches the locations of the zone names the budgets give, so that a
// click does not read the zone database.
var zones sync.Map // string -> *time.Location

// LoadZone returns the location of name, an IANA time zone ("Europe/Berlin");
// "" is UTC.
func LoadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, l)
	return l, nil
}

// Zone is the location of name as LoadZone reads it, or UTC for a name it
// cannot read (the advertisers file's load refuses those).
func Zone(name string) *time.Location {
	l, err := LoadZone(name)
	if err != nil {
		return time.UTC
	}
	return l
}

// BilledDay is the Click.BudgetDay a click settled as c is kept with:
// u.BudgetDay when it bills, else 0.
func (u Use) BilledDay(c *Click) BudgetDay {
	if !c.Billable {
		return 0
	}
	return u.BudgetDay(c)
}

// BudgetDay is the day of u's budget that c spends on: the date of c's
// time in u's zone.
func (u Use) BudgetDay(c *Click) BudgetDay { return BudgetDayIn(c.Time, Zone(u.Zone)) }
