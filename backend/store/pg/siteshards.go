package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/adlink/adlink/backend/siteshards"
)

// SiteShards are siteshards.Store in the site_shards table: a row per
// shard, by its SHA-256.
type SiteShards struct{ db *DB }

var _ siteshards.Store = SiteShards{}

// SiteShards returns the database's shared site shards.
func (db *DB) SiteShards() SiteShards { return SiteShards{db} }

// PutShard implements siteshards.Store.
func (s SiteShards) PutShard(ctx context.Context, sha string, body []byte, at time.Time) error {
	err := s.db.rerun(ctx, func() error {
		_, err := s.db.pool.Exec(ctx, `INSERT INTO site_shards (sha256, body, named) VALUES ($1, $2, $3)
		ON CONFLICT (sha256) DO UPDATE SET named = greatest(site_shards.named, excluded.named)`, sha, body, nanos(at))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: site shards: %w", err)
	}
	return nil
}

// TouchShard implements siteshards.Store.
func (s SiteShards) TouchShard(ctx context.Context, sha string, at time.Time) (bool, error) {
	var tag pgconn.CommandTag
	err := s.db.rerun(ctx, func() (err error) {
		tag, err = s.db.pool.Exec(ctx, `UPDATE site_shards SET named = greatest(named, $2) WHERE sha256 = $1`, sha, nanos(at))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: site shards: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

// GetShard implements siteshards.Store.
func (s SiteShards) GetShard(ctx context.Context, sha string) ([]byte, error) {
	var body []byte
	err := s.db.rerun(ctx, func() error {
		return s.db.pool.QueryRow(ctx, `SELECT body FROM site_shards WHERE sha256 = $1`, sha).Scan(&body)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("postgres: site shards: %w", err)
	}
	return body, nil
}

// ShardNames implements siteshards.Store: the index on named answers
// it, and no body is read.
func (s SiteShards) ShardNames(ctx context.Context, since time.Time, limit int) ([]siteshards.Named, error) {
	var out []siteshards.Named
	err := s.db.rerun(ctx, func() error {
		out = out[:0]
		rows, err := s.db.pool.Query(ctx, `SELECT sha256, named FROM site_shards WHERE named >= $1 ORDER BY named LIMIT $2`,
			nanos(since), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n siteshards.Named
			var named int64
			if err := rows.Scan(&n.SHA256, &named); err != nil {
				return err
			}
			n.At = fromNanos(named)
			out = append(out, n)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: site shards: %w", err)
	}
	return out, nil
}

// DropShards implements siteshards.Store.
func (s SiteShards) DropShards(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := s.db.pool.Exec(ctx, `DELETE FROM site_shards WHERE sha256 IN
		(SELECT sha256 FROM site_shards WHERE named < $1 ORDER BY named LIMIT $2)`, nanos(before), limit)
	if err != nil {
		return 0, fmt.Errorf("postgres: site shards: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
