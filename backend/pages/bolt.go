package pages

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/net/publicsuffix"
)

// Record is the stored result of one page's analysis, under the page's
// canonical URL.
type Record struct {
	URL string `json:"url"`
	// Alias, when set, names the canonical URL the page declared; its
	// analysis is stored there.
	Alias string `json:"alias,omitempty"`
	// Failed says the page could not be analysed, for Reason.
	Failed bool   `json:"failed,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Title and Text are the page's title with headings and its main text,
	// reduced to the index criteria they contain (match.Index.Reduce).
	Title string `json:"title,omitempty"`
	Text  string `json:"text,omitempty"`
	Lang  string `json:"lang,omitempty"`
	// At is when the page was analysed or failed.
	At time.Time `json:"at"`
	// Attempts counts the failures in a row; RetryAt is when a failed page
	// may be tried again.
	Attempts int       `json:"attempts,omitempty"`
	RetryAt  time.Time `json:"retry_at,omitzero"`
}

// Store keeps page records. Implementations are safe for concurrent use.
type Store interface {
	// Get returns the record of url, or nil when there is none.
	Get(ctx context.Context, url string) (*Record, error)
	// Put stores records, all or none.
	Put(ctx context.Context, recs ...*Record) error
}

// ErrQueueFull is returned by Queue.Push when the queue holds its maximum,
// or (wrapped, as ErrSiteQueueFull) its maximum for the page's site.
var ErrQueueFull = errors.New("page queue is full")

// ErrSiteQueueFull is returned by Queue.Push when the page's site holds its
// share of the queue; it is an ErrQueueFull.
var ErrSiteQueueFull = fmt.Errorf("%w for this site", ErrQueueFull)

// Queue is the durable queue of pages waiting for analysis. A page is in it
// at most once; it stays until Done, so a job taken by a worker that dies is
// done again after a restart. Implementations are safe for concurrent use.
type Queue interface {
	// Push adds url unless it is queued already, and reports whether it
	// added it. It returns only once the job is durable; ErrQueueFull when
	// the queue is full.
	Push(ctx context.Context, url string) (added bool, err error)
	// Pop blocks until a job no other worker holds is available and
	// returns it, or until ctx is done.
	Pop(ctx context.Context) (url string, err error)
	// Done removes a popped job.
	Done(ctx context.Context, url string) error
	// Queued reports whether url is in the queue.
	Queued(ctx context.Context, url string) (bool, error)
	// Len returns the number of jobs, those being worked on included.
	Len(ctx context.Context) (int, error)
}

// Buckets of the bbolt implementation.
var (
	bucketPages  = []byte("pages")
	bucketQueue  = []byte("pages.queue")  // seq -> url, in arrival order
	bucketQueued = []byte("pages.queued") // url -> seq
	bucketMeta   = []byte("pages.meta")
	bucketSites  = []byte("pages.sites") // site key -> jobs queued
	keyQueueLen  = []byte("queue_len")
)

// Bolt is the embedded Store and Queue, in the server's bbolt file.
type Bolt struct {
	db      *bolt.DB
	max     int
	perSite int

	mu       sync.Mutex
	inflight map[string]bool
	wake     chan struct{}
	// pushed is when each job was queued by this process; jobs found at
	// open count from opened. Bounded by the queue's maximum.
	pushed map[string]time.Time
	opened time.Time
}

var (
	_ Store       = (*Bolt)(nil)
	_ Queue       = (*Bolt)(nil)
	_ completer   = (*Bolt)(nil)
	_ admitPusher = (*Bolt)(nil)
)

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
	b := &Bolt{db: db, max: maxQueue, inflight: make(map[string]bool), wake: make(chan struct{}),
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

// Put implements Store.
func (b *Bolt) Put(_ context.Context, recs ...*Record) error {
	vals := make([][]byte, len(recs))
	for i, r := range recs {
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	return b.db.Batch(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketPages)
		for i, r := range recs {
			if err := bk.Put([]byte(r.URL), vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// Push implements Queue. The common answers (queued already, queue full)
// come from a read transaction; only an added job costs a write and its
// fsync, done at once rather than batched, since a first request waits on
// it.
func (b *Bolt) Push(ctx context.Context, url string) (bool, error) {
	return b.PushAdmit(ctx, url, nil)
}

// PushAdmit is Push with a gate: admit, when not nil, is called once the
// write transaction has found the job neither queued nor over a bound, and
// its error is returned instead of queueing. Writers take turns, so of many
// concurrent first requests for one page only one is put to admit.
func (b *Bolt) PushAdmit(ctx context.Context, url string, admit func() error) (bool, error) {
	site := []byte(siteKey(url))
	check := func(tx *bolt.Tx) (queued bool, err error) {
		if tx.Bucket(bucketQueued).Get([]byte(url)) != nil {
			return true, nil
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
		close(b.wake)
		b.wake = make(chan struct{})
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

// siteKey is what the per-site share of the queue counts by: the page's
// registered domain (eTLD+1), or its host when it has none (an IP address,
// localhost).
func siteKey(pageURL string) string {
	u, err := neturl.Parse(pageURL)
	if err != nil {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	if net.ParseIP(host) != nil || !strings.Contains(host, ".") {
		return host
	}
	if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
		return d
	}
	return host
}

// Pop implements Queue.
func (b *Bolt) Pop(ctx context.Context) (string, error) {
	for {
		b.mu.Lock()
		wake := b.wake
		url, err := b.take()
		b.mu.Unlock()
		if err != nil || url != "" {
			return url, err
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// take returns the oldest job no worker holds, marking it held; b.mu is held.
func (b *Bolt) take() (string, error) {
	var url string
	err := b.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketQueue).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if !b.inflight[string(v)] {
				url = string(v)
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("pages: pop: %w", err)
	}
	if url != "" {
		b.inflight[url] = true
	}
	return url, nil
}

// Done implements Queue.
func (b *Bolt) Done(ctx context.Context, url string) error {
	return b.Complete(ctx, url)
}

// Complete stores recs and removes the job url in one transaction: one
// fsync per analysed page, and no window in which the analysis is stored
// but the job still queued.
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
		site := []byte(siteKey(url))
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
	delete(b.inflight, url)
	if err == nil {
		delete(b.pushed, url)
	}
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("pages: complete %s: %w", url, err)
	}
	return nil
}

// Sweep deletes the records of pages analysed (or failed) before cutoff,
// at most limit of them, and returns how many it deleted. Aliases go with
// their age too.
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

// Release hands a popped job back without doing it, so another Pop may take
// it.
func (b *Bolt) Release(url string) {
	b.mu.Lock()
	delete(b.inflight, url)
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// Queued implements Queue.
func (b *Bolt) Queued(_ context.Context, url string) (bool, error) {
	var ok bool
	err := b.db.View(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketQueued).Get([]byte(url)) != nil
		return nil
	})
	return ok, err
}

// Oldest returns when the oldest queued job was queued (for a job left by
// an earlier process, when this one opened the queue); ok is false when the
// queue is empty.
func (b *Bolt) Oldest() (at time.Time, ok bool, err error) {
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

// Len implements Queue.
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

// backoff is the wait before the next try of a page that failed attempts
// times in a row: base, doubling, at most max.
func backoff(base, max time.Duration, attempts int) time.Duration {
	d := base
	for i := 1; i < attempts && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
