package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/metrics"
)

// invalidator returns what POST /admin/invalidate runs: the store's
// clicks.Invalidator (Postgres's with -postgres, else the bbolt file's),
// each advertiser's spend credited on its budget's day in the zone the
// advertisers file served gives it, one line logged per run and the
// clicks counted; after a credit the budget gate served reads the day's
// spend again (budget.Gate.Reread), and shows again the advertisers it
// gave room.
func (a *App) invalidator(log *slog.Logger) (func(context.Context, clicks.Invalidation) (clicks.Credit, error), error) {
	var v clicks.Invalidator
	if a.pg != nil {
		v = a.pg.Invalidator()
	} else {
		bolt, err := clicks.NewInvalidator(a.db)
		if err != nil {
			return nil, err
		}
		v = bolt
	}
	run := Invalidate(v, func() *accounts.Book { return a.Catalog().Accounts }, a.Metrics, log)
	return func(ctx context.Context, inv clicks.Invalidation) (clicks.Credit, error) {
		credit, err := run(ctx, inv)
		if credit.Clicks > 0 && !inv.DryRun {
			// Without -postgres, the epoch syncBudgets reads: its tick
			// reads the spend again, until a read does, should this one
			// fail (Redis down, the flags still up).
			a.credits.Add(1)
			// This server's gate at once; with -postgres, the other
			// replicas' at their next read of the credits' epoch.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), creditReadTimeout)
			defer cancel()
			if err := a.live.accounts().gate.Reread(ctx); err != nil {
				log.Warn("budget: reading the spend again after a credit", "err", err)
			} else {
				a.Metrics.BudgetReread()
			}
		}
		return credit, err
	}, nil
}

// Invalidate is the run of an invalidation over v, as the server and
// adlink invalidate run it: each advertiser's budget zone read from
// book's (nil: UTC), one line logged to log, the clicks credited counted
// in m; a run that failed midway logs what its batches before the error
// credited, with the error, and counts them.
func Invalidate(v clicks.Invalidator, book func() *accounts.Book, m *metrics.Metrics, log *slog.Logger) func(context.Context, clicks.Invalidation) (clicks.Credit, error) {
	return func(ctx context.Context, inv clicks.Invalidation) (clicks.Credit, error) {
		b := book()
		inv.Zone = func(advertiser string) string {
			if b == nil {
				return ""
			}
			budget, _ := b.Budget(advertiser)
			return budget.Zone
		}
		credit, err := v.Invalidate(ctx, inv)
		var refused *clicks.InvalidationError
		if errors.As(err, &refused) {
			return credit, err // nothing was credited
		}
		if !inv.DryRun {
			m.Invalidated(credit.Clicks)
		}
		if err != nil {
			// The batches before the error stay credited.
			log.Error("invalidate", append(inv.LogAttrs(credit), "err", err)...)
			return credit, err
		}
		log.Info("invalidate", inv.LogAttrs(credit)...)
		return credit, nil
	}
}
