package shards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

func buildSource(t testing.TB, ads []match.Ad) *market.Set {
	t.Helper()
	src, err := market.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func demoSet(t testing.TB) (*market.Set, *Set) {
	t.Helper()
	ads, err := catalog.Demo(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := buildSource(t, ads)
	set, err := Build(src, Options{Matcher: []byte("\x00asm fake module"), RedirectURL: "http://r.test"})
	if err != nil {
		t.Fatal(err)
	}
	return src, set
}

func TestNegotiate(t *testing.T) {
	for ae, want := range map[string]Encoding{
		"":                                Identity,
		"gzip, deflate, br, zstd":         Zstd,
		"gzip, deflate, br":               Gzip,
		"zstd;q=0, gzip":                  Gzip,
		"ZSTD":                            Zstd,
		"*":                               Zstd,
		"*;q=0":                           Identity,
		"gzip;q=0.5, *;q=0":               Gzip,
		"identity":                        Identity,
		"br;q=1.0, gzip;q=0.8, zstd;q=0":  Gzip,
		"gzip;q=x":                        Identity,
		"deflate, zstd;q=0.001, gzip;q=0": Zstd,
	} {
		if got := Negotiate(ae); got != want {
			t.Errorf("Negotiate(%q) = %s, want %s", ae, got, want)
		}
	}
}

// TestShardsAreTheServersIndexes: each market's shard opens to an index
// that answers exactly as the index it was encoded from.
func TestShardsAreTheServersIndexes(t *testing.T) {
	src, set := demoSet(t)
	if len(set.Markets()) == 0 {
		t.Fatal("the demo catalog gave no market shards")
	}
	for m, b := range set.Markets() {
		ix, err := match.Open(b.Bytes(Identity))
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		want := src.For(m.Country, m.Lang)
		q := &match.Query{Text: "handy kopfhörer iphone laptop headphones phone", Country: m.Country, Lang: m.Lang, Dist: match.DistLow}
		o := (&contract.Links{Base: "http://r", Type: contract.TypeSearch, APIKey: "k", SiteID: "s"}).Options()
		if g, w := ix.AppendResponse(nil, ix.Match(q), &o), want.AppendResponse(nil, want.Match(q), &o); !bytes.Equal(g, w) {
			t.Errorf("%s: shard answers %s, index %s", m, g, w)
		}
		if set.Pick(m.Country, m.Lang) != b || set.Shard(b.SHA256) != b {
			t.Errorf("%s: Pick or Shard does not find the market's shard", m)
		}
	}
	if set.Pick("", "") != set.all || set.Pick("", "en") != set.all || set.Pick("", "cs") != set.all || set.Pick("zz", "zz") != set.all || set.Pick("zz", "") != set.all {
		t.Error("requests without a market of their own must get the whole catalog's shard, as search does")
	}
	// A language alone names the one market in it; English runs in two.
	if set.Pick("", "de") != set.Pick("de", "de") {
		t.Error(`Pick("", "de") is not the de-DE shard`)
	}
	// The demo's ads run in Germany in German only, so a country alone (the
	// page context has no lang) names that market.
	if set.Pick("de", "") != set.Pick("de", "de") {
		t.Error(`Pick("de", "") is not the de-DE shard`)
	}
}

// TestCountryShard: a country whose ads run in two languages gets a shard
// of its own, which the manifest of the country alone names; it answers as
// the server's index of the country.
func TestCountryShard(t *testing.T) {
	ads, err := catalog.Demo(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	de := match.Market{Country: "de", Lang: "de"}
	for i := range ads {
		switch {
		case slices.Contains(ads[i].Markets, de) && i%3 == 0:
			ads[i].Markets = append(ads[i].Markets, match.Market{Country: "ch", Lang: "de"})
		case slices.Contains(ads[i].Markets, de) && i%3 == 1:
			ads[i].Markets = append(ads[i].Markets, match.Market{Country: "ch", Lang: "fr"})
		}
	}
	src := buildSource(t, ads)
	set, err := Build(src, Options{RedirectURL: "http://r.test"})
	if err != nil {
		t.Fatal(err)
	}
	b := set.Pick("ch", "")
	if b == set.all || b == set.Pick("ch", "de") || b == set.Pick("ch", "fr") {
		t.Fatal(`Pick("ch", "") is not a shard of its own`)
	}
	if m := string(set.Manifest("ch", "")); !strings.HasPrefix(m, `{"market":"CH",`) {
		t.Errorf("manifest %s, want market CH", m)
	}
	ix, err := match.Open(b.Bytes(Identity))
	if err != nil {
		t.Fatal(err)
	}
	want := src.For("ch", "")
	q := &match.Query{Text: "handy kopfhörer iphone laptop", Country: "ch", Dist: match.DistLow}
	o := (&contract.Links{Base: "http://r", Type: contract.TypeSearch, APIKey: "k", SiteID: "s"}).Options()
	if g, w := ix.AppendResponse(nil, ix.Match(q), &o), want.AppendResponse(nil, want.Match(q), &o); !bytes.Equal(g, w) || bytes.Equal(g, []byte(`{"link":[]}`)) {
		t.Errorf("the ch shard answers %s, the server's index %s", g, w)
	}
}

func TestEncodingsDecodeToTheSameBytes(t *testing.T) {
	_, set := demoSet(t)
	b := set.Pick("de", "de")
	zr, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	z, err := zr.DecodeAll(b.Bytes(Zstd), nil)
	if err != nil || !bytes.Equal(z, b.Bytes(Identity)) {
		t.Fatalf("zstd round trip: %v", err)
	}
	gr, err := gzip.NewReader(bytes.NewReader(b.Bytes(Gzip)))
	if err != nil {
		t.Fatal(err)
	}
	g, err := io.ReadAll(gr)
	if err != nil || !bytes.Equal(g, b.Bytes(Identity)) {
		t.Fatalf("gzip round trip: %v", err)
	}
	if b.Size(Zstd) >= b.Size(Identity) || b.Size(Gzip) >= b.Size(Identity) {
		t.Errorf("compression did not shrink the shard: %d/%d/%d", b.Size(Zstd), b.Size(Gzip), b.Size(Identity))
	}
}

func TestServe(t *testing.T) {
	_, set := demoSet(t)
	b := set.Pick("de", "de")
	for _, tc := range []struct {
		ae, inm    string
		status     int
		enc        string
		body       []byte
		etagSuffix string
	}{
		{ae: "gzip, deflate, br, zstd", status: 200, enc: "zstd", body: b.Bytes(Zstd), etagSuffix: `.zstd"`},
		{ae: "gzip", status: 200, enc: "gzip", body: b.Bytes(Gzip), etagSuffix: `.gzip"`},
		{ae: "", status: 200, enc: "", body: b.Bytes(Identity), etagSuffix: b.SHA256 + `"`},
		{ae: "zstd", inm: `"` + b.SHA256 + `.zstd"`, status: 304},
		{ae: "gzip", inm: `"x", W/"` + b.SHA256 + `.gzip"`, status: 304},
		{ae: "gzip", inm: `"` + b.SHA256 + `.zstd"`, status: 200, enc: "gzip", body: b.Bytes(Gzip), etagSuffix: `.gzip"`},
	} {
		r := httptest.NewRequest("GET", ShardPath+b.SHA256, nil)
		r.Header.Set("Accept-Encoding", tc.ae)
		if tc.inm != "" {
			r.Header.Set("If-None-Match", tc.inm)
		}
		w := httptest.NewRecorder()
		b.Serve(w, r, Immutable)
		res := w.Result()
		body, _ := io.ReadAll(res.Body)
		h := res.Header
		if res.StatusCode != tc.status || h.Get("Vary") != "Accept-Encoding" || h.Get("Cache-Control") != Immutable ||
			h.Get("Access-Control-Allow-Origin") != "*" || h.Get("ETag") == "" {
			t.Errorf("%q/%q: %d %v", tc.ae, tc.inm, res.StatusCode, h)
			continue
		}
		if tc.status == http.StatusNotModified {
			if len(body) != 0 {
				t.Errorf("304 with a body")
			}
			continue
		}
		if h.Get("Content-Encoding") != tc.enc || !bytes.Equal(body, tc.body) || h.Get("Content-Type") != "application/octet-stream" ||
			!bytes.HasSuffix([]byte(h.Get("ETag")), []byte(tc.etagSuffix)) {
			t.Errorf("%q: encoding %q, etag %s, %d bytes", tc.ae, h.Get("Content-Encoding"), h.Get("ETag"), len(body))
		}
	}
}

func TestManifest(t *testing.T) {
	_, set := demoSet(t)
	var m struct {
		Market         string `json:"market"`
		FormatVersion  int    `json:"format_version"`
		RedirectURL    string `json:"redirect_url"`
		Shard, Matcher struct {
			URL    string         `json:"url"`
			SHA256 string         `json:"sha256"`
			Bytes  map[string]int `json:"bytes"`
		}
	}
	if err := json.Unmarshal(set.Manifest("de", "de"), &m); err != nil {
		t.Fatalf("%s: %v", set.Manifest("de", "de"), err)
	}
	b := set.Pick("de", "de")
	if m.Market != "de-DE" || m.FormatVersion != match.ShardVersion || m.RedirectURL != "http://r.test" ||
		m.Shard.URL != ShardPath+b.SHA256 || m.Shard.SHA256 != b.SHA256 ||
		m.Shard.Bytes["zstd"] != b.Size(Zstd) || m.Shard.Bytes["gzip"] != b.Size(Gzip) || m.Shard.Bytes["identity"] != b.Size(Identity) ||
		m.Matcher.URL != set.MatcherURL() || m.Matcher.SHA256 != set.Matcher().SHA256 {
		t.Errorf("manifest %s", set.Manifest("de", "de"))
	}
	if err := json.Unmarshal(set.Manifest("", ""), &m); err != nil || m.Market != "all" {
		t.Errorf("manifest without market: %s", set.Manifest("", ""))
	}
}

// FuzzNegotiate: any Accept-Encoding, If-None-Match and Range header
// gives an encoding we keep and an answer of the blob's bytes, without a
// panic: a 206's body is the encoded bytes its Content-Range names.
func FuzzNegotiate(f *testing.F) {
	f.Add("gzip, deflate, br, zstd", `"x", W/"y"`, "bytes=0-9")
	f.Add("zstd;q=0.5,*;q=0,identity;q=", "*", "bytes=-5, 7-")
	f.Add("", "", "bytes=99999999999999999999-")
	b, err := NewBlob([]byte("a blob of some bytes, long enough to be cut into ranges"), "application/octet-stream")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ae, inm, rng string) {
		e := Negotiate(ae)
		if e >= numEncodings {
			t.Fatalf("Negotiate(%q) = %d", ae, e)
		}
		r := httptest.NewRequest("GET", "/b", nil)
		r.Header = http.Header{"Accept-Encoding": {ae}, "If-None-Match": {inm}, "Range": {rng}}
		w := httptest.NewRecorder()
		b.Serve(w, r, Immutable)
		var from, to, size int
		if w.Code == http.StatusPartialContent {
			if _, err := fmt.Sscanf(w.Header().Get("Content-Range"), "bytes %d-%d/%d", &from, &to, &size); err == nil &&
				!bytes.Equal(w.Body.Bytes(), b.Bytes(e)[from:to+1]) {
				t.Fatalf("Range %q: %q is not bytes %d-%d", rng, w.Body.Bytes(), from, to)
			}
		}
	})
}

// TestServeRanges: a Range of the encoded bytes is answered with those
// bytes (206), its encoding and ETag, a suffix range too; an If-Range
// naming another ETag gets the whole blob, a range past its end 416, and
// HEAD the headers alone.
func TestServeRanges(t *testing.T) {
	_, set := demoSet(t)
	b := set.Pick("de", "de")
	z := b.Bytes(Zstd)
	serve := func(method, rng, ifRange string) *http.Response {
		t.Helper()
		r := httptest.NewRequest(method, ShardPath+b.SHA256, nil)
		r.Header.Set("Accept-Encoding", "zstd")
		r.Header.Set("Range", rng)
		if ifRange != "" {
			r.Header.Set("If-Range", ifRange)
		}
		w := httptest.NewRecorder()
		b.Serve(w, r, Immutable)
		return w.Result()
	}
	etag := `"` + b.SHA256 + `.zstd"`
	for _, tc := range []struct {
		rng, ifRange string
		status       int
		body         []byte
		contentRange string
	}{
		{rng: "bytes=0-9", status: 206, body: z[:10], contentRange: fmt.Sprintf("bytes 0-9/%d", len(z))},
		{rng: "bytes=-5", status: 206, body: z[len(z)-5:], contentRange: fmt.Sprintf("bytes %d-%d/%d", len(z)-5, len(z)-1, len(z))},
		{rng: "bytes=10-19", ifRange: etag, status: 206, body: z[10:20], contentRange: fmt.Sprintf("bytes 10-19/%d", len(z))},
		{rng: "bytes=10-19", ifRange: `"an older blob.zstd"`, status: 200, body: z},
		{rng: fmt.Sprintf("bytes=%d-", len(z)), status: 416},
	} {
		res := serve("GET", tc.rng, tc.ifRange)
		body, _ := io.ReadAll(res.Body)
		h := res.Header
		if tc.status == 416 {
			if res.StatusCode != 416 || h.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(z)) || h.Get("Content-Encoding") != "" {
				t.Errorf("Range %q past the end: %d %v", tc.rng, res.StatusCode, h)
			}
			continue
		}
		if res.StatusCode != tc.status || h.Get("ETag") != etag || h.Get("Vary") != "Accept-Encoding" || h.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("Range %q If-Range %q: %d %v", tc.rng, tc.ifRange, res.StatusCode, h)
			continue
		}
		if !bytes.Equal(body, tc.body) || h.Get("Content-Encoding") != "zstd" || h.Get("Content-Range") != tc.contentRange ||
			h.Get("Content-Length") != fmt.Sprint(len(tc.body)) {
			t.Errorf("Range %q If-Range %q: %d bytes (Content-Length %q), encoding %q, Content-Range %q; want %d bytes, %q",
				tc.rng, tc.ifRange, len(body), h.Get("Content-Length"), h.Get("Content-Encoding"), h.Get("Content-Range"), len(tc.body), tc.contentRange)
		}
	}
	res := serve("HEAD", "", "")
	if body, _ := io.ReadAll(res.Body); res.StatusCode != 200 || len(body) != 0 || res.Header.Get("Content-Length") != fmt.Sprint(len(z)) {
		t.Errorf("HEAD: %d, %d bytes, Content-Length %q", res.StatusCode, len(body), res.Header.Get("Content-Length"))
	}
}

// TestBuildReusesPrevious: after a change in one market, the shards of the
// others are the earlier set's own, not compressed again, and the changed
// ones are new.
func TestBuildReusesPrevious(t *testing.T) {
	ads, err := catalog.Demo(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, before := demoSet(t)
	// A price change in a product that runs only in en-US.
	changed := slices.Clone(ads)
	var us match.Market
	for i := range changed {
		if a := &changed[i]; a.Kind == match.KindProduct && len(a.Markets) == 1 && a.Markets[0].Country == "us" {
			a.PriceCents++
			us = a.Markets[0]
			break
		}
	}
	if us == (match.Market{}) {
		t.Fatal("no product only in the US")
	}
	after, err := Build(buildSource(t, changed), Options{Matcher: []byte("\x00asm fake module"), RedirectURL: "http://r.test", Previous: before})
	if err != nil {
		t.Fatal(err)
	}
	if after.Matcher() != before.Matcher() {
		t.Error("the module was compressed again")
	}
	if after.Pick("", "") == before.Pick("", "") {
		t.Error("the whole catalog's shard did not change")
	}
	for m, b := range after.Markets() {
		same := b == before.Markets()[m]
		if m.Country == "us" && same {
			t.Errorf("%s: the changed market kept its shard", m)
		}
		if m.Country != "us" && !same {
			t.Errorf("%s: an unchanged market's shard was built again", m)
		}
	}
}
