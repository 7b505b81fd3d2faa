package testcatalog

import (
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

// Request is one generated search or page request, held apart from any
// parser so that a test can give it to the module's parser as a query
// string and build the server's reading of it by other means.
type Request struct {
	Page                 bool
	Q, Title             string
	Loc, Lang            string
	Op, Dist             string
	AdTypes              []string
	Size, Distinct       int
	Fields               []string
	LogoDim, YkTag       string
	ExplicitOp, LocUpper bool
}

// Values is the request's query string as the endpoint reads it.
func (r *Request) Values() url.Values {
	v := url.Values{"api_key": {"demo"}, "site_id": {"demo"}}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	if r.Page {
		set("text", r.Q)
		set("title", r.Title)
	} else {
		v.Set("q", r.Q)
	}
	loc := r.Loc
	if r.LocUpper {
		loc = strings.ToUpper(loc)
	}
	set("loc", loc)
	set("lang", r.Lang)
	if r.ExplicitOp || r.Op == "and" {
		set("q_operator", r.Op)
	}
	set("ctx.dist", r.Dist)
	set("ad_type", strings.Join(r.AdTypes, ","))
	if r.Size > 0 {
		v.Set("size", strconv.Itoa(r.Size))
	}
	if r.Distinct > 0 {
		v.Set("distinct_advertiser", strconv.Itoa(r.Distinct))
	}
	set("fields", strings.Join(r.Fields, ","))
	set("logo.dim", r.LogoDim)
	set("yk_tag", r.YkTag)
	return v
}

// Guest is the module's request: the endpoint's query string plus
// redirect_url, the base of its click URLs.
func (r *Request) Guest(redirectURL string) string {
	v := r.Values()
	v.Set("redirect_url", redirectURL)
	return v.Encode()
}

// Requests makes n requests over the catalog's own words, so most of them
// match something, with every option drawn at random: searches, or pages
// when page is set. The same arguments give the same requests.
func Requests(ads []match.Ad, n int, seed uint64, page bool) []Request {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var words []string
	for _, a := range ads {
		words = append(words, strings.Fields(a.Title)...)
		words = append(words, a.Keywords...)
		words = append(words, a.Manufacturer, a.Model, a.Category)
	}
	words = slices.DeleteFunc(words, func(s string) bool { return s == "" })
	words = append(words, "günstig", "kaufen", "the", "test", "Ärger", "ÜBER", "cheap")
	var markets []match.Market
	for _, a := range ads {
		markets = append(markets, a.Markets...)
	}
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	phrase := func(n int) string {
		var b []string
		for range n {
			b = append(b, pick(words))
		}
		return strings.Join(b, " ")
	}
	fieldNames := contract.SearchFieldNames
	if page {
		fieldNames = contract.PageFieldNames
	}
	out := make([]Request, n)
	for i := range out {
		r := &out[i]
		r.Page = page
		if page {
			r.Title = phrase(rng.IntN(4))
			r.Q = phrase(20 + rng.IntN(200))
		} else {
			r.Q = phrase(1 + rng.IntN(4))
		}
		if len(markets) > 0 && rng.IntN(4) > 0 {
			m := markets[rng.IntN(len(markets))]
			r.Loc, r.Lang = m.Country, m.Lang
			if rng.IntN(5) == 0 {
				r.Lang = ""
			}
			r.LocUpper = rng.IntN(6) == 0
		}
		if !page {
			r.Dist = []string{"", "high", "low", "none"}[rng.IntN(4)]
			if rng.IntN(4) == 0 {
				r.Op, r.ExplicitOp = []string{"or", "and"}[rng.IntN(2)], true
				if r.Op == "and" && r.Dist != "none" {
					r.Dist = ""
				}
			}
			if rng.IntN(2) == 0 {
				r.Size = 1 + rng.IntN(match.MaxSize)
			}
			if rng.IntN(3) == 0 {
				r.Distinct = 1 + rng.IntN(match.MaxDistinctAdvertiser)
			}
			if rng.IntN(5) == 0 {
				r.YkTag = "tag_" + strconv.Itoa(rng.IntN(1000)) + ":x-1"
			}
		}
		kinds := contract.SearchKindNames
		if page {
			kinds = contract.PageKindNames
		}
		for _, k := range kinds {
			if rng.IntN(4) == 0 {
				r.AdTypes = append(r.AdTypes, k)
			}
		}
		for _, f := range fieldNames {
			if rng.IntN(3) == 0 {
				r.Fields = append(r.Fields, f)
			}
		}
		if rng.IntN(4) == 0 {
			r.LogoDim = pick(match.LogoDims)
		}
	}
	return out
}
