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

	bolt "go.etcd.io/bbolt"
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
	// Desc lists the newest clicks first: in the order of Time, then ID,
	// backwards.
	Desc bool
	// After, when its Time is not zero, keeps only the clicks after it in
	// the listing's order (before it in time when Desc).
	After Position
	// Limit is the most clicks a page holds, at least 1.
	Limit int
}

// keeps reports whether q selects c, bar its range and Limit.
func (q *Query) keeps(c *Click) bool {
	return (q.APIKey == "" || c.APIKey == q.APIKey) &&
		(q.Advertiser == "" || c.Advertiser == q.Advertiser) &&
		(q.Billable == nil || c.Billable == *q.Billable) &&
		(q.After.Time.IsZero() || q.follows(Position{c.Time, c.ID}))
}

// follows reports whether p comes after q.After in q's order.
func (q *Query) follows(p Position) bool {
	if q.Desc {
		return p.Before(q.After)
	}
	return q.After.Before(p)
}

// compare orders a and b as q lists them.
func (q *Query) compare(a, b *Click) int {
	c := Position{a.Time, a.ID}.compare(Position{b.Time, b.ID})
	if q.Desc {
		return -c
	}
	return c
}

// Lister reads pages of the click log for GET /v2/clicks.
type Lister interface {
	// List returns the first q.Limit clicks q selects, in the order of
	// Time, then ID (backwards when q.Desc), and whether more follow. It
	// sees every click whose record returned before List was called, each
	// field as recorded but IP and UserAgent, which it may leave empty.
	List(ctx context.Context, q Query) (page []Click, more bool, err error)
}

var _ Lister = (*Log)(nil)

// List implements Lister. A listing of an account reads the account's
// entries in the account index, once it is built (BuildIndex); before
// that, and for everyone's clicks, it scans the range, passing over a
// record whose JSON does not hold the account's api_key or advertiser as
// its field without decoding it.
func (l *Log) List(ctx context.Context, q Query) ([]Click, bool, error) {
	return l.list(ctx, q, true)
}

// list is List, reading the index only when byIndex.
func (l *Log) list(ctx context.Context, q Query, byIndex bool) ([]Click, bool, error) {
	if q.Limit < 1 {
		return nil, false, errors.New("clicks: list: limit below 1")
	}
	from, to := q.bounds()
	var p pager
	err := l.db.View(func(tx *bolt.Tx) error {
		recs := tx.Bucket(bucket)
		// add adds the record v under k, unless the page is whole before it.
		add := func(k, v []byte, need []byte) error {
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
		}
		if ix := tx.Bucket(indexBucket); byIndex && ix != nil && ix.Get(indexBuilt) != nil {
			if prefix := q.prefix(); prefix != nil {
				return walk(ctx, ix.Cursor(), prefix, from, to, q.Desc, func(k, _ []byte) error {
					if v := recs.Get(k); v != nil {
						return add(k, v, nil)
					}
					return nil
				})
			}
		}
		need := q.field()
		return walk(ctx, recs.Cursor(), nil, from, to, q.Desc, func(k, v []byte) error { return add(k, v, need) })
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, false, err
	}
	page, more := p.done(&q)
	return page, more, nil
}

// prefix is the prefix of the index entries of q's account, or nil when
// q names none.
func (q *Query) prefix() []byte {
	switch {
	case q.APIKey != "":
		return accountPrefix(nil, kindAPIKey, q.APIKey)
	case q.Advertiser != "":
		return accountPrefix(nil, kindAdvertiser, q.Advertiser)
	}
	return nil
}

// walk calls fn with each key of c that is prefix followed by a record
// key whose time t is from <= t < to, and the key's value, in the order
// of the keys, or backwards when desc; fn gets the record key, without
// prefix. A zero from or to is no bound. Times are compared as the keys
// order them, unsigned, so that a bound before 1970 is past every click
// after it in both directions. It stops at fn's first error, or ctx's,
// and returns it.
func walk(ctx context.Context, c *bolt.Cursor, prefix []byte, from, to time.Time, desc bool, fn func(k, v []byte) error) error {
	bound := func(t time.Time) []byte { return append(bytes.Clone(prefix), key(t, 0)...) }
	in := func(k []byte) (ns uint64, ok bool) {
		if len(k) != len(prefix)+16 || !bytes.HasPrefix(k, prefix) {
			return 0, false
		}
		return binary.BigEndian.Uint64(k[len(prefix):]), true
	}
	var k, v []byte
	next := c.Next
	if desc {
		next = c.Prev
		// From the last key before to's: past every record key of prefix
		// when to is no bound.
		end := append(bytes.Clone(prefix), bytes.Repeat([]byte{0xff}, 17)...)
		if !to.IsZero() {
			end = bound(to)
		}
		if k, _ = c.Seek(end); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
	} else if from.IsZero() && len(prefix) == 0 {
		k, v = c.First()
	} else if from.IsZero() {
		k, v = c.Seek(prefix)
	} else {
		k, v = c.Seek(bound(from))
	}
	for ; k != nil; k, v = next() {
		ns, ok := in(k)
		if !ok || !desc && !to.IsZero() && ns >= uint64(to.UnixNano()) || desc && !from.IsZero() && ns < uint64(from.UnixNano()) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(k[len(prefix):], v); err != nil {
			return err
		}
	}
	return nil
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

// bounds are the times q's clicks may have, from its range and cursor:
// from <= Time < to, a zero time no bound.
func (q *Query) bounds() (from, to time.Time) {
	from, to = q.From, q.To
	if q.After.Time.IsZero() {
		return from, to
	}
	if !q.Desc && q.After.Time.After(from) {
		from = q.After.Time
	}
	if end := q.After.Time.Add(1); q.Desc && (to.IsZero() || end.Before(to)) {
		to = end
	}
	return from, to
}

var errPageFull = errors.New("page full")

// pager gathers a page of a listing from a scan in the order of time,
// or backwards when the listing is Desc.
type pager struct{ page []Click }

// full reports whether the page holds more than q.Limit clicks and the
// scan is past its last click's nanosecond, at ns: since a scan orders a
// nanosecond's clicks as they came and a listing by their IDs, the page
// is whole only once all of them are read.
func (p *pager) full(q *Query, ns int64) bool {
	if len(p.page) <= q.Limit {
		return false
	}
	last := p.page[len(p.page)-1].Time.UnixNano()
	return !q.Desc && ns > last || q.Desc && ns < last
}

func (p *pager) add(q *Query, c Click) {
	if q.keeps(&c) {
		p.page = append(p.page, c)
	}
}

// done returns the page's first q.Limit clicks in listing order, and
// whether more follow.
func (p *pager) done(q *Query) ([]Click, bool) {
	slices.SortStableFunc(p.page, func(a, b Click) int { return q.compare(&a, &b) })
	if len(p.page) > q.Limit {
		return p.page[:q.Limit], true
	}
	return p.page, false
}

// ListScan answers q with store's Scan: from q.After (or q.From) to
// q.To, until the page is full and the clicks of its last nanosecond are
// all read. A Desc listing reads the whole range up to q.After.
func ListScan(ctx context.Context, store Store, q Query) ([]Click, bool, error) {
	if q.Limit < 1 {
		return nil, false, errors.New("clicks: list: limit below 1")
	}
	var p pager
	from, to := q.bounds()
	err := store.Scan(ctx, from, to, func(c Click) error {
		if !q.Desc && p.full(&q, c.Time.UnixNano()) {
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
