package web

import (
	"archive/tar"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/net/html"
)

var (
	// realPageScript describes what the widget placed in a real page
	// (realView).
	//
	//go:embed testdata/trust/realpage.js
	realPageScript string
	// longTasks records a page's long tasks from its start.
	//
	//go:embed testdata/trust/tasks.js
	longTasks string
	// plainBlocking is the long tasks of a page without the widget.
	//
	//go:embed testdata/trust/plain.js
	plainBlocking string
)

// pagesDir holds the real third-party pages, seen from this package.
const pagesDir = "../../shared/data/pages"

// trafilaturaPages is how many of trafilatura's evaluation pages the suite
// takes, the first by name.
const trafilaturaPages = 100

// realPage is a third-party page: its HTML, and for a Readability test
// page the text of its main part as Readability extracts it.
type realPage struct {
	name, html string
	expected   string // normalised text; "" when unknown
}

var realPagesOnce = sync.OnceValues(loadRealPages)

// realPages returns the Readability test pages and trafilatura's evaluation
// pages, or skips tb when ../shared/data lacks them.
func realPages(tb testing.TB) []realPage {
	tb.Helper()
	pages, err := realPagesOnce()
	if err != nil {
		tb.Skipf("real pages not found (%v): they live in ../shared/data/pages next to the project", err)
	}
	return pages
}

func loadRealPages() ([]realPage, error) {
	var out []realPage
	byDir := map[string]*realPage{}
	err := eachFile(path.Join(pagesDir, "readability/readability-test-pages.tar.zst"), func(name string, body []byte) {
		dir, file := path.Split(name)
		if !strings.Contains(dir, "/test-pages/") || (file != "source.html" && file != "expected.html") {
			return
		}
		p := byDir[dir]
		if p == nil {
			p = &realPage{name: "readability/" + path.Base(dir)}
			byDir[dir] = p
		}
		if file == "source.html" {
			p.html = string(body)
		} else {
			p.expected = htmlText(string(body))
		}
	})
	if err != nil {
		return nil, err
	}
	for _, p := range byDir {
		if p.html != "" {
			out = append(out, *p)
		}
	}
	var traf []realPage
	err = eachFile(path.Join(pagesDir, "trafilatura/trafilatura-eval.tar.zst"), func(name string, body []byte) {
		if dir, file := path.Split(name); strings.HasSuffix(dir, "/tests/cache/") && strings.HasSuffix(file, ".html") {
			traf = append(traf, realPage{name: "trafilatura/" + file, html: string(body)})
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(traf, func(a, b realPage) int { return strings.Compare(a.name, b.name) })
	out = append(out, traf[:min(len(traf), trafilaturaPages)]...)
	slices.SortFunc(out, func(a, b realPage) int { return strings.Compare(a.name, b.name) })
	if len(out) == 0 {
		return nil, errors.New("no pages in the archives")
	}
	return out, nil
}

// onlyPages is the pages whose names ADLINK_REAL_PAGES (a regular
// expression) matches, all of them when it is not set: a run over the
// few pages where the widget blocks most takes a minute, not the suite's
// quarter of an hour.
func onlyPages(tb testing.TB, pages []realPage) []realPage {
	expr := os.Getenv("ADLINK_REAL_PAGES")
	if expr == "" {
		return pages
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		tb.Fatalf("ADLINK_REAL_PAGES: %v", err)
	}
	pages = slices.DeleteFunc(slices.Clone(pages), func(p realPage) bool { return !re.MatchString(p.name) })
	if len(pages) == 0 {
		tb.Fatalf("ADLINK_REAL_PAGES %q matches no page", expr)
	}
	return pages
}

// eachFile calls f with each regular file of a zstd-compressed tar.
func eachFile(name string, f func(name string, body []byte)) error {
	file, err := os.Open(name)
	if err != nil {
		return err
	}
	defer file.Close()
	zr, err := zstd.NewReader(file)
	if err != nil {
		return err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		f(h.Name, body)
	}
}

// htmlText is the text of an HTML fragment, normalised as realpage.js
// normalises a link's context: no soft hyphens, white space collapsed.
func htmlText(s string) string {
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		return ""
	}
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return normText(b.String())
}

// spaces is white space as JavaScript's \s has it: a no-break space too.
var spaces = regexp.MustCompile(`[\s\p{Z}\x{feff}]+`)

func normText(s string) string {
	return spaces.ReplaceAllString(strings.ReplaceAll(s, "\u00ad", ""), " ")
}

// realLink is an in-text link the widget placed in a real page.
type realLink struct {
	Text                 string
	Number, Hidden, Form bool
	Context              string
}

// realView is what the widget did in one real page.
type realView struct {
	Blocked    bool // the widget never started (the page's CSP)
	Source     string
	Box, Words int
	Links      []realLink
	Tasks      [][2]float64 // the page's long tasks, [start, duration] in ms
	Start      float64      // when the widget started, ms after the page started
	Marks      []realMark   // the widget's User Timing marks
}

// realMark is one of the widget's User Timing marks ("adlink:<step>"):
// its step and when, ms after the page started.
type realMark struct {
	Step string
	At   float64
}

// widgetSteps names each long task from the widget's start by the
// widget's marks in it ("initialized", "loaded+matched"), "?" for a task
// with none: the page's own, or the widget's between two marks.
func widgetSteps(v realView) string {
	var out []string
	for _, t := range v.Tasks {
		if t[0]+t[1] <= v.Start {
			continue
		}
		var in []string
		for _, m := range v.Marks {
			if m.At >= t[0] && m.At <= t[0]+t[1] {
				in = append(in, m.Step)
			}
		}
		if len(in) == 0 {
			in = []string{"?"}
		}
		out = append(out, fmt.Sprintf("%s %.0f ms at %.0f", strings.Join(in, "+"), t[1], t[0]-v.Start))
	}
	return strings.Join(out, ", ")
}

// blockingAfter is the total blocking time of tasks that end after ms:
// each one's time past 50 ms.
func blockingAfter(tasks [][2]float64, ms float64) float64 {
	sum := 0.0
	for _, t := range tasks {
		if t[0]+t[1] > ms {
			sum += t[1] - 50
		}
	}
	return sum
}

// servedLangs are the languages of the demo catalog's markets.
var servedLangs = []string{"de", "en"}

// realSuite is the widget over every real page, matched in the page (the
// server has not seen them), with what a reader and an advertiser would
// object to counted.
type realSuite struct {
	pages, views, withAds, links int
	numbers, hidden, forms       int
	inMain, judged               int
	unserved, unservedWithAds    int
	perKWords                    []float64
	blocking, plain              []float64
	added                        []float64 // each page's blocking time with the widget less without it
	addedBy                      []string  // the pages where the widget added blocking time, with its long tasks
	blocked                      []string
	bad                          []string // what an objectionable link was, for the report
	outside                      []string // links outside the main text
}

// bodyEnd finds where the widget's tag goes: before the last </body>.
var bodyEnd = regexp.MustCompile(`(?i)</body\s*>`)

// withWidget is a page with the widget's tag before its </body>.
func withWidget(page, base string) string {
	tag := `<script async src="` + base + `/widget.js" data-api-key="demo" data-site-id="demo" data-base="` + base + `"></script>`
	loc := bodyEnd.FindAllStringIndex(page, -1)
	if len(loc) == 0 {
		return page + tag
	}
	at := loc[len(loc)-1][0]
	return page[:at] + tag + page[at:]
}

// runRealPages views every real page with the widget; with plain, each
// also without it, for the page's own blocking time.
func runRealPages(tb testing.TB, plain bool) *realSuite {
	pages := onlyPages(tb, realPages(tb))
	b := real.start(tb)
	served := map[string]string{}
	for i, p := range pages {
		served["/w/"+strconv.Itoa(i)] = withWidget(p.html, b.URL)
		served["/p/"+strconv.Itoa(i)] = p.html
	}
	// Served as the publisher sent them: the type without a charset, so
	// that the page's own <meta charset> counts.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := served[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, page)
	}))
	tb.Cleanup(srv.Close)
	s := &realSuite{pages: len(pages)}
	// Views with and without the widget are read at the same time after
	// the page's start, late enough for the widget to have placed its ads;
	// a test that does not compare them reads once the ads are placed.
	readAt := 0.0
	if plain {
		readAt = 2000
	}
	// A view mostly waits (for the network, for timers), so a test views
	// several pages at once, each worker in a tab of its own; the
	// benchmark times each page's blocking alone.
	workers := 3
	if plain {
		workers = 1
	}
	views := make([]pageViews, len(pages))
	// Fresh tabs every 40 pages a worker: a long run in one tab grows.
	// Views run lean, as a reader's browser does (see lean).
	for from := 0; from < len(pages); from += 40 * workers {
		brs := make([]*browser, workers)
		for w := range brs {
			brs[w] = newBrowser(tb)
			brs[w].lean(tb)
			brs[w].onEveryPage(tb, longTasks)
		}
		next := make(chan int)
		var wg sync.WaitGroup
		for _, br := range brs {
			wg.Go(func() {
				for i := range next {
					views[i] = viewBoth(br, srv.URL, i, plain, readAt)
				}
			})
		}
		for i := from; i < min(len(pages), from+40*workers); i++ {
			next <- i
		}
		close(next)
		wg.Wait()
		for _, br := range brs {
			br.close()
		}
	}
	for i, p := range pages {
		v := views[i]
		if v.err != nil {
			tb.Logf("%s: %v", p.name, v.err)
			continue
		}
		if v.with.Blocked {
			s.blocked = append(s.blocked, p.name)
			continue
		}
		s.add(p, v.with, langOf(p.html))
		if !plain {
			continue
		}
		if v.plainErr != nil {
			tb.Logf("%s without the widget: %v", p.name, v.plainErr)
			continue
		}
		// From the widget's start on: what comes before it is the page's
		// own loading, with or without it.
		with, alone := blockingAfter(v.with.Tasks, v.with.Start), blockingAfter(v.without, v.with.Start)
		s.blocking = append(s.blocking, with)
		s.plain = append(s.plain, alone)
		s.added = append(s.added, with-alone)
		if with > alone {
			s.addedBy = append(s.addedBy, fmt.Sprintf("%s: %.0f ms added: %s", p.name, with-alone, widgetSteps(v.with)))
		}
	}
	return s
}

// pageViews is the view of real page i with the widget and, for the
// benchmark, without it.
type pageViews struct {
	with     realView
	err      error
	without  [][2]float64
	plainErr error
}

// viewBoth views real page i, served from base, with the widget and, with
// plain, without it too: every other page without it first, as a second
// load of the same page finds its style sheets parsed.
func viewBoth(br *browser, base string, i int, plain bool, readAt float64) pageViews {
	var v pageViews
	n := strconv.Itoa(i)
	if plain && i%2 == 0 {
		v.without, v.plainErr = plainView(br, base+"/p/"+n, readAt)
	}
	v.with, v.err = viewReal(br, base+"/w/"+n, readAt)
	if plain && i%2 == 1 && v.err == nil && !v.with.Blocked {
		v.without, v.plainErr = plainView(br, base+"/p/"+n, readAt)
	}
	return v
}

func (s *realSuite) add(p realPage, v realView, lang string) {
	s.views++
	if len(v.Links) > 0 || v.Box > 0 {
		s.withAds++
	}
	if lang != "" && !slices.Contains(servedLangs, lang) {
		s.unserved++
		if len(v.Links) > 0 || v.Box > 0 {
			s.unservedWithAds++
			s.bad = append(s.bad, p.name+": ads in "+lang)
		}
	}
	if v.Words >= 100 && len(v.Links) > 0 {
		s.perKWords = append(s.perKWords, float64(len(v.Links))*1000/float64(v.Words))
	}
	for _, l := range v.Links {
		s.links++
		if l.Number {
			s.numbers++
			s.bad = append(s.bad, p.name+": number "+quoteCtx(l))
		}
		if l.Hidden {
			s.hidden++
			s.bad = append(s.bad, p.name+": hidden "+quoteCtx(l))
		}
		if l.Form {
			s.forms++
			s.bad = append(s.bad, p.name+": form "+quoteCtx(l))
		}
		if p.expected != "" {
			s.judged++
			if strings.Contains(p.expected, l.Context) {
				s.inMain++
			} else {
				s.outside = append(s.outside, p.name+": "+quoteCtx(l))
			}
		}
	}
}

func quoteCtx(l realLink) string { return "\"" + l.Text + "\" in \"" + l.Context + "\"" }

// langOf is the language of a page's <html lang>, lower case, or "".
func langOf(page string) string {
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, attrs := z.TagName()
			if string(name) != "html" {
				if string(name) == "body" {
					return ""
				}
				continue
			}
			for attrs {
				var k, v []byte
				k, v, attrs = z.TagAttr()
				if string(k) == "lang" {
					l, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(string(v))), "-")
					l, _, _ = strings.Cut(l, "_")
					return l
				}
			}
			return ""
		}
	}
}

// viewReal opens a page with the widget and reads realpage.js's account.
// viewTimeout bounds one real page's view: the largest take seconds on a
// loaded machine, with other views running beside them.
const viewTimeout = 90 * time.Second

func viewReal(br *browser, u string, readAt float64) (realView, error) {
	ctx, cancel := context.WithTimeout(br.ctx, viewTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		return realView{}, err
	}
	return chromedp.Run(ctx, chromedp.Evaluate[realView](jsCall(realPageScript, readAt), chromedp.EvalAwaitPromise))
}

// plainView opens a page without the widget and returns its long tasks,
// read as a view with the widget is.
func plainView(br *browser, u string, readAt float64) ([][2]float64, error) {
	ctx, cancel := context.WithTimeout(br.ctx, viewTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		return nil, err
	}
	return chromedp.Run(ctx, chromedp.Evaluate[[][2]float64](jsCall(plainBlocking, readAt), chromedp.EvalAwaitPromise))
}

// percentile is the p-th percentile of v (nearest rank), 0 for none.
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[max(0, int(math.Ceil(p/100*float64(len(s))))-1)]
}

// TestRealPages: over the Readability and trafilatura test pages, no
// in-text link is on a bare number or inside a number, date, time or
// price, none in a form or hidden text, and no page in a language no
// market serves has ads.
func TestRealPages(t *testing.T) {
	if testing.Short() {
		t.Skip("the real pages take minutes in a browser")
	}
	s := runRealPages(t, false)
	if s.views < s.pages*9/10 {
		t.Errorf("only %d of %d pages viewed", s.views, s.pages)
	}
	if s.numbers+s.hidden+s.forms+s.unservedWithAds > 0 {
		t.Errorf("%d links on numbers, %d hidden, %d in forms; %d of %d pages in unserved languages with ads:\n%s",
			s.numbers, s.hidden, s.forms, s.unservedWithAds, s.unserved, strings.Join(s.bad, "\n"))
	}
	t.Logf("outside the main text:\n%s", strings.Join(s.outside, "\n"))
	t.Logf("%d pages, %d with ads, %d links, %d of %d judged in the main text; widget blocked on %v",
		s.views, s.withAds, s.links, s.inMain, s.judged, s.blocked)
}

// BenchmarkRealPages is the real-pages suite's summary: each Readability
// and trafilatura test page viewed with the widget (a first view, matched
// in the page) and without it, for the page's own blocking time beside the
// widget's.
func BenchmarkRealPages(b *testing.B) {
	var s *realSuite
	for range b.N {
		s = runRealPages(b, true)
	}
	share := 0.0
	if s.judged > 0 {
		share = 100 * float64(s.inMain) / float64(s.judged)
	}
	p95, plain95 := percentile(s.blocking, 95), percentile(s.plain, 95)
	b.ReportMetric(float64(s.withAds), "pages-with-ads")
	b.ReportMetric(percentile(s.perKWords, 50), "links/1000-words-p50")
	b.ReportMetric(percentile(s.perKWords, 100), "links/1000-words-max")
	b.ReportMetric(float64(s.numbers), "links-on-numbers")
	b.ReportMetric(float64(s.hidden+s.forms), "links-in-forms-or-hidden")
	b.ReportMetric(share, "%-links-in-main-text")
	b.ReportMetric(float64(s.unservedWithAds), "unserved-pages-with-ads")
	b.ReportMetric(p95, "ms-blocking-p95")
	b.ReportMetric(plain95, "ms-blocking-p95-without-widget")
	b.ReportMetric(percentile(s.added, 95), "ms-blocking-added-p95")
	fmt.Printf("real pages (%d: Readability's test pages and %d of trafilatura's), first views in Chromium, matched in the page:\n", s.pages, trafilaturaPages)
	fmt.Printf("  %d viewed, %d with ads, %d in-text links; links per 1,000 words p50 %.1f, max %.1f (pages of 100 words or more with links)\n",
		s.views, s.withAds, s.links, percentile(s.perKWords, 50), percentile(s.perKWords, 100))
	fmt.Printf("  links on bare numbers or inside numbers, dates, times, prices: %d (target 0); in forms: %d, in hidden text: %d (target 0)\n",
		s.numbers, s.forms, s.hidden)
	fmt.Printf("  links inside the main text as Readability's expected.html has it: %d of %d, %.1f%% (target >= 95%%)\n", s.inMain, s.judged, share)
	fmt.Printf("  pages in languages no market serves: %d, with ads: %d (target 0); the widget never started (the page's CSP) on %d\n",
		s.unserved, s.unservedWithAds, len(s.blocked))
	fmt.Printf("  total blocking time from the widget's start, p95: %.1f ms with the widget, %.1f ms the page without it (target within 2 ms); each page's with less without: p50 %.1f, p95 %.1f ms\n",
		p95, plain95, percentile(s.added, 50), percentile(s.added, 95))
	fmt.Printf("  pages where the widget added blocking time, with the long tasks from its start (named by the widget's marks in them, ? for none):\n")
	for _, l := range s.addedBy {
		fmt.Printf("    %s\n", l)
	}
}
