package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/clicks"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// clickDemo clicks the first ad of each query of the demo site, each a
// billable click of another ad.
func clickDemo(t *testing.T, base string, queries ...string) {
	t.Helper()
	for _, q := range queries {
		u := firstAd(t, base, "q="+q+"&loc=de&api_key=demo&site_id=demo")
		clickAs(t, base+u[strings.Index(u, "/v1/redirect"):])
	}
}

// invalidateRun runs "adlink invalidate args" and returns its answer.
func invalidateRun(t *testing.T, env func(string) string, args ...string) (api.Invalidated, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), append([]string{"invalidate"}, args...), env, &out, io.Discard)
	var got api.Invalidated
	if err == nil {
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("invalidate printed %q: %v", out.String(), err)
		}
	}
	return got, err
}

// TestInvalidateCommand: "adlink invalidate" on a stopped server's file
// credits exactly the site's billed clicks, once, its dry run changing
// nothing; it refuses a file a running server holds and a run without a
// selector.
func TestInvalidateCommand(t *testing.T) {
	data := t.TempDir()
	base, stop := startRun(t, "-data", data, "-demo")
	clickDemo(t, base, "lg+handy", "samsung+galaxy")
	day := time.Now().UTC().Format(time.DateOnly)
	from := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	args := []string{"-data", data, "-api-key", "demo", "-site-id", "demo", "-from", from, "-to", day, "-reason", "click farm"}
	if _, err := invalidateRun(t, noEnv, args...); err == nil || !strings.Contains(err.Error(), "in use by a running server") {
		t.Errorf("invalidate beside a running server: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	before := readClicks(t, data)
	var want api.Invalidated
	want.Micros = map[string]int64{}
	for _, c := range before {
		if c.Billable {
			want.Clicks++
			want.Micros[c.Currency] += c.BidMicros
		}
	}
	if want.Clicks == 0 {
		t.Fatalf("no billable click of %d", len(before))
	}

	if _, err := invalidateRun(t, noEnv, "-data", data, "-from", from, "-to", day, "-reason", "x"); err == nil || !strings.Contains(err.Error(), "-site-id") {
		t.Errorf("invalidate without a selector: %v, want an error naming -site-id", err)
	}
	got, err := invalidateRun(t, noEnv, append(args, "-dry-run")...)
	if err != nil || !got.DryRun || got.Clicks != want.Clicks || got.Micros["EUR"] != want.Micros["EUR"] {
		t.Fatalf("dry run: %+v, %v; want %+v", got, err, want)
	}
	for i, c := range readClicks(t, data) {
		if c.Billable != before[i].Billable || c.Reason != before[i].Reason {
			t.Fatalf("the dry run changed click %s: %v %q", c.ID, c.Billable, c.Reason)
		}
	}
	for i, n := range []int64{want.Clicks, 0} {
		got, err := invalidateRun(t, noEnv, args...)
		if err != nil || got.DryRun || got.Clicks != n {
			t.Fatalf("run %d: %+v, %v; want %d clicks", i+1, got, err, n)
		}
	}
	for i, c := range readClicks(t, data) {
		if before[i].Billable && (c.Billable || c.Reason != clicks.ReasonInvalidated) || !before[i].Billable && c.Reason != before[i].Reason {
			t.Errorf("click %s: %v %q, was %v %q", c.ID, c.Billable, c.Reason, before[i].Billable, before[i].Reason)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"report", "-data", data, "-from", from, "-to", day, "-group-by", "site_id", "-format", "json"},
		noEnv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rep struct{ Rows []map[string]any }
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Rows) != 1 || rep.Rows[0]["billable_clicks"] != 0.0 ||
		rep.Rows[0]["unbilled_invalidated"] != float64(want.Clicks) || rep.Rows[0]["clicks"] != float64(len(before)) {
		t.Errorf("report after: %v %s", err, out.Bytes())
	}
}

// TestInvalidateCommandInPostgres: with -postgres, "adlink invalidate"
// credits the site's billed clicks while the server runs, and the report
// the servers read no longer bills them.
func TestInvalidateCommandInPostgres(t *testing.T) {
	url := testpg.New(t)
	base, stop := startRun(t, "-data", t.TempDir(), "-demo", "-postgres", url)
	defer stop()
	clickDemo(t, base, "lg+handy", "samsung+galaxy")
	day := time.Now().UTC().Format(time.DateOnly)
	from := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	env := func(k string) string {
		if k == "ADLINK_POSTGRES_URL" {
			return url
		}
		return ""
	}
	report := func() map[string]any {
		t.Helper()
		var out bytes.Buffer
		if err := run(context.Background(), []string{"report", "-from", from, "-to", day, "-group-by", "site_id", "-format", "json"},
			env, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		var rep struct{ Rows []map[string]any }
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Rows) != 1 {
			t.Fatalf("report: %v %s", err, out.Bytes())
		}
		return rep.Rows[0]
	}
	before := report()
	billed := int64(before["billable_clicks"].(float64))
	if billed == 0 {
		t.Fatalf("no billable click: %v", before)
	}
	args := []string{"-api-key", "demo", "-site-id", "demo", "-from", from, "-to", day, "-reason", "click farm"}
	if got, err := invalidateRun(t, env, append(args, "-dry-run")...); err != nil || got.Clicks != billed {
		t.Fatalf("dry run: %+v, %v; want %d clicks", got, err, billed)
	}
	if r := report(); r["billable_clicks"] != before["billable_clicks"] || r["spend"] != before["spend"] {
		t.Fatalf("report after the dry run: %v, was %v", r, before)
	}
	for i, n := range []int64{billed, 0} {
		if got, err := invalidateRun(t, env, args...); err != nil || got.Clicks != n {
			t.Fatalf("run %d: %+v, %v; want %d clicks", i+1, got, err, n)
		}
	}
	if r := report(); r["billable_clicks"] != 0.0 || r["spend"] != "0.00" || r["unbilled_invalidated"] != float64(billed) {
		t.Errorf("report after: %v, was %v", r, before)
	}
}

// TestAdminInvalidateTakesALongIDList: the server's admin listener takes
// POST /admin/invalidate's form up to the route's own bound, so that a
// list of thousands of click ids credits the ones named.
func TestAdminInvalidateTakesALongIDList(t *testing.T) {
	base, admin, stop := startRunAdmin(t, "-data", t.TempDir(), "-demo")
	defer stop()
	u := firstAd(t, base, "q=lg+handy&loc=de&api_key=demo&site_id=demo")
	req, err := http.NewRequest(http.MethodGet, base+u[strings.Index(u, "/v1/redirect"):], nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", testBrowserUA)
	clicks.Navigation.Header(req.Header)
	res, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := res.Header.Get("X-Adlink-Click")
	if res.StatusCode != http.StatusFound || id == "" {
		t.Fatalf("click: %s, id %q", res.Status, id)
	}
	form := url.Values{"from": {time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)},
		"to": {time.Now().UTC().Format(time.DateOnly)}, "reason": {"click farm"}}
	// 5,000 ids of a farm's clicks, the one billed among them: over 100 KiB.
	for i := range 5000 {
		form.Add("id", fmt.Sprintf("farm-%020d", i))
	}
	form.Add("id", id)
	body := form.Encode()
	if len(body) < 100<<10 {
		t.Fatalf("the form is %d bytes", len(body))
	}
	res, err = http.Post(admin+"/admin/invalidate", "application/x-www-form-urlencoded", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var got api.Invalidated
	if res.StatusCode != http.StatusOK || json.Unmarshal(b, &got) != nil || got.Clicks != 1 {
		t.Fatalf("POST /admin/invalidate of %d bytes: %s %s, want the one click credited", len(body), res.Status, b)
	}
}

// TestInvalidateCommandTakesIDsAgain: -id given twice credits the ids of
// both, as POST /admin/invalidate's id repeated does.
func TestInvalidateCommandTakesIDsAgain(t *testing.T) {
	data := t.TempDir()
	base, stop := startRun(t, "-data", data, "-demo")
	clickDemo(t, base, "lg+handy", "samsung+galaxy")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range readClicks(t, data) {
		if c.Billable {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("%d billable clicks, want 2", len(ids))
	}
	got, err := invalidateRun(t, noEnv, "-data", data, "-id", ids[0], "-id", ids[1], "-from", time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly),
		"-to", time.Now().UTC().Format(time.DateOnly), "-reason", "click farm", "-dry-run")
	if err != nil || got.Clicks != 2 {
		t.Fatalf("-id twice: %+v, %v; want both clicks", got, err)
	}
}

// TestInvalidateCommandMigratesNothing: with -postgres, "adlink
// invalidate" writes beside running servers, so it leaves the schema to
// them: a database the servers never used (a wrong URL) is refused, not
// given an empty schema whose empty click log credits nothing.
func TestInvalidateCommandMigratesNothing(t *testing.T) {
	url := testpg.New(t)
	env := func(k string) string {
		if k == "ADLINK_POSTGRES_URL" {
			return url
		}
		return ""
	}
	got, err := invalidateRun(t, env, "-api-key", "demo", "-from", "2026-11-20", "-to", "2026-11-27", "-reason", "click farm")
	if err == nil || !strings.Contains(err.Error(), "no adlink schema") {
		t.Fatalf("invalidate in a database without adlink's schema: %+v, %v; want it refused", got, err)
	}
	db, err := pgstore.OpenReader(context.Background(), url)
	if err == nil {
		db.Close()
		t.Fatal("the refused run left adlink's schema in the database")
	}
}

// TestInvalidateCommandReachesRunningServers: "adlink invalidate
// -postgres", run beside a server of that database whose advertiser spent
// its daily budget, credits the click that spent it, and the server,
// which did not run the credit, shows the advertiser's ads again.
func TestInvalidateCommandReachesRunningServers(t *testing.T) {
	url := testpg.New(t)
	adv := filepath.Join(t.TempDir(), "advertisers.json")
	if err := os.WriteFile(adv, []byte(`{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"0.01","currency":"EUR"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base, stop := startRun(t, "-data", t.TempDir(), "-demo", "-postgres", url, "-advertisers", adv)
	defer stop()
	// link is the URL of handy-bestkauf.de's ad in an answer, or "".
	link := func() string {
		t.Helper()
		res, err := http.Get(base + "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var resp struct{ Link []struct{ Ad string } }
		if err := json.NewDecoder(res.Body).Decode(&resp); err != nil {
			t.Fatal(err)
		}
		for _, l := range resp.Link {
			if strings.Contains(l.Ad, "adId=handy-bestkauf.de&") {
				return l.Ad
			}
		}
		return ""
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: never", what)
			}
		}
	}
	u := link()
	if u == "" {
		t.Fatal("handy-bestkauf.de is not in the answers before any click")
	}
	clickAs(t, base+u[strings.Index(u, "/v1/redirect"):])
	until("handy-bestkauf.de out of the answers", func() bool { return link() == "" })

	env := func(k string) string {
		if k == "ADLINK_POSTGRES_URL" {
			return url
		}
		return ""
	}
	day := time.Now().UTC().Format(time.DateOnly)
	got, err := invalidateRun(t, env, "-advertisers", adv, "-ad", "handy-bestkauf.de", "-from", day, "-to", day, "-reason", "click farm")
	if err != nil || got.Clicks != 1 {
		t.Fatalf("invalidate: %+v, %v; want 1 click", got, err)
	}
	until("handy-bestkauf.de back in the answers", func() bool { return link() != "" })
}
