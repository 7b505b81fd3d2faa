package web

import (
	_ "embed"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var (
	// countInstances counts the WebAssembly instances the page makes, in
	// window.instances.
	//
	//go:embed testdata/deploy/instances.js
	countInstances string
	// fragmentsGone counts the manifests the page fetches, in
	// window.manifests, and answers 404 for every fragment while
	// window.gone is true.
	//
	//go:embed testdata/deploy/fragments_gone.js
	fragmentsGone string
	// goneSearch, called with gone and q, sets window.gone and searches q.
	//
	//go:embed testdata/deploy/gone_search.js
	goneSearch string
	// redeploy, called with a shard's URL and sha256, counts the modules
	// the page compiles, in window.compiles, and fetches each manifest
	// anew; while window.deployed is true, the manifest names that shard
	// and a module of another deploy.
	//
	//go:embed testdata/deploy/redeploy.js
	redeploy string
	// redeploySearch, called with clockShift and deployed, sets them and
	// searches.
	//
	//go:embed testdata/deploy/redeploy_search.js
	redeploySearch string
)

// TestFragmentGoneAfterDeploy: when the fragments of the shard a page
// holds are gone (the server has another catalog since), the match that
// needed them fails, and the next one loads the manifest and shard anew
// rather than asking for the lost fragments again until the manifest
// expires.
func TestFragmentGoneAfterDeploy(t *testing.T) {
	br := newBrowser(t)
	b := startCutBackend(t)
	br.onEveryPage(t, countInstances)
	br.onEveryPage(t, fragmentsGone)
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html"))
	type result struct {
		Links, Instances, Manifests int
		Error                       string
	}
	search := func(gone bool, q string) result {
		return evalCall[result](t, br, goneSearch, gone, q)
	}
	first := search(false, "iphone 15")
	if first.Links == 0 || first.Instances != 1 {
		t.Fatalf("first search: %+v", first)
	}
	failed := search(true, "kopfhörer")
	if !strings.Contains(failed.Error, "404") {
		t.Fatalf("with its fragments gone: %+v; want the search to fail on a 404", failed)
	}
	again := search(false, "kopfhörer")
	if again.Links == 0 || again.Instances != 2 || again.Manifests <= first.Manifests {
		t.Errorf("after the fragments were gone: %+v; want ads from a new instance over a new manifest (first %+v)", again, first)
	}
	br.noConsoleErrors(t)
}

// TestStaleShardLetGo: when a refreshed manifest names another shard (the
// server has a new catalog), the page lets go of the old shard's
// instance; the page counts the instances made. It fetches the manifest
// anew once its token is close to expiry (see TestClickTokenRenewed); a
// wrapped fetch plays the new catalog by naming another of the server's
// shards, and then the first one again.
func TestStaleShardLetGo(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	var other struct {
		Shard struct{ URL, Sha256 string }
	}
	if err := json.Unmarshal(get(t, b.URL+"/v2/shards?api_key=demo&site_id=demo"), &other); err != nil || other.Shard.Sha256 == "" {
		t.Fatalf("the whole catalog's manifest: %v %+v", err, other)
	}
	br.onEveryPage(t, clock)
	br.onEveryPage(t, countInstances)
	br.onEveryPage(t, jsCall(redeploy, other.Shard.URL, other.Shard.Sha256))
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html"))
	type result struct{ Links, Instances, Compiles int }
	steps := []struct {
		name     string
		shift    time.Duration // the page's clock ahead
		deployed bool
		want     result
	}{
		{"first search", 0, false, result{Instances: 1, Compiles: 1}},
		// The new manifest names a new shard and a new module: the page
		// compiles that, for the old one may not read the new shard.
		{"after the deploy", 55 * time.Minute, true, result{Instances: 2, Compiles: 2}},
		// The first shard was let go: naming it again loads it anew, in
		// the module already compiled for it.
		{"back to the first shard", 110 * time.Minute, false, result{Instances: 3, Compiles: 2}},
		{"again", 110 * time.Minute, false, result{Instances: 3, Compiles: 2}},
	}
	for _, s := range steps {
		got := evalCall[result](t, br, redeploySearch, s.shift.Milliseconds(), s.deployed)
		if got.Links == 0 || got.Instances != s.want.Instances || got.Compiles != s.want.Compiles {
			t.Errorf("%s: %+v; want ads from instance %d, %d modules compiled", s.name, got, s.want.Instances, s.want.Compiles)
		}
	}
	br.noConsoleErrors(t)
}
