//go:build !wasip1

package match

import "bytes"

// AppendServerResponse appends what AppendResponse appends, byte for byte,
// as the server writes it: the click URLs' start escaped once for all the
// entries rather than once each, an entry's strings located in one pass
// over its record, and each click URL's query written straight into dst,
// its '&'s escaped in place. The module keeps AppendResponse alone, as
// this code would cost it bytes. An index in fragments (EncodePage, which
// only the module loads) is answered by AppendResponse.
func (ix *Index) AppendServerResponse(dst []byte, hits []Hit, o *LinkOptions) []byte {
	if ix.per != 0 {
		return ix.AppendResponse(dst, hits, o)
	}
	dst = append(dst, `{"link":[`...)
	if touchHits(ix, hits); len(hits) == 0 {
		return append(dst, "]}"...)
	}
	// The click URL's start, the same for every entry, and the longest
	// seen in practice fits the array: no allocation.
	var baseBuf [128]byte
	base := appendJSONChars(baseBuf[:0], o.ClickBase)
	for i := range hits {
		if i > 0 {
			dst = append(dst, ',')
		}
		h := &hits[i]
		kind := ix.ads[h.Ad].kind()
		r := &ix.recs[h.Ad]
		// Where each string starts: they lie field after field from r.str.
		var off [numStrFields + 1]uint32
		off[0] = r.str
		for f, n := range r.lens {
			off[f+1] = off[f] + n
		}
		str := func(f int) string { return ix.strs[off[f]:off[f+1]] }
		dst = append(dst, `{"title":`...)
		dst = appendJSONString(dst, str(fTitle))
		dst = append(dst, `,"keywords":[`...)
		for j, k := range h.Keywords {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
		}
		dst = append(dst, `],"ad":"`...)
		dst = append(dst, base...)
		if o.ClickQuery != nil {
			start := len(dst)
			dst = EscapeAmps(o.ClickQuery(dst, str(fID), kind.String(), h.Criterion), start)
		}
		dst = append(dst, '"')

		// From here on as AppendLinks writes it: a function for both cost
		// the module 246 bytes (305 as a method). TestAppendServerResponse
		// and FuzzAppendServerResponse hold the two writers to the same bytes.
		logo := str(fLogo)
		dst = append(dst, `,"display_type":`...)
		switch {
		case kind == KindAdvertiser || logo == "":
			dst = append(dst, `["link"]`...)
		case o.Context == ContextPage:
			dst = append(dst, `["link","widget"]`...)
		default:
			dst = append(dst, `["widget"]`...)
		}
		if f := o.Fields; f != 0 {
			if price := r.price(); f&FieldPrice != 0 && price > 0 {
				dst = append(dst, `,"price":{"amount":"`...)
				dst = appendCents(dst, price)
				dst = append(dst, `","currency":`...)
				dst = appendJSONString(dst, str(fCurrency))
				dst = append(dst, '}')
			}
			dst = appendField(dst, f&FieldManufacturer != 0, "manufacturer", str(fManufacturer))
			dst = appendField(dst, f&FieldDescription != 0, "description", str(fDescription))
			dst = appendField(dst, f&FieldAdvertiser != 0, "advertiser", str(fAdvertiser))
			dst = appendField(dst, f&FieldGTIN != 0, "gtin", str(fGTIN))
			dst = appendField(dst, f&FieldCategory != 0, "category", str(fCategory))
			dst = appendField(dst, f&FieldAdType != 0, "ad_type", kind.String())
		}
		if (o.Fields&FieldLogo != 0 || o.LogoDim != "") && logo != "" {
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
	return append(dst, "]}"...)
}

// EscapeAmps rewrites each '&' of dst[from:] as JSON's \u0026: the one
// byte of a click URL's query that our JSON escapes (the query's other
// bytes stand for themselves in it, LinkOptions.ClickQuery). A query that
// comes escaped (contract's Links.ServerOptions) is left as it is; else
// it is copied aside from its first '&' on, then written back in runs
// between its '&'s.
func EscapeAmps(dst []byte, from int) []byte {
	k := bytes.IndexByte(dst[from:], '&')
	if k < 0 {
		return dst
	}
	from += k
	var tmp [512]byte
	q := dst[from:]
	if len(q) > len(tmp) {
		q = append([]byte(nil), q...) // longer than any seen: rare
	} else {
		q = tmp[:copy(tmp[:], q)]
	}
	dst = dst[:from]
	for {
		k := bytes.IndexByte(q, '&')
		if k < 0 {
			return append(dst, q...)
		}
		dst = append(append(dst, q[:k]...), `\u0026`...)
		q = q[k+1:]
	}
}
