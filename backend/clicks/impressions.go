package clicks

import (
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
}

// Impressions is the impression log. BoltImpressions keep it in the
// server's bbolt file; every implementation passes storetest.Impressions
// and is safe for concurrent use.
type Impressions interface {
	// Append records the impressions of one beacon, all or none, and
	// returns once they are durable. Each must have its Time set; a ctx
	// already done refuses them.
	Append(ctx context.Context, imps []Impression) error

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

var impressionsBucket = []byte("impressions")

// NewImpressions returns the Impressions kept in db, creating their
// bucket, and the rollups they add to.
func NewImpressions(db *bolt.DB) (*BoltImpressions, error) {
	for _, b := range [][]byte{impressionsBucket, dayRollups, hourRollups} {
		if err := createBucket(db, b); err != nil {
			return nil, fmt.Errorf("clicks: impressions: %w", err)
		}
	}
	return &BoltImpressions{db: db, gc: commitsOf(db)}, nil
}

// Append implements Impressions.
func (s *BoltImpressions) Append(ctx context.Context, imps []Impression) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	puts := make([]func(*bolt.Tx) error, len(imps))
	for i, imp := range imps {
		if imp.Time.IsZero() {
			return errors.New("clicks: impression without time")
		}
		var err error
		if puts[i], err = putRecord(impressionsBucket, imp.Time, imp); err != nil {
			return err
		}
	}
	err := s.gc.commit(s.db, func(tx *bolt.Tx) error {
		for i, put := range puts {
			if err := put(tx); err != nil {
				return err
			}
			if err := addRollups(tx, imps[i].rollup(), Measures{Impressions: 1}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("clicks: impressions: %w", err)
	}
	return nil
}

// Scan implements Impressions.
func (s *BoltImpressions) Scan(ctx context.Context, from, to time.Time, fn func(Impression) error) error {
	return scanRecords(ctx, s.db, impressionsBucket, from, to, fn)
}
