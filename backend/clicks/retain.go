package clicks

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	bolt "go.etcd.io/bbolt"
)

// RawLog names one of the raw logs whose old rows retention exports and
// removes.
type RawLog string

// The raw logs: every click, every impression.
const (
	ClickLog      RawLog = "clicks"
	ImpressionLog RawLog = "impressions"
)

// RawLogs are the raw logs, in the order retention visits them.
var RawLogs = []RawLog{ClickLog, ImpressionLog}

// Retainer lets the raw rows of the click and impression logs go once they
// are old, day by day, while the rollups that reports read stay. The
// retention job exports a day with ExportDay, makes the export durable,
// and only then removes the day with DeleteDay. BoltRetainer is the bbolt
// one; every implementation passes storetest.Retainer and is safe for
// concurrent use with the logs' writers.
//
// A day is a UTC day, named by its start (midnight UTC). The job only
// visits days that no writer adds to any more (rows are stamped with the
// time they are recorded, and the job's days are long past).
type Retainer interface {
	// OldestDay returns the UTC day of the oldest row in log, and false
	// when log is empty. Rows whose day was deleted are not there.
	OldestDay(ctx context.Context, log RawLog) (day time.Time, ok bool, err error)

	// ExportDay writes each row of log whose Time is in the UTC day that
	// starts at day to w, one JSON object per line, each as Scan returns
	// it (Click or Impression, encoded as encoding/json encodes them),
	// oldest first, and returns how many it wrote. It changes nothing,
	// calls w outside any transaction, and never holds a whole day in
	// one transaction or in memory. It stops at ctx's or w's first error
	// and returns it. day must be a UTC midnight.
	ExportDay(ctx context.Context, log RawLog, day time.Time, w io.Writer) (rows int, err error)

	// DeleteDay removes every row of log whose Time is in the UTC day
	// that starts at day and returns how many it removed. It removes them
	// oldest first, in transactions of a bounded number of rows, each
	// durable when the next begins, so a crash or a ctx done midway leaves
	// an older part of the day removed and the rest in place; calling it
	// again removes the rest, and on a day with no rows it does nothing.
	// The rollups and every other day's rows are left as they are.
	DeleteDay(ctx context.Context, log RawLog, day time.Time) (rows int, err error)

	// ForgetSpendBefore drops the advertisers' daily spend (what budgets
	// are held against) of the budget days (BudgetDay) before day's UTC
	// date; the spend of day and
	// later stays, and reports keep theirs in the rollups. It is
	// idempotent and durable when it returns.
	ForgetSpendBefore(ctx context.Context, day time.Time) error
}

// BoltRetainer is the Retainer of the logs in one bbolt file. Its
// deletions share the commits of the file's other stores.
type BoltRetainer struct {
	db *bolt.DB
	gc *groupCommit
	// batch is the most rows one transaction reads or deletes.
	batch int
}

var _ Retainer = (*BoltRetainer)(nil)

// retainBatch bounds what a transaction of retention reads or deletes, so
// that the clicks sharing a commit with a deletion wait for a small one.
const retainBatch = 2000

// NewRetainer returns the Retainer of db's click and impression logs,
// creating their buckets.
func NewRetainer(db *bolt.DB) (*BoltRetainer, error) {
	if err := createLogBuckets(db); err != nil {
		return nil, fmt.Errorf("clicks: retainer: %w", err)
	}
	for _, b := range [][]byte{impressionsBucket, spendBucket} {
		if err := createBucket(db, b); err != nil {
			return nil, fmt.Errorf("clicks: retainer: %w", err)
		}
	}
	return &BoltRetainer{db: db, gc: commitsOf(db), batch: retainBatch}, nil
}

func bucketOf(log RawLog) ([]byte, error) {
	switch log {
	case ClickLog:
		return bucket, nil
	case ImpressionLog:
		return impressionsBucket, nil
	}
	return nil, fmt.Errorf("clicks: no raw log %q", log)
}

// dayRange is the first key of day's rows and the first key after them.
func dayRange(day time.Time) (from, to []byte, err error) {
	day = day.UTC()
	if !day.Equal(day.Truncate(24 * time.Hour)) {
		return nil, nil, fmt.Errorf("clicks: day %v is not a UTC midnight", day)
	}
	return key(day, 0), key(day.Add(24*time.Hour), 0), nil
}

// OldestDay implements Retainer.
func (r *BoltRetainer) OldestDay(ctx context.Context, log RawLog) (time.Time, bool, error) {
	name, err := bucketOf(log)
	if err != nil {
		return time.Time{}, false, err
	}
	var day time.Time
	var ok bool
	err = r.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(name).Cursor().First()
		if len(k) < 8 {
			return nil
		}
		t := time.Unix(0, int64(binary.BigEndian.Uint64(k[:8]))).UTC()
		day, ok = t.Truncate(24*time.Hour), true
		return ctx.Err()
	})
	return day, ok, err
}

// ExportDay implements Retainer: each line is the JSON the log stored,
// which is the row's encoding/json encoding.
func (r *BoltRetainer) ExportDay(ctx context.Context, log RawLog, day time.Time, w io.Writer) (int, error) {
	name, err := bucketOf(log)
	if err != nil {
		return 0, err
	}
	from, to, err := dayRange(day)
	if err != nil {
		return 0, err
	}
	rows, after := 0, []byte(nil)
	var buf bytes.Buffer
	for {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		buf.Reset()
		n := 0
		err := r.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(name).Cursor()
			var k, v []byte
			if after == nil {
				k, v = c.Seek(from)
			} else if k, v = c.Seek(after); bytes.Equal(k, after) {
				k, v = c.Next()
			}
			for ; k != nil && bytes.Compare(k, to) < 0 && n < r.batch; k, v = c.Next() {
				buf.Write(v)
				buf.WriteByte('\n')
				after = append(after[:0], k...)
				n++
			}
			return nil
		})
		if err != nil {
			return rows, fmt.Errorf("clicks: export: %w", err)
		}
		if n == 0 {
			return rows, nil
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return rows, err
		}
		rows += n
	}
}

// DeleteDay implements Retainer.
func (r *BoltRetainer) DeleteDay(ctx context.Context, log RawLog, day time.Time) (int, error) {
	name, err := bucketOf(log)
	if err != nil {
		return 0, err
	}
	from, to, err := dayRange(day)
	if err != nil {
		return 0, err
	}
	rows := 0
	for {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		n := 0
		err := r.gc.commit(r.db, func(tx *bolt.Tx) error {
			b := tx.Bucket(name)
			// A click's entries in the account index go with it.
			ix := tx.Bucket(indexBucket)
			if log != ClickLog {
				ix = nil
			}
			var keys [][]byte
			c := b.Cursor()
			for k, v := c.Seek(from); k != nil && bytes.Compare(k, to) < 0 && len(keys) < r.batch; k, v = c.Next() {
				if ix != nil {
					if err := unindex(ix, k, v); err != nil {
						return err
					}
				}
				keys = append(keys, bytes.Clone(k))
			}
			for _, k := range keys {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			n = len(keys)
			return nil
		})
		if err != nil {
			return rows, fmt.Errorf("clicks: delete: %w", err)
		}
		if n == 0 {
			return rows, nil
		}
		rows += n
	}
}

// ForgetSpendBefore implements Retainer.
func (r *BoltRetainer) ForgetSpendBefore(ctx context.Context, day time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	end := binary.BigEndian.AppendUint64(nil, uint64(BudgetDayIn(day, time.UTC))^(1<<63))
	for {
		n := 0
		err := r.gc.commit(r.db, func(tx *bolt.Tx) error {
			b := tx.Bucket(spendBucket)
			var keys [][]byte
			c := b.Cursor()
			for k, _ := c.First(); k != nil && bytes.Compare(k, end) < 0 && len(keys) < r.batch; k, _ = c.Next() {
				keys = append(keys, bytes.Clone(k))
			}
			for _, k := range keys {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			n = len(keys)
			return nil
		})
		if err != nil {
			return fmt.Errorf("clicks: forget spend: %w", err)
		}
		if n < r.batch {
			return nil
		}
	}
}
