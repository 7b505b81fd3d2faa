package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
)

const testBrowserUA = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"

// firstAd searches base and returns the first ad URL, on base.
func firstAd(t *testing.T, base, query string) string {
	t.Helper()
	res, err := http.Get(base + "/v2/search/link?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var resp struct{ Link []struct{ Ad string } }
	if err := json.NewDecoder(res.Body).Decode(&resp); err != nil || len(resp.Link) == 0 {
		t.Fatalf("search %s: %d %v", query, res.StatusCode, err)
	}
	return resp.Link[0].Ad
}

// clickAs follows ad URL u as a browser from this host; it fails unless
// the answer is a 302.
func clickAs(t *testing.T, u string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
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
	if res.StatusCode != http.StatusFound {
		t.Fatalf("%s: %d", u, res.StatusCode)
	}
}

var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// readClicks opens the state file of a stopped server and returns its
// clicks.
func readClicks(t testing.TB, dir string) []clicks.Click {
	t.Helper()
	db, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	var out []clicks.Click
	if err := l.Scan(context.Background(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		out = append(out, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Without configured keys the server makes one, keeps it in the data
// directory, and a restart still bills the links signed before it; once
// keys are configured the kept key keeps verifying.
func TestRunKeepsItsClickKey(t *testing.T) {
	data := t.TempDir()
	base, stop := startRun(t, "-data", data, "-demo")
	before := firstAd(t, base, "q=lg+handy&loc=de&api_key=demo&site_id=demo&yk_tag=before")
	if !strings.Contains(before, "&sig=g") {
		t.Fatalf("ad URL %s is not signed with a generated key", before)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(data, clicks.KeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v", err)
	}

	secret := make([]byte, 32)
	rand.Read(secret)
	base, stop = startRun(t, "-data", data, "-demo", "-click-keys", "new:"+base64.StdEncoding.EncodeToString(secret))
	after := firstAd(t, base, "q=iphone&loc=de&api_key=demo&site_id=demo&yk_tag=after")
	if adID(before) == adID(after) {
		t.Fatalf("both searches give %s: the second click would be a repeat", adID(after))
	}
	if !strings.Contains(after, "&sig=new.") {
		t.Errorf("ad URL %s is not signed with the configured key", after)
	}
	// Ad URLs name the address of the first run; ask this one.
	port := func(u string) string { return base + u[strings.Index(u, "/v1/redirect"):] }
	clickAs(t, port(before))
	clickAs(t, port(after))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got := readClicks(t, data)
	if len(got) != 2 {
		t.Fatalf("%d clicks, want 2", len(got))
	}
	for _, c := range got {
		if !c.Billable {
			t.Errorf("click %s: not billable (%s)", c.YkTag, c.Reason)
		}
	}
}

func adID(u string) string {
	_, q, _ := strings.Cut(u, "?")
	for kv := range strings.SplitSeq(q, "&") {
		if v, ok := strings.CutPrefix(kv, "adId="); ok {
			return v
		}
	}
	return ""
}
