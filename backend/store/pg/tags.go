package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
)

// Tags are clicks.Tags in the yk_tags and yk_tag_days tables: a row per
// tag a site's day holds, and one per site and day with its count.
type Tags struct{ db *DB }

var _ clicks.Tags = Tags{}

// Tags returns the database's tags.
func (db *DB) Tags() Tags { return Tags{db} }

// errTagsFull rolls back the admission of a tag past its site's limit.
var errTagsFull = errors.New("the site's tags are full")

// Admit implements clicks.Tags. The tag's row comes first: a concurrent
// admission of the same tag waits for this one and then finds it. The
// count's update then locks the site's day until the commit.
func (g Tags) Admit(ctx context.Context, site, tag string, at time.Time, limit int) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if limit < 1 {
		return false, nil
	}
	day := at.Unix() / 86400
	site, tag = clean(site), clean(tag)
	err := g.db.inTx(ctx, func(tx pgx.Tx) error {
		if rand.IntN(forgetEvery) == 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM yk_tags WHERE day < $1`, day-1); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM yk_tag_days WHERE day < $1`, day-1); err != nil {
				return err
			}
		}
		held, err := tx.Exec(ctx, `INSERT INTO yk_tags (day, site, tag) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			day, site, tag)
		if err != nil || held.RowsAffected() == 0 {
			return err // held already
		}
		counted, err := tx.Exec(ctx, `INSERT INTO yk_tag_days (day, site, n) VALUES ($1, $2, 1)
			ON CONFLICT (day, site) DO UPDATE SET n = yk_tag_days.n + 1 WHERE yk_tag_days.n < $3`, day, site, limit)
		if err != nil {
			return err
		}
		if counted.RowsAffected() == 0 {
			return errTagsFull
		}
		return nil
	})
	switch {
	case errors.Is(err, errTagsFull):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("postgres: tags: %w", err)
	}
	return true, nil
}
