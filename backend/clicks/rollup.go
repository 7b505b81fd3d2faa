package clicks

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Rollups are the click log and the impression log counted as they are
// written, in the same commit, so that a report over any range reads a
// few rows per hour or day instead of every click, and a crash can never
// make them disagree with the logs. Two grains are kept: per UTC day by
// partner, site, advertiser, ad, context and currency, and per hour by
// all of those and the criterion, yk_tag and country.

// Measures are what reports count over clicks and impressions.
type Measures struct {
	Impressions int64
	Clicks      int64
	Billable    int64
	// SpendMicros sums the bids of the billable clicks, in millionths of
	// their currency.
	SpendMicros int64
	// Unbilled counts the clicks that did not bill by reason, in the order
	// of Reasons.
	Unbilled [len(reasonSlots)]int64
}

// reasonSlots is Reasons as an array type's length.
var reasonSlots = [...]string{ReasonUnsigned, ReasonUnverified, ReasonForged, ReasonExpired, ReasonTooFast, ReasonPartner,
	ReasonBot, ReasonNoIntent, ReasonNotNavigation, ReasonPrefetch, ReasonRepeat, ReasonNetworkCap, ReasonOverBudget,
	ReasonRateLimited}

// Add adds o to m.
func (m *Measures) Add(o *Measures) {
	m.Impressions += o.Impressions
	m.Clicks += o.Clicks
	m.Billable += o.Billable
	m.SpendMicros += o.SpendMicros
	for i := range m.Unbilled {
		m.Unbilled[i] += o.Unbilled[i]
	}
}

// clickMeasures are what one click adds.
func clickMeasures(c *Click) Measures {
	m := Measures{Clicks: 1, SpendMicros: c.Spend()}
	if c.Billable {
		m.Billable = 1
	} else if i := reasonIndex(c.Reason); i >= 0 {
		m.Unbilled[i] = 1
	}
	return m
}

func reasonIndex(r string) int {
	for i, s := range reasonSlots {
		if s == r {
			return i
		}
	}
	return -1
}

// Rollup is one row of a grain: the measures of the clicks and impressions
// whose dimensions are these, in the hour or day from Start.
type Rollup struct {
	Start                                               time.Time
	APIKey, SiteID, Advertiser, AdID, Context, Currency string
	// Criterion, YkTag and Country are set in the hourly grain only.
	Criterion, YkTag, Country string
	Measures
}

// Grain is a rollup's period.
type Grain int

// The grains: an hour, a UTC day.
const (
	Hour Grain = iota
	Day
)

// RollupReader reads the rollups. BoltRollups read those of the server's
// bbolt file.
type RollupReader interface {
	// ScanRollups calls fn for each row of grain g whose period starts in
	// [from, to), in order of period; within a period in no set order. It
	// sees every click and impression whose write returned before it was
	// called. fn must not keep r. It stops at fn's first error, or ctx's,
	// and returns it.
	ScanRollups(ctx context.Context, g Grain, from, to time.Time, fn func(r *Rollup) error) error
}

var (
	dayRollups   = []byte("rollup-days")
	hourRollups  = []byte("rollup-hours")
	spendBucket  = []byte("spend-days")
	rollupFields = 9
)

// rollup is the row of c's dimensions, at its time.
func (c *Click) rollup() Rollup {
	return Rollup{Start: c.Time, APIKey: c.APIKey, SiteID: c.SiteID, Advertiser: c.Advertiser, AdID: c.AdID, Context: c.Type,
		Currency: c.Currency, Criterion: c.Criterion, YkTag: c.YkTag, Country: c.Country}
}

func (i *Impression) rollup() Rollup {
	return Rollup{Start: i.Time, APIKey: i.APIKey, SiteID: i.SiteID, Advertiser: i.Advertiser, AdID: i.AdID, Context: i.Type,
		Currency: i.Currency, Criterion: i.Criterion, YkTag: i.YkTag, Country: i.Country}
}

// addRollups adds m to the hour's and the day's rows of r's dimensions,
// at r.Start.
func addRollups(tx *bolt.Tx, r Rollup, m Measures) error {
	fields := [...]string{r.APIKey, r.SiteID, r.Advertiser, r.AdID, r.Context, r.Currency, r.Criterion, r.YkTag, r.Country}
	var kb [256]byte
	hour := appendRowKey(kb[:0], r.Start.Unix()/3600, fields[:])
	if err := addRow(tx.Bucket(hourRollups), hour, &m); err != nil {
		return err
	}
	day := appendRowKey(kb[:0], dayOf(r.Start), fields[:6])
	return addRow(tx.Bucket(dayRollups), day, &m)
}

// appendRowKey appends a row's key: its period, big-endian and offset as
// dayKey's, then each field with its length before it.
func appendRowKey(dst []byte, period int64, fields []string) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(period)^(1<<63))
	for _, f := range fields {
		dst = binary.AppendUvarint(dst, uint64(len(f)))
		dst = append(dst, f...)
	}
	return dst
}

// addRow adds m to the row at key.
func addRow(b *bolt.Bucket, key []byte, m *Measures) error {
	var sum Measures
	if v := b.Get(key); v != nil {
		if err := decodeMeasures(v, &sum); err != nil {
			return err
		}
	}
	sum.Add(m)
	// bbolt keeps key and value until the commit: copies of its own.
	return b.Put(bytes.Clone(key), encodeMeasures(nil, &sum))
}

// encodeMeasures appends m: the number of counts, then each count.
func encodeMeasures(dst []byte, m *Measures) []byte {
	dst = binary.AppendUvarint(dst, uint64(4+len(m.Unbilled)))
	for _, v := range [...]int64{m.Impressions, m.Clicks, m.Billable, m.SpendMicros} {
		dst = binary.AppendUvarint(dst, uint64(v))
	}
	for _, v := range m.Unbilled {
		dst = binary.AppendUvarint(dst, uint64(v))
	}
	return dst
}

var errBadRow = errors.New("clicks: malformed rollup row")

// decodeMeasures reads what encodeMeasures wrote; counts it does not know
// (from a newer server) are left out.
func decodeMeasures(v []byte, m *Measures) error {
	n, k := binary.Uvarint(v)
	if k <= 0 {
		return errBadRow
	}
	v = v[k:]
	for i := range n {
		x, k := binary.Uvarint(v)
		if k <= 0 {
			return errBadRow
		}
		v = v[k:]
		switch {
		case i == 0:
			m.Impressions = int64(x)
		case i == 1:
			m.Clicks = int64(x)
		case i == 2:
			m.Billable = int64(x)
		case i == 3:
			m.SpendMicros = int64(x)
		case int(i-4) < len(m.Unbilled):
			m.Unbilled[i-4] = int64(x)
		}
	}
	return nil
}

// decodeRowKey reads a row key into r.
func decodeRowKey(k []byte, g Grain, r *Rollup) error {
	if len(k) < 8 {
		return errBadRow
	}
	period := int64(binary.BigEndian.Uint64(k[:8]) ^ (1 << 63))
	if g == Hour {
		r.Start = time.Unix(period*3600, 0).UTC()
	} else {
		r.Start = time.Unix(period*86400, 0).UTC()
	}
	k = k[8:]
	fields := [...]*string{&r.APIKey, &r.SiteID, &r.Advertiser, &r.AdID, &r.Context, &r.Currency, &r.Criterion, &r.YkTag, &r.Country}
	n := rollupFields
	if g == Day {
		n = 6
	}
	for i := range fields {
		*fields[i] = ""
	}
	for i := range n {
		l, w := binary.Uvarint(k)
		if w <= 0 || uint64(len(k)-w) < l {
			return errBadRow
		}
		*fields[i] = string(k[w : w+int(l)])
		k = k[w+int(l):]
	}
	return nil
}

// BoltRollups read the rollups of a bbolt file.
type BoltRollups struct{ db *bolt.DB }

var _ RollupReader = BoltRollups{}

// NewRollups returns the rollups of db, creating their buckets.
func NewRollups(db *bolt.DB) (BoltRollups, error) {
	for _, b := range [][]byte{dayRollups, hourRollups, spendBucket} {
		if err := createBucket(db, b); err != nil {
			return BoltRollups{}, fmt.Errorf("clicks: rollups: %w", err)
		}
	}
	return BoltRollups{db: db}, nil
}

// ReadRollups returns the rollups of db as they are, for a reader that
// may not write (a file opened read-only); a file without them has none.
func ReadRollups(db *bolt.DB) BoltRollups { return BoltRollups{db: db} }

// ScanRollups implements RollupReader.
func (r BoltRollups) ScanRollups(ctx context.Context, g Grain, from, to time.Time, fn func(*Rollup) error) error {
	name, first, end := hourRollups, from.Unix()/3600, to.Unix()/3600
	if g == Day {
		name, first, end = dayRollups, dayOf(from), dayOf(to)
	}
	// A period that starts before from is not in the range; one that
	// starts at or after to is not either.
	if g == Hour && from.Unix()%3600 != 0 {
		first++
	}
	if g == Day && from.Unix()%86400 != 0 {
		first++
	}
	if g == Hour && to.Unix()%3600 != 0 {
		end++
	}
	if g == Day && to.Unix()%86400 != 0 {
		end++
	}
	return r.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(name)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var row Rollup
		n := 0
		for k, v := c.Seek(binary.BigEndian.AppendUint64(nil, uint64(first)^(1<<63))); k != nil; k, v = c.Next() {
			if len(k) < 8 || int64(binary.BigEndian.Uint64(k[:8])^(1<<63)) >= end {
				return nil
			}
			if n++; n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := decodeRowKey(k, g, &row); err != nil {
				return err
			}
			row.Measures = Measures{}
			if err := decodeMeasures(v, &row.Measures); err != nil {
				return err
			}
			if err := fn(&row); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
}

// Spent returns what the advertiser's billable clicks cost on the UTC day
// of at, in millionths of their currency.
func (r BoltRollups) Spent(ctx context.Context, advertiser string, at time.Time) (int64, error) {
	var spent int64
	err := r.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(spendBucket); b != nil {
			spent = spentOn(b, advertiser, at)
		}
		return ctx.Err()
	})
	return spent, err
}

// spendKey is the key of an advertiser's spend on at's UTC day.
func spendKey(advertiser string, at time.Time) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(dayOf(at))^(1<<63)), advertiser...)
}

func spentOn(b *bolt.Bucket, advertiser string, at time.Time) int64 {
	if v := b.Get(spendKey(advertiser, at)); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

// addSpend adds micros to the advertiser's spend on at's UTC day.
func addSpend(b *bolt.Bucket, advertiser string, at time.Time, micros int64) error {
	if micros == 0 {
		return nil
	}
	n := spentOn(b, advertiser, at) + micros
	return b.Put(spendKey(advertiser, at), binary.BigEndian.AppendUint64(nil, uint64(n)))
}
