//go:build !wasip1

package match

import (
	"maps"
	"slices"
	"strings"
)

// IsCriterionOf reports whether text is a criterion a strong match (a
// page's, or a query's with ctx.dist=high) can name for ad i: as a hit's
// keywords joined stand, its words, normalised as an input's are, are one
// or more of the ad's criteria, each whole, one after another, at most
// maxKeywords of them and none spelled twice the same way (case aside),
// as a page's keywords never are. So a link the page made, which no
// signature binds, cannot carry a criterion its ad has no part in.
func (ix *Index) IsCriterionOf(i int, text string) bool {
	return ix.criteriaOf(i, text) != nil
}

// CanonicalCriterion is text, when IsCriterionOf takes it for ad i, as
// the ad spells its criteria: of the ad's criteria whose words text has,
// one after another, but those within a longer one there ("handy
// verkaufen" of "gebrauchtes handy verkaufen"), the one the ad lists
// first (its keywords in their order, then its model, brand and model,
// brand and category: eachCriterion's order), written as the ad's own
// field it is drawn from, its spaces made single; "" when IsCriterionOf
// does not take it. Every spelling, order and combination of the ad's
// criteria is one of its criteria, whatever its case, punctuation,
// spaces, soft hyphens or word forms: a page's link, which anyone can
// spell as they like, counts under one of its ad's criteria, as the
// advertiser wrote it, so an ad's page-made links make at most as many
// report rows as it has criteria.
func (ix *Index) CanonicalCriterion(i int, text string) string {
	words := ix.scanWords(text)
	parts := ix.criteriaIn(i, text, words)
	if parts == nil {
		return ""
	}
	type run struct {
		from, to int
		crit     uint32
	}
	var runs []run
	steps := 0
	for k, w := range words {
		for c := ix.critStart[w.id]; c < ix.critStart[w.id+1] && steps < maxCriterionSteps; c++ {
			steps++
			terms := ix.critTerms[ix.critOff[c]:ix.critOff[c+1]]
			end := k + len(terms)
			if end > len(words) || !ix.hasCriterion(i, c) {
				continue
			}
			same := true
			for j, term := range terms {
				same = same && words[k+j].id == int32(term)
			}
			if same {
				runs = append(runs, run{k, end, c})
			}
		}
	}
	ad := ix.Ad(i)
	best, bestRank := "", -1
	for _, r := range runs {
		if slices.ContainsFunc(runs, func(o run) bool { return o.from <= r.from && r.to <= o.to && o.to-o.from > r.to-r.from }) {
			continue
		}
		rank, s := ix.adSpelling(&ad, critPart{r.crit, text[words[r.from].start:words[r.to-1].end]})
		if bestRank < 0 || rank < bestRank || rank == bestRank && s < best {
			best, bestRank = s, rank
		}
	}
	if best == "" { // steps ran out before a run was found: text's own
		_, best = ix.adSpelling(&ad, parts[0])
	}
	return best
}

// hasCriterion reports whether criterion c is one of ad i's.
func (ix *Index) hasCriterion(i int, c uint32) bool {
	for _, e := range ix.critAd[ix.critAdOff[c]:ix.critAdOff[c+1]] {
		if int(e>>2) == i {
			return true
		}
	}
	return false
}

// adSpelling is criterion p of ad as the ad writes it, and where the ad
// lists it: the first of its fields a criterion is drawn from
// (eachCriterion) whose words are the criterion's, its spaces made
// single, and that field's place; else, for a criterion no field spells
// alone, p's words as text has them, in lower case, after every field.
func (ix *Index) adSpelling(ad *Ad, p critPart) (rank int, spelling string) {
	terms := ix.critTerms[ix.critOff[p.crit]:ix.critOff[p.crit+1]]
	is := func(field string) bool {
		k, same := 0, true
		scan(field, nil, func(term []byte, _, _ int, _ bool) {
			same = same && k < len(terms) && ix.termIDBytes(term) == int32(terms[k])
			k++
		})
		return same && k == len(terms)
	}
	spelt := func(f string) string { return strings.Join(strings.Fields(dropSoftHyphens(f)), " ") }
	for k, f := range ad.Keywords {
		if is(f) {
			return k, spelt(f)
		}
	}
	fields := [...]string{ad.Model, ad.Manufacturer + " " + ad.Model, ad.Manufacturer, ad.Category}
	for k, f := range fields {
		if is(f) {
			return len(ad.Keywords) + k, spelt(f)
		}
	}
	var words []string
	scan(p.spelling, nil, func(_ []byte, start, end int, _ bool) {
		words = append(words, strings.ToLower(dropSoftHyphens(p.spelling[start:end])))
	})
	return len(ad.Keywords) + len(fields), strings.Join(words, " ")
}

// criteriaOf is the criteria of ad i that text is, one after another, as
// IsCriterionOf reads it; nil when it is none.
func (ix *Index) criteriaOf(i int, text string) []critPart {
	if i < 0 || i >= len(ix.ads) {
		return nil
	}
	return ix.criteriaIn(i, text, ix.scanWords(text))
}

// critWord is a word of a criterion's text: its term and where it is.
type critWord struct {
	id         int32
	start, end int
}

// scanWords is text's words as scan reads an input's; nil when one is
// no term of the index.
func (ix *Index) scanWords(text string) []critWord {
	var words []critWord
	known := true
	scan(text, nil, func(term []byte, start, end int, _ bool) {
		id := ix.termIDBytes(term)
		known = known && id >= 0
		words = append(words, critWord{id, start, end})
	})
	if !known {
		return nil
	}
	return words
}

// criteriaIn is the criteria of ad i that words, of text, are, one after
// another, as IsCriterionOf takes them; nil when they are not.
func (ix *Index) criteriaIn(i int, text string, words []critWord) []critPart {
	if len(words) == 0 {
		return nil
	}
	mine := map[uint32]bool{} // whether criterion c is the ad's
	isMine := func(c uint32) bool {
		m, ok := mine[c]
		if !ok {
			m = ix.hasCriterion(i, c)
			mine[c] = m
		}
		return m
	}
	// A search for the keywords, each a criterion of the ad starting where
	// the one before ended; steps bounds it on a catalog whose criteria
	// nest ("x", "x x", "x x x"...).
	var parts []critPart
	steps := 0
	var from func(k int) bool
	from = func(k int) bool {
		if k == len(words) {
			return true
		}
		if len(parts) == maxKeywords {
			return false
		}
		t := words[k].id
		for c := ix.critStart[t]; c < ix.critStart[t+1]; c++ {
			if steps++; steps > maxCriterionSteps {
				return false
			}
			terms := ix.critTerms[ix.critOff[c]:ix.critOff[c+1]]
			end := k + len(terms)
			if end > len(words) || !isMine(c) {
				continue
			}
			same := true
			for j, term := range terms {
				same = same && words[k+j].id == int32(term)
			}
			if !same {
				continue
			}
			s := text[words[k].start:words[end-1].end]
			repeated := false
			for _, p := range parts {
				repeated = repeated || p.crit == c && strings.EqualFold(p.spelling, s)
			}
			if repeated {
				continue
			}
			parts = append(parts, critPart{c, s})
			if from(end) {
				return true
			}
			parts = parts[:len(parts)-1]
		}
		return false
	}
	if !from(0) {
		return nil
	}
	return parts
}

// critPart is a criterion in a text and how the text spells it.
type critPart struct {
	crit     uint32
	spelling string
}

// maxCriterionSteps bounds the criteria IsCriterionOf tries.
const maxCriterionSteps = 4096

// SameCriteria reports whether ads a and b have the same criteria, the
// phrases IsCriterionOf reads a text against, derived as Build derives
// them, and list and spell them alike, as CanonicalCriterion picks and
// writes one: a catalog refresh that keeps an ad's criteria keeps every
// criterion a page could have matched it by, and the one each link of
// it records.
func SameCriteria(a, b *Ad) bool {
	if a.Kind == b.Kind && a.Manufacturer == b.Manufacturer && a.Model == b.Model && a.Category == b.Category &&
		slices.Equal(a.Keywords, b.Keywords) {
		return true // the fields criteria are drawn from, as they were
	}
	ca, cb := criteriaOf(a), criteriaOf(b)
	return maps.Equal(ca, cb) && slices.Equal(listing(a, ca), listing(b, cb))
}

// listing is ad's criteria, set, in the order adSpelling ranks them, each
// with its spelling there ("" for one no field spells alone, which a
// text spells), criteria of one rank in their order as strings.
func listing(ad *Ad, set map[string]bool) []string {
	spelt := func(f string) string { return strings.Join(strings.Fields(dropSoftHyphens(f)), " ") }
	fields := append(slices.Clone(ad.Keywords), ad.Model, ad.Manufacturer+" "+ad.Model, ad.Manufacturer, ad.Category)
	type entry struct {
		rank           int
		crit, spelling string
	}
	entries := make([]entry, 0, len(set))
	for c := range set {
		e := entry{rank: len(fields), crit: c}
		for k, f := range fields {
			var terms []string
			scan(f, nil, func(term []byte, _, _ int, _ bool) { terms = append(terms, string(term)) })
			if strings.Join(terms, " ") == c {
				e.rank, e.spelling = k, spelt(f)
				break
			}
		}
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(x, y entry) int {
		if x.rank != y.rank {
			return x.rank - y.rank
		}
		return strings.Compare(x.crit, y.crit)
	})
	out := make([]string, 0, 2*len(entries))
	for _, e := range entries {
		out = append(out, e.crit, e.spelling)
	}
	return out
}

// criteriaOf is the set of ad's criteria, each its normalised words
// joined by spaces.
func criteriaOf(ad *Ad) map[string]bool {
	var terms []string
	ids := map[string]uint32{}
	var scratch []byte
	words := func(s string) []uint32 {
		var out []uint32
		scratch = scan(s, scratch, func(term []byte, _, _ int, _ bool) {
			id, ok := ids[string(term)]
			if !ok {
				id = uint32(len(terms))
				ids[string(term)] = id
				terms = append(terms, string(term))
			}
			out = append(out, id)
		})
		return out
	}
	kws := make([][]uint32, len(ad.Keywords))
	for k, kw := range ad.Keywords {
		kws[k] = words(kw)
	}
	brand, model, cat := words(ad.Manufacturer), words(ad.Model), words(ad.Category)
	set := map[string]bool{}
	numbers := func(ids []uint32) bool { return bareNumbers(terms, ids) }
	eachCriterion(ad.Kind, kws, brand, model, cat, numbers, func(c []uint32, _ uint32) {
		parts := make([]string, len(c))
		for j, id := range c {
			parts[j] = terms[id]
		}
		set[strings.Join(parts, " ")] = true
	})
	return set
}

// HasWords reports whether every word of text, read as a full-text query
// reads its words, is in ad i's text (its title, keywords, description,
// brand, model or category), itself or as one of its synonyms, or joined
// with the next word as the catalog may write the two ("head set" for
// headset): what a looser match (ctx.dist=low or none) can name as its
// criterion for the ad. Empty text, text longer than a query
// (MaxQueryBytes, past which a query is cut) or with more words than a
// query scores, is not.
func (ix *Index) HasWords(i int, text string) bool {
	if i < 0 || i >= len(ix.ads) || len(text) > MaxQueryBytes {
		return false
	}
	in := new(input)
	ix.tokenize(in, &Query{Text: text, Dist: DistNone})
	if len(in.toks) == 0 || len(in.toks) > maxQueryTerms {
		return false
	}
	covered := make([]bool, len(in.toks))
	for k, t := range in.toks {
		if ix.adHasTerm(i, t.term) {
			covered[k] = true
		}
		if k+1 < len(in.toks) && ix.adHasTerm(i, t.term+in.toks[k+1].term) {
			covered[k], covered[k+1] = true, true
		}
	}
	return !slices.Contains(covered, false)
}

// adHasTerm reports whether ad i's text has term or one of its synonyms.
func (ix *Index) adHasTerm(i int, term string) bool {
	for k := -1; k < len(synonyms[term]); k++ {
		t := term
		if k >= 0 {
			t = synonyms[term][k]
		}
		if id := ix.termID(t); id >= 0 {
			if _, ok := slices.BinarySearch(ix.postAd[ix.postOff[id]:ix.postOff[id+1]], uint32(i)); ok {
				return true
			}
		}
	}
	return false
}
