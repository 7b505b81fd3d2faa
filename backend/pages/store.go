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

// ErrQueueFull is returned by Queue.Push when the queue holds its maximum.
var ErrQueueFull = errors.New("page queue is full")

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
	keyQueueLen  = []byte("queue_len")
)

// Bolt is the embedded Store and Queue, in the server's bbolt file.
type Bolt struct {
	db  *bolt.DB
	max int

	mu       sync.Mutex
	inflight map[string]bool
	wake     chan struct{}
}

var (
	_ Store     = (*Bolt)(nil)
	_ Queue     = (*Bolt)(nil)
	_ completer = (*Bolt)(nil)
)

// OpenBolt creates the pages buckets in db if needed. maxQueue bounds the
// queue (0 means DefaultMaxQueue).
func OpenBolt(db *bolt.DB, maxQueue int) (*Bolt, error) {
	if maxQueue <= 0 {
		maxQueue = DefaultMaxQueue
	}
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketPages, bucketQueue, bucketQueued, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pages: creating buckets: %w", err)
	}
	return &Bolt{db: db, max: maxQueue, inflight: make(map[string]bool), wake: make(chan struct{})}, nil
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
	var queued, full bool
	err := b.db.View(func(tx *bolt.Tx) error {
		queued = tx.Bucket(bucketQueued).Get([]byte(url)) != nil
		full = getUint(tx.Bucket(bucketMeta).Get(keyQueueLen)) >= uint64(b.max)
		return nil
	})
	switch {
	case err != nil:
		return false, fmt.Errorf("pages: push: %w", err)
	case queued:
		return false, nil
	case full:
		return false, ErrQueueFull
	}
	var added bool
	err = b.db.Update(func(tx *bolt.Tx) error {
		added = false
		queued := tx.Bucket(bucketQueued)
		if queued.Get([]byte(url)) != nil {
			return nil
		}
		meta := tx.Bucket(bucketMeta)
		n := getUint(meta.Get(keyQueueLen))
		if n >= uint64(b.max) {
			return ErrQueueFull
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
	if err != nil {
		if errors.Is(err, ErrQueueFull) {
			return false, ErrQueueFull
		}
		return false, fmt.Errorf("pages: push: %w", err)
	}
	if added {
		b.mu.Lock()
		close(b.wake)
		b.wake = make(chan struct{})
		b.mu.Unlock()
	}
	return added, nil
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
		meta := tx.Bucket(bucketMeta)
		if n := getUint(meta.Get(keyQueueLen)); n > 0 {
			return meta.Put(keyQueueLen, putUint(n-1))
		}
		return nil
	})
	b.mu.Lock()
	delete(b.inflight, url)
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("pages: complete %s: %w", url, err)
	}
	return nil
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
