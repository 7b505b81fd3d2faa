package siteshards

import (
	"cmp"
	"errors"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/match"
)

// feature is a criterion or a category that a site's pages (or a market's)
// were seen to match, with how much it counts.
type feature struct {
	key    string // kind and text (profile.go)
	text   string
	weight float64
}

// queryOf is the page query a feature stands for: a page that says the
// feature and nothing else, in the market the shard is for.
func queryOf(text, country, lang string) match.Query {
	return match.Query{Page: true, Text: text, Country: country, Lang: lang,
		Size: match.MaxSize, DistinctAdvertiser: match.MaxDistinctAdvertiser}
}

// scoreFeatures scores the ads of ix that a page saying one of feats would
// show, as the server ranks them: each feature adds its weight to its
// answer's ads, less the lower they rank. Ads no feature finds are not in
// the map.
func scoreFeatures(ix *match.Index, country, lang string, feats []feature) map[int32]float64 {
	score := make(map[int32]float64)
	for _, f := range feats {
		q := queryOf(f.text, country, lang)
		for r, h := range ix.Match(&q) {
			score[int32(h.Ad)] += f.weight / float64(1+r)
		}
	}
	return score
}

// byScore returns the ads of score, best first; ties by the higher bid,
// then the catalog's order.
func byScore(ix *match.Index, score map[int32]float64) []int32 {
	out := make([]int32, 0, len(score))
	for i := range score {
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b int32) int {
		if c := cmp.Compare(score[b], score[a]); c != 0 {
			return c
		}
		if c := cmp.Compare(ix.AdBid(int(b)), ix.AdBid(int(a))); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return out
}

// marketFilter returns the bits of ix's markets a request for country and
// lang reads ads from, as the matcher filters them; all ones for neither.
func marketFilter(ix *match.Index, country, lang string) uint64 {
	if country == "" && lang == "" {
		return ^uint64(0)
	}
	var bits uint64
	for k, m := range ix.Markets() {
		if (country == "" || m.Country == country) && (lang == "" || m.Lang == lang) {
			bits |= 1 << k
		}
	}
	return bits
}

// headOrder is a market's head: the ads the market's features find, each
// scored by them and weighted by its bid, best first; then every other ad
// the market may show, by bid and then the catalog's order. At most limit.
func headOrder(ix *match.Index, country, lang string, feats []feature, limit int) []int32 {
	score := scoreFeatures(ix, country, lang, feats)
	for i, s := range score {
		score[i] = s * float64(1+ix.AdBid(int(i)))
	}
	out := byScore(ix, score)
	if len(out) >= limit {
		return out[:limit]
	}
	bits := marketFilter(ix, country, lang)
	rest := make([]int32, 0, min(ix.Len(), 1<<20))
	for i := range ix.Len() {
		if _, ok := score[int32(i)]; !ok && ix.AdMarketBits(i)&bits != 0 {
			rest = append(rest, int32(i))
		}
	}
	slices.SortStableFunc(rest, func(a, b int32) int { return cmp.Compare(ix.AdBid(int(b)), ix.AdBid(int(a))) })
	out = append(out, rest[:min(len(rest), limit-len(out))]...)
	return out
}

// siteOrder is a site's ads: those its features find, best first, then the
// market's head. At most limit.
func siteOrder(ix *match.Index, country, lang string, feats []feature, head []int32, limit int) []int32 {
	out := byScore(ix, scoreFeatures(ix, country, lang, feats))
	if len(out) >= limit {
		return out[:limit]
	}
	seen := make(map[int32]bool, len(out))
	for _, i := range out {
		seen[i] = true
	}
	for _, i := range head {
		if len(out) == limit {
			break
		}
		if !seen[i] {
			out = append(out, i)
		}
	}
	return out
}

// built is a shard cut from some of an index's ads, encoded as the page
// loads it.
type built struct {
	index *match.Index // the server's index of those ads
	shard []byte
	frags [][]byte
	ads   int
	zstd  int // the shard's and its fragments' bytes with zstd
}

// probeEncoder measures a candidate's bytes as shards.NewBlob compresses
// them: the same zstd level.
var probeEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
})

// errBudget is returned when not even a few ads fit the budget.
var errBudget = errors.New("siteshards: the budget holds too few ads")

// pack cuts the longest prefix of order whose shard, fragments included,
// comes to at most budget bytes with zstd. Its index holds the ads in the
// catalog's order, as the market's does. A handful of trial encodings find
// it: bytes grow with the ads nearly in proportion.
func pack(ix *match.Index, order []int32, budget, fragmentBytes int) (*built, error) {
	taken := make(map[int32]match.Ad, len(order))
	adsOf := func(n int) []match.Ad {
		sel := slices.Clone(order[:n])
		slices.Sort(sel)
		out := make([]match.Ad, n)
		for k, i := range sel {
			a, ok := taken[i]
			if !ok {
				a = ix.Ad(int(i))
				taken[i] = a
			}
			out[k] = a
		}
		return out
	}
	try := func(n int) (*built, error) {
		sub, err := match.Build(adsOf(n))
		if err != nil {
			return nil, err
		}
		shard, frags := encode(sub, fragmentBytes)
		enc, err := probeEncoder()
		if err != nil {
			return nil, err
		}
		size := len(enc.EncodeAll(shard, nil))
		for _, f := range frags {
			size += len(enc.EncodeAll(f, nil))
		}
		return &built{index: sub, shard: shard, frags: frags, ads: n, zstd: size}, nil
	}
	var best *built
	lo, hi := 0, len(order)+1 // lo ads fit, hi do not
	n := min(len(order), 512)
	for range 10 {
		b, err := try(n)
		if err != nil {
			return nil, err
		}
		if b.zstd <= budget {
			lo, best = n, b
		} else {
			hi = n
		}
		// Within 2% of the most that fit is close enough.
		if hi-lo <= max(1, lo/50) {
			break
		}
		next := int(float64(n) * float64(budget) / float64(b.zstd) * 0.99)
		if next <= lo || next >= hi {
			next = lo + (hi-lo)/2
		}
		n = next
	}
	if best == nil || best.ads < min(len(order), minAds) {
		return nil, errBudget
	}
	return best, nil
}

// minAds is the fewest ads a site shard is worth making for.
const minAds = 8

// encode writes a site shard as the page loads it: whole, or with
// fragmentBytes > 0, its strings in fragments of about that many bytes.
func encode(ix *match.Index, fragmentBytes int) ([]byte, [][]byte) {
	if fragmentBytes <= 0 {
		return ix.EncodePage(0)
	}
	n := ix.PageStrings()
	if n <= fragmentBytes {
		return ix.EncodePage(0)
	}
	return ix.EncodePage(max(1, fragmentBytes*ix.Len()/n))
}

// blobs compresses a built shard for serving.
func blobs(b *built) (*shards.Blob, []*shards.Blob, error) {
	shard, err := shards.NewBlob(b.shard, shardType)
	if err != nil {
		return nil, nil, err
	}
	var frags []*shards.Blob
	for _, f := range b.frags {
		fb, err := shards.NewBlob(f, shardType)
		if err != nil {
			return nil, nil, err
		}
		frags = append(frags, fb)
	}
	return shard, frags, nil
}
