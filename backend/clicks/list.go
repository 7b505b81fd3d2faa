package clicks

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// Position is a click's place in a listing: listings run in the order of
// Time, then ID.
type Position struct {
	Time time.Time
	ID   string
}

// Before reports whether p comes before q in a listing.
func (p Position) Before(q Position) bool { return p.compare(q) < 0 }

func (p Position) compare(q Position) int {
	if c := p.Time.Compare(q.Time); c != 0 {
		return c
	}
	return strings.Compare(p.ID, q.ID)
}

// Query selects a page of an account's clicks.
type Query struct {
	// From and To bound the clicks' Time: From <= Time < To.
	From, To time.Time
	// APIKey and Advertiser, when not "", keep only the clicks of that
	// api_key, of that advertiser.
	APIKey, Advertiser string
	// Billable, when not nil, keeps only the clicks billed (true) or not.
	Billable *bool
	// After, when its Time is not zero, keeps only the clicks after it.
	After Position
	// Limit is the most clicks a page holds, at least 1.
	Limit int
}

// keeps reports whether q selects c, bar its range and Limit.
func (q *Query) keeps(c *Click) bool {
	return (q.APIKey == "" || c.APIKey == q.APIKey) &&
		(q.Advertiser == "" || c.Advertiser == q.Advertiser) &&
		(q.Billable == nil || c.Billable == *q.Billable) &&
		(q.After.Time.IsZero() || q.After.Before(Position{c.Time, c.ID}))
}

// Lister reads pages of the click log for GET /v2/clicks.
type Lister interface {
	// List returns the first q.Limit clicks q selects, in the order of
	// Time, then ID, and whether more follow. It sees every click whose
	// record returned before List was called, each field as recorded but
	// IP and UserAgent, which it may leave empty.
	List(ctx context.Context, q Query) (page []Click, more bool, err error)
}

var _ Lister = (*Log)(nil)

// List implements Lister by a scan of the range.
func (l *Log) List(ctx context.Context, q Query) ([]Click, bool, error) {
	return ListScan(ctx, l, q)
}

var errPageFull = errors.New("page full")

// ListScan answers q with store's Scan: from q.After (or q.From) to
// q.To, until the page is full and the clicks of its last nanosecond are
// all read, since Scan orders a nanosecond's clicks as they came and a
// listing by their IDs.
func ListScan(ctx context.Context, store Store, q Query) ([]Click, bool, error) {
	if q.Limit < 1 {
		return nil, false, errors.New("clicks: list: limit below 1")
	}
	from := q.From
	if q.After.Time.After(from) {
		from = q.After.Time
	}
	var page []Click
	err := store.Scan(ctx, from, q.To, func(c Click) error {
		if len(page) > q.Limit && c.Time.After(page[len(page)-1].Time) {
			return errPageFull
		}
		if q.keeps(&c) {
			page = append(page, c)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, false, err
	}
	slices.SortStableFunc(page, func(a, b Click) int {
		return Position{a.Time, a.ID}.compare(Position{b.Time, b.ID})
	})
	if len(page) > q.Limit {
		return page[:q.Limit], true, nil
	}
	return page, false, nil
}
