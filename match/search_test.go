package match

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestUmlautMatches(t *testing.T) {
	ix := mustBuild(t, fixture())
	for _, q := range []string{"Müller Jacken", "mueller jacken", "muller jacke"} {
		if got := ids(ix, ix.Match(&Query{Text: q})); !slices.Contains(got, "mueller-mode.de") {
			t.Errorf("%q: %v", q, got)
		}
	}
}

func TestDistWidens(t *testing.T) {
	ix := mustBuild(t, fixture())
	q := "wireless noise headphones battery dual"
	var counts []int
	var prev []string
	for _, d := range []Dist{DistHigh, DistLow, DistNone} {
		got := ids(ix, ix.Match(&Query{Text: q, Dist: d, Size: MaxSize}))
		for _, id := range prev {
			if !slices.Contains(got, id) {
				t.Errorf("dist %d lost %s", d, id)
			}
		}
		prev = got
		counts = append(counts, len(got))
	}
	if !(counts[0] < counts[1] && counts[1] < counts[2]) {
		t.Fatalf("counts high/low/none = %v, want strictly widening", counts)
	}
}

func TestOperator(t *testing.T) {
	ix := mustBuild(t, fixture())
	or := ids(ix, ix.Match(&Query{Text: "nokia dual", Dist: DistNone}))
	and := ids(ix, ix.Match(&Query{Text: "nokia dual", Dist: DistNone, Operator: OpAnd}))
	if len(or) != 2 || !slices.Equal(and, []string{"OTTO.2.555"}) {
		t.Fatalf("or %v and %v", or, and)
	}
	if got := ix.Match(&Query{Text: "nokia zzzunknown", Dist: DistNone, Operator: OpAnd}); len(got) != 0 {
		t.Fatalf("and with an unknown term: %v", ids(ix, got))
	}
}

func TestFilters(t *testing.T) {
	ix := mustBuild(t, fixture())
	for _, tc := range []struct {
		q    Query
		want []string
	}{
		{Query{Text: "wireless headphones", Country: "gb"}, []string{"COUPON.1.7"}},
		{Query{Text: "wireless headphones", Country: "us", Kinds: Kinds(0).Add(KindProduct)}, []string{"BESTBUY.1.9"}},
		{Query{Text: "headphones", Lang: "de"}, nil},
		{Query{Text: "handy", Kinds: Kinds(0).Add(KindAdvertiser)}, nil},
		{Query{Text: "handy", Size: 1}, []string{"AMAZON.1.B00JVL2X1I"}},
	} {
		if got := ids(ix, ix.Match(&tc.q)); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: got %v want %v", tc.q, got, tc.want)
		}
	}
}

func TestDistinctAdvertiser(t *testing.T) {
	ix := mustBuild(t, fixture())
	// Amazon and Otto offer the same GTIN.
	two := ids(ix, ix.Match(&Query{Text: "nokia lumia 630"}))
	one := ids(ix, ix.Match(&Query{Text: "nokia lumia 630", DistinctAdvertiser: 1}))
	if len(two) != 2 || len(one) != 1 {
		t.Fatalf("default %v, distinct=1 %v", two, one)
	}
}

func TestReduceKeepsPageAnswer(t *testing.T) {
	ix := mustBuild(t, fixture())
	words := strings.Fields("Apple iPhone 5 Nokia Lumia 630 handy Handys LG lg Handy der die das und test wireless headphones Sony WH-1000XM4 Müller Jacken Mueller batteries AA battery pack smartphone")
	r := rand.New(rand.NewPCG(1, 2))
	o := &LinkOptions{Context: ContextPage, ClickBase: "r/v1/redirect?", ClickQuery: clickQuery(ContextPage, "", "", "")}
	for range 300 {
		title, text := randomText(r, words, 1+r.IntN(8)), randomText(r, words, r.IntN(200))
		rt, rx := ix.Reduce(title, text)
		full := ix.AppendLinks(nil, ix.Match(&Query{Page: true, Title: title, Text: text}), o)
		red := ix.AppendLinks(nil, ix.Match(&Query{Page: true, Title: rt, Text: rx}), o)
		if !bytes.Equal(full, red) {
			t.Fatalf("title %q text %q\nreduced %q / %q\nfull    %s\nreduced %s", title, text, rt, rx, full, red)
		}
		if len(rx) > len(text) {
			t.Fatalf("reduced text grew")
		}
	}
}

func FuzzMatch(f *testing.F) {
	ix := mustBuild(f, fixture())
	f.Add("lg handy", "", uint8(0), false)
	f.Add("Apple iPhone 5. Apple", "iPhone", uint8(2), true)
	f.Fuzz(func(t *testing.T, text, title string, opt uint8, page bool) {
		q := &Query{Text: text, Title: title, Page: page, Dist: Dist(opt % 3), Operator: Operator(opt >> 2 & 1)}
		a := ix.AppendResponse(nil, ix.Match(q), &LinkOptions{})
		if !json.Valid(a) {
			t.Fatalf("invalid JSON %s", a)
		}
		if page {
			rt, rx := ix.Reduce(title, text)
			b := ix.AppendResponse(nil, ix.Match(&Query{Page: true, Title: rt, Text: rx}), &LinkOptions{})
			if !bytes.Equal(a, b) {
				t.Fatalf("reduce changed the answer:\n%s\n%s", a, b)
			}
		}
	})
}

func TestLn(t *testing.T) {
	for _, x := range []float64{1e-9, 0.3, 1, 2, 2.718281828459045, 10, 12345.678, 1e12} {
		if got, want := ln(x), mathLog(x); got-want > 1e-12*max(1, want) || want-got > 1e-12*max(1, -want) {
			t.Errorf("ln(%v) = %v, want %v", x, got, want)
		}
	}
}

func mathLog(x float64) float64 { return math.Log(x) }

func TestSynonymsAndCompounds(t *testing.T) {
	ads := []Ad{
		{ID: "n", Kind: KindProduct, Title: "HP EliteBook Notebook 14 inch", Category: "notebook", Markets: []Market{us}},
		{ID: "h", Kind: KindProduct, Title: "Jabra Evolve Headset", Category: "headset", Markets: []Market{us}},
		{ID: "c", Kind: KindProduct, Title: "Notebook sleeve", Category: "notebook sleeve", Markets: []Market{us}},
	}
	ix := mustBuild(t, ads)
	if got := ids(ix, ix.Match(&Query{Text: "laptop", Dist: DistNone})); len(got) != 2 || !slices.Contains(got, "n") {
		t.Errorf("laptop: %v, want the notebook and the sleeve", got)
	}
	hits := ix.Match(&Query{Text: "head set", Dist: DistNone})
	if got := ids(ix, hits); !slices.Equal(got, []string{"h"}) || !slices.Equal(hits[0].Keywords, []string{"head", "set"}) {
		t.Errorf("head set: %v %v", got, hits)
	}
	if got := ix.Match(&Query{Text: "laptop", Dist: DistNone, Operator: OpAnd}); len(got) != 2 {
		t.Errorf("and over a synonym: %v", ids(ix, got))
	}
	if got := ix.Match(&Query{Text: "laptop zzz", Dist: DistNone, Operator: OpAnd}); len(got) != 0 {
		t.Errorf("and with an unknown word: %v", ids(ix, got))
	}
	// Catalogs call a fan a cooler.
	ix = mustBuild(t, []Ad{
		{ID: "cooler", Kind: KindProduct, Title: "StarTech.com USB Powered Laptop Cooler", Markets: []Market{us}},
		{ID: "cable", Kind: KindProduct, Title: "USB cable", Markets: []Market{us}},
	})
	if got := ids(ix, ix.Match(&Query{Text: "usb fan", Dist: DistNone})); len(got) == 0 || got[0] != "cooler" {
		t.Errorf("usb fan: %v, want the cooler first", got)
	}
}

func TestKeywordsLeaveOutInnerCriteria(t *testing.T) {
	ads := fixture()
	ads[2].Keywords = []string{"iphone"} // the iPhone 5 is also known as "iPhone"
	ix := mustBuild(t, ads)
	hits := ix.Match(&Query{Page: true, Text: "Das iPhone im Test: Apple hat beim iPhone 5 vieles richtig gemacht."})
	if len(hits) == 0 || !slices.Equal(hits[0].Keywords, []string{"Apple", "iPhone 5"}) {
		t.Fatalf("keywords %v", hits)
	}
}

// TestHostileInputsStayCheap feeds the inputs that once made matching
// quadratic: an ad with thousands of bid phrases all named on a page, a
// brand thousands of criteria start with, a query repeating one word. It
// checks the answers' shape; a regression shows as a test that takes
// seconds instead of milliseconds.
func TestHostileInputsStayCheap(t *testing.T) {
	var kws []string
	var page strings.Builder
	for i := range 2000 {
		kws = append(kws, "kw"+itoa(i))
	}
	for range 16 {
		for _, k := range kws {
			page.WriteString(k + " ")
		}
	}
	ads := []Ad{{ID: "many.example", Kind: KindAdvertiser, Title: "Many", Keywords: kws, Markets: []Market{us}}}
	for i := range 3000 {
		ads = append(ads, Ad{ID: "TV." + itoa(i), Kind: KindProduct, Title: "tv", Manufacturer: "Samsung", Keywords: []string{"tv x" + itoa(i), "samsung x" + itoa(i)}, Markets: []Market{us}})
	}
	ix := mustBuild(t, ads)
	hits := ix.Match(&Query{Page: true, Text: page.String()})
	if len(hits) == 0 || len(hits[0].Keywords) != maxKeywords {
		t.Fatalf("page of bid phrases: %d hits, keywords %v", len(hits), hits)
	}
	brand := strings.Repeat("samsung ", MaxPageBytes/8)
	if hits := ix.Match(&Query{Page: true, Text: brand}); len(hits) == 0 {
		t.Fatal("a page naming the brand found nothing")
	}
	if _, text := ix.Reduce("", brand); strings.Count(text, "\n") >= maxOccurrences {
		t.Fatalf("reduced text keeps %d passages", strings.Count(text, "\n")+1)
	}
	q := strings.Repeat("tv ", MaxQueryBytes/3)
	hits = ix.Match(&Query{Text: q, Dist: DistLow})
	if len(hits) == 0 || len(hits[0].Keywords) != 1 {
		t.Fatalf("repeated word: %v", hits)
	}
}

// TestSoftHyphenKeyword: a word the page hyphenates with soft hyphens
// matches, and its keyword and criterion read as the word does.
func TestSoftHyphenKeyword(t *testing.T) {
	ix := mustBuild(t, []Ad{{ID: "case.de", Kind: KindAdvertiser, Title: "Hüllen", Keywords: []string{"Handyhülle"},
		Advertiser: "case.de", Markets: []Market{de}, BidMicros: 100000}})
	for _, page := range []bool{false, true} {
		hits := ix.Match(&Query{Page: page, Text: "Eine Handy\u00adhül\u00adle für das Telefon"})
		if len(hits) != 1 || !slices.Equal(hits[0].Keywords, []string{"Handyhülle"}) || hits[0].Criterion != "Handyhülle" {
			t.Errorf("page %v: %+v, want the ad with keyword and criterion \"Handyhülle\"", page, hits)
		}
	}
}

// TestScratchReused: scratch goes back to the pool all zero after every
// kind of query, and a query on reused scratch answers as one on fresh
// scratch does. Its slots replace maps, and a slot left set would change
// the next query's answer.
func TestScratchReused(t *testing.T) {
	ads := fixture()
	reused, fresh := mustBuild(t, ads), mustBuild(t, ads)
	words := strings.Fields("Apple iPhone 5 Nokia Lumia 630 handy Handys LG lg Handy gebrauchte test wireless headphones Sony WH-1000XM4 Müller Jacken batteries AA battery pack smartphone")
	r := rand.New(rand.NewPCG(3, 4))
	o := &LinkOptions{ClickBase: "r/v1/redirect?", ClickQuery: clickQuery("", "", "", ""), Fields: ^Fields(0)}
	for i := range 600 {
		q := Query{Text: randomText(r, words, 1+r.IntN(12)), Size: 1 + r.IntN(20), DistinctAdvertiser: 1 + r.IntN(3)}
		switch i % 5 {
		case 0:
			q.Page, q.Title = true, randomText(r, words, r.IntN(4))
		case 1:
			q.Dist = DistLow
		case 2:
			q.Dist = DistNone
		case 3:
			q.Dist, q.Operator = DistNone, OpAnd
		}
		got := reused.AppendLinks(nil, reused.Match(&q), o)
		fresh.scratches = nil
		want := fresh.AppendLinks(nil, fresh.Match(&q), o)
		if !bytes.Equal(got, want) {
			t.Fatalf("query %+v on reused scratch:\n%s\nfresh:\n%s", q, got, want)
		}
		if len(reused.scratches) != 1 {
			t.Fatalf("%d scratches pooled after one query at a time", len(reused.scratches))
		}
		sc := reused.scratches[0]
		for name, dirty := range map[string]bool{
			"critSlot": slices.ContainsFunc(sc.critSlot, func(v int32) bool { return v != 0 }),
			"adSlot":   slices.ContainsFunc(sc.adSlot, func(v int32) bool { return v != 0 }),
			"acc":      slices.ContainsFunc(sc.acc, func(v float64) bool { return v != 0 }),
			"mask":     slices.ContainsFunc(sc.mask, func(v uint32) bool { return v != 0 }),
		} {
			if dirty {
				t.Fatalf("query %+v left scratch %s dirty", q, name)
			}
		}
	}
}

// An ad that is what the query names ranks above ads that only mention it,
// among ads with every word of the query.
func TestProductsBeforeAccessories(t *testing.T) {
	long := strings.Repeat("processor memory display storage battery keyboard ports weight ", 12)
	ads := []Ad{
		// Accessories: short texts that say "laptop" or "notebook" often.
		{ID: "case", Kind: KindProduct, Title: "Targus Laptop Slip Case notebook case", Category: "notebook case", Markets: []Market{us}},
		{ID: "cooler", Kind: KindProduct, Title: "USB Powered Laptop Cooler", Markets: []Market{us}},
		// Products: long descriptions, and only the synonym "notebook".
		{ID: "hp", Kind: KindProduct, Title: "HP 255 G7 Notebook Silver", Category: "notebook", Description: long, Markets: []Market{us}},
		{ID: "dell", Kind: KindProduct, Title: "Dell Latitude 5420 Notebook", Category: "notebook", Description: long, Markets: []Market{us}},
		{ID: "printer-stand", Kind: KindProduct, Title: "Lexmark Cabinet Stand printer stand", Category: "printer stand", Markets: []Market{us}},
		{ID: "phone-stand", Kind: KindProduct, Title: "Phone and Tablet Stand, foldable", Markets: []Market{us}},
	}
	ix := mustBuild(t, ads)
	for _, q := range []string{"laptop", "notebook", "laptops"} {
		got := ids(ix, ix.Match(&Query{Text: q, Dist: DistNone}))
		if len(got) < 2 || !slices.Contains(got[:2], "hp") || !slices.Contains(got[:2], "dell") {
			t.Errorf("%s: %v, want the two notebooks first", q, got)
		}
	}
	// The type a query names is its last word, and only an ad with every
	// word of the query is lifted: a printer stand is not a phone stand.
	if got := ids(ix, ix.Match(&Query{Text: "phone stand", Dist: DistNone})); len(got) == 0 || got[0] != "phone-stand" {
		t.Errorf("phone stand: %v, want the phone stand first", got)
	}
	// A query that names the accessory finds it first.
	if got := ids(ix, ix.Match(&Query{Text: "notebook case", Dist: DistNone})); len(got) == 0 || got[0] != "case" {
		t.Errorf("notebook case: %v, want the case first", got)
	}
}

// An ad without a category is what its title's head word says, when the
// catalog knows that word as a product type: the word before a " - ", a
// bracket, a "for" or "with", model numbers and sizes aside.
func TestTitleNamesTheType(t *testing.T) {
	long := strings.Repeat("sensor buttons cable weight grip wheel ", 12)
	ads := []Ad{
		// Categories tell the catalog's types: mouse, pad, lamp.
		{ID: "cat-mouse", Kind: KindProduct, Title: "Logitech M90 mouse USB", Category: "mouse", Description: long, Markets: []Market{us}},
		{ID: "cat-pad", Kind: KindProduct, Title: "Fellowes Gel Mouse Pad", Category: "mouse pad", Markets: []Market{us}},
		{ID: "cat-lamp", Kind: KindProduct, Title: "NEC VT70LP projector lamp 130 W", Category: "projector lamp", Description: long, Markets: []Market{us}},
		// Uncategorised: a mouse, a lamp, and things that only mention them.
		{ID: "mouse", Kind: KindProduct, Title: "HP Bluetooth Laser mouse 1200", Description: long, Markets: []Market{us}},
		{ID: "lamp", Kind: KindProduct, Title: "Epson Lamp - ELPLP22", Description: long, Markets: []Market{us}},
		{ID: "mouse-pad", Kind: KindProduct, Title: "Kensington Mouse Pad", Markets: []Market{us}},
		{ID: "for-mouse", Kind: KindProduct, Title: "Acme Cleaning Pad for mouse", Markets: []Market{us}},
		{ID: "lamp-case", Kind: KindProduct, Title: "Acme Lamp Case", Markets: []Market{us}},
	}
	ix := mustBuild(t, ads)
	for _, c := range []struct {
		q    string
		want []string // first, in any order
	}{
		{"mouse", []string{"cat-mouse", "mouse"}},
		{"lamp", []string{"cat-lamp", "lamp"}},
	} {
		got := ids(ix, ix.Match(&Query{Text: c.q, Dist: DistNone}))
		if len(got) < len(c.want) || !sameSet(got[:len(c.want)], c.want) {
			t.Errorf("%s: %v, want %v first", c.q, got, c.want)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Tab is what Samsung and Lenovo call their tablets.
func TestTabIsATablet(t *testing.T) {
	ix := mustBuild(t, []Ad{
		{ID: "tab", Kind: KindProduct, Title: "Samsung Galaxy Tab S6 Lite Android", Markets: []Market{us}},
		{ID: "phone", Kind: KindProduct, Title: "Samsung Galaxy S24 Android", Markets: []Market{us}},
	})
	if got := ids(ix, ix.Match(&Query{Text: "android tablet", Dist: DistNone})); len(got) == 0 || got[0] != "tab" {
		t.Errorf("android tablet: %v, want the Galaxy Tab first", got)
	}
}

// A catalog that spells a product out is found by the short name
// shoppers use: "ssd" finds solid state drives, as SSDs first.
func TestAcronymsFindSpelledOutProducts(t *testing.T) {
	ix := mustBuild(t, []Ad{
		{ID: "pc", Kind: KindProduct, Title: "Lenovo ThinkCentre M75s 8 GB 256 GB SSD PC", Category: "PC", Markets: []Market{us}},
		{ID: "drive", Kind: KindProduct, Title: "Intel X25-M internal solid state drive 2.5\" 80 GB", Category: "internal solid state drive", Markets: []Market{us}},
		{ID: "adapter", Kind: KindProduct, Title: "StarTech.com SATA to Compact Flash SSD Adapter", Markets: []Market{us}},
	})
	got := ids(ix, ix.Match(&Query{Text: "ssd", Dist: DistNone}))
	if len(got) != 3 || got[0] != "drive" {
		t.Errorf("ssd: %v, want all three, the drive first", got)
	}
}

// "ps4" is the PlayStation 4, not any PlayStation.
func TestPS4IsThePlayStation4(t *testing.T) {
	ix := mustBuild(t, []Ad{
		{ID: "ps3", Kind: KindProduct, Title: "Sony Playstation 3 Pro", Markets: []Market{us}},
		{ID: "ps4", Kind: KindProduct, Title: "Sony PlayStation 4 Pro 1TB White", Markets: []Market{us}},
	})
	if got := ids(ix, ix.Match(&Query{Text: "ps4 pro", Dist: DistNone})); len(got) == 0 || got[0] != "ps4" {
		t.Errorf("ps4 pro: %v, want the PlayStation 4 first", got)
	}
}

// A word and its synonyms count once: an ad that says "laptop" besides
// "notebook" is no more a notebook than one that does not, and scores
// alike for either word.
func TestSynonymsCountOnce(t *testing.T) {
	ix := mustBuild(t, []Ad{
		{ID: "both", Kind: KindProduct, Title: "HP 255 G7 Notebook", Category: "notebook", Description: "a laptop for work", Advertiser: "a.example", Markets: []Market{us}},
		{ID: "one", Kind: KindProduct, Title: "HP 256 G7 Notebook", Category: "notebook", Description: "a desktop for work", Advertiser: "b.example", Markets: []Market{us}},
	})
	for _, q := range []string{"notebook", "laptop"} {
		hits := ix.Match(&Query{Text: q, Dist: DistNone})
		if len(hits) != 2 || hits[0].Score != hits[1].Score {
			t.Errorf("%s: %v, want both ads with one score", q, hits)
		}
	}
	// Still there: an and-query for the word it says less finds it.
	if got := ids(ix, ix.Match(&Query{Text: "laptop work", Dist: DistNone, Operator: OpAnd})); len(got) != 2 {
		t.Errorf("laptop work (and): %v, want both", got)
	}
}

// Two words that the catalog writes as one name the query's type: "head
// set" is a headset, not a styling set with a doll's head.
func TestCompoundNamesTheType(t *testing.T) {
	ix := mustBuild(t, []Ad{
		{ID: "doll", Kind: KindProduct, Title: "L.O.L. Surprise! Styling Head Doll hair styling set", Category: "doll hair styling set", Markets: []Market{us}},
		{ID: "headset", Kind: KindProduct, Title: "Alienware AW510H Headset Black", Category: "headset", Markets: []Market{us}},
	})
	if got := ids(ix, ix.Match(&Query{Text: "head set", Dist: DistNone})); !slices.Equal(got, []string{"headset", "doll"}) {
		t.Errorf("head set: %v, want the headset, then the doll", got)
	}
	// Written as one word, the query is the same.
	if got := ids(ix, ix.Match(&Query{Text: "headset", Dist: DistNone})); !slices.Equal(got, []string{"headset"}) {
		t.Errorf("headset: %v, want the headset", got)
	}
	// "styling set" is the doll's type, and no compound.
	if got := ids(ix, ix.Match(&Query{Text: "styling set", Dist: DistNone})); len(got) == 0 || got[0] != "doll" {
		t.Errorf("styling set: %v, want the doll first", got)
	}
}

// An ad's length discounts its words in full: a word that is the same
// share of two ads' text weighs the same in both.
func TestLengthDiscountsInFull(t *testing.T) {
	ix := mustBuild(t, []Ad{
		{ID: "short", Kind: KindProduct, Title: "Zork gadget", Advertiser: "a.example", Markets: []Market{us}},
		{ID: "long", Kind: KindProduct, Title: "Zork gadget zork gadget", Advertiser: "b.example", Markets: []Market{us}},
		{ID: "other", Kind: KindProduct, Title: "Zork widget", Advertiser: "c.example", Markets: []Market{us}},
	})
	hits := ix.Match(&Query{Text: "gadget", Dist: DistNone})
	if len(hits) != 2 || hits[0].Score != hits[1].Score {
		t.Errorf("gadget: %v, want two ads with one score", hits)
	}
}
