package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/report"
	"github.com/adlink/adlink/internal/testpg"
)

// A signed, billable click whose write committed in Postgres but whose
// reply was lost (the connection failed between the commit and the
// answer) is spooled by the server, which took the error for an outage;
// its shipments, which find it recorded, lose their replies too until the
// server stops. Started again, the server ships it: Postgres holds it
// once, billed, its advertiser's spend of the day counts its bid once,
// and so does the report.
func TestLostReplyClickBillsOnceAfterTheSpoolShips(t *testing.T) {
	const advertiser = "handy-bestkauf.de"
	url := testpg.New(t)
	proxy := testpg.NewProxy(t, url)
	cfg := testConfig(t)
	cfg.PostgresURL = proxy.URL(url)
	cfg.ClickKeys = []clicks.Key{{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}}
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	bid := a.Indexes.Bid(advertiser)
	if bid <= 0 {
		t.Fatalf("the ad of %s bids %d", advertiser, bid)
	}
	link := advertiserURL(t, a.Handler, advertiser)

	// Every reply to adlink_record_clicks is lost: the click's Record's,
	// then each shipment's.
	proxy.LoseReply("adlink_record_clicks", 1<<20)
	req := httptest.NewRequest(http.MethodGet, link, nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	req.RemoteAddr = "10.7.7.1:5000"
	clicks.Navigation.Header(req.Header)
	rec := httptest.NewRecorder()
	a.Handler.ServeHTTP(rec, req)
	id := rec.Header().Get("X-Adlink-Click")
	if rec.Code != http.StatusFound || id == "" {
		t.Fatalf("the click: %d, id %q: %s", rec.Code, id, rec.Body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := proxy.WaitLost(ctx, 2); err != nil {
		t.Fatalf("the Record's reply and a shipment's: %v", err)
	}
	if got := metric(t, a, "adlink_click_spool_depth"); got != "1" {
		t.Errorf("adlink_click_spool_depth %s, want 1: the click whose reply was lost", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// The lost reply came after the commit: the click is in Postgres.
	if v := recorded(t, url)[id]; len(v) != 1 || v[0] != "billable" {
		t.Fatalf("click %s before the spool shipped: recorded %v, want once billable", id, v)
	}

	proxy.LoseReply("", 0)
	b, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.spooler.WaitShipped(ctx); err != nil {
		t.Fatalf("the spool left by the first server was not shipped: %v", err)
	}
	if got := metric(t, b, "adlink_clicks_shipped_total"); got != "1" {
		t.Errorf("adlink_clicks_shipped_total %s, want 1", got)
	}
	got := recorded(t, url)
	if v := got[id]; len(v) != 1 || v[0] != "billable" {
		t.Errorf("click %s: recorded %v, want once billable", id, v)
	}
	if len(got) != 1 {
		t.Errorf("Postgres holds the clicks %v, want the one", got)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var spent, rolled int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT coalesce(sum(micros), 0)::bigint FROM spend WHERE advertiser = $1),
		(SELECT coalesce(sum(spend_micros), 0)::bigint FROM rollups WHERE grain = $2 AND advertiser = $1)`,
		advertiser, int16(clicks.Day)).Scan(&spent, &rolled); err != nil {
		t.Fatal(err)
	}
	if spent != bid || rolled != bid {
		t.Errorf("the day's spend of %s is %d, its daily rollups %d; want one bid, %d", advertiser, spent, rolled, bid)
	}

	req = httptest.NewRequest(http.MethodGet, "/v2/report?group_by=advertiser", nil)
	req.Header.Set("Authorization", "Bearer demo-advertiser-report")
	rec = httptest.NewRecorder()
	b.Handler.ServeHTTP(rec, req)
	var rep struct {
		Rows []struct {
			Clicks   int64  `json:"clicks"`
			Billable int64  `json:"billable_clicks"`
			Spend    string `json:"spend"`
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); rec.Code != http.StatusOK || err != nil || len(rep.Rows) != 1 {
		t.Fatalf("the advertiser's report: %d %v %s", rec.Code, err, rec.Body)
	}
	if row := rep.Rows[0]; row.Clicks != 1 || row.Billable != 1 || row.Spend != report.Spend(bid) {
		t.Errorf("the advertiser's report: %+v, want 1 click, billed, spend %s", row, report.Spend(bid))
	}
}
