// Package shards serves the index to the page: one shard per market
// (country + language), encoded by match/ and precompressed once with zstd
// and gzip, named by its SHA-256 and served immutable, with a small
// manifest that tells the page which shard answers its market; and
// matcher.wasm, the module that queries a shard, served the same way.
//
// A market's shard is encoded from the very index the server answers that
// market's searches from, so the page and the server give the same bytes.
package shards

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"sync"

	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/match"
)

// Paths the manifest points to.
const (
	ShardPath   = "/v2/shards/"
	MatcherPath = "/matcher.wasm"
	// Immutable is the Cache-Control of content-addressed responses.
	Immutable = "public, max-age=31536000, immutable"
)

// A market whose ads' strings come to more than splitAbove bytes goes to
// the page in fragments of about fragmentBytes of strings each
// (match.Index.EncodePage): the page fetches the index and then the
// fragments of the ads it shows, a second round trip, rather than every
// title, logo and description. The demo's markets go whole; a catalog of
// Icecat's size goes in fragments, of which a page showing ten ads fetches
// ten at most (BenchmarkShardBytes, docs/PERFORMANCE.md).
const (
	splitAbove    = 256 << 10
	fragmentBytes = 8 << 10
)

// PageShard encodes ix as the page loads it: whole, or when its strings
// come to more than splitAbove bytes, without them and the strings cut in
// fragments.
func PageShard(ix *match.Index) (shard []byte, frags [][]byte) { return pageShard(ix, splitAbove) }

func pageShard(ix *match.Index, above int) (shard []byte, frags [][]byte) {
	n := ix.PageStrings()
	if n <= above {
		return ix.EncodePage(0)
	}
	return ix.EncodePage(max(1, fragmentBytes*ix.Len()/n))
}

// Set is every market's shard and matcher.wasm, ready to serve.
type Set struct {
	redirectURL string
	allIndex    *match.Index // the whole catalog's, which knows its markets
	all         *Blob
	markets     map[match.Market]*Blob
	bySHA       map[string]*Blob
	frags       map[*Blob][]*Blob // a shard's fragments, in order
	fragsBySHA  map[string]*Blob  // every fragment, for Options.Previous
	matcher     *Blob
	matcherZstd ZstdChoice
	manifests   map[*Blob][]byte
}

// Options are what Build serves besides the shards.
type Options struct {
	// Matcher is matcher.wasm; nil when it has not been built: the shards
	// are served and /matcher.wasm is not.
	Matcher []byte
	// MatcherZstd is Matcher compressed by another zstd encoder (the zstd
	// CLI's matcher.wasm.zst), or nil. It is served in place of our own
	// zstd when it decodes to Matcher and is smaller (Blob.UseZstd);
	// Set.MatcherZstd tells whether it was, or why not.
	MatcherZstd []byte
	// RedirectURL is the base of click URLs, the server's config value; the
	// manifest passes it to the page so that its answers are the server's.
	RedirectURL string
	// SplitAbove is the bytes of strings above which a market's shard goes
	// to pages in fragments (PageShard); zero is the default, 256 KB.
	SplitAbove int
	// Previous, when set, is the Set of the catalog before: a shard,
	// fragment or module whose bytes are the same is taken from it rather
	// than compressed again, so a refresh that changed one market
	// compresses that market's shard and the whole catalog's alone.
	Previous *Set
}

// ZstdChoice is which zstd encoding of matcher.wasm a Set serves.
type ZstdChoice struct {
	// Given and Own are the sizes of Options.MatcherZstd (0 when none was
	// given) and of our own encoding, klauspost/compress's.
	Given, Own int
	// Served is whether Options.MatcherZstd is served.
	Served bool
	// Err says why Options.MatcherZstd is not served when it is not
	// matcher.wasm: stale or corrupt.
	Err error
}

// Build encodes and compresses every market's shard and the whole
// catalog's, and matcher.wasm, on every core.
func Build(src market.Indexes, o Options) (*Set, error) {
	matcher := o.Matcher
	all := src.All()
	if all == nil {
		return nil, errors.New("shards: no index")
	}
	s := &Set{redirectURL: o.RedirectURL, allIndex: all, markets: map[match.Market]*Blob{}, bySHA: map[string]*Blob{}, frags: map[*Blob][]*Blob{}, fragsBySHA: map[string]*Blob{}, manifests: map[*Blob][]byte{}}
	type job struct {
		market match.Market
		ix     *match.Index
		data   []byte
		ctype  string
		blob   *Blob
		frags  []*Blob
		err    error
		// zstd is another encoder's zstd of data, offered to blob.
		zstd   []byte
		choice ZstdChoice
	}
	jobs := []*job{{ix: all, ctype: "application/octet-stream"}}
	for _, m := range all.ShardMarkets() {
		if ix := src.For(m.Country, m.Lang); ix != nil {
			jobs = append(jobs, &job{market: m, ix: ix, ctype: "application/octet-stream"})
		}
	}
	if matcher != nil {
		jobs = append(jobs, &job{data: matcher, ctype: "application/wasm", zstd: o.MatcherZstd})
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var frags [][]byte
			if j.ix != nil {
				j.data, frags = pageShard(j.ix, cmp.Or(o.SplitAbove, splitAbove))
			}
			reused := false
			if j.blob, reused = o.Previous.blob(j.data); !reused {
				if j.blob, j.err = NewBlob(j.data, j.ctype); j.err != nil {
					return
				}
			}
			for _, f := range frags {
				b, ok := o.Previous.blob(f)
				if !ok {
					if b, j.err = NewBlob(f, j.ctype); j.err != nil {
						return
					}
				}
				j.frags = append(j.frags, b)
			}
			if j.zstd == nil {
				return
			}
			if reused && o.Previous.matcher == j.blob {
				j.choice = o.Previous.matcherZstd
				return
			}
			j.choice = ZstdChoice{Given: len(j.zstd), Own: j.blob.Size(Zstd)}
			j.choice.Served, j.choice.Err = j.blob.UseZstd(j.zstd)
		})
	}
	wg.Wait()
	for _, j := range jobs {
		if j.err != nil {
			return nil, j.err
		}
	}
	s.all = jobs[0].blob
	if matcher != nil {
		s.matcher, s.matcherZstd = jobs[len(jobs)-1].blob, jobs[len(jobs)-1].choice
	}
	for _, j := range jobs {
		switch {
		case j.ix == nil:
			continue
		case j.ix != all:
			s.markets[j.market] = j.blob
		}
		s.bySHA[j.blob.SHA256] = j.blob
		if j.frags != nil {
			s.frags[j.blob] = j.frags
			for _, f := range j.frags {
				s.fragsBySHA[f.SHA256] = f
			}
		}
		name := "all"
		if j.ix != all {
			name = j.market.String()
		}
		s.manifests[j.blob] = s.manifest(name, j.blob, len(j.frags))
	}
	return s, nil
}

// Pick returns the shard that answers a market exactly as the server does:
// the market's own when country and lang name one, or country alone names
// a country with one language (match.Index.ShardMarket); else the whole
// catalog's, filtered by whatever of the two is given.
func (s *Set) Pick(country, lang string) *Blob {
	if m, ok := s.allIndex.ShardMarket(country, lang); ok {
		if b := s.markets[m]; b != nil {
			return b
		}
	}
	return s.all
}

// Manifest is the JSON manifest of the shard Pick chooses.
func (s *Set) Manifest(country, lang string) []byte {
	return s.manifests[s.Pick(country, lang)]
}

// ManifestWith is the manifest of Pick(country, lang) naming another
// shard in its place: b, cut in n fragments (0: whole), such as a site's
// shard (backend/siteshards), which the Set does not hold itself.
func (s *Set) ManifestWith(country, lang string, b *Blob, n int) []byte {
	name := "all"
	if m, ok := s.allIndex.ShardMarket(country, lang); ok && s.markets[m] != nil {
		name = m.String()
	}
	return s.manifest(name, b, n)
}

// Shard returns the shard named by its SHA-256, or nil.
func (s *Set) Shard(sha string) *Blob { return s.bySHA[sha] }

// Fragments returns the fragments of a shard, in order: none when the
// shard holds its ads' strings itself.
func (s *Set) Fragments(shard *Blob) []*Blob { return s.frags[shard] }

// Markets lists the markets that have their own shard, with it.
func (s *Set) Markets() map[match.Market]*Blob { return s.markets }

// Matcher returns matcher.wasm, or nil when it was not given.
func (s *Set) Matcher() *Blob { return s.matcher }

// MatcherZstd tells which zstd encoding of matcher.wasm is served: the
// zero ZstdChoice when Options.MatcherZstd was not given.
func (s *Set) MatcherZstd() ZstdChoice { return s.matcherZstd }

// MatcherURL is the path of matcher.wasm that may be cached forever: it
// changes with the module.
func (s *Set) MatcherURL() string {
	if s.matcher == nil {
		return ""
	}
	return MatcherPath + "?v=" + s.matcher.SHA256[:16]
}

// manifest writes a shard's manifest:
//
//	{"market":"de-DE","format_version":2,"redirect_url":"https://r.example.com",
//	 "shard":{"url":"/v2/shards/<sha256>","sha256":"...","bytes":{"zstd":N,"gzip":N,"identity":N}},
//	 "matcher":{"url":"/matcher.wasm?v=...","sha256":"...","bytes":{...}}}
//
// A shard cut in fragments has "fragments":N in "shard": fragment k is at
// its URL + "/k". URLs are paths on the server that answered. "market" is
// "all" for the whole catalog's shard.
func (s *Set) manifest(market string, b *Blob, fragments int) []byte {
	out := []byte(`{"market":"` + market + `","format_version":` + strconv.Itoa(match.ShardVersion) + `,"redirect_url":`)
	q, _ := json.Marshal(s.redirectURL) // a string always marshals
	out = append(out, q...)
	out = append(out, `,"shard":`...)
	out = appendFile(out, ShardPath+b.SHA256, b)
	if fragments > 0 {
		out = append(out[:len(out)-1], `,"fragments":`...)
		out = append(strconv.AppendInt(out, int64(fragments), 10), '}')
	}
	if s.matcher != nil {
		out = append(out, `,"matcher":`...)
		out = appendFile(out, s.MatcherURL(), s.matcher)
	}
	return append(out, '}')
}

func appendFile(out []byte, url string, b *Blob) []byte {
	out = append(out, `{"url":"`+url+`","sha256":"`+b.SHA256+`","bytes":{`...)
	for e := range numEncodings {
		if e > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, e.String()...)
		out = append(out, `":`...)
		out = strconv.AppendInt(out, int64(b.Size(e)), 10)
	}
	return append(out, "}}"...)
}

// blob returns the blob of s whose bytes are data, shard, fragment or
// module, if s has one.
func (s *Set) blob(data []byte) (*Blob, bool) {
	if s == nil {
		return nil, false
	}
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	if b := s.bySHA[sha]; b != nil {
		return b, true
	}
	if s.matcher != nil && s.matcher.SHA256 == sha {
		return s.matcher, true
	}
	if f := s.fragsBySHA[sha]; f != nil {
		return f, true
	}
	return nil, false
}
