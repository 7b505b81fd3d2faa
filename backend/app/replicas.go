package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/catalog"
)

// announceTimeout bounds an announcement, which a reload waits for.
const announceTimeout = 5 * time.Second

// replicas keep this replica's catalog with the other replicas' of its
// deployment, those on the same Redis or Postgres. A catalog this replica
// swaps in by a refresh of its own (a tick, SIGHUP, POST /admin/reload) is
// announced; on a catalog another announces, this one reads its feeds
// again and serves that version even where its own checks would refuse it.
// A refresh on another's word announces nothing, so no word goes round for
// ever. Each time the listener (re)connects it hears the announcement
// recorded last, which a replica that was away catches up with; and when
// this replica's feeds, just read, give another catalog than the one
// recorded (or none is), its catalog is the news, and it announces it. A
// replica whose feeds cannot be read, or give another catalog than one
// announced, keeps its own and says it is behind.
type replicas struct {
	live     *live
	versions catalog.Versions
	self     string
	log      *slog.Logger
	wake     chan struct{} // one pending wake-up at most: words coalesce

	mu sync.Mutex
	// last is the announcement made last, by this replica or another;
	// zero before any.
	last catalog.Announcement
	// recorded is set when the listener (re)connected and heard the
	// record, until the worker compared it with the catalog served.
	recorded bool
	// unannounced is a version this replica swapped in that it could not
	// announce (the store did not answer).
	unannounced string
	// seq counts what the listener heard.
	seq uint64
	// counts of announcements sent, failed and heard from others.
	sent, failed, fromOthers int
	// pending, from hearing another catalog than the one served until
	// the worker's read of it ended, is closed then: every click waiting
	// for it (await) shares it.
	pending chan struct{}
	// awaiting, in tests, is called as a click starts to wait.
	awaiting func()

	stop context.CancelFunc
	done sync.WaitGroup
}

// startReplicas has l announce its catalogs on versions and listen to the
// others', until close.
func startReplicas(l *live, versions catalog.Versions, log *slog.Logger) *replicas {
	r := &replicas{live: l, versions: versions, self: replicaID(), wake: make(chan struct{}, 1)}
	r.log = log.With("replica", r.self)
	l.replicas = r
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	r.done.Add(2)
	go func() {
		defer r.done.Done()
		versions.Listen(ctx, r.hear)
	}()
	go func() {
		defer r.done.Done()
		r.work(ctx)
	}()
	r.log.Info("catalog: announcing refreshes to the other replicas and listening to theirs")
	return r
}

// replicaID names this process among the replicas: random, so that two
// replicas never share one.
func replicaID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "r" + hex.EncodeToString(b)
}

// close stops listening; a reload that word started is cut short.
func (r *replicas) close() {
	r.stop()
	r.done.Wait()
}

// agreed is the version the replicas agreed on: the one announced last.
func (r *replicas) agreed() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last.Version
}

// announce tells the other replicas that this one swapped in version by
// a refresh of its own. When the store does not answer, the version is
// announced when it does again.
func (r *replicas) announce(ctx context.Context, version string) {
	r.announceOver(ctx, version, nil)
}

// announceOver announces version, only over the announcement prev when
// prev is not nil.
func (r *replicas) announceOver(ctx context.Context, version string, prev *catalog.Announcement) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceTimeout)
	defer cancel()
	a := catalog.Announcement{Version: version, From: r.self}
	r.mu.Lock()
	seq := r.seq
	r.mu.Unlock()
	var err error
	if prev == nil {
		err = r.versions.Announce(ctx, a)
	} else {
		var done bool
		if done, err = r.versions.AnnounceOver(ctx, a, *prev); err == nil && !done {
			return // another's, announced meanwhile, comes next
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed++
		r.unannounced = version
		r.log.Warn("catalog: the other replicas could not be told of the new catalog; telling them once the store answers",
			"version", version, "err", err)
		return
	}
	r.sent++
	// A word the listener heard meanwhile may be newer: then the listener
	// has the last word, this announcement's own echo included.
	if r.seq == seq {
		r.last = a
	}
	r.unannounced = ""
}

// retry has an announcement that failed tried again now.
func (r *replicas) retry() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unannounced != "" {
		r.wakeUp()
	}
}

// wakeUp wakes the worker; r.mu is held.
func (r *replicas) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default: // a wake-up is pending: it reads the latest
	}
}

// hear takes an announcement from the listener: after each (re)connection
// the one recorded (zero when none is), then each one made.
func (r *replicas) hear(a catalog.Announcement, recorded bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The record read on (re)connecting is the latest word, even when it
	// is none (a Redis started again empty).
	r.last = a
	r.seq++
	if a.From != r.self && !recorded {
		r.fromOthers++
	}
	if recorded {
		r.recorded = true
	}
	if recorded || a.From != r.self {
		r.wakeUp()
		if a.Version != "" && a.Version != r.live.current().Version && r.pending == nil {
			r.pending = make(chan struct{})
		}
	}
}

// settle ends the wait of the clicks waiting for the read the worker just
// ended, and starts one for the next when a wake-up is pending; r.mu is
// held.
func (r *replicas) settle(next bool) {
	if r.pending != nil {
		close(r.pending)
		r.pending = nil
	}
	if next && len(r.wake) > 0 && r.last.Version != "" && r.last.Version != r.live.current().Version {
		r.pending = make(chan struct{})
	}
}

// await waits, while this replica reads a catalog another announced, for
// that read to end, or ctx; it tells whether the catalog served changed
// meanwhile. A replica that is not behind, or whose read ended without
// the catalog (its feeds could not be read), does not wait.
func (r *replicas) await(ctx context.Context) bool {
	was := r.live.current()
	r.mu.Lock()
	pending, hook := r.pending, r.awaiting
	r.mu.Unlock()
	if pending == nil {
		return false
	}
	if hook != nil {
		hook()
	}
	select {
	case <-pending:
		return r.live.current() != was
	case <-ctx.Done():
		return false
	}
}

// work brings the catalog to the version heard last, and announces this
// replica's when it is the news, at each wake-up until ctx ends.
func (r *replicas) work(ctx context.Context) {
	defer func() {
		r.mu.Lock()
		r.settle(false)
		r.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.catchUp(ctx)
		r.mu.Lock()
		r.settle(true)
		r.mu.Unlock()
	}
}

// catchUp brings the catalog to the version heard last, or announces this
// replica's.
func (r *replicas) catchUp(ctx context.Context) {
	r.mu.Lock()
	last, recorded, pending := r.last, r.recorded, r.unannounced
	r.recorded = false
	r.mu.Unlock()
	heard, current := last.Version, r.live.current().Version
	if heard == current {
		r.mu.Lock()
		if r.unannounced == current { // recorded already
			r.unannounced = ""
		}
		r.mu.Unlock()
		return
	}
	if pending != "" && pending == current && !recorded {
		r.announce(ctx, pending)
		return
	}
	if heard != "" {
		res := r.live.reloadAs(ctx, false, last.From)
		if res.Version == heard || ctx.Err() != nil {
			return
		}
		if !recorded || res.Result == resultFailed || res.Result == resultRefused {
			r.log.Warn("catalog: serving another catalog than the other replicas", "version", res.Version,
				"replicas_version", heard, "result", res.Result, "err", res.Error)
			return
		}
	}
	// The record is older than the feeds this replica just read (or there
	// is none): its catalog is the news. Only the record, never a message,
	// leads here, so two replicas whose feeds differ do not answer each
	// other for ever; and it goes only over the record read, not over an
	// announcement made since.
	r.announceOver(ctx, r.live.current().Version, &last)
}

// state is what /readyz says of the replicas' catalog, beside served.
func (r *replicas) state(served string) *api.ReplicasState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &api.ReplicasState{Version: r.last.Version, Behind: !r.last.IsZero() && r.last.Version != served}
}

// counts are the announcements sent, failed and heard from others, and
// whether this replica serves another catalog than the one announced last.
func (r *replicas) counts(served string) (sent, failed, heard int, behind bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent, r.failed, r.fromOthers, !r.last.IsZero() && r.last.Version != served
}
