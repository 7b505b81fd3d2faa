//go:build !wasip1

package match

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"unsafe"
)

// Rebuild returns the index Build(ads) returns, byte for byte, made beside
// prev, the index of the catalog before (nil for none): an ad prev holds as
// it is now keeps its analysis (its terms, postings and criteria), which is
// moved to its new ordinal, and only the ads new or changed since, or out
// of their order, are analysed, as Build analyses them. A refresh that
// changed a few ads of a million spends its time copying, not indexing
// (BenchmarkRefresh). When most ads changed it is Build.
func Rebuild(prev *Index, ads []Ad) (*Index, error) { return RebuildBeside(prev, nil, ads) }

// RebuildBeside is Rebuild given prevAd, which returns the ad prev's
// ordinal j was indexed from (nil for none): an ad that is that very ad,
// its strings and lists where that one's are (a feed's unchanged line
// read again), is known to be kept without comparing its strings.
func RebuildBeside(prev *Index, prevAd func(j int) *Ad, ads []Ad) (*Index, error) {
	if prev == nil || prev.per != 0 || len(prev.ads) == 0 || len(prev.recs) != len(prev.ads) || len(prev.byID) != len(prev.ads) {
		return Build(ads)
	}
	n, pn := len(ads), len(prev.ads)
	// prevOf is each ad's ordinal in prev, -1 for a fresh one; newOf
	// each of prev's ads' ordinal now, -1 when it is gone or changed.
	// Kept ads keep their order, so that their postings and criteria
	// stay in order once renumbered.
	prevOf := make([]int32, n)
	newOf := make([]int32, pn)
	for j := range newOf {
		newOf[j] = -1
	}
	var fresh []int32 // new ordinals of the fresh ads, ascending
	cursor, last := 0, -1
	var same sameMarkets
	for i := range ads {
		a := &ads[i]
		j := -1
		if cursor < pn && prev.field(cursor, fID) == a.ID {
			j = cursor
		} else if k, ok := prev.Lookup(a.ID); ok {
			j = k
		}
		if j >= 0 {
			cursor = j + 1
		}
		if j > last && (prevAd != nil && SameMemory(prevAd(j), a) || prev.sameAd(j, a, &same)) {
			prevOf[i], newOf[j], last = int32(j), int32(i), j
			continue
		}
		prevOf[i] = -1
		fresh = append(fresh, int32(i))
		if len(fresh) > n/4+16 {
			return Build(ads)
		}
	}
	// An uncategorised ad's type comes from the whole catalog's
	// categories: when they name other types than before, kept ads may
	// have other types too.
	types := distinctTypes(len(ads), func(i int) string { return ads[i].Category })
	if !maps.Equal(types, prev.catalogTypes()) {
		return Build(ads)
	}
	freshAds := make([]Ad, len(fresh))
	for k, i := range fresh {
		freshAds[k] = ads[i]
	}
	mini, err := buildTyped(freshAds, types)
	if err != nil {
		return Build(ads) // its error, naming the ad by its place
	}

	// The markets, numbered as Build numbers them: by first appearance.
	var markets []Market
	var lastMs []Market
	for i := range ads {
		ms := ads[i].Markets
		if len(ms) == len(lastMs) && unsafe.SliceData(ms) == unsafe.SliceData(lastMs) {
			continue
		}
		lastMs = ms
		for _, m := range ms {
			if !slices.Contains(markets, m) {
				if len(markets) == maxMarket {
					return Build(ads)
				}
				markets = append(markets, m)
			}
		}
	}
	prevPerm, miniPerm := marketPerm(prev.markets, markets), marketPerm(mini.markets, markets)

	// The ads' records and strings.
	ix := &Index{ads: make([]adRec, n), recs: make([]adStrs, n), markets: markets}
	size := 0
	for _, j := range prevOf {
		if j >= 0 {
			size += int(prev.recs[j].size())
		}
	}
	for k := range mini.recs {
		size += int(mini.recs[k].size())
	}
	arena := make([]byte, 0, size)
	var total uint64
	fi := 0
	for i, j := range prevOf {
		src, k, perm := prev, int(j), prevPerm
		if j < 0 {
			src, k, perm = mini, fi, miniPerm
			fi++
		}
		r, sr := src.ads[k], src.recs[k]
		bits := remapBits(r.marketBits(), perm)
		r.marketLo, r.marketHi = uint32(bits), uint32(bits>>32)
		start := sr.str
		sr.str = uint32(len(arena))
		arena = append(arena, src.strs[start:start+sr.size()]...)
		ix.ads[i], ix.recs[i] = r, sr
		total += uint64(r.docLen)
	}
	if err := ix.regroup(prev, ads, prevOf, fresh); err != nil {
		return Build(ads) // too costly beside prev
	}

	// The dictionary: prev's terms that kept ads still hold, and the
	// fresh ads' terms, merged in order.
	pt, ft := len(prev.termOff)-1, len(mini.termOff)-1
	keptPost := make([]uint32, pt)
	for t := range pt {
		c := uint32(0)
		for _, a := range prev.postAd[prev.postOff[t]:prev.postOff[t+1]] {
			if newOf[a] >= 0 {
				c++
			}
		}
		keptPost[t] = c
	}
	ptMap, ftMap := make([]int32, pt), make([]int32, ft)
	termStr := make([]byte, 0, len(prev.termStr)+len(mini.termStr))
	termOff := make([]uint32, 1, pt+ft+1)
	for a, b := 0, 0; a < pt || b < ft; {
		if a < pt && keptPost[a] == 0 {
			ptMap[a] = -1
			a++
			continue
		}
		id := int32(len(termOff) - 1)
		var s string
		switch {
		case b >= ft || a < pt && prev.term(uint32(a)) < mini.term(uint32(b)):
			s, ptMap[a] = prev.term(uint32(a)), id
			a++
		case a >= pt || mini.term(uint32(b)) < prev.term(uint32(a)):
			s, ftMap[b] = mini.term(uint32(b)), id
			b++
		default:
			s, ptMap[a], ftMap[b] = prev.term(uint32(a)), id, id
			a++
			b++
		}
		termStr = append(termStr, s...)
		termOff = append(termOff, uint32(len(termStr)))
	}
	nt := len(termOff) - 1
	ix.termOff, ix.termStr = termOff, unsafe.String(unsafe.SliceData(termStr), len(termStr))

	// Postings: each term's kept ones renumbered, then the fresh ads'
	// merged in by ordinal.
	ix.postOff = make([]uint32, nt+1)
	for t, id := range ptMap {
		if id >= 0 {
			ix.postOff[id+1] += keptPost[t]
		}
	}
	for t, id := range ftMap {
		ix.postOff[id+1] += mini.postOff[t+1] - mini.postOff[t]
	}
	for t := range nt {
		ix.postOff[t+1] += ix.postOff[t]
	}
	ix.postAd, ix.postTF = make([]uint32, ix.postOff[nt]), make([]uint8, ix.postOff[nt])
	fill := slices.Clone(ix.postOff[:nt])
	for t, id := range ptMap {
		if id < 0 {
			continue
		}
		w := fill[id]
		for p := prev.postOff[t]; p < prev.postOff[t+1]; p++ {
			if a := newOf[prev.postAd[p]]; a >= 0 {
				ix.postAd[w], ix.postTF[w] = uint32(a), prev.postTF[p]
				w++
			}
		}
		fill[id] = w
	}
	for t, id := range ftMap {
		// Merge from the back: the kept postings are at the range's
		// start, the fresh ones' room at its end.
		lo, kept := ix.postOff[id], fill[id]
		w := ix.postOff[id+1]
		for p := mini.postOff[t+1]; p > mini.postOff[t]; {
			a := uint32(fresh[mini.postAd[p-1]])
			for kept > lo && ix.postAd[kept-1] > a {
				kept--
				w--
				ix.postAd[w], ix.postTF[w] = ix.postAd[kept], ix.postTF[kept]
			}
			p--
			w--
			ix.postAd[w], ix.postTF[w] = a, mini.postTF[p]
		}
	}

	ix.rebuildCriteria(prev, mini, newOf, fresh, ptMap, ftMap)

	// Ads by id: prev's order of the kept ones, the fresh ones merged in.
	ix.byID = make([]uint32, 0, n)
	freshByID := mini.byID
	id := func(i uint32) string {
		if j := prevOf[i]; j >= 0 {
			return prev.field(int(j), fID)
		}
		return ads[i].ID
	}
	for _, j := range prev.byID {
		a := newOf[j]
		if a < 0 {
			continue
		}
		for len(freshByID) > 0 {
			f := uint32(fresh[freshByID[0]])
			c := strings.Compare(ads[f].ID, id(uint32(a)))
			if c == 0 {
				return Build(ads) // a duplicate id, which Build reports
			}
			if c > 0 {
				break
			}
			ix.byID = append(ix.byID, f)
			freshByID = freshByID[1:]
		}
		ix.byID = append(ix.byID, uint32(a))
	}
	for _, f := range freshByID {
		ix.byID = append(ix.byID, uint32(fresh[f]))
	}

	ix.strs = unsafe.String(unsafe.SliceData(arena), len(arena))
	if n > 0 {
		ix.avgLen = float64(total) / float64(n)
	}
	ix.prepareFullText()
	return ix, nil
}

// size is the bytes of the ad's strings.
func (r *adStrs) size() uint32 {
	n := uint32(0)
	for _, l := range r.lens {
		n += l
	}
	return n
}

// SameMemory reports whether a and b are the same ad by where their
// strings and lists are, not by their bytes: true only when they are
// equal, as an ad read again from an unchanged feed line is.
func SameMemory(a, b *Ad) bool {
	if a.Kind != b.Kind || a.PriceCents != b.PriceCents || a.BidMicros != b.BidMicros ||
		len(a.Keywords) != len(b.Keywords) || len(a.Markets) != len(b.Markets) ||
		len(a.Keywords) > 0 && unsafe.SliceData(a.Keywords) != unsafe.SliceData(b.Keywords) ||
		len(a.Markets) > 0 && unsafe.SliceData(a.Markets) != unsafe.SliceData(b.Markets) {
		return false
	}
	for _, f := range [...][2]string{{a.ID, b.ID}, {a.Title, b.Title}, {a.Manufacturer, b.Manufacturer}, {a.Model, b.Model},
		{a.Category, b.Category}, {a.Description, b.Description}, {a.GTIN, b.GTIN}, {a.Currency, b.Currency},
		{a.Logo, b.Logo}, {a.Landing, b.Landing}, {a.Advertiser, b.Advertiser}} {
		if len(f[0]) != len(f[1]) || len(f[0]) > 0 && unsafe.StringData(f[0]) != unsafe.StringData(f[1]) {
			return false
		}
	}
	return true
}

// sameMarkets remembers the market bits of the last market list sameAd
// read: a feed's ads share a few lists.
type sameMarkets struct {
	ms   []Market
	bits uint64
	ok   bool
}

// sameAd reports whether ad j of ix is a as Build would index it, its
// offer and advertiser groups aside (they depend on the ads before it).
func (ix *Index) sameAd(j int, a *Ad, same *sameMarkets) bool {
	r, sr := &ix.ads[j], &ix.recs[j]
	if r.kindv != uint32(a.Kind) || r.bid != roundBid(a.BidMicros) || sr.price() != max(a.PriceCents, 0) {
		return false
	}
	if len(a.Markets) != len(same.ms) || unsafe.SliceData(a.Markets) != unsafe.SliceData(same.ms) {
		same.ms, same.bits, same.ok = a.Markets, 0, true
		for _, m := range a.Markets {
			k := slices.Index(ix.markets, m)
			if k < 0 {
				same.ok = false
				break
			}
			same.bits |= 1 << k
		}
	}
	if !same.ok || same.bits != r.marketBits() {
		return false
	}
	for f, v := range [...]string{fID: a.ID, fTitle: a.Title, fAdvertiser: a.Advertiser, fCurrency: a.Currency, fLogo: a.Logo,
		fManufacturer: a.Manufacturer, fCategory: a.Category, fDescription: a.Description, fGTIN: a.GTIN,
		fModel: a.Model, fLanding: a.Landing} {
		if ix.field(j, f) != v {
			return false
		}
	}
	// The keywords as Build joins them, without joining them.
	k := ix.field(j, fKeywords)
	for i, kw := range a.Keywords {
		if strings.Contains(kw, keywordSep) {
			return false
		}
		if i > 0 {
			if !strings.HasPrefix(k, keywordSep) {
				return false
			}
			k = k[len(keywordSep):]
		}
		if !strings.HasPrefix(k, kw) {
			return false
		}
		k = k[len(kw):]
	}
	return k == ""
}

// marketPerm maps each market of from to its place in to; -1 when to has
// none (no ad that stays runs there).
func marketPerm(from, to []Market) []int {
	perm := make([]int, len(from))
	for k, m := range from {
		perm[k] = slices.Index(to, m)
	}
	return perm
}

// remapBits moves each bit k of bits to perm[k].
func remapBits(bits uint64, perm []int) uint64 {
	var out uint64
	for k, p := range perm {
		if bits&(1<<k) != 0 && p >= 0 {
			out |= 1 << p
		}
	}
	return out
}

// offerKey is the key of an ad's offer group, as Build makes it: its GTIN,
// else its title's terms.
func offerKey(gtin, title string, scratch []byte) (string, []byte) {
	if gtin != "" {
		return "g" + gtin, scratch
	}
	k := []byte{'t'}
	scratch = scan(title, scratch, func(term []byte, _, _ int, _ bool) {
		k = append(append(k, term...), ' ')
	})
	return string(k), scratch
}

// regroup numbers the ads' offer and advertiser groups as Build does, by
// first appearance: a kept ad is in its group in prev, a fresh one in the
// group of prev (or of a fresh ad before it) whose key is its own.
func (ix *Index) regroup(prev *Index, ads []Ad, prevOf, fresh []int32) error {
	pn := len(prev.ads)
	// Fresh ads' classes: below pn, a group of prev's; from pn on, new.
	offerClass, advClass := make([]int32, len(fresh)), make([]int32, len(fresh))
	offerKeys, advKeys := map[string]int32{}, map[string]int32{}
	wantGTIN, wantAdv := map[string]bool{}, map[string]bool{}
	var wantTitle []string
	var scratch []byte
	keys := make([]string, len(fresh))
	for k, i := range fresh {
		a := &ads[i]
		offerClass[k], advClass[k] = -1, -1
		if j, ok := prev.Lookup(a.ID); ok {
			if prev.field(j, fGTIN) == a.GTIN && (a.GTIN != "" || prev.field(j, fTitle) == a.Title) {
				offerClass[k] = int32(prev.ads[j].offer)
			}
			if prev.field(j, fAdvertiser) == a.Advertiser {
				advClass[k] = int32(prev.ads[j].adv)
			}
		}
		if offerClass[k] < 0 {
			keys[k], scratch = offerKey(a.GTIN, a.Title, scratch)
			if a.GTIN != "" {
				wantGTIN[a.GTIN] = true
			} else if _, seen := offerKeys[keys[k]]; !seen {
				offerKeys[keys[k]] = -1
				wantTitle = append(wantTitle, keys[k])
			}
		}
		if advClass[k] < 0 {
			wantAdv[a.Advertiser] = true
		}
	}
	// prev's groups of the keys fresh ads have, found by reading prev's
	// ads: their GTINs and advertisers all, their titles only where a
	// title's rarest term is.
	if len(wantGTIN) > 0 || len(wantAdv) > 0 {
		for j := range pn {
			if g := prev.field(j, fGTIN); g != "" && wantGTIN[g] {
				offerKeys["g"+g] = int32(prev.ads[j].offer)
				delete(wantGTIN, g)
			}
			if v := prev.field(j, fAdvertiser); wantAdv[v] {
				advKeys[v] = int32(prev.ads[j].adv)
				delete(wantAdv, v)
			}
		}
	}
	// Titles of common words only have many candidates: past a budget of
	// a few reads per ad, Build is cheaper (and a feed cannot make this
	// quadratic).
	budget := 4*pn + 1024
	for _, key := range wantTitle {
		cands := prev.titleCandidates(key)
		if budget -= len(cands); budget < 0 {
			return errTooManyReads
		}
		for _, j := range cands {
			if prev.field(int(j), fGTIN) != "" {
				continue
			}
			var k string
			if k, scratch = offerKey("", prev.field(int(j), fTitle), scratch); k == key {
				offerKeys[key] = int32(prev.ads[j].offer)
				break
			}
		}
	}
	next := int32(pn)
	for k, i := range fresh {
		if offerClass[k] < 0 {
			c, ok := offerKeys[keys[k]]
			if !ok || c < 0 {
				c, next = next, next+1
				offerKeys[keys[k]] = c
			}
			offerClass[k] = c
		}
		if advClass[k] < 0 {
			v := ads[i].Advertiser
			c, ok := advKeys[v]
			if !ok {
				c, next = next, next+1
				advKeys[v] = c
			}
			advClass[k] = c
		}
	}
	offerNum, advNum := make([]int32, next), make([]int32, next)
	for c := range offerNum {
		offerNum[c], advNum[c] = -1, -1
	}
	var offers, advs int32
	fi := 0
	for i, j := range prevOf {
		var oc, ac int32
		if j >= 0 {
			oc, ac = int32(prev.ads[j].offer), int32(prev.ads[j].adv)
		} else {
			oc, ac = offerClass[fi], advClass[fi]
			fi++
		}
		if offerNum[oc] < 0 {
			offerNum[oc], offers = offers, offers+1
		}
		if advNum[ac] < 0 {
			advNum[ac], advs = advs, advs+1
		}
		ix.ads[i].offer, ix.ads[i].adv = uint32(offerNum[oc]), uint32(advNum[ac])
	}
	return nil
}

// errTooManyReads is regroup giving up to Build.
var errTooManyReads = errors.New("match: too many ads to read again")

// titleCandidates lists the ads that might have the offer key key (of a
// title): those holding its rarest term, or every ad when it has none.
func (ix *Index) titleCandidates(key string) []uint32 {
	terms := strings.Fields(key[1:])
	if len(terms) == 0 {
		all := make([]uint32, len(ix.ads))
		for i := range all {
			all[i] = uint32(i)
		}
		return all
	}
	best := -1
	for _, s := range terms {
		t := ix.termID(s)
		if t < 0 {
			return nil // no ad has the term
		}
		if best < 0 || ix.postOff[t+1]-ix.postOff[t] < ix.postOff[best+1]-ix.postOff[best] {
			best = int(t)
		}
	}
	return ix.postAd[ix.postOff[best]:ix.postOff[best+1]]
}

// rebuildCriteria lays out ix's criteria from prev's that kept ads still
// have and mini's (the fresh ads'), each criterion's ads merged best
// first as Build sorts them.
func (ix *Index) rebuildCriteria(prev, mini *Index, newOf, fresh, ptMap, ftMap []int32) {
	pc, fc := len(prev.critOff)-1, len(mini.critOff)-1
	keptCrit := make([]uint32, pc)
	for c := range pc {
		n := uint32(0)
		for _, e := range prev.critAd[prev.critAdOff[c]:prev.critAdOff[c+1]] {
			if newOf[e>>2] >= 0 {
				n++
			}
		}
		keptCrit[c] = n
	}
	seq := func(from *Index, m []int32, c int, out []uint32) []uint32 {
		for _, t := range from.critTerms[from.critOff[c]:from.critOff[c+1]] {
			out = append(out, uint32(m[t]))
		}
		return out
	}
	type pair struct{ p, f int32 } // prev's and mini's criterion, -1 for none
	var order []pair
	ix.critOff = make([]uint32, 1, pc+fc+1)
	ix.critTerms = make([]uint32, 0, len(prev.critTerms)+len(mini.critTerms))
	var sa, sb []uint32
	for a, b := 0, 0; a < pc || b < fc; {
		if a < pc && keptCrit[a] == 0 {
			a++
			continue
		}
		var p pair
		c := 0
		switch {
		case a >= pc:
			c = 1
		case b >= fc:
			c = -1
		default:
			sa, sb = seq(prev, ptMap, a, sa[:0]), seq(mini, ftMap, b, sb[:0])
			c = slices.Compare(sa, sb)
		}
		switch {
		case c < 0:
			p = pair{int32(a), -1}
			ix.critTerms = seq(prev, ptMap, a, ix.critTerms)
			a++
		case c > 0:
			p = pair{-1, int32(b)}
			ix.critTerms = seq(mini, ftMap, b, ix.critTerms)
			b++
		default:
			p = pair{int32(a), int32(b)}
			ix.critTerms = seq(prev, ptMap, a, ix.critTerms)
			a++
			b++
		}
		order = append(order, p)
		ix.critOff = append(ix.critOff, uint32(len(ix.critTerms)))
	}
	nc, nt := len(order), len(ix.termOff)-1
	ix.critStart = make([]uint32, nt+1)
	for c := range nc {
		ix.critStart[ix.critTerms[ix.critOff[c]]+1]++
	}
	for t := range nt {
		ix.critStart[t+1] += ix.critStart[t]
	}
	ix.critAdOff = make([]uint32, nc+1)
	for c, p := range order {
		n := uint32(0)
		if p.p >= 0 {
			n += keptCrit[p.p]
		}
		if p.f >= 0 {
			n += mini.critAdOff[p.f+1] - mini.critAdOff[p.f]
		}
		ix.critAdOff[c+1] = ix.critAdOff[c] + n
	}
	ix.critAd = make([]uint32, ix.critAdOff[nc])
	worth := func(e uint32) float64 { return float64(srcWeight[e&3] * bidFactor(ix.ads[e>>2].bid)) }
	before := func(x, y uint32) bool {
		if wx, wy := worth(x), worth(y); wx != wy {
			return wx > wy
		}
		return x>>2 < y>>2
	}
	var kept []uint32
	for c, p := range order {
		out := ix.critAd[ix.critAdOff[c]:ix.critAdOff[c+1]]
		kept = kept[:0]
		if p.p >= 0 {
			for _, e := range prev.critAd[prev.critAdOff[p.p]:prev.critAdOff[p.p+1]] {
				if a := newOf[e>>2]; a >= 0 {
					kept = append(kept, uint32(a)<<2|e&3)
				}
			}
		}
		var fr []uint32
		if p.f >= 0 {
			fr = mini.critAd[mini.critAdOff[p.f]:mini.critAdOff[p.f+1]]
		}
		w := 0
		for _, e := range fr {
			e = uint32(fresh[e>>2])<<2 | e&3
			for len(kept) > 0 && before(kept[0], e) {
				out[w] = kept[0]
				kept = kept[1:]
				w++
			}
			out[w] = e
			w++
		}
		copy(out[w:], kept)
	}
	layTermCrit(ix, nt, nc)
}

// catalogTypes returns the product types of ix's catalog, as catalogTypes
// of its ads.
func (ix *Index) catalogTypes() map[string]uint32 {
	return distinctTypes(len(ix.ads), func(i int) string { return ix.field(i, fCategory) })
}

// distinctTypes is categoryTypes of the n categories category gives, each
// distinct one read once: a catalog's ads share a few hundred.
func distinctTypes(n int, category func(int) string) map[string]uint32 {
	var distinct []string
	seen := map[string]bool{}
	for i := range n {
		c := category(i)
		if i > 0 && c == distinct[len(distinct)-1] || seen[c] {
			continue
		}
		seen[c] = true
		distinct = append(distinct, c)
	}
	return categoryTypes(len(distinct), func(i int) string { return distinct[i] })
}
