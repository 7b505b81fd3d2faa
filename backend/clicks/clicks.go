// Package clicks is adlink's durable click log: every click the redirect
// accepts is committed before the 302 is written. Store is the log's
// contract; Log keeps it in the server's bbolt file.
package clicks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/goccy/go-json"
	bolt "go.etcd.io/bbolt"
)

// Click is one recorded click on an ad link.
type Click struct {
	// ID is the id the redirect gave the click, unique: a store that
	// holds clicks from many servers (Postgres) records a click under its
	// ID once, however often it is shipped. "" for clicks recorded before
	// clicks had ids.
	ID   string    `json:"id,omitempty"`
	Time time.Time `json:"time"`
	// AdID and AdType are the ad's id and kind (advertiser, product, coupon).
	AdID   string `json:"ad_id"`
	AdType string `json:"ad_type"`
	// Type is the context that showed the ad: search or intext.
	Type      string `json:"type"`
	APIKey    string `json:"api_key"`
	SiteID    string `json:"site_id"`
	Criterion string `json:"criterion"`
	YkTag     string `json:"yk_tag,omitempty"`
	// IP is the client's address (from a trusted proxy's X-Forwarded-For
	// when there is one).
	IP        string `json:"ip"`
	UserAgent string `json:"user_agent,omitempty"`
	// Country is the reader's country (ISO 3166 alpha-2, lower case) from
	// a trusted proxy's header, or "".
	Country string `json:"country,omitempty"`
	// Advertiser, BidMicros and Currency are the ad's advertiser and what
	// a billable click costs it, in millionths of Currency, as the catalog
	// had them at the click.
	Advertiser string `json:"advertiser,omitempty"`
	BidMicros  int64  `json:"bid_micros,omitempty"`
	Currency   string `json:"currency,omitempty"`
	// Billable says whether the click is paid for; Reason says why not
	// (one of Reasons) and is empty for a billable click.
	Billable bool   `json:"billable"`
	Reason   string `json:"reason,omitempty"`
	// BudgetDay is the day of its advertiser's budget (Use.BudgetDay)
	// whose spend a billed click's bid was added to, and which a credit
	// of it takes the bid off (Invalidation.BudgetDay); 0 for a click
	// not billed, or billed before clicks kept it.
	BudgetDay BudgetDay `json:"budget_day,omitempty"`
}

// Spend is what c costs its advertiser: its bid when billable, else 0.
func (c *Click) Spend() int64 {
	if c.Billable {
		return c.BidMicros
	}
	return 0
}

// Recorder is what the redirect handler needs of a click log: Store's
// Append.
type Recorder interface {
	// Append stores c durably before it returns, as Store.Append.
	Append(ctx context.Context, c Click) error
}

// Store is the click log. Log is the embedded Store; every implementation
// passes storetest.Clicks. Implementations are safe for concurrent use.
type Store interface {
	// Append records c and returns once it is durable: a crash after
	// Append returns keeps it. Each call is one click; the log does not
	// deduplicate. c.Time must be set, and a ctx already done refuses the
	// click. After an error the click may not be stored, and never partly.
	Append(ctx context.Context, c Click) error

	// Scan calls fn for each click with from <= Time < to, oldest first
	// (clicks of equal Time in the order they were appended); a zero from
	// or to means no bound. It sees every click whose Append returned
	// before Scan was called, each field as appended (Time the same
	// instant, to the microsecond at least). It stops at fn's first error,
	// or ctx's, and returns it.
	Scan(ctx context.Context, from, to time.Time, fn func(Click) error) error
}

var bucket = []byte("clicks")

// Log is a click log in a bbolt file; safe for concurrent use.
type Log struct {
	db *bolt.DB
	gc *groupCommit
}

var (
	_ Recorder = (*Log)(nil)
	_ Store    = (*Log)(nil)
)

// New returns the click log kept in db, creating its bucket and its
// account index. The index of a file whose clicks were recorded before
// there was one is built by BuildIndex.
func New(db *bolt.DB) (*Log, error) {
	if err := createLogBuckets(db); err != nil {
		return nil, fmt.Errorf("clicks: %w", err)
	}
	return &Log{db: db, gc: commitsOf(db)}, nil
}

// createBucket makes the top-level bucket name in db unless it is there.
func createBucket(db *bolt.DB, name []byte) error {
	return db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(name)
		return err
	})
}

// Append implements Store: it commits c to the file and returns once it is
// fsync'd. Clicks
// that arrive while a commit runs share the next one (group commit): an
// idle log commits a click at once, a busy one costs one fsync per batch,
// not per click. c.Time must be set.
func (l *Log) Append(ctx context.Context, c Click) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.Time.IsZero() {
		return errors.New("clicks: click without time")
	}
	put, err := putClick(c)
	if err != nil {
		return err
	}
	if err := l.gc.commit(l.db, put); err != nil {
		return fmt.Errorf("clicks: append: %w", err)
	}
	return nil
}

// putClick returns the transaction function that stores c and its
// entries in the account index.
func putClick(c Click) (func(*bolt.Tx) error, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("clicks: %w", err)
	}
	return func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucket)
		seq, err := bk.NextSequence()
		if err != nil {
			return err
		}
		k := key(c.Time, seq)
		if err := bk.Put(k, b); err != nil {
			return err
		}
		ix := tx.Bucket(indexBucket)
		if err := accountsOf(&c).index(ix, k); err != nil {
			return err
		}
		// The index has every click up to this one's sequence.
		return ix.SetSequence(seq)
	}, nil
}

// putRecord returns the transaction function that stores v, JSON, in the
// top-level bucket name under its time t.
func putRecord(name []byte, t time.Time, v any) (func(*bolt.Tx) error, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("clicks: %w", err)
	}
	return func(tx *bolt.Tx) error {
		bk := tx.Bucket(name)
		seq, err := bk.NextSequence()
		if err != nil {
			return err
		}
		return bk.Put(key(t, seq), b)
	}, nil
}

// key orders clicks by time; the bucket's sequence, unique for the life of
// the file, keeps two clicks in the same nanosecond apart.
func key(t time.Time, seq uint64) []byte {
	var k [16]byte
	binary.BigEndian.PutUint64(k[:8], uint64(t.UnixNano()))
	binary.BigEndian.PutUint64(k[8:], seq)
	return k[:]
}

// Scan implements Store.
func (l *Log) Scan(ctx context.Context, from, to time.Time, fn func(Click) error) error {
	return scanRecords(ctx, l.db, bucket, from, to, fn)
}

// scanRecords calls fn for each record putRecord stored in the bucket
// name with from <= its time < to, oldest first; a zero from or to means
// no bound.
func scanRecords[T any](ctx context.Context, db *bolt.DB, name []byte, from, to time.Time, fn func(T) error) error {
	return scanRaw(ctx, db, name, from, to, func(k, v []byte) error {
		var r T
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("clicks: record %x: %w", k, err)
		}
		return fn(r)
	})
}

// scanRaw is scanRecords with each record's key and JSON, valid only
// during the call, given to fn as stored.
func scanRaw(ctx context.Context, db *bolt.DB, name []byte, from, to time.Time, fn func(k, v []byte) error) error {
	return db.View(func(tx *bolt.Tx) error {
		cur := tx.Bucket(name).Cursor()
		var k, v []byte
		if from.IsZero() {
			k, v = cur.First()
		} else {
			k, v = cur.Seek(key(from, 0))
		}
		for ; k != nil; k, v = cur.Next() {
			if !to.IsZero() && int64(binary.BigEndian.Uint64(k[:8])) >= to.UnixNano() {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(k, v); err != nil {
				return err
			}
		}
		return nil
	})
}
