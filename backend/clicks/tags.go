package clicks

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Tags bound the yk_tags that links a page made record. No signature
// binds such a link's yk_tag, so its client can vary it at will, and each
// value would be a report row of its own, kept for good in the rollups.
// Where the rollups are shared (Postgres), so are the Tags, so that the
// bound holds across replicas.
type Tags interface {
	// Admit reports whether tag may be recorded for site on at's UTC day:
	// true when the site's day holds tag already, or held fewer than limit
	// tags and now holds tag too; false, holding nothing new, when it held
	// limit tags, and at once when limit < 1. An admission that returned
	// true is durable. Concurrent admissions of one site and day are judged
	// one after another: the day never holds more than limit tags. A ctx
	// already done refuses with its error, and after any error nothing is
	// held. Tags may forget the days before at's day before.
	Admit(ctx context.Context, site, tag string, at time.Time, limit int) (bool, error)
}

// TagSite is the site Tags count a partner's site's tags under: its
// api_key and site_id, neither able to pass for the other.
func TagSite(apiKey, siteID string) string {
	return strconv.Itoa(len(apiKey)) + ":" + apiKey + siteID
}

// BoltTags are Tags in a bbolt file: a key per day, site and tag held,
// and one per day and site with its count, the day first, so that
// forgetting old days is deleting the keys at the bucket's start.
// Admissions share the commits of the file's other stores.
type BoltTags struct {
	db *bolt.DB
	gc *groupCommit
}

var _ Tags = (*BoltTags)(nil)

var tagsBucket = []byte("yk-tags")

// NewTags returns the Tags kept in db, creating their bucket.
func NewTags(db *bolt.DB) (*BoltTags, error) {
	if err := createBucket(db, tagsBucket); err != nil {
		return nil, fmt.Errorf("clicks: tags: %w", err)
	}
	return &BoltTags{db: db, gc: commitsOf(db)}, nil
}

// Admit implements Tags.
func (g *BoltTags) Admit(ctx context.Context, site, tag string, at time.Time, limit int) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if limit < 1 {
		return false, nil
	}
	day := dayOf(at)
	// The site's count is under its key with no tag; a tag is never "".
	count := binary.AppendUvarint(dayKey(day), uint64(len(site)))
	count = append(count, site...)
	held := append(count[:len(count):len(count)], tag...)
	// A tag held, or a day full, is answered without a write: a day seen
	// full is asked of every new tag (api's tagGate).
	var ok, known bool
	if err := g.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(tagsBucket)
		if b.Get(held) != nil {
			ok, known = true, true
		} else if v := b.Get(count); len(v) == 8 && binary.BigEndian.Uint64(v) >= uint64(limit) {
			known = true
		}
		return nil
	}); err != nil {
		return false, fmt.Errorf("clicks: tags: %w", err)
	}
	if known {
		return ok, nil
	}
	err := g.gc.commit(g.db, func(tx *bolt.Tx) error {
		b := tx.Bucket(tagsBucket)
		if err := forgetTags(b, day); err != nil {
			return err
		}
		ok = false
		if b.Get(held) != nil {
			ok = true
			return nil
		}
		var n uint64
		if v := b.Get(count); len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		if n >= uint64(limit) {
			return nil
		}
		if err := b.Put(count, binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
			return err
		}
		ok = true
		return b.Put(held, []byte{})
	})
	if err != nil {
		return false, fmt.Errorf("clicks: tags: %w", err)
	}
	return ok, nil
}

// forgetTags deletes b's keys of the days before day's day before.
func forgetTags(b *bolt.Bucket, day int64) error {
	keep := dayKey(day - 1)
	c := b.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k[:8], keep) < 0; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
