package api

import (
	"context"
	"crypto/sha256"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-json"
	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/budget"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/store"
	"github.com/adlink/adlink/match"
)

// budgetEnv is a server whose clicks go through the bbolt Ledger, with
// daily budgets, over a data directory a test may reopen as a restart.
type budgetEnv struct {
	dir     string
	ix      *market.Set
	set     *shards.Set
	keys    *clicks.Keys
	book    *accounts.Book
	handler http.Handler
	db      *bolt.DB
	rollups clicks.BoltRollups
	mu      sync.Mutex
	now     time.Time
	rand    *rand.Rand
}

// budgetAdvertisers: handy-bestkauf.de (bid 0.45) may spend two clicks a
// day as readers click, amazon.de (bid 0.30) ten, spread over the day.
func budgetAdvertisers() []accounts.AdvertiserAccount {
	return []accounts.AdvertiserAccount{
		{ID: "handy-bestkauf.de", DailyBudget: "0.90", Currency: "EUR"},
		{ID: "amazon.de", DailyBudget: "3.00", Currency: "EUR", Pacing: accounts.Even},
	}
}

func newBudgetEnv(t *testing.T, at time.Time) *budgetEnv {
	t.Helper()
	return newBudgetEnvWith(t, fixture(), budgetAdvertisers(), at)
}

// newBudgetEnvWith serves ads, with the advertisers' budgets, at the
// time at.
func newBudgetEnvWith(t testing.TB, ads []match.Ad, advertisers []accounts.AdvertiserAccount, at time.Time) *budgetEnv {
	t.Helper()
	env := budgetEnvOf(t, ads, advertisers, at)
	env.start(t)
	return env
}

// budgetEnvOf is newBudgetEnvWith's environment before its server is
// built: a test may build one of its own.
func budgetEnvOf(t testing.TB, ads []match.Ad, advertisers []accounts.AdvertiserAccount, at time.Time) *budgetEnv {
	t.Helper()
	ix, err := market.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	set, err := shards.Build(ix, shards.Options{RedirectURL: "https://r.example"})
	if err != nil {
		t.Fatal(err)
	}
	secret := sha256.Sum256([]byte("budget test key"))
	keys, err := clicks.NewKeys(clicks.Key{ID: "b1", Secret: secret[:]})
	if err != nil {
		t.Fatal(err)
	}
	book, err := accounts.New(nil, advertisers)
	if err != nil {
		t.Fatal(err)
	}
	return &budgetEnv{dir: t.TempDir(), ix: ix, set: set, keys: keys, book: book, now: at, rand: rand.New(rand.NewPCG(1, 2))}
}

// start opens the data directory and builds the server over it, as a
// process start does.
func (env *budgetEnv) start(t testing.TB) {
	t.Helper()
	db, err := store.Open(env.dir)
	if err != nil {
		t.Fatal(err)
	}
	env.db = db
	t.Cleanup(func() { db.Close() })
	log, err := clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	windows, err := clicks.NewWindows(db)
	if err != nil {
		t.Fatal(err)
	}
	decisions, err := clicks.NewDecisions(db)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := clicks.NewLedger(db)
	if err != nil {
		t.Fatal(err)
	}
	rollups, err := clicks.NewRollups(db)
	if err != nil {
		t.Fatal(err)
	}
	env.rollups = rollups
	gate, err := budget.New(context.Background(), budget.Options{Budgets: env.book.Budgets(), Spent: rollups, Now: env.clock,
		Rand: func() float64 {
			env.mu.Lock()
			defer env.mu.Unlock()
			return env.rand.Float64()
		}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.IPRate, cfg.IPBurst, cfg.KeyRate, cfg.KeyBurst = 1e9, 1e9, 1e9, 1e9
	cfg.NetworkDailyClicks, cfg.IPv4PrefixDailyClicks = 1<<30, 1<<30
	env.handler = NewServer(Deps{Config: cfg, Indexes: env.ix, Partners: testPartners(t), Clicks: log, ClickKeys: env.keys,
		Windows: windows, Decisions: decisions, Ledger: ledger, Rollups: rollups, Accounts: env.book, Budget: gate,
		Shards: env.set, Now: env.clock})
}

// restart closes the data directory and starts again over it.
func (env *budgetEnv) restart(t *testing.T) {
	t.Helper()
	if err := env.db.Close(); err != nil {
		t.Fatal(err)
	}
	env.start(t)
}

func (env *budgetEnv) clock() time.Time {
	env.mu.Lock()
	defer env.mu.Unlock()
	return env.now
}

func (env *budgetEnv) setClock(at time.Time) {
	env.mu.Lock()
	defer env.mu.Unlock()
	env.now = at
}

func (env *budgetEnv) get(t *testing.T, target, ip string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.RemoteAddr = net.JoinHostPort(ip, "40000")
	req.Header.Set("User-Agent", browserUA)
	clicks.Navigation.Header(req.Header)
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, req)
	return rec
}

// search returns the click URLs of an answer, by adId.
func (env *budgetEnv) search(t *testing.T, query string) map[string]string {
	t.Helper()
	rec := env.get(t, "/v2/search/link?api_key=demo&site_id=demo&"+query, "192.0.2.200")
	var resp struct{ Link []link }
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("search %s: %d %v\n%s", query, rec.Code, err, rec.Body)
	}
	out := map[string]string{}
	for _, l := range resp.Link {
		u, err := url.Parse(l.Ad)
		if err != nil {
			t.Fatal(err)
		}
		out[u.Query().Get("adId")] = strings.TrimPrefix(l.Ad, "https://r.example")
	}
	return out
}

// click follows a click URL from a network of its own and returns what
// the click log recorded.
func (env *budgetEnv) click(t *testing.T, target string, network int) clicks.Click {
	t.Helper()
	u, _ := url.Parse(target)
	return env.clickTo(t, target, network, fixtureAdLanding(t, u.Query().Get("adId")))
}

// clickTo follows a click URL from a network of its own, checks that it
// lands on landing, and returns what the click log recorded.
func (env *budgetEnv) clickTo(t *testing.T, target string, network int, landing string) clicks.Click {
	t.Helper()
	rec := env.get(t, target, "198.51."+strconv.Itoa(network/250)+"."+strconv.Itoa(network%250+1))
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != landing {
		t.Fatalf("%s: %d to %q, want 302 to %q", target, rec.Code, rec.Header().Get("Location"), landing)
	}
	var last clicks.Click
	log, err := clicks.New(env.db)
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Scan(context.Background(), time.Time{}, time.Time{}, func(c clicks.Click) error { last = c; return nil }); err != nil {
		t.Fatal(err)
	}
	return last
}

// manifest returns the de-DE shard manifest's budget fields.
func (env *budgetEnv) manifest(t *testing.T) (exclude []uint32, pace []struct{ Group uint32 }) {
	t.Helper()
	rec := env.get(t, "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de", "192.0.2.200")
	var m struct {
		Exclude []uint32
		Pace    []struct{ Group uint32 }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("manifest: %d %v\n%s", rec.Code, err, rec.Body)
	}
	return m.Exclude, m.Pace
}

const handyQuery = "q=lg+handy&loc=de&lang=de&size=4"

// An advertiser whose budget is spent drops out of the next answer, which
// still fills size; the links issued before keep landing their readers
// and bill nothing more (the attack: collect links, click them after the
// budget is spent); the manifest tells pages to drop it; a restart keeps
// it stopped, and the next UTC day brings it back.
func TestBudgetStopsAds(t *testing.T) {
	env := newBudgetEnv(t, testClock)
	var issued []string
	for range 6 {
		l, ok := env.search(t, handyQuery)["handy-bestkauf.de"]
		if !ok {
			t.Fatalf("handy-bestkauf.de not in the answer before its budget is spent")
		}
		issued = append(issued, l)
	}
	if ex, _ := env.manifest(t); ex != nil {
		t.Fatalf("manifest excludes %v before any spend", ex)
	}
	var billed int64
	for i, l := range issued {
		c := env.click(t, l, i)
		switch {
		case i < 2 && !c.Billable:
			t.Fatalf("click %d within the budget: %q", i, c.Reason)
		case i >= 2 && (c.Billable || c.Reason != clicks.ReasonOverBudget):
			t.Fatalf("click %d after the budget is spent: billable %v %q, want over_budget", i, c.Billable, c.Reason)
		}
		billed += c.Spend()
		if i == 1 {
			// Right after the click that spends the budget.
			got := env.search(t, handyQuery)
			if _, ok := got["handy-bestkauf.de"]; ok || len(got) != 4 {
				t.Fatalf("answer after the budget is spent: %v, want 4 ads without handy-bestkauf.de", slices.Collect(maps.Keys(got)))
			}
		}
	}
	if billed != 900_000 {
		t.Errorf("billed %d, want the budget, 900000", billed)
	}
	group := env.ix.For("de", "de").AdvertiserGroups()["handy-bestkauf.de"]
	if ex, _ := env.manifest(t); !slices.Equal(ex, []uint32{group}) {
		t.Errorf("manifest excludes %v, want [%d]", ex, group)
	}

	env.restart(t)
	if _, ok := env.search(t, handyQuery)["handy-bestkauf.de"]; ok {
		t.Error("handy-bestkauf.de shown again after a restart the same day")
	}
	if ex, _ := env.manifest(t); !slices.Equal(ex, []uint32{group}) {
		t.Errorf("manifest after a restart excludes %v, want [%d]", ex, group)
	}

	env.setClock(testClock.Truncate(24 * time.Hour).Add(24*time.Hour + time.Minute))
	l, ok := env.search(t, handyQuery)["handy-bestkauf.de"]
	if !ok {
		t.Fatal("handy-bestkauf.de not back the next UTC day")
	}
	if ex, _ := env.manifest(t); ex != nil {
		t.Errorf("manifest the next day excludes %v", ex)
	}
	if c := env.click(t, l, 100); !c.Billable {
		t.Errorf("the next day's first click: %q, want billable", c.Reason)
	}
}

// An advertiser with even pacing that spent a tenth of its budget by
// 02:00 UTC is shown in fewer answers than one that spent it by 20:00,
// when it is behind the day's pace and shown in all; the manifest gives
// pages its share.
func TestBudgetPacesEven(t *testing.T) {
	day := testClock.Truncate(24 * time.Hour)
	shown := func(at time.Time) (int, []struct{ Group uint32 }) {
		env := newBudgetEnv(t, at)
		l, ok := env.search(t, handyQuery)["AMAZON.1.B00JVL2X1I"]
		if !ok {
			t.Fatal("amazon.de not shown before it spent anything")
		}
		if c := env.click(t, l, 0); !c.Billable {
			t.Fatalf("amazon.de click: %q", c.Reason)
		}
		n := 0
		for range 200 {
			if _, ok := env.search(t, handyQuery)["AMAZON.1.B00JVL2X1I"]; ok {
				n++
			}
		}
		_, pace := env.manifest(t)
		return n, pace
	}
	early, earlyPace := shown(day.Add(2 * time.Hour))
	late, latePace := shown(day.Add(20 * time.Hour))
	// At 02:00 the line is at 1/12 of the budget, a tenth is spent: shown
	// with probability (1/12 + 1/24 - 1/10) / (1/24) = 0.6.
	if early < 90 || early > 150 || late != 200 {
		t.Errorf("amazon.de shown in %d of 200 answers at 02:00 and %d at 20:00; want about 120 and 200", early, late)
	}
	if len(earlyPace) != 1 || latePace != nil {
		t.Errorf("manifest pace at 02:00 %v, at 20:00 %v", earlyPace, latePace)
	}
}
