package clicks

import (
	"bytes"
	"context"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// AddDayRows adds rows to the daily grains of db's rollups, as the clicks
// and impressions they count would have: for benchmarks that need months
// of traffic without writing every click.
func AddDayRows(db *bolt.DB, rows []Rollup) error { return addRows(db, rows, false) }

// AddHourRows adds rows to the hourly grain of db's rollups, as AddDayRows
// does to the daily ones.
func AddHourRows(db *bolt.DB, rows []Rollup) error { return addRows(db, rows, true) }

// addRows adds rows to db's grains that are hourly, or daily.
func addRows(db *bolt.DB, rows []Rollup, hourly bool) error {
	return db.Update(func(tx *bolt.Tx) error {
		for g := range grains {
			if grains[g].hourly != hourly {
				continue
			}
			b, err := tx.CreateBucketIfNotExists(grains[g].bucket)
			if err != nil {
				return err
			}
			// In key order: bbolt splits its pages at the commit, so puts
			// out of order into one page move it over and over.
			type kv struct {
				k []byte
				m *Measures
			}
			kvs := make([]kv, len(rows))
			for i := range rows {
				kvs[i] = kv{Grain(g).rowKey(nil, &rows[i]), &rows[i].Measures}
			}
			slices.SortFunc(kvs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
			for _, e := range kvs {
				if err := addRow(b, e.k, e.m); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// AppendClicks appends cs to the click log of db in one transaction.
func AppendClicks(db *bolt.DB, cs []Click) error {
	return db.Update(func(tx *bolt.Tx) error {
		for _, c := range cs {
			put, err := putClick(c)
			if err != nil {
				return err
			}
			if err := put(tx); err != nil {
				return err
			}
		}
		return nil
	})
}

// RecordBare records c as BoltLedger.Record did before rollups and
// spend: its decision, window and log entry in one commit. The baseline
// of what rollups cost.
func RecordBare(l *BoltLedger, c *Click, u Use) error {
	return l.gc.commit(l.db, func(tx *bolt.Tx) error {
		reason, err := l.settleTx(tx, c, u)
		if err != nil {
			return err
		}
		c.Billable, c.Reason = reason == "", reason
		put, err := putClick(*c)
		if err != nil {
			return err
		}
		return put(tx)
	})
}

// ListScanning is l's List without its account index: the scan of the
// range, as before the log had one.
func ListScanning(ctx context.Context, l *Log, q Query) ([]Click, bool, error) {
	return l.list(ctx, q, false)
}

// BuildIndexPart is l's BuildIndex in transactions of batch clicks,
// stopped after stop clicks as a crash would stop it.
func BuildIndexPart(ctx context.Context, l *Log, batch, stop int) error {
	return l.buildIndex(ctx, nil, batch, stop)
}

// DropIndex removes the account index of db's click log, leaving the
// file as it was before the log had one.
func DropIndex(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(indexBucket) })
}

// IndexState is the number of entries in the account index of db's click
// log and whether it is marked built.
func IndexState(db *bolt.DB) (entries int, built bool, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		ix := tx.Bucket(indexBucket)
		if ix == nil {
			return nil
		}
		built = ix.Get(indexBuilt) != nil
		return ix.ForEach(func(k, _ []byte) error {
			if k[0] == kindAPIKey || k[0] == kindAdvertiser {
				entries++
			}
			return nil
		})
	})
	return entries, built, err
}

// AppendUnindexed appends cs to the click log of db as a release from
// before the account index recorded clicks: the records alone.
func AppendUnindexed(db *bolt.DB, cs []Click) error {
	return db.Update(func(tx *bolt.Tx) error {
		for _, c := range cs {
			put, err := putRecord(bucket, c.Time, c)
			if err != nil {
				return err
			}
			if err := put(tx); err != nil {
				return err
			}
		}
		return nil
	})
}
