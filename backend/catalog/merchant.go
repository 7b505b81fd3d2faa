package catalog

import (
	"bufio"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"

	"github.com/adlink/adlink/match"
)

// The Google Merchant Center product feed: RSS 2.0 or Atom 1.0 with the
// product attributes in the g: namespace, or a tab-separated file whose
// header names the same attributes. Attributes adlink has no use for
// (shipping, tax, custom labels, ...) are skipped, as Merchant Center
// feeds carry many; any other is skipped too, and told of
// (merchant_attrs.go).

// merchantNS is the namespace of the g: attributes.
const merchantNS = "http://base.google.com/ns/1.0"

// isMerchantNS reports whether an element's namespace is that of the g:
// attributes: its URI however prefixed, or a g: prefix the feed forgot to
// declare, which can mean nothing else.
func isMerchantNS(space string) bool {
	return space == merchantNS || space == "g" || space == "https://base.google.com/ns/1.0"
}

// merchantFields are the feed's names for the fields whose errors checkAd
// reports in adlink's terms.
var merchantFields = map[string]string{
	"landing": "link", "logo": "image_link", "manufacturer": "brand", "model": "mpn",
	"category": "product_type", "markets": "market",
}

// feedDefaults takes the advertiser and market a feed names for all its
// items (the channel's link and language), where the source's options
// have not named them.
func (p *parser) feedDefaults(link, language string) {
	if link != "" && p.defAdvertiser == "" {
		if u, err := url.Parse(strings.TrimSpace(link)); err == nil && u.Hostname() != "" {
			p.defAdvertiser = strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
		}
	}
	if language != "" && len(p.defMarkets) == 0 {
		if _, ok := match.ParseMarket(strings.TrimSpace(language)); ok {
			p.defMarkets = []string{strings.TrimSpace(language)}
		}
	}
}

// readMerchantXML reads a Merchant Center RSS 2.0 or Atom feed, one item
// or entry at a time.
func (p *parser) readMerchantXML(r io.Reader) {
	p.rename = merchantFields
	check := &utf8Check{r: r}
	dec := xml.NewDecoder(check)
	// Shops write HTML's named characters (&nbsp;, &auml;) into their XML.
	dec.Entity = xml.HTMLEntity
	dec.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		switch strings.ToLower(strings.TrimSpace(label)) {
		case "utf8", "us-ascii", "ascii":
			// UTF-8 misspelt, or its ASCII subset: read as UTF-8, which
			// the decoder checks.
			return in, nil
		}
		enc := singleByte(label)
		if enc == nil {
			return nil, fmt.Errorf("declared encoding %q is not supported: want UTF-8, ISO-8859-1, ISO-8859-15 or windows-1252", label)
		}
		check.declared = label
		return enc.NewDecoder().Reader(in), nil
	}
	var path []string // the open elements' local names
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			p.xmlFail(dec, err)
			return
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			if len(path) == 0 {
				if name != "rss" && name != "feed" {
					line, _ := dec.InputPos()
					p.fail(line, "", fmt.Sprintf("<%s> is not a feed: want an RSS 2.0 <rss> or an Atom <feed> of Merchant Center items", name))
					return
				}
				root = name
			}
			if root == "rss" && name == "item" && len(path) == 1 {
				// Read, it would be an empty feed, and no error.
				line, _ := dec.InputPos()
				p.fail(line, "", "<item> outside <channel>: RSS 2.0 puts its items in <rss><channel>")
				return
			}
			item := root == "rss" && name == "item" && len(path) == 2 || root == "feed" && name == "entry" && len(path) == 1
			if item {
				line, _ := dec.InputPos()
				var it merchantItem
				if err := readItem(dec, &it); err != nil {
					p.xmlFail(dec, err)
					return
				}
				for _, n := range it.unknown {
					p.unknownAttr(line, n)
				}
				p.addMerchant(line, &it)
				continue
			}
			channel := root == "rss" && len(path) == 2 || root == "feed" && len(path) == 1
			if channel && !isMerchantNS(t.Name.Space) && (name == "link" || name == "language") {
				var v textOrHref
				if err := dec.DecodeElement(&v, &t); err != nil {
					p.xmlFail(dec, err)
					return
				}
				if name == "link" {
					p.feedDefaults(v.value(), "")
				} else {
					p.feedDefaults("", v.Text)
				}
				continue
			}
			path = append(path, name)
		case xml.EndElement:
			path = path[:len(path)-1]
		}
	}
	if root == "" {
		p.fail(1, "", "no XML elements: want an RSS 2.0 or Atom feed")
	}
	if check.mislabelled() {
		p.fail(1, "encoding", fmt.Sprintf("declared %q but the feed is UTF-8: declare encoding=\"UTF-8\"", check.declared))
	}
}

// textOrHref is an element's text, or an Atom link's href.
type textOrHref struct {
	Text string `xml:",chardata"`
	Href string `xml:"href,attr"`
	Rel  string `xml:"rel,attr"`
}

func (v *textOrHref) value() string {
	if v.Href != "" {
		if v.Rel != "" && v.Rel != "alternate" {
			return ""
		}
		return v.Href
	}
	return v.Text
}

// readItem reads the children of an item or entry up to its end: the g:
// attributes, and RSS's or Atom's own title, link and description where
// the g: ones are missing.
func readItem(dec *xml.Decoder, it *merchantItem) error {
	var plain merchantItem
	for {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			v, err := elementText(dec, t)
			if err != nil {
				return err
			}
			name := t.Name.Local
			if isMerchantNS(t.Name.Space) {
				if n := merchantToken(name); !it.set(n, v.Text) && !googleAttrs[n] { // <g:Image_Link> too
					it.unknown = append(it.unknown, n)
				}
				continue
			}
			switch name {
			case "summary", "content":
				name = "description"
			case "id":
				continue // Atom's entry id is a URI, not the product's id
			}
			plain.set(name, v.value())
		case xml.EndElement:
			for _, f := range []struct{ dst, src *string }{
				{&it.title, &plain.title}, {&it.link, &plain.link}, {&it.description, &plain.description},
			} {
				if *f.dst == "" {
					*f.dst = *f.src
				}
			}
			return nil
		}
	}
}

// elementText reads an attribute element up to its end: its text, with
// the text of elements inside it (a description's <p> and <b>) kept
// rather than dropped, and an Atom link's href and rel.
func elementText(dec *xml.Decoder, start xml.StartElement) (textOrHref, error) {
	var v textOrHref
	for _, a := range start.Attr {
		switch {
		case a.Name.Space == "" && a.Name.Local == "href":
			v.Href = a.Value
		case a.Name.Space == "" && a.Name.Local == "rel":
			v.Rel = a.Value
		}
	}
	var b strings.Builder
	for depth := 0; ; {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				return v, io.ErrUnexpectedEOF
			}
			return v, err
		}
		switch t := tok.(type) {
		case xml.CharData:
			b.Write(t)
		case xml.StartElement:
			depth++
			b.WriteByte(' ')
		case xml.EndElement:
			if depth == 0 {
				v.Text = b.String()
				return v, nil
			}
			depth--
			b.WriteByte(' ')
		}
	}
}

// xmlFail reports a syntax error where the decoder stopped; nothing after
// it can be read.
func (p *parser) xmlFail(dec *xml.Decoder, err error) {
	line, _ := dec.InputPos()
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		line = se.Line
		p.fail(line, "", "invalid XML: "+se.Msg)
		return
	}
	p.fail(line, "", "invalid XML: "+err.Error())
}

// singleByte is the decoder of a declared single-byte encoding, or nil.
func singleByte(label string) *charmap.Charmap {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1":
		return charmap.ISO8859_1
	case "iso-8859-15", "iso8859-15", "latin9", "latin-9":
		return charmap.ISO8859_15
	case "windows-1252", "cp1252":
		return charmap.Windows1252
	}
	return nil
}

// utf8Check watches the raw bytes of a feed that declares a single-byte
// encoding: when every byte above ASCII is part of a valid UTF-8 sequence,
// the declaration is wrong and every accented letter would be read as two.
type utf8Check struct {
	r        io.Reader
	declared string
	carry    []byte // an incomplete sequence at the end of the last read
	high     bool   // a byte above ASCII was seen
	invalid  bool   // a sequence that is not UTF-8 was seen
}

func (c *utf8Check) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if c.invalid || n == 0 {
		return n, err
	}
	buf := b[:n]
	if len(c.carry) > 0 {
		buf = append(c.carry, buf...)
		c.carry = nil
	}
	for i := 0; i < len(buf); {
		if buf[i] < utf8.RuneSelf {
			i++
			continue
		}
		c.high = true
		r, size := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(buf[i:]) && err == nil {
				c.carry = append([]byte(nil), buf[i:]...)
				break
			}
			c.invalid = true
			break
		}
		i += size
	}
	return n, err
}

func (c *utf8Check) mislabelled() bool {
	return c.declared != "" && c.high && !c.invalid
}

// merchantColumns are the tab-separated feed's columns that must be there.
var merchantColumns = []string{"id", "title", "link"}

// readMerchantTSV reads a Merchant Center tab-separated feed: a header row
// of attribute names (with or without "g:"), then one item per row.
func (p *parser) readMerchantTSV(r io.Reader) {
	p.rename = merchantFields
	br := bufio.NewReader(r)
	if head, _ := br.Peek(3); string(head) == "\ufeff" {
		br.Discard(3) // before a quoted first name, too
	}
	cr := csv.NewReader(br)
	cr.Comma = '\t'
	cr.LazyQuotes = true // merchants write quotes in titles without escaping them
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return
	}
	if err != nil {
		p.fail(1, "", "invalid TSV header: "+csvMessage(err))
		return
	}
	var names []string
	for i, h := range header {
		// "g:image_link", "Image_Link" and "image link" all name image_link.
		h = strings.TrimPrefix(merchantToken(h), "g:")
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		names = append(names, h)
		p.unknownAttr(1, h)
	}
	for _, c := range merchantColumns {
		found := false
		for _, n := range names {
			found = found || n == c
		}
		if !found {
			p.fail(1, c, "required column missing")
		}
	}
	if len(p.errs) > 0 {
		return
	}
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return
		}
		if err != nil {
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.StartLine
			}
			p.fail(line, "", "invalid TSV: "+csvMessage(err))
			return
		}
		line, _ := cr.FieldPos(0)
		if len(row) == 1 && strings.TrimSpace(row[0]) == "" {
			continue
		}
		for len(row) > len(names) && strings.TrimSpace(row[len(row)-1]) == "" {
			row = row[:len(row)-1] // a spreadsheet's empty cells past the last column
		}
		if len(row) > len(names) {
			p.fail(line, "", fmt.Sprintf("%d fields, but the header names %d", len(row), len(names)))
			continue
		}
		var it merchantItem
		for i, v := range row {
			it.set(names[i], v)
		}
		p.addMerchant(line, &it)
	}
}
