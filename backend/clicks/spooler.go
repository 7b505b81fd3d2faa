package clicks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Spooler is the Ledger of a server whose clicks belong in a shared
// record (Postgres) that may stop answering. While the record answers, a
// click is recorded there. When the record fails or is slower than Wait,
// the click is judged here (Decisions and Windows, by default those of
// the spool's bbolt file) and spooled to the file, and so are the clicks
// after it, with no wait, until a shipment succeeds. A goroutine ships the
// spool to the record, oldest first, with a growing pause between failed
// tries, and each click is recorded there once (by its ID) whatever
// crashes between. Start it; Stop it before the file closes.
type Spooler struct {
	primary Ledger
	to      Shipper
	spool   *Spool
	opts    SpoolerOptions
	log     *slog.Logger

	down    atomic.Bool
	started atomic.Bool
	// shipping is set while a shipment runs, its Recorded too.
	shipping atomic.Bool
	mu       sync.Mutex
	cause    error // why the record is down, while it is
	// changed is closed, and replaced, whenever a shipment or a ping
	// ends: WaitShipped's signal.
	changed chan struct{}
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	// batch is how many clicks the next shipment carries: 1 after the
	// record refused a batch, until the click it refuses is found.
	batch int
}

var _ Spooling = (*Spooler)(nil)

// SpoolerOptions tune a Spooler; the zero value is its defaults.
type SpoolerOptions struct {
	// Decisions and Windows judge the clicks spooled; nil is the spool
	// file's own, in the spool's commit (Redis's with the file's as their
	// fallback share a decision's single use with the other replicas).
	Decisions Decisions
	Windows   Windows
	// Wait is how long a click waits for the record before it is spooled
	// instead: 1 s when zero.
	Wait time.Duration
	// MinBackoff and MaxBackoff bound the pause after a failed shipment,
	// which doubles from one to the other: 100 ms and 1 s when zero.
	MinBackoff, MaxBackoff time.Duration
	// Batch is how many clicks one shipment carries: 256 when zero.
	Batch int
	// Logger says when the record stops answering and when it is back.
	Logger *slog.Logger
	// Impressions, when set, is where the impressions of the log
	// Spooler.Impressions returns are recorded, each beacon's under an id
	// of its own, and where they ship from the spool.
	Impressions ImpressionShipper
	// Spooled and Shipped, when set, count the clicks spooled and shipped
	// (metrics).
	Spooled func()
	Shipped func(n int)
	// Recorded, when set, is told of each shipment of clicks once the
	// record holds it, with the verdicts the record gave them (the
	// server's budget gate reads the spend they billed, as a live
	// click's). It runs on the shipping goroutine, after the record's
	// answer ended spooling, so that the clicks landing meanwhile go to
	// the record; ctx ends with Stop.
	Recorded func(ctx context.Context, shipped []Spooled)
}

// NewSpooler returns the Ledger that records in primary while it answers
// and spools to spool while it does not; to is where the spool ships
// (primary's record).
func NewSpooler(primary Ledger, to Shipper, spool *Spool, opts SpoolerOptions) *Spooler {
	if opts.Wait <= 0 {
		opts.Wait = time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(time.Second, opts.MinBackoff)
	}
	if opts.Batch <= 0 {
		opts.Batch = 256
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Spooler{primary: primary, to: to, spool: spool, opts: opts, log: log, batch: opts.Batch,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), changed: make(chan struct{})}
}

// NewID returns a new click id: 128 random bits, URL-safe, never
// beginning with '-', which a spreadsheet takes for a formula, so that a
// CSV writes every new id as it is.
func NewID() string {
	var b [16]byte
	for {
		rand.Read(b[:])
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id
		}
	}
}

// errSlow is why a click the record did not answer in time was spooled.
var errSlow = errors.New("no answer in time")

// Record implements Ledger. It fails only when the spool's file does: a
// click the record cannot take is spooled, and the visitor lands. A click
// without an ID gets one.
func (s *Spooler) Record(ctx context.Context, c *Click, u Use) error {
	_, err := s.RecordOrSpool(ctx, c, u)
	return err
}

// RecordOrSpool implements Spooling: it is Record, and says whether c was
// spooled.
func (s *Spooler) RecordOrSpool(ctx context.Context, c *Click, u Use) (spooled bool, err error) {
	if c.ID == "" {
		c.ID = NewID()
	}
	if !s.down.Load() {
		err := s.recordThere(ctx, c, u)
		if err == nil {
			return false, nil
		}
		if ctx.Err() != nil {
			return false, err
		}
		s.degrade(err)
	}
	if s.opts.Decisions != nil || s.opts.Windows != nil {
		if err := Settle(ctx, c, u, s.opts.Decisions, s.opts.Windows); err != nil {
			return false, err
		}
		err := s.spool.Add(ctx, *c, u)
		if err != nil {
			c.Billable = false
			return false, err
		}
	} else if err := s.spool.Record(ctx, c, u); err != nil {
		return false, err
	}
	if s.opts.Spooled != nil {
		s.opts.Spooled()
	}
	s.wake()
	return true, nil
}

// recordThere records c in the primary ledger, waiting at most Wait. A
// record that answers later still holds the click under its ID, and the
// shipment of its spooled copy finds it there.
func (s *Spooler) recordThere(ctx context.Context, c *Click, u Use) error {
	cc := *c
	err := s.within(ctx, func(ctx context.Context) error { return s.primary.Record(ctx, &cc, u) })
	if err == nil {
		*c = cc
	}
	return err
}

// within runs f, which must own what it writes, and waits for it at most
// Wait: after that, or once ctx is done, f goes on alone.
func (s *Spooler) within(ctx context.Context, f func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- f(context.WithoutCancel(ctx)) }()
	t := time.NewTimer(s.opts.Wait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errSlow
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Impressions returns the impression log that records each beacon in
// SpoolerOptions.Impressions under an id of its own while the record
// answers, and spools it while it does not, as clicks are; log reads
// them (Scan). Without SpoolerOptions.Impressions it is log.
func (s *Spooler) Impressions(log Impressions) Impressions {
	if s.opts.Impressions == nil {
		return log
	}
	return spoolingImpressions{s: s, log: log}
}

// spoolingImpressions is the log Spooler.Impressions returns.
type spoolingImpressions struct {
	s   *Spooler
	log Impressions
}

// Append implements Impressions.
// A beacon spooled is not yet known to repeat another: it reports no
// repeats, and the record drops those it has when it is shipped.
func (l spoolingImpressions) Append(ctx context.Context, imps []Impression) (int, error) {
	if len(imps) == 0 {
		return 0, nil
	}
	s, id := l.s, NewID()
	if !s.down.Load() {
		var repeats int
		err := s.within(ctx, func(ctx context.Context) error {
			n, err := s.opts.Impressions.Ship(ctx, id, imps)
			repeats = n
			return err
		})
		if err == nil {
			return repeats, nil
		}
		if ctx.Err() != nil {
			return 0, err
		}
		s.degrade(err)
	}
	if err := s.spool.AddImpressions(ctx, id, imps); err != nil {
		return 0, err
	}
	s.wake()
	return 0, nil
}

// Scan implements Impressions.
func (l spoolingImpressions) Scan(ctx context.Context, from, to time.Time, fn func(Impression) error) error {
	return l.log.Scan(ctx, from, to, fn)
}

// wake tells the shipping goroutine that the spool holds more.
func (s *Spooler) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// spooled reports whether anything waits in the spool.
func (s *Spooler) spooled() bool {
	return s.spool.Depth() > 0 || (s.opts.Impressions != nil && s.spool.ImpressionDepth() > 0)
}

// degrade turns spooling on, saying so once per outage.
func (s *Spooler) degrade(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cause = err
	if !s.down.Swap(true) {
		s.log.Warn("postgres does not answer: clicks are judged here and spooled to the local file until it does", "err", err)
	}
}

// recover turns spooling off: the record answered.
func (s *Spooler) recover() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down.Swap(false) {
		s.log.Info("postgres answers again: clicks are recorded there; the spool is being shipped", "spooled", s.spool.Depth())
	}
	s.cause = nil
}

// Degraded says why the server's clicks are not all in the record, or ""
// when they are: the record does not answer, or clicks wait in the spool.
func (s *Spooler) Degraded() string {
	s.mu.Lock()
	cause := s.cause
	s.mu.Unlock()
	n, imps := s.spool.Depth(), s.spool.ImpressionDepth()
	spooled := fmt.Sprintf("%d clicks", n)
	if imps > 0 {
		spooled += fmt.Sprintf(" and %d impression beacons", imps)
	}
	switch {
	case cause != nil:
		return fmt.Sprintf("postgres does not answer (%v): %s spooled to the local file", cause, spooled)
	case n > 0 || imps > 0:
		return spooled + " spooled to the local file, not yet shipped to postgres"
	}
	return ""
}

// Depth is how many clicks wait in the spool.
func (s *Spooler) Depth() int { return s.spool.Depth() }

// signal wakes WaitShipped.
func (s *Spooler) signal() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// WaitShipped returns once the record answers, the spool is empty and
// the last shipment is done (its Recorded returned), or with ctx's
// error.
func (s *Spooler) WaitShipped(ctx context.Context) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		// The spool before shipping: a shipment that emptied it is
		// still running, or over.
		if !s.down.Load() && !s.spooled() && !s.shipping.Load() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Start starts the goroutine that ships the spool, the clicks a crash
// left in it first.
func (s *Spooler) Start() {
	s.started.Store(true)
	go s.ship()
}

// Stop stops the shipping goroutine and waits for it; what is still
// spooled is shipped after the next start. A Spooler never started
// stops at once.
func (s *Spooler) Stop() {
	close(s.stop)
	if s.started.Load() {
		<-s.done
	}
}

// ship ships the spool whenever it holds clicks, and while the record is
// down and the spool empty, asks the record whether it answers.
func (s *Spooler) ship() {
	defer close(s.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	pause := s.opts.MinBackoff
	for {
		err := s.round(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.degrade(err)
			select {
			case <-s.stop:
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, s.opts.MaxBackoff)
			continue
		}
		pause = s.opts.MinBackoff
		s.signal()
		if s.spooled() {
			continue
		}
		select {
		case <-s.stop:
			return
		case <-s.kick:
		}
	}
}

// round is one turn of the shipping goroutine. It reaches the record with
// a batch of the spooled clicks; with none spooled, with a batch of the
// spooled impressions; with nothing spooled while the record is down,
// with a ping. The record's answer ends spooling, here alone: before
// Recorded is told of the clicks shipped, so that the clicks landing
// while it runs go to the record. A batch of impressions follows one of
// clicks.
func (s *Spooler) round(ctx context.Context) error {
	spooled := s.spooled()
	if !spooled && !s.down.Load() {
		return nil
	}
	if spooled {
		s.shipping.Store(true)
		defer s.shipping.Store(false)
	}
	var (
		shipped []Spooled
		err     error
	)
	switch {
	case s.spool.Depth() > 0:
		shipped, err = s.shipClicks(ctx)
	case spooled:
		err = s.shipImpressions(ctx)
	default:
		err = s.to.Ping(ctx)
	}
	if err != nil {
		return err
	}
	if s.down.Load() {
		s.recover()
	}
	if len(shipped) > 0 {
		if s.opts.Recorded != nil {
			s.opts.Recorded(ctx, shipped)
		}
		if err := s.shipImpressions(ctx); err != nil {
			return err
		}
	}
	if spooled && !s.spooled() {
		s.log.Info("the click spool is shipped to postgres")
	}
	return nil
}

// shipClicks ships a batch of the spooled clicks and returns those the
// record took. When the record refuses a batch, the clicks are shipped
// one at a time until the one it refuses is found; that one is set aside
// (logged, and kept in the file), so that one bad click does not hold
// the rest back.
func (s *Spooler) shipClicks(ctx context.Context) ([]Spooled, error) {
	shipped, err := s.spool.Ship(ctx, s.to, s.batch)
	switch {
	case errors.Is(err, ErrRefused) && s.batch > 1:
		s.batch = 1
		return nil, nil
	case errors.Is(err, ErrRefused):
		id, aerr := s.spool.SetAside(false)
		if aerr != nil {
			return nil, aerr
		}
		s.log.Error("postgres refuses a spooled click: it is set aside in the local file's spool-refused bucket", "click", id, "err", err)
		s.batch = s.opts.Batch
		return nil, nil
	case err != nil:
		return nil, err
	}
	if s.opts.Shipped != nil && len(shipped) > 0 {
		s.opts.Shipped(len(shipped))
	}
	return shipped, nil
}

// shipImpressions ships a batch of the spooled impressions, if any. A
// beacon the record refuses is set aside, as a click is.
func (s *Spooler) shipImpressions(ctx context.Context) error {
	if s.opts.Impressions == nil || s.spool.ImpressionDepth() == 0 {
		return nil
	}
	_, err := s.spool.ShipImpressions(ctx, s.opts.Impressions, s.opts.Batch)
	if errors.Is(err, ErrRefused) {
		id, aerr := s.spool.SetAside(true)
		if aerr != nil {
			return aerr
		}
		s.log.Error("postgres refuses a spooled impression beacon: it is set aside in the local file's spool-refused bucket", "beacon", id, "err", err)
		return nil
	}
	return err
}
