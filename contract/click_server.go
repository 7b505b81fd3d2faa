//go:build !wasip1

package contract

import "github.com/adlink/adlink/match"

// ServerOptions returns what Options returns, options that write the same
// link entries byte for byte, for the server: the click URL parameters
// that are the request's (type, api_key, site_id, yk_tag, tok) are escaped
// once here, not once an entry, and the click URL's query comes with its
// '&'s as JSON's \u0026, as the entry holds it, so the entry's writer
// copies it as it is. Signatures are computed as Options computes them,
// over the same query bytes, '&' and all. The module keeps Options alone,
// as this code would cost it bytes.
func (l Links) ServerOptions() match.LinkOptions {
	o := l.Options()
	// The request's parts of the query, each in its two spellings: as the
	// URL holds it, which the signature covers, and as JSON holds it.
	var raw, js clickParts
	raw.build(&l, "&")
	js.build(&l, jsonAmp)
	sign := l.Sign
	o.ClickQuery = func(dst []byte, adID, adType, criterion string) []byte {
		if sign == nil {
			return js.append(dst, adID, adType, criterion)
		}
		start := len(dst)
		dst = raw.append(dst, adID, adType, criterion)
		// The signed parameters hold no byte JSON escapes other than
		// '&' (Links.Sign).
		return match.EscapeAmps(sign(dst, dst[start:]), start)
	}
	return o
}

// jsonAmp is '&' in a JSON string as the link entries write it.
const jsonAmp = `\u0026`

// clickParts are a click URL query's parts that are the request's, its
// '&'s spelt amp: "type=<t>&adId=" (head), "&adType=" (kind),
// "&api_key=<k>&site_id=<s>&criterionId=" (mid), "&yk_tag=<y>&tok=<tok>"
// (tail, each only when set).
type clickParts struct {
	head, kind, mid, tail []byte
}

func (p *clickParts) build(l *Links, amp string) {
	p.head = append(AppendQueryEscape([]byte("type="), l.Type), amp+"adId="...)
	p.kind = []byte(amp + "adType=")
	p.mid = append(AppendQueryEscape([]byte(amp+"api_key="), l.APIKey), amp+"site_id="...)
	p.mid = append(AppendQueryEscape(p.mid, l.SiteID), amp+"criterionId="...)
	p.tail = nil
	if l.YkTag != "" {
		p.tail = AppendQueryEscape(append(p.tail, amp+"yk_tag="...), l.YkTag)
	}
	if l.Tok != "" {
		// The token goes in as it is (Options), '&' spelt amp.
		p.tail = append(p.tail, amp+"tok="...)
		for _, c := range []byte(l.Tok) {
			if c == '&' {
				p.tail = append(p.tail, amp...)
			} else {
				p.tail = append(p.tail, c)
			}
		}
	}
}

// append appends the query of ad adID's click URL: the escaped values
// hold no '&' (AppendQueryEscape writes it %26).
func (p *clickParts) append(dst []byte, adID, adType, criterion string) []byte {
	dst = AppendQueryEscape(append(dst, p.head...), adID)
	dst = AppendQueryEscape(append(dst, p.kind...), adType)
	dst = AppendQueryEscape(append(dst, p.mid...), criterion)
	return append(dst, p.tail...)
}
