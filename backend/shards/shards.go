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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/internal/cores"
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
	// byIndex is each index's shard, for Options.Previous: an index the
	// next catalog keeps as it was (market.Build) is not encoded again.
	// Weak, so that a Set retired with its catalog keeps no index alive.
	byIndex map[weak.Pointer[match.Index]]*Blob
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
	// than compressed again, and an index it was built from is not even
	// encoded, so a refresh that changed one market compresses that
	// market's shard and the whole catalog's alone.
	Previous *Set
	// Fast compresses the shards and fragments not taken from Previous at
	// fast levels (NewFastBlob), so that a refreshed catalog serves soon;
	// Set.Recompress brings them to the best levels afterwards.
	Fast bool
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
	all := src.All()
	if all == nil {
		return nil, errors.New("shards: no index")
	}
	s := &Set{redirectURL: o.RedirectURL, allIndex: all, markets: map[match.Market]*Blob{}, bySHA: map[string]*Blob{}, frags: map[*Blob][]*Blob{}, fragsBySHA: map[string]*Blob{}, byIndex: map[weak.Pointer[match.Index]]*Blob{}}
	type job struct {
		market match.Market // none for the whole catalog's
		ix     *match.Index
		blob   *Blob
		frags  []*Blob
	}
	jobs := []*job{{ix: all}}
	for _, m := range all.ShardMarkets() {
		if ix := src.For(m.Country, m.Lang); ix != nil {
			jobs = append(jobs, &job{market: m, ix: ix})
		}
	}
	// Each shard and fragment is a piece of its own, so one large market's
	// hundreds of fragments spread over every core.
	type piece struct {
		data       []byte
		ctype      string
		fast       bool
		fragment   bool // its gzip made when first asked for, when fast
		blob       *Blob
		reused     bool
		err        error
		zstd       []byte // another encoder's zstd of data, offered to blob
		zstdChoice ZstdChoice
		module     bool // matcher.wasm
		kept       bool // its blob and zstdChoice kept from an earlier Build
		sum        [sha256.Size]byte
		zstdLike   int // the room its zstd likely needs (zstdRoom)
	}
	var pieces []*piece
	var firstPiece []int // per job, its shard's piece; its fragments follow
	encoded := make([][][]byte, len(jobs))
	cores.Each(len(jobs), func(i int) {
		j := jobs[i]
		if b := o.Previous.shardOf(j.ix); b != nil {
			// The very index the catalog before had: its shard as it was.
			j.blob, j.frags = b, o.Previous.frags[b]
			return
		}
		shard, frags := pageShard(j.ix, cmp.Or(o.SplitAbove, splitAbove))
		encoded[i] = append([][]byte{shard}, frags...)
	})
	for i := range jobs {
		firstPiece = append(firstPiece, len(pieces))
		for k, data := range encoded[i] {
			p := &piece{data: data, ctype: "application/octet-stream", fast: o.Fast, fragment: k > 0}
			if k == 0 && o.Previous != nil {
				before := o.Previous.all
				if i > 0 {
					before = o.Previous.markets[jobs[i].market]
				}
				p.zstdLike = zstdRoom(before, o.Fast)
			}
			pieces = append(pieces, p)
		}
	}
	if o.Matcher != nil {
		pieces = append(pieces, &piece{data: o.Matcher, ctype: "application/wasm", zstd: o.MatcherZstd, module: true})
	}
	// Each piece named, or found in Previous; then each encoding of each
	// new one compressed as a task of its own, the largest first, so that
	// a large shard's zstd and gzip take a core each rather than one in
	// turn while the other waits. A fast fragment waits to be asked for.
	type task struct {
		p   *piece
		enc Encoding
	}
	var tasks []task
	var mu sync.Mutex
	cores.Each(len(pieces), func(i int) {
		p := pieces[i]
		sum := sha256.Sum256(p.data)
		p.sum = sum
		if p.blob, p.reused = o.Previous.blob(hex.EncodeToString(sum[:])); p.reused {
			return
		}
		if p.module {
			if p.blob, p.zstdChoice, p.kept = keptModule(sum, p.zstd); p.kept {
				return
			}
		}
		p.blob = uncompressedBlob(p.data, sum, p.ctype, p.fast)
		if !p.fast || !p.fragment {
			mu.Lock()
			tasks = append(tasks, task{p, Zstd}, task{p, Gzip})
			mu.Unlock()
		}
	})
	slices.SortFunc(tasks, func(a, b task) int { return cmp.Compare(len(b.p.data), len(a.p.data)) })
	cores.Each(len(tasks), func(i int) {
		t := tasks[i]
		c, err := compressedLike(t.p.data, t.enc, t.p.fast, t.p.zstdLike)
		if err != nil {
			mu.Lock()
			t.p.err = cmp.Or(t.p.err, err)
			mu.Unlock()
			return
		}
		t.p.blob.fill(t.enc, c)
	})
	for _, p := range pieces {
		if p.err != nil {
			return nil, p.err
		}
		if p.kept {
			continue
		}
		if p.zstd != nil {
			if p.reused && o.Previous.matcher == p.blob {
				p.zstdChoice = o.Previous.matcherZstd
				continue
			}
			p.zstdChoice = ZstdChoice{Given: len(p.zstd), Own: p.blob.Size(Zstd)}
			p.zstdChoice.Served, p.zstdChoice.Err = p.blob.UseZstd(p.zstd)
		}
		if p.module && !p.reused {
			keepModule(p.sum, p.zstd, p.blob, p.zstdChoice)
		}
	}
	for i, j := range jobs {
		if encoded[i] == nil {
			continue
		}
		j.blob = pieces[firstPiece[i]].blob
		for _, p := range pieces[firstPiece[i]+1 : firstPiece[i]+len(encoded[i])] {
			j.frags = append(j.frags, p.blob)
		}
	}
	if o.Matcher != nil {
		p := pieces[len(pieces)-1]
		s.matcher, s.matcherZstd = p.blob, p.zstdChoice
	}
	s.all = jobs[0].blob
	for i, j := range jobs {
		if i > 0 {
			s.markets[j.market] = j.blob
		}
		s.bySHA[j.blob.SHA256] = j.blob
		s.byIndex[weak.Make(j.ix)] = j.blob
		if j.frags != nil {
			s.frags[j.blob] = j.frags
			for _, f := range j.frags {
				s.fragsBySHA[f.SHA256] = f
			}
		}
	}
	return s, nil
}

// zstdRoom is the room the zstd of a shard like before (the same
// market's in the catalog before; nil for none) likely needs at the fast
// levels or the best: a refresh changes a shard's size by little, and
// the fast levels' bytes are at most about a quarter more than the best
// ones' (BenchmarkRefresh's fast_vs_best_zstd_x). 0 when before has no
// zstd.
func zstdRoom(before *Blob, fast bool) int {
	if before == nil {
		return 0
	}
	e := before.cur.Load()
	n := len(e.enc[Zstd])
	if n == 0 {
		return 0
	}
	if fast && !e.fast {
		n += n / 3
	}
	return n + n/8 + 64<<10
}

// Recompress brings every shard and fragment of s still at fast levels
// (Options.Fast) to the best ones, shards before fragments, on workers
// goroutines; it stops early when ctx ends, leaving the rest fast. It
// returns how many it recompressed. Blobs s shares with the Set before
// or after it are done once, whichever Set's Recompress gets to them.
func (s *Set) Recompress(ctx context.Context, workers int) (int, error) {
	var blobs []*Blob
	for _, b := range s.bySHA {
		if b.Fast() {
			blobs = append(blobs, b)
		}
	}
	for _, f := range s.fragsBySHA {
		if f.Fast() {
			blobs = append(blobs, f)
		}
	}
	var done atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, min(workers, len(blobs))) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(blobs) && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				did, err := blobs[i].Recompress()
				if err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return
				}
				if did {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return int(done.Load()), cmp.Or(firstErr, ctx.Err())
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

// Manifest is the JSON manifest of the shard Pick chooses, with the sizes
// its encodings have now.
func (s *Set) Manifest(country, lang string) []byte {
	if m, ok := s.allIndex.ShardMarket(country, lang); ok && s.markets[m] != nil {
		return s.manifest(m.String(), s.markets[m], len(s.frags[s.markets[m]]))
	}
	return s.manifest("all", s.all, len(s.frags[s.all]))
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

// blob returns the blob of s, shard, fragment or module, whose
// uncompressed bytes have the SHA-256 sha, if s has one.
func (s *Set) blob(sha string) (*Blob, bool) {
	if s == nil {
		return nil, false
	}
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

// shardOf returns the shard of s encoded from ix, if s has one.
func (s *Set) shardOf(ix *match.Index) *Blob {
	if s == nil {
		return nil
	}
	return s.byIndex[weak.Make(ix)]
}
