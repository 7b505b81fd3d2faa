package clicks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-json"
	bolt "go.etcd.io/bbolt"
)

// ReasonInvalidated: the click billed, and the operator found it invalid
// later (a publisher's script, a click farm) and credited its advertiser
// (adlink invalidate, POST /admin/invalidate): its bid left the reports
// and the advertiser's spend of its budget day.
const ReasonInvalidated = "invalidated"

// MaxInvalidationNote bounds an Invalidation's Note, in characters.
const MaxInvalidationNote = 200

// Invalidation selects billed clicks of a range to credit: the clicks
// with From <= Time < To that match every selector given. At least one
// selector is required.
type Invalidation struct {
	// APIKey keeps a partner's clicks; SiteID, which needs APIKey, one
	// of its sites'.
	APIKey, SiteID string
	// AdID keeps the clicks on one ad.
	AdID string
	// IDs keeps the clicks of these ids.
	IDs []string
	// From and To bound the clicks' times; both are required.
	From, To time.Time
	// Note says why, for the log; required, at most MaxInvalidationNote
	// characters.
	Note string
	// DryRun counts and sums what would be credited, changing nothing.
	DryRun bool
	// Zone is the budget zone (Use.Zone) of an advertiser, whose day's
	// spend a click that kept no BudgetDay credits; nil, or "", is UTC.
	Zone func(advertiser string) string

	// ids are IDs as a set, once Prepare made it.
	ids map[string]struct{}
}

// Prepare readies inv for many calls of Matches: its IDs, thousands
// maybe, become a set, looked up once a click rather than read through.
func (inv *Invalidation) Prepare() {
	if len(inv.IDs) == 0 {
		return
	}
	inv.ids = make(map[string]struct{}, len(inv.IDs))
	for _, id := range inv.IDs {
		inv.ids[id] = struct{}{}
	}
}

// Check says what is wrong with inv, naming the parameter: nil when it
// can run.
func (inv *Invalidation) Check() error {
	switch {
	case inv.SiteID != "" && inv.APIKey == "":
		return &InvalidationError{Param: "api_key", Message: "site_id needs the api_key of its partner"}
	case inv.APIKey == "" && inv.AdID == "" && len(inv.IDs) == 0:
		return &InvalidationError{Param: "site_id", Message: "give site_id (with its api_key), api_key, ad or id: crediting every click of a range is refused"}
	case inv.From.IsZero():
		return &InvalidationError{Param: "from", Message: "from is required"}
	case inv.To.IsZero():
		return &InvalidationError{Param: "to", Message: "to is required"}
	case !inv.From.Before(inv.To):
		return &InvalidationError{Param: "to", Message: "to must be after from"}
	case strings.TrimSpace(inv.Note) == "":
		return &InvalidationError{Param: "reason", Message: "reason is required: say why the clicks are invalid"}
	case utf8.RuneCountInString(inv.Note) > MaxInvalidationNote:
		return &InvalidationError{Param: "reason", Message: fmt.Sprintf("reason is %d characters: at most %d",
			utf8.RuneCountInString(inv.Note), MaxInvalidationNote)}
	}
	return nil
}

// InvalidationError is an Invalidation refused before it ran, and the
// parameter that refused it.
type InvalidationError struct {
	Param, Message string
}

func (e *InvalidationError) Error() string { return e.Message }

// CheckHeld refuses a range whose clicks retention exported and removed:
// one that begins before oldest, the UTC day of the oldest click the
// store holds (as Retainer.OldestDay gives it with ok), on a day the
// rollups still count clicks of. A range before the first click ever
// recorded is not refused.
func (inv *Invalidation) CheckHeld(ctx context.Context, rollups RollupReader, oldest time.Time, ok bool) error {
	end := oldest
	if !ok {
		end = inv.To
	}
	if !inv.From.Before(end) {
		return nil
	}
	errRemoved := errors.New("removed")
	err := rollups.ScanRollups(ctx, DaySite, inv.From.UTC().Truncate(24*time.Hour), end, func(r *Rollup) error {
		if r.Clicks > 0 {
			return errRemoved
		}
		return nil
	})
	switch {
	case err == errRemoved && ok:
		return &InvalidationError{Param: "from", Message: fmt.Sprintf(
			"the store holds clicks from %s on: retention exported and removed the older ones; give a from on or after %s",
			oldest.Format(time.DateOnly), oldest.Format(time.DateOnly))}
	case err == errRemoved:
		return &InvalidationError{Param: "from", Message: "the store holds no clicks: retention exported and removed them"}
	}
	return err
}

// Matches reports whether c is one of inv's clicks, billable or not.
func (inv *Invalidation) Matches(c *Click) bool {
	return !c.Time.Before(inv.From) && c.Time.Before(inv.To) &&
		(inv.APIKey == "" || c.APIKey == inv.APIKey) && (inv.SiteID == "" || c.SiteID == inv.SiteID) &&
		(inv.AdID == "" || c.AdID == inv.AdID) && (len(inv.IDs) == 0 || c.ID != "" && inv.hasID(c.ID))
}

// hasID reports whether id is one of inv's IDs.
func (inv *Invalidation) hasID(id string) bool {
	if inv.ids != nil {
		_, ok := inv.ids[id]
		return ok
	}
	return slices.Contains(inv.IDs, id)
}

// BudgetDay is the budget day whose spend c credits: the one it was
// billed on, which the click keeps (Click.BudgetDay), else, for a click
// billed before clicks kept it, its date in the zone of its advertiser's
// budget now.
func (inv *Invalidation) BudgetDay(c *Click) BudgetDay {
	if c.BudgetDay != 0 {
		return c.BudgetDay
	}
	zone := ""
	if inv.Zone != nil {
		zone = inv.Zone(c.Advertiser)
	}
	return Use{Zone: zone}.BudgetDay(c)
}

// Credit is what an invalidation credited, or a dry run would.
type Credit struct {
	// Clicks counts the billable clicks made not billable.
	Clicks int64 `json:"clicks"`
	// Micros sums their bids by currency, in millionths.
	Micros map[string]int64 `json:"micros"`
}

func (cr *Credit) add(c *Click) {
	cr.Clicks++
	if cr.Micros == nil {
		cr.Micros = map[string]int64{}
	}
	cr.Micros[c.Currency] += c.BidMicros
}

// Invalidator credits advertisers for billed clicks found invalid later.
// Every implementation passes storetest.Invalidator.
type Invalidator interface {
	// Invalidate makes each billable click inv selects not billable,
	// ReasonInvalidated, and takes its bid out of the rollups (billable
	// and spend down, the reason's count up, in every grain) and out of
	// its advertiser's spend of inv.BudgetDay, in transactions of a
	// bounded number of clicks, each whole. Clicks not billable stay as
	// they are, so running it again credits nothing more. It returns
	// what it credited; with inv.DryRun what it would, changing nothing.
	// An inv that Check refuses, or whose From is before the oldest
	// click the store holds, is refused with an *InvalidationError.
	Invalidate(ctx context.Context, inv Invalidation) (Credit, error)
}

// ClickRollup is the rollup row c adds to, at its time, as the ledger
// adds it.
func ClickRollup(c *Click) Rollup { return c.rollup() }

// InvalidatedMeasures are what invalidating the billable click c changes
// in each of its rollup rows: one billable click and its bid less, one
// click of ReasonInvalidated more.
func InvalidatedMeasures(c *Click) Measures {
	m := Measures{Billable: -1, SpendMicros: -c.BidMicros}
	m.Unbilled[reasonIndex(ReasonInvalidated)] = 1
	return m
}

// invalidateBatch bounds the clicks one transaction credits, and
// invalidateScan the records it reads, so that the clicks sharing its
// commit wait for a small one.
const (
	invalidateBatch = 500
	invalidateScan  = 5000
)

// BoltInvalidator is the Invalidator of a bbolt file's click log. Its
// transactions share the commits of the file's other stores.
type BoltInvalidator struct {
	db *bolt.DB
	gc *groupCommit
}

var _ Invalidator = (*BoltInvalidator)(nil)

// NewInvalidator returns the Invalidator of db's click log and rollups,
// creating their buckets.
func NewInvalidator(db *bolt.DB) (*BoltInvalidator, error) {
	if err := createLogBuckets(db); err != nil {
		return nil, fmt.Errorf("clicks: invalidator: %w", err)
	}
	for _, b := range rollupBuckets {
		if err := createBucket(db, b); err != nil {
			return nil, fmt.Errorf("clicks: invalidator: %w", err)
		}
	}
	return &BoltInvalidator{db: db, gc: commitsOf(db)}, nil
}

// Invalidate implements Invalidator.
func (l *BoltInvalidator) Invalidate(ctx context.Context, inv Invalidation) (Credit, error) {
	var credit Credit
	if err := inv.Check(); err != nil {
		return credit, err
	}
	oldest, ok, err := (&BoltRetainer{db: l.db}).OldestDay(ctx, ClickLog)
	if err != nil {
		return credit, err
	}
	if err := inv.CheckHeld(ctx, BoltRollups{l.db}, oldest, ok); err != nil {
		return credit, err
	}
	// Each commit of the file waits for its transaction's scan.
	inv.Prepare()
	// The keys hold a time's nanoseconds unsigned: one before 1970 would
	// seek past every click. No click is older.
	start := inv.From
	if epoch := time.Unix(0, 0); start.Before(epoch) {
		start = epoch
	}
	from := key(start, 0)
	end := key(inv.To, 0)
	for from != nil {
		if err := ctx.Err(); err != nil {
			return credit, err
		}
		var batch Credit
		var next []byte
		run := func(tx *bolt.Tx) error {
			batch, next = Credit{}, nil
			var err error
			next, err = invalidateTx(tx, &inv, from, end, &batch)
			return err
		}
		var err error
		if inv.DryRun {
			// Read as the credit would write: a read transaction over
			// the whole range would hold back the commit that grows the
			// file, and the clicks waiting on it.
			err = l.db.View(run)
		} else {
			err = l.gc.commit(l.db, run)
		}
		if err != nil {
			return credit, fmt.Errorf("clicks: invalidate: %w", err)
		}
		credit.Clicks += batch.Clicks
		for cur, m := range batch.Micros {
			if credit.Micros == nil {
				credit.Micros = map[string]int64{}
			}
			credit.Micros[cur] += m
		}
		from = next
	}
	return credit, nil
}

// invalidateTx credits the billable clicks of inv whose keys are in
// [from, end), up to a batch, in tx, adding them to credit, and returns
// the key to go on from, or nil at the end; with inv.DryRun it adds them
// and changes nothing.
func invalidateTx(tx *bolt.Tx, inv *Invalidation, from, end []byte, credit *Credit) ([]byte, error) {
	type change struct {
		k []byte
		c Click
	}
	var changes []change
	var next []byte
	cur := tx.Bucket(bucket).Cursor()
	read := 0
	for k, v := cur.Seek(from); k != nil; k, v = cur.Next() {
		if string(k) >= string(end) {
			break
		}
		if read == invalidateScan || len(changes) == invalidateBatch {
			next = append([]byte(nil), k...)
			break
		}
		read++
		var c Click
		if err := json.Unmarshal(v, &c); err != nil {
			return nil, fmt.Errorf("record %x: %w", k, err)
		}
		if c.Billable && inv.Matches(&c) {
			if inv.DryRun {
				credit.add(&c)
				continue
			}
			changes = append(changes, change{append([]byte(nil), k...), c})
		}
	}
	// Written after the cursor's walk, which a write would disturb.
	spend := tx.Bucket(spendBucket)
	for _, ch := range changes {
		c := ch.c
		c.Billable, c.Reason = false, ReasonInvalidated
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		if err := tx.Bucket(bucket).Put(ch.k, b); err != nil {
			return nil, err
		}
		if err := addRollups(tx, ch.c.rollup(), InvalidatedMeasures(&ch.c)); err != nil {
			return nil, err
		}
		day := inv.BudgetDay(&ch.c)
		// A zone changed since an old click may name a day that spent less.
		if err := addSpend(spend, ch.c.Advertiser, day, -min(ch.c.BidMicros, spentOn(spend, ch.c.Advertiser, day))); err != nil {
			return nil, err
		}
		credit.add(&ch.c)
	}
	return next, nil
}

// ParseInvalidation reads an Invalidation from its parameters, as
// POST /admin/invalidate and adlink invalidate take them: api_key,
// site_id, ad, id (ids, comma-separated), from and to (RFC 3339 times,
// or UTC dates: from that day's start, to its end, so that to's day is
// in), reason and dry_run (true or false). It refuses a value it cannot
// read, naming it; Check refuses what is missing.
func ParseInvalidation(get func(string) string) (Invalidation, error) {
	inv := Invalidation{APIKey: get("api_key"), SiteID: get("site_id"), AdID: get("ad"), Note: get("reason")}
	for id := range strings.SplitSeq(get("id"), ",") {
		if id = strings.TrimSpace(id); id != "" {
			inv.IDs = append(inv.IDs, id)
		}
	}
	var err error
	if inv.From, err = ParseBound(get("from"), false); err != nil {
		return inv, &InvalidationError{Param: "from", Message: "from: " + err.Error()}
	}
	if inv.To, err = ParseBound(get("to"), true); err != nil {
		return inv, &InvalidationError{Param: "to", Message: "to: " + err.Error()}
	}
	switch get("dry_run") {
	case "", "false", "0":
	case "true", "1":
		inv.DryRun = true
	default:
		return inv, &InvalidationError{Param: "dry_run", Message: "dry_run " + strconv.Quote(get("dry_run")) + ": want true or false"}
	}
	return inv, nil
}

// ParseBound reads a bound of a range of clicks, as an invalidation's
// and a site review's from and to are given: a time, RFC 3339, or a UTC
// date: its start, or with end the next day's start. "" is the zero time.
func ParseBound(s string, end bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := parseTime(s, end)
	if err == nil && (t.Before(FirstDay) || !t.Before(LastDay.AddDate(0, 0, 1))) {
		return time.Time{}, fmt.Errorf("%q is outside 1900-01-01 to 2200-12-31", s)
	}
	return t, err
}

// parseTime is ParseBound without its bounds.
func parseTime(s string, end bool) (time.Time, error) {
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		if end {
			d = d.AddDate(0, 0, 1)
		}
		return d, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a date (YYYY-MM-DD, UTC) nor an RFC 3339 time", s)
	}
	return t.UTC(), nil
}

// FirstDay and LastDay bound the days a range of clicks may name (an
// invalidation's, a report's, a listing's): the stores keep times as
// nanoseconds since 1970, which wrap before 1678 and past 2262.
var (
	FirstDay = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	LastDay  = time.Date(2200, 12, 31, 0, 0, 0, 0, time.UTC)
)

// LogAttrs are the attributes of the one line logged for a run of inv
// that credited credit: the selector, the range, the reason and the
// counts.
func (inv *Invalidation) LogAttrs(credit Credit) []any {
	attrs := []any{"api_key", inv.APIKey, "site_id", inv.SiteID, "ad", inv.AdID, "ids", len(inv.IDs),
		"from", inv.From.Format(time.RFC3339), "to", inv.To.Format(time.RFC3339), "reason", inv.Note,
		"dry_run", inv.DryRun, "clicks", credit.Clicks}
	curs := slices.Sorted(maps.Keys(credit.Micros))
	for _, c := range curs {
		attrs = append(attrs, "micros_"+c, credit.Micros[c])
	}
	return attrs
}
