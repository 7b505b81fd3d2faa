package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-json"
	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/store"
)

// testWindows are bbolt Windows in dir, closed at the end of t.
func testWindows(t testing.TB, dir string) clicks.Windows {
	t.Helper()
	w, _ := openWindows(t, dir)
	return w
}

// testDecisions are bbolt Decisions in dir, closed at the end of t.
func testDecisions(t testing.TB, dir string) clicks.Decisions {
	t.Helper()
	d, _ := testStore(t, dir, clicks.NewDecisions)
	return d
}

// openWindows opens the Windows in dir and returns them with their file.
func openWindows(t testing.TB, dir string) (clicks.Windows, *bolt.DB) {
	t.Helper()
	return testStore(t, dir, clicks.NewWindows)
}

// testStore opens the bbolt file in dir, closed at the end of t, and
// returns the store newStore makes of it, with the file.
func testStore[S any](t testing.TB, dir string, newStore func(*bolt.DB) (S, error)) (S, *bolt.DB) {
	t.Helper()
	db, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := newStore(db)
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

// A signed link fetched without a person's navigation lands, but does not
// bill: a hidden image, a prefetch, a client that sends no Fetch Metadata.
// The person's click after them still bills.
func TestClicksNeedAReader(t *testing.T) {
	env := newSignedEnv(t)
	l := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, tt := range []struct {
		name   string
		h      http.Header
		reason string
	}{
		{"hidden image", hdr("Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "image", "Sec-Fetch-Site", "cross-site"), clicks.ReasonNotNavigation},
		{"frame", hdr("Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "iframe"), clicks.ReasonNotNavigation},
		{"prefetch", hdr("Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document", "Sec-Purpose", "prefetch"), clicks.ReasonPrefetch},
		{"prerender", hdr("Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document", "Sec-Purpose", "prefetch;prerender"), clicks.ReasonPrefetch},
		{"Purpose: prefetch", hdr("Purpose", "prefetch"), clicks.ReasonPrefetch},
		{"no Fetch Metadata", hdr(), clicks.ReasonNoIntent},
		{"the reader's click", hdr("Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document", "Sec-Fetch-User", "?1"), ""},
	} {
		res := env.doWith(t, l, "198.51.100.20", browserUA, tt.h)
		readBody(t, res)
		got := env.take()
		if res.StatusCode != http.StatusFound || len(got) != 1 {
			t.Fatalf("%s: %d, %d clicks", tt.name, res.StatusCode, len(got))
		}
		if got[0].Billable != (tt.reason == "") || got[0].Reason != tt.reason {
			t.Errorf("%s: billable %v reason %q, want %q", tt.name, got[0].Billable, got[0].Reason, tt.reason)
		}
	}
}

// The fraud windows count by network: the addresses of one /64, zones and
// all, behind a trusted proxy, are one client; one IPv4 address clicking
// 20 ads twice, 31 s apart, bills 20.
func TestFraudWindowsByNetwork(t *testing.T) {
	env := newSignedEnv(t)
	l := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	billed := 0
	for i := range 15 {
		h := http.Header{}
		clicks.Navigation.Header(h)
		ip := "2001:db8:5:6::" + strconv.FormatInt(int64(i+1), 16)
		if i%3 == 1 {
			ip += "%z" + strconv.Itoa(i)
		}
		h.Set("X-Forwarded-For", ip)
		res := env.doWith(t, l, "127.0.0.1", browserUA, h)
		readBody(t, res)
		for _, c := range env.take() {
			if c.Billable {
				billed++
			}
		}
		env.advance(time.Second)
	}
	if billed != 1 {
		t.Errorf("15 addresses of one /64: %d billable, want 1", billed)
	}

	var ads []string
	for _, q := range []string{"q=lg+handy&loc=de", "q=handy&loc=de", "q=smartphone&loc=de", "q=tablet&loc=de", "q=laptop&loc=de"} {
		res := env.do(t, "/v2/search/link?"+q+"&api_key=demo&site_id=demo&size=20", "192.0.2.200", browserUA)
		var resp struct{ Link []link }
		if err := json.Unmarshal(readBody(t, res), &resp); err != nil {
			t.Fatal(err)
		}
		for _, l := range resp.Link {
			ads = append(ads, strings.TrimPrefix(l.Ad, "https://r.example"))
		}
	}
	ads = distinctAds(ads)
	if len(ads) > 20 {
		ads = ads[:20]
	}
	billed = 0
	for round := range 2 {
		for _, a := range ads {
			if env.click(t, a, "198.51.100.30", browserUA).Billable {
				billed++
			}
		}
		if round == 0 {
			env.advance(31 * time.Second)
		}
	}
	if billed != len(ads) || len(ads) < 5 {
		t.Errorf("one address, %d ads twice 31 s apart: %d billable, want %d", len(ads), billed, len(ads))
	}
}

// distinctAds keeps the first link of each adId.
func distinctAds(links []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range links {
		u, _ := url.Parse(l)
		if id := u.Query().Get("adId"); !seen[id] {
			seen[id] = true
			out = append(out, l)
		}
	}
	return out
}

// One ad's links from many /64s bill once per network, each link once;
// each network stops at its daily cap.
func TestNetworkDailyCap(t *testing.T) {
	const limit = 3
	env := newSignedEnvWith(t, func(c *config.Config) { c.NetworkDailyClicks = limit }, testWindows(t, t.TempDir()))
	links := distinctAds(env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20"))
	if len(links) <= limit {
		t.Fatalf("%d ads, want more than %d", len(links), limit)
	}
	for i := range 30 {
		l := env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20")[0]
		if c := env.click(t, l, "2001:db8:"+strconv.FormatInt(int64(i+1), 16)+"::1", browserUA); !c.Billable {
			t.Fatalf("network %d's first click: %q", i, c.Reason)
		}
	}
	for i, l := range links {
		c := env.click(t, l, "2001:db8:ffff::"+strconv.Itoa(i+1), browserUA)
		want := ""
		if i >= limit {
			want = clicks.ReasonNetworkCap
		}
		if c.Reason != want {
			t.Errorf("ad %d from one /64: %q, want %q", i, c.Reason, want)
		}
	}
}

// The windows are in the store: a restart keeps a network's billed ads
// and its count towards the cap.
func TestFraudWindowsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	set := func(c *config.Config) { c.NetworkDailyClicks = 2 }
	w, db := openWindows(t, dir)
	env := newSignedEnvWith(t, set, w)
	links := distinctAds(env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20"))
	for _, l := range links[:2] {
		if c := env.click(t, l, "192.0.2.44", browserUA); !c.Billable {
			t.Fatalf("before the restart: %q", c.Reason)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	w, _ = openWindows(t, dir)
	env = newSignedEnvWith(t, set, w)
	if c := env.click(t, links[0], "192.0.2.44", browserUA); c.Reason != clicks.ReasonRepeat {
		t.Errorf("a billed ad after the restart: %q, want repeat", c.Reason)
	}
	if c := env.click(t, links[2], "192.0.2.44", browserUA); c.Reason != clicks.ReasonNetworkCap {
		t.Errorf("a third ad after the restart: %q, want %q", c.Reason, clicks.ReasonNetworkCap)
	}
}

// One signed link bills once: the answer's decision id is used by its
// first billable click, whichever network it comes from. Each attack
// below billed before decision ids.
func TestDecisionBillsOnce(t *testing.T) {
	env := newSignedEnv(t)
	l := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	if d := queryOf(t, l).Get("d"); len(d) != clicks.DecisionLen {
		t.Fatalf("a server link's decision id %q in %s", d, l)
	}
	billed := 0
	for i, ip := range []string{"2001:db8:a::1", "2001:db8:b::1", "198.51.100.90"} {
		h := http.Header{}
		clicks.Navigation.Header(h)
		h.Set("X-Forwarded-For", ip)
		readBody(t, env.doWith(t, l, "127.0.0.1", browserUA, h))
		for _, c := range env.take() {
			if c.Billable {
				billed++
			} else if i > 0 && c.Reason != clicks.ReasonRepeat {
				t.Errorf("click %d from %s: %q, want repeat", i, ip, c.Reason)
			}
		}
	}
	if billed != 1 {
		t.Errorf("one link from three networks: %d billable, want 1", billed)
	}

	// A decision id moved into another ad's link fails its signature.
	links := distinctAds(env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20"))
	if len(links) < 2 {
		t.Fatalf("%d ads, want 2", len(links))
	}
	swapped := setParam(links[1], "d", queryOf(t, links[0]).Get("d"))
	if c := env.click(t, swapped, "198.51.100.91", browserUA); c.Billable || c.Reason != clicks.ReasonForged {
		t.Errorf("another ad's decision id: billable %v %q, want forged", c.Billable, c.Reason)
	}
	if c := env.click(t, setParam(links[1], "d", "-"), "198.51.100.92", browserUA); c.Billable || c.Reason != clicks.ReasonForged {
		t.Errorf("decision id removed: billable %v %q, want forged", c.Billable, c.Reason)
	}
}

// queryOf is the query of target.
func queryOf(t testing.TB, target string) url.Values {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// Used decision ids are in the store: a link clicked before a restart
// does not bill again after it, from any network.
func TestDecisionsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	w, db := openWindows(t, dir)
	d, err := clicks.NewDecisions(db)
	if err != nil {
		t.Fatal(err)
	}
	env := newSignedEnvStores(t, nil, w, d)
	l := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	if c := env.click(t, l, "192.0.2.60", browserUA); !c.Billable {
		t.Fatalf("before the restart: %q", c.Reason)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	w, db = openWindows(t, dir)
	if d, err = clicks.NewDecisions(db); err != nil {
		t.Fatal(err)
	}
	env = newSignedEnvStores(t, nil, w, d)
	if c := env.click(t, l, "2001:db8:c::1", browserUA); c.Billable || c.Reason != clicks.ReasonRepeat {
		t.Errorf("the link replayed after the restart from another network: billable %v %q, want repeat", c.Billable, c.Reason)
	}
	if c := env.click(t, env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0], "2001:db8:c::1", browserUA); !c.Billable {
		t.Errorf("a fresh answer's link after the restart: %q", c.Reason)
	}
}

// Over the redirect's request limit the visitor still lands on the
// catalog's URL; the click is not billed, and a flood is sampled into the
// log while /metrics counts all of it. Bad input is still a 4xx.
func TestRedirectLandsOverTheLimit(t *testing.T) {
	env := newSignedEnvWith(t, func(c *config.Config) { c.IPRate, c.IPBurst = 0.001, 2 }, testWindows(t, t.TempDir()))
	links := distinctAds(env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20"))
	var got []clicks.Click
	for i := range 6 {
		l := links[i%len(links)]
		res := env.do(t, l, "198.51.100.60", browserUA)
		readBody(t, res)
		u, _ := url.Parse(l)
		if want := fixtureAdLanding(t, u.Query().Get("adId")); res.StatusCode != http.StatusFound || res.Header.Get("Location") != want {
			t.Fatalf("click %d: %d Location %q, want 302 %q", i, res.StatusCode, res.Header.Get("Location"), want)
		}
		if i >= 2 && (res.Header.Get("Retry-After") != "" || res.Header.Get("X-RateLimit-Remaining") != "0") {
			t.Errorf("click %d over the limit: Retry-After %q, X-RateLimit-Remaining %q", i, res.Header.Get("Retry-After"), res.Header.Get("X-RateLimit-Remaining"))
		}
		got = append(got, env.take()...)
	}
	if len(got) != 3 || !got[0].Billable || !got[1].Billable || got[2].Billable || got[2].Reason != clicks.ReasonRateLimited {
		t.Errorf("recorded %+v, want two billable and one rate_limited", got)
	}
	if body := scrape(t, env.metrics); !strings.Contains(body, `adlink_clicks_total{billable="false",reason="rate_limited"} 4`) {
		t.Errorf("/metrics does not count the 4 clicks over the limit:\n%s", body)
	}
	for _, target := range []string{setParam(links[0], "adId", "no-such-ad"), setParam(links[0], "type", "bogus")} {
		res := env.do(t, target, "198.51.100.60", browserUA)
		readBody(t, res)
		if res.StatusCode/100 != 4 || res.Header.Get("Location") != "" {
			t.Errorf("%s over the limit: %d Location %q, want a 4xx", target, res.StatusCode, res.Header.Get("Location"))
		}
	}
	if got := env.take(); len(got) != 0 {
		t.Errorf("bad clicks recorded: %+v", got)
	}
}
