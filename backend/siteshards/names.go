package siteshards

import (
	"context"
	"time"
)

// How a Service knows the shards the store keeps: it lists their names,
// not their bodies, at start and again when a request names one it does
// not know, so that a request for a shard no replica built costs the
// store nothing but its share of a listing.
const (
	// listEvery is how often the store's names are listed at most,
	// however many requests name shards unknown.
	listEvery = time.Second
	// listSlack is how far before the latest naming a listing saw the
	// next one starts: a write is committed, and the replicas' clocks
	// agree, within it. A shard named earlier than that but committed
	// later is listed once a replica names it again (touchEvery).
	listSlack = 5 * time.Minute
	// listBatch bounds the names one query of a listing reads, and
	// listPages the queries of a listing.
	listBatch = 10_000
	listPages = 10
	// pruneEvery is how often names not named for keepShared, whose rows
	// are deleted, are forgotten.
	pruneEvery = time.Minute
)

// storeNames are the shards the store keeps, as listed; the Service's
// lock guards them.
type storeNames struct {
	set map[string]time.Time // when each was named, as listed
	// since is where the next listing starts; zero before the first.
	since  time.Time
	pruned time.Time
	// next is the listing requests wait for, started only after each of
	// them came; nil when none waits.
	next *listing
	wake chan struct{} // the lister's, when next is set
	done chan struct{} // closed once the lister stopped
}

// listing is a listing of the store's names that requests wait for;
// err is why it failed, set before done is closed.
type listing struct {
	done chan struct{}
	err  error
}

// known tells whether the store keeps a shard named sha, as a listing
// that started after this call says when the names listed so far lack it;
// the error is the listing's, which failed. ctx ending first is a no.
func (s *Service) known(ctx context.Context, sha string) (bool, error) {
	s.mu.Lock()
	if _, ok := s.names.set[sha]; ok {
		s.mu.Unlock()
		return true, nil
	}
	if s.closed {
		s.mu.Unlock()
		return false, nil
	}
	l := s.names.next
	if l == nil {
		l = &listing{done: make(chan struct{})}
		s.names.next = l
	}
	s.mu.Unlock()
	select {
	case s.names.wake <- struct{}{}:
	default: // woken already
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.names.set[sha]
	return ok, l.err
}

// lister lists the store's names for the requests waiting, a listing
// every listEvery at most, until ctx ends.
func (s *Service) lister(ctx context.Context) {
	defer close(s.names.done)
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if l := s.names.next; l != nil {
			close(l.done)
			s.names.next = nil
		}
	}()
	if s.o.Store == nil || s.Budget() == 0 { // no replica builds one
		return
	}
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.names.wake:
		}
		if wait := listEvery - time.Since(last); !last.IsZero() && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		s.mu.Lock()
		l := s.names.next
		s.names.next = nil
		s.mu.Unlock()
		if l == nil {
			continue
		}
		last = time.Now()
		l.err = s.list(ctx)
		close(l.done)
	}
}

// list reads the names of the shards named since the last listing's
// latest, less listSlack, or, the first time, within keepShared.
func (s *Service) list(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, shareTimeout)
	defer cancel()
	now := s.o.Now()
	s.mu.Lock()
	since := s.names.since
	s.mu.Unlock()
	if since.IsZero() {
		since = now.Add(-keepShared)
	}
	var all []Named
	from := since
	for range listPages {
		named, err := s.o.Store.ShardNames(ctx, from, listBatch)
		s.mu.Lock()
		s.stats.Listings++
		s.mu.Unlock()
		if err != nil {
			s.listFailed(err)
			return err
		}
		all = append(all, named...)
		if len(named) < listBatch {
			break
		}
		from = named[len(named)-1].At
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	latest := since
	for _, n := range all {
		if n.At.After(s.names.set[n.SHA256]) {
			s.names.set[n.SHA256] = n.At
		}
		if n.At.After(latest) {
			latest = n.At
		}
	}
	// A name ahead of this replica's clock, from one whose clock runs
	// fast, moves the next listing no further than this clock: else the
	// shards the replicas on time name were never listed again.
	if latest.After(now) {
		latest = now
	}
	if next := latest.Add(-listSlack); next.After(since) {
		since = next
	}
	if len(all) == listPages*listBatch { // the rest next time
		since = from
	}
	s.names.since = since
	if now.Sub(s.names.pruned) >= pruneEvery {
		s.names.pruned = now
		for sha, at := range s.names.set {
			if now.Sub(at) > keepShared+listSlack {
				delete(s.names.set, sha)
			}
		}
	}
	return nil
}

// listFailed logs, once a minute at most, a listing of the store's
// names that failed: the shards not listed are a 404 meanwhile, each
// request counted as a failed read.
func (s *Service) listFailed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := time.Now(); now.Sub(s.fetchLogged) >= time.Minute {
		s.fetchLogged = now
		s.o.Logger.Warn("the shards other replicas built not listed: a page that fetches one from this replica gets a 404 (more such failures are counted, not logged, for a minute)",
			"err", err, "failed_so_far", s.stats.FetchFailed)
	}
}

// listedLocked notes that the store keeps sh, named at.
func (s *Service) listedLocked(sha string, at time.Time) {
	if at.After(s.names.set[sha]) {
		s.names.set[sha] = at
	}
}
