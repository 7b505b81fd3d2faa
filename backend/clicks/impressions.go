package clicks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Impression is one ad a page showed to a reader: placed, and at least
// half of it in view for a second, as the page's impression beacon
// reports it. Each is the proof its click token stands on.
type Impression struct {
	Time time.Time `json:"time"`
	// The ad's click parameters, as its link carries them.
	AdID      string `json:"ad_id"`
	AdType    string `json:"ad_type"`
	Type      string `json:"type"`
	APIKey    string `json:"api_key"`
	SiteID    string `json:"site_id"`
	Criterion string `json:"criterion"`
	YkTag     string `json:"yk_tag,omitempty"`
	// Page is the URL of the page that showed it.
	Page      string `json:"page"`
	IP        string `json:"ip"`
	UserAgent string `json:"user_agent,omitempty"`
	// Country, Advertiser and Currency are as a Click has them.
	Country    string `json:"country,omitempty"`
	Advertiser string `json:"advertiser,omitempty"`
	Currency   string `json:"currency,omitempty"`
	// Key, when set, is the impression's ImpressionKey: of the
	// impressions of one Key the log records the first it is given and
	// drops the others as repeats. Scan returns it empty.
	Key string `json:"key,omitempty"`
}

// Impressions is the impression log. BoltImpressions keep it in the
// server's bbolt file; every implementation passes storetest.Impressions
// and is safe for concurrent use.
type Impressions interface {
	// Append records the impressions of one beacon, all or none, and
	// returns once they are durable. Each must have its Time set; a ctx
	// already done refuses them. An impression whose Key the log holds
	// already, from this call or an earlier one, is a repeat: it is not
	// recorded nor counted in the rollups, and repeats says how many
	// there were. A Key is held at least ImpressionKeyTTL after the start
	// of its window; one that is not a Key ImpressionKey made is refused.
	Append(ctx context.Context, imps []Impression) (repeats int, err error)

	// Scan calls fn for each impression with from <= Time < to, oldest
	// first (of equal Time, in the order appended); a zero from or to is
	// no bound. It sees every impression whose Append returned before it
	// was called, each field as appended. It stops at fn's first error, or
	// ctx's, and returns it.
	Scan(ctx context.Context, from, to time.Time, fn func(Impression) error) error
}

// BoltImpressions are Impressions in a bbolt file, ordered by time; each
// append adds to the file's rollups (Rollups) in the same commit, and
// shares the commits of the file's other stores.
type BoltImpressions struct {
	db *bolt.DB
	gc *groupCommit
}

var _ Impressions = (*BoltImpressions)(nil)

var (
	impressionsBucket = []byte("impressions")
	// impressionKeysBucket holds the Keys of the impressions recorded,
	// as their 16 bytes, with no value.
	impressionKeysBucket = []byte("impression-keys")
)

// NewImpressions returns the Impressions kept in db, creating their
// bucket, and the rollups they add to.
func NewImpressions(db *bolt.DB) (*BoltImpressions, error) {
	for _, b := range append([][]byte{impressionsBucket, impressionKeysBucket}, rollupBuckets...) {
		if err := createBucket(db, b); err != nil {
			return nil, fmt.Errorf("clicks: impressions: %w", err)
		}
	}
	return &BoltImpressions{db: db, gc: commitsOf(db)}, nil
}

// Append implements Impressions: the keys of the impressions it records
// go to a bucket of their own, ordered by the start of their window, in
// the same commit; each commit forgets a few of the keys past their
// ImpressionKeyTTL.
func (s *BoltImpressions) Append(ctx context.Context, imps []Impression) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	puts := make([]func(*bolt.Tx) error, len(imps))
	keys := make([][]byte, len(imps))
	var last time.Time
	for i, imp := range imps {
		if imp.Time.IsZero() {
			return 0, errors.New("clicks: impression without time")
		}
		var err error
		if keys[i], err = ImpressionKeyBytes(imp.Key); err != nil {
			return 0, err
		}
		imp.Key = "" // it lives in its own bucket
		if puts[i], err = putRecord(impressionsBucket, imp.Time, imp); err != nil {
			return 0, err
		}
		if imp.Time.After(last) {
			last = imp.Time
		}
	}
	repeats := 0
	err := s.gc.commit(s.db, func(tx *bolt.Tx) error {
		repeats = 0
		kb := tx.Bucket(impressionKeysBucket)
		for i, put := range puts {
			if k := keys[i]; k != nil {
				if kb.Get(k) != nil {
					repeats++
					continue
				}
				if err := kb.Put(k, []byte{}); err != nil {
					return err
				}
			}
			if err := put(tx); err != nil {
				return err
			}
			if err := addRollups(tx, imps[i].rollup(), Measures{Impressions: 1}); err != nil {
				return err
			}
		}
		return forgetImpressionKeys(kb, last, 2*len(imps)+8)
	})
	if err != nil {
		return 0, fmt.Errorf("clicks: impressions: %w", err)
	}
	return repeats, nil
}

// forgetImpressionKeys deletes up to n of the keys in b whose window
// started ImpressionKeyTTL or more before now: more than an append adds,
// so that the bucket keeps to the keys of the last ImpressionKeyTTL.
func forgetImpressionKeys(b *bolt.Bucket, now time.Time, n int) error {
	cut := ImpressionKeyCut(now)
	var old [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && len(old) < n && bytes.Compare(k, cut) < 0; k, _ = c.Next() {
		old = append(old, append([]byte(nil), k...))
	}
	return deleteKeys(b, old)
}

// Scan implements Impressions.
func (s *BoltImpressions) Scan(ctx context.Context, from, to time.Time, fn func(Impression) error) error {
	return scanRecords(ctx, s.db, impressionsBucket, from, to, fn)
}
