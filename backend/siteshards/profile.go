package siteshards

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/adlink/adlink/match"
)

// A feature's text is its kind's letter, a NUL, then the criterion or the
// category, lower-case.
const (
	kindCriterion = "c\x00"
	kindCategory  = "k\x00"
	// categoryWeight is what a category counts for beside a criterion: a
	// page names the criterion itself, and only leans to the category.
	categoryWeight = 0.5
)

// maxPageFeatures bounds what one page adds to its site's profile.
const maxPageFeatures = 48

// pageFeatures are the criteria of the ads the server finds for a page
// (all it may show, not only this request's), and those ads' categories.
func pageFeatures(ix *match.Index, q match.Query) []string {
	q.Size, q.DistinctAdvertiser, q.Kinds, q.Exclude = match.MaxSize, match.MaxDistinctAdvertiser, 0, nil
	var out []string
	add := func(kind, s string) {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" || len(s) > 200 || len(out) >= maxPageFeatures {
			return
		}
		if f := kind + s; !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	hits := ix.Match(&q)
	for _, h := range hits {
		add(kindCriterion, h.Criterion)
	}
	for _, h := range hits {
		add(kindCategory, ix.AdCategory(h.Ad))
	}
	return out
}

// profile is what a site's latest analysed pages say of it: each
// feature's number of pages.
type profile struct {
	pages map[string][]string // page URL -> its features
	order []string            // the pages, oldest first
	df    map[string]int
}

func newProfile() *profile {
	return &profile{pages: map[string][]string{}, df: map[string]int{}}
}

// add counts a page's features, dropping the oldest page beyond window.
// It reports whether the page was new.
func (p *profile) add(url string, feats []string, window int) bool {
	if _, ok := p.pages[url]; ok {
		return false
	}
	p.pages[url] = feats
	p.order = append(p.order, url)
	for _, f := range feats {
		p.df[f]++
	}
	for len(p.order) > window {
		old := p.order[0]
		p.order = p.order[1:]
		for _, f := range p.pages[old] {
			if p.df[f]--; p.df[f] <= 0 {
				delete(p.df, f)
			}
		}
		delete(p.pages, old)
	}
	return true
}

// top is the profile's top set: its k features of the most pages (ties by
// name), each weighted by the binary order of its count, and the set's
// signature, which only changes when a member or a weight does.
func top(df map[string]int, k int) (feats []feature, sig string) {
	names := make([]string, 0, len(df))
	for f := range df {
		names = append(names, f)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(df[b], df[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	names = names[:min(k, len(names))]
	var sb strings.Builder
	sorted := slices.Sorted(slices.Values(names))
	for _, f := range sorted {
		w := 1 + math.Floor(math.Log2(float64(df[f])))
		sb.WriteString(f)
		sb.WriteByte(0)
		sb.WriteString(strconv.Itoa(int(w)))
		sb.WriteByte('\n')
		text := f[len(kindCriterion):]
		if strings.HasPrefix(f, kindCategory) {
			w *= categoryWeight
		}
		feats = append(feats, feature{key: f, text: text, weight: w})
	}
	return feats, sb.String()
}
