package match

import "slices"

// Reduce keeps of a page's title and text only the passages where the
// index's criteria occur, one passage per line. A page query
// (Query.Page) gives the same hits, keywords and order on the reduced text as
// on the full text, so page analysis stores a few hundred bytes per page
// instead of the page, and answering a request stays cheap.
func (ix *Index) Reduce(title, text string) (string, string) {
	in := new(input)
	ix.tokenize(in, &Query{Page: true, Title: title, Text: text})
	sc := ix.getScratch()
	slot := sc.crits(ix)
	occs, order := ix.findOccs(in, slot)
	clearSlots(slot, order)
	ix.putScratch(sc)
	// Merge overlapping occurrences into passages of whole tokens.
	type span struct{ from, to int32 }
	var spans []span
	for _, o := range occs {
		spans = append(spans, span{o.from, o.to})
	}
	slices.SortFunc(spans, func(a, b span) int {
		if a.from != b.from {
			return int(a.from - b.from)
		}
		return int(a.to - b.to)
	})
	var merged []span
	for _, s := range spans {
		if n := len(merged); n > 0 && s.from < merged[n-1].to {
			merged[n-1].to = max(merged[n-1].to, s.to)
			continue
		}
		merged = append(merged, s)
	}
	var rt, rx []byte
	for _, s := range merged {
		src, dst := in.src[1], &rx
		if int(s.from) < in.nTitle {
			src, dst = in.src[0], &rt
		}
		if len(*dst) > 0 {
			*dst = append(*dst, '\n')
		}
		*dst = append(*dst, src[in.toks[s.from].start:in.toks[s.to-1].end]...)
	}
	return string(rt), string(rx)
}
