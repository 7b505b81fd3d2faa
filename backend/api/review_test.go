package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
)

// heldReviews are a bbolt file's rollups whose site sums each say they
// started on entered, then wait for release (or their context's end)
// before they read.
type heldReviews struct {
	clicks.BoltRollups
	entered chan struct{}
	release chan struct{}
}

func (h heldReviews) SumSites(ctx context.Context, from, to time.Time, fn func(*clicks.Rollup) error) error {
	h.entered <- struct{}{}
	select {
	case <-h.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.BoltRollups.SumSites(ctx, from, to, fn)
}

// newHeldReviews are held reviews over an empty bbolt file's rollups.
func newHeldReviews(t *testing.T) heldReviews {
	t.Helper()
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rollups, err := clicks.NewRollups(db)
	if err != nil {
		t.Fatal(err)
	}
	return heldReviews{BoltRollups: rollups, entered: make(chan struct{}, 8), release: make(chan struct{})}
}

// reviewAt asks base for a site review of query and returns its status,
// Retry-After and error code.
func reviewAt(t *testing.T, base, query string) (status int, retryAfter, code string) {
	res, err := http.Get(base + "/admin/sites/review?" + query)
	if err != nil {
		t.Error(err)
		return 0, "", ""
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var e errorResponse
	json.Unmarshal(body, &e)
	return res.StatusCode, res.Header.Get("Retry-After"), e.Error.Code
}

// One site review runs at a time: another asked for while it reads is
// refused at once, a 503 with Retry-After, not run beside it; bad
// parameters are still named; once the first is done the next runs.
func TestSiteReviewsOneAtATime(t *testing.T) {
	held := newHeldReviews(t)
	base, _ := adminServer(t, AdminDeps{Rollups: held})
	t.Cleanup(func() {
		select {
		case <-held.release:
		default:
			close(held.release)
		}
	})
	day := "from=2026-11-20&to=2026-11-20"
	first := make(chan int, 1)
	go func() {
		status, _, _ := reviewAt(t, base, day)
		first <- status
	}()
	<-held.entered
	second := make(chan [3]string, 1)
	go func() {
		status, retry, code := reviewAt(t, base, day)
		second <- [3]string{strconv.Itoa(status), retry, code}
	}()
	select {
	case got := <-second:
		if got[0] != "503" || got[2] != CodeReviewBusy {
			t.Errorf("a review while one runs: %s %s, want 503 %s", got[0], got[2], CodeReviewBusy)
		}
		if n, err := strconv.Atoi(got[1]); err != nil || n < 1 {
			t.Errorf("a review while one runs: Retry-After %q, want whole seconds", got[1])
		}
	case <-held.entered:
		t.Fatal("a second review read the rollups while the first did")
	}
	if status, _, code := reviewAt(t, base, "from=yesterday"); status != http.StatusBadRequest || code != CodeInvalidParameter {
		t.Errorf("bad parameters while a review runs: %d %s, want 400", status, code)
	}
	close(held.release)
	if status := <-first; status != http.StatusOK {
		t.Fatalf("the first review: %d", status)
	}
	if status, _, code := reviewAt(t, base, day); status != http.StatusOK {
		t.Errorf("a review after the first: %d %s", status, code)
	}
}

// A site review that reads past ReviewTimeout is ended: a 503 that says
// so, and the next review runs.
func TestSiteReviewDeadline(t *testing.T) {
	held := newHeldReviews(t)
	base, _ := adminServer(t, AdminDeps{Rollups: held, ReviewTimeout: time.Millisecond})
	day := "from=2026-11-20&to=2026-11-20"
	if status, _, code := reviewAt(t, base, day); status != http.StatusServiceUnavailable || code != CodeReviewTimeout {
		t.Errorf("a review held past its deadline: %d %s, want 503 %s", status, code, CodeReviewTimeout)
	}
	close(held.release)
	// The deadline ended the first one's turn; this one may still trip
	// its own millisecond, but never finds a review running.
	if status, _, code := reviewAt(t, base, day); status == http.StatusServiceUnavailable && code == CodeReviewBusy {
		t.Errorf("the review after one that timed out: %d %s", status, code)
	}
}

// A HEAD of the site review checks the parameters and sums nothing: bad
// ones get the status and headers a GET gets, good ones a 200 with a
// GET's type, while the rollups are never read.
func TestSiteReviewHead(t *testing.T) {
	held := newHeldReviews(t)
	base, _ := adminServer(t, AdminDeps{Rollups: held})
	release := sync.OnceFunc(func() { close(held.release) })
	t.Cleanup(release)
	ask := func(method, query string) *http.Response {
		req, _ := http.NewRequest(method, base+"/admin/sites/review?"+query, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return &http.Response{}
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	for _, query := range []string{"from=yesterday", "from=2026-11-20&limit=0", "rank=refused&min_impressions=5"} {
		get, head := ask(http.MethodGet, query), ask(http.MethodHead, query)
		if get.StatusCode != http.StatusBadRequest || head.StatusCode != get.StatusCode {
			t.Errorf("?%s: GET %d, HEAD %d, want 400 both", query, get.StatusCode, head.StatusCode)
		}
		for _, k := range []string{"Content-Type", "Content-Length", "X-Content-Type-Options", "Retry-After"} {
			if head.Header.Get(k) != get.Header.Get(k) {
				t.Errorf("?%s: HEAD's %s %q, GET's %q", query, k, head.Header.Get(k), get.Header.Get(k))
			}
		}
	}
	answered := make(chan *http.Response, 1)
	go func() { answered <- ask(http.MethodHead, "from=2026-11-20&to=2026-11-20&rank=refused") }()
	select {
	case <-held.entered:
		t.Error("a HEAD summed the rollups")
		release()
		<-answered
	case res := <-answered:
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" || res.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("HEAD of good parameters: %d %v, want 200 application/json no-store", res.StatusCode, res.Header)
		}
	}
}
