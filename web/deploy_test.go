package web

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestFragmentGoneAfterDeploy: when the fragments of the shard a page
// holds are gone (the server has another catalog since), the match that
// needed them fails, and the next one loads the manifest and shard anew
// rather than asking for the lost fragments again until the manifest
// expires.
func TestFragmentGoneAfterDeploy(t *testing.T) {
	br := newBrowser(t)
	b := startCutBackend(t)
	br.onEveryPage(t, `(() => {
			window.instances = 0;
			const I = WebAssembly.Instance;
			WebAssembly.Instance = function (m, imports) { instances++; return new I(m, imports); };
			window.gone = false;
			window.manifests = 0;
			const f = window.fetch;
			window.fetch = function (u) {
				if (String(u).includes("/v2/shards?")) manifests++;
				if (gone && /\/v2\/shards\/[0-9a-f]{64}\/[0-9]+$/.test(String(u))) return Promise.resolve(new Response("gone", {status: 404}));
				return f.apply(this, arguments);
			};
		})()`)
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html"))
	type result struct {
		Links, Instances, Manifests int
		Error                       string
	}
	search := func(setup, q string) result {
		return eval[result](t, br, `(() => { `+setup+` return adlink.search(`+jsString(q)+`, {loc: "de", lang: "de"}).then(
			r => ({links: r.link.length, instances, manifests}), e => ({error: String(e), instances, manifests})); })()`)
	}
	first := search(``, "iphone 15")
	if first.Links == 0 || first.Instances != 1 {
		t.Fatalf("first search: %+v", first)
	}
	failed := search(`gone = true;`, "kopfhörer")
	if !strings.Contains(failed.Error, "404") {
		t.Fatalf("with its fragments gone: %+v; want the search to fail on a 404", failed)
	}
	again := search(`gone = false;`, "kopfhörer")
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
	br.onEveryPage(t, `(() => {
			const now = Date.now;
			window.clockShift = 0;
			Date.now = () => now() + window.clockShift;
			window.instances = 0;
			const I = WebAssembly.Instance;
			WebAssembly.Instance = function (m, imports) { instances++; return new I(m, imports); };
			window.compiles = 0;
			const cs = WebAssembly.compileStreaming;
			WebAssembly.compileStreaming = function () { compiles++; return cs.apply(this, arguments); };
			window.deployed = false;
			const f = window.fetch;
			window.fetch = function (u, init) {
				if (!String(u).includes("/v2/shards?")) return f.apply(this, arguments);
				return f.call(this, u, Object.assign({}, init, {cache: "no-store"})).then(r => r.json()).then(m => {
					if (deployed) {
						m.shard = {url: `+jsString(other.Shard.URL)+`, sha256: `+jsString(other.Shard.Sha256)+`};
						m.matcher.url += "&deploy=2"; // a new module, as a deploy brings
					}
					return new Response(JSON.stringify(m), {status: 200, headers: {"Content-Type": "application/json"}});
				});
			};
		})()`)
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html"))
	const search = `adlink.search("iphone 15").then(r => ({links: r.link.length, instances, compiles}))`
	type result struct{ Links, Instances, Compiles int }
	steps := []struct {
		name, setup string
		want        result
	}{
		{"first search", ``, result{Instances: 1, Compiles: 1}},
		// The new manifest names a new shard and a new module: the page
		// compiles that, for the old one may not read the new shard.
		{"after the deploy", `clockShift = 55 * 60 * 1000; deployed = true;`, result{Instances: 2, Compiles: 2}},
		// The first shard was let go: naming it again loads it anew, in
		// the module already compiled for it.
		{"back to the first shard", `clockShift = 110 * 60 * 1000; deployed = false;`, result{Instances: 3, Compiles: 2}},
		{"again", ``, result{Instances: 3, Compiles: 2}},
	}
	for _, s := range steps {
		got := eval[result](t, br, `(() => {`+s.setup+` return `+search+`; })()`)
		if got.Links == 0 || got.Instances != s.want.Instances || got.Compiles != s.want.Compiles {
			t.Errorf("%s: %+v; want ads from instance %d, %d modules compiled", s.name, got, s.want.Instances, s.want.Compiles)
		}
	}
	br.noConsoleErrors(t)
}
