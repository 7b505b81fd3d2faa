package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/siteshards"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/match"
)

// siteShardReplica starts a replica on the Postgres at dbURL serving ads
// with a site shard budget of 20 kB, over loopback.
func siteShardReplica(t *testing.T, dbURL string, ads []match.Ad) (*App, *httptest.Server) {
	t.Helper()
	cfg := testConfig(t)
	cfg.PostgresURL = dbURL
	cfg.SiteShardKB = 20
	a, err := New(cfg, Options{Ads: ads})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	return a, srv
}

// fetched is a shard or fragment as a page got it.
type fetched struct {
	status         int
	body           []byte
	etag, encoding string
	cache          string
}

// fetch GETs path of base, asking for acceptEncoding, and decodes
// nothing; safe on any goroutine (a failure is an error, status 0).
func fetch(t *testing.T, base, path, acceptEncoding string) fetched {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Error(err)
		return fetched{}
	}
	req.Header.Set("Accept-Encoding", acceptEncoding)
	res, err := http.DefaultTransport.RoundTrip(req) // no decoding
	if err != nil {
		t.Error(err)
		return fetched{}
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Error(err)
		return fetched{}
	}
	return fetched{res.StatusCode, body, res.Header.Get("ETag"), res.Header.Get("Content-Encoding"), res.Header.Get("Cache-Control")}
}

// TestReplicasServeEachOthersSiteShards: the head shard a manifest of
// replica A names, and each of its fragments, are served by replica B,
// which never built them, byte for byte as A serves them, in every
// encoding; B reads it from Postgres once. A shard whose row in Postgres
// was changed is not served.
func TestReplicasServeEachOthersSiteShards(t *testing.T) {
	dbURL := testpg.New(t)
	ads := testcatalog.Generate(3000, 9)
	a, srvA := siteShardReplica(t, dbURL, ads)
	b, srvB := siteShardReplica(t, dbURL, ads)

	ctx := context.Background()
	manifest := func() manifestShard {
		t.Helper()
		status, body := get(t, a.Handler, "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de")
		var m manifestShard
		if err := json.Unmarshal([]byte(body), &m); status != http.StatusOK || err != nil {
			t.Fatalf("manifest on A: %d %v %.300s", status, err, body)
		}
		return m
	}
	manifest() // starts the market's head
	if err := a.SiteShards.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	m := manifest()
	if m.Selection != "head" || m.Shard.Fragments == 0 {
		t.Fatalf("A's manifest: %+v; want the market's head, in fragments", m)
	}
	// A first view's fetches come at once: B reads the shard once.
	var wg sync.WaitGroup
	statuses := make(chan int, 8)
	for range 8 {
		wg.Go(func() { statuses <- fetch(t, srvB.URL, m.Shard.URL, "zstd").status })
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != http.StatusOK {
			t.Fatalf("the head from B, fetched at once: %d", st)
		}
	}
	if st := b.SiteShards.Stats(); st.Fetched != 1 || st.FetchFailed != 0 {
		t.Errorf("B's stats: %+v; want the head read once", st)
	}
	paths := []string{m.Shard.URL}
	for k := range m.Shard.Fragments {
		paths = append(paths, fmt.Sprintf("%s/%d", m.Shard.URL, k))
	}
	for _, p := range paths {
		for _, enc := range []string{"zstd", "gzip", "identity"} {
			fromA, fromB := fetch(t, srvA.URL, p, enc), fetch(t, srvB.URL, p, enc)
			if fromA.status != http.StatusOK {
				t.Fatalf("%s (%s) from A: %d", p, enc, fromA.status)
			}
			if fromB.status != http.StatusOK || !bytes.Equal(fromB.body, fromA.body) || fromB.etag != fromA.etag ||
				fromB.encoding != fromA.encoding || fromB.cache != fromA.cache {
				t.Fatalf("%s (%s) from B: %d, %d bytes, ETag %s, %q, %q; A's: %d bytes, ETag %s, %q, %q", p, enc,
					fromB.status, len(fromB.body), fromB.etag, fromB.encoding, fromB.cache,
					len(fromA.body), fromA.etag, fromA.encoding, fromA.cache)
			}
		}
	}

	// B's own manifest, once B built its head, which may be the same
	// bytes as the one it read: a head with its index.
	get(t, b.Handler, "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de")
	if err := b.SiteShards.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	status, body := get(t, b.Handler, "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de")
	var mb manifestShard
	if err := json.Unmarshal([]byte(body), &mb); status != http.StatusOK || err != nil || mb.Selection != "head" {
		t.Fatalf("manifest on B: %d %v %.300s", status, err, body)
	}
	t.Logf("B's head is A's: %v", mb.Shard.SHA256 == m.Shard.SHA256)

	// A row changed in Postgres: a replica that reads it serves nothing.
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, `UPDATE site_shards SET body = set_byte(body, length(body) / 2, get_byte(body, length(body) / 2) # 1)
		WHERE sha256 = $1`, m.Shard.SHA256)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("changing the row of %s: %v %v", m.Shard.SHA256, tag, err)
	}
	c, srvC := siteShardReplica(t, dbURL, ads)
	for _, p := range paths[:2] {
		if got := fetch(t, srvC.URL, p, "zstd"); got.status != http.StatusNotFound {
			t.Errorf("%s from C, its row changed: %d, want 404", p, got.status)
		}
	}
	if st := c.SiteShards.Stats(); st.FetchFailed == 0 || st.Fetched != 0 {
		t.Errorf("C's stats: %+v; want the reads failed", st)
	}
	// A shard no replica built is missing from the names listed: not read.
	was := c.SiteShards.Stats()
	if got := fetch(t, srvC.URL, "/v2/shards/"+string(bytes.Repeat([]byte("ab"), 32)), "zstd"); got.status != http.StatusNotFound {
		t.Errorf("a shard no one built from C: %d", got.status)
	}
	if st := c.SiteShards.Stats(); st.FetchMissed != was.FetchMissed+1 || st.FetchFailed != was.FetchFailed || st.Listings < was.Listings+1 {
		t.Errorf("C's stats: %+v, were %+v; want one more missing, listed again", st, was)
	}
}

// TestReplicaBehindServesNewCatalogShard: the market shard a manifest of
// replica A names, of the catalog A just swapped in, is fetched from
// replica B while B still reads that catalog: B waits for its swap, as a
// click does, and serves the shard A serves rather than a 404. Once B
// caught up, a shard no catalog has is a 404 at once.
func TestReplicaBehindServesNewCatalogShard(t *testing.T) {
	dbURL := testpg.New(t)
	ads := testcatalog.Generate(80, 21)
	fresh := ads[0]
	before, after := feed(t, ads[1:]), feed(t, ads)
	f := &heldFeed{body: before}
	feeds := httptest.NewServer(f)
	defer feeds.Close()
	waitsA, waitsB := make(chan struct{}, 4), make(chan struct{}, 4)
	a := startFeedMember(t, "", dbURL, feeds.URL, "A", waitsA)
	b := startFeedMember(t, "", dbURL, feeds.URL, "B", waitsB)
	pubA, pubB := httptest.NewServer(a.Handler), httptest.NewServer(b.Handler)
	defer pubA.Close()
	defer pubB.Close()
	v1 := b.Catalog().Version

	arrived, release := f.hold("B", after)
	var released sync.Once
	open := func() { released.Do(func() { close(release) }) }
	defer open()
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("reload on A: %+v", r)
	}
	v2 := a.Catalog().Version
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("B never read the feed on A's word")
	}

	mk := fresh.Markets[0]
	status, body := get(t, a.Handler, "/v2/shards?api_key=demo&site_id=demo&loc="+mk.Country+"&lang="+mk.Lang)
	var m manifestShard
	if err := json.Unmarshal([]byte(body), &m); status != http.StatusOK || err != nil {
		t.Fatalf("manifest on A: %d %v %.300s", status, err, body)
	}
	if b.Catalog().Shards.Shard(m.Shard.SHA256) != nil {
		t.Fatalf("B's catalog %s has A's new shard %s: the test needs one it lacks", v1, m.Shard.SHA256)
	}
	// Its bytes, as both compress a new catalog's at fast levels first.
	want := fetch(t, pubA.URL, m.Shard.URL, "identity")
	if want.status != http.StatusOK {
		t.Fatalf("%s from A: %d", m.Shard.URL, want.status)
	}

	got := make(chan fetched, 1)
	go func() { got <- fetch(t, pubB.URL, m.Shard.URL, "identity") }()
	select {
	case <-waitsB:
	case r := <-got:
		t.Fatalf("the shard of A's catalog was answered by B while it reads: %d", r.status)
	case <-time.After(30 * time.Second):
		t.Fatal("the shard's request on B did not wait for its read")
	}
	open()
	if r := <-got; r.status != http.StatusOK || !bytes.Equal(r.body, want.body) || r.etag != want.etag || r.cache != want.cache {
		t.Fatalf("%s from B once caught up: %d, %d bytes, ETag %s, %q; A's: %d bytes, ETag %s, %q", m.Shard.URL,
			r.status, len(r.body), r.etag, r.cache, len(want.body), want.etag, want.cache)
	}
	if b.Catalog().Version != v2 {
		t.Fatalf("B serves %s, not %s", b.Catalog().Version, v2)
	}
	if r := fetch(t, pubB.URL, "/v2/shards/"+string(bytes.Repeat([]byte("cd"), 32)), "zstd"); r.status != http.StatusNotFound {
		t.Errorf("a shard no catalog has, from B caught up: %d", r.status)
	}
	if len(waitsB) != 0 || len(waitsA) != 0 {
		t.Errorf("requests that waited: B %d after catching up, A %d; want none", len(waitsB), len(waitsA))
	}
}

// TestSiteShardsSharedOncePostgresAnswers: a head built while Postgres is
// down is served by its replica, and is a 404 on another, counted on
// both; once Postgres answers, the next manifest that names it a minute
// later has it written, and the other replica serves it.
func TestSiteShardsSharedOncePostgresAnswers(t *testing.T) {
	pg := testpg.Start(t)
	ads := testcatalog.Generate(3000, 9)
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	start := func() (*App, *httptest.Server) {
		cfg := testConfig(t)
		cfg.PostgresURL = pg.URL()
		cfg.SiteShardKB = 20
		a, err := New(cfg, Options{Ads: ads, SiteShards: &siteshards.Options{Now: clock}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(a.Handler)
		t.Cleanup(func() {
			srv.Close()
			a.Close()
		})
		return a, srv
	}
	a, srvA := start()
	b, srvB := start()
	ctx := context.Background()
	manifest := func() manifestShard {
		t.Helper()
		status, body := get(t, a.Handler, "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de")
		var m manifestShard
		if err := json.Unmarshal([]byte(body), &m); status != http.StatusOK || err != nil {
			t.Fatalf("manifest on A: %d %v %.300s", status, err, body)
		}
		if err := a.SiteShards.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return m
	}

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	manifest() // the head is built, and not shared
	m := manifest()
	if m.Selection != "head" {
		t.Fatalf("A's manifest: %+v; want the market's head", m)
	}
	if got := fetch(t, srvA.URL, m.Shard.URL, "zstd"); got.status != http.StatusOK {
		t.Fatalf("the head from A, Postgres down: %d", got.status)
	}
	if got := fetch(t, srvB.URL, m.Shard.URL, "zstd"); got.status != http.StatusNotFound {
		t.Fatalf("the head from B, Postgres down: %d", got.status)
	}
	if st := a.SiteShards.Stats(); st.ShareFailed == 0 || st.Shared != 0 {
		t.Errorf("A's stats, Postgres down: %+v", st)
	}
	if st := b.SiteShards.Stats(); st.FetchFailed == 0 {
		t.Errorf("B's stats, Postgres down: %+v", st)
	}

	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	// Named again within the minute: not tried again yet.
	manifest()
	if st := a.SiteShards.Stats(); st.Shared != 0 {
		t.Errorf("shared again at once: %+v", st)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if again := manifest(); again.Shard.SHA256 != m.Shard.SHA256 {
		t.Fatalf("the head changed: %s, was %s", again.Shard.SHA256, m.Shard.SHA256)
	}
	if st := a.SiteShards.Stats(); st.Shared != 1 {
		t.Errorf("A's stats, Postgres back: %+v; want the head shared", st)
	}
	fromA := fetch(t, srvA.URL, m.Shard.URL+"/0", "gzip")
	if got := fetch(t, srvB.URL, m.Shard.URL+"/0", "gzip"); got.status != http.StatusOK || !bytes.Equal(got.body, fromA.body) {
		t.Fatalf("the head's first fragment from B, Postgres back: %d, %d bytes; A's %d", got.status, len(got.body), len(fromA.body))
	}
}

// TestUnknownShardFloodServesRealOnes: while clients flood replica B with
// requests for random shard names, each a 404, B lists Postgres's names
// once a second at most and reads no row but the head replica A built,
// which it serves within the flood.
func TestUnknownShardFloodServesRealOnes(t *testing.T) {
	dbURL := testpg.New(t)
	ads := testcatalog.Generate(3000, 9)
	a, _ := siteShardReplica(t, dbURL, ads)
	start := time.Now() // before B's first listing, which its bound counts
	b, srvB := siteShardReplica(t, dbURL, ads)
	get(t, a.Handler, "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de") // starts the market's head
	if err := a.SiteShards.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	status, body := get(t, a.Handler, "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de")
	var m manifestShard
	if err := json.Unmarshal([]byte(body), &m); status != http.StatusOK || err != nil || m.Selection != "head" {
		t.Fatalf("manifest on A: %d %v %.300s", status, err, body)
	}

	stop := make(chan struct{})
	var flood sync.WaitGroup
	var requests sync.Map
	for w := range 32 {
		flood.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if got := fetch(t, srvB.URL, fmt.Sprintf("/v2/shards/%032x%032x", w+1, i), "zstd"); got.status != http.StatusNotFound {
					t.Errorf("a random shard name from B: %d", got.status)
					return
				}
				requests.Store([2]int{w, i}, true)
			}
		})
	}
	count := func() int {
		n := 0
		requests.Range(func(any, any) bool { n++; return true })
		return n
	}
	for count() < 64 {
		time.Sleep(time.Millisecond)
	}
	if got := fetch(t, srvB.URL, m.Shard.URL, "zstd"); got.status != http.StatusOK {
		t.Errorf("A's head from B within the flood: %d", got.status)
	}
	close(stop)
	flood.Wait()
	took := time.Since(start)
	st := b.SiteShards.Stats()
	if most := int(took/time.Second) + 2; st.Listings > most || st.Reads != 1 || st.Fetched != 1 || st.FetchFailed != 0 || st.FetchMissed < 64 {
		t.Errorf("B's stats after %d random names over %s: %+v; want at most %d listings, the head read and no other row",
			count(), took, st, most)
	}
}
