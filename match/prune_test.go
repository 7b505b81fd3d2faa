//go:build !wasip1

package match_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// prunedCatalog is a generated catalog large enough that a common word has
// thousands of postings, and its index; built once for the tests here.
var prunedCatalog = sync.OnceValues(func() ([]match.Ad, *match.Index) {
	ads := testcatalog.Generate(20_000, 7)
	ix, err := match.Build(ads)
	if err != nil {
		panic(err)
	}
	return ads, ix
})

// pruneQueries draws full-text queries over the catalog's own words:
// common words (colours, product nouns, brands), rare ones (model
// numbers), synonyms, words a query writes apart that the catalog writes
// as one, words the catalog lacks, and two to four of them at once, with
// the request's options (size, distinct_advertiser, operator, market,
// kinds, excluded advertisers) drawn at random.
func pruneQueries(ads []match.Ad, ix *match.Index, n int, seed uint64) []match.Query {
	rng := rand.New(rand.NewPCG(seed, 1))
	common := []string{"black", "schwarz", "white", "weiß", "headphones", "kopfhörer", "headset", "laptop",
		"notebook", "smartphone", "handy", "tv", "fernseher", "sony", "samsung", "apple", "wireless", "bluetooth",
		"mit", "with", "and", "und", "GB", "kaufen", "5G", "gaming"}
	fixed := []string{"head set", "note book", "smart phone", "laptop notebook", "notebook laptop", "black black",
		"xyzzy", "xyzzy black", "sony xyzzy", "tv television fernseher", "in-ear headphones black",
		"Headphones, Beige", "Smartphone, Grey", "Notebook, Black", "Kopfhörer, Blau", "Camera, Beige"}
	// tails are the last two words of titles, as the 1M benchmark asks
	// them: a product noun and a colour, two common words whose lists
	// share many ads of like scores.
	var words, models, tails []string
	for _, a := range ads[:2000] {
		w := strings.Fields(a.Title)
		words = append(words, w...)
		if len(w) >= 2 {
			tails = append(tails, w[len(w)-2]+" "+w[len(w)-1])
		}
		if a.Model != "" {
			models = append(models, a.Model)
		}
	}
	var markets []match.Market
	for _, a := range ads[:200] {
		markets = append(markets, a.Markets...)
	}
	var advs []uint32
	for _, g := range ix.AdvertiserGroups() {
		advs = append(advs, g)
	}
	slices.Sort(advs)
	pick := func(l []string) string { return l[rng.IntN(len(l))] }
	qs := make([]match.Query, n)
	for i := range qs {
		var text string
		switch r := rng.IntN(10); {
		case i < len(fixed):
			text = fixed[i]
		case r < 3:
			text = pick(common)
		case r < 4:
			text = pick(models)
		case r < 5:
			text = pick(models) + " " + pick(common)
		case r < 6:
			text = pick(tails)
		case r < 8:
			text = pick(common) + " " + pick(words)
		default:
			k := 2 + rng.IntN(3)
			var ws []string
			for range k {
				ws = append(ws, pick(append(words, common...)))
			}
			text = strings.Join(ws, " ")
		}
		q := match.Query{Text: text, Dist: match.DistNone}
		q.Size = []int{0, 1, 2, 3, 5, 10, match.MaxSize}[rng.IntN(7)]
		q.DistinctAdvertiser = []int{0, 1, 3, match.MaxDistinctAdvertiser}[rng.IntN(4)]
		if rng.IntN(4) == 0 {
			q.Operator = match.OpAnd
		}
		if rng.IntN(3) == 0 {
			m := markets[rng.IntN(len(markets))]
			q.Country, q.Lang = m.Country, m.Lang
			if rng.IntN(3) == 0 {
				q.Lang = ""
			}
		}
		if rng.IntN(6) == 0 {
			q.Kinds = q.Kinds.Add(match.Kind(rng.IntN(3)))
		}
		if rng.IntN(6) == 0 {
			q.Exclude = []uint32{advs[rng.IntN(len(advs))], advs[rng.IntN(len(advs))]}
		}
		qs[i] = q
	}
	return qs
}

// checkPruned fails when the walk or the merge and the exhaustive loop
// rank a query's candidates differently in any way (ads, order, masks,
// score bits), or when Match's hits differ from the exhaustive ones.
func checkPruned(t *testing.T, ix *match.Index, q *match.Query) {
	t.Helper()
	walk, all := ix.FullTextCands(q, true), ix.FullTextCands(q, false)
	if !reflect.DeepEqual(walk, all) {
		n := 0
		for n < min(len(walk), len(all)) && walk[n] == all[n] {
			n++
		}
		t.Fatalf("%+v: the walk's %d candidates differ from the exhaustive %d at %d: %v against %v",
			q, len(walk), len(all), n, walk[n:min(n+3, len(walk))], all[n:min(n+3, len(all))])
	}
	if merged := ix.MergedCands(q); !reflect.DeepEqual(merged, all) {
		t.Fatalf("%+v: the merge's %d candidates differ from the exhaustive %d", q, len(merged), len(all))
	}
	want := ix.MatchExhaustive(q)
	if got := ix.MatchMerged(q); !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v: the merge's hits %v, the exhaustive %v", q, got, want)
	}
	if got := ix.MatchWalk(q); !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v: the walk's hits %v, the exhaustive %v", q, got, want)
	}
	if got := ix.Match(q); !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v: Match's hits %v, the exhaustive %v", q, got, want)
	}
}

func TestPrunedEqualsExhaustive(t *testing.T) {
	ads, ix := prunedCatalog()
	for _, q := range pruneQueries(ads, ix, 600, 1) {
		checkPruned(t, ix, &q)
	}
}

// TestPrunedDepths asks common and rare words, synonyms and several words
// at every depth the API can ask, from one ad to the relevance benchmark's
// 50 with ten advertisers an offer.
func TestPrunedDepths(t *testing.T) {
	_, ix := prunedCatalog()
	for _, text := range []string{"black", "laptop", "notebook", "kopfhörer", "sony headphones", "headphones black",
		"samsung 5G smartphone", "tv", "WH1234",
		// More lists than the merge takes: the exhaustive loop.
		"tv laptop headphones handy", "kopfhörer fernseher notebook smartphone head set"} {
		for _, size := range []int{1, 2, 3, 4, 7, 10, 20, 33, match.MaxSize} {
			for _, distinct := range []int{1, 2, 3, match.MaxDistinctAdvertiser} {
				for _, op := range []match.Operator{match.OpOr, match.OpAnd} {
					checkPruned(t, ix, &match.Query{Text: text, Dist: match.DistNone, Size: size, DistinctAdvertiser: distinct, Operator: op})
				}
			}
		}
	}
}

// TestPruningSkips: a common word's best ad is found scoring a small part
// of the ads that hold it, or the walk does not prune.
func TestPruningSkips(t *testing.T) {
	_, ix := prunedCatalog()
	for _, text := range []string{"black", "sony", "laptop", "headphones black"} {
		q := &match.Query{Text: text, Dist: match.DistNone, Size: 1, DistinctAdvertiser: 1}
		before := ix.WalkScored()
		ix.MatchWalk(q)
		scored := ix.WalkScored() - before
		holding := 0
		for _, w := range strings.Fields(text) {
			holding += ix.Postings(w)
		}
		if holding < 500 || scored*4 > int64(holding) {
			t.Errorf("%q: the walk scored %d of the %d postings of its words", text, scored, holding)
		}
	}
}

// TestPruningIntersects: a product noun and a colour, each on a thousand
// ads or more, are ranked at the API's default depth scoring a small part
// of the ads that hold either (their synonyms' ads, scored too, are not
// counted in it).
func TestPruningIntersects(t *testing.T) {
	_, ix := prunedCatalog()
	for _, text := range []string{"Headphones, Beige", "Smartphone, Grey", "Notebook, Black", "Kopfhörer, Blau"} {
		for _, size := range []int{0} {
			q := &match.Query{Text: text, Dist: match.DistNone, Size: size}
			before := ix.WalkScored()
			ix.MatchWalk(q)
			scored := ix.WalkScored() - before
			holding := 0
			for _, w := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == ',' }) {
				holding += ix.Postings(match.Normalize(w))
			}
			t.Logf("%q: scored %d of %d", text, scored, holding)
			if holding < 1000 || scored*4 > int64(holding) {
				t.Errorf("%q size %d: the walk scored %d of the %d postings of its words", text, size, scored, holding)
			}
			checkPruned(t, ix, q)
		}
	}
}

// TestPrunedOpenedShard: an index opened from its shard computes its
// bounds on the first full-text query, once however many ask at once, and
// ranks as the exhaustive loop does.
func TestPrunedOpenedShard(t *testing.T) {
	ads, built := prunedCatalog()
	ix, err := match.Open(built.Encode())
	if err != nil {
		t.Fatal(err)
	}
	qs := pruneQueries(ads, ix, 40, 2)
	var wg sync.WaitGroup
	hits := make([][]match.Hit, len(qs))
	for i := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hits[i] = ix.MatchWalk(&qs[i])
		}()
	}
	wg.Wait()
	for i := range qs {
		if want := built.MatchExhaustive(&qs[i]); !reflect.DeepEqual(hits[i], want) {
			t.Fatalf("%+v: the opened shard's walk %v, the exhaustive %v", qs[i], hits[i], want)
		}
	}
}

// FuzzPrunedFullText: for any query text and options, the walk ranks the
// candidates as the exhaustive loop does.
func FuzzPrunedFullText(f *testing.F) {
	f.Add("black", uint8(10), uint8(3), false, uint8(0))
	f.Add("sony headphones", uint8(50), uint8(10), false, uint8(1))
	f.Add("head set laptop", uint8(1), uint8(1), true, uint8(2))
	f.Add("tv fernseher black weiß", uint8(3), uint8(2), false, uint8(5))
	f.Add("Headphones, Beige", uint8(0), uint8(0), false, uint8(0))
	f.Add("Smartphone, Grey", uint8(50), uint8(10), true, uint8(0))
	f.Fuzz(func(t *testing.T, text string, size, distinct uint8, and bool, market uint8) {
		_, ix := prunedCatalog()
		q := &match.Query{Text: text, Dist: match.DistNone, Size: int(size % 64), DistinctAdvertiser: int(distinct % 16)}
		if and {
			q.Operator = match.OpAnd
		}
		if ms := ix.Markets(); market > 0 && len(ms) > 0 {
			m := ms[int(market)%len(ms)]
			q.Country, q.Lang = m.Country, m.Lang
		}
		checkPruned(t, ix, q)
	})
}

// TestPrunedAdTypedTwice: an ad whose category types it twice (its last
// word, and the acronym of the words before, as "Solid State Drive" is a
// drive and an ssd) gains the type boost on every term of the query, the
// one that is not the query's head included; the pruned walk ranks it as
// the exhaustive loop does.
func TestPrunedAdTypedTwice(t *testing.T) {
	vocab := []string{"ssd", "drive", "fast", "black", "disk", "usb", "cable", "hard"}
	cats := []string{"", "", "Solid State Drive", "Hard Disk Drive", "Drive", "Cable", "SSD"}
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 3))
		ads := make([]match.Ad, 60+r.IntN(200))
		for i := range ads {
			var w []string
			for range 1 + r.IntN(6) {
				w = append(w, vocab[r.IntN(len(vocab))])
			}
			ads[i] = match.Ad{ID: fmt.Sprintf("a%d", i), Title: strings.Join(w, " "),
				Category: cats[r.IntN(len(cats))], Advertiser: fmt.Sprintf("adv%d.example", i),
				BidMicros: int64(r.IntN(3_000_000)), Markets: []match.Market{{Country: "de", Lang: "de"}}}
			if r.IntN(2) == 0 {
				ads[i].Description = strings.Repeat("filler ", r.IntN(20))
			}
		}
		ix, err := match.Build(ads)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"ssd drive", "drive ssd", "fast ssd drive", "hard disk drive", "black drive"} {
			for _, size := range []int{1, 3} {
				for _, op := range []match.Operator{match.OpOr, match.OpAnd} {
					q := match.Query{Text: text, Dist: match.DistNone, Size: size, DistinctAdvertiser: 1, Operator: op}
					if walk, all := ix.FullTextCands(&q, true), ix.FullTextCands(&q, false); !reflect.DeepEqual(walk, all) {
						t.Fatalf("seed %d, %q, size %d, %v: the walk ranks\n%v\nthe exhaustive loop\n%v", seed, text, size, op, walk, all)
					}
				}
			}
		}
	}
}
