package web

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/wasm/module"
	"github.com/chromedp/chromedp"
)

// floorPage fetches, compiles and starts a Go reactor with nothing else to
// do: compileStreaming as the widget does, and a WASI shim that answers
// what a Go runtime asks while it starts (the environment with GOGC, the
// clock, random bytes; zero for the rest). It resolves to the
// milliseconds of each step and the module's bytes over the wire.
const floorPage = `<!doctype html><meta charset="utf-8"><title>Go start-up</title><script>
window.goStart = async (url) => {
  const t0 = performance.now();
  const module = await WebAssembly.compileStreaming(fetch(url));
  const t1 = performance.now();
  let memory;
  const view = () => new DataView(memory.buffer);
  const env = new TextEncoder().encode("GOGC=200\0");
  const wasi = {};
  for (const i of WebAssembly.Module.imports(module)) wasi[i.name] = () => 0;
  Object.assign(wasi, {
    environ_sizes_get: (n, size) => { view().setUint32(n, 1, true); view().setUint32(size, env.length, true); return 0; },
    environ_get: (ptrs, buf) => { view().setUint32(ptrs, buf, true); new Uint8Array(memory.buffer, buf, env.length).set(env); return 0; },
    args_sizes_get: (n, size) => { view().setUint32(n, 0, true); view().setUint32(size, 0, true); return 0; },
    clock_time_get: (id, precision, out) => { view().setBigUint64(out, BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6)), true); return 0; },
    random_get: (p, n) => { crypto.getRandomValues(new Uint8Array(memory.buffer, p, n)); return 0; },
  });
  const instance = new WebAssembly.Instance(module, { wasi_snapshot_preview1: wasi });
  memory = instance.exports.memory;
  instance.exports._initialize();
  const t2 = performance.now();
  const sent = performance.getEntriesByName(new URL(url, location.href).href)[0];
  return [t1 - t0, t2 - t1, t2 - t0, sent ? sent.encodedBodySize : 0];
};
</script>`

// goFloor is the floor under a first view's time to first ad: how long an
// empty Go reactor (module.Empty, built as matcher.wasm is and served as
// the server serves it, zstd when the CLI made one) takes to arrive,
// compile and start in a fresh browser, one per round, with no request,
// shard or matching around it. It returns the medians of the fetch and
// compile, the start (instantiate and _initialize) and their total, each a
// median of its own, and the KB the browser received for the module.
func goFloor(tb testing.TB, rounds int) (compile, start, total, kb float64) {
	tb.Helper()
	needChromium(tb)
	empty, err := module.Empty()
	if err != nil {
		tb.Fatal(err)
	}
	blob, err := shards.NewBlob(empty, "application/wasm")
	if err != nil {
		tb.Fatal(err)
	}
	if z, err := cliZstd(empty); err != nil {
		tb.Fatal(err)
	} else if z != nil {
		if _, err := blob.UseZstd(z); err != nil {
			tb.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/empty.wasm" {
			blob.Serve(w, r, "public, max-age=31536000, immutable")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(floorPage))
	}))
	defer srv.Close()
	var c, s, t []float64
	for range rounds {
		br := newBrowser(tb)
		br.lean(tb)
		br.do(tb, chromedp.Navigate(srv.URL+"/"))
		v := eval[[4]float64](tb, br, `goStart("/empty.wasm")`)
		c, s, t, kb = append(c, v[0]), append(s, v[1]), append(t, v[2]), v[3]/1e3
		br.noConsoleErrors(tb)
		br.close()
	}
	return median(c), median(s), median(t), kb
}

// TestGoFloorPageStarts: the floor's page really starts a Go runtime, so
// the baseline it measures is one.
func TestGoFloorPageStarts(t *testing.T) {
	compile, start, total, kb := goFloor(t, 1)
	// Every step took time, and the browser received about what the
	// server sends: zstd or gzip of an empty reactor, 0.4-0.6 MB.
	if !(compile > 0 && start > 0) || kb < 300 || kb > 700 {
		t.Fatalf("compile %.1f ms, start %.1f ms, total %.1f ms, %.1f KB", compile, start, total, kb)
	}
}
