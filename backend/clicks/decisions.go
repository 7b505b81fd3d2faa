package clicks

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Decisions remember which decision ids have been clicked, so that each
// server-made click URL bills at most once (the id is minted for one answer
// and ad, and its signature covers it). BoltDecisions keep them in the
// server's bbolt file; every implementation passes storetest.Decisions and
// is safe for concurrent use.
type Decisions interface {
	// Use marks id used at time at and reports whether this was its first
	// use. expires is when the click URL carrying id stops being billable:
	// a Use at or after expires returns false and records nothing, and
	// the store may forget an id once its expiry has passed.
	//
	// A Use that returned true is durable: a crash after Use returns keeps
	// it, and a restart answers false for id. Concurrent uses of one id
	// are judged one after another: exactly one returns true. A ctx
	// already done refuses the use with its error; after any error
	// nothing is recorded.
	Use(ctx context.Context, id string, at, expires time.Time) (first bool, err error)
}

// BoltDecisions are Decisions in a bbolt file: one bucket per hour of
// expiry, holding the ids that expire in it, so that forgetting expired
// ids is dropping whole buckets. Uses share the commits of the file's
// other stores, the click log's appends and the windows' claims among them.
type BoltDecisions struct {
	db *bolt.DB
	gc *groupCommit
}

var _ Decisions = (*BoltDecisions)(nil)

var decisionsBucket = []byte("click-decisions")

// NewDecisions returns the Decisions kept in db, creating their bucket.
func NewDecisions(db *bolt.DB) (*BoltDecisions, error) {
	if err := createBucket(db, decisionsBucket); err != nil {
		return nil, fmt.Errorf("clicks: decisions: %w", err)
	}
	return &BoltDecisions{db: db, gc: commitsOf(db)}, nil
}

// Use implements Decisions.
func (d *BoltDecisions) Use(ctx context.Context, id string, at, expires time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if !at.Before(expires) {
		return false, nil
	}
	var first bool
	err := d.gc.commit(d.db, func(tx *bolt.Tx) error {
		var err error
		first, err = useDecision(&d.gc.hot, tx, id, at, expires)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("clicks: decisions: %w", err)
	}
	return first, nil
}

// hourKey orders the hours of t by number, as dayKey orders days: every
// expiry in an hour before at's hour has passed at at.
func hourKey(t time.Time) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(t.Unix()/3600)^(1<<63))
	return k[:]
}
