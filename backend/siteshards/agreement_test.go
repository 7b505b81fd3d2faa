package siteshards_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/siteshards"
	"github.com/adlink/adlink/match"
)

// article is one of the shared articles as the server analysed it and as
// the page's matcher reads it.
type article struct {
	url string
	// title and text are the page's, as extracted; reduced are the same
	// reduced against the whole catalog, the analysis the server keeps.
	title, text       string
	redTitle, redText string
	lang              string
}

// dataDir is ../shared/data seen from the module root, or "" when absent.
func dataDir(tb testing.TB) string {
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "..", "shared", "data")
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// loadArticles reads the shared articles and extracts each as the page
// service does; it skips without them.
func loadArticles(tb testing.TB, all *match.Index) []article {
	dir := filepath.Join(dataDir(tb), "pages", "articles")
	f, err := os.Open(filepath.Join(dir, "ground-truth.json.gz"))
	if err != nil {
		tb.Skipf("skipping: the shared articles are not at %s (%v)", dir, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var gt map[string]struct {
		URL string `json:"url"`
	}
	if err := json.NewDecoder(zr).Decode(&gt); err != nil {
		tb.Fatal(err)
	}
	hashes := slices.Sorted(func(yield func(string) bool) {
		for h := range gt {
			if !yield(h) {
				return
			}
		}
	})
	var out []article
	for _, h := range hashes {
		hf, err := os.Open(filepath.Join(dir, "html", h+".html.gz"))
		if err != nil {
			tb.Fatal(err)
		}
		hz, err := gzip.NewReader(hf)
		if err != nil {
			tb.Fatal(err)
		}
		html, err := io.ReadAll(hz)
		hf.Close()
		if err != nil {
			tb.Fatal(err)
		}
		ex, err := pages.ExtractPage(string(html), gt[h].URL)
		if err != nil {
			continue
		}
		title := ex.Title
		if len(ex.Headings) > 0 {
			title += "\n" + strings.Join(ex.Headings, "\n")
		}
		a := article{url: fmt.Sprintf("http://articles.example/a/%s", h), title: title, text: ex.Text, lang: ex.Lang}
		a.redTitle, a.redText = all.Reduce(title, ex.Text)
		out = append(out, a)
	}
	return out
}

// pickIndex is the index that answers a page without loc, as the server
// picks it (api's index) and the manifest's shard is encoded from.
func pickIndex(mi *market.Set, country, lang string) *match.Index {
	if m, ok := mi.All().ShardMarket(country, lang); ok {
		if ix := mi.For(m.Country, m.Lang); ix != nil {
			return ix
		}
	}
	return mi.All()
}

// serverTop3 is the server's answer to an analysed page: from the whole
// catalog, on the stored reduced text.
func serverTop3(mi *market.Set, a *article) []string {
	ix := pickIndex(mi, "", a.lang)
	q := match.Query{Page: true, Title: a.redTitle, Text: a.redText, Lang: a.lang}
	var ids []string
	for _, h := range ix.Match(&q) {
		if len(ids) == 3 {
			break
		}
		ids = append(ids, ix.Ad(h.Ad).ID)
	}
	return ids
}

// inPage is what the page's matcher shows on a shard (encoded as the page
// gets it, fragments loaded as the widget loads them): the ids of its
// answer, and the bytes of the fragments it needed.
func inPage(tb testing.TB, shard *shards.Blob, frags []*shards.Blob, a *article) (ids []string, fragBytes int) {
	ix, err := match.Open(shard.Bytes(shards.Identity))
	if err != nil {
		tb.Fatal(err)
	}
	q := match.Query{Page: true, Title: a.title, Text: a.text, Lang: a.lang}
	hits := ix.Match(&q)
	for _, k := range ix.Missing(hits) {
		if err := ix.LoadFragment(k, frags[k].Bytes(shards.Identity)); err != nil {
			tb.Fatal(err)
		}
		fragBytes += frags[k].Size(shards.Zstd)
	}
	for _, h := range hits {
		ids = append(ids, ix.Ad(h.Ad).ID)
	}
	return ids, fragBytes
}

// agreement measures, for every article, the share of the server's top 3
// that the page's matcher shows on the shard a site learned from the other
// articles (leave-one-out), and on the market's whole shard.
func agreement(tb testing.TB, mi *market.Set, arts []article, budget int) (site, whole float64, n int) {
	svc := siteshards.New(siteshards.Options{Budget: budget, BuildRate: 1e9, BuildBurst: 1 << 20, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	defer svc.Close()
	wholeShards := map[*match.Index][2]any{}
	var agreeSite, agreeWhole int
	for i := range arts {
		a := &arts[i]
		want := serverTop3(mi, a)
		if len(want) == 0 {
			continue
		}
		ix := pickIndex(mi, "", a.lang)
		key := fmt.Sprintf("loo-%d", i)
		for j := range arts {
			if j != i {
				b := &arts[j]
				svc.Observe(key, b.url, pickIndex(mi, "", b.lang), match.Query{Page: true, Title: b.redTitle, Text: b.redText, Lang: b.lang})
			}
		}
		req := siteshards.Request{Version: "v", Index: ix, MarketBytes: 1 << 40, Site: key, Lang: a.lang}
		sh := siteShard(tb, svc, req)
		if sh == nil {
			tb.Fatalf("article %d: no site shard", i)
		}
		got, _ := inPage(tb, sh.Blob, sh.Fragments, a)
		w, ok := wholeShards[ix]
		if !ok {
			data, frags := shards.PageShard(ix)
			blob, err := shards.NewBlob(data, "application/octet-stream")
			if err != nil {
				tb.Fatal(err)
			}
			var fb []*shards.Blob
			for _, f := range frags {
				b, err := shards.NewBlob(f, "application/octet-stream")
				if err != nil {
					tb.Fatal(err)
				}
				fb = append(fb, b)
			}
			w = [2]any{blob, fb}
			wholeShards[ix] = w
		}
		gotWhole, _ := inPage(tb, w[0].(*shards.Blob), w[1].([]*shards.Blob), a)
		for _, id := range want {
			n++
			if slices.Contains(got, id) {
				agreeSite++
			}
			if slices.Contains(gotWhole, id) {
				agreeWhole++
			}
		}
	}
	if n == 0 {
		tb.Fatal("no article has ads from the server")
	}
	return float64(agreeSite) / float64(n), float64(agreeWhole) / float64(n), n
}

// siteShard asks for a site's shard until its build, queued by the asking,
// is done.
func siteShard(tb testing.TB, svc *siteshards.Service, req siteshards.Request) *siteshards.Shard {
	ctx := context.Background()
	for range 2 {
		svc.Pick(ctx, req)
		if err := svc.Flush(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	return svc.Pick(ctx, req)
}
