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

	down  atomic.Bool
	mu    sync.Mutex
	cause error // why the record is down, while it is
	// changed is closed, and replaced, whenever a shipment or a ping
	// ends: WaitShipped's signal.
	changed chan struct{}
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

var _ Ledger = (*Spooler)(nil)

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
	// Spooled and Shipped, when set, count the clicks spooled and shipped
	// (metrics).
	Spooled func()
	Shipped func(n int)
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
	return &Spooler{primary: primary, to: to, spool: spool, opts: opts, log: log,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), changed: make(chan struct{})}
}

// NewID returns a new click id: 128 random bits, URL-safe.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// errSlow is why a click the record did not answer in time was spooled.
var errSlow = errors.New("no answer in time")

// Record implements Ledger. It fails only when the spool's file does: a
// click the record cannot take is spooled, and the visitor lands. A click
// without an ID gets one.
func (s *Spooler) Record(ctx context.Context, c *Click, u Use) error {
	if c.ID == "" {
		c.ID = NewID()
	}
	if !s.down.Load() {
		err := s.recordThere(ctx, c, u)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		s.degrade(err)
	}
	if s.opts.Decisions != nil || s.opts.Windows != nil {
		if err := Settle(ctx, c, u, s.opts.Decisions, s.opts.Windows); err != nil {
			return err
		}
		err := s.spool.Add(ctx, *c, u)
		if err != nil {
			c.Billable = false
			return err
		}
	} else if err := s.spool.Record(ctx, c, u); err != nil {
		return err
	}
	if s.opts.Spooled != nil {
		s.opts.Spooled()
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return nil
}

// recordThere records c in the primary ledger, waiting at most Wait. A
// record that answers later still holds the click under its ID, and the
// shipment of its spooled copy finds it there.
func (s *Spooler) recordThere(ctx context.Context, c *Click, u Use) error {
	type result struct {
		c   Click
		err error
	}
	done := make(chan result, 1)
	cc := *c
	go func() {
		err := s.primary.Record(context.WithoutCancel(ctx), &cc, u)
		done <- result{cc, err}
	}()
	t := time.NewTimer(s.opts.Wait)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err == nil {
			*c = r.c
		}
		return r.err
	case <-t.C:
		return errSlow
	case <-ctx.Done():
		return ctx.Err()
	}
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
	n := s.spool.Depth()
	switch {
	case cause != nil:
		return fmt.Sprintf("postgres does not answer (%v): %d clicks spooled to the local file", cause, n)
	case n > 0:
		return fmt.Sprintf("%d clicks spooled to the local file, not yet shipped to postgres", n)
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

// WaitShipped returns once the record answers and the spool is empty, or
// with ctx's error.
func (s *Spooler) WaitShipped(ctx context.Context) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if !s.down.Load() && s.spool.Depth() == 0 {
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
func (s *Spooler) Start() { go s.ship() }

// Stop stops the shipping goroutine and waits for it; what is still
// spooled is shipped after the next start.
func (s *Spooler) Stop() {
	close(s.stop)
	<-s.done
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
		var err error
		if s.spool.Depth() > 0 {
			var shipped []Spooled
			shipped, err = s.spool.Ship(ctx, s.to, s.opts.Batch)
			if err == nil && len(shipped) > 0 {
				if s.opts.Shipped != nil {
					s.opts.Shipped(len(shipped))
				}
				if s.spool.Depth() == 0 {
					s.log.Info("the click spool is shipped to postgres")
				}
			}
		} else if s.down.Load() {
			err = s.to.Ping(ctx)
		}
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
		if s.down.Load() {
			s.recover()
		}
		s.signal()
		if s.spool.Depth() > 0 {
			continue
		}
		select {
		case <-s.stop:
			return
		case <-s.kick:
		}
	}
}
