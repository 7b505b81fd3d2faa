package pages

import (
	"errors"
	"sync"
	"time"
)

// While the store does not answer (a Postgres that is down), lookups are
// answered from what this process has: the pages it answered as analysed
// lately, else pending, so that the widget matches the page itself.
const (
	// recentEntries bounds the answers kept; a full map starts again.
	recentEntries = 20000
	// storeDownRetry is the Retry-After of a page answered pending because
	// the store does not answer.
	storeDownRetry = 5 * time.Second
	// storeDownLogEvery bounds how often a lookup answered so is logged.
	storeDownLogEvery = 10 * time.Second
)

// storeError is an error of the store, told apart from an admit refusal
// and ErrQueueFull.
type storeError struct{ err error }

func (e storeError) Error() string { return e.err.Error() }
func (e storeError) Unwrap() error { return e.err }

// recentAnswers are the analysed answers the service gave lately, by the
// URL looked up.
type recentAnswers struct {
	mu      sync.Mutex
	m       map[string]Result
	lastLog time.Time
	missed  int
}

// remember keeps res, an analysed answer to a lookup of pageURL.
func (s *Service) remember(pageURL string, res *Result) {
	r := &s.recent
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= recentEntries {
		r.m = make(map[string]Result)
	}
	r.m[pageURL] = *res
}

// unavailable answers a lookup of pageURL that the store failed with err:
// the last analysed answer this process gave for it, else pending.
func (s *Service) unavailable(pageURL string, err error) *Result {
	r := &s.recent
	r.mu.Lock()
	res, ok := r.m[pageURL]
	r.missed++
	now := s.o.Now()
	log := r.lastLog.IsZero() || now.Sub(r.lastLog) >= storeDownLogEvery
	missed := r.missed
	if log {
		r.lastLog, r.missed = now, 0
	}
	r.mu.Unlock()
	if log {
		s.log.Warn("the page store does not answer: pages are answered from this process's memory, or pending",
			"err", err, "lookups", missed)
	}
	if ok {
		return &res
	}
	return &Result{Status: StatusPending, URL: pageURL, RetryAfter: storeDownRetry}
}

// isStoreError reports whether err is the store's.
func isStoreError(err error) bool {
	var e storeError
	return errors.As(err, &e)
}
