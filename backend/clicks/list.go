package clicks

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
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

// List implements Lister by a scan of the range. A record whose JSON
// does not hold the account's api_key or advertiser as its field is
// passed over without being decoded: a listing of an account with few
// clicks reads the range's bytes, not every click of it.
func (l *Log) List(ctx context.Context, q Query) ([]Click, bool, error) {
	if q.Limit < 1 {
		return nil, false, errors.New("clicks: list: limit below 1")
	}
	need := q.field()
	var p pager
	err := scanRaw(ctx, l.db, bucket, q.start(), q.To, func(k, v []byte) error {
		if p.full(&q, int64(binary.BigEndian.Uint64(k[:8]))) {
			return errPageFull
		}
		if need != nil && !bytes.Contains(v, need) {
			return nil
		}
		var c Click
		if err := json.Unmarshal(v, &c); err != nil {
			return fmt.Errorf("clicks: record %x: %w", k, err)
		}
		p.add(&q, c)
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, false, err
	}
	page, more := p.done(&q)
	return page, more, nil
}

// field is the JSON a stored click of q's account holds, its api_key or
// advertiser field as json.Marshal writes it, or nil when q names no
// account or its id is not plain ASCII that JSON writes as it is.
func (q *Query) field() []byte {
	name, id := "api_key", q.APIKey
	if id == "" {
		name, id = "advertiser", q.Advertiser
	}
	if id == "" {
		return nil
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return nil
		}
	}
	return []byte(`"` + name + `":"` + id + `"`)
}

// start is where q's scan begins: at its cursor's time, or at From.
func (q *Query) start() time.Time {
	if q.After.Time.After(q.From) {
		return q.After.Time
	}
	return q.From
}

var errPageFull = errors.New("page full")

// pager gathers a page of a listing from a scan in the order of time.
type pager struct{ page []Click }

// full reports whether the page holds more than q.Limit clicks and the
// scan is past its last click's nanosecond, at ns: since a scan orders a
// nanosecond's clicks as they came and a listing by their IDs, the page
// is whole only once all of them are read.
func (p *pager) full(q *Query, ns int64) bool {
	return len(p.page) > q.Limit && ns > p.page[len(p.page)-1].Time.UnixNano()
}

func (p *pager) add(q *Query, c Click) {
	if q.keeps(&c) {
		p.page = append(p.page, c)
	}
}

// done returns the page's first q.Limit clicks in listing order, and
// whether more follow.
func (p *pager) done(q *Query) ([]Click, bool) {
	slices.SortStableFunc(p.page, func(a, b Click) int {
		return Position{a.Time, a.ID}.compare(Position{b.Time, b.ID})
	})
	if len(p.page) > q.Limit {
		return p.page[:q.Limit], true
	}
	return p.page, false
}

// ListScan answers q with store's Scan: from q.After (or q.From) to
// q.To, until the page is full and the clicks of its last nanosecond are
// all read.
func ListScan(ctx context.Context, store Store, q Query) ([]Click, bool, error) {
	if q.Limit < 1 {
		return nil, false, errors.New("clicks: list: limit below 1")
	}
	var p pager
	err := store.Scan(ctx, q.start(), q.To, func(c Click) error {
		if p.full(&q, c.Time.UnixNano()) {
			return errPageFull
		}
		p.add(&q, c)
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, false, err
	}
	page, more := p.done(&q)
	return page, more, nil
}
