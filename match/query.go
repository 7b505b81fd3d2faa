package match

// Operator says how the terms of a full-text (DistNone) query combine.
type Operator uint8

// The q_operator values. OpOr is the default.
const (
	OpOr Operator = iota
	OpAnd
)

// Dist is the strictness of matching, the seed's ctx.dist.
type Dist uint8

// The ctx.dist values. DistHigh is the default.
const (
	// DistHigh matches an ad only when one of its criteria (bid phrase,
	// keyword, brand, model, category word) stands whole in the input.
	DistHigh Dist = iota
	// DistLow also accepts partial overlap with a criterion.
	DistLow
	// DistNone is a full-text search over all of the ad's text.
	DistNone
)

// Defaults and bounds of the query options.
const (
	DefaultSize               = 10
	MaxSize                   = 50
	DefaultDistinctAdvertiser = 3
	MaxDistinctAdvertiser     = 10
	// MaxQueryBytes bounds the text a query reads; longer input is cut at a
	// word boundary so a hostile 10 KB query costs no more than this.
	MaxQueryBytes = 1 << 10
	// MaxPageBytes bounds the page text a page query reads.
	MaxPageBytes = 256 << 10
)

// Query is one request to the matcher: a search query or a page's text, with
// the filters and limits of the request. The zero value of every option is
// its default.
type Query struct {
	// Text is the search query, or the page's main text.
	Text string
	// Title is the page's title and headings; criteria found there weigh
	// more than in Text. Empty for search queries.
	Title string
	// Page marks a page-context query: Text may be long (MaxPageBytes) and
	// only criteria are matched (Dist and Operator are ignored).
	Page     bool
	Operator Operator
	Dist     Dist
	// fullText is how the server ranks a full-text query: pruned where
	// that pays (the zero value), or always one way, for the tests and
	// benchmarks that compare the two (prune.go).
	fullText fullTextMode
	// Country and Lang filter by market, lower-case ISO codes; empty means any.
	Country string
	Lang    string
	Kinds   Kinds
	// Size is how many hits to return; 0 means DefaultSize.
	Size int
	// DistinctAdvertiser caps how many advertisers may deliver the same
	// offer (same GTIN, else the same normalised title); 0 means the default.
	DistinctAdvertiser int
	// Exclude lists advertiser groups of the index (Index.AdvertiserGroups)
	// whose ads are left out before ranking, so that the answer still
	// fills Size: the advertisers whose daily budget is spent.
	Exclude []uint32
}

// Hit is one matched ad.
type Hit struct {
	// Ad is the ad's ordinal in the index.
	Ad int
	// Keywords are the phrases of the input that matched, as they are
	// written in the input, in the order they first occur.
	Keywords []string
	// Criterion is the matched criterion: the keywords joined by a space.
	Criterion string
	Score     float64
}

// fullTextMode chooses among the server's rankings of a full-text query,
// which give the same answer.
type fullTextMode uint8
