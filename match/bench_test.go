package match

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// pageWords is the vocabulary of the synthetic pages the page benchmarks read.
var pageWords = strings.Fields(`the a of and to in is for on with that this it as was by at be from are an
	review test phone camera battery screen price Apple iPhone 5 Nokia Lumia 630 handy headphones wireless Sony
	laptop notebook display keyboard design performance software update market users day week year new best`)

// BenchmarkPageMatch matches a 20 KB article against a generated catalog,
// as the page analysis and the widget do, reporting the cost per KB.
func BenchmarkPageMatch(b *testing.B) {
	ix := mustBuild(b, benchCatalog(20000))
	r := rand.New(rand.NewPCG(3, 4))
	text := randomText(r, pageWords, 3300) // about 20 KB
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		ix.Match(&Query{Page: true, Title: "Apple iPhone 5 review", Text: text})
	}
}

// BenchmarkReduce measures page reduction, run once per analysed page.
func BenchmarkReduce(b *testing.B) {
	ix := mustBuild(b, benchCatalog(20000))
	r := rand.New(rand.NewPCG(3, 4))
	text := randomText(r, pageWords, 3300)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		ix.Reduce("Apple iPhone 5 review", text)
	}
}

// benchCatalog makes n products from a small vocabulary, deterministically.
func benchCatalog(n int) []Ad {
	brands := []string{"Apple", "Nokia", "Sony", "Samsung", "LG", "HP", "Dell", "Lenovo", "Bosch", "Philips"}
	types := []string{"phone", "laptop", "headphones", "camera", "monitor", "tablet", "speaker", "watch", "printer", "router"}
	r := rand.New(rand.NewPCG(1, 1))
	ads := make([]Ad, n)
	for i := range ads {
		br, ty := brands[r.IntN(len(brands))], types[r.IntN(len(types))]
		model := br[:2] + "-" + itoa(100+r.IntN(9000))
		ads[i] = Ad{ID: "GEN.1." + itoa(i), Kind: KindProduct, Title: br + " " + model + " " + ty,
			Manufacturer: br, Model: model, Category: ty, Markets: []Market{us}, BidMicros: int64(r.IntN(1e6)),
			Landing: "https://shop.example/p/" + itoa(i)}
	}
	return ads
}
