package shards

import (
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// BenchmarkShardBytes prints every market shard's size in each encoding for
// the demo catalog, a generated 10,000-ad catalog and (when it is there) the
// Icecat catalog; for markets cut in fragments, what pages' texts fetch of
// them against the whole shard; and whether Pagefind-style term-range
// chunking of the index would cut that further.
func BenchmarkShardBytes(b *testing.B) {
	article := articleText(b)
	catalogs := []struct {
		name string
		ads  func() []match.Ad
	}{
		{"demo", func() []match.Ad { ads, _ := catalog.Demo(catalog.Options{}); return ads }},
		{"generated 10k", func() []match.Ad { return testcatalog.Generate(10000, 1) }},
		{"icecat", func() []match.Ad {
			ads, err := testcatalog.Icecat("../../../shared/data/catalog/icecat")
			if err != nil {
				return nil
			}
			return ads
		}},
	}
	for range b.N {
		for _, c := range catalogs {
			ads := c.ads()
			if len(ads) == 0 {
				fmt.Printf("%s: not available, skipped\n", c.name)
				continue
			}
			src := buildSource(b, ads)
			set, err := Build(src, Options{})
			if err != nil {
				b.Fatal(err)
			}
			ms := make([]match.Market, 0, len(set.Markets()))
			for m := range set.Markets() {
				ms = append(ms, m)
			}
			sort.Slice(ms, func(i, j int) bool { return ms[i].String() < ms[j].String() })
			fmt.Printf("%s catalog, %d ads:\n", c.name, len(ads))
			for _, m := range append(ms, match.Market{}) {
				blob, name := set.Pick(m.Country, m.Lang), m.String()
				if m.Country == "" {
					name = "all markets"
				}
				frags := set.Fragments(blob)
				cut := ""
				if len(frags) > 0 {
					z := 0
					for _, f := range frags {
						z += f.Size(Zstd)
					}
					cut = fmt.Sprintf("; without its strings, in %d fragments of %.1f KB zstd on average", len(frags), float64(z)/float64(len(frags))/1e3)
				}
				fmt.Printf("  shard %-11s zstd %7.1f KB  gzip %7.1f KB  identity %8.1f KB%s\n", name,
					float64(blob.Size(Zstd))/1e3, float64(blob.Size(Gzip))/1e3, float64(blob.Size(Identity))/1e3, cut)
				if m.Country == "de" && m.Lang == "de" || c.name != "demo" && m.Country == "us" {
					texts := pageTexts(ads, m)
					if m.Country == "de" && c.name == "demo" {
						texts = []string{article}
					}
					ix := src.For(m.Country, m.Lang)
					wholeBytes, _ := ix.EncodePage(0)
					whole, err := NewBlob(wholeBytes, "")
					if err != nil {
						b.Fatal(err)
					}
					if len(frags) > 0 {
						fetched(b, m, blob, frags, whole, texts)
					}
					chunking(whole, texts)
				}
			}
		}
	}
}

// fetched reports what pages with the given texts fetch of a shard cut in
// fragments (the index, then the fragments of the ads their matches show:
// match.Index.Missing, as the module asks for them) against the whole
// shard, zstd, medians over the texts.
func fetched(b *testing.B, m match.Market, shard *Blob, frags []*Blob, whole *Blob, texts []string) {
	ix, err := match.Open(shard.Bytes(Identity))
	if err != nil {
		b.Fatal(err)
	}
	var bytes, counts []int
	for _, text := range texts {
		need := ix.Missing(ix.Match(&match.Query{Page: true, Text: text, Country: m.Country}))
		n := shard.Size(Zstd)
		for _, k := range need {
			n += frags[k].Size(Zstd)
		}
		bytes, counts = append(bytes, n), append(counts, len(need))
	}
	slices.Sort(bytes)
	slices.Sort(counts)
	med := bytes[len(bytes)/2]
	fmt.Printf("    a page's text (median of %d) fetches the index and %d fragments: %.1f KB zstd, against %.1f KB for the whole shard: %.1fx less, for one more round trip\n",
		len(texts), counts[len(counts)/2], float64(med)/1e3, float64(whole.Size(Zstd))/1e3, float64(whole.Size(Zstd))/float64(med))
	b.ReportMetric(float64(med)/1e3, "KB-page-"+m.String())
}

// chunking simulates Pagefind's layout on a shard: terms in order, cut
// into chunks of about 25 KB gzip each holding their terms' postings and
// criteria, plus a small meta file and the ad records of the hits; and
// reports what pages with the given texts would fetch against the whole
// shard. It reads the shard's section table (match/shard.go).
func chunking(blob *Blob, texts []string) {
	s := blob.Bytes(Identity)
	sec := func(i int) []byte {
		off := binary.LittleEndian.Uint32(s[24+8*i:])
		n := binary.LittleEndian.Uint32(s[24+8*i+4:])
		return s[off : off+n]
	}
	u32 := func(b []byte) []uint32 {
		v := make([]uint32, len(b)/4)
		for i := range v {
			v[i] = binary.LittleEndian.Uint32(b[4*i:])
		}
		return v
	}
	if binary.LittleEndian.Uint32(s[8:]) != match.ShardVersion {
		fmt.Println("    chunking: shard format changed; not measured")
		return
	}
	termOff, termStr := u32(sec(5)), sec(6)
	postOff, critStart, critOff, critAdOff, termCritOff := u32(sec(7)), u32(sec(10)), u32(sec(11)), u32(sec(13)), u32(sec(15))
	nTerms := len(termOff) - 1
	// Bytes a term brings into its chunk: its term text, postings (ad + tf),
	// the criteria that start with it and its criteria-by-term entries.
	termBytes := func(t int) int {
		n := int(termOff[t+1]-termOff[t]) + 4 + 5*int(postOff[t+1]-postOff[t]) + 4*int(termCritOff[t+1]-termCritOff[t])
		for c := critStart[t]; c < critStart[t+1]; c++ {
			n += 12 + 4*int(critOff[c+1]-critOff[c]) + 4*int(critAdOff[c+1]-critAdOff[c])
		}
		return n
	}
	ratio := float64(blob.Size(Gzip)) / float64(len(s))
	target := int(25e3 / ratio) // 25 KB gzip, as Pagefind keeps chunks
	chunkOf := make([]int, nTerms)
	var chunkBytes []int
	acc := 0
	for t := range nTerms {
		if acc >= target || len(chunkBytes) == 0 {
			chunkBytes = append(chunkBytes, 0)
			acc = 0
		}
		b := termBytes(t)
		acc += b
		chunkBytes[len(chunkBytes)-1] += b
		chunkOf[t] = len(chunkBytes) - 1
	}
	term := func(t int) string { return string(termStr[termOff[t]:termOff[t+1]]) }
	var touched []int
	for _, text := range texts {
		seen := map[int]bool{}
		for _, w := range strings.Fields(match.Normalize(text)) {
			t := sort.Search(nTerms, func(i int) bool { return term(i) >= w })
			if t < nTerms && term(t) == w {
				seen[chunkOf[t]] = true
			}
		}
		touched = append(touched, len(seen))
	}
	slices.Sort(touched)
	index := 0
	for _, n := range chunkBytes {
		index += n
	}
	fmt.Printf("    index (terms, postings, criteria) ~%.0f KB gzip in %d term-range chunks of 25 KB; a page's text touches %d of them (median of %d pages): term-range chunks do not pay for pages\n",
		float64(index)*ratio/1e3, len(chunkBytes), touched[len(touched)/2], len(texts))
}

// pageTexts makes article-length texts from the market's ad titles and
// filler, as a publisher's page mentions a few products among other words.
func pageTexts(ads []match.Ad, m match.Market) []string {
	var titles []string
	for _, a := range ads {
		if slices.Contains(a.Markets, m) {
			titles = append(titles, a.Title)
		}
	}
	filler := strings.Repeat("the test shows that this one is a good choice for most people who want a new device at home and at work ", 6)
	var out []string
	for i := 0; i < 15 && len(titles) > 0; i++ {
		var b strings.Builder
		for k := range 5 {
			b.WriteString(titles[(i*7919+k*104729)%len(titles)])
			b.WriteString(". ")
			b.WriteString(filler)
		}
		out = append(out, b.String())
	}
	return out
}

// articleText is the demo article's words without its markup.
func articleText(b *testing.B) string {
	html, err := os.ReadFile("../../web/demo/article.html")
	if err != nil {
		b.Fatal(err)
	}
	return regexp.MustCompile(`<[^>]*>`).ReplaceAllString(string(html), " ")
}
