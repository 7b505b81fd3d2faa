package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/adlink/adlink/backend/clicks"
)

// groupCommit runs the clicks of concurrent Records in shared
// transactions, as the bbolt ledger does: clicks that arrive while a
// batch commits wait and go into the next one together, so that a busy
// server costs one round trip and one WAL flush per batch, not per click.
// A caller that finds fewer than maxRunning batches running runs one for
// everything queued (up to maxBatch), then wakes the first caller queued
// meanwhile to run the next. Two batches run side by side on connections
// of their own, so that one's WAL flush overlaps the other's work; their
// rollup rows are shards of their own. More would split the clicks
// queued into smaller batches, and a batch's cost is mostly its own, not
// its clicks'.
type groupCommit struct {
	mu      sync.Mutex
	running int
	queue   []*pendingClick
}

// maxRunning bounds the batches one server runs at once.
const maxRunning = 2

// pendingClick is one click waiting for its batch.
type pendingClick struct {
	network string
	click   *clicks.Click
	use     clicks.Use
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

// commit queues p and returns once run has run its batch, p.reason or
// p.err set.
func (g *groupCommit) commit(run func(batch []*pendingClick), p *pendingClick) {
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
	run(batch)
}

var errCommitAborted = &batchError{"the batch was aborted"}

type batchError struct{ s string }

func (e *batchError) Error() string { return "postgres: " + e.s }

// recordBatch records the clicks of batch in one transaction. Should it
// fail, each click is recorded alone, so that a click Postgres refuses
// fails by itself; but after an error that leaves unknown whether the
// batch committed (its reply lost), a click without an id keeps the
// batch's error: recorded again, it would be recorded twice. One with an
// id finds itself, if the batch committed, and gets its verdict.
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
	unknown := !wroteNothing(err)
	for _, p := range batch {
		if unknown && p.click.ID == "" {
			continue // it may be recorded: it keeps the batch's error
		}
		p.err = db.runClicks(ctx, []*pendingClick{p})
	}
}

// runClicks settles and records ps in one transaction: one statement,
// adlink_record_clicks (migrations 00007, 00008, 00014, 00019), which sets each one's
// reason.
// A statement alone is a transaction of its own, committed (its WAL
// flushed) before Postgres answers; the answer is read to the end, so an
// error of the commit is this call's. Aborted for a deadlock or a
// serialization failure, it runs again, nothing of it written. Met by a
// connection the server ended, it runs again (rerun) when each click has
// an id: a second run finds those the first recorded and gives their
// verdicts.
func (db *DB) runClicks(ctx context.Context, ps []*pendingClick) error {
	args := recordArgs(ps)
	var reasons []string
	record := func() error { return db.pool.QueryRow(ctx, recordClicks, args...).Scan(&reasons) }
	if !slices.ContainsFunc(ps, func(p *pendingClick) bool { return p.click.ID == "" }) {
		once := record
		record = func() error { return db.rerun(ctx, once) }
	}
	var err error
	for range maxAttempts {
		if err = ctx.Err(); err != nil {
			return err
		}
		if err = record(); !retryable(err) {
			break
		}
	}
	if err != nil {
		return err
	}
	if len(reasons) != len(ps) {
		return fmt.Errorf("adlink_record_clicks gave %d verdicts for %d clicks", len(reasons), len(ps))
	}
	for i, p := range ps {
		p.reason = reasons[i]
	}
	return nil
}

const recordClicks = `SELECT adlink_record_clicks($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
	$17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33)`

// recordArgs are adlink_record_clicks' arguments for ps: a column of each
// field, one element per click, then the grains and the reasons, then
// each click's IPv6 /48 or IPv4 /24 and its cap (migration 00008), its
// cap on the click's ad (00014), and its budget's day (00019).
func recordArgs(ps []*pendingClick) []any {
	n := len(ps)
	var (
		at, bid, expires, budget, hour, day, forget, budgetDay = make([]int64, n), make([]int64, n), make([]int64, n),
			make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		limit, prefixLimit, prefixAdLimit = make([]int32, n), make([]int32, n), make([]int32, n)
		prefix                            = make([]string, n)
		text                              [16][]string
	)
	for f := range text {
		text[f] = make([]string, n)
	}
	adID, adType, context, apiKey, siteID, criterion, ykTag, ip, userAgent, country, advertiser, currency, reason,
		network, decision, id := text[0], text[1], text[2], text[3], text[4], text[5], text[6], text[7], text[8], text[9],
		text[10], text[11], text[12], text[13], text[14], text[15]
	for i, p := range ps {
		c, u := p.click, p.use
		at[i], bid[i], budget[i], limit[i] = nanos(c.Time), c.BidMicros, u.Budget, int32(max(u.Limit, 0))
		hour[i], day[i], forget[i] = hourOf(c.Time), dayOf(c.Time), forgetBefore(c.Time)
		budgetDay[i] = int64(u.BudgetDay(c))
		if u.D != "" {
			expires[i] = nanos(u.Expires)
		}
		adID[i], adType[i], context[i], apiKey[i], siteID[i] = clean(c.AdID), clean(c.AdType), clean(c.Type),
			clean(c.APIKey), clean(c.SiteID)
		criterion[i], ykTag[i], ip[i], userAgent[i], country[i] = clean(c.Criterion), clean(c.YkTag), clean(c.IP),
			clean(c.UserAgent), clean(c.Country)
		advertiser[i], currency[i], reason[i], network[i] = clean(c.Advertiser), clean(c.Currency), c.Reason,
			clean(p.network)
		decision[i], id[i] = clean(u.D), clean(c.ID)
		if c.Reason == "" && u.OtherCurrency(c) {
			// The budget counts no spend in another currency.
			reason[i] = clicks.ReasonOverBudget
		}
		if p, limit := u.PrefixOf(c); p != "" && (limit > 0 || u.PrefixAdLimit > 0) {
			prefix[i], prefixLimit[i] = p, int32(min(max(limit, 0), math.MaxInt32))
			prefixAdLimit[i] = int32(min(max(u.PrefixAdLimit, 0), math.MaxInt32))
		}
	}
	return []any{at, adID, adType, context, apiKey, siteID, criterion, ykTag, ip, userAgent, country, advertiser,
		bid, currency, reason, network, decision, expires, limit, budget, hour, day, forget, id,
		grainIDs, grainHourly, grainKeeps, clicks.Reasons, int64(clicks.AdWindow), prefix, prefixLimit, prefixAdLimit,
		budgetDay}
}

// grainIDs, grainHourly and grainKeeps describe the rollup grains to
// adlink_record_clicks: each grain, whether its rows are hours, and
// whether it keeps each dimension (nine a grain).
var grainIDs, grainHourly, grainKeeps = func() ([]int16, []bool, []bool) {
	var ids []int16
	var hourly, keeps []bool
	for _, g := range grains {
		ids, hourly = append(ids, int16(g)), append(hourly, g.Hourly())
		for d := range clicks.DimCountry + 1 {
			keeps = append(keeps, g.Keeps(d))
		}
	}
	return ids, hourly, keeps
}()

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
// once. A click older than clicks.ShipHorizon that billed where it was
// spooled is clicks.ReasonLate. Each click's Billable and Reason are set
// to the final verdict.
func (l Ledger) Ship(ctx context.Context, batch []clicks.Spooled) error {
	ps := make([]*pendingClick, len(batch))
	late := time.Now().Add(-clicks.ShipHorizon)
	for i := range batch {
		c := &batch[i].Click
		if c.ID == "" || c.Time.IsZero() {
			return fmt.Errorf("postgres: ship: click %d has no id or no time", i)
		}
		if c.Reason == "" && c.Time.Before(late) {
			// Its network's claims and its prefix's count may be forgotten:
			// judged by them, it could bill past the caps.
			lc := *c
			lc.Billable, lc.Reason = false, clicks.ReasonLate
			c = &lc
		}
		ps[i] = &pendingClick{network: clicks.Network(c.IP), click: c, use: batch[i].Use}
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
		batch[i].Click.BudgetDay = batch[i].Use.BilledDay(&batch[i].Click)
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
