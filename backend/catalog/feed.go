package catalog

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/match"
)

// record is one feed line as written. The JSON names are the feed's field
// names and, for CSV, its column names.
type record struct {
	Kind         string   `json:"kind"`
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Keywords     []string `json:"keywords,omitempty"`
	Manufacturer string   `json:"manufacturer,omitempty"`
	Model        string   `json:"model,omitempty"`
	Category     string   `json:"category,omitempty"`
	Description  string   `json:"description,omitempty"`
	GTIN         string   `json:"gtin,omitempty"`
	Price        decimal  `json:"price,omitempty"`
	Currency     string   `json:"currency,omitempty"`
	Logo         string   `json:"logo,omitempty"`
	Landing      string   `json:"landing"`
	Advertiser   string   `json:"advertiser,omitempty"`
	Markets      []string `json:"markets"`
	Bid          decimal  `json:"bid,omitempty"`
}

// columns are the CSV header names, in the order WriteCSV writes them.
var columns = []string{
	"kind", "id", "title", "keywords", "manufacturer", "model", "category", "description",
	"gtin", "price", "currency", "logo", "landing", "advertiser", "markets", "bid",
}

// requiredColumns must be in every CSV header.
var requiredColumns = []string{"kind", "id", "title", "landing", "markets"}

// decimal is a price or bid as the feed writes it: a JSON string ("19.99")
// or, leniently, a JSON number (19.99), kept as its exact text so no
// floating point rounding ever touches money. Any other JSON value is kept
// as its text too, so that the error names the field (see convert).
type decimal string

// UnmarshalJSON keeps the literal text of the value; null is no value.
func (d *decimal) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		*d = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*d = decimal(s)
	default:
		*d = decimal(b)
	}
	return nil
}

// readJSONL reads one JSON object per line; blank lines are skipped.
func (p *parser) readJSONL(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var key lineKey
		if p.lines != nil {
			key = p.lines.key(b)
			if a, ok := p.lines.known(key); ok {
				n := len(p.ads)
				p.keep(line, a, len(p.errs)+p.dropped)
				if len(p.ads) > n {
					p.lines.note(key, n)
				}
				continue
			}
		}
		var rec record
		if field, msg, ok := decodeLine(b, &rec); !ok {
			p.fail(line, field, msg)
			continue
		}
		n := len(p.ads)
		p.add(line, &rec)
		if p.lines != nil && len(p.ads) > n {
			p.lines.note(key, n)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			p.fail(line+1, "", fmt.Sprintf("line longer than %d bytes", maxLine))
		} else {
			p.fail(line+1, "", err.Error())
		}
	}
}

// decodeLine decodes one JSON line strictly: an unknown field (a typo such
// as "titel") or trailing data is an error, reported with the field at fault
// when the decoder names it.
func decodeLine(b []byte, rec *record) (field, msg string, ok bool) {
	defer func() {
		// A decoder bug on hostile input must cost one line, not the server.
		if r := recover(); r != nil {
			field, msg, ok = "", fmt.Sprintf("unreadable JSON (%v)", r), false
		}
	}()
	if b[0] != '{' {
		return "", "not a JSON object", false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(rec); err != nil {
		field, msg := jsonError(err)
		return field, msg, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", "invalid JSON: data after the object", false
	}
	return "", "", true
}

// jsonError turns a decoding error into the feed field it is about and a
// message in the feed's terms rather than Go's.
func jsonError(err error) (field, msg string) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		field, _, _ = strings.Cut(te.Field, ".")
		switch field {
		case "keywords", "markets":
			return field, "want a list of strings, got a JSON " + te.Value + " in it"
		case "price", "bid":
			return field, "want a decimal string such as \"19.99\""
		}
		return field, "want a string, got a JSON " + te.Value
	}
	msg = strings.TrimPrefix(err.Error(), "json: ")
	if rest, ok := strings.CutPrefix(msg, "unknown field \""); ok {
		if j := strings.IndexByte(rest, '"'); j >= 0 {
			return rest[:j], "unknown field: want one of " + strings.Join(columns, ", ")
		}
	}
	return "", "invalid JSON: " + msg
}

// readCSV reads a CSV feed whose first row names the columns.
func (p *parser) readCSV(r io.Reader) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return
	}
	if err != nil {
		p.fail(1, "", "invalid CSV header: "+csvMessage(err))
		return
	}
	index := make(map[string]int, len(header))
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		switch {
		case !slices.Contains(columns, h):
			p.fail(1, h, "unknown column: want "+strings.Join(columns, ", "))
		case index[h] != 0:
			p.fail(1, h, "column appears twice")
		default:
			index[h] = i + 1 // 0 means absent
		}
	}
	for _, c := range requiredColumns {
		if index[c] == 0 {
			p.fail(1, c, "required column missing")
		}
	}
	if len(p.errs) > 0 {
		return
	}
	get := func(row []string, col string) string {
		if i := index[col]; i > 0 {
			return row[i-1]
		}
		return ""
	}
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return
		}
		if err != nil {
			// FieldPos is only defined after a successful Read.
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.StartLine
			}
			p.fail(line, "", "invalid CSV: "+csvMessage(err))
			if pe == nil || pe.Err != csv.ErrFieldCount {
				return // the reader cannot resynchronise after a quoting error
			}
			continue
		}
		line, _ := cr.FieldPos(0)
		rec := record{
			Kind:         get(row, "kind"),
			ID:           get(row, "id"),
			Title:        get(row, "title"),
			Keywords:     splitList(get(row, "keywords")),
			Manufacturer: get(row, "manufacturer"),
			Model:        get(row, "model"),
			Category:     get(row, "category"),
			Description:  get(row, "description"),
			GTIN:         get(row, "gtin"),
			Price:        decimal(get(row, "price")),
			Currency:     get(row, "currency"),
			Logo:         get(row, "logo"),
			Landing:      get(row, "landing"),
			Advertiser:   get(row, "advertiser"),
			Markets:      splitList(get(row, "markets")),
			Bid:          decimal(get(row, "bid")),
		}
		p.add(line, &rec)
	}
}

func csvMessage(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// splitList reads a '|'-separated CSV cell; an empty cell is no items.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return strings.Split(s, "|")
}

// toRecord writes an ad back in feed form.
func toRecord(a *match.Ad) record {
	r := record{
		Kind:         a.Kind.String(),
		ID:           a.ID,
		Title:        a.Title,
		Keywords:     a.Keywords,
		Manufacturer: a.Manufacturer,
		Model:        a.Model,
		Category:     a.Category,
		Description:  a.Description,
		GTIN:         a.GTIN,
		Currency:     a.Currency,
		Logo:         a.Logo,
		Landing:      a.Landing,
		Advertiser:   a.Advertiser,
	}
	if a.PriceCents > 0 {
		r.Price = decimal(formatDecimal(a.PriceCents, 2))
	}
	if a.BidMicros > 0 {
		r.Bid = decimal(formatDecimal(a.BidMicros, 6))
	}
	r.Markets = make([]string, len(a.Markets))
	for i, m := range a.Markets {
		r.Markets[i] = m.String()
	}
	return r
}

// WriteJSONL writes ads as a JSON-lines feed that Load reads back into the
// same ads. A price of 0 is written as no price.
func WriteJSONL(w io.Writer, ads []match.Ad) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range ads {
		if err := enc.Encode(toRecord(&ads[i])); err != nil {
			return fmt.Errorf("ad %q: %w", ads[i].ID, err)
		}
	}
	return bw.Flush()
}

// WriteCSV writes ads as a CSV feed with a header row that Load reads back
// into the same ads. A keyword containing '|' cannot be written in CSV and
// is an error.
func WriteCSV(w io.Writer, ads []match.Ad) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(columns); err != nil {
		return err
	}
	row := make([]string, len(columns))
	for i := range ads {
		r := toRecord(&ads[i])
		for _, k := range r.Keywords {
			if strings.Contains(k, "|") {
				return fmt.Errorf("ad %q: keyword %q contains '|', which CSV feeds use as separator", r.ID, k)
			}
		}
		row = append(row[:0], r.Kind, r.ID, r.Title, strings.Join(r.Keywords, "|"), r.Manufacturer,
			r.Model, r.Category, r.Description, r.GTIN, string(r.Price), r.Currency, r.Logo,
			r.Landing, r.Advertiser, strings.Join(r.Markets, "|"), string(r.Bid))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
