package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/match"
)

// TestRedirectAwaitsNewerCatalog: a click on an ad the request's catalog
// lacks lands when the replica, behind, swaps in a catalog that has it,
// from that catalog; it gets 404 when no newer one comes; and a network
// over its limit gets 404 without waiting.
func TestRedirectAwaitsNewerCatalog(t *testing.T) {
	all := fixture()
	const id = "OTTO.2.555"
	var without []match.Ad
	for _, a := range all {
		if a.ID != id {
			without = append(without, a)
		}
	}
	old, next := catalogVersion(t, "v1", without), catalogVersion(t, "v2", all)
	var cur atomic.Pointer[Catalog]
	var swap atomic.Bool
	var waits atomic.Int32
	await := func(ctx context.Context) bool {
		waits.Add(1)
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the wait has no bound")
		}
		if !swap.Load() {
			return false
		}
		cur.Store(next)
		return true
	}
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.IPRate, cfg.IPBurst = 1e-9, 2
	h := NewServer(Deps{Config: cfg, Partners: testPartners(t),
		Clicks:       &clickRecorder{AppendFn: func(context.Context, clicks.Click) error { return nil }},
		Catalog:      func() *Catalog { return cur.Load() },
		AwaitCatalog: await,
		Now:          func() time.Time { return testClock }})
	click := func(remote string) *http.Response {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/v1/redirect?type=search&adId="+id+"&adType=product&api_key=demo&site_id=demo&criterionId=handy", nil)
		req.RemoteAddr = remote
		h.ServeHTTP(rec, req)
		return rec.Result()
	}

	cur.Store(old)
	if res := click("192.0.2.1:1"); res.StatusCode != http.StatusNotFound || waits.Load() != 1 {
		t.Fatalf("no newer catalog: %d after %d waits, want 404 after 1", res.StatusCode, waits.Load())
	}
	swap.Store(true)
	res := click("192.0.2.1:1")
	if res.StatusCode != http.StatusFound || res.Header.Get("X-Adlink-Catalog") != "v2" || waits.Load() != 2 {
		t.Fatalf("newer catalog: %d %v after %d waits, want 302 from v2", res.StatusCode, res.Header, waits.Load())
	}
	if want := fixtureAd(t, id).Landing; res.Header.Get("Location") != want {
		t.Errorf("Location %q, want %q", res.Header.Get("Location"), want)
	}

	// Over its network's limit (a burst of 2, spent), a click waits not.
	cur.Store(old)
	if res := click("192.0.2.1:1"); res.StatusCode != http.StatusNotFound || waits.Load() != 2 {
		t.Errorf("over the limit: %d after %d waits, want 404 without a wait", res.StatusCode, waits.Load())
	}
}
