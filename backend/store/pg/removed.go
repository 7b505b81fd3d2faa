package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/goccy/go-json"
	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/match"
)

// Removals are catalog.Removals in the removed_ads table. log gets the
// rows that do not read, which are left out. Each Removals reads the
// rows once: at its first Share all of them, then those whose seq
// (migration 00016) is above the highest it read; all of them again once
// the sequence that numbers them started over (restartedSeqs).
func (db *DB) Removals(log *slog.Logger) catalog.Removals {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &removals{db: db, log: log}
}

type removals struct {
	db  *DB
	log *slog.Logger

	mu   sync.Mutex // one Share at a time
	read int64      // the highest seq read
	seqs uint32     // the file of the sequence that numbered them
}

var _ catalog.Removals = (*removals)(nil)

// shareSQL records the ads given as arrays in one statement. Replicas
// sharing at once lock their rows in the order of their ids, which the
// arrays are sorted by, so that neither waits for the other in a cycle.
const shareSQL = `INSERT INTO removed_ads (id, ad, until_ns)
SELECT * FROM unnest($1::text[], $2::bytea[], $3::bigint[])
ON CONFLICT (id) DO UPDATE SET ad = excluded.ad, until_ns = excluded.until_ns
WHERE removed_ads.until_ns <= excluded.until_ns`

func (r *removals) Share(ctx context.Context, ads []catalog.RemovedAd, now time.Time) ([]catalog.RemovedAd, error) {
	ids, docs, untils, err := removedRows(ads)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var shared []catalog.RemovedAd
	var read int64
	var seqs uint32
	share := func(tx pgx.Tx) error {
		shared, read = shared[:0], r.read
		var last int64
		if err := tx.QueryRow(ctx, restartedSeqs).Scan(&seqs, &last); err != nil {
			return err
		}
		if seqs != r.seqs || last < read {
			read = 0
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, shareSQL, ids, docs, untils); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM removed_ads WHERE until_ns <= $1`, nanos(now)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, ad, until_ns, seq FROM removed_ads WHERE seq > $1`, read)
		if err != nil {
			return err
		}
		var (
			id         string
			doc        []byte
			until, seq int64
		)
		_, err = pgx.ForEachRow(rows, []any{&id, &doc, &until, &seq}, func() error {
			read = max(read, seq)
			ad, err := decodeRemoved(id, doc, until)
			if err != nil {
				r.log.Warn("removed ads: a row does not read; its ad's click links get 404 here", "id", id, "err", err)
				return nil
			}
			shared = append(shared, ad)
			return nil
		})
		return err
	}
	if err := r.db.inTx(ctx, share); err != nil {
		return nil, fmt.Errorf("postgres: removed ads: %w", err)
	}
	r.read, r.seqs = read, seqs
	return shared, nil
}

// restartedSeqs reads the file of the sequence numbering removed_ads and
// the last number it gave. Both tell a sequence started over (TRUNCATE
// RESTART IDENTITY, ALTER SEQUENCE RESTART, migration 00016 down and up),
// whose numbers below a replica's last read would otherwise never be read:
// a restart gives the sequence a new file, and its numbers go back.
const restartedSeqs = `SELECT pg_relation_filenode('removed_ads_seqs'), last_value FROM removed_ads_seqs`

// removedRows are ads as the columns of their rows, sorted by id, one row
// an id: of two ads with one id, the later Until's.
func removedRows(ads []catalog.RemovedAd) (ids []string, docs [][]byte, untils []int64, err error) {
	ads = slices.Clone(ads)
	slices.SortFunc(ads, func(a, b catalog.RemovedAd) int {
		return cmp.Or(cmp.Compare(a.Ad.ID, b.Ad.ID), b.Until.Compare(a.Until))
	})
	ads = slices.CompactFunc(ads, func(a, b catalog.RemovedAd) bool { return a.Ad.ID == b.Ad.ID })
	for _, a := range ads {
		if a.Ad.ID == "" {
			return nil, nil, nil, fmt.Errorf("postgres: removed ads: an ad without an id")
		}
		doc, err := json.Marshal(removedDoc{Ad: a.Ad, Budget: catalog.SaveBudget(a.Budget)})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("postgres: removed ads: ad %q: %w", a.Ad.ID, err)
		}
		ids, docs, untils = append(ids, a.Ad.ID), append(docs, doc), append(untils, nanos(a.Until))
	}
	return ids, docs, untils, nil
}

// decodeRemoved reads a removed_ads row. What another replica (or another
// version of adlink) wrote is not trusted: the ad must decode and carry
// the row's id.
func decodeRemoved(id string, doc []byte, untilNS int64) (catalog.RemovedAd, error) {
	var d removedDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return catalog.RemovedAd{}, fmt.Errorf("ad: %w", err)
	}
	if d.Ad.ID != id {
		return catalog.RemovedAd{}, fmt.Errorf("ad: id %.80q in the row of %.80q", d.Ad.ID, id)
	}
	return catalog.RemovedAd{Ad: d.Ad, Until: fromNanos(untilNS), Budget: d.Budget.Budget()}, nil
}

// removedDoc is what a removed_ads row's ad column holds: the ad's JSON,
// and beside its fields its advertiser's budget when it was removed, if
// any.
type removedDoc struct {
	match.Ad
	Budget *catalog.SavedBudget `json:"adlink_last_budget,omitempty"`
}
