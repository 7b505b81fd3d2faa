package api

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/report"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// On Postgres as on bbolt, a report that needs more rows as it reads,
// while the others hold every other row, is refused at once and gives
// its connection back: a report waiting for rows never keeps one of the
// pool's connections, which clicks need to commit.
func TestReportNeverWaitsForRowsHoldingAConnection(t *testing.T) {
	ctx := t.Context()
	db, err := pgstore.Open(ctx, testpg.Start(t).URL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// A day of 4 hourly rows an hour of partner k, each its own criterion.
	if _, err := db.Pool().Exec(ctx, `INSERT INTO rollups (grain, shard, period, api_key, site_id, advertiser, ad_id, context, currency,
		criterion, yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
		SELECT 0, 0, $1 + h, 'k', 's', 'shop.example', 'AD.1', 'search', 'EUR',
			'criterion ' || h || '-' || r, '', 'de', 0, 1, 1, 10000, array_fill(0::bigint, ARRAY[18])
		FROM generate_series(0, 23) h, generate_series(0, 3) r`, t0.Unix()/3600); err != nil {
		t.Fatal(err)
	}
	partner := accounts.Account{Kind: accounts.Partner, ID: "k"}
	req := report.Request{From: t0, To: t0, GroupBy: []string{"hour", "criterion"}, Format: "json"}
	all, err := report.Run(ctx, db.Rollups(), partner, req)
	if err != nil || len(all) != 4*24 {
		t.Fatalf("%d rows, %v; want %d", len(all), err, 4*24)
	}
	synctest.Test(t, func(t *testing.T) {
		const n = 64 // parts of one row
		s := &server{reportRows: newReportRows(n), metrics: metrics.New()}
		h, others := holdAllButOne(t, s, partner)
		done := make(chan error, 1)
		go func() {
			_, err := report.RunHolding(t.Context(), db.Rollups(), partner, req, h.hold)
			h.release()
			done <- err
		}()
		synctest.Wait()
		if held := db.Pool().Stat().AcquiredConns(); held != 0 {
			t.Errorf("%d connections held while the report waits for a second row, want none", held)
		}
		err := <-done
		if e := (*Error)(nil); !errors.As(err, &e) || e.Code != CodeReportsBusy {
			t.Errorf("a report of %d rows given one: %v, want %s", len(all), err, CodeReportsBusy)
		}
		for _, h := range others {
			h.release()
		}
	})
}
