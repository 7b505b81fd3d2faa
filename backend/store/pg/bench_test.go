package pgstore_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/store"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// BenchmarkLedgerClicks measures durable billable clicks per second
// through the Postgres ledger (decision, window, click row, rollups and
// spend in one transaction, concurrent clicks sharing it: one
// adlink_record_clicks statement a batch, committed with
// synchronous_commit on) beside the bbolt ledger's group commit, and
// beside the floor: the least Postgres does for the same durability, the
// same clicks through the same group commit as plain rows, one INSERT a
// batch into a table with only a primary key. All three in the same run,
// from as many clients, each click of a decision and network of its own
// over a few ads and advertisers, each click with its id and counted
// against its IPv6 /48's daily cap, as the redirect gives it. They take turns, three rounds each, and each reports its best
// round: the disk's flush time swings with the machine's other work.
func BenchmarkLedgerClicks(b *testing.B) {
	const clients, perClient = 32, 50
	// The default caps of an IPv6 /48, in all and on one ad, which each
	// click's address (a /48 of its own) is counted against, as the server
	// counts it.
	prefixLimit, prefixAdLimit := config.Default().PrefixDailyClicks, config.Default().PrefixAdDailyClicks
	at := time.Now()
	run := func(l clicks.Ledger, round int) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for g := range clients {
			wg.Go(func() {
				for i := range perClient {
					n := strconv.Itoa(round) + "." + strconv.Itoa(g) + "." + strconv.Itoa(i)
					c := clicks.Click{ID: clicks.NewID(), Time: at, AdID: "ad" + strconv.Itoa(i%10), AdType: "advertiser", Type: "search", APIKey: "demo",
						SiteID: "demo", Criterion: "handy", YkTag: "t" + strconv.Itoa(g%4), IP: "2a00:" + strconv.FormatInt(int64(round), 16) + ":" + strconv.FormatInt(int64(g*perClient+i), 16) + "::1",
						UserAgent: "Mozilla/5.0", Advertiser: "shop" + strconv.Itoa(i%3) + ".example", BidMicros: 250_000, Currency: "EUR"}
					if err := l.Record(context.Background(), &c, clicks.Use{D: n, Expires: at.Add(time.Hour), PrefixLimit: prefixLimit, PrefixAdLimit: prefixAdLimit}); err != nil || !c.Billable {
						b.Errorf("click %s: %q %v", n, c.Reason, err) // not Fatal: not the benchmark's goroutine
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	db, err := pgstore.Open(context.Background(), testpg.New(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	bolt, err := store.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer bolt.Close()
	boltLedger, err := clicks.NewLedger(bolt)
	if err != nil {
		b.Fatal(err)
	}
	floor, err := pgstore.NewFloor(context.Background(), db)
	if err != nil {
		b.Fatal(err)
	}
	var onPG, onBolt, onFloor time.Duration
	for i := range b.N {
		best := func(l clicks.Ledger, round int, d *time.Duration) {
			if t := run(l, round); *d == 0 || t < *d {
				*d = t
			}
		}
		for r := range 3 {
			best(db.Ledger(), i*3+r, &onPG)
			best(boltLedger, i*3+r, &onBolt)
			best(floor, i*3+r, &onFloor)
		}
	}
	n := float64(clients * perClient)
	b.ReportMetric(n/onPG.Seconds(), "postgres_clicks/s")
	b.ReportMetric(n/onBolt.Seconds(), "bolt_clicks/s")
	b.ReportMetric(onBolt.Seconds()/onPG.Seconds(), "postgres_vs_bolt")
	b.ReportMetric(n/onFloor.Seconds(), "floor_clicks/s")
	b.ReportMetric(onBolt.Seconds()/onFloor.Seconds(), "floor_vs_bolt")
	b.ReportMetric(onFloor.Seconds()/onPG.Seconds(), "postgres_of_floor")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkImpressionBeacons measures beacons of 4 impressions recorded
// per second through pgstore.Impressions.Append with their keys (one
// ad, page and network each, as the beacon gives them: the keys'
// INSERT … ON CONFLICT DO NOTHING, then the rows and rollups of the new
// ones, in one transaction) beside the same beacons without keys, the
// baseline: the rows and rollups alone. And beacons replayed, every key
// recorded already (nothing but the keys' statement). From 16 clients;
// they take turns, three rounds each, and each reports its best round.
func BenchmarkImpressionBeacons(b *testing.B) {
	const clients, perClient, perBeacon = 16, 40, 4
	at := time.Now()
	db, err := pgstore.Open(context.Background(), testpg.New(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s := db.Impressions()
	beacon := func(round, g, i int, keyed bool) []clicks.Impression {
		page := "https://blog.example/" + strconv.Itoa(round) + "/" + strconv.Itoa(g) + "/" + strconv.Itoa(i)
		imps := make([]clicks.Impression, perBeacon)
		for k := range imps {
			ad := "ad" + strconv.Itoa((i+k)%10)
			imps[k] = clicks.Impression{Time: at, AdID: ad, AdType: "advertiser", Type: "intext", APIKey: "demo",
				SiteID: "demo", Criterion: "handy", YkTag: "t" + strconv.Itoa(g%4), Page: page, IP: "198.51.100.7",
				UserAgent: "Mozilla/5.0", Advertiser: "shop.example", Currency: "EUR"}
			if keyed {
				imps[k].Key = clicks.ImpressionKey(ad, "demo", page, "198.51.100.7", at, 30*time.Minute)
			}
		}
		return imps
	}
	run := func(round int, keyed bool, wantRepeats int) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for g := range clients {
			wg.Go(func() {
				for i := range perClient {
					n, err := s.Append(context.Background(), beacon(round, g, i, keyed))
					if err != nil || n != wantRepeats {
						b.Errorf("beacon %d.%d.%d: %d repeats, want %d: %v", round, g, i, n, wantRepeats, err)
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	var keyed, unkeyed, replayed time.Duration
	best := func(d *time.Duration, t time.Duration) {
		if *d == 0 || t < *d {
			*d = t
		}
	}
	round := 0
	for range b.N {
		for range 3 {
			round++
			best(&keyed, run(round, true, 0))
			best(&replayed, run(round, true, perBeacon))
			best(&unkeyed, run(round, false, 0))
		}
	}
	rate := func(d time.Duration) float64 { return float64(clients*perClient) / d.Seconds() }
	b.ReportMetric(rate(keyed), "keyed_beacons/s")
	b.ReportMetric(rate(unkeyed), "unkeyed_beacons/s")
	b.ReportMetric(rate(keyed)/rate(unkeyed), "keyed_of_unkeyed")
	b.ReportMetric(rate(replayed), "replayed_beacons/s")
	b.ReportMetric(0, "ns/op")
}
