package match

import (
	"cmp"
	"errors"
	"math/bits"
	"slices"
	"strconv"
	"unsafe"
)

// Index is the flat inverted index over a catalog. Every part of it is a
// slice of fixed-size integers or a string arena, so the same memory is the
// shard format: Encode writes it out and Open queries the bytes in place,
// rebuilding no maps. An Index is immutable and safe for concurrent use,
// but for LoadFragment on an index opened from a page shard in fragments.
type Index struct {
	strs    string   // string arena
	ads     []adRec  // one record per ad, by ordinal
	recs    []adStrs // where each ad's strings are; none in a page shard in fragments
	byID    []uint32 // ad ordinals sorted by id
	markets []Market // market table; adRec.markets is a bit set over it
	avgLen  float64  // mean weighted document length, for BM25

	// Term dictionary: term t is termStr[termOff[t]:termOff[t+1]], sorted.
	termOff []uint32
	termStr string

	// Full-text postings of term t: postAd/postTF[postOff[t]:postOff[t+1]],
	// ads ascending, tf weighted by field (low 7 bits; the high bit marks
	// the ad's product type, fulltext.go).
	postOff []uint32
	postAd  []uint32
	postTF  []uint8

	// Criteria: phrases an ad is matched by (bid phrases, keywords, model,
	// brand, category), as term sequences sorted lexicographically.
	// Criteria starting with term t: [critStart[t], critStart[t+1]).
	critStart []uint32
	critOff   []uint32 // terms of criterion c: critTerms[critOff[c]:critOff[c+1]]
	critTerms []uint32
	critAdOff []uint32 // ads of criterion c, best first: critAd[critAdOff[c]:critAdOff[c+1]]
	critAd    []uint32 // ad<<2 | source
	// Criteria containing term t anywhere: termCrit[termCritOff[t]:termCritOff[t+1]].
	termCritOff []uint32
	termCrit    []uint32

	// A page shard cut into fragments (EncodePage) has no strs and no
	// recs: its ads' adStrs and strings come in fragments of per ads each,
	// loaded as a page needs them (LoadFragment). frags holds each
	// fragment's end in the arena and its CRC-32C; fragRecs and fragStrs
	// the loaded ones' parts, nil and "" for the others.
	per      uint32
	frags    []uint32
	fragRecs [][]adStrs
	fragStrs []string

	// Upper bounds of full-text scores per block of postings, by which the
	// server skips ads that cannot rank (bounds.go); nothing in the module.
	ft fullTextBounds

	// Scratch memory of full-text queries, one per query running at once.
	// Not a sync.Pool: that is emptied at every GC, and scratch for a large
	// index is megabytes.
	scratchMu mutex
	scratches []*scratch
}

// bidBits is how many leading bits of a bid the index keeps. Pages rank
// ads too, so page shards carry each ad's bid, public to anyone with a
// site's key. Rounded to three significant bits, a bid shows only its band
// (steps of 14 to 25%), not the amount a competitor could outbid by a
// cent; ranking, in the server and in pages alike, reads the rounded bid.
const bidBits = 3

// roundBid is the bid the index keeps for one of micros: the nearest
// number with bidBits significant bits, at most maxBid (which has them, so
// a bid clamped to it never rounds above it).
func roundBid(micros int64) uint32 {
	b := uint64(min(max(micros, 0), maxBid))
	n := bits.Len64(b)
	if n <= bidBits {
		return uint32(b)
	}
	s := uint(n - bidBits)
	return uint32((b + 1<<(s-1)) >> s << s)
}

// maxBid is the largest bid an index keeps (about 3,758 in the currency
// unit): the largest uint32 with bidBits significant bits.
const maxBid = (1<<bidBits - 1) << (32 - bidBits)

// An ad's strings, in the order they lie one after another in the arena.
const (
	fID = iota
	fTitle
	fAdvertiser
	fCurrency
	fLogo
	fManufacturer
	fCategory
	fDescription
	fGTIN
	fModel
	fLanding
	fKeywords
	numStrFields
)

// adRec is an ad as matching and ranking read it. It and adStrs hold only
// uint32 fields, so their memory layout is the same in the shard file, on
// every little-endian platform.
type adRec struct {
	bid      uint32 // micros, rounded (roundBid)
	kindv    uint32
	marketLo uint32
	marketHi uint32
	docLen   uint32 // weighted term count
	offer    uint32 // offer group: same GTIN, else same normalised title
	adv      uint32 // advertiser group: the ads of one advertiser share it
}

// adStrs is what only an ad's link entry reads: where its strings are, and
// its price. The strings lie together in the arena, from str on, field
// after field: lengths alone locate them, and lengths compress where
// offsets would not (docs/PERFORMANCE.md). A page shard in fragments
// carries these records in the fragments, with the strings.
type adStrs struct {
	str              uint32
	lens             [numStrFields]uint32
	priceLo, priceHi uint32
}

// Criterion sources, kept in the low bits of critAd: they weigh a match.
const (
	srcKeyword = iota
	srcModel
	srcBrand
	srcCategory
)

var srcWeight = [4]float64{srcKeyword: 1.0, srcModel: 1.2, srcBrand: 0.5, srcCategory: 0.6}

// Field weights of the full-text index.
const (
	wTitle     = 3
	wStrong    = 2 // manufacturer, model, keywords
	wCategory  = 4 // the product type: what the ad is, not what it fits
	wBody      = 1 // description
	maxMarket  = 64
	keywordSep = "\x1f"
)

func (a *adRec) kind() Kind         { return Kind(a.kindv) }
func (r *adStrs) price() int64      { return int64(uint64(r.priceHi)<<32 | uint64(r.priceLo)) }
func (a *adRec) marketBits() uint64 { return uint64(a.marketHi)<<32 | uint64(a.marketLo) }

func (ix *Index) rec(i int) *adRec { return &ix.ads[i] }

// strRec returns ad i's adStrs, the part of the arena its strings are in
// and where that part starts: the whole arena, or its fragment's; nil
// while the fragment is not loaded.
func (ix *Index) strRec(i int) (*adStrs, string, uint32) {
	if ix.per == 0 {
		return &ix.recs[i], ix.strs, 0
	}
	k := uint32(i) / ix.per
	recs := ix.fragRecs[k]
	if recs == nil {
		return nil, "", 0
	}
	return &recs[uint32(i)-k*ix.per], ix.fragStrs[k], ix.fragStart(k)
}

// field returns string f of ad i; "" while the fragment that holds it is
// not loaded. Open and LoadFragment have checked that an ad's strings lie
// within the arena, or its fragment.
func (ix *Index) field(i, f int) string {
	r, s, start := ix.strRec(i)
	if r == nil {
		return ""
	}
	off := r.str - start
	for _, n := range r.lens[:f] {
		off += n
	}
	return s[off : off+r.lens[f]]
}

// price returns ad i's price in cents; 0 while its fragment is not loaded.
func (ix *Index) price(i int) int64 {
	if r, _, _ := ix.strRec(i); r != nil {
		return r.price()
	}
	return 0
}

// fragStart is where fragment k's strings start in the arena.
func (ix *Index) fragStart(k uint32) uint32 {
	if k == 0 {
		return 0
	}
	return ix.frags[2*k-2]
}

func (ix *Index) term(t uint32) string { return ix.termStr[ix.termOff[t]:ix.termOff[t+1]] }

// termID finds a term by binary search; -1 when absent.
func (ix *Index) termID(s string) int32 {
	return ix.termIDBytes(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// termIDBytes is termID for a term being scanned; it does not allocate.
func (ix *Index) termIDBytes(b []byte) int32 {
	lo, hi := 0, len(ix.termOff)-1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ix.term(uint32(m)) < string(b) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(ix.termOff)-1 && ix.term(uint32(lo)) == string(b) {
		return int32(lo)
	}
	return -1
}

// Len returns the number of ads.
func (ix *Index) Len() int { return len(ix.ads) }

// AdvertiserGroups returns the advertiser group (Query.Exclude) of each
// advertiser of the index, by name. It reads every ad's advertiser: the
// server calls it once per index, not per query. An index opened from a
// page shard in fragments knows only the loaded ones'.
func (ix *Index) AdvertiserGroups() map[string]uint32 {
	groups := make(map[string]uint32)
	for i := range ix.ads {
		if r, _, _ := ix.strRec(i); r != nil {
			groups[ix.field(i, fAdvertiser)] = ix.ads[i].adv
		}
	}
	return groups
}

// Markets returns the index's markets.
func (ix *Index) Markets() []Market { return slices.Clone(ix.markets) }

// ShardMarket is the key of the index that answers a query for country
// and lang, as the server and the page both choose it from the whole
// catalog's index ix (ShardMarkets lists them): the market itself when both
// are given; for a country alone (the page context has no lang), the
// country's one market when its ads run in one language, else the
// country's own index, keyed with no Lang; for a language alone (a page
// whose lang names no country), the one market in that language. ok is
// false when the whole catalog's index answers instead, filtered by what
// is given: nothing given, no such market, or a language that several
// markets share.
func (ix *Index) ShardMarket(country, lang string) (m Market, ok bool) {
	if country == "" {
		if lang == "" {
			return Market{}, false
		}
		for _, k := range ix.markets {
			if k.Lang == lang {
				if ok {
					return Market{}, false
				}
				m, ok = k, true
			}
		}
		return m, ok
	}
	for _, k := range ix.markets {
		switch {
		case k.Country != country || lang != "" && k.Lang != lang:
		case ok:
			return Market{Country: country}, true // a second language
		default:
			m, ok = k, true
		}
	}
	return m, ok
}

// ShardGroups groups a catalog's ads by the keys of all.ShardMarkets, all
// being the catalog's whole index: an ad is in the group of each market it
// runs in, and once in its country's when that has a group of its own. A
// group holds its ads' positions in ads, in order; the groups share one
// array, counted before it is filled, so a million ads are neither copied
// nor appended one by one (BenchmarkRefresh).
func ShardGroups(all *Index, ads []Ad) map[Market][]int32 {
	g := shardGrouper{all: all, slot: map[Market]int{}}
	for i := range ads {
		for _, k := range g.slotsOf(ads[i].Markets) {
			g.count[k]++
		}
	}
	pos := make([]int32, 0, sum(g.count))
	bySlot := make([][]int32, len(g.keys))
	for k, n := range g.count {
		bySlot[k] = pos[len(pos) : len(pos) : len(pos)+n]
		pos = pos[:len(pos)+n]
	}
	for i := range ads {
		for _, k := range g.slotsOf(ads[i].Markets) {
			bySlot[k] = append(bySlot[k], int32(i))
		}
	}
	groups := make(map[Market][]int32, len(g.keys))
	for k, m := range g.keys {
		groups[m] = bySlot[k]
	}
	return groups
}

// shardGrouper numbers the groups ShardGroups makes and remembers the
// groups of the last market list it saw: a feed's ads share a few.
type shardGrouper struct {
	all   *Index
	slot  map[Market]int
	keys  []Market // by slot
	count []int    // by slot
	ms    []Market
	slots []int
	seen  bool
}

// slotsOf is the groups of an ad that runs in ms, a group once for each
// market ms names and once for its country's, if that has one.
func (g *shardGrouper) slotsOf(ms []Market) []int {
	if g.seen && slices.Equal(ms, g.ms) {
		return g.slots
	}
	g.ms, g.slots, g.seen = ms, nil, true
	var countries []Market
	for _, m := range ms {
		g.slots = append(g.slots, g.slotOf(m))
		if k, ok := g.all.ShardMarket(m.Country, ""); ok && k.Lang == "" && !slices.Contains(countries, k) {
			countries = append(countries, k)
			g.slots = append(g.slots, g.slotOf(k))
		}
	}
	return g.slots
}

func (g *shardGrouper) slotOf(m Market) int {
	k, ok := g.slot[m]
	if !ok {
		k = len(g.keys)
		g.slot[m] = k
		g.keys, g.count = append(g.keys, m), append(g.count, 0)
	}
	return k
}

func sum(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

// ShardMarkets lists the keys of the indexes the catalog of ix is cut into
// besides the whole: each market, then each country whose ads run in more
// than one language (Lang "": for a request that names the country alone).
func (ix *Index) ShardMarkets() []Market {
	out := slices.Clone(ix.markets)
	for _, m := range ix.markets {
		if k, ok := ix.ShardMarket(m.Country, ""); ok && k.Lang == "" && !slices.Contains(out[len(ix.markets):], k) {
			out = append(out, k)
		}
	}
	return out
}

// Lookup finds an ad's ordinal by its id; a page shard (EncodePage) has
// no table of ids and finds none.
func (ix *Index) Lookup(id string) (int, bool) {
	i, ok := slices.BinarySearchFunc(ix.byID, id, func(o uint32, id string) int {
		return cmp.Compare(ix.field(int(o), fID), id)
	})
	if !ok {
		return 0, false
	}
	return int(ix.byID[i]), true
}

// Ad returns the ad with ordinal i in full: its strings empty while the
// fragment that holds them is not loaded.
func (ix *Index) Ad(i int) Ad {
	a := ix.rec(i)
	ad := Ad{
		ID: ix.field(i, fID), Kind: a.kind(), Title: ix.field(i, fTitle),
		Manufacturer: ix.field(i, fManufacturer), Model: ix.field(i, fModel), Category: ix.field(i, fCategory),
		Description: ix.field(i, fDescription), GTIN: ix.field(i, fGTIN), PriceCents: ix.price(i),
		Currency: ix.field(i, fCurrency), Logo: ix.field(i, fLogo), Landing: ix.field(i, fLanding),
		Advertiser: ix.field(i, fAdvertiser), BidMicros: int64(a.bid),
	}
	if k := ix.field(i, fKeywords); k != "" {
		ad.Keywords = splitString(k, keywordSep)
	}
	bits := a.marketBits()
	for m := range ix.markets {
		if bits&(1<<m) != 0 {
			ad.Markets = append(ad.Markets, ix.markets[m])
		}
	}
	return ad
}

// Build indexes a catalog. Ads keep their order as ordinals. It fails on an
// empty or duplicate id, an unknown kind, or more than 64 markets.
func Build(ads []Ad) (*Index, error) { return buildTyped(ads, catalogTypes(ads)) }

// buildTyped is Build with the catalog's product types given: Rebuild
// indexes a catalog's new ads with the whole catalog's types.
func buildTyped(ads []Ad, types map[string]uint32) (*Index, error) {
	b := builder{
		termMap: make(map[string]uint32),
		critMap: make(map[string]uint32),
		offers:  make(map[string]uint32),
		advs:    make(map[string]uint32),
		mktMap:  make(map[Market]int),
	}
	ix := &Index{ads: make([]adRec, len(ads)), recs: make([]adStrs, len(ads))}
	// The arena at its final size at once: grown by appending, a large
	// catalog's was copied over and over (a fifth of a 1,000,000-ad build).
	size := 0
	for i := range ads {
		size += strsSize(&ads[i])
	}
	b.arena = make([]byte, 0, size)
	phrases, rank := acronymPhrases(), synonymRanks()
	for i := range ads {
		if i == reserveAfter && len(ads) >= 2*reserveAfter {
			b.reserve(len(ads), i)
		}
		if err := b.add(ix, i, &ads[i], types, phrases, rank); err != nil {
			return nil, err
		}
	}
	ix.markets = b.markets
	b.finish(ix)
	ix.byID = make([]uint32, len(ads))
	for i := range ix.byID {
		ix.byID[i] = uint32(i)
	}
	slices.SortFunc(ix.byID, func(x, y uint32) int {
		return cmp.Compare(ix.field(int(x), fID), ix.field(int(y), fID))
	})
	for i := 1; i < len(ix.byID); i++ {
		if id := ix.field(int(ix.byID[i]), fID); id == ix.field(int(ix.byID[i-1]), fID) {
			return nil, errors.New("match: duplicate ad id " + Quote(id))
		}
	}
	ix.prepareFullText()
	return ix, nil
}

type builder struct {
	arena   []byte
	termMap map[string]uint32 // term -> build-time id
	terms   []string
	// postings as (term, ad, tf) triples in ad order
	pTerm []uint32
	pAd   []uint32
	pTF   []uint8
	// criteria
	critMap  map[string]uint32 // joined build-time term ids -> criterion
	critSeqs [][]uint32
	cCrit    []uint32
	cAd      []uint32 // ad<<2|src
	offers   map[string]uint32
	advs     map[string]uint32
	markets  []Market
	mktMap   map[Market]int
	totalLen uint64
	ids      []uint32
	scratch  []byte
	// synonymous says of each term whether it has synonyms.
	synonymous []bool
	tf         map[uint32]uint32
	adCrit     map[uint32]uint32
}

// appendStrs appends an ad's strings to the arena, one after another in
// field order, and records in r where they start and their lengths. A
// value that repeats across ads (a brand, a currency) is stored each time:
// compression takes the repeats out of a shard, and each ad's strings stay
// together.
func appendStrs(arena []byte, r *adStrs, fields *[numStrFields]string) []byte {
	r.str = uint32(len(arena))
	for f, s := range fields {
		r.lens[f] = uint32(len(s))
		arena = append(arena, s...)
	}
	return arena
}

// strsSize is how many bytes of the arena appendStrs takes for ad's
// strings.
func strsSize(ad *Ad) int {
	n := len(ad.ID) + len(ad.Title) + len(ad.Advertiser) + len(ad.Currency) + len(ad.Logo) + len(ad.Manufacturer) +
		len(ad.Category) + len(ad.Description) + len(ad.GTIN) + len(ad.Model) + len(ad.Landing)
	for i, k := range ad.Keywords {
		if i > 0 {
			n += len(keywordSep)
		}
		n += len(k)
	}
	return n
}

// numbers reports whether every term of ids is a bare number.
func (b *builder) numbers(ids []uint32) bool {
	return bareNumbers(b.terms, ids)
}

// bareNumbers reports whether ids name terms that are all bare numbers.
func bareNumbers(terms []string, ids []uint32) bool {
	for _, id := range ids {
		if !bareNumber(terms[id]) {
			return false
		}
	}
	return len(ids) > 0
}

// reserveAfter is how many ads Build adds before it sizes the postings it
// collects by theirs (reserve): grown by appending alone, a large
// catalog's were copied over and over.
const reserveAfter = 4096

// reserve makes room in the postings for n ads by what the first i took,
// a tenth over: should the rest take more, appending grows them as
// before.
func (b *builder) reserve(n, i int) {
	want := len(b.pTerm) * n / i * 11 / 10
	b.pTerm = slices.Grow(b.pTerm, want-len(b.pTerm))
	b.pAd = slices.Grow(b.pAd, want-len(b.pAd))
	b.pTF = slices.Grow(b.pTF, want-len(b.pTF))
}

// termIDs returns the build-time ids of the terms of s.
func (b *builder) termIDs(s string) []uint32 {
	ids := b.ids[:0]
	b.scratch = scan(s, b.scratch, func(term []byte, _, _ int, _ bool) {
		id, ok := b.termMap[string(term)]
		if !ok {
			id = uint32(len(b.terms))
			t := string(term)
			b.termMap[t] = id
			b.terms = append(b.terms, t)
			b.synonymous = append(b.synonymous, synonyms[t] != nil)
		}
		ids = append(ids, id)
	})
	b.ids = ids
	return slices.Clone(ids)
}

func (b *builder) add(ix *Index, i int, ad *Ad, types map[string]uint32, phrases []string, rank map[string]int) error {
	if ad.ID == "" {
		return errors.New("match: ad " + strconv.Itoa(i) + " has no id")
	}
	if ad.Kind >= numKinds {
		return errors.New("match: ad " + Quote(ad.ID) + " has an unknown kind")
	}
	r, sr := &ix.ads[i], &ix.recs[i]
	b.arena = appendStrs(b.arena, sr, &[numStrFields]string{
		fID: ad.ID, fTitle: ad.Title, fAdvertiser: ad.Advertiser, fCurrency: ad.Currency, fLogo: ad.Logo,
		fManufacturer: ad.Manufacturer, fCategory: ad.Category, fDescription: ad.Description, fGTIN: ad.GTIN,
		fModel: ad.Model, fLanding: ad.Landing, fKeywords: joinStrings(ad.Keywords, keywordSep),
	})
	p := uint64(max(ad.PriceCents, 0))
	sr.priceLo, sr.priceHi = uint32(p), uint32(p>>32)
	r.bid = roundBid(ad.BidMicros)
	r.kindv = uint32(ad.Kind)
	var bits uint64
	for _, m := range ad.Markets {
		k, ok := b.mktMap[m]
		if !ok {
			if len(b.markets) == maxMarket {
				return errors.New("match: more than 64 markets")
			}
			k = len(b.markets)
			b.mktMap[m] = k
			b.markets = append(b.markets, m)
		}
		bits |= 1 << k
	}
	r.marketLo, r.marketHi = uint32(bits), uint32(bits>>32)

	// Full text.
	if b.tf == nil {
		b.tf = make(map[uint32]uint32)
		b.adCrit = make(map[uint32]uint32)
	}
	clear(b.tf)
	var docLen uint32
	addText := func(s string, w uint32) []uint32 {
		ids := b.termIDs(s)
		for _, id := range ids {
			b.tf[id] += w
			docLen += w
		}
		return ids
	}
	titleIDs := addText(ad.Title, wTitle)
	brand := addText(ad.Manufacturer, wStrong)
	model := addText(ad.Model, wStrong)
	// The category's last word names what the product is ("mouse pad" is
	// a pad): it weighs most; the words before it only qualify it.
	cat := addText(ad.Category, wStrong)
	if len(cat) > 0 {
		head := cat[len(cat)-1]
		b.tf[head] += wCategory - wStrong
		docLen += wCategory - wStrong
		// A word that only qualifies the type names what the product
		// fits: a notebook case is found by "notebook" or "laptop", below
		// notebooks.
		for _, id := range cat[:len(cat)-1] {
			for _, w := range withSynonyms(b.terms[id]) {
				if sid, ok := b.termMap[w]; ok && sid != head && b.tf[sid] > 0 {
					b.tf[sid] = 1
				}
			}
		}
	}
	typ := ^uint32(0)
	if len(cat) > 0 {
		typ = cat[len(cat)-1]
	} else if k := b.titleType(ad.Title, types); k >= 0 {
		typ = titleIDs[k]
	}
	typ2 := b.acronym(titleIDs, cat, typ, phrases, addText)
	kws := make([][]uint32, len(ad.Keywords))
	for k, kw := range ad.Keywords {
		kws[k] = addText(kw, wStrong)
	}
	addText(ad.Description, wBody)
	// A word and its synonyms count once: of several words of a group in
	// an ad, the one it has most scores, and the others are there but add
	// nothing (a notebook that mentions a laptop in its description is
	// not a laptop and a notebook). Its type moves to that word.
	if typ != ^uint32(0) {
		typ = b.mostOfGroup(typ, rank)
	}
	if typ2 != ^uint32(0) {
		typ2 = b.mostOfGroup(typ2, rank)
	}
	var less []uint32
	for id := range b.tf {
		if b.synonymous[id] && b.mostOfGroup(id, rank) != id {
			less = append(less, id)
		}
	}
	for _, id := range less {
		b.tf[id] = 0
	}
	r.docLen = docLen
	b.totalLen += uint64(docLen)
	start := len(b.pTerm)
	for id, tf := range b.tf {
		b.pTerm = append(b.pTerm, id)
		b.pAd = append(b.pAd, uint32(i))
		t := uint8(min(tf, maxTF))
		if id == typ || id == typ2 {
			t |= typeFlag
		}
		b.pTF = append(b.pTF, t)
	}
	// Map iteration order is random: sort this ad's postings by term so
	// the build is deterministic.
	sortTriples(b.pTerm[start:], b.pTF[start:])

	// Criteria, keeping the strongest source when one phrase comes twice.
	clear(b.adCrit)
	eachCriterion(ad.Kind, kws, brand, model, cat, b.numbers, func(ids []uint32, src uint32) {
		key := make([]byte, 0, 4*len(ids))
		for _, id := range ids {
			key = append(key, byte(id), byte(id>>8), byte(id>>16), byte(id>>24))
		}
		c, ok := b.critMap[string(key)]
		if !ok {
			c = uint32(len(b.critSeqs))
			b.critMap[string(key)] = c
			b.critSeqs = append(b.critSeqs, ids)
		}
		if old, ok := b.adCrit[c]; !ok || srcWeight[src] > srcWeight[old] {
			b.adCrit[c] = src
		}
	})
	cs := make([]uint32, 0, len(b.adCrit))
	for c := range b.adCrit {
		cs = append(cs, c)
	}
	slices.Sort(cs)
	for _, c := range cs {
		b.cCrit = append(b.cCrit, c)
		b.cAd = append(b.cAd, uint32(i)<<2|b.adCrit[c])
	}

	// Offer group.
	key := "g" + ad.GTIN
	if ad.GTIN == "" {
		k := []byte{'t'}
		for _, id := range titleIDs {
			k = append(append(k, b.terms[id]...), ' ')
		}
		key = string(k)
	}
	g, ok := b.offers[key]
	if !ok {
		g = uint32(len(b.offers))
		b.offers[key] = g
	}
	r.offer = g
	adv, ok := b.advs[ad.Advertiser]
	if !ok {
		adv = uint32(len(b.advs))
		b.advs[ad.Advertiser] = adv
	}
	r.adv = adv
	return nil
}

// eachCriterion calls add with each of an ad's criteria, as the ids of
// its words, and its source: the ad's keywords (kws) but those all bare
// numbers and, but for an advertiser's ad (kind), its model, brand and
// category; a phrase of more than 8 words is none. numbers reports
// whether ids are all bare numbers. It is what both Build and
// SameCriteria derive criteria by.
func eachCriterion(kind Kind, kws [][]uint32, brand, model, cat []uint32, numbers func(ids []uint32) bool, add func(ids []uint32, src uint32)) {
	crit := func(ids []uint32, src uint32) {
		if len(ids) > 0 && len(ids) <= 8 {
			add(ids, src)
		}
	}
	for _, k := range kws {
		if !numbers(k) {
			crit(k, srcKeyword)
		}
	}
	if kind == KindAdvertiser {
		return
	}
	// A model that starts with a bare number ("12" of "OnePlus 12") names
	// the product only after its brand.
	if len(model) > 0 && numbers(model[:1]) {
		if len(brand) > 0 {
			model = append(slices.Clone(brand), model...)
		} else {
			model = nil
		}
	}
	crit(model, srcModel)
	crit(brand, srcBrand)
	crit(cat, srcCategory)
}

// mostOfGroup returns, of term id and its synonyms, the one the ad being
// added has most; of equals, the first of its group by rank
// (synonymGroups puts the more specific first: ps4 before playstation).
func (b *builder) mostOfGroup(id uint32, rank map[string]int) uint32 {
	best := id
	for _, w := range synonyms[b.terms[id]] {
		sid, ok := b.termMap[w]
		if !ok {
			continue
		}
		if tf := b.tf[sid]; tf > b.tf[best] || tf > 0 && tf == b.tf[best] && rank[w] < rank[b.terms[best]] {
			best = sid
		}
	}
	return best
}

// synonymRanks returns each normalised synonym's place in its group,
// from 1.
func synonymRanks() map[string]int {
	rank := make(map[string]int)
	for _, g := range synonymGroups {
		for i, s := range g {
			if n := Normalize(s); rank[n] == 0 {
				rank[n] = i + 1
			}
		}
	}
	return rank
}

func sortTriples(terms []uint32, tfs []uint8) {
	for i := 1; i < len(terms); i++ {
		for j := i; j > 0 && terms[j] < terms[j-1]; j-- {
			terms[j], terms[j-1] = terms[j-1], terms[j]
			tfs[j], tfs[j-1] = tfs[j-1], tfs[j]
		}
	}
}

// finish sorts the dictionary and lays out postings and criteria.
func (b *builder) finish(ix *Index) {
	ix.strs = string(b.arena)
	if n := len(ix.ads); n > 0 {
		ix.avgLen = float64(b.totalLen) / float64(n)
	}
	nt := len(b.terms)
	order := make([]uint32, nt) // new id -> old id
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(x, y uint32) int { return cmp.Compare(b.terms[x], b.terms[y]) })
	remap := make([]uint32, nt) // old -> new
	var ts []byte
	ix.termOff = make([]uint32, nt+1)
	for newID, old := range order {
		remap[old] = uint32(newID)
		ts = append(ts, b.terms[old]...)
		ix.termOff[newID+1] = uint32(len(ts))
	}
	ix.termStr = string(ts)

	// Postings: a counting sort by new term id keeps ads ascending.
	ix.postOff = countOffsets(nt, len(b.pTerm), func(k int) uint32 { return remap[b.pTerm[k]] })
	ix.postAd = make([]uint32, len(b.pAd))
	ix.postTF = make([]uint8, len(b.pTF))
	fill := slices.Clone(ix.postOff[:nt])
	for k, old := range b.pTerm {
		t := remap[old]
		ix.postAd[fill[t]] = b.pAd[k]
		ix.postTF[fill[t]] = b.pTF[k]
		fill[t]++
	}
	b.pTerm, b.pAd, b.pTF = nil, nil, nil

	// Criteria sorted by their new term sequences.
	nc := len(b.critSeqs)
	for _, seq := range b.critSeqs {
		for k := range seq {
			seq[k] = remap[seq[k]]
		}
	}
	corder := make([]uint32, nc)
	for i := range corder {
		corder[i] = uint32(i)
	}
	slices.SortFunc(corder, func(x, y uint32) int { return slices.Compare(b.critSeqs[x], b.critSeqs[y]) })
	crem := make([]uint32, nc)
	ix.critOff = make([]uint32, nc+1)
	for newC, old := range corder {
		crem[old] = uint32(newC)
		ix.critTerms = append(ix.critTerms, b.critSeqs[old]...)
		ix.critOff[newC+1] = uint32(len(ix.critTerms))
	}
	ix.critStart = make([]uint32, nt+1)
	for c := range nc {
		ix.critStart[ix.critTerms[ix.critOff[c]]+1]++
	}
	for t := range nt {
		ix.critStart[t+1] += ix.critStart[t]
	}
	ix.critAdOff = countOffsets(nc, len(b.cCrit), func(k int) uint32 { return crem[b.cCrit[k]] })
	ix.critAd = make([]uint32, len(b.cAd))
	fill = slices.Clone(ix.critAdOff[:nc])
	for k, old := range b.cCrit {
		c := crem[old]
		ix.critAd[fill[c]] = b.cAd[k]
		fill[c]++
	}
	// Each criterion's ads, best first: by what a match on it alone is
	// worth (the source's weight times the bid), so a query can stop after
	// the first few hundred of a criterion millions of ads share.
	worth := func(e uint32) float64 { return float64(srcWeight[e&3] * bidFactor(ix.ads[e>>2].bid)) }
	for c := range nc {
		slices.SortFunc(ix.critAd[ix.critAdOff[c]:ix.critAdOff[c+1]], func(x, y uint32) int {
			if wx, wy := worth(x), worth(y); wx != wy {
				if wx > wy {
					return -1
				}
				return 1
			}
			return cmpU32(x>>2, y>>2)
		})
	}
	layTermCrit(ix, nt, nc)
}

// countOffsets returns the n+1 offsets of a counting sort of m items whose
// keys key(k) are below n.
func countOffsets(n, m int, key func(k int) uint32) []uint32 {
	off := make([]uint32, n+1)
	for k := range m {
		off[key(k)+1]++
	}
	for i := range n {
		off[i+1] += off[i]
	}
	return off
}

// catalogTypes returns the product types a catalog knows: the last word of
// each ad's category ("mouse pad" is a pad).
func catalogTypes(ads []Ad) map[string]uint32 {
	return categoryTypes(len(ads), func(i int) string { return ads[i].Category })
}

// categoryTypes returns the last words of the n categories category gives.
func categoryTypes(n int, category func(int) string) map[string]uint32 {
	types := make(map[string]uint32)
	var scratch []byte
	for i := range n {
		last := ""
		scratch = scan(category(i), scratch, func(term []byte, _, _ int, _ bool) { last = string(term) })
		if last != "" {
			types[last] = 1
		}
	}
	return types
}

// titleType returns the place among the title's words of the one that
// says what an ad without a category is, or -1: the last word before a
// "for" or "with" (what the product fits or comes with) or a " - " or a
// bracket (its specifications), model numbers and sizes aside, when the
// catalog knows it as a product type. "Epson Lamp - ELPLP22" is a lamp,
// "HP Bluetooth Laser mouse" a mouse, "Kensington Sleeve for iPad" a
// sleeve; "HP Notebook QuickDock" is no notebook.
func (b *builder) titleType(title string, types map[string]uint32) int {
	typ, k, done := -1, 0, false
	prevEnd := 0
	b.scratch = scan(title, b.scratch, func(term []byte, start, end int, brk bool) {
		if done {
			return
		}
		if k > 0 && (brk || indexString(title[prevEnd:start], " - ") >= 0) {
			done = true
			return
		}
		switch string(term) {
		case "for", "with", "fur", "mit":
			done = true
			return
		}
		if !hasDigit(term) {
			typ = -1
			if types[string(term)] != 0 {
				typ = k
			}
		}
		k++
		prevEnd = end
	})
	return typ
}

func hasDigit(b []byte) bool {
	for _, c := range b {
		if c >= '0' && c <= '9' {
			return true
		}
	}
	return false
}

// acronyms are the short names shoppers use for products whose catalog
// spells them out: an ad whose title or category says "solid state drive"
// is found by "ssd" as if its title said it, and is an SSD when its type
// is the phrase's last word.
var acronyms = [][2]string{
	{"ssd", "solid state drive"},
	{"hdd", "hard disk drive"},
	{"ups", "uninterruptible power supply"},
	{"nas", "network attached storage"},
	{"ps3", "playstation 3"},
	{"ps4", "playstation 4"},
	{"ps5", "playstation 5"},
}

// acronymPhrases returns the phrases of acronyms normalised, between
// spaces, in the same order.
func acronymPhrases() []string {
	ps := make([]string, len(acronyms))
	for i, a := range acronyms {
		ps[i] = " " + Normalize(a[1]) + " "
	}
	return ps
}

// acronym adds to the ad's terms the acronyms of the phrases (from
// acronymPhrases) its title or category spells out, and returns the
// acronym's term when the phrase ends where the ad's type typ stands,
// else ^0. titleIDs and catIDs are the title's and the category's terms
// (termIDs), which spell them as Normalize does.
func (b *builder) acronym(titleIDs, catIDs []uint32, typ uint32, phrases []string, addText func(string, uint32) []uint32) uint32 {
	out := ^uint32(0)
	title, cat := b.spaced(titleIDs), b.spaced(catIDs)
	for i, p := range phrases {
		if indexString(title, p) < 0 && indexString(cat, p) < 0 {
			continue
		}
		id := addText(acronyms[i][0], wTitle)[0]
		last := p[lastIndexByte(p[:len(p)-1], ' ')+1 : len(p)-1]
		if typ != ^uint32(0) && b.terms[typ] == last {
			out = id
		}
	}
	return out
}

// spaced is the terms of ids, each between spaces: " "+Normalize(s)+" "
// of the text s whose terms they are.
func (b *builder) spaced(ids []uint32) string {
	n := 1
	for _, id := range ids {
		n += len(b.terms[id]) + 1
	}
	buf := make([]byte, 1, n)
	buf[0] = ' '
	for _, id := range ids {
		buf = append(append(buf, b.terms[id]...), ' ')
	}
	return string(buf)
}

func lastIndexByte(s string, c byte) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// layTermCrit lays out, from ix's criteria's terms, the criteria that
// contain each of the nt terms (each criterion once per term).
func layTermCrit(ix *Index, nt, nc int) {
	var pairs int
	for c := range nc {
		pairs += int(ix.critOff[c+1] - ix.critOff[c])
	}
	tcTerm := make([]uint32, 0, pairs)
	tcCrit := make([]uint32, 0, pairs)
	for c := range nc {
		seq := ix.critTerms[ix.critOff[c]:ix.critOff[c+1]]
		for k, t := range seq {
			if !slices.Contains(seq[:k], t) {
				tcTerm = append(tcTerm, t)
				tcCrit = append(tcCrit, uint32(c))
			}
		}
	}
	ix.termCritOff = countOffsets(nt, len(tcTerm), func(k int) uint32 { return tcTerm[k] })
	ix.termCrit = make([]uint32, len(tcCrit))
	fill := slices.Clone(ix.termCritOff[:nt])
	for k, t := range tcTerm {
		ix.termCrit[fill[t]] = tcCrit[k]
		fill[t]++
	}
}
