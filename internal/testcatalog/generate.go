// Package testcatalog makes the catalogs that benchmarks and scale tests
// run on: synthetic catalogs of any size (Generate) and the Icecat product
// set (Icecat), and requests over a catalog's words (Requests). Nothing the
// server runs uses it.
package testcatalog

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/match"
)

// Generate returns a synthetic catalog of n ads for scale tests and
// benchmarks: mostly products, with a coupon in every fifty ads and one
// advertiser ad per hundred (up to one per advertiser). Products read like a
// shop's (brands, model numbers, colours, German titles for German-speaking
// markets, English ones elsewhere), about one in sixteen is another shop's
// offer of an earlier product with the same GTIN, and markets and currencies
// follow each advertiser's region.
//
// The same n and seed give the same ads on every platform. Strings that many
// ads share (advertiser, manufacturer, category, currency, keywords, logo,
// markets) are shared in memory too, so a million ads stay compact; callers
// must not modify the returned slices' elements in place.
func Generate(n int, seed uint64) []match.Ad {
	if n <= 0 {
		return nil
	}
	g := newGenerator(n, seed)
	ads := make([]match.Ad, n)
	nAdvAds := min(len(g.advs), n/100)
	for i := range ads {
		switch {
		case i < nAdvAds:
			g.advertiserAd(&ads[i], &g.advs[i])
		case i%50 == 49:
			g.coupon(&ads[i], i)
		default:
			g.product(ads, i)
		}
	}
	return ads
}

type genAdvertiser struct {
	domain   string
	title    string
	landing  string // "https://domain/p/"
	cat      int
	region   int
	bid      int64
	currency string
}

type generator struct {
	rng       *rand.Rand
	advs      []genAdvertiser
	byLang    [2][]int         // advertiser indices by language (0 English, 1 German)
	recent    [2][16]int       // recent product ordinals by language, for shared offers
	nRecent   [2]int           // how many of recent are set
	subsets   [][]match.Market // per region: every subset of its markets that holds the first
	subsetIdx [][]int
	logos     map[string]string
	// kw and bids are this call's copies of the vocabulary's keyword lists
	// (English, German), shared by its ads: a caller that changes an ad's
	// keywords in place cannot change the package's vocabulary.
	kw   [][2][]string
	bids [][2][]string
	buf  []byte
}

func newGenerator(n int, seed uint64) *generator {
	g := &generator{
		rng:   rand.New(rand.NewPCG(seed, 0x61646c696e6b)),
		logos: make(map[string]string),
		buf:   make([]byte, 0, 512),
	}
	for _, reg := range genRegions {
		var ms []match.Market
		for _, s := range reg.markets {
			m, _ := match.ParseMarket(s)
			ms = append(ms, m)
		}
		var idx []int
		for mask := 0; mask < 1<<(len(ms)-1); mask++ {
			set := []match.Market{ms[0]}
			for k := 1; k < len(ms); k++ {
				if mask&(1<<(k-1)) != 0 {
					set = append(set, ms[k])
				}
			}
			idx = append(idx, len(g.subsets))
			g.subsets = append(g.subsets, set)
		}
		g.subsetIdx = append(g.subsetIdx, idx)
	}
	for _, c := range genCategories {
		g.kw = append(g.kw, [2][]string{slices.Clone(c.enKW), slices.Clone(c.deKW)})
		g.bids = append(g.bids, [2][]string{slices.Clone(c.enBidPhrases), slices.Clone(c.deBidPhrases)})
		for _, b := range c.brands {
			if _, ok := g.logos[b]; !ok {
				g.logos[b] = "https://logos.shop.example/" + slug(b) + "/{dim}.png"
			}
		}
	}
	nAdv := min(max(n/2000, 8), 500)
	total := 0
	for _, w := range genRegionWeights {
		total += w
	}
	for k := range nAdv {
		r := 0
		for x := g.rng.IntN(total); x >= genRegionWeights[r]; r++ {
			x -= genRegionWeights[r]
		}
		switch k { // a small catalog still has both languages
		case 0:
			r = 0
		case 1:
			r = 2
		}
		reg := genRegions[r]
		c := g.rng.IntN(len(genCategories))
		cat := &genCategories[c]
		var domain, title string
		if reg.german {
			domain = genShopWordsDE[g.rng.IntN(len(genShopWordsDE))] + "-" + cat.deShop + "-" + strconv.Itoa(k+1) + ".shop.example"
			title = domain + " - " + cat.de + " und mehr günstig kaufen"
		} else {
			domain = cat.enShop + "-" + genShopWordsEN[g.rng.IntN(len(genShopWordsEN))] + "-" + strconv.Itoa(k+1) + ".shop.example"
			title = domain + " - " + cat.en + " and more at low prices"
		}
		lang := 0
		if reg.german {
			lang = 1
		}
		g.byLang[lang] = append(g.byLang[lang], k)
		g.advs = append(g.advs, genAdvertiser{
			domain: domain, title: title, landing: "https://" + domain + "/p/",
			cat: c, region: r, bid: g.bid(), currency: reg.currency,
		})
	}
	return g
}

func (g *generator) bid() int64 { return 50_000 + int64(g.rng.IntN(146))*10_000 }

func (g *generator) markets(region int) []match.Market {
	idx := g.subsetIdx[region]
	return g.subsets[idx[g.rng.IntN(len(idx))]]
}

func (g *generator) advertiserAd(a *match.Ad, adv *genAdvertiser) {
	reg := genRegions[adv.region]
	kw := g.bids[adv.cat][0]
	if reg.german {
		kw = g.bids[adv.cat][1]
	}
	*a = match.Ad{
		ID: adv.domain, Kind: match.KindAdvertiser, Title: adv.title, Keywords: kw,
		Landing: "https://" + adv.domain + "/", Advertiser: adv.domain,
		Markets: g.subsets[g.subsetIdx[adv.region][len(g.subsetIdx[adv.region])-1]], BidMicros: adv.bid,
	}
}

func (g *generator) coupon(a *match.Ad, i int) {
	adv := &g.advs[g.rng.IntN(len(g.advs))]
	reg := genRegions[adv.region]
	cat := &genCategories[adv.cat]
	pct := strconv.Itoa(5 * (1 + g.rng.IntN(6)))
	code := strings.ToUpper(cat.enShop[:min(4, len(cat.enShop))]) + pct
	*a = match.Ad{
		ID: "GEN.9." + strconv.Itoa(i), Kind: match.KindCoupon, Advertiser: adv.domain,
		Markets: g.markets(adv.region), BidMicros: adv.bid,
	}
	if reg.german {
		a.Title = pct + " % Rabatt auf " + cat.de + " bei " + adv.domain
		a.Keywords = g.kw[adv.cat][1]
		a.Description = "Mit dem Code " + code + " im Warenkorb, nur für kurze Zeit."
		a.Landing = "https://" + adv.domain + "/gutscheine/" + code
	} else {
		a.Title = pct + "% off " + cat.en + " at " + adv.domain
		a.Keywords = g.kw[adv.cat][0]
		a.Description = "Use code " + code + " at checkout, for a limited time only."
		a.Landing = "https://" + adv.domain + "/deals/" + code
	}
	a.Category = cat.en
	if reg.german {
		a.Category = cat.de
	}
}

func (g *generator) product(ads []match.Ad, i int) {
	a := &ads[i]
	r := g.rng
	lang := r.IntN(2)
	if len(g.byLang[lang]) == 0 {
		lang = 1 - lang
	}
	adv := &g.advs[g.byLang[lang][r.IntN(len(g.byLang[lang]))]]
	id := "GEN.1." + strconv.Itoa(i)
	if r.IntN(16) == 0 && g.nRecent[lang] > 0 {
		// Another shop's offer of a product seen shortly before.
		orig := &ads[g.recent[lang][r.IntN(min(g.nRecent[lang], len(g.recent[lang])))]]
		*a = *orig
		a.ID = id
		a.Advertiser = adv.domain
		a.Landing = adv.landing + id[6:]
		a.Currency = adv.currency
		a.Markets = g.markets(adv.region)
		a.BidMicros = g.bid()
		if a.PriceCents > 0 {
			a.PriceCents = a.PriceCents * int64(90+r.IntN(21)) / 100
		}
		return
	}
	g.recent[lang][g.nRecent[lang]%len(g.recent[lang])] = i
	g.nRecent[lang]++

	ci := adv.cat
	if r.IntN(2) == 0 {
		ci = r.IntN(len(genCategories))
	}
	c := &genCategories[ci]
	german := lang == 1
	brand := c.brands[r.IntN(len(c.brands))]
	colour := r.IntN(len(genColoursEN))
	f1 := r.IntN(len(c.enFeat))
	f2 := (f1 + 1 + r.IntN(len(c.enFeat)-1)) % len(c.enFeat)
	noun := r.IntN(len(c.enNoun))

	// One allocation carries title, model, description and landing page.
	b := g.buf[:0]
	b = append(b, brand...)
	b = append(b, ' ')
	modelStart := len(b)
	b = append(b, c.modelPrefix[r.IntN(len(c.modelPrefix))]...)
	b = strconv.AppendInt(b, int64(100+r.IntN(9900)), 10)
	if r.IntN(3) == 0 {
		b = append(b, "ABEKMSX"[r.IntN(7)])
	}
	modelEnd := len(b)
	b = append(b, ' ')
	if german {
		b = append(b, c.deNoun[noun]...)
		b = append(b, ", "...)
		b = append(b, genColoursDE[colour]...)
	} else {
		b = append(b, c.enNoun[noun]...)
		b = append(b, ", "...)
		b = append(b, genColoursEN[colour]...)
	}
	titleEnd := len(b)
	if german {
		b = append(b, c.deNoun[noun]...)
		b = append(b, " von "...)
		b = append(b, brand...)
		b = append(b, " mit "...)
		b = append(b, c.deFeat[f1]...)
		b = append(b, " und "...)
		b = append(b, c.deFeat[f2]...)
		b = append(b, ", "...)
		b = append(b, genAdjDE[r.IntN(len(genAdjDE))]...)
		b = append(b, '.')
	} else {
		b = append(b, genAdjEN[r.IntN(len(genAdjEN))]...)
		b = append(b, ' ')
		b = append(b, c.en...)
		b = append(b, " by "...)
		b = append(b, brand...)
		b = append(b, " with "...)
		b = append(b, c.enFeat[f1]...)
		b = append(b, " and "...)
		b = append(b, c.enFeat[f2]...)
		b = append(b, '.')
	}
	descEnd := len(b)
	b = append(b, adv.landing...)
	b = append(b, id[6:]...)
	g.buf = b
	s := string(b)

	*a = match.Ad{
		ID: id, Kind: match.KindProduct,
		Title: s[:titleEnd], Model: s[modelStart:modelEnd], Description: s[titleEnd:descEnd],
		Landing: s[descEnd:], Manufacturer: brand, Advertiser: adv.domain,
		Markets: g.markets(adv.region), BidMicros: g.bid(),
	}
	if german {
		a.Keywords, a.Category = g.kw[ci][1], c.de
	} else {
		a.Keywords, a.Category = g.kw[ci][0], c.en
	}
	if r.IntN(10) < 9 {
		a.GTIN = g.gtin(german)
	}
	if r.IntN(10) < 9 {
		lo, hi := math.Log(float64(c.minCents)), math.Log(float64(c.maxCents))
		p := int64(math.Exp(lo + r.Float64()*(hi-lo)))
		a.PriceCents = max(p/100*100+[...]int64{99, 0, 49, 95}[r.IntN(4)], 99)
		a.Currency = adv.currency
	}
	if r.IntN(10) < 7 {
		a.Logo = g.logos[brand]
	}
}

// gtin returns a GTIN-13 with a valid check digit and a GS1 prefix of the
// region (40-44 Germany, 50 UK, 00-09 US and Canada).
func (g *generator) gtin(german bool) string {
	var b [13]byte
	if german {
		b[0], b[1] = '4', byte('0'+g.rng.IntN(5))
	} else if g.rng.IntN(2) == 0 {
		b[0], b[1] = '5', '0'
	} else {
		b[0], b[1] = '0', byte('0'+g.rng.IntN(10))
	}
	x := g.rng.Uint64()
	for k := 2; k < 12; k++ {
		b[k] = byte('0' + x%10)
		x /= 10
	}
	b[12] = catalog.GTINCheckDigit(string(b[:12]))
	return string(b[:])
}

// slug turns a name into lower-case ASCII words joined by '-': "De'Longhi"
// -> "delonghi", "Ultimate Ears" -> "ultimate-ears", "Müller & Söhne" ->
// "mueller-soehne".
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		var rep string
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			rep = string(r)
		case r == 'ä':
			rep = "ae"
		case r == 'ö':
			rep = "oe"
		case r == 'ü':
			rep = "ue"
		case r == 'ß':
			rep = "ss"
		case r == 'é' || r == 'è' || r == 'ê':
			rep = "e"
		case r == 'á' || r == 'à' || r == 'â' || r == 'å':
			rep = "a"
		case r == 'ó' || r == 'ò' || r == 'ô' || r == 'ø':
			rep = "o"
		case r == '\'' || r == '’' || r == '®' || r == '™' || r == '.':
			continue
		default:
			dash = b.Len() > 0
			continue
		}
		if dash {
			b.WriteByte('-')
			dash = false
		}
		b.WriteString(rep)
	}
	return b.String()
}
