package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/internal/testredis"
)

// heldFeed serves one feed to every replica, by its own path, and holds
// the reads of the replica named held once armed until released.
type heldFeed struct {
	mu      sync.Mutex
	body    []byte
	held    string
	arrived chan struct{} // told when the held replica's read came
	release chan struct{}
}

func (f *heldFeed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	body, arrived, release := f.body, f.arrived, f.release
	hold := f.held != "" && r.URL.Path == "/"+f.held+".jsonl"
	f.mu.Unlock()
	if hold {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Write(body)
}

// hold makes the next reads of the replica name wait for the channel
// returned to close; arrived is told when one came.
func (f *heldFeed) hold(name string, body []byte) (arrived chan struct{}, release chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.body, f.held = body, name
	f.arrived, f.release = make(chan struct{}, 1), make(chan struct{})
	return f.arrived, f.release
}

// startFeedMember starts a replica on the Redis at redisURL and/or the
// Postgres at pgURL reading its feed from srv, telling waits of each
// click that starts to wait on it.
func startFeedMember(t *testing.T, redisURL, pgURL, srv, name string, waits chan<- struct{}) *App {
	t.Helper()
	cfg := testConfig(t)
	cfg.Catalogs = []string{srv + "/" + name + ".jsonl"}
	cfg.RedisURL, cfg.PostgresURL = redisURL, pgURL
	cfg.ClickKeys = []clicks.Key{{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}}
	cfg.KeyRate, cfg.KeyBurst, cfg.KeyNetworkShare = 1e6, 1e6, 1
	cfg.IPRate, cfg.IPBurst = 1e6, 1e6
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	a.replicas.mu.Lock()
	a.replicas.awaiting = func() { waits <- struct{}{} }
	a.replicas.mu.Unlock()
	return a
}

// TestReplicaBehindLandsNewAdsClick: a click link replica A made for an
// ad new in the catalog it just swapped in lands on replica B, which is
// still reading that catalog: B waits for its swap rather than answer
// 404. Clicks on ids no catalog has, made while B reads, all wait on the
// one read and get their 404 when it ends; once B has caught up, such a
// click gets its 404 without waiting. On Redis, and on Postgres alone.
func TestReplicaBehindLandsNewAdsClick(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		behindClick(t, testredis.Start(t, testredis.Options{}).URL(), "")
	})
	t.Run("postgres", func(t *testing.T) {
		behindClick(t, "", testpg.New(t))
	})
}

// behindClick is TestReplicaBehindLandsNewAdsClick on the Redis at
// redisURL and/or the Postgres at pgURL.
func behindClick(t *testing.T, redisURL, pgURL string) {
	ads := testcatalog.Generate(80, 21)
	fresh := &ads[0]
	fresh.Keywords = append(slices.Clone(fresh.Keywords), "zzqxfresh")
	before, after := feed(t, ads[1:]), feed(t, ads)
	f := &heldFeed{body: before}
	feeds := httptest.NewServer(f)
	defer feeds.Close()
	const flood = 20
	waitsA, waitsB := make(chan struct{}, 2*flood), make(chan struct{}, 2*flood)
	a := startFeedMember(t, redisURL, pgURL, feeds.URL, "A", waitsA)
	b := startFeedMember(t, redisURL, pgURL, feeds.URL, "B", waitsB)
	pubB := httptest.NewServer(b.Handler)
	defer pubB.Close()
	v1 := b.Catalog().Version

	arrived, release := f.hold("B", after)
	var released sync.Once
	open := func() { released.Do(func() { close(release) }) }
	defer open() // a failure lets B's read go before the feeds stop
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("reload on A: %+v", r)
	}
	v2 := a.Catalog().Version
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("B never read the feed on A's word")
	}
	if b.Catalog().Version != v1 {
		t.Fatalf("B serves %s while its read is held", b.Catalog().Version)
	}

	// A's answer for the new ad, and its click link.
	q := url.Values{"q": {"zzqxfresh"}, "loc": {fresh.Markets[0].Country}, "api_key": {"demo"}, "site_id": {"demo"}}
	status, body := get(t, a.Handler, "/v2/search/link?"+q.Encode())
	var answer struct {
		Link []struct {
			Ad string `json:"ad"`
		} `json:"link"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &answer) != nil || len(answer.Link) == 0 {
		t.Fatalf("search on A: %d %.300s", status, body)
	}
	link, err := url.Parse(answer.Link[0].Ad)
	if err != nil || link.Query().Get("adId") != fresh.ID {
		t.Fatalf("A's link %q is not for %s", answer.Link[0].Ad, fresh.ID)
	}
	unknown := *link
	uq := unknown.Query()
	uq.Set("adId", "nowhere.example")
	unknown.RawQuery = uq.Encode()

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	click := func(u *url.URL) (*http.Response, error) {
		res, err := client.Get(pubB.URL + u.RequestURI())
		if err == nil {
			res.Body.Close()
		}
		return res, err
	}
	type result struct {
		res *http.Response
		err error
	}
	freshc, unknownc := make(chan result, 1), make(chan result, flood)
	go func() {
		res, err := click(link)
		freshc <- result{res, err}
	}()
	for range flood {
		go func() {
			res, err := click(&unknown)
			unknownc <- result{res, err}
		}()
	}
	// Every click waits on B's one read; none is answered before it ends.
	for range flood + 1 {
		select {
		case <-waitsB:
		case r := <-freshc:
			t.Fatalf("the click on A's new ad was answered while B reads: %v %v", statusOf(r.res), r.err)
		case r := <-unknownc:
			t.Fatalf("a click on an unknown ad was answered while B reads: %v %v", statusOf(r.res), r.err)
		case <-time.After(30 * time.Second):
			t.Fatal("the clicks on B did not wait for its read")
		}
	}
	open()

	r := <-freshc
	if r.err != nil || r.res.StatusCode != http.StatusFound || r.res.Header.Get("Location") != fresh.Landing ||
		r.res.Header.Get("X-Adlink-Catalog") != v2 {
		t.Fatalf("click on A's new ad on B: %v %v %v, want 302 to %s from %s", statusOf(r.res), r.err, r.res.Header, fresh.Landing, v2)
	}
	for range flood {
		if r := <-unknownc; r.err != nil || r.res.StatusCode != http.StatusNotFound {
			t.Errorf("unknown ad on B: %v %v, want 404", statusOf(r.res), r.err)
		}
	}
	if b.Catalog().Version != v2 {
		t.Fatalf("B serves %s, not %s", b.Catalog().Version, v2)
	}

	// Caught up, B answers an unknown ad at once; and A, which made the
	// news, never waited.
	if res, err := click(&unknown); err != nil || res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown ad on B caught up: %v %v", statusOf(res), err)
	}
	if status, _ := get(t, a.Handler, unknown.RequestURI()); status != http.StatusNotFound {
		t.Errorf("unknown ad on A: %d", status)
	}
	if len(waitsB) != 0 || len(waitsA) != 0 {
		t.Errorf("clicks that waited: B %d after catching up, A %d; want none", len(waitsB), len(waitsA))
	}
}

// statusOf is a response's status for a failure's message.
func statusOf(res *http.Response) string {
	if res == nil {
		return "no response"
	}
	return res.Status
}
