package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/store"
)

// clickQuery is a valid click on the Nokia product, with overrides; a
// value of "-" removes the parameter.
func clickQuery(overrides ...string) string {
	v := url.Values{
		"type": {"search"}, "adId": {"AMAZON.1.B00JVL2X1I"}, "adType": {"product"},
		"api_key": {"demo"}, "site_id": {"demo"}, "criterionId": {"handy"},
	}
	for i := 0; i+1 < len(overrides); i += 2 {
		if overrides[i+1] == "-" {
			v.Del(overrides[i])
		} else {
			v.Set(overrides[i], overrides[i+1])
		}
	}
	return "/v1/redirect?" + v.Encode()
}

func TestRedirect(t *testing.T) {
	env := newEnv(t, fixture())
	req := httptest.NewRequest(http.MethodGet, clickQuery("yk_tag", "t:1", "criterionId", "lg handy", "adId", "handy-bestkauf.de", "adType", "advertiser"), nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 test")
	req.RemoteAddr = "198.51.100.20:3456"
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, req)
	res := rec.Result()
	if res.StatusCode != http.StatusFound {
		t.Fatalf("status %d, want 302\n%s", res.StatusCode, readBody(t, res))
	}
	for k, want := range map[string]string{
		"Location":        "https://handy-bestkauf.de/",
		"Cache-Control":   "no-store",
		"Referrer-Policy": "no-referrer",
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	want := clicks.Click{Time: testClock, AdID: "handy-bestkauf.de", AdType: "advertiser", Type: "search",
		APIKey: "demo", SiteID: "demo", IP: "198.51.100.20", UserAgent: "Mozilla/5.0 test", // unsigned: no criterion, no yk_tag
		Advertiser: "handy-bestkauf.de", Currency: "EUR", Reason: clicks.ReasonUnsigned}
	for _, a := range fixture() {
		if a.ID == want.AdID {
			want.BidMicros = a.BidMicros
		}
	}
	if len(env.clicks) == 1 {
		// The click's id is new, and the 302 names it.
		if id := res.Header.Get("X-Adlink-Click"); id == "" || env.clicks[0].ID != id {
			t.Errorf("X-Adlink-Click %q, the click recorded under %q", id, env.clicks[0].ID)
		}
		want.ID = env.clicks[0].ID
	}
	if len(env.clicks) != 1 || env.clicks[0] != want || want.BidMicros == 0 {
		t.Errorf("clicks = %+v, want %+v", env.clicks, want)
	}
}

func TestRedirectLandsOnTheCatalogsURL(t *testing.T) {
	env := newEnv(t, fixture())
	for _, id := range []string{"AMAZON.1.B00JVL2X1I", "handyladen.de", "COUPON.2.8"} {
		a := fixtureAd(t, id)
		res := env.get(t, clickQuery("adId", id, "adType", a.Kind.String(), "type", "intext",
			"url", "https://evil.example/", "redirect", "https://evil.example/"), nil, "")
		if res.StatusCode != http.StatusFound || res.Header.Get("Location") != a.Landing {
			t.Errorf("%s: %d Location %q, want 302 %q", id, res.StatusCode, res.Header.Get("Location"), a.Landing)
		}
	}
}

func TestRedirectBadInput(t *testing.T) {
	tests := []struct {
		name   string
		target string
		status int
		code   string
		param  string
	}{
		{"missing type", clickQuery("type", "-"), 400, CodeMissingParameter, "type"},
		{"missing adId", clickQuery("adId", "-"), 400, CodeMissingParameter, "adId"},
		{"missing adType", clickQuery("adType", "-"), 400, CodeMissingParameter, "adType"},
		{"missing api_key", clickQuery("api_key", "-"), 400, CodeMissingParameter, "api_key"},
		{"missing site_id", clickQuery("site_id", "-"), 400, CodeMissingParameter, "site_id"},
		{"missing criterionId", clickQuery("criterionId", "-"), 400, CodeMissingParameter, "criterionId"},
		{"type=banner", clickQuery("type", "banner"), 400, CodeInvalidParameter, "type"},
		{"adType=banner", clickQuery("adType", "banner"), 400, CodeInvalidParameter, "adType"},
		{"unknown adId", clickQuery("adId", "AMAZON.1.NOPE"), 404, CodeNotFound, "adId"},
		{"adId is a URL", clickQuery("adId", "https://evil.example/"), 404, CodeNotFound, "adId"},
		{"yk_tag=<script>", clickQuery("yk_tag", "<script>"), 400, CodeInvalidParameter, "yk_tag"},
		{"criterionId of 2 KB", clickQuery("criterionId", strings.Repeat("x", 2048)), 400, CodeInvalidParameter, "criterionId"},
		{"invalid UTF-8 criterionId", clickQuery() + "&criterionId=%FF", 400, CodeInvalidParameter, "criterionId"},
		{"repeated adId", clickQuery() + "&adId=handyladen.de", 400, CodeInvalidParameter, "adId"},
	}
	env := newEnv(t, fixture())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.clicks = nil
			res := env.get(t, tt.target, nil, "")
			body := readBody(t, res)
			if res.StatusCode != tt.status {
				t.Errorf("status %d, want %d\n%s", res.StatusCode, tt.status, body)
			}
			if loc := res.Header.Get("Location"); loc != "" {
				t.Errorf("redirects to %q on error", loc)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var e errorResponse
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%v\n%s", err, body)
			}
			if e.Error.Code != tt.code || e.Error.Param != tt.param || !strings.Contains(e.Error.Message, tt.param) {
				t.Errorf("error %+v, want code %q param %q", e.Error, tt.code, tt.param)
			}
			if len(env.clicks) != 0 {
				t.Errorf("recorded %d clicks on error", len(env.clicks))
			}
		})
	}
}

func TestRedirectClientIP(t *testing.T) {
	tests := []struct {
		name   string
		remote string
		xff    []string
		want   string
	}{
		{"untrusted peer, forged header", "198.51.100.4:1", []string{"192.0.2.1"}, "198.51.100.4"},
		{"trusted proxy", "127.0.0.1:1", []string{"192.0.2.1"}, "192.0.2.1"},
		{"trusted proxy, client spoofs the left", "127.0.0.1:1", []string{"6.6.6.6, 192.0.2.1"}, "192.0.2.1"},
		{"trusted chain", "127.0.0.1:1", []string{"192.0.2.1, 127.0.0.1"}, "192.0.2.1"},
		{"several header lines", "127.0.0.1:1", []string{"6.6.6.6", "192.0.2.7"}, "192.0.2.7"},
		{"garbage", "127.0.0.1:1", []string{"not-an-ip"}, "127.0.0.1"},
		{"no header", "127.0.0.1:1", nil, "127.0.0.1"},
		{"IPv6 proxy", "[::1]:1", []string{"2001:db8::1"}, "2001:db8::1"},
		{"proxy that writes ports", "127.0.0.1:1", []string{"6.6.6.6:1, 192.0.2.9:5000"}, "192.0.2.9"},
		{"proxy that writes IPv6 ports", "127.0.0.1:1", []string{"[2001:db8::9]:443"}, "2001:db8::9"},
		{"client spoofs the left with ports", "127.0.0.1:1", []string{"6.6.6.6:1", "[2001:db8::9]:443"}, "2001:db8::9"},
	}
	env := newEnv(t, fixture())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.clicks = nil
			h := http.Header{}
			for _, v := range tt.xff {
				h.Add("X-Forwarded-For", v)
			}
			res := env.get(t, clickQuery(), h, tt.remote)
			if res.StatusCode != http.StatusFound || len(env.clicks) != 1 {
				t.Fatalf("status %d, %d clicks", res.StatusCode, len(env.clicks))
			}
			if got := env.clicks[0].IP; got != tt.want {
				t.Errorf("IP %q, want %q", got, tt.want)
			}
		})
	}
}

// A HEAD (a link scanner) gets the redirect but is not a click.
func TestRedirectHeadRecordsNothing(t *testing.T) {
	env := newEnv(t, fixture())
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, clickQuery(), nil))
	if res := rec.Result(); res.StatusCode != http.StatusFound || len(env.clicks) != 0 {
		t.Errorf("HEAD: %d, %d clicks", res.StatusCode, len(env.clicks))
	}
}

// When the click cannot be stored, nobody is redirected and the cause stays
// in the log.
func TestRedirectStoreFailure(t *testing.T) {
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	m := metrics.New()
	h := NewServer(Deps{
		Config:   config.Default(),
		Logger:   slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Indexes:  ix,
		Partners: testPartners(t),
		Clicks: &clickRecorder{AppendFn: func(context.Context, clicks.Click) error {
			return errors.New("disk on fire at /var/lib/secret")
		}},
		Metrics: m,
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, clickQuery(), nil))
	res := rec.Result()
	body := string(readBody(t, res))
	if res.StatusCode != http.StatusInternalServerError || res.Header.Get("Location") != "" {
		t.Errorf("status %d, Location %q", res.StatusCode, res.Header.Get("Location"))
	}
	if strings.Contains(body, "secret") || !strings.Contains(body, CodeInternal) {
		t.Errorf("body %s", body)
	}
	if !strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), "disk on fire") {
		t.Errorf("a 500 is not logged as an error with its cause:\n%s", logs.String())
	}
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if want := `adlink_click_record_duration_seconds_count{outcome="failed"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("/metrics lacks %s", want)
	}

	// A client's mistake is no error of ours.
	logs.Reset()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, clickQuery("adId", "-"), nil))
	if rec.Code != http.StatusBadRequest || strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), `"level":"DEBUG"`) {
		t.Errorf("a 400 is logged as:\n%s", logs.String())
	}
}

// The whole path over a real listener: a search's ad URL redirects to the
// landing page, and the click is on disk after the server and the file are
// closed and reopened.
func TestRedirectEndToEnd(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	clickLog, err := clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	cfg := config.Default()
	cfg.RedirectURL = "http://" + srv.Listener.Addr().String()
	srv.Config.Handler = NewServer(Deps{Config: cfg, Indexes: ix, Partners: testPartners(t), Clicks: clickLog, Now: time.Now})
	srv.Start()

	res, err := srv.Client().Get(srv.URL + "/v2/search/link?q=lg+handy&api_key=demo&site_id=demo&loc=de&yk_tag=e2e")
	if err != nil {
		t.Fatal(err)
	}
	var resp struct{ Link []link }
	if err := json.Unmarshal(readBody(t, res), &resp); err != nil || len(resp.Link) == 0 {
		t.Fatalf("search: %v %+v", err, resp)
	}
	adURL := resp.Link[0].Ad
	if !strings.HasPrefix(adURL, srv.URL+"/v1/redirect?") {
		t.Fatalf("ad URL %s is not on the server %s", adURL, srv.URL)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = client.Get(adURL)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, res)
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "https://handy-bestkauf.de/" {
		t.Fatalf("%d Location %q", res.StatusCode, res.Header.Get("Location"))
	}

	srv.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clickLog, err = clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	var got []clicks.Click
	err = clickLog.Scan(context.Background(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d clicks on disk, want 1: %+v", len(got), got)
	}
	c := got[0]
	if c.AdID != "handy-bestkauf.de" || c.AdType != "advertiser" || c.Type != "search" || c.APIKey != "demo" ||
		c.SiteID != "demo" || c.Criterion != "" || c.YkTag != "" || c.IP != "127.0.0.1" || c.Time.IsZero() {
		t.Errorf("click on disk: %+v", c)
	}
}

func TestHealthz(t *testing.T) {
	env := newEnv(t, fixture())
	res := env.get(t, "/healthz", nil, "")
	if body := readBody(t, res); res.StatusCode != 200 || string(body) != `{"status":"ok"}` {
		t.Errorf("%d %s", res.StatusCode, body)
	}
}

func TestUnknownPathAndMethod(t *testing.T) {
	env := newEnv(t, fixture())
	tests := []struct {
		method, target string
		status         int
		code           string
	}{
		{http.MethodGet, "/v3/search/link", 404, CodeNotFound},
		{http.MethodGet, "/v2/search", 404, CodeNotFound},
		{http.MethodPost, "/v2/search/link?q=handy&api_key=demo&site_id=demo", 405, CodeMethodNotAllowed},
		{http.MethodDelete, "/v1/redirect", 405, CodeMethodNotAllowed},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		env.handler.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.target, nil))
		res := rec.Result()
		var e errorResponse
		if err := json.Unmarshal(readBody(t, res), &e); err != nil || res.StatusCode != tt.status || e.Error.Code != tt.code {
			t.Errorf("%s %s: %d %+v %v", tt.method, tt.target, res.StatusCode, e, err)
		}
		if tt.status == 405 && !strings.HasPrefix(res.Header.Get("Allow"), "GET, HEAD") {
			t.Errorf("%s %s: Allow %q", tt.method, tt.target, res.Header.Get("Allow"))
		}
	}
}

// FuzzRedirect checks that no query string, however odd, redirects anywhere
// but to the catalog's landing URL of the adId it names, or records a click
// without one; and, each sent as a person's click from a network of its
// own, that only a click with a sig or ct bills, and only as a link the
// server signed says (its ad, context, partner, criterion and yk_tag),
// once a link.
func FuzzRedirect(f *testing.F) {
	env := newSignedEnv(f)
	links := append(env.links(f, "q=lg+handy&loc=de&api_key=demo&site_id=demo&yk_tag=f:1"),
		env.links(f, "q=handy&loc=de&api_key=k2&site_id=blog&size=3")...)
	signed := map[clicks.Params]int{} // the links signed with each click's parameters
	for _, l := range links {
		q := queryOf(f, l)
		signed[clicks.Params{Type: q.Get("type"), AdID: q.Get("adId"), AdType: q.Get("adType"), APIKey: q.Get("api_key"),
			SiteID: q.Get("site_id"), Criterion: q.Get("criterionId"), YkTag: q.Get("yk_tag")}]++
	}
	for _, s := range []string{
		strings.TrimPrefix(clickQuery(), "/v1/redirect?"),
		strings.TrimPrefix(clickQuery("adId", "https://evil.example/", "url", "https://evil.example/"), "/v1/redirect?"),
		"type=intext&adId=handyladen.de&adType=advertiser&api_key=demo&site_id=demo&criterionId=x&yk_tag=a:b",
		"adId=AMAZON.1.B00JVL2X1I&adId=handyladen.de",
		strings.TrimPrefix(links[0], "/v1/redirect?"),
		strings.TrimPrefix(links[len(links)-1], "/v1/redirect?"),
		strings.TrimPrefix(setParam(links[0], "adId", "COUPON.1.7"), "/v1/redirect?"),
		strings.TrimPrefix(setParam(links[0], "criterionId", "handy"), "/v1/redirect?"),
		strings.TrimPrefix(respell(f, links[1], escapeAll), "/v1/redirect?"),
		strings.TrimPrefix(clickQuery("type", "intext", "tok", env.keys.Token("demo", "demo", testClock.Add(time.Hour))), "/v1/redirect?"),
		"%zz&;",
		"",
	} {
		f.Add(s)
	}
	landings := map[string]string{}
	for _, a := range fixture() {
		landings[a.ID] = a.Landing
	}
	billed := map[clicks.Params]int{}
	var networks int
	f.Fuzz(func(t *testing.T, raw string) {
		env.take()
		networks++
		req := httptest.NewRequest(http.MethodGet, "/v1/redirect", nil)
		req.URL.RawQuery = raw
		req.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:40000", networks>>16&255, networks>>8&255, networks&255)
		req.Header.Set("User-Agent", browserUA)
		clicks.Navigation.Header(req.Header)
		rec := httptest.NewRecorder()
		env.handler.ServeHTTP(rec, req)
		res := rec.Result()
		loc := res.Header.Get("Location")
		got := env.take()
		switch res.StatusCode {
		case http.StatusFound:
			q, err := url.ParseQuery(raw)
			if err != nil || loc == "" || loc != landings[q.Get("adId")] {
				t.Fatalf("%q redirects to %q, not the catalog's landing URL of its adId", raw, loc)
			}
			if len(got) != 1 {
				t.Fatalf("%q redirected with %d clicks recorded", raw, len(got))
			}
			c := got[0]
			if !c.Billable {
				break
			}
			if !q.Has("sig") && !q.Has("ct") {
				t.Fatalf("%q: billable without sig or ct", raw)
			}
			p := clicks.Params{Type: c.Type, AdID: c.AdID, AdType: c.AdType, APIKey: c.APIKey, SiteID: c.SiteID,
				Criterion: c.Criterion, YkTag: c.YkTag}
			if billed[p]++; billed[p] > signed[p] {
				t.Fatalf("%q bills %+v, which %d links signed, for the %d. time", raw, p, signed[p], billed[p])
			}
		case 400, 404:
			if loc != "" || len(got) != 0 {
				t.Fatalf("%q: %d with Location %q and %d clicks", raw, res.StatusCode, loc, len(got))
			}
			if !json.Valid(readBody(t, res)) {
				t.Fatalf("%q: error body is not JSON", raw)
			}
		default:
			t.Fatalf("%q: status %d", raw, res.StatusCode)
		}
	})
}

// The text a click URL's client writes is kept only where a proof covers
// it: a page-made link whose site token has expired keeps neither its
// made-up criterion nor its yk_tag (the token covers the key and site
// alone); a link of another adType and an unknown key keeps neither the
// key nor the site; a signed link, however it is judged, keeps its own.
func TestRedirectKeepsOnlyProvenText(t *testing.T) {
	env := newSignedEnv(t)
	page := env.inPageLinks(t, "q=handy&loc=de&api_key=demo&site_id=demo")[0]
	signed := env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo&yk_tag=campaign-7")[0]
	u, _ := url.Parse(signed)
	criterion := u.Query().Get("criterionId")

	env.advance(2 * time.Hour) // past the site token's hour
	c := env.click(t, setParam(setParam(page, "criterionId", "=junk-criterion"), "yk_tag", "junk-tag"), "198.51.100.1", browserUA)
	if c.Reason != clicks.ReasonExpired || c.Criterion != "" || c.YkTag != "" || c.APIKey != "demo" {
		t.Errorf("an expired site token's link: %s, criterion %q, yk_tag %q, key %q; want expired, no text, the key", c.Reason, c.Criterion, c.YkTag, c.APIKey)
	}
	other := setParam(setParam(setParam(setParam(signed, "adType", "product"), "api_key", "junk-key"), "site_id", "junk-site"), "sig", "-")
	c = env.click(t, setParam(other, "exp", "-"), "198.51.100.2", browserUA)
	if c.Reason != clicks.ReasonUnsigned || c.APIKey != "" || c.SiteID != "" || c.Criterion != "" {
		t.Errorf("another adType and an unknown key: %s, key %q, site %q, criterion %q; want unsigned, none kept", c.Reason, c.APIKey, c.SiteID, c.Criterion)
	}
	// A made-up key and site carrying another link's signature, or a
	// made-up one: each would be a report row of its own.
	for i, forged := range []string{
		setParam(setParam(signed, "api_key", "junk-key-1"), "site_id", "junk-site-1"),
		setParam(setParam(setParam(signed, "api_key", "junk-key-2"), "site_id", "junk-site-2"), "sig", "k0.AAAA"),
	} {
		c = env.click(t, forged, "198.51.100."+strconv.Itoa(10+i), browserUA)
		if c.Reason != clicks.ReasonForged || c.APIKey != "" || c.SiteID != "" {
			t.Errorf("a made-up key with a signature: %s, key %q, site %q; want forged, none kept", c.Reason, c.APIKey, c.SiteID)
		}
	}
	c = env.click(t, signed, "198.51.100.3", browserUA) // expired: signed 2 h ago, still its own text
	if c.Criterion != criterion || c.YkTag != "campaign-7" || c.APIKey != "demo" {
		t.Errorf("a signed link (%s): criterion %q, yk_tag %q, key %q; want %q, campaign-7, demo", c.Reason, c.Criterion, c.YkTag, c.APIKey, criterion)
	}
}

// FuzzHopAddr: any X-Forwarded-For entry reads as one address or none,
// without panic; an address reads as itself, and with a port as well.
func FuzzHopAddr(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "192.0.2.1:5000", "[2001:db8::1]:443", "2001:db8::1", "fe80::1%eth0", "unknown", "", "1.2.3.4:99999", "[::ffff:1.2.3.4]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hop string) {
		a, ok := hopAddr(hop)
		if !ok {
			return
		}
		if b, ok := hopAddr(a.String()); !ok || b != a {
			t.Fatalf("%q reads as %v, whose own reading is %v %v", hop, a, b, ok)
		}
		if b, ok := hopAddr(netip.AddrPortFrom(a.WithZone(""), 80).String()); !ok || b != a.WithZone("") {
			t.Fatalf("%q reads as %v, and with a port as %v %v", hop, a, b, ok)
		}
	})
}

// TestRedirectRecordsAClickWhoseReaderLeft: a reader who clicked and
// closed the tab before the 302 came still clicked; the record is not cut
// short with the request's context, which would drop a click Postgres was
// slow to take instead of spooling it.
func TestRedirectRecordsAClickWhoseReaderLeft(t *testing.T) {
	ctx, leave := context.WithCancel(t.Context())
	var recorded []clicks.Click
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	h := NewServer(Deps{Config: cfg, Indexes: ix, Partners: testPartners(t), Now: func() time.Time { return testClock },
		Clicks: &clickRecorder{AppendFn: func(ctx context.Context, c clicks.Click) error {
			leave() // the reader leaves while the click is being recorded
			if err := ctx.Err(); err != nil {
				return err
			}
			recorded = append(recorded, c)
			return nil
		}}})
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, clickQuery("adId", "handy-bestkauf.de", "adType", "advertiser"), nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 test")
	req.RemoteAddr = "198.51.100.20:3456"
	h.ServeHTTP(httptest.NewRecorder(), req)
	if len(recorded) != 1 || recorded[0].AdID != "handy-bestkauf.de" {
		t.Errorf("recorded %v, want the click of the reader who left", recorded)
	}
}
