package clicks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/goccy/go-json"
	bolt "go.etcd.io/bbolt"
)

// Spooled is a click a Spool keeps, judged where it was spooled, with the
// Use that settles it again where it is shipped.
type Spooled struct {
	Click Click `json:"click"`
	Use   Use   `json:"use"`
}

// ErrRefused wraps a Shipper's error when the record refuses what was
// shipped for what it is (a value it cannot keep), not for being
// unreachable: shipping it again would fail again.
var ErrRefused = errors.New("the record refuses it")

// ShipHorizon is how old a spooled click may be when it is shipped and
// still bill. The shared record judges a click by its link's decision
// (used once), by its network's claims of the AdWindow before it and of
// its UTC day, and by its prefix's (IPv6 /48's or IPv4 /24's) counts of
// that day, on its ad and on all. Postgres keeps a network's claims three
// days behind its newest and the prefixes' counts of the newest click's
// day and the two before, so it holds them for a click of the last two days; it keeps a
// decision ShipHorizon and an hour past the link's expiry, so a click
// made before the expiry and shipped within the horizon finds the
// decision a live click or another spool used. The hour less is for
// servers' clocks that disagree.
const ShipHorizon = 2*24*time.Hour - time.Hour

// Shipper is the shared record a Spool's clicks belong in (pgstore.Ledger).
type Shipper interface {
	// Ship records the clicks of batch durably in one step, each as
	// Ledger.Record records a click with its Use (one that did not bill
	// keeps its reason; one that billed is settled again), and sets each
	// Click's final Billable and Reason. A click whose ID the record holds
	// already is not recorded again: it gets the verdict recorded then.
	// After an error none of batch is recorded. A click that billed where
	// it was spooled and is shipped more than ShipHorizon after its time,
	// by the shipping server's clock, is ReasonLate: the record may have
	// forgotten the decision, windows and caps that would judge it.
	Ship(ctx context.Context, batch []Spooled) error
	// Ping reports whether the record answers.
	Ping(ctx context.Context) error
}

// ImpressionShipper is the shared record a Spool's impressions belong in
// (pgstore.Impressions).
type ImpressionShipper interface {
	// Ship records imps as Impressions.Append does, under the batch's id,
	// once: a batch shipped again under its id records nothing. repeats
	// is as Append returns it; 0 for a batch shipped before.
	Ship(ctx context.Context, id string, imps []Impression) (repeats int, err error)
}

// spooledImpressions are one beacon's impressions a Spool keeps.
type spooledImpressions struct {
	ID   string       `json:"id"`
	Imps []Impression `json:"imps"`
}

// Spool keeps clicks in the server's bbolt file while the shared record
// does not answer, until they are shipped there. Add and Record are safe
// for concurrent use and share the commits of the file's other stores;
// Ship is called by one goroutine at a time.
type Spool struct {
	db       *bolt.DB
	gc       *groupCommit
	depth    atomic.Int64
	impDepth atomic.Int64 // beacons
}

var _ Ledger = (*Spool)(nil)

var (
	spoolBucket           = []byte("click-spool")
	impressionSpoolBucket = []byte("impression-spool")
	// refusedBucket keeps what the record refused, for an operator: the
	// spooled records as they were, under their spool's keys.
	refusedBucket = []byte("spool-refused")
)

// NewSpool returns the spool kept in db, creating its bucket, with the
// clicks a crash left in it.
func NewSpool(db *bolt.DB) (*Spool, error) {
	for _, b := range [][]byte{spoolBucket, impressionSpoolBucket, refusedBucket, decisionsBucket, windowsBucket} {
		if err := createBucket(db, b); err != nil {
			return nil, fmt.Errorf("clicks: spool: %w", err)
		}
	}
	s := &Spool{db: db, gc: commitsOf(db)}
	if err := db.View(func(tx *bolt.Tx) error {
		s.depth.Store(int64(tx.Bucket(spoolBucket).Stats().KeyN))
		s.impDepth.Store(int64(tx.Bucket(impressionSpoolBucket).Stats().KeyN))
		return nil
	}); err != nil {
		return nil, fmt.Errorf("clicks: spool: %w", err)
	}
	return s, nil
}

// Depth is how many clicks wait in the spool.
func (s *Spool) Depth() int { return int(s.depth.Load()) }

// ImpressionDepth is how many beacons' impressions wait in the spool.
func (s *Spool) ImpressionDepth() int { return int(s.impDepth.Load()) }

// AddImpressions spools one beacon's impressions under the batch's id.
// Once it returns nil they are durable in the file.
func (s *Spool) AddImpressions(ctx context.Context, id string, imps []Impression) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if id == "" || len(imps) == 0 {
		return errors.New("clicks: spool: impressions need their batch's id")
	}
	v, err := json.Marshal(spooledImpressions{ID: id, Imps: imps})
	if err != nil {
		return err
	}
	if err := s.gc.commit(s.db, func(tx *bolt.Tx) error { return appendSeq(tx.Bucket(impressionSpoolBucket), v) }); err != nil {
		return fmt.Errorf("clicks: spool: %w", err)
	}
	s.impDepth.Add(1)
	return nil
}

// ShipImpressions ships up to n of the oldest spooled beacons to to, one
// call each, in the order they were spooled, and then removes them from
// the spool; it returns how many it shipped. A crash between the two
// leaves them spooled, to be shipped again, which to records once.
func (s *Spool) ShipImpressions(ctx context.Context, to ImpressionShipper, n int) (int, error) {
	var keys [][]byte
	var batches []spooledImpressions
	err := s.db.View(func(tx *bolt.Tx) error {
		cur := tx.Bucket(impressionSpoolBucket).Cursor()
		for k, v := cur.First(); k != nil && len(batches) < n; k, v = cur.Next() {
			var b spooledImpressions
			if err := json.Unmarshal(v, &b); err != nil {
				return fmt.Errorf("spooled impressions %x: %w", k, err)
			}
			keys, batches = append(keys, append([]byte(nil), k...)), append(batches, b)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	shipped := 0
	for _, b := range batches {
		if _, err = to.Ship(ctx, b.ID, b.Imps); err != nil {
			break
		}
		shipped++
	}
	if shipped > 0 {
		if cerr := s.gc.commit(s.db, func(tx *bolt.Tx) error { return deleteKeys(tx.Bucket(impressionSpoolBucket), keys[:shipped]) }); cerr != nil {
			return 0, fmt.Errorf("clicks: spool: %w", cerr)
		}
		s.impDepth.Add(-int64(shipped))
	}
	return shipped, err
}

// SetAside moves the oldest spooled click, or with impressions the oldest
// spooled beacon, out of the spool into the file's spool-refused bucket:
// the record refused it (ErrRefused), and the clicks after it must not
// wait for it. It returns the click's or the beacon's id.
func (s *Spool) SetAside(impressions bool) (string, error) {
	from, depth := spoolBucket, &s.depth
	if impressions {
		from, depth = impressionSpoolBucket, &s.impDepth
	}
	var id string
	err := s.gc.commit(s.db, func(tx *bolt.Tx) error {
		k, v := tx.Bucket(from).Cursor().First()
		if k == nil {
			return errors.New("nothing spooled")
		}
		var rec struct {
			ID    string `json:"id"`
			Click struct {
				ID string `json:"id"`
			} `json:"click"`
		}
		json.Unmarshal(v, &rec) // an id for the log, if it can be read
		id = rec.ID + rec.Click.ID
		if err := appendSeq(tx.Bucket(refusedBucket), v); err != nil {
			return err
		}
		return tx.Bucket(from).Delete(k)
	})
	if err != nil {
		return "", fmt.Errorf("clicks: spool: setting aside: %w", err)
	}
	depth.Add(-1)
	return id, nil
}

// appendSeq puts v in b under b's next sequence number.
func appendSeq(b *bolt.Bucket, v []byte) error {
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return b.Put(k[:], v)
}

// deleteKeys deletes keys from b.
func deleteKeys(b *bolt.Bucket, keys [][]byte) error {
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Record implements Ledger for clicks the shared record could not take:
// it settles c as BoltLedger does, with the decisions and windows of the
// spool's file, in the same commit, but holds no budget beyond its
// currency (the spool has no day's spend; the shipment settles the
// budget), and spools it. Once it returns nil the click is durable in the
// file. c.ID must be set.
func (s *Spool) Record(ctx context.Context, c *Click, u Use) error {
	return s.add(ctx, c, u, true)
}

// Add spools c as it is, judged by the caller, with the Use its shipment
// settles it with again. Once it returns nil the click is durable in the
// file. c.ID must be set.
func (s *Spool) Add(ctx context.Context, c Click, u Use) error {
	return s.add(ctx, &c, u, false)
}

func (s *Spool) add(ctx context.Context, c *Click, u Use, settle bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.Time.IsZero() || c.ID == "" {
		return errors.New("clicks: spool: a click needs its time and id")
	}
	settled := *c
	err := s.gc.commit(s.db, func(tx *bolt.Tx) error {
		settled.Billable, settled.Reason = c.Billable, c.Reason
		if settle && c.Reason == "" {
			reason, err := settleLocally(&s.gc.hot, tx, c, u)
			if err != nil {
				return err
			}
			settled.Billable, settled.Reason = reason == "", reason
		}
		v, err := json.Marshal(Spooled{Click: settled, Use: u})
		if err != nil {
			return err
		}
		return appendSeq(tx.Bucket(spoolBucket), v)
	})
	if err != nil {
		return fmt.Errorf("clicks: spool: %w", err)
	}
	s.depth.Add(1)
	c.Billable, c.Reason = settled.Billable, settled.Reason
	return nil
}

// settleLocally is BoltLedger.settleTx without the day's spend: a click
// in another currency than its budget's is over budget all the same.
func settleLocally(h *hotIndex, tx *bolt.Tx, c *Click, u Use) (string, error) {
	if u.OtherCurrency(c) {
		return ReasonOverBudget, nil
	}
	if u.D != "" {
		if !c.Time.Before(u.Expires) {
			return ReasonRepeat, nil
		}
		first, err := useDecision(h, tx, u.D, c.Time, u.Expires)
		if err != nil || !first {
			return ReasonRepeat, err
		}
	}
	return claim(h, tx, claimOf(c, u))
}

// Ship ships up to n of the oldest spooled clicks to to, in the order
// they were spooled, and then removes them from the spool: it returns
// them, with the verdicts to gave them. A crash between the two leaves
// them spooled, to be shipped again, which to records once.
func (s *Spool) Ship(ctx context.Context, to Shipper, n int) ([]Spooled, error) {
	var keys [][]byte
	var batch []Spooled
	err := s.db.View(func(tx *bolt.Tx) error {
		cur := tx.Bucket(spoolBucket).Cursor()
		for k, v := cur.First(); k != nil && len(batch) < n; k, v = cur.Next() {
			var sp Spooled
			if err := json.Unmarshal(v, &sp); err != nil {
				return fmt.Errorf("spooled click %x: %w", k, err)
			}
			keys, batch = append(keys, append([]byte(nil), k...)), append(batch, sp)
		}
		return nil
	})
	if err != nil || len(batch) == 0 {
		return nil, err
	}
	if err := to.Ship(ctx, batch); err != nil {
		return nil, err
	}
	if err := s.gc.commit(s.db, func(tx *bolt.Tx) error { return deleteKeys(tx.Bucket(spoolBucket), keys) }); err != nil {
		return nil, fmt.Errorf("clicks: spool: %w", err)
	}
	s.depth.Add(-int64(len(batch)))
	return batch, nil
}
