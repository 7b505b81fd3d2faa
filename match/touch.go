//go:build !wasip1

package match

// touchHits reads the first bytes of the strings of each hit's link entry
// before AppendLinks writes them: on a server whose other queries have
// been through other ads, each hit's record and strings are cache misses,
// and read here, one after another with nothing between, they are waited
// for together rather than one entry at a time (docs/PERFORMANCE.md). The
// module does without, as its bytes count for more there. It returns what
// it read, and is not inlined, so the reads are not dropped.
//
//go:noinline
func touchHits(ix *Index, hits []Hit) byte {
	var sum byte
	for i := range hits {
		r, s, start := ix.strRec(hits[i].Ad)
		if r == nil {
			continue
		}
		// The entry's strings, from its id to its logo, a byte a cache
		// line.
		from, n := int(r.str-start), 0
		for _, l := range r.lens[:fLogo+1] {
			n += int(l)
		}
		for j := from; j < min(from+n, len(s)); j += 64 {
			sum += s[j]
		}
	}
	return sum
}
