package pgstore

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/catalog"
)

// Versions are the catalog announcements of the replicas on this
// database: the last one in the catalog_version row, and each one sent
// with NOTIFY on a channel named after the schema, so that deployments
// sharing a database in schemas of their own do not hear each other.
// log gets the listener's lost connections.
func (db *DB) Versions(log *slog.Logger) catalog.Versions {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &versions{db: db, log: log}
}

type versions struct {
	db  *DB
	log *slog.Logger
}

var _ catalog.Versions = (*versions)(nil)

// channelSQL names the channel of the connection's schema. A channel is an
// identifier: one longer than 63 bytes is cut, with a hash of the whole.
const channelSQL = `SELECT CASE WHEN length(c) <= 63 THEN c ELSE left(c, 31) || md5(c) END
FROM (SELECT 'adlink_catalog:' || current_schema() AS c) AS n`

// ListenerName is the application_name of the listener's connection, as
// pg_stat_activity shows it.
const ListenerName = "adlink catalog listener"

// listenRetry is how long a listener whose connection failed waits before
// it connects again.
const listenRetry = time.Second

func (v *versions) Announce(ctx context.Context, a catalog.Announcement) error {
	if err := a.Check(); err != nil {
		return err
	}
	// NOTIFY is sent at commit, with the row: a replica that reads the row
	// after the message finds this announcement or a later one.
	return v.db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO catalog_version (id, announcement, at_ns) VALUES (true, $1, $2)
			ON CONFLICT (id) DO UPDATE SET announcement = excluded.announcement, at_ns = excluded.at_ns`,
			a.String(), nanos(time.Now())); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify((`+channelSQL+`), $1)`, a.String())
		return err
	})
}

func (v *versions) AnnounceOver(ctx context.Context, a, prev catalog.Announcement) (bool, error) {
	if err := a.Check(); err != nil {
		return false, err
	}
	var done bool
	err := v.db.inTx(ctx, func(tx pgx.Tx) error {
		// With no row yet, a concurrent insert makes this one do nothing;
		// with one, the row lock orders the updates.
		sql := `INSERT INTO catalog_version (id, announcement, at_ns) VALUES (true, $1, $2) ON CONFLICT (id) DO NOTHING`
		args := []any{a.String(), nanos(time.Now())}
		if !prev.IsZero() {
			sql = `UPDATE catalog_version SET announcement = $1, at_ns = $2 WHERE announcement = $3`
			args = append(args, prev.String())
		}
		tag, err := tx.Exec(ctx, sql, args...)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		done = true
		_, err = tx.Exec(ctx, `SELECT pg_notify((`+channelSQL+`), $1)`, a.String())
		return err
	})
	return done && err == nil, err
}

func (v *versions) Recorded(ctx context.Context) (catalog.Announcement, error) {
	var a catalog.Announcement
	err := v.db.rerun(ctx, func() (err error) {
		a, err = recorded(ctx, v.db.pool.QueryRow)
		return err
	})
	return a, err
}

func recorded(ctx context.Context, queryRow func(context.Context, string, ...any) pgx.Row) (catalog.Announcement, error) {
	var s string
	err := queryRow(ctx, `SELECT announcement FROM catalog_version`).Scan(&s)
	if errors.Is(err, pgx.ErrNoRows) {
		return catalog.Announcement{}, nil
	}
	if err != nil {
		return catalog.Announcement{}, err
	}
	return catalog.ParseAnnouncement(s)
}

func (v *versions) Listen(ctx context.Context, heard func(catalog.Announcement, bool)) {
	catalog.ListenAgain(ctx, v.log, listenRetry, v.listen, heard)
}

// listen listens on a connection of its own, outside the pool, hands
// heard the recorded announcement, then each notification, until the
// connection fails or ctx ends. A server that is gone without closing the
// connection is found by TCP keepalive.
func (v *versions) listen(ctx context.Context, heard func(catalog.Announcement, bool)) error {
	cfg := v.db.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = ListenerName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var channel string
	if err := conn.QueryRow(ctx, channelSQL).Scan(&channel); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	// Listening first, reading second: what is announced in between comes
	// twice, never not at all.
	rec, err := recorded(ctx, conn.QueryRow)
	if err != nil {
		return err
	}
	heard(rec, true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		a, err := catalog.ParseAnnouncement(n.Payload)
		if err != nil {
			v.log.Warn("catalog announcements: dropped a message", "err", err)
			continue
		}
		heard(a, false)
	}
}
