package clicks

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Rollups are the click log and the impression log counted as they are
// written, in the same commit, so that a report over any range reads a
// few rows per hour or day instead of every click, and a crash can never
// make them disagree with the logs. Each click and impression adds to one
// row of each Grain: per hour by every dimension, and per UTC day by
// fewer, so that a report reads the smallest grain that has its groups.

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
	// PageImpressions and PageClicks are the part of Impressions and of
	// Clicks of ads in pages, of a context other than SearchContext: what
	// a click-through rate is of, as a search answer's clicks have no
	// impressions. A row keeps its context, not these, and a scan's rows
	// leave them 0; the sums of SumHours, which may leave the context out,
	// give them.
	PageImpressions, PageClicks int64
}

// SearchContext is the context (Click.Type) of a search answer's ads,
// whose clicks have no impressions.
const SearchContext = "search"

// reasonSlots is Reasons as an array type's length.
var reasonSlots = [...]string{ReasonUnsigned, ReasonUnverified, ReasonForged, ReasonExpired, ReasonTooFast, ReasonPartner,
	ReasonBot, ReasonNoIntent, ReasonNotNavigation, ReasonPrefetch, ReasonRepeat, ReasonNetworkCap, ReasonOverBudget,
	ReasonRateLimited, ReasonPrefixCap, ReasonLate, ReasonPrefixAdCap, ReasonInvalidated}

// Add adds o to m.
func (m *Measures) Add(o *Measures) {
	m.Impressions += o.Impressions
	m.Clicks += o.Clicks
	m.Billable += o.Billable
	m.SpendMicros += o.SpendMicros
	m.PageImpressions += o.PageImpressions
	m.PageClicks += o.PageClicks
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
// whose dimensions are these, in the hour or day from Start. The
// dimensions a grain does not keep are "".
type Rollup struct {
	Start                                               time.Time
	APIKey, SiteID, Advertiser, AdID, Context, Currency string
	Criterion, YkTag, Country                           string
	Measures
}

// Dimension is one of a Rollup's dimensions.
type Dimension int

// The dimensions, in the order a row's key holds them.
const (
	DimAPIKey Dimension = iota
	DimSiteID
	DimAdvertiser
	DimAdID
	DimContext
	DimCurrency
	DimCriterion
	DimYkTag
	DimCountry
)

// field is r's field of dimension d.
func (r *Rollup) field(d Dimension) *string {
	return [...]*string{&r.APIKey, &r.SiteID, &r.Advertiser, &r.AdID, &r.Context, &r.Currency, &r.Criterion, &r.YkTag, &r.Country}[d]
}

// Grain is a rollup's period and the dimensions it keeps.
type Grain int

// The grains. Every one keeps the partner (DimAPIKey), the advertiser and
// the currency, which reports filter and split by.
const (
	// Hour keeps every dimension, per hour.
	Hour Grain = iota
	// Day keeps every dimension, per UTC day.
	Day
	// DaySite keeps the site and the context, per UTC day.
	DaySite
	// DayAd keeps the ad and the context, per UTC day.
	DayAd
)

// grains are the grains' buckets and dimensions.
var grains = [...]struct {
	bucket []byte
	hourly bool
	dims   []Dimension
}{
	Hour:    {[]byte("rollup-hours"), true, allDims},
	Day:     {[]byte("rollup-days"), false, allDims},
	DaySite: {[]byte("rollup-days-site"), false, []Dimension{DimAPIKey, DimSiteID, DimAdvertiser, DimContext, DimCurrency}},
	DayAd:   {[]byte("rollup-days-ad"), false, []Dimension{DimAPIKey, DimAdvertiser, DimAdID, DimContext, DimCurrency}},
}

var allDims = []Dimension{DimAPIKey, DimSiteID, DimAdvertiser, DimAdID, DimContext, DimCurrency, DimCriterion, DimYkTag, DimCountry}

// Keeps reports whether grain g keeps every one of dims.
func (g Grain) Keeps(dims ...Dimension) bool {
	for _, d := range dims {
		if !slices.Contains(grains[g].dims, d) {
			return false
		}
	}
	return true
}

// Hourly reports whether g's rows are hours (else UTC days).
func (g Grain) Hourly() bool { return grains[g].hourly }

// SmallestGrain is the grain with the fewest rows that keeps dims, per day
// unless hourly.
func SmallestGrain(hourly bool, dims ...Dimension) Grain {
	if hourly {
		return Hour
	}
	for _, g := range []Grain{DaySite, DayAd} {
		if g.Keeps(dims...) {
			return g
		}
	}
	return Day
}

// RollupReader reads the rollups. BoltRollups read those of the server's
// bbolt file.
type RollupReader interface {
	// ScanRollups calls fn for each row of grain g whose period starts in
	// [from, to), in order of period; within a period in no set order. It
	// sees every click and impression whose write returned before it was
	// called. fn must not keep r. It stops at fn's first error, or ctx's,
	// and returns it.
	ScanRollups(ctx context.Context, g Grain, from, to time.Time, fn func(r *Rollup) error) error
	// ScanAccountRollups is ScanRollups of one account's rows only: a
	// partner's, whose APIKey is id (kind DimAPIKey), or an advertiser's,
	// whose Advertiser is id (kind DimAdvertiser). A store may read only
	// those rows.
	ScanAccountRollups(ctx context.Context, g Grain, from, to time.Time, kind Dimension, id string, fn func(r *Rollup) error) error
	// SumHours calls fn with the sums of the Hour grain's rows of q's
	// account in q's periods by the dimensions q keeps (the others ""),
	// each with the Start of its period, in order of period, and their
	// PageImpressions and PageClicks whether q keeps the context or not.
	// fn may get a period's row of some dimensions in parts: their sum is
	// the row. It sees what ScanRollups would, and stops as it does.
	SumHours(ctx context.Context, q HourSums, fn func(r *Rollup) error) error
	// SumSites calls fn with the sums over [from, to), whole hours, of
	// the rows of every partner's site (APIKey and SiteID both set), by
	// APIKey, SiteID, Context and Currency (the others ""), each with
	// Start from, in no set order. fn may get a row in parts: their sum
	// is the row. A store reads the DaySite grain for the range's whole
	// UTC days and the Hour grain only for the hours outside them. It
	// sees what ScanRollups would, and stops as it does.
	SumSites(ctx context.Context, from, to time.Time, fn func(r *Rollup) error) error
}

// WholeDays are the whole UTC days [days, daysEnd) of [from, to), whole
// hours, which SumSites reads by day; its hours [from, days) and
// [daysEnd, to) it reads by the hour. A range of no whole day has days
// and daysEnd to: its hours are all before.
func WholeDays(from, to time.Time) (days, daysEnd time.Time) {
	const day = 24 * time.Hour
	days, daysEnd = from.Truncate(day), to.Truncate(day)
	if days.Before(from) {
		days = days.Add(day)
	}
	if !days.Before(daysEnd) {
		return to, to
	}
	return days, daysEnd
}

// HourSums are the periods SumHours sums hours into, the account whose
// rows it sums and the dimensions it keeps.
type HourSums struct {
	// Starts are the starts of the periods, whole hours in order, none
	// twice; End is the end of the last. A row of an hour before the
	// first or from End on is in none.
	Starts []time.Time
	End    time.Time
	// APIKey and Advertiser, when not "", are the only partner's and
	// advertiser's rows summed.
	APIKey, Advertiser string
	// Dims are the dimensions kept.
	Dims []Dimension
	// Limit, when above 0, is the most rows the caller reads: a report
	// of more is refused, so a store that sums whole rows (Postgres) may
	// give no more than Limit. One that gives them in parts gives them
	// all, and stops where the caller does.
	Limit int
}

// Period is the index in q.Starts of the period of an hour that starts
// at t, from the period i on (q.Starts[i] <= t), or -1 when t is from
// q.End on.
func (q *HourSums) Period(t time.Time, i int) int {
	if !t.Before(q.End) {
		return -1
	}
	for i+1 < len(q.Starts) && !t.Before(q.Starts[i+1]) {
		i++
	}
	return i
}

// Keep blanks r's dimensions q does not keep, and reports whether r is of
// q's account.
func (q *HourSums) Keep(r *Rollup) bool {
	if q.APIKey != "" && r.APIKey != q.APIKey || q.Advertiser != "" && r.Advertiser != q.Advertiser {
		return false
	}
	for d := DimAPIKey; d <= DimCountry; d++ {
		if !slices.Contains(q.Dims, d) {
			*r.field(d) = ""
		}
	}
	return true
}

var (
	spendBucket = []byte("spend-days")
	// rollupBuckets are every grain's bucket and the spend's.
	rollupBuckets = func() [][]byte {
		out := [][]byte{spendBucket}
		for _, g := range grains {
			out = append(out, g.bucket)
		}
		return out
	}()
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

// addRollups adds m to the row of r's dimensions, at r.Start, of every
// grain.
func addRollups(tx *bolt.Tx, r Rollup, m Measures) error {
	var kb [512]byte
	for g := range grains {
		if err := addRow(tx.Bucket(grains[g].bucket), Grain(g).rowKey(kb[:0], &r), &m); err != nil {
			return err
		}
	}
	return nil
}

// rowKey appends the key of r's row in g: its period, big-endian and
// offset as dayKey's, then each of g's dimensions with its length before
// it.
func (g Grain) rowKey(dst []byte, r *Rollup) []byte {
	period := dayOf(r.Start)
	if grains[g].hourly {
		period = r.Start.Unix() / 3600
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(period)^(1<<63))
	for _, d := range grains[g].dims {
		f := *r.field(d)
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

// maxInterned bounds the field values one scan keeps to give again.
const maxInterned = 1 << 20

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

// decodeRowKey reads a row key of grain g into r. Field values already
// seen in the scan come from seen, so a scan of millions of rows over a
// few thousand sites, ads and criteria allocates for those alone.
func decodeRowKey(k []byte, g Grain, r *Rollup, seen map[string]string) error {
	if len(k) < 8 {
		return errBadRow
	}
	period := int64(binary.BigEndian.Uint64(k[:8]) ^ (1 << 63))
	if grains[g].hourly {
		period *= 3600
	} else {
		period *= 86400
	}
	if r.Start.Unix() != period || r.Start.IsZero() {
		r.Start = time.Unix(period, 0).UTC()
	}
	k = k[8:]
	for _, d := range grains[g].dims {
		l, w := binary.Uvarint(k)
		if w <= 0 || uint64(len(k)-w) < l {
			return errBadRow
		}
		v := k[w : w+int(l)]
		s, ok := seen[string(v)]
		if !ok {
			s = string(v)
			if len(seen) < maxInterned {
				seen[s] = s
			}
		}
		*r.field(d) = s
		k = k[w+int(l):]
	}
	return nil
}

// BoltRollups read the rollups of a bbolt file.
type BoltRollups struct{ db *bolt.DB }

var _ RollupReader = BoltRollups{}

// NewRollups returns the rollups of db, creating their buckets.
func NewRollups(db *bolt.DB) (BoltRollups, error) {
	for _, b := range rollupBuckets {
		if err := createBucket(db, b); err != nil {
			return BoltRollups{}, fmt.Errorf("clicks: rollups: %w", err)
		}
	}
	return BoltRollups{db: db}, nil
}

// ReadRollups returns the rollups of db as they are, for a reader that
// may not write (a file opened read-only); a file without them has none.
func ReadRollups(db *bolt.DB) BoltRollups { return BoltRollups{db: db} }

// KeptInPostgres reports whether db is the state file of a server that
// kept its clicks in Postgres: it has the click spool and no rollups, so
// a report read from it would be empty, not the server's.
func KeptInPostgres(db *bolt.DB) bool {
	var spool, rollups bool
	db.View(func(tx *bolt.Tx) error {
		spool, rollups = tx.Bucket(spoolBucket) != nil, tx.Bucket(grains[Day].bucket) != nil
		return nil
	})
	return spool && !rollups
}

// ScanRollups implements RollupReader.
func (r BoltRollups) ScanRollups(ctx context.Context, g Grain, from, to time.Time, fn func(*Rollup) error) error {
	if g < 0 || int(g) >= len(grains) {
		return fmt.Errorf("clicks: no grain %d", g)
	}
	return r.db.View(func(tx *bolt.Tx) error { return scanTx(ctx, tx, g, from, to, fn) })
}

// scanTx is ScanRollups in tx.
func scanTx(ctx context.Context, tx *bolt.Tx, g Grain, from, to time.Time, fn func(*Rollup) error) error {
	size := int64(86400)
	if grains[g].hourly {
		size = 3600
	}
	// The first period that starts at or after from, and the first that
	// starts at or after to.
	first := (from.Unix() + size - 1) / size
	end := (to.Unix() + size - 1) / size
	b := tx.Bucket(grains[g].bucket)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	var row Rollup
	seen := map[string]string{}
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
		if err := decodeRowKey(k, g, &row, seen); err != nil {
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
}

// ScanAccountRollups implements RollupReader: it scans every account's
// rows of the range and leaves out the other accounts'.
func (r BoltRollups) ScanAccountRollups(ctx context.Context, g Grain, from, to time.Time, kind Dimension, id string, fn func(*Rollup) error) error {
	if kind != DimAPIKey && kind != DimAdvertiser {
		return fmt.Errorf("clicks: no account of dimension %d", kind)
	}
	return r.ScanRollups(ctx, g, from, to, func(row *Rollup) error {
		if *row.field(kind) != id {
			return nil
		}
		return fn(row)
	})
}

// SumHours implements RollupReader: the rows of the Hour grain, each
// given as the part of its period's sum it is.
func (r BoltRollups) SumHours(ctx context.Context, q HourSums, fn func(*Rollup) error) error {
	if len(q.Starts) == 0 {
		return nil
	}
	i := 0
	return r.ScanRollups(ctx, Hour, q.Starts[0], q.End, func(row *Rollup) error {
		// Keep may blank the context that tells a page's clicks.
		page := row.Context != SearchContext
		if i = q.Period(row.Start, i); i < 0 || !q.Keep(row) {
			return nil
		}
		part := *row
		part.Start = q.Starts[i]
		if page {
			part.PageImpressions, part.PageClicks = part.Impressions, part.Clicks
		}
		return fn(&part)
	})
}

// SumSites implements RollupReader: in one read transaction, the
// DaySite rows of the whole days and the Hour rows of the hours outside
// them, each given as the part of its site's sum it is.
func (r BoltRollups) SumSites(ctx context.Context, from, to time.Time, fn func(*Rollup) error) error {
	days, daysEnd := WholeDays(from, to)
	var part Rollup
	keep := func(row *Rollup) error {
		if row.APIKey == "" || row.SiteID == "" {
			return nil
		}
		part = Rollup{Start: from, APIKey: row.APIKey, SiteID: row.SiteID, Context: row.Context, Currency: row.Currency, Measures: row.Measures}
		return fn(&part)
	}
	return r.db.View(func(tx *bolt.Tx) error {
		for _, s := range []struct {
			g        Grain
			from, to time.Time
		}{{Hour, from, days}, {DaySite, days, daysEnd}, {Hour, daysEnd, to}} {
			if !s.from.Before(s.to) {
				continue
			}
			if err := scanTx(ctx, tx, s.g, s.from, s.to, keep); err != nil {
				return err
			}
		}
		return nil
	})
}

// Spent returns what the advertiser's billable clicks cost on the UTC day
// of at, in millionths of their currency: SpentOn of that day.
func (r BoltRollups) Spent(ctx context.Context, advertiser string, at time.Time) (int64, error) {
	return r.SpentOn(ctx, advertiser, BudgetDayIn(at, time.UTC))
}

// SpentOn returns what the advertiser's billable clicks cost on its
// budget's day (Use.BudgetDay), in millionths of their currency.
func (r BoltRollups) SpentOn(ctx context.Context, advertiser string, day BudgetDay) (int64, error) {
	var spent int64
	err := r.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(spendBucket); b != nil {
			spent = spentOn(b, advertiser, day)
		}
		return ctx.Err()
	})
	return spent, err
}

// SpentAllOn returns what each of advertisers' billable clicks cost on
// day, in one read transaction: a read of each one's key.
func (r BoltRollups) SpentAllOn(ctx context.Context, day BudgetDay, advertisers []string) (map[string]int64, error) {
	spent := map[string]int64{}
	err := r.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(spendBucket)
		if b == nil {
			return nil
		}
		for _, adv := range advertisers {
			if n := spentOn(b, adv, day); n != 0 {
				spent[adv] = n
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return spent, nil
}

// spendKey is the key of an advertiser's spend on day.
func spendKey(advertiser string, day BudgetDay) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(day)^(1<<63)), advertiser...)
}

func spentOn(b *bolt.Bucket, advertiser string, day BudgetDay) int64 {
	if v := b.Get(spendKey(advertiser, day)); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

// addSpend adds micros to the advertiser's spend on day.
func addSpend(b *bolt.Bucket, advertiser string, day BudgetDay, micros int64) error {
	if micros == 0 {
		return nil
	}
	n := spentOn(b, advertiser, day) + micros
	return b.Put(spendKey(advertiser, day), binary.BigEndian.AppendUint64(nil, uint64(n)))
}
