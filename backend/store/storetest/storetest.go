// Package storetest runs the contracts of adlink's state-keeping interfaces
// against any implementation, through their methods alone: Pages for
// pages.Store, Clicks for clicks.Store, Windows for clicks.Windows,
// Decisions for clicks.Decisions, Tags for clicks.Tags, Ledger for clicks.Ledger, Impressions
// for clicks.Impressions, Retainer for clicks.Retainer, Exports for
// clicks.Exports, Limits for ratelimit.Limiter, Versions for
// catalog.Versions, Removals for catalog.Removals. Each implementation runs the suite from its own
// package's tests, so a new one (a database, a shared cache) proves it
// keeps the same promises:
//
//	func TestStoreContract(t *testing.T) {
//		storetest.Pages(t, func(t *testing.T, b storetest.QueueBounds) storetest.Opener[pages.Store] {
//			dir := t.TempDir()
//			return func() (pages.Store, func() error) { ... open dir ... }
//		})
//	}
//
// The suite runs its cases one after another, each on a fresh backing.
package storetest

import (
	"context"
	"testing"
	"time"
)

// Opener opens a store over one backing (a bbolt file, a database) and
// returns it with the function that closes it. Called again once that
// store is closed, it opens the same backing: what the first store made
// durable must be there. The suite closes each store before it opens the
// next; whatever it leaves open, the Opener's test cleans up.
type Opener[S any] func() (store S, close func() error)

// open opens a store with o and closes it at the end of t unless the test
// closed it first.
func open[S any](t *testing.T, o Opener[S]) (S, func()) {
	t.Helper()
	s, closeFn := o()
	closed := false
	closeOnce := func() {
		t.Helper()
		if closed {
			return
		}
		closed = true
		if err := closeFn(); err != nil {
			t.Fatalf("closing the store: %v", err)
		}
	}
	t.Cleanup(func() {
		if !closed {
			closed = true
			closeFn()
		}
	})
	return s, closeOnce
}

// within returns a context that ends after d, or with t.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
