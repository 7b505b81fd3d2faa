package testpg_test

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adlink/adlink/internal/testpg"
)

func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }

// A statement whose reply the proxy loses ran and committed, and its
// caller got an error: an extended query prepared on the connection
// before (Bind and Execute only), one prepared in the same call, and a
// simple query. The extended queries' errors do not claim that nothing
// was sent (pgconn.SafeToRetry); pgx reports a simple query's lost
// reply as "conn closed", which does. The other statements pass
// through.
func TestProxyLosesTheReplyAfterTheCommit(t *testing.T) {
	url := testpg.New(t)
	proxy := testpg.NewProxy(t, url)
	pool, err := pgxpool.New(t.Context(), proxy.URL(url))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(t.Context(), `CREATE TABLE lost (n int)`); err != nil {
		t.Fatal(err)
	}
	insert := `INSERT INTO lost (n) VALUES ($1)`
	if _, err := pool.Exec(t.Context(), insert, 1); err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		name   string
		simple bool
		run    func() error
	}{
		{"prepared before", false, func() error { _, err := pool.Exec(t.Context(), insert, 2); return err }},
		{"prepared now", false, func() error { _, err := pool.Exec(t.Context(), insert+` RETURNING n`, 3); return err }},
		{"simple", true, func() error {
			_, err := pool.Exec(t.Context(), insert, pgx.QueryExecModeSimpleProtocol, 4)
			return err
		}},
	}
	for i, r := range runs {
		proxy.LoseReply("INTO lost", 1)
		err := r.run()
		if err == nil || !r.simple && pgconn.SafeToRetry(err) {
			t.Errorf("%s: the lost reply gave %v (%T), want an error not safe to retry", r.name, err, err)
		}
		if proxy.Lost() != i+1 {
			t.Errorf("%s: %d replies lost, want %d", r.name, proxy.Lost(), i+1)
		}
	}
	var sum, rows int
	if err := pool.QueryRow(t.Context(), `SELECT coalesce(sum(n), 0), count(*) FROM lost`).Scan(&sum, &rows); err != nil {
		t.Fatal(err)
	}
	if rows != 4 || sum != 1+2+3+4 {
		t.Errorf("the table holds %d rows summing to %d, want 4 and 10: each statement committed once", rows, sum)
	}
}
