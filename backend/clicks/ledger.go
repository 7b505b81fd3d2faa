package clicks

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Ledger records judged clicks together with the state that judges them.
// BoltLedger does it in one transaction of the server's bbolt file;
// Sequential does it with separate Decisions, Windows and Store. Every
// implementation passes storetest.Ledger and is safe for concurrent use.
type Ledger interface {
	// Record settles c, which Judge.Check judged at c.Time: a click whose
	// advertiser has spent u.Budget on its day (u.BudgetDay), or whose bid is in another
	// currency than the budget's (Use.OtherCurrency), is ReasonOverBudget; the
	// others are settled as Settle does with the ledger's Decisions and
	// Windows. It appends c as Store.Append does, and adds it to the
	// rollups and, billable, its bid to its advertiser's spend of the day,
	// which it keeps (Use.BilledDay); c.Billable, c.Reason and
	// c.BudgetDay are then final. A click Check refused spends
	// nothing and is appended as it is. Once Record returns nil all of it
	// is durable; after an error the click is neither appended nor
	// billable, and it never leaves the decision unused while a window is
	// claimed for it.
	Record(ctx context.Context, c *Click, u Use) error
}

// Spooling is a Ledger that may keep a click in a spool of its own
// rather than in the shared record, while that does not answer
// (Spooler). A spooled click's verdict is the server's own, not final:
// the record settles the click again when it is shipped, and
// SpoolerOptions.Recorded tells of it then, so that reading the shared
// record for it at the click (the budget gate's read of the day's spend)
// only waits on a record that does not answer.
type Spooling interface {
	Ledger
	// RecordOrSpool is Record, and says whether c was spooled rather than
	// recorded in the shared record; false after an error.
	RecordOrSpool(ctx context.Context, c *Click, u Use) (spooled bool, err error)
}

// BoltLedger is the Ledger of one bbolt file: a click's decision, window
// and log entry are one write, and concurrent clicks share its commit
// (one fsync per batch), so a billable click waits for one commit rather
// than three.
type BoltLedger struct {
	db *bolt.DB
	gc *groupCommit
}

var _ Ledger = (*BoltLedger)(nil)

// NewLedger returns the Ledger kept in db, whose click log, Decisions,
// Windows and rollups are New's, NewDecisions', NewWindows' and
// NewRollups' in the same file.
func NewLedger(db *bolt.DB) (*BoltLedger, error) {
	if err := createLogBuckets(db); err != nil {
		return nil, fmt.Errorf("clicks: ledger: %w", err)
	}
	for _, b := range append([][]byte{decisionsBucket, windowsBucket}, rollupBuckets...) {
		if err := createBucket(db, b); err != nil {
			return nil, fmt.Errorf("clicks: ledger: %w", err)
		}
	}
	return &BoltLedger{db: db, gc: commitsOf(db)}, nil
}

// Record implements Ledger.
func (l *BoltLedger) Record(ctx context.Context, c *Click, u Use) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.Time.IsZero() {
		return errors.New("clicks: click without time")
	}
	settled := *c
	err := l.gc.commit(l.db, func(tx *bolt.Tx) error {
		settled.Billable, settled.Reason = c.Billable, c.Reason
		if c.Reason == "" {
			reason, err := l.settleTx(tx, c, u)
			if err != nil {
				return err
			}
			settled.Billable, settled.Reason = reason == "", reason
		}
		settled.BudgetDay = u.BilledDay(&settled)
		put, err := putClick(settled)
		if err != nil {
			return err
		}
		if err := put(tx); err != nil {
			return err
		}
		if err := addRollups(tx, settled.rollup(), clickMeasures(&settled)); err != nil {
			return err
		}
		return addSpend(tx.Bucket(spendBucket), settled.Advertiser, u.BudgetDay(&settled), settled.Spend())
	})
	if err != nil {
		return fmt.Errorf("clicks: ledger: %w", err)
	}
	c.Billable, c.Reason, c.BudgetDay = settled.Billable, settled.Reason, settled.BudgetDay
	return nil
}

// settleTx is Settle inside one transaction: the reason c does not bill,
// or "".
func (l *BoltLedger) settleTx(tx *bolt.Tx, c *Click, u Use) (string, error) {
	if u.OtherCurrency(c) || u.Budget > 0 && spentOn(tx.Bucket(spendBucket), c.Advertiser, u.BudgetDay(c)) >= u.Budget {
		return ReasonOverBudget, nil
	}
	if u.D != "" {
		if !c.Time.Before(u.Expires) {
			return ReasonRepeat, nil
		}
		first, err := useDecision(&l.gc.hot, tx, u.D, c.Time, u.Expires)
		if err != nil || !first {
			return ReasonRepeat, err
		}
	}
	return claim(&l.gc.hot, tx, claimOf(c, u))
}

// Sequential is a Ledger over separate stores: Settle with Decisions and
// Windows, then Store's Append. A crash between them leaves the decision
// used and the window claimed for a click that was not logged: unbilled,
// never billed twice. It keeps no rollups and no spend, so it holds no
// budget: a server with budgets or reports records through a Ledger that
// does (BoltLedger).
type Sequential struct {
	Decisions Decisions
	Windows   Windows
	Store     Recorder
}

var _ Ledger = Sequential{}

// Record implements Ledger.
func (s Sequential) Record(ctx context.Context, c *Click, u Use) error {
	if err := Settle(ctx, c, u, s.Decisions, s.Windows); err != nil {
		return err
	}
	if err := s.Store.Append(ctx, *c); err != nil {
		c.Billable = false
		return err
	}
	return nil
}
