package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/accounts"
)

// AppendJSON appends the report as a JSON object: the account, the range
// and its time zone, the groups, the columns, and the rows as objects
// with the columns' keys in the columns' order.
func AppendJSON(b []byte, acc accounts.Account, req Request, rows []Row) []byte {
	cols := req.Columns()
	b = appendJSONHead(b, acc, req, cols)
	for i := range rows {
		b = appendJSONRow(b, req, cols, i, &rows[i])
	}
	return append(b, "]}"...)
}

// jsonChunk is about the most of a report's JSON WriteJSON keeps before
// writing it.
const jsonChunk = 64 << 10

// WriteJSON writes the report as AppendJSON appends it, a part at a
// time: the answer is not held whole beside its rows.
func WriteJSON(w io.Writer, acc accounts.Account, req Request, rows []Row) error {
	cols := req.Columns()
	b := appendJSONHead(make([]byte, 0, jsonChunk+4<<10), acc, req, cols)
	for i := range rows {
		b = appendJSONRow(b, req, cols, i, &rows[i])
		if len(b) >= jsonChunk {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(append(b, "]}"...))
	return err
}

// appendJSONHead appends the report's JSON up to its first row.
func appendJSONHead(b []byte, acc accounts.Account, req Request, cols []string) []byte {
	b = append(b, `{"account":{"kind":`...)
	b = appendString(b, string(acc.Kind))
	b = append(b, `,"id":`...)
	b = appendString(b, acc.ID)
	b = append(b, `},"from":"`...)
	b = append(b, req.From.Format(time.DateOnly)...)
	b = append(b, `","to":"`...)
	b = append(b, req.To.Format(time.DateOnly)...)
	b = append(b, `","tz":`...)
	b = appendString(b, zoneName(req.Zone))
	b = append(b, `,"group_by":`...)
	b = appendStrings(b, req.GroupBy)
	b = append(b, `,"columns":`...)
	b = appendStrings(b, cols)
	return append(b, `,"rows":[`...)
}

// appendJSONRow appends r, the report's row i, as an object.
func appendJSONRow(b []byte, req Request, cols []string, i int, r *Row) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	b = append(b, '{')
	for j, g := range req.GroupBy {
		b = appendString(b, g)
		b = append(b, ':')
		b = appendString(b, r.Groups[j])
		b = append(b, ',')
	}
	b = append(b, `"currency":`...)
	b = appendString(b, r.Currency)
	for j, v := range r.counts() {
		b = append(b, ',')
		b = appendString(b, cols[len(req.GroupBy)+1+j])
		b = append(b, ':')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, `,"ctr":`...)
	if ctr, ok := CTR(&r.Measures); ok {
		b = strconv.AppendFloat(b, ctr, 'f', -1, 64)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"spend":"`...)
	b = append(b, Spend(r.SpendMicros)...)
	return append(b, `"}`...)
}

// counts are r's integer measures in the columns' order.
func (r *Row) counts() []int64 {
	out := append(make([]int64, 0, 3+len(r.Unbilled)), r.Impressions, r.Clicks, r.Billable)
	return append(out, r.Unbilled[:]...)
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// WriteCSV writes the report as CSV: a header row of the columns, then one
// line per row. A value a spreadsheet would read as a formula (a criterion
// or yk_tag that begins with =, +, -, @, a tab or a carriage return, which
// readers can put there) is written with a ' before it.
func WriteCSV(w io.Writer, req Request, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(req.Columns()); err != nil {
		return err
	}
	rec := make([]string, 0, len(req.Columns()))
	for i := range rows {
		r := &rows[i]
		rec = rec[:0]
		for _, g := range r.Groups {
			rec = append(rec, inert(g))
		}
		rec = append(rec, inert(r.Currency))
		for _, v := range r.counts() {
			rec = append(rec, strconv.FormatInt(v, 10))
		}
		ctr := ""
		if v, ok := CTR(&r.Measures); ok {
			ctr = strconv.FormatFloat(v, 'f', -1, 64)
		}
		rec = append(rec, ctr, Spend(r.SpendMicros))
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// inert keeps a spreadsheet from reading s as a formula.
func inert(s string) string {
	if s != "" {
		switch s[0] {
		case '=', '+', '-', '@', '\t', '\r':
			return "'" + s
		}
	}
	return s
}
