package pages

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Buckets of the bbolt implementation.
var (
	bucketPages  = []byte("pages")
	bucketQueue  = []byte("pages.queue")  // seq -> url, in arrival order
	bucketQueued = []byte("pages.queued") // url -> seq
	bucketMeta   = []byte("pages.meta")
	bucketSites  = []byte("pages.sites") // site key -> jobs queued
	keyQueueLen  = []byte("queue_len")
)

// Bolt is the embedded Store, in the server's bbolt file. Only one process
// opens the file, so holds live in memory: a restart ends them all.
type Bolt struct {
	db      *bolt.DB
	max     int
	perSite int

	mu sync.Mutex
	// held maps each held job to the end of its lease.
	held map[string]time.Time
	wake chan struct{} // closed and replaced when a job may be claimable
	// pushed is when each job was queued by this process; jobs found at
	// open count from opened. Bounded by the queue's maximum.
	pushed map[string]time.Time
	opened time.Time
}

var _ Store = (*Bolt)(nil)

// BoltOption tunes OpenBolt.
type BoltOption func(*Bolt)

// WithPerSite bounds the jobs one site (registered domain) may have queued
// at once, so that one publisher, or anyone holding its public api_key,
// cannot fill the queue for all. The default is a quarter of the queue.
func WithPerSite(n int) BoltOption {
	return func(b *Bolt) { b.perSite = n }
}

// OpenBolt creates the pages buckets in db if needed. maxQueue bounds the
// queue (0 means DefaultMaxQueue).
func OpenBolt(db *bolt.DB, maxQueue int, opts ...BoltOption) (*Bolt, error) {
	if maxQueue <= 0 {
		maxQueue = DefaultMaxQueue
	}
	b := &Bolt{db: db, max: maxQueue, held: make(map[string]time.Time), wake: make(chan struct{}),
		pushed: make(map[string]time.Time), opened: time.Now()}
	for _, o := range opts {
		o(b)
	}
	if b.perSite <= 0 {
		b.perSite = max(1, maxQueue/4)
	}
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketPages, bucketQueue, bucketQueued, bucketMeta, bucketSites} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pages: creating buckets: %w", err)
	}
	return b, nil
}

// Get implements Store.
func (b *Bolt) Get(_ context.Context, url string) (*Record, error) {
	var rec *Record
	err := b.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketPages).Get([]byte(url))
		if v == nil {
			return nil
		}
		rec = new(Record)
		return json.Unmarshal(v, rec)
	})
	if err != nil {
		return nil, fmt.Errorf("pages: get %s: %w", url, err)
	}
	return rec, nil
}

// Push implements Store. The common answers (queued already, queue full)
// come from a read transaction; only an added job costs a write and its
// fsync, done at once rather than batched, since a first request waits on
// it. Writers take turns, so of many concurrent first requests for one
// page only one is put to admit.
func (b *Bolt) Push(_ context.Context, url string, seen time.Time, admit func() error) (bool, error) {
	site := []byte(SiteKey(url))
	check := func(tx *bolt.Tx) (queued bool, err error) {
		if tx.Bucket(bucketQueued).Get([]byte(url)) != nil {
			return true, nil
		}
		if v := tx.Bucket(bucketPages).Get([]byte(url)); v != nil {
			var rec struct{ At time.Time }
			if err := json.Unmarshal(v, &rec); err != nil {
				return false, err
			}
			if rec.At.After(seen) {
				return true, nil // analysed since the caller looked
			}
		}
		if getUint(tx.Bucket(bucketMeta).Get(keyQueueLen)) >= uint64(b.max) {
			return false, ErrQueueFull
		}
		if getUint(tx.Bucket(bucketSites).Get(site)) >= uint64(b.perSite) {
			return false, ErrSiteQueueFull
		}
		return false, nil
	}
	var queued bool
	err := b.db.View(func(tx *bolt.Tx) (err error) {
		queued, err = check(tx)
		return err
	})
	if err != nil || queued {
		return false, b.pushErr(err)
	}
	var added bool
	var admitErr error
	err = b.db.Update(func(tx *bolt.Tx) error {
		added = false
		if queued, err := check(tx); err != nil || queued {
			return err
		}
		if admit != nil {
			if admitErr = admit(); admitErr != nil {
				return admitErr
			}
		}
		queued := tx.Bucket(bucketQueued)
		meta := tx.Bucket(bucketMeta)
		n := getUint(meta.Get(keyQueueLen))
		sites := tx.Bucket(bucketSites)
		if err := sites.Put(site, putUint(getUint(sites.Get(site))+1)); err != nil {
			return err
		}
		q := tx.Bucket(bucketQueue)
		seq, err := q.NextSequence()
		if err != nil {
			return err
		}
		key := putUint(seq)
		if err := q.Put(key, []byte(url)); err != nil {
			return err
		}
		if err := queued.Put([]byte(url), key); err != nil {
			return err
		}
		added = true
		return meta.Put(keyQueueLen, putUint(n+1))
	})
	if admitErr != nil {
		return false, admitErr
	}
	if err != nil {
		return false, b.pushErr(err)
	}
	if added {
		b.mu.Lock()
		b.pushed[url] = time.Now()
		b.wakeLocked()
		b.mu.Unlock()
	}
	return added, nil
}

func (b *Bolt) pushErr(err error) error {
	if err == nil || errors.Is(err, ErrQueueFull) {
		return err
	}
	return fmt.Errorf("pages: push: %w", err)
}

// wakeLocked tells waiting Claims to look again; b.mu is held.
func (b *Bolt) wakeLocked() {
	close(b.wake)
	b.wake = make(chan struct{})
}

// Claim implements Store.
func (b *Bolt) Claim(ctx context.Context, lease time.Duration) (string, error) {
	for {
		b.mu.Lock()
		wake := b.wake
		url, next, err := b.take(time.Now(), lease)
		b.mu.Unlock()
		if err != nil || url != "" {
			return url, err
		}
		if err := waitClaimable(ctx, wake, next); err != nil {
			return "", err
		}
	}
}

// waitClaimable waits until wake is closed, the lease ending at next (when
// not zero) has passed, or ctx is done.
func waitClaimable(ctx context.Context, wake <-chan struct{}, next time.Time) error {
	var expired <-chan time.Time
	if !next.IsZero() {
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-wake:
	case <-expired:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// take holds the oldest job no one holds until now+lease and returns it.
// When every job is held, next is the earliest end of their leases (zero
// when the queue is empty). b.mu is held.
func (b *Bolt) take(now time.Time, lease time.Duration) (url string, next time.Time, err error) {
	err = b.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketQueue).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			end, held := b.held[string(v)]
			if !held || !now.Before(end) {
				url = string(v)
				return nil
			}
			if next.IsZero() || end.Before(next) {
				next = end
			}
		}
		return nil
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("pages: claim: %w", err)
	}
	if url != "" {
		b.held[url] = now.Add(lease)
	}
	return url, next, nil
}

// Extend implements Store. Holds carry no holder, so a hold that
// another Claim took after the lease passed is extended too.
func (b *Bolt) Extend(_ context.Context, url string, lease time.Duration) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	end, held := b.held[url]
	if !held || !now.Before(end) {
		return false, nil
	}
	b.held[url] = now.Add(lease)
	return true, nil
}

// Release implements Store.
func (b *Bolt) Release(_ context.Context, url string) error {
	b.mu.Lock()
	delete(b.held, url)
	b.wakeLocked()
	b.mu.Unlock()
	return nil
}

// Complete implements Store in one transaction: one fsync per analysed
// page.
func (b *Bolt) Complete(_ context.Context, url string, recs ...*Record) error {
	vals := make([][]byte, len(recs))
	for i, r := range recs {
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	err := b.db.Update(func(tx *bolt.Tx) error {
		pb := tx.Bucket(bucketPages)
		for i, r := range recs {
			if r.Source != "" && ownRecord(pb.Get([]byte(r.URL))) {
				continue
			}
			if err := pb.Put([]byte(r.URL), vals[i]); err != nil {
				return err
			}
		}
		queued := tx.Bucket(bucketQueued)
		seq := queued.Get([]byte(url))
		if seq == nil {
			return nil
		}
		if err := tx.Bucket(bucketQueue).Delete(seq); err != nil {
			return err
		}
		if err := queued.Delete([]byte(url)); err != nil {
			return err
		}
		sites := tx.Bucket(bucketSites)
		site := []byte(SiteKey(url))
		switch n := getUint(sites.Get(site)); {
		case n > 1:
			if err := sites.Put(site, putUint(n-1)); err != nil {
				return err
			}
		case n == 1:
			if err := sites.Delete(site); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if n := getUint(meta.Get(keyQueueLen)); n > 0 {
			return meta.Put(keyQueueLen, putUint(n-1))
		}
		return nil
	})
	b.mu.Lock()
	delete(b.held, url)
	if err == nil {
		delete(b.pushed, url)
	}
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("pages: complete %s: %w", url, err)
	}
	return nil
}

// ownRecord reports whether v is a stored record its page's own fetch
// produced (no Source); one that cannot be read is not.
func ownRecord(v []byte) bool {
	if v == nil {
		return false
	}
	var r struct {
		Source string `json:"source"`
	}
	return json.Unmarshal(v, &r) == nil && r.Source == ""
}

// Sweep implements Store.
func (b *Bolt) Sweep(_ context.Context, cutoff time.Time, limit int) (int, error) {
	var old [][]byte
	err := b.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketPages).Cursor()
		for k, v := c.First(); k != nil && len(old) < limit; k, v = c.Next() {
			var r struct {
				At time.Time `json:"at"`
			}
			if json.Unmarshal(v, &r) != nil || r.At.Before(cutoff) {
				old = append(old, append([]byte(nil), k...))
			}
		}
		return nil
	})
	if err != nil || len(old) == 0 {
		return 0, err
	}
	err = b.db.Update(func(tx *bolt.Tx) error {
		pb := tx.Bucket(bucketPages)
		for _, k := range old {
			if err := pb.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pages: sweep: %w", err)
	}
	return len(old), nil
}

// Queued implements Store.
func (b *Bolt) Queued(_ context.Context, url string) (bool, error) {
	var ok bool
	err := b.db.View(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketQueued).Get([]byte(url)) != nil
		return nil
	})
	return ok, err
}

// Oldest implements Store; the time a job was queued is not in the file,
// so jobs left by an earlier process count from when this one opened it.
func (b *Bolt) Oldest(_ context.Context) (at time.Time, ok bool, err error) {
	var url string
	err = b.db.View(func(tx *bolt.Tx) error {
		if _, v := tx.Bucket(bucketQueue).Cursor().First(); v != nil {
			url = string(v)
		}
		return nil
	})
	if err != nil || url == "" {
		return time.Time{}, false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.pushed[url]; ok {
		return t, true, nil
	}
	return b.opened, true, nil
}

// Len implements Store.
func (b *Bolt) Len(_ context.Context) (int, error) {
	var n uint64
	err := b.db.View(func(tx *bolt.Tx) error {
		n = getUint(tx.Bucket(bucketMeta).Get(keyQueueLen))
		return nil
	})
	return int(n), err
}

func putUint(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func getUint(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}
