// Package match is adlink's ad matcher: catalog types, text normalisation, the
// flat inverted index (which is also the shard format), query evaluation,
// ranking and the JSON of link entries.
//
// It does no I/O, reads no clock and keeps no globals, so the server and the
// WebAssembly module built from it give byte-identical answers. It imports
// nothing heavy (no fmt, no reflection-based JSON, no x/text tables) because
// it is compiled into the module every publisher page downloads.
package match

// Kind is the type of an ad: a merchant-level advertiser link, a product
// offer or a coupon.
type Kind uint8

// The ad kinds. Their names are the seed's adType values.
const (
	KindAdvertiser Kind = iota
	KindProduct
	KindCoupon
	numKinds
)

var kindNames = [numKinds]string{"advertiser", "product", "coupon"}

// String returns the kind's name as it appears in adType and ad_type.
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "unknown"
}

// ParseKind reads a kind name; ok is false for anything else.
// It runs once a request; noinline: module size, see docs/PERFORMANCE.md.
//
//go:noinline
func ParseKind(s string) (Kind, bool) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), true
		}
	}
	return 0, false
}

// Kinds is a set of kinds; the zero value means "all kinds".
type Kinds uint8

// Add returns the set with k added.
func (s Kinds) Add(k Kind) Kinds { return s | 1<<k }

// Has reports whether k is in the set; the empty set holds every kind.
func (s Kinds) Has(k Kind) bool { return s == 0 || s&(1<<k) != 0 }

// Market is where an ad may run: an ISO 3166 alpha-2 country and an ISO 639-1
// language, both lower case ("de", "de").
type Market struct {
	Country string
	Lang    string
}

// String returns the market as "lang-COUNTRY" ("de-DE"), as catalog feeds
// write it; a country alone, the key of a country's own shard, as
// "COUNTRY" ("CH").
func (m Market) String() string {
	if m.Lang == "" {
		return upper(m.Country)
	}
	return m.Lang + "-" + upper(m.Country)
}

// ParseMarket reads "de-DE" (any case, '-' or '_'); ok is false otherwise.
func ParseMarket(s string) (Market, bool) {
	if len(s) != 5 || (s[2] != '-' && s[2] != '_') {
		return Market{}, false
	}
	l, c := lower(s[:2]), lower(s[3:])
	if !isAlpha2(l) || !isAlpha2(c) {
		return Market{}, false
	}
	return Market{Country: c, Lang: l}, true
}

func isAlpha2(s string) bool {
	return len(s) == 2 && s[0] >= 'a' && s[0] <= 'z' && s[1] >= 'a' && s[1] <= 'z'
}

// Ad is one entry of the catalog, as feeds describe it. The index stores it
// in a flat, compact form; Index.Ad gives it back.
type Ad struct {
	// ID is the seed's adId: the advertiser's domain for advertiser ads
	// ("handy-bestkauf.de"), NETWORK.N.ID for products ("AMAZON.1.B00JVL2X1I").
	ID   string
	Kind Kind
	// Title is shown as the link's text.
	Title string
	// Keywords are the phrases the ad bids on (advertisers) or is known by
	// (products: "handy", "smartphone"). Brand, model and category also count
	// as criteria for products.
	Keywords     []string
	Manufacturer string
	Model        string
	Category     string
	Description  string
	GTIN         string
	// PriceCents is the price in the currency's minor unit; 0 means no price.
	PriceCents int64
	Currency   string
	// Logo is the logo or image URL. "{dim}" in it is replaced by the
	// requested size ("90x90"); without it the URL is used as is.
	Logo string
	// Landing is where a click on the ad lands; only the catalog sets it.
	Landing string
	// Advertiser is the domain of the merchant behind the ad.
	Advertiser string
	Markets    []Market
	// BidMicros is the bid per click in millionths of the currency unit.
	BidMicros int64
}

func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}
