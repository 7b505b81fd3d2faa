package app

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/internal/testpg"
)

// TestPagesWhilePostgresIsDown: with the page analyses in Postgres and
// Postgres killed, the page endpoint answers from what the replica has:
// a page it answered analysed before gets the same ads, a page it never
// answered is pending (the widget matches it in the page), never a 5xx.
// Once Postgres is back, the unseen page is queued and analysed.
func TestPagesWhilePostgresIsDown(t *testing.T) {
	pg := testpg.Start(t)
	ps := newPageServer(t)
	r := newPageReplica(t, pg.URL())

	seen := ps.URL + "/news/seen"
	if status, _ := r.pageLink(t, seen); status != http.StatusAccepted {
		t.Fatalf("first request of %s: %d, want 202", seen, status)
	}
	waitAnalysed(t, r, seen)
	status, before := r.pageLink(t, seen)
	if status != http.StatusOK || len(before) == 0 {
		t.Fatalf("analysed page: %d with %d ads, want 200 with ads", status, len(before))
	}

	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	status, during := r.pageLink(t, seen)
	if status != http.StatusOK || len(during) != len(before) {
		t.Errorf("the analysed page with Postgres down: %d with %d ads, want 200 with the %d it had", status, len(during), len(before))
	}
	for i := range min(len(before), len(during)) {
		// Click URLs carry a decision of their own; the ad is the same.
		if a, b := adID(string(before[i])), adID(string(during[i])); a != b {
			t.Errorf("ad %d with Postgres down: %s, want %s", i, b, a)
		}
	}
	unseen := ps.URL + "/news/unseen"
	res, err := http.Get(r.base + "/v2/page/link?api_key=demo&site_id=demo&url=" + strings.ReplaceAll(unseen, ":", "%3A"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted || res.Header.Get("Retry-After") == "" {
		t.Errorf("an unseen page with Postgres down: %d (Retry-After %q), want 202 pending with a Retry-After",
			res.StatusCode, res.Header.Get("Retry-After"))
	}

	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	// Postgres is back: the unseen page is queued now, and analysed. The
	// pool's connections to the killed server fail once each first, and
	// those lookups are answered pending from memory, so the reader polls.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		status, links := r.pageLink(t, unseen)
		if status == http.StatusOK && len(links) > 0 {
			break
		}
		if status != http.StatusAccepted || time.Now().After(deadline) {
			t.Fatalf("the unseen page after Postgres came back: %d with %d ads, want 202 and then 200 with ads", status, len(links))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := ps.fetched()["/news/unseen"]; got != 1 {
		t.Errorf("the unseen page was fetched %d times, want once", got)
	}
}

// adID is the adId parameter of a link's click URL in an answer's JSON.
func adID(link string) string {
	i := strings.Index(link, "adId=")
	if i < 0 {
		return link
	}
	rest := link[i+len("adId="):]
	for _, end := range []string{`\u0026`, "&", `"`} {
		if j := strings.Index(rest, end); j >= 0 {
			rest = rest[:j]
		}
	}
	return rest
}
