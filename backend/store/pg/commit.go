package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/adlink/adlink/backend/clicks"
)

// groupCommit runs the clicks of concurrent Records in shared
// transactions, as the bbolt ledger does: clicks that arrive while a
// batch commits wait and go into the next one together, so that a busy
// server costs one round trip and one WAL flush per batch, not per click.
// A caller that finds fewer than maxRunning batches running runs one for
// everything queued (up to maxBatch), then wakes the first caller queued
// meanwhile to run the next. Batches run side by side on connections of
// their own, so that one's WAL flush overlaps the next one's work; their
// rollup rows are the connections' own shards.
type groupCommit struct {
	mu      sync.Mutex
	running int
	queue   []*pendingClick
}

// maxRunning bounds the batches one server runs at once.
const maxRunning = 4

// pendingClick is one click waiting for its batch.
type pendingClick struct {
	network string
	args    []any
	reason  string
	err     error
	done    chan bool // true: lead the next batch
}

// maxBatch bounds the clicks of one transaction, and so how long it
// holds its locks.
const maxBatch = 128

// batchTimeout bounds a batch's transaction: it runs for clicks whose
// requests may have ended, so no one request's context ends it.
const batchTimeout = 30 * time.Second

// commit queues p and returns once its batch is done, p.reason or p.err
// set.
func (g *groupCommit) commit(db *DB, p *pendingClick) {
	p.done = make(chan bool, 1)
	g.mu.Lock()
	if g.running >= maxRunning {
		g.queue = append(g.queue, p)
		g.mu.Unlock()
		// A batch finishing takes p off the queue to lead the next one.
		if lead := <-p.done; !lead {
			return
		}
		g.mu.Lock()
	} else {
		g.running++
	}
	n := min(len(g.queue), maxBatch-1)
	batch := append([]*pendingClick{p}, g.queue[:n]...)
	g.queue = g.queue[n:]
	g.mu.Unlock()

	// Deferred, so that even a panic hands the ledger on and answers
	// every click of the batch.
	for _, q := range batch {
		q.err = errCommitAborted
	}
	defer func() {
		g.mu.Lock()
		if len(g.queue) > 0 {
			next := g.queue[0]
			g.queue = g.queue[1:]
			next.done <- true // it leads in this batch's place
		} else {
			g.running--
		}
		g.mu.Unlock()
		for _, q := range batch {
			if q != p {
				q.done <- false
			}
		}
	}()
	db.recordBatch(batch)
}

var errCommitAborted = &batchError{"the batch was aborted"}

type batchError struct{ s string }

func (e *batchError) Error() string { return "postgres: " + e.s }

// recordBatch records the clicks of batch in one transaction. Should it
// fail, each click is recorded alone, so that a click Postgres refuses
// fails by itself.
func (db *DB) recordBatch(batch []*pendingClick) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	// Clicks of one network take its lock in one turn; batches of other
	// servers take the networks' locks in the same order.
	sort.SliceStable(batch, func(i, j int) bool { return batch[i].network < batch[j].network })
	err := db.runClicks(ctx, batch)
	for _, p := range batch {
		p.err = err
	}
	if err == nil || len(batch) == 1 {
		return
	}
	for _, p := range batch {
		p.err = db.runClicks(ctx, []*pendingClick{p})
	}
}

// runClicks runs adlink_record_click for each of ps in one transaction.
func (db *DB) runClicks(ctx context.Context, ps []*pendingClick) error {
	return db.inTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, p := range ps {
			b.Queue(recordClick, p.args...).QueryRow(func(r pgx.Row) error { return r.Scan(&p.reason) })
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

const recordClick = `SELECT adlink_record_click($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
	$17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)`

// recordArgs are adlink_record_click's arguments for c and u.
func recordArgs(c *clicks.Click, u clicks.Use) []any {
	periods := make([]int64, 0, len(grains))
	dims := make([]string, 0, 9*len(grains))
	for _, k := range rowKeys(clickRollup(c)) {
		periods = append(periods, k.period)
		dims = append(dims, k.dims[:]...)
	}
	var expires int64
	if u.D != "" {
		expires = nanos(u.Expires)
	}
	return []any{nanos(c.Time), clean(c.AdID), clean(c.AdType), clean(c.Type), clean(c.APIKey), clean(c.SiteID),
		clean(c.Criterion), clean(c.YkTag), clean(c.IP), clean(c.UserAgent), clean(c.Country), clean(c.Advertiser),
		c.BidMicros, clean(c.Currency), c.Reason, clean(clicks.Network(c.IP)), clean(u.D), expires, int32(max(u.Limit, 0)),
		u.Budget, dayOf(c.Time), periods, dims, clicks.Reasons, int64(clicks.AdWindow), nanos(c.Time.Add(-forgetAfter)), clean(c.ID)}
}

// clean makes s a string Postgres takes as text: valid UTF-8 without
// NUL, each byte it cannot keep U+FFFD, as a JSON encoder writes it. A
// click's headers are the client's bytes.
func clean(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0 || c >= 0x80 {
			return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
		}
	}
	return s
}

// Ship implements clicks.Shipper: the spooled clicks in one transaction,
// each as Record records it with its Use. A click that did not bill where
// it was spooled keeps its reason; one that billed there is settled again
// here, with the decisions, windows and spend Postgres holds, so that the
// replicas' record is judged by one store. A click whose ID the clicks
// table already holds writes nothing and gets the verdict recorded then:
// shipping a click again (after a crash between the commit and the
// spool's removal, or after a Record whose answer was lost) records it
// once. Each click's Billable and Reason are set to the final verdict.
func (l Ledger) Ship(ctx context.Context, batch []clicks.Spooled) error {
	ps := make([]*pendingClick, len(batch))
	for i := range batch {
		c := &batch[i].Click
		if c.ID == "" || c.Time.IsZero() {
			return fmt.Errorf("postgres: ship: click %d has no id or no time", i)
		}
		ps[i] = &pendingClick{network: clicks.Network(c.IP), args: recordArgs(c, batch[i].Use)}
	}
	ordered := slices.Clone(ps)
	// A network's clicks keep their order; networks are locked in the
	// order every batch takes them.
	sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].network < ordered[j].network })
	ctx, cancel := context.WithTimeout(ctx, batchTimeout)
	defer cancel()
	if err := l.db.runClicks(ctx, ordered); err != nil {
		return fmt.Errorf("postgres: ship: %w", refused(err))
	}
	for i, p := range ps {
		batch[i].Click.Billable, batch[i].Click.Reason = p.reason == "", p.reason
	}
	return nil
}

// Ping implements clicks.Shipper.
func (l Ledger) Ping(ctx context.Context) error { return l.db.Ping(ctx) }

// refused wraps err in clicks.ErrRefused when Postgres refused the data
// itself (a data exception, or an integrity one but a unique id recorded
// concurrently), which shipping it again would meet again.
func refused(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || (strings.HasPrefix(pe.Code, "23") && pe.Code != "23505")) {
		return fmt.Errorf("%w: %w", clicks.ErrRefused, err)
	}
	return err
}
