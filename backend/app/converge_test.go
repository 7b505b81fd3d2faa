package app

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/clicks"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/internal/testredis"
	"github.com/adlink/adlink/match"
)

// member is one replica of a test deployment, reading a feed file of its
// own (as replicas on several machines each read the feed), refreshed by
// the test's ticks, and telling the test of each refresh.
type member struct {
	*App
	name      string
	feed      string
	tick      chan time.Time
	refreshed chan api.Reload
}

// deployment starts replicas named by names on the Redis at redisURL
// and/or the Postgres at pgURL, each serving ads from its own feed file.
func deployment(t testing.TB, redisURL, pgURL string, ads []match.Ad, names ...string) []*member {
	t.Helper()
	var ms []*member
	for _, name := range names {
		ms = append(ms, startMember(t, redisURL, pgURL, ads, name))
	}
	return ms
}

func startMember(t testing.TB, redisURL, pgURL string, ads []match.Ad, name string) *member {
	t.Helper()
	return startMemberWith(t, redisURL, pgURL, ads, name, "")
}

// startMemberWith starts a member whose advertisers file, when not "",
// is advertisers.
func startMemberWith(t testing.TB, redisURL, pgURL string, ads []match.Ad, name, advertisers string) *member {
	t.Helper()
	m := &member{name: name, tick: make(chan time.Time), refreshed: make(chan api.Reload, 64)}
	m.feed = filepath.Join(t.TempDir(), "feed.jsonl")
	writeFile(t, m.feed, feed(t, ads))
	cfg := testConfig(t)
	cfg.Catalogs = []string{m.feed}
	cfg.RedisURL, cfg.PostgresURL = redisURL, pgURL
	if advertisers != "" {
		cfg.AdvertisersFile = filepath.Join(t.TempDir(), "advertisers.json")
		writeFile(t, cfg.AdvertisersFile, []byte(advertisers))
	}
	cfg.ClickKeys = []clicks.Key{{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}}
	// The test's searches stay far below the key's limit.
	cfg.KeyRate, cfg.KeyBurst, cfg.KeyNetworkShare = 1e6, 1e6, 1
	a, err := New(cfg, Options{Refresh: m.tick, OnRefresh: func(r api.Reload) { m.refreshed <- r }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	m.App = a
	return m
}

// write gives every member's feed ads.
func write(t testing.TB, ms []*member, ads []match.Ad) {
	b := feed(t, ads)
	for _, m := range ms {
		writeFile(t, m.feed, b)
	}
}

// serving waits until m has refreshed to version, and fails when a
// refresh ends elsewhere and want is nil, or none comes.
func (m *member) serving(t testing.TB, version string) api.Reload {
	t.Helper()
	for {
		if m.Catalog().Version == version {
			return api.Reload{Result: resultSwapped, Version: version}
		}
		select {
		case r := <-m.refreshed:
			if r.Version == version {
				return r
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("replica %s serves %s, not %s", m.name, m.Catalog().Version, version)
		}
	}
}

// nextRefresh is how m's next refresh ended.
func (m *member) nextRefresh(t testing.TB) api.Reload {
	t.Helper()
	select {
	case r := <-m.refreshed:
		return r
	case <-time.After(30 * time.Second):
		t.Fatalf("replica %s: no refresh", m.name)
		return api.Reload{}
	}
}

// drain forgets the refreshes m told of so far.
func (m *member) drain() {
	for {
		select {
		case <-m.refreshed:
		default:
			return
		}
	}
}

// signed is a click URL's per-answer part: its signature and decision.
var signed = regexp.MustCompile(`"ad":"(?:[^"\\]|\\.)*"`)

// answers is what m answers to the searches, each with its catalog
// header, the click URLs (signed per answer) left out.
func (m *member) answers(t *testing.T, searches []testcatalog.Request) []string {
	t.Helper()
	var out []string
	for _, s := range searches {
		rec := httptest.NewRecorder()
		m.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v2/search/link?"+s.Values().Encode(), nil))
		body := signed.ReplaceAllString(rec.Body.String(), `"ad":""`)
		out = append(out, fmt.Sprintf("%d %s %s", rec.Code, rec.Header().Get("X-Adlink-Catalog"), body))
	}
	return out
}

// sameAnswers fails t unless every member answers the searches as the
// first does, from version, and the searches found ads.
func sameAnswers(t *testing.T, ms []*member, version string, searches []testcatalog.Request) {
	t.Helper()
	want := ms[0].answers(t, searches)
	found := 0
	for i, w := range want {
		if !strings.HasPrefix(w, "200 "+version+" ") {
			t.Fatalf("replica %s, search %d: %.200s; want 200 from %s", ms[0].name, i, w, version)
		}
		if !strings.Contains(w, `"link":[]`) {
			found++
		}
	}
	if found == 0 {
		t.Fatal("no search found an ad: the comparison proves nothing")
	}
	for _, m := range ms[1:] {
		if got := m.answers(t, searches); !slices.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("replica %s answers search %d\n%.300s\nreplica %s\n%.300s", m.name, i, got[i], ms[0].name, want[i])
				}
			}
		}
	}
}

// sent is how many announcements m sent.
func (m *member) sent() int {
	sent, _, _, _ := m.replicas.counts(m.Catalog().Version)
	return sent
}

// TestReplicasConvergeOnRedis: a reload on one replica is served by all
// three, whose answers are then the same bytes; a reload forced past the
// checks on one is served by the others, whose checks would refuse it; a
// replica whose feed cannot be read keeps its catalog, says it is behind,
// and catches up at its next refresh; a refresh on another's word is
// announced to no one; and a replica started later, or told nothing
// while Redis was down, catches up.
func TestReplicasConvergeOnRedis(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	ads := testcatalog.Generate(400, 11)
	ms := deployment(t, srv.URL(), "", ads, "A", "B", "C")
	a, b, c := ms[0], ms[1], ms[2]
	v1 := a.Catalog().Version
	searches := testcatalog.Requests(ads, 40, 3, false)
	sameAnswers(t, ms, v1, searches)

	// A change, reloaded on A by its admin listener.
	changed := slices.Clone(ads[1:])
	for i := range changed {
		if changed[i].PriceCents > 0 {
			changed[i].PriceCents += 100
			break
		}
	}
	write(t, ms, changed)
	rec := httptest.NewRecorder()
	a.Admin.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://127.0.0.1/admin/reload", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"result":"swapped"`) {
		t.Fatalf("POST /admin/reload on A: %d %s", rec.Code, rec.Body)
	}
	v2 := a.Catalog().Version
	for _, m := range ms[1:] {
		if r := m.serving(t, v2); r.Result != resultSwapped {
			t.Errorf("replica %s: %+v", m.name, r)
		}
	}
	sameAnswers(t, ms, v2, testcatalog.Requests(changed, 40, 4, false))
	// Counted once B and C took A's word: their start is behind them.
	sentB, sentC := b.sent(), c.sent()

	// Forced on A: a third of the ads, which B's and C's checks refuse
	// on their own refresh, as A's did.
	write(t, ms, changed[:130])
	if r := b.Reload(context.Background(), false); r.Result != resultRefused {
		t.Fatalf("B's own refresh of the cut feed: %+v, want refused", r)
	}
	b.drain()
	if r := a.Reload(context.Background(), true); r.Result != resultSwapped || r.Ads != 130 {
		t.Fatalf("forced reload on A: %+v", r)
	}
	v3 := a.Catalog().Version
	for _, m := range ms[1:] {
		m.serving(t, v3)
	}
	sameAnswers(t, ms, v3, testcatalog.Requests(changed[:130], 40, 5, false))
	// B's and C's refreshes on A's word were announced to no one (the
	// worker would have sent them before taking the next word).
	if b.sent() != sentB || c.sent() != sentC {
		t.Errorf("announcements sent by B %d -> %d, by C %d -> %d: a refresh on another's word was announced",
			sentB, b.sent(), sentC, c.sent())
	}

	// C's feed breaks: A's next change reaches A and B; C keeps v3 and says
	// it is behind.
	grown := slices.Clone(changed[:140])
	write(t, ms[:2], grown)
	writeFile(t, c.feed, []byte("{broken\n"))
	c.drain()
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("A: %+v", r)
	}
	v4 := a.Catalog().Version
	b.serving(t, v4)
	if r := c.nextRefresh(t); r.Result != resultFailed || r.Version != v3 {
		t.Fatalf("C on A's word with its feed broken: %+v, want failed on %s", r, v3)
	}
	if s := readyz(t, c.App); s.Version != v3 || s.Replicas == nil || s.Replicas.Version != v4 || !s.Replicas.Behind {
		t.Errorf("C's /readyz: %+v %+v, want serving %s, behind %s", s, s.Replicas, v3, v4)
	}
	_, metrics := get(t, c.Admin, "/metrics")
	for _, want := range []string{"adlink_catalog_behind 1", "adlink_catalog_refresh_failing 1", `adlink_catalog_announcements_total{outcome="heard"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("C's /metrics lacks %s:\n%s", want, grep(metrics, "catalog"))
		}
	}
	if s := readyz(t, b.App); s.Replicas == nil || s.Replicas.Behind {
		t.Errorf("B's /readyz: %+v", s.Replicas)
	}
	// Fixed, C catches up at its next refresh.
	writeFile(t, c.feed, feed(t, grown))
	c.tick <- time.Now()
	c.serving(t, v4)
	if s := readyz(t, c.App); s.Replicas.Behind {
		t.Errorf("C's /readyz after it caught up: %+v", s.Replicas)
	}
	_, metrics = get(t, c.Admin, "/metrics")
	if !strings.Contains(metrics, "adlink_catalog_behind 0") {
		t.Errorf("C's /metrics:\n%s", grep(metrics, "catalog_behind"))
	}
	sameAnswers(t, ms, v4, testcatalog.Requests(grown, 40, 6, false))

	// Redis is down while A reloads: nobody is told, until Redis is back.
	srv.Kill()
	latest := slices.Clone(grown[1:])
	write(t, ms, latest)
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("A with Redis down: %+v", r)
	}
	v5 := a.Catalog().Version
	_, metrics = get(t, a.Admin, "/metrics")
	if !strings.Contains(metrics, `adlink_catalog_announcements_total{outcome="failed"} 1`) {
		t.Errorf("A's /metrics does not count the announcement that failed:\n%s", grep(metrics, "announcements"))
	}
	srv.Start()
	for _, m := range ms[1:] {
		m.serving(t, v5)
	}
	// A replica started now serves what the others do.
	d := startMember(t, srv.URL(), "", latest, "D")
	sameAnswers(t, append(ms, d), v5, testcatalog.Requests(latest, 40, 7, false))
}

// TestReplicasConvergeOnPostgres: with Postgres alone, the replicas
// announce over LISTEN/NOTIFY, a forced catalog included; a replica that
// was down then serves it once started, and is not behind.
func TestReplicasConvergeOnPostgres(t *testing.T) {
	url := testpg.New(t)
	ads := testcatalog.Generate(300, 12)
	ms := deployment(t, "", url, ads, "A", "B")
	a, b := ms[0], ms[1]
	changed := slices.Clone(ads[2:])
	write(t, ms, changed)
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("A: %+v", r)
	}
	v2 := a.Catalog().Version
	b.serving(t, v2)
	sameAnswers(t, ms, v2, testcatalog.Requests(changed, 40, 8, false))

	// The listeners' connections cut (as a Postgres restart or a network
	// would): A's next change reaches B all the same, by NOTIFY once B
	// listens again, or by the record it reads then.
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	var listeners int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`,
		pgstore.ListenerName).Scan(&listeners)
	conn.Close(ctx)
	// B's listener is up (B took A's word); A's is, unless it is still
	// connecting.
	if err != nil || listeners < 1 {
		t.Fatalf("cutting the listeners: %d cut, %v; want B's and A's", listeners, err)
	}
	changed = changed[1:]
	write(t, ms, changed)
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("A: %+v", r)
	}
	b.serving(t, a.Catalog().Version)

	// A forced catalog the checks refuse, while C is down.
	cut := changed[:100]
	write(t, ms, cut)
	if r := a.Reload(context.Background(), true); r.Result != resultSwapped {
		t.Fatalf("forced on A: %+v", r)
	}
	v3 := a.Catalog().Version
	b.serving(t, v3)
	c := startMember(t, "", url, cut, "C")
	if got := c.Catalog().Version; got != v3 {
		t.Errorf("C started on the feed: %s, want %s", got, v3)
	}
	ms = append(ms, c)
	sameAnswers(t, ms, v3, testcatalog.Requests(cut, 40, 9, false))
	// C listens: A's next change reaches it.
	more := changed[:110]
	write(t, ms, more)
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("A: %+v", r)
	}
	v4 := a.Catalog().Version
	for _, m := range ms[1:] {
		m.serving(t, v4)
	}
	if s := readyz(t, c.App); s.Replicas == nil || s.Replicas.Version != v4 || s.Replicas.Behind {
		t.Errorf("C's /readyz: %+v", s.Replicas)
	}
}

// TestForgedAnnouncements: what another client of the Redis publishes on
// the replicas' channel cannot make a replica serve anything but its own
// feeds: a message that does not parse is dropped, and a well-formed one
// naming a version the feeds do not give costs a refresh that finds them
// unchanged, skips no check for anything else, and shows as behind.
func TestForgedAnnouncements(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	ads := testcatalog.Generate(200, 13)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	sub := rdb.Subscribe(t.Context(), "adlink:catalog")
	defer sub.Close()
	if _, err := sub.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	a := deployment(t, srv.URL(), "", ads, "A")[0]
	v1 := a.Catalog().Version
	// A announces its catalog once it listens: from then on it hears.
	if msg, err := sub.ReceiveMessage(t.Context()); err != nil || !strings.Contains(msg.Payload, v1) {
		t.Fatalf("A's first announcement: %v %v", msg, err)
	}
	// The feed now lost most of its ads: a refresh on a forged word must
	// still refuse it.
	writeFile(t, a.feed, feed(t, ads[:20]))
	a.drain()
	for _, msg := range []string{"", "v1 " + strings.Repeat("a", 5000) + " x", "v1 ../../../etc evil", "reload now"} {
		if err := rdb.Publish(t.Context(), "adlink:catalog", msg).Err(); err != nil {
			t.Fatal(err)
		}
	}
	forged := "deadbeefdeadbeef"
	if err := rdb.Publish(t.Context(), "adlink:catalog", "v1 "+forged+" evil").Err(); err != nil {
		t.Fatal(err)
	}
	// Only the well-formed word starts a refresh: the first one seen.
	if r := a.nextRefresh(t); r.Result != resultRefused || r.Version != v1 {
		t.Errorf("refresh on a forged word: %+v, want refused on %s", r, v1)
	}
	if s := readyz(t, a.App); s.Version != v1 || s.Replicas == nil || s.Replicas.Version != forged || !s.Replicas.Behind {
		t.Errorf("/readyz: %+v %+v", s, s.Replicas)
	}
	select {
	case r := <-a.refreshed:
		t.Errorf("another refresh: %+v; the malformed messages were not all dropped", r)
	default:
	}
	// The replica's own refresh still announces and serves its feeds.
	writeFile(t, a.feed, feed(t, ads[1:]))
	if r := a.Reload(t.Context(), false); r.Result != resultSwapped {
		t.Fatalf("own refresh: %+v", r)
	}
	if s := readyz(t, a.App); s.Replicas.Behind || s.Replicas.Version != a.Catalog().Version {
		t.Errorf("/readyz after its own refresh: %+v", s.Replicas)
	}
}
