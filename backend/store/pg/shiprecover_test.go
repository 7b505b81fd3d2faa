package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/internal/testpg"
)

// Once a shipment of the spool succeeds, the clicks that land are
// recorded in Postgres, even while the shipment's Recorded still runs
// (the budget gate reading the spend the shipment billed, which a slow
// Postgres may make last): the server is out of its degraded state when
// Postgres took the shipment, not when what it is told of it is done.
func TestSpoolerRecordsInPostgresWhileAShipmentIsTold(t *testing.T) {
	srv := testpg.Start(t)
	db := openPG(t, srv.URL())
	_, spool := newSpool(t)
	at := recently()
	click := func(n int) (clicks.Click, clicks.Use) {
		return clicks.Click{ID: fmt.Sprint("c", n), Time: at, AdID: fmt.Sprint("a", n), AdType: "advertiser", Type: "search",
				APIKey: "k", SiteID: "s", IP: fmt.Sprintf("198.51.100.%d", n+1), Advertiser: "shop.example", BidMicros: 100,
				Currency: "EUR"},
			clicks.Use{D: fmt.Sprint("d", n), Expires: at.Add(time.Hour)}
	}
	var spooled atomic.Int64
	told, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	// A long Wait: a busy machine's slow answer does not spool the click.
	s := clicks.NewSpooler(db.Ledger(), db.Ledger(), spool, clicks.SpoolerOptions{Wait: 10 * time.Second,
		Spooled: func() { spooled.Add(1) },
		Recorded: func(ctx context.Context, shipped []clicks.Spooled) {
			once.Do(func() { close(told) })
			<-release
		}})
	s.Start()
	defer s.Stop()
	defer close(release)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	c, u := click(0)
	if err := s.Record(t.Context(), &c, u); err != nil || spooled.Load() != 1 {
		t.Fatalf("a click while Postgres is down: %v, %d spooled; want it spooled", err, spooled.Load())
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-told:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the spool was not shipped: %d left", s.Depth())
	}
	c, u = click(1)
	if err := s.Record(t.Context(), &c, u); err != nil {
		t.Fatal(err)
	}
	if n := spooled.Load(); n != 1 {
		t.Errorf("a click that landed after a shipment succeeded, its Recorded running, was spooled (%d spooled, want the first alone): %s", n, s.Degraded())
	}
}
