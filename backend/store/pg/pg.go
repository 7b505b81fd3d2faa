// Package pgstore keeps adlink's durable record in Postgres, so that
// several servers share one: the click log (clicks.Store), the impression
// log (clicks.Impressions), the ledger that settles and records a click in
// one transaction (clicks.Ledger), the rollups reports read and the spend
// budgets read (clicks.RollupReader), and the single-use state that
// judges clicks (clicks.Decisions, clicks.Windows), the retainer that
// exports and deletes old days (clicks.Retainer) with the record of the
// days exported (clicks.Exports) and the lock that lets one server's
// retention pass run at a time, and the page analyses
// with the queue of pages waiting for one (pages.Store). Each passes its
// storetest suite against a real server.
//
// Every connection commits with synchronous_commit on: a write returns
// once its WAL is flushed, and Postgres flushes the commits of concurrent
// connections together (its own group commit).
package pgstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is a pool of connections to one Postgres database whose schema Open
// brought up to date. Its stores (Clicks, Impressions, Ledger, Rollups,
// Decisions, Windows, Pages) are safe for concurrent use.
type DB struct {
	pool *pgxpool.Pool
	gc   groupCommit

	// The listener of the page store's Claims, started by Pages.
	pageWake   waker
	listenOnce sync.Once
	stopListen context.CancelFunc
	listenDone chan struct{}
}

// Open connects to the database at url (a postgres:// URL or a libpq
// key=value string) and applies the schema migrations it lacks, as
// OpenWith does with no Options.
func Open(ctx context.Context, url string) (*DB, error) {
	return OpenWith(ctx, url, Options{})
}

// Options are OpenWith's settings; the zero value is the defaults.
type Options struct {
	// Logger receives the migrations' retries and what holds them up;
	// nil discards them.
	Logger *slog.Logger
	// LockTimeout bounds each migration statement's wait for a lock
	// (Postgres's lock_timeout, on the migrations' connections only);
	// zero is DefaultLockTimeout.
	LockTimeout time.Duration
	// MigrateWait bounds how long the migrations are tried again after a
	// statement gave up on its lock timeout, counted from the start or
	// the last migration a try applied: no try starts after it, and
	// the last one that gave up fails OpenWith with a *LockWaitError.
	// Zero tries again for as long as it takes.
	MigrateWait time.Duration
}

// LockWaitError is OpenWith's error when its migrations gave up on a
// lock timeout at every try for Options.MigrateWait.
type LockWaitError struct {
	// Waited is how long the migrations were tried since the start or
	// the last migration a try applied, Tries how often in all.
	Waited time.Duration
	Tries  int
	// Blockers are the sessions that held up the last try, as
	// pg_stat_activity showed them; none when it saw none in time.
	Blockers []Blocker
	// Err is the last try's error (Postgres's lock_not_available).
	Err error
}

// Error names the last try's blockers, for the operator to end them.
func (e *LockWaitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gave up after %d tries in %v: a statement waited past its lock timeout each time", e.Tries, e.Waited.Round(time.Millisecond))
	if len(e.Blockers) == 0 {
		b.WriteString("; the last try's blockers were not seen")
	} else {
		b.WriteString("; the last try waited for")
		for i, bl := range e.Blockers {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, " pid %d (%s for %v: %q)", bl.PID, bl.State, bl.Age.Round(time.Millisecond), bl.Query)
		}
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap returns the last try's error.
func (e *LockWaitError) Unwrap() error { return e.Err }

// DefaultLockTimeout is a migration statement's longest wait for a lock.
// A statement that alters a table asks for a lock that every query of
// the table queues behind: the replicas still running wait for it as
// long as it waits for a transaction holding the table (an operator's
// open psql session, a long report). Past the timeout it gives up, the
// queries go on, and the migration is tried again after a pause.
const DefaultLockTimeout = 5 * time.Second

// OpenWith connects to the database at url (a postgres:// URL or a libpq
// key=value string) and applies the schema migrations it lacks. Servers
// starting at once take turns: goose holds a Postgres advisory lock of the
// session while it migrates. Reaching the database takes at most
// connectWithin. A migration statement waits at most opts.LockTimeout for
// a lock; one that gave up is logged with the sessions that held it up,
// and the migrations start again after a pause (1 s, doubling up to 30 s),
// for as long as it takes, or until opts.MigrateWait when it is set.
// Migrations 00020 and 00023, which build and drop indexes
// concurrently, have no lock timeout: their waits block no query, a
// build cut off would be built again from nothing, and a drop waits for
// every transaction that used the table. Nor have the migrations a bound of their own:
// a build takes minutes on a large table, and a bound shorter would
// never let it end. Waiting for another server's migrations ends after
// goose's 5 minutes. ctx ends either, by its cancellation or its
// deadline: the server's is cancelled by SIGTERM.
func OpenWith(ctx context.Context, url string, opts Options) (*DB, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	pool, err := newPool(ctx, url)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, connectWithin)
	err = pool.Ping(pctx)
	cancel()
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := migrate(ctx, pool, opts); err != nil {
		user := pool.Config().ConnConfig.User
		pool.Close()
		if denied(err) {
			return nil, fmt.Errorf("postgres: migrating: %w: the role %q may not create or alter the tables; "+
				"make it the database's owner (createdb -O %s ...), or GRANT CREATE ON SCHEMA public TO %s "+
				"(or the schema its search_path names); tables another role made must be owned by it "+
				"(ALTER TABLE ... OWNER TO %s)", err, user, user, user, user)
		}
		return nil, fmt.Errorf("postgres: migrating: %w", err)
	}
	return &DB{pool: pool}, nil
}

// denied reports whether err is Postgres refusing a statement for want
// of a privilege, as a role that does not own the database meets from
// Postgres 15 on, whose schema public lets only the owner create in it.
func denied(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501"
}

// connectWithin bounds Open's reaching the database. A var so that tests
// can shorten it.
var connectWithin = time.Minute

// OpenMigrated connects to the database at url as Open does, for a tool
// that writes beside the servers while they run (adlink invalidate). It
// migrates nothing, and refuses a database as OpenReader does: one the
// servers never used (a wrong URL), or whose schema is older than this
// binary's.
func OpenMigrated(ctx context.Context, url string) (*DB, error) {
	pool, err := newPool(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := checkSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &DB{pool: pool}, nil
}

// newPool is the pool of Open and OpenMigrated.
func newPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := parseConfig(url)
	if err != nil {
		return nil, err
	}
	// By the simple protocol, pgx reports a reply lost after the statement
	// was sent as safe to retry (see wroteNothing), so a click could be
	// recorded twice.
	if cfg.ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeSimpleProtocol {
		return nil, errors.New("postgres: default_query_exec_mode=simple_protocol is not supported: a statement whose reply was lost could run twice; leave it out, or use exec or describe_exec")
	}
	// A click is durable before its 302, whatever the server's default.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	// Concurrent clicks each hold a connection through their commit, and
	// Postgres flushes the commits of concurrent connections together: a
	// pool of the CPUs' size would queue them. pool_max_conns in the URL
	// says otherwise.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return pool, nil
}

// encodeUserInfo says how to write a user name or password that holds a
// character ending the URL's user info early.
const encodeUserInfo = "percent-encode a '/' or '@' in the user name or password (%2F, %40)"

// parseConfig parses a Postgres URL or key=value string. A '/' in the
// password of a URL ends its host early, which pgx reports as a bad port;
// an '@' in it makes the password's rest part of the host, which a failed
// connection would name in every error and log line: both are refused
// saying how to write them, the host not quoted.
func parseConfig(url string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	isURL := strings.Contains(url, "://") && strings.Contains(url, "@")
	if err != nil {
		if isURL {
			return nil, fmt.Errorf("postgres: %w; %s", err, encodeUserInfo)
		}
		return nil, fmt.Errorf("postgres: %w", err)
	}
	hosts := []string{cfg.ConnConfig.Host}
	for _, f := range cfg.ConnConfig.Fallbacks {
		hosts = append(hosts, f.Host)
	}
	for _, h := range hosts {
		if strings.Contains(h, "@") {
			return nil, errors.New("postgres: the URL's host holds an '@': " + encodeUserInfo)
		}
	}
	return cfg, nil
}

// OpenReader connects to the database at url for a tool that only reads
// it (adlink report) while the servers run. It migrates nothing: a newer
// binary's migrations are the servers' to apply when they are upgraded,
// and a database the servers never used (a wrong URL) is refused, not
// given an empty schema. It refuses a schema older than this binary's,
// whose tables it may not read.
func OpenReader(ctx context.Context, url string) (*DB, error) {
	cfg, err := parseConfig(url)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := checkSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &DB{pool: pool}, nil
}

// checkSchema refuses a database without adlink's schema, or with one
// older than this binary's.
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	have, want, err := schemaVersions(ctx, pool)
	switch {
	case err != nil:
		return fmt.Errorf("postgres: %w", err)
	case have < 0:
		return errors.New("postgres: no adlink schema in this database: give the URL the servers' -postgres names")
	case have < want:
		return fmt.Errorf("postgres: the database's schema is at migration %d, this adlink's at %d: use the adlink the servers run, or upgrade them first", have, want)
	}
	return nil
}

// schemaVersions returns the last migration applied to the database (-1
// for none) and the last this binary has.
func schemaVersions(ctx context.Context, pool *pgxpool.Pool) (have, want int64, err error) {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return 0, 0, err
	}
	names, err := fs.Glob(dir, "*.sql")
	if err != nil || len(names) == 0 {
		return 0, 0, fmt.Errorf("no migrations embedded: %v", err)
	}
	if _, err := fmt.Sscanf(names[len(names)-1], "%d_", &want); err != nil {
		return 0, 0, fmt.Errorf("migration %s: %w", names[len(names)-1], err)
	}
	// to_regclass is null, not an error, for a table that is not there.
	var found bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('goose_db_version') IS NOT NULL`).Scan(&found); err != nil || !found {
		return -1, want, err
	}
	err = pool.QueryRow(ctx, `SELECT coalesce(max(version_id), -1) FROM goose_db_version WHERE is_applied`).Scan(&have)
	return have, want, err
}

// migrate applies the embedded migrations under goose's session lock, on
// connections of their own whose statements wait at most
// opts.LockTimeout for a lock (the serving pool's have no such bound),
// and again after a pause while one gave up waiting, until
// opts.MigrateWait when it is set.
func migrate(ctx context.Context, pool *pgxpool.Pool, opts Options) error {
	cfg := pool.Config().ConnConfig.Copy()
	// In milliseconds, at least one: 0 would be no timeout.
	cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(max(opts.LockTimeout.Milliseconds(), 1), 10)
	// The watch looks for what holds up the migrations' sessions by
	// their backends' pids.
	var pids migrationPIDs
	sqlDB := stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(func(_ context.Context, c *pgx.Conn) error {
		pids.add(c.PgConn().PID())
		return nil
	}))
	defer sqlDB.Close()
	// Each attempt has a new session: a migration that lifts the timeout
	// for a statement (00020) and fails leaves nothing to the next.
	sqlDB.SetMaxIdleConns(0)
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	// Polled at least twice within a lock timeout, so that the sessions
	// a statement waited for are seen before it gives up.
	w := startWatch(ctx, pool, &pids, opts.Logger, max(min(watchEvery, opts.LockTimeout/2), time.Millisecond))
	defer w.stop()
	pause := time.Second
	// The wait counts from the last migration applied: a try that
	// applied some before it gave up (a long index build) made progress.
	start := time.Now()
	applied, _, _ := schemaVersions(ctx, pool)
	for try := 1; ; try++ {
		// The blockers logged are this try's alone: the sessions of the
		// tries before are gone, and what the watch saw of them is not
		// this try's doing.
		w.reset()
		err = up(ctx, sqlDB, dir)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "55P03" || ctx.Err() != nil {
			return err
		}
		blockers := w.blockers()
		args := []any{"lock_timeout", opts.LockTimeout.String(), "try", try}
		if have, _, verr := schemaVersions(ctx, pool); verr == nil && have > applied {
			applied, start, pause = have, time.Now(), time.Second
		}
		waited := time.Since(start)
		last := opts.MigrateWait > 0 && waited >= opts.MigrateWait
		if !last {
			// The last try starts by the end of the wait.
			if opts.MigrateWait > 0 {
				pause = min(pause, opts.MigrateWait-waited)
			}
			args = append(args, "retry_in", pause.String())
		}
		args = append(args, "err", err)
		for i, b := range blockers {
			args = append(args, slog.Group(fmt.Sprintf("blocker%d", i+1), b.attrs()...))
		}
		if last {
			opts.Logger.Error("postgres: the migrations gave up waiting for a lock at every try; giving up", args...)
			return &LockWaitError{Waited: waited, Tries: try, Blockers: blockers, Err: err}
		}
		opts.Logger.Warn("postgres: a migration gave up waiting for a lock, so as not to hold up the queries queued behind it; trying again", args...)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 30*time.Second)
	}
}

// up applies the migrations in dir once, under goose's session lock. The
// lock and the provider are new each try: goose's lock gives up after so
// many probes found it taken over its whole life (5 minutes of them), and
// its provider checks its version table once, so that ones kept across
// tries would fail a server that waited behind others' tries in turn, and
// skip the check after a try that failed at it.
func up(ctx context.Context, db *sql.DB, dir fs.FS) error {
	locker, err := lock.NewPostgresSessionLocker(lockOptions...)
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, dir,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// lockOptions are those of the migrations' lock. A var so that tests can
// shorten its wait.
var lockOptions []lock.SessionLockerOption

// migrationPIDs are the backends' pids of the migrations' sessions.
type migrationPIDs struct {
	mu   sync.Mutex
	pids []uint32
}

func (m *migrationPIDs) add(pid uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pids = append(m.pids, pid)
}

// reset forgets the pids of the sessions of the tries before.
func (m *migrationPIDs) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pids = nil
}

func (m *migrationPIDs) all() []uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.pids)
}

// Blocker is a session that holds up a migration's statement.
type Blocker struct {
	PID   int32
	State string        // pg_stat_activity's: "idle in transaction", "active"
	Age   time.Duration // since its transaction began, or its statement
	Query string        // the start of its last statement
}

func (b Blocker) attrs() []any {
	return []any{"pid", b.PID, "state", b.State, "age", b.Age.Round(time.Millisecond).String(), "query", b.Query}
}

// watchEvery is how often a migration's blockers are looked for, unless
// its lock timeout is shorter than twice that.
const watchEvery = time.Second

// watchLogAfter is how long a session holds up a migration before it is
// logged while the migration still waits (an index built concurrently
// waits with no timeout).
const watchLogAfter = 30 * time.Second

// watch looks, while the migrations run, for the sessions that hold up
// theirs: each blocking one, whose statement waits for a lock, in
// pg_blocking_pids. It keeps those last seen, for the log of a statement
// that gave up, and logs those that hold one up for watchLogAfter.
type watch struct {
	cancel context.CancelFunc
	done   chan struct{}
	pids   *migrationPIDs
	mu     sync.Mutex
	last   []Blocker
	try    int // counts resets: a poll begun before one is not kept
}

func startWatch(ctx context.Context, pool *pgxpool.Pool, pids *migrationPIDs, log *slog.Logger, every time.Duration) *watch {
	ctx, cancel := context.WithCancel(ctx)
	w := &watch{cancel: cancel, done: make(chan struct{}), pids: pids}
	go func() {
		defer close(w.done)
		since := map[int32]time.Time{}
		logged := map[int32]bool{}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			w.mu.Lock()
			try := w.try
			w.mu.Unlock()
			bs, err := blockersOf(ctx, pool, pids.all())
			if err != nil {
				continue
			}
			now := time.Now()
			seen := map[int32]bool{}
			for _, b := range bs {
				seen[b.PID] = true
				if _, ok := since[b.PID]; !ok {
					since[b.PID] = now
				}
				if !logged[b.PID] && now.Sub(since[b.PID]) >= watchLogAfter {
					logged[b.PID] = true
					log.Warn("postgres: a migration waits for a lock this session holds", b.attrs()...)
				}
			}
			for pid := range since {
				if !seen[pid] {
					delete(since, pid)
				}
			}
			w.mu.Lock()
			if len(bs) > 0 && try == w.try {
				w.last = bs
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// reset forgets the blockers seen and the sessions watched, before a
// try: a poll of the try before that ends after it is not kept.
func (w *watch) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.try++
	w.last = nil
	w.pids.reset()
}

// blockers returns the sessions last seen holding up a migration, and
// forgets them.
func (w *watch) blockers() []Blocker {
	w.mu.Lock()
	defer w.mu.Unlock()
	bs := w.last
	w.last = nil
	return bs
}

func (w *watch) stop() {
	w.cancel()
	<-w.done
}

// blockersOf returns the sessions that hold up a statement of the
// sessions of pids waiting for a lock.
func blockersOf(ctx context.Context, pool *pgxpool.Pool, pids []uint32) ([]Blocker, error) {
	if len(pids) == 0 {
		return nil, nil
	}
	rows, err := pool.Query(ctx, `SELECT DISTINCT b.pid, coalesce(b.state, ''),
			coalesce(extract(epoch FROM now() - coalesce(b.xact_start, b.query_start)), 0)::float8,
			left(coalesce(b.query, ''), 120)
		FROM pg_stat_activity m
		CROSS JOIN LATERAL unnest(pg_blocking_pids(m.pid)) AS h(pid)
		JOIN pg_stat_activity b ON b.pid = h.pid
		WHERE m.pid = ANY ($1::int[]) AND m.wait_event_type = 'Lock'
		ORDER BY b.pid`, pids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Blocker, error) {
		var b Blocker
		var secs float64
		err := r.Scan(&b.PID, &b.State, &secs, &b.Query)
		b.Age = time.Duration(secs * float64(time.Second))
		return b, err
	})
}

// Close stops the page store's listener and closes the pool's
// connections.
func (db *DB) Close() {
	db.listenOnce.Do(func() {}) // no listener starts after this
	if db.stopListen != nil {
		db.stopListen()
		<-db.listenDone
	}
	db.pool.Close()
}

// Ping reports whether the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

// Pool is the connection pool, for tests and tools that read the tables.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// defaultMaxConns is the pool's size unless the URL sets it: three
// replicas stay within Postgres's default max_connections of 100.
const defaultMaxConns = 24

// maxAttempts bounds how often a transaction is run again after Postgres
// aborted it for a deadlock or a serialization failure.
const maxAttempts = 8

// inTx runs fn in a transaction and commits it, again from the start when
// Postgres aborted it for a deadlock or a serialization failure (which
// leave nothing written). Its BEGIN, which runs nothing of fn, runs again
// on another connection when the one it met was ended (rerun); once fn
// ran, or at the commit, an ended connection is the caller's error, as
// not every transaction may run twice.
func (db *DB) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	var err error
	for range maxAttempts {
		if err = ctx.Err(); err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, beginner{db}, fn)
		if !retryable(err) {
			return err
		}
	}
	return err
}

// beginner begins the transactions of inTx, through rerun.
type beginner struct{ of *DB }

func (b beginner) Begin(ctx context.Context) (tx pgx.Tx, err error) {
	err = b.of.rerun(ctx, func() error {
		tx, err = b.of.pool.Begin(ctx)
		return err
	})
	return tx, err
}

// rerun runs fn, and again while it fails on a connection the server
// ended (serverEnded): after Postgres restarts, or an administrator ends
// its backends, each idle connection of the pool fails its next use, and
// the pool pings only those idle for a while. Each failure takes one
// ended connection out of the pool, so the pool's size and one more
// attempts reach a new one, as pgxpool's Acquire counts. fn must be safe
// to run again: a statement that only reads, one whose second run writes
// nothing more, or a BEGIN. A write whose reply was lost once it was
// sent, maybe after its commit, fails here (a simple query's runs again:
// see wroteNothing); its caller's retry runs it again.
func (db *DB) rerun(ctx context.Context, fn func() error) error {
	err := fn()
	if !serverEnded(err) {
		return err
	}
	for range db.pool.Config().MaxConns {
		if ctx.Err() != nil {
			return err
		}
		if err = fn(); !serverEnded(err) {
			return err
		}
	}
	return err
}

// retryable reports whether err aborted a transaction that may simply be
// run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// serverEnded reports whether err is the server ending the connection
// (its shutdown, a crash, or an administrator's command), or the
// connection failing before anything was sent on it.
func serverEnded(err error) bool {
	var pe *pgconn.PgError
	return err != nil && (pgconn.SafeToRetry(err) || errors.As(err, &pe) && (pe.Code == "57P01" || pe.Code == "57P02"))
}

// wroteNothing reports whether err is Postgres's answer that a statement
// failed, which wrote nothing of it: an error of the server, or one
// raised before anything was sent. Any other error (the connection lost
// once the statement was sent, a context ended while it ran) leaves
// unknown whether it committed. pgx reports the lost reply of a simple
// query (an Exec without arguments) as a closed connection, safe to
// retry: the statements this judges take arguments, which pgx runs by
// the extended protocol.
func wroteNothing(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) || pgconn.SafeToRetry(err)
}

// query runs sql, a statement that only reads, and each of its rows. It
// runs again (rerun) when the connection it met was ended before a row
// came: once one was handed on, running it again would hand it on twice.
func (db *DB) query(ctx context.Context, each func(pgx.Rows) error, sql string, args ...any) error {
	handed := false
	err := db.rerun(ctx, func() error {
		rows, err := db.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			handed = true
			if err := each(rows); err != nil {
				return final{err}
			}
		}
		if err := rows.Err(); err != nil && handed {
			return final{err}
		}
		return rows.Err()
	})
	if f, ok := err.(final); ok {
		return f.err
	}
	return err
}

// final is an error of query's that rerun must not take for an ended
// connection's, rows having been handed on.
type final struct{ err error }

func (f final) Error() string { return f.err.Error() }

// nanos and fromNanos store a time as Unix nanoseconds, exactly.
func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// dayOf and hourOf are the UTC day and the hour of t, counted from the
// epoch, as the bbolt store counts them.
func dayOf(t time.Time) int64 { return t.Unix() / 86400 }

func hourOf(t time.Time) int64 { return t.Unix() / 3600 }

// rangeArgs returns the WHERE condition on at_ns for [from, to), zero
// being no bound, with its arguments.
func rangeArgs(from, to time.Time) (string, []any) {
	cond, args := "TRUE", []any{}
	if !from.IsZero() {
		args = append(args, nanos(from))
		cond += fmt.Sprintf(" AND at_ns >= $%d", len(args))
	}
	if !to.IsZero() {
		args = append(args, nanos(to))
		cond += fmt.Sprintf(" AND at_ns < $%d", len(args))
	}
	return cond, args
}
