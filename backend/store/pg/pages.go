package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/adlink/adlink/backend/pages"
)

// Pages is pages.Store in the page_records and page_jobs tables, shared
// by every server on the database: a page queued through one is analysed
// by one of them, once, and its analysis served by all.
//
// A Claim takes the oldest job whose hold has ended with FOR UPDATE SKIP
// LOCKED, so concurrent Claims of every server take different jobs without
// waiting for each other, and holds it until a time the database's clock
// sets, so servers whose clocks differ agree when a lease has passed. A
// hold survives the server that took it: a job whose server was killed is
// claimed again once its lease has passed, not at once. Claims wait for
// work on a LISTEN of the pushes and releases, and on the end of the next
// lease.
//
// Each site's share of the queue holds exactly; the queue's bound too,
// unless more pushes than boundMargin of other pages run at once.
type Pages struct {
	db           *DB
	max, perSite int

	mu sync.Mutex
	// holds maps each job this store's Claims hold to the token of the
	// latest, which its Extend and Release must name.
	holds map[string]int64
}

var _ pages.Store = (*Pages)(nil)

// Pages returns the database's page store. maxQueue bounds the queue (0
// means pages.DefaultMaxQueue) and perSite the jobs of one site (0 means
// a quarter of the queue), as pages.OpenBolt's do. Its Claims wait on a
// connection of the pool that LISTENs until Close.
func (db *DB) Pages(maxQueue, perSite int) *Pages {
	if maxQueue <= 0 {
		maxQueue = pages.DefaultMaxQueue
	}
	if perSite <= 0 {
		perSite = max(1, maxQueue/4)
	}
	db.listenOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		db.stopListen = cancel
		db.listenDone = make(chan struct{})
		go db.listen(ctx)
	})
	return &Pages{db: db, max: maxQueue, perSite: perSite, holds: make(map[string]int64)}
}

// pagesChannel is the channel a push or a release of a job notifies, so
// that the Claims waiting on every server look again.
const pagesChannel = "adlink_page_jobs"

// pollEvery bounds how long a waiting Claim goes without looking at the
// queue, in case a notification was missed while the listening connection
// was being made again.
const pollEvery = 2 * time.Second

// claimTimeout bounds a claim's statement, which its caller's end does
// not cut short.
const claimTimeout = 10 * time.Second

// boundMargin is how close to a bound the queue must be for a push to
// take the lock that makes the pushes near it take turns. Far from it,
// pushes of different pages do not wait for each other.
const boundMargin = 32

// Get implements pages.Store.
func (p *Pages) Get(ctx context.Context, url string) (*pages.Record, error) {
	var data []byte
	err := p.db.rerun(ctx, func() error {
		return p.db.pool.QueryRow(ctx, `SELECT data FROM page_records WHERE url = $1`, []byte(url)).Scan(&data)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: pages: get %s: %w", url, err)
	}
	rec := new(pages.Record)
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, fmt.Errorf("postgres: pages: get %s: %w", url, err)
	}
	return rec, nil
}

// counts reads whether url is queued or has a record newer than seenNS
// (a page analysed since the caller read it, which is not queued again),
// and how many jobs the queue and site hold, each counted up to its bound.
// Complete deletes the job and stores its records in one commit, so a
// push that finds the job gone also finds its records.
func (p *Pages) counts(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, url, site string, seenNS int64) (queued bool, n, ofSite int, err error) {
	err = q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM page_jobs WHERE url = $1)
			OR EXISTS (SELECT 1 FROM page_records WHERE url = $1 AND at_ns > $5),
		(SELECT count(*) FROM (SELECT 1 FROM page_jobs LIMIT $2) q),
		(SELECT count(*) FROM (SELECT 1 FROM page_jobs WHERE site = $3 LIMIT $4) q)`,
		[]byte(url), p.max, []byte(site), p.perSite, seenNS).Scan(&queued, &n, &ofSite)
	return queued, n, ofSite, err
}

// bound returns the error of a push over a bound, or nil.
func (p *Pages) bound(n, ofSite int) error {
	switch {
	case n >= p.max:
		return pages.ErrQueueFull
	case ofSite >= p.perSite:
		return pages.ErrSiteQueueFull
	}
	return nil
}

// Push implements pages.Store. The common answers (queued already, over a
// bound) come from one read; an added job takes a transaction in which
// the pushes of the page take turns, so admit is asked once.
func (p *Pages) Push(ctx context.Context, url string, seen time.Time, admit func() error) (bool, error) {
	site := pages.SiteKey(url)
	seenNS := int64(math.MinInt64)
	if !seen.IsZero() {
		seenNS = nanos(seen)
	}
	var queued bool
	var n, ofSite int
	err := p.db.rerun(ctx, func() (err error) {
		queued, n, ofSite, err = p.counts(ctx, p.db.pool, url, site, seenNS)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: pages: push: %w", err)
	}
	if queued {
		return false, nil
	}
	if err := p.bound(n, ofSite); err != nil {
		return false, err
	}
	var added bool
	var admitErr, boundErr error
	// Not inTx: admit is asked once, so an aborted push is not run again.
	err = pgx.BeginFunc(ctx, beginner{p.db}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(pageLockClass), hash32(url)); err != nil {
			return err
		}
		queued, n, ofSite, err := p.counts(ctx, tx, url, site, seenNS)
		if err != nil || queued {
			return err
		}
		// Near a bound, the pushes that could pass it take turns and count
		// again, seeing what the turns before committed.
		if near := ofSite+boundMargin >= p.perSite; near || n+boundMargin >= p.max {
			if near {
				if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(siteLockClass), hash32(site)); err != nil {
					return err
				}
			}
			if n+boundMargin >= p.max {
				if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, int32(queueLockClass)); err != nil {
					return err
				}
			}
			if _, n, ofSite, err = p.counts(ctx, tx, url, site, seenNS); err != nil {
				return err
			}
		}
		if boundErr = p.bound(n, ofSite); boundErr != nil {
			return boundErr
		}
		if admit != nil {
			if admitErr = admit(); admitErr != nil {
				return admitErr
			}
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO page_jobs (url, site) VALUES ($1, $2)`, []byte(url), []byte(site))
		b.Queue(`SELECT pg_notify($1, '')`, pagesChannel)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		added = true
		return nil
	})
	switch {
	case admitErr != nil:
		return false, admitErr
	case boundErr != nil:
		return false, boundErr
	case err != nil:
		return false, fmt.Errorf("postgres: pages: push: %w", err)
	}
	if added {
		p.db.pageWake.wake()
	}
	return added, nil
}

// hash32 is the second key of a page's or a site's advisory lock.
func hash32(s string) int32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return int32(h.Sum32())
}

// Claim implements pages.Store.
func (p *Pages) Claim(ctx context.Context, lease time.Duration) (string, error) {
	if lease <= 0 {
		return "", fmt.Errorf("postgres: pages: claim: lease %v is not positive", lease)
	}
	token := rand.Int64()
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		woken := p.db.pageWake.wait()
		url, next, err := p.take(ctx, lease, token)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", fmt.Errorf("postgres: pages: claim: %w", err)
		}
		if url != "" {
			p.mu.Lock()
			p.holds[url] = token
			p.mu.Unlock()
			return url, nil
		}
		t := time.NewTimer(min(max(next, time.Millisecond), pollEvery))
		select {
		case <-woken:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		}
		t.Stop()
	}
}

// take holds the oldest job no one holds for lease under token and
// returns it. When there is none, next is how long until the earliest
// lease ends (pollEvery when no job is held).
func (p *Pages) take(ctx context.Context, lease time.Duration, token int64) (url string, next time.Duration, err error) {
	// A claim asked is never cut short: one that committed as its
	// caller stopped would hold the job for a whole lease, its URL lost
	// with the answer. A caller that stopped meanwhile gets the job, and
	// hands it back (Release).
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	var u []byte
	err = p.db.pool.QueryRow(claimCtx, `UPDATE page_jobs
		SET held_until = clock_timestamp() + $1 * interval '1 microsecond', holder = $2
		WHERE seq = (SELECT seq FROM page_jobs WHERE held_until IS NULL OR held_until <= clock_timestamp()
			ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING url`, lease.Microseconds(), token).Scan(&u)
	if err == nil {
		return string(u), 0, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", 0, err
	}
	var micros *int64
	if err := p.db.rerun(ctx, func() error {
		return p.db.pool.QueryRow(ctx, `SELECT (extract(epoch FROM min(held_until) - clock_timestamp()) * 1e6)::bigint
			FROM page_jobs WHERE held_until IS NOT NULL`).Scan(&micros)
	}); err != nil {
		return "", 0, err
	}
	if micros == nil {
		return "", pollEvery, nil
	}
	return "", time.Duration(*micros) * time.Microsecond, nil
}

// holdOf returns the token of this store's hold on url.
func (p *Pages) holdOf(url string) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	token, ok := p.holds[url]
	return token, ok
}

// Extend implements pages.Store: only the hold this store's latest Claim
// of url took is extended.
func (p *Pages) Extend(ctx context.Context, url string, lease time.Duration) (bool, error) {
	token, ok := p.holdOf(url)
	if !ok {
		return false, nil
	}
	// Run twice, it extends the hold once more.
	var tag pgconn.CommandTag
	err := p.db.rerun(ctx, func() (err error) {
		tag, err = p.db.pool.Exec(ctx, `UPDATE page_jobs SET held_until = clock_timestamp() + $1 * interval '1 microsecond'
			WHERE url = $2 AND holder = $3 AND held_until > clock_timestamp()`, lease.Microseconds(), []byte(url), token)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: pages: extend %s: %w", url, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Release implements pages.Store. A hold this store took is ended only
// while it is still that Claim's, so a worker that outlived its lease
// cannot free the job under the worker that took it next.
func (p *Pages) Release(ctx context.Context, url string) error {
	token, ok := p.holdOf(url)
	cond, args := `url = $1`, []any{[]byte(url)}
	if ok {
		cond, args = `url = $1 AND holder = $2`, append(args, token)
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE page_jobs SET held_until = NULL, holder = NULL WHERE `+cond, args...)
	b.Queue(`SELECT pg_notify($1, '')`, pagesChannel)
	err := p.db.inTx(ctx, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
	if err != nil {
		return fmt.Errorf("postgres: pages: release %s: %w", url, err)
	}
	p.forget(url, token, ok)
	p.db.pageWake.wake()
	return nil
}

// forget drops this store's hold on url when it is still the one of
// token.
func (p *Pages) forget(url string, token int64, ok bool) {
	p.mu.Lock()
	if t, held := p.holds[url]; held && ok && t == token {
		delete(p.holds, url)
	}
	p.mu.Unlock()
}

// Complete implements pages.Store in one transaction. A rec with Source
// replaces only a record that is not the page's own.
func (p *Pages) Complete(ctx context.Context, url string, recs ...*pages.Record) error {
	b := &pgx.Batch{}
	for _, r := range recs {
		data, err := json.Marshal(r)
		if err != nil {
			return err
		}
		sql := `INSERT INTO page_records (url, at_ns, own, data) VALUES ($1, $2, $3, $4)
			ON CONFLICT (url) DO UPDATE SET at_ns = EXCLUDED.at_ns, own = EXCLUDED.own, data = EXCLUDED.data`
		if r.Source != "" {
			sql += ` WHERE NOT page_records.own`
		}
		b.Queue(sql, []byte(r.URL), nanos(r.At), r.Source == "", data)
	}
	b.Queue(`DELETE FROM page_jobs WHERE url = $1`, []byte(url))
	token, ok := p.holdOf(url)
	err := p.db.inTx(ctx, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
	if err != nil {
		return fmt.Errorf("postgres: pages: complete %s: %w", url, err)
	}
	p.forget(url, token, ok)
	return nil
}

// Queued implements pages.Store.
func (p *Pages) Queued(ctx context.Context, url string) (bool, error) {
	var queued bool
	err := p.db.rerun(ctx, func() error {
		return p.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM page_jobs WHERE url = $1)`, []byte(url)).Scan(&queued)
	})
	if err != nil {
		return false, fmt.Errorf("postgres: pages: queued %s: %w", url, err)
	}
	return queued, nil
}

// Len implements pages.Store.
func (p *Pages) Len(ctx context.Context) (int, error) {
	var n int
	if err := p.db.rerun(ctx, func() error {
		return p.db.pool.QueryRow(ctx, `SELECT count(*) FROM page_jobs`).Scan(&n)
	}); err != nil {
		return 0, fmt.Errorf("postgres: pages: len: %w", err)
	}
	return n, nil
}

// Oldest implements pages.Store, by the clock of the database that stamps
// each job as it is queued.
func (p *Pages) Oldest(ctx context.Context) (time.Time, bool, error) {
	var at time.Time
	err := p.db.rerun(ctx, func() error {
		return p.db.pool.QueryRow(ctx, `SELECT queued_at FROM page_jobs ORDER BY seq LIMIT 1`).Scan(&at)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("postgres: pages: oldest: %w", err)
	}
	return at, true, nil
}

// Sweep implements pages.Store.
func (p *Pages) Sweep(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	tag, err := p.db.pool.Exec(ctx, `DELETE FROM page_records WHERE url IN
		(SELECT url FROM page_records WHERE at_ns < $1 LIMIT $2)`, nanos(cutoff), limit)
	if err != nil {
		return 0, fmt.Errorf("postgres: pages: sweep: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// waker tells the Claims waiting in this process to look at the queue
// again.
type waker struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel that the next wake closes.
func (w *waker) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

func (w *waker) wake() {
	w.mu.Lock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
	w.mu.Unlock()
}

// listen wakes the waiting Claims at each notification of pagesChannel,
// on a connection of its own, made again after a failure, until ctx ends.
func (db *DB) listen(ctx context.Context) {
	defer close(db.listenDone)
	for ctx.Err() == nil {
		db.listenConn(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// listenConn listens on one connection, taken out of the pool, until it
// fails or ctx ends.
func (db *DB) listenConn(ctx context.Context) {
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return
	}
	conn := c.Hijack()
	defer func() {
		closing, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(closing)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+pagesChannel); err != nil {
		return
	}
	// Pushes made while no connection listened are looked for now.
	db.pageWake.wake()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return
		}
		db.pageWake.wake()
	}
}
