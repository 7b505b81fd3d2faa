//go:build !wasip1

package contract

import "github.com/adlink/adlink/match"

// ServerOptions returns what Options returns, options that write the same
// link entries byte for byte, for the server: the click URL parameters
// that are the request's (type, api_key, site_id, yk_tag, tok) are escaped
// once here, not once an entry. Signatures are computed as Options does,
// over the same query bytes. The module keeps Options alone, as this code
// would cost it bytes.
func (l Links) ServerOptions() match.LinkOptions {
	o := l.Options()
	// One buffer: "type=<t>&adId=", then "&api_key=<k>&site_id=<s>&criterionId=",
	// then "&yk_tag=<y>&tok=<tok>" (each part only when set).
	b := append(make([]byte, 0, 96+len(l.APIKey)+len(l.SiteID)+len(l.YkTag)+len(l.Tok)), "type="...)
	b = append(AppendQueryEscape(b, l.Type), "&adId="...)
	head := len(b)
	b = append(AppendQueryEscape(append(b, "&api_key="...), l.APIKey), "&site_id="...)
	b = append(AppendQueryEscape(b, l.SiteID), "&criterionId="...)
	mid := len(b)
	if l.YkTag != "" {
		b = AppendQueryEscape(append(b, "&yk_tag="...), l.YkTag)
	}
	if l.Tok != "" {
		b = append(append(b, "&tok="...), l.Tok...)
	}
	sign := l.Sign
	o.ClickQuery = func(dst []byte, adID, adType, criterion string) []byte {
		start := len(dst)
		dst = AppendQueryEscape(append(dst, b[:head]...), adID)
		dst = AppendQueryEscape(append(dst, "&adType="...), adType)
		dst = AppendQueryEscape(append(dst, b[head:mid]...), criterion)
		dst = append(dst, b[mid:]...)
		if sign != nil {
			dst = sign(dst, dst[start:])
		}
		return dst
	}
	return o
}
