package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/budget"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/match"
	"github.com/jackc/pgx/v5"
)

// spendStore opens the Postgres at url for a budget gate's test: the
// store the gate reads the spend from, and a connection of its own that
// writes the spend the test starts from. Both close when tb ends.
func spendStore(tb testing.TB, url string) (*pgstore.DB, *pgx.Conn) {
	tb.Helper()
	db := openPG(tb, url)
	conn, err := pgx.Connect(tb.Context(), url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return db, conn
}

// gateOver is a budget gate of budgets whose spend sp reads, at the time
// now gives.
func gateOver(tb testing.TB, budgets map[string]accounts.Budget, sp budget.Spender, now func() time.Time) *budget.Gate {
	tb.Helper()
	g, err := budget.New(tb.Context(), budget.Options{Budgets: budgets, Spent: sp, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// adsOf is an index of one ad of each of advertisers, keyword "x".
func adsOf(tb testing.TB, advertisers ...string) *match.Index {
	tb.Helper()
	ads := make([]match.Ad, len(advertisers))
	for i, adv := range advertisers {
		ads[i] = match.Ad{ID: "ad" + adv, Kind: match.KindAdvertiser, Title: adv, Keywords: []string{"x"}, Advertiser: adv, Landing: "https://" + adv + "/"}
	}
	ix, err := match.Build(ads)
	if err != nil {
		tb.Fatal(err)
	}
	return ix
}
