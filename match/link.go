package match

import (
	"strconv"
	"unicode/utf8"
)

// Fields is the set of extra per-entry fields a request asked for.
type Fields uint16

// The extra fields of a link entry.
const (
	FieldPrice Fields = 1 << iota
	FieldManufacturer
	FieldLogo
	FieldAdType
	FieldDescription
	FieldAdvertiser
	FieldGTIN
	FieldCategory
)

// ParseField reads one fields value; ok is false for an unknown name
// ("logoad_type", as the seed spells it, is logo and ad_type together).
// Not inlined: it runs once a request, and a copy in each caller costs
// the module bytes.
//
//go:noinline
func ParseField(s string) (Fields, bool) {
	switch s {
	case "price":
		return FieldPrice, true
	case "manufacturer":
		return FieldManufacturer, true
	case "logo":
		return FieldLogo, true
	case "ad_type":
		return FieldAdType, true
	case "logoad_type":
		return FieldLogo | FieldAdType, true
	case "description":
		return FieldDescription, true
	case "advertiser":
		return FieldAdvertiser, true
	case "gtin":
		return FieldGTIN, true
	case "category":
		return FieldCategory, true
	}
	return 0, false
}

// LogoDims are the logo.dim values, as the seed spells them.
var LogoDims = []string{"75X75", "90X90", "100X100", "125X125", "150X150"}

// DefaultLogoDim is the logo size when fields asks for logo without logo.dim.
const DefaultLogoDim = "100X100"

// The contexts of a request, as the seed spells them (the type values of
// its click URLs): a page's entries can show as a link or a widget.
const (
	ContextSearch = "search"
	ContextPage   = "intext"
)

// LinkOptions are the request's values that go into each link entry.
type LinkOptions struct {
	// Context is ContextSearch or ContextPage.
	Context string
	Fields  Fields
	// LogoDim is a value of LogoDims; it also adds the logo field.
	LogoDim string
	// ClickBase starts every click URL, up to its query:
	// "https://r.example.com/v1/redirect?". Package contract sets it and
	// ClickQuery to write the seed's click URLs.
	ClickBase string
	// ClickQuery, when set, appends the query of the click URL of the ad
	// adID of kind adType, found for criterion, to dst: what a URL query
	// holds unescaped, and '&' (as it is, or as JSON's \u0026).
	ClickQuery func(dst []byte, adID, adType, criterion string) []byte
}

// AppendResponse appends {"link":[...]} for hits to dst.
//
// On an index in fragments (EncodePage) that lacks some of the hits'
// strings, it appends {"need":[k,...]} instead: the fragments to load
// (Missing, LoadFragment) before the same request is answered.
func (ix *Index) AppendResponse(dst []byte, hits []Hit, o *LinkOptions) []byte {
	if need := ix.Missing(hits); need != nil {
		dst = append(dst, `{"need":[`...)
		for i, k := range need {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, int64(k), 10)
		}
		return append(dst, "]}"...)
	}
	dst = append(dst, `{"link":`...)
	dst = ix.AppendLinks(dst, hits, o)
	return append(dst, '}')
}

// AppendLinks appends the JSON array of link entries for hits to dst. Entry
// fields come in a fixed order; extra fields appear only when asked for and
// only when the ad has them.
func (ix *Index) AppendLinks(dst []byte, hits []Hit, o *LinkOptions) []byte {
	dst = append(dst, '[')
	if touchHits(ix, hits); len(hits) == 0 {
		return append(dst, ']')
	}
	q := make([]byte, 0, 256)
	for i := range hits {
		if i > 0 {
			dst = append(dst, ',')
		}
		h := &hits[i]
		a := ix.rec(h.Ad)
		kind := a.kind()
		dst = append(dst, `{"title":`...)
		dst = appendJSONString(dst, ix.field(h.Ad, fTitle))
		dst = append(dst, `,"keywords":[`...)
		for j, k := range h.Keywords {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
		}
		dst = append(dst, `],"ad":"`...)
		dst = appendJSONChars(dst, o.ClickBase)
		if o.ClickQuery != nil {
			// '&' is the one byte of the query that JSON escapes.
			q = o.ClickQuery(q[:0], ix.field(h.Ad, fID), kind.String(), h.Criterion)
			for rest := q; len(rest) > 0; {
				k := indexAmp(rest)
				if k < 0 {
					dst = append(dst, rest...)
					break
				}
				dst = append(dst, rest[:k]...)
				dst = append(dst, `\u0026`...)
				rest = rest[k+1:]
			}
		}
		dst = append(dst, '"')

		logo := ix.field(h.Ad, fLogo)
		dst = append(dst, `,"display_type":`...)
		switch {
		case kind == KindAdvertiser || logo == "":
			dst = append(dst, `["link"]`...)
		case o.Context == ContextPage:
			dst = append(dst, `["link","widget"]`...)
		default:
			dst = append(dst, `["widget"]`...)
		}
		f := o.Fields
		if price := ix.price(h.Ad); f&FieldPrice != 0 && price > 0 {
			dst = append(dst, `,"price":{"amount":"`...)
			dst = appendCents(dst, price)
			dst = append(dst, `","currency":`...)
			dst = appendJSONString(dst, ix.field(h.Ad, fCurrency))
			dst = append(dst, '}')
		}
		dst = appendField(dst, f&FieldManufacturer != 0, "manufacturer", ix.field(h.Ad, fManufacturer))
		dst = appendField(dst, f&FieldDescription != 0, "description", ix.field(h.Ad, fDescription))
		dst = appendField(dst, f&FieldAdvertiser != 0, "advertiser", ix.field(h.Ad, fAdvertiser))
		dst = appendField(dst, f&FieldGTIN != 0, "gtin", ix.field(h.Ad, fGTIN))
		dst = appendField(dst, f&FieldCategory != 0, "category", ix.field(h.Ad, fCategory))
		dst = appendField(dst, f&FieldAdType != 0, "ad_type", kind.String())
		if (f&FieldLogo != 0 || o.LogoDim != "") && logo != "" {
			dim := o.LogoDim
			if dim == "" {
				dim = DefaultLogoDim
			}
			dst = append(dst, `,"logo":"`...)
			dst = appendLogoURL(dst, logo, dim)
			dst = append(dst, '"')
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// LogoURL puts a logo.dim value ("90X90") into a catalog logo URL's "{dim}"
// placeholder, as "90x90".
func LogoURL(tmpl, dim string) string {
	i := indexString(tmpl, dimPlaceholder)
	if i < 0 {
		return tmpl
	}
	return tmpl[:i] + lower(dim) + tmpl[i+len(dimPlaceholder):]
}

const dimPlaceholder = "{dim}"

// appendLogoURL appends the escaped contents of the JSON string of
// LogoURL(tmpl, dim) without building that string: a response has one per
// ad, and an allocation costs the WebAssembly module dearly.
func appendLogoURL(dst []byte, tmpl, dim string) []byte {
	i := indexString(tmpl, dimPlaceholder)
	if i < 0 {
		return appendJSONChars(dst, tmpl)
	}
	j := i + len(dimPlaceholder)
	if i > 0 && tmpl[i-1] >= utf8.RuneSelf || j < len(tmpl) && tmpl[j] >= utf8.RuneSelf {
		// The pieces might decode otherwise apart than together.
		return appendJSONChars(dst, LogoURL(tmpl, dim))
	}
	dst = appendJSONChars(dst, tmpl[:i])
	n := len(dst)
	dst = appendJSONChars(dst, dim)
	// lower changes only A-Z, which JSON leaves as they are and which no
	// escape sequence contains.
	for k := n; k < len(dst); k++ {
		if c := dst[k]; c >= 'A' && c <= 'Z' {
			dst[k] = c + 'a' - 'A'
		}
	}
	return appendJSONChars(dst, tmpl[j:])
}

func appendField(dst []byte, want bool, name, v string) []byte {
	if !want || v == "" {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return appendJSONString(dst, v)
}

// appendCents writes minor units as a decimal string: 1999 -> "19.99".
func appendCents(dst []byte, c int64) []byte {
	dst = strconv.AppendInt(dst, c/100, 10)
	dst = append(dst, '.')
	r := c % 100
	if r < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, r, 10)
}

// AppendJSONString appends s as a JSON string as the server's encoder
// writes it: the error bodies of the server and the module use it. Not
// inlined: error bodies are rare, and a copy in each caller costs the
// module bytes.
//
//go:noinline
func AppendJSONString(dst []byte, s string) []byte { return appendJSONString(dst, s) }

// appendJSONString appends s as a JSON string. Like encoding/json it escapes
// <, > and & (so a response is safe inside a script tag), U+2028 and U+2029
// (so JSONP is valid JavaScript), and replaces invalid UTF-8 with U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendJSONChars(dst, s)
	return append(dst, '"')
}

// jsonSafe marks the ASCII bytes that stand for themselves in our JSON.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONChars appends the escaped contents of a JSON string, copying
// runs of plain bytes at once.
func appendJSONChars(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && jsonPlain8(load8(s, i)) {
			i += 8
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || r == 0x2028 || r == 0x2029 {
			dst = append(dst, s[start:i]...)
			if r == utf8.RuneError {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&15])
			}
			start = i + n
		}
		i += n
	}
	return append(dst, s[start:]...)
}
