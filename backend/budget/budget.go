// Package budget keeps an advertiser's ads out of answers once its daily
// budget is spent, and paces the advertisers that chose even delivery.
//
// A budget's day is the advertiser's calendar date in its time zone
// (accounts.Budget.Zone, UTC by default): it comes back at its own
// midnight. The ledger (clicks.Ledger) is what holds a budget: inside a
// click's own transaction it bills the click only while the advertiser's
// spend of that day is below its budget, so the day's spend passes the
// budget by less than one click's bid. This package stops the ads that
// would only make such unbilled clicks: it keeps each budgeted
// advertiser's spend of its day in memory, read from the store when the
// server starts and at each of its zone's midnights, and read again after
// each click that changes it, so that a request checks a few counters and
// no store.
package budget

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/match"
)

// Spender tells what an advertiser spent on a day of its budget;
// clicks.BoltRollups is the server's.
type Spender = clicks.SpendReader

// Flags tell the replicas of one deployment which advertisers spent their
// daily budget: the Gate whose click reaches a budget raises its flag
// ("id@budget micros", so that a replica given a larger budget by a
// reload is not stopped by a smaller one's, and "#" a nonce, the
// replica's id and a random part, so that each raise is a flag of its own
// and its replica knows it its own: raiseOf) on the budget's day, and
// every Gate reads the flags of its advertisers' days (Sync) and stops
// those ads as its own clicks would have. redisstore.BudgetFlags keeps
// them in Redis. Flags are a hint: the ledger still bills no click over a
// budget, so a flag lost costs only clicks that do not bill.
type Flags interface {
	// Raise marks flag, an advertiser's budget spent, on day, the
	// budget's day (clicks.BudgetDay); raising a flag that is up
	// changes nothing.
	Raise(ctx context.Context, flag string, day clicks.BudgetDay) error
	// Raised returns the flags marked on day.
	Raised(ctx context.Context, day clicks.BudgetDay) ([]string, error)
	// Clear takes down every flag of advertiser on day, whatever budget
	// it names, with a nonce or without: a credit (Gate.Reread) gave its
	// budget room again.
	Clear(ctx context.Context, advertiser string, day clicks.BudgetDay) error
	// Remove takes down flags, as Raised returned them, on day, and no
	// other: a replica's own flags (Options.Replica) whose budget its own
	// store holds unspent.
	Remove(ctx context.Context, flags []string, day clicks.BudgetDay) error
}

// Options are what a Gate needs.
type Options struct {
	// Budgets are the advertisers' daily budgets by id, as the catalog
	// names them (accounts.Book.Budgets).
	Budgets map[string]accounts.Budget
	// Spent is where each advertiser's spend of its day is read.
	Spent Spender
	// Flags, when set, share the budgets spent with the other replicas.
	Flags Flags
	// Shared tells that Spent is the store every replica bills against
	// (Postgres), so that what it says of a day's spend holds for all of
	// them: Sync then reads it before a flag stops an advertiser this
	// gate holds under its budget, and stops it only when the store says
	// the budget is spent (or does not answer). A flag raised from a
	// spend read before a credit, landing after the credit's reads took
	// the flags down, then stops no replica. Without it, each replica's
	// spend is its own and a credit's Clear takes down every replica's
	// flag of the budget: Reread takes down the flags only when this gate
	// raised one, and Sync raises again a flag of this gate's that is not
	// up while its own store holds the budget spent (another replica's
	// credit took it down, or Redis did not take it), and shows again an
	// advertiser a flag stopped once no flag stops it and its own store
	// holds it under its budget; with Replica, it also takes down a flag
	// of this replica's own while its own store holds the budget unspent.
	Shared bool
	// Replica, when set, is this replica's id (LoadOrCreateReplica), kept
	// in its data directory: each raise's nonce starts with it, so that
	// without a shared store the gate knows its own flags from the flags
	// themselves, after a restart too. Sync takes down a flag of its own
	// whose budget its own store holds unspent (a credit whose Clear
	// Redis did not take, the replica restarted since). Two replicas must
	// not share one. Empty, raises have a nonce of no replica, as older
	// replicas' do, and no flag is this gate's own after a restart.
	Replica string
	// Now is the server's clock; nil is time.Now.
	Now func() time.Time
	// Rand draws whether a paced advertiser is shown: a number in [0, 1);
	// nil is math/rand/v2's.
	Rand func() float64
}

// Gate knows which advertisers may be shown now. Its methods are safe for
// concurrent use; a nil Gate holds no budget and shows every ad.
type Gate struct {
	ids     []string // budgeted advertisers, sorted
	budgets []accounts.Budget
	zoneOf  []int   // each advertiser's zone, of zones
	zones   []*zone // the zones of the budgets, by name
	spent   Spender
	flags   Flags
	now     func() time.Time
	rand    func() float64
	// groups caches, per index, each budgeted advertiser's group in it
	// (-1 for none); weak, so that an index a new catalog replaced is
	// collected.
	groups sync.Map // weak.Pointer[match.Index] -> []int32
	// lowerMu, one per advertiser as ids, orders Reread, which lowers a
	// spend, against what raises one (Clicked, a day's late read, Sync):
	// they hold it shared from their read to their store and flag, Reread
	// alone from its read to its store, so that neither a spend read
	// before a credit is stored after it, nor a click read after Reread's
	// read is lost under Reread's lower value, nor a flag raised after
	// Reread took it down. One per advertiser, so that Reread's reads,
	// one advertiser after another, hold back no other's clicks.
	lowerMu []sync.RWMutex
	// cleared counts the flags Reread took down, so that a Sync whose
	// read of the flags came before stops no advertiser with them.
	cleared atomic.Uint64
	// shared is Options.Shared.
	shared bool
	// replica is Options.Replica.
	replica string
	// checkMu guards checked and trusted: checked, the flags the store
	// said were stale (the advertiser under its budget), with when it
	// said so, kept while they stay raised, so that Sync reads the store
	// once for each every recheckStale, not every second (a flag is one
	// raise, by its nonce: a later raise of the budget is a flag not in
	// checked, read at its first Sync); trusted, the
	// flags that stopped an advertiser while the store did not answer,
	// with the advertiser, so that once it answers Sync reads the
	// advertiser's spend and shows it again when it is under its budget.
	checkMu sync.Mutex
	checked map[dayFlag]time.Time
	trusted map[dayFlag]int
}

// dayFlag is a flag raised on a day.
type dayFlag struct {
	flag string
	day  clicks.BudgetDay
}

// zone is the advertisers whose budgets count the days of one time zone,
// and the spend of its current day.
type zone struct {
	loc    *time.Location
	ids    []int // its advertisers, of Gate.ids
	even   []int // those paced even: each answer looks at them
	day    atomic.Pointer[day]
	rollMu sync.Mutex
}

// day is the spend of one day of a zone, by advertiser as Gate.ids (the
// zone's advertisers only).
type day struct {
	n          clicks.BudgetDay
	start, end time.Time // its local midnight, and the next one
	spent      []atomic.Int64
	// out lists the asap advertisers whose budget is spent, so that an
	// answer looks at them and the even ones, not at every budget.
	out   atomic.Pointer[[]int]
	outMu sync.Mutex // serialises additions to out
	// spentHere and mine, by advertiser as spent, serve a gate without
	// a shared store (Options.Shared unset), where a credit's Clear takes
	// down every replica's flag of one budget: spentHere, that this replica's own
	// store holds the budget spent, so that Sync raises the flag again
	// when another replica's credit took it down; mine, that a flag this
	// replica raised may be up, which its own credit takes down, and no
	// other replica's flag. A restart forgets mine; Sync sets it again
	// from the flags up that name this replica (Options.Replica).
	spentHere, mine []atomic.Bool
}

// resume takes advertiser i off the day's out list.
func (d *day) resume(i int) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	old := *d.out.Load()
	if j := slices.Index(old, i); j >= 0 {
		out := slices.Delete(slices.Clone(old), j, j+1)
		d.out.Store(&out)
	}
}

// stop adds asap advertiser i to the day's out list.
func (d *day) stop(i int) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	old := *d.out.Load()
	if !slices.Contains(old, i) {
		out := append(slices.Clip(old), i)
		d.out.Store(&out)
	}
}

// New returns the gate of o's budgets, with today's spend read from
// o.Spent, so that an advertiser stopped before a restart stays stopped.
func New(ctx context.Context, o Options) (*Gate, error) {
	g := &Gate{spent: o.Spent, flags: o.Flags, now: o.Now, rand: o.Rand, shared: o.Shared, replica: o.Replica,
		checked: map[dayFlag]time.Time{}, trusted: map[dayFlag]int{}}
	if g.replica != "" && !ValidReplica(g.replica) {
		return nil, fmt.Errorf("budget: replica id %.40q: want %d digits or lower-case letters", g.replica, replicaLen)
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.rand == nil {
		g.rand = randFloat
	}
	for id := range o.Budgets {
		g.ids = append(g.ids, id)
	}
	slices.Sort(g.ids)
	g.lowerMu = make([]sync.RWMutex, len(g.ids))
	byName := map[string]int{}
	for i, id := range g.ids {
		b := o.Budgets[id]
		g.budgets = append(g.budgets, b)
		zi, ok := byName[b.Zone]
		if !ok {
			loc, err := clicks.LoadZone(b.Zone)
			if err != nil {
				return nil, fmt.Errorf("budget: the time zone of %s: %w", id, err)
			}
			zi = len(g.zones)
			byName[b.Zone] = zi
			g.zones = append(g.zones, &zone{loc: loc})
		}
		z := g.zones[zi]
		g.zoneOf = append(g.zoneOf, zi)
		z.ids = append(z.ids, i)
		if b.Pacing == accounts.Even {
			z.even = append(z.even, i)
		}
	}
	if len(g.ids) > 0 && g.spent == nil {
		return nil, fmt.Errorf("budget: budgets without a Spender")
	}
	now := g.now()
	read := dayReads{} // the zones on one date share its read
	for _, z := range g.zones {
		d, err := g.load(ctx, z, now, read)
		if err != nil {
			return nil, err
		}
		z.day.Store(d)
	}
	return g, nil
}

// fresh is z's day at at with nothing spent.
func (g *Gate) fresh(z *zone, at time.Time) *day {
	n := clicks.BudgetDayIn(at, z.loc)
	d := &day{n: n, start: n.Start(z.loc), end: (n + 1).Start(z.loc), spent: make([]atomic.Int64, len(g.ids)),
		spentHere: make([]atomic.Bool, len(g.ids)), mine: make([]atomic.Bool, len(g.ids))}
	d.out.Store(new([]int))
	return d
}

// dayReads are the spend of every budgeted advertiser on each day read
// so far, by day (Spender.SpentAllOn).
type dayReads map[clicks.BudgetDay]map[string]int64

// load reads the spend of z's day at at. It reads the spend of that day
// of the budgeted advertisers at once (Spender.SpentAllOn): with read,
// those of the gate, which read keeps for the zones on the same date;
// without it (a midnight), those of z. It keeps that of z's advertisers;
// an advertiser the read leaves out spent nothing. One read a day, not
// one per advertiser, so that thousands of budgets on a store across a
// network are read well within rollTimeout; and of the budgeted
// advertisers only, not of every advertiser with spend (each billed
// click's, budget or not), so that the read grows with the budgets.
//
// It takes no advertiser's lowerMu: the day is not served yet, so no
// click, Sync or Reread stores into it before load returns, and none
// can store a spend read before this one after it. At a midnight, those
// that find the day due wait for it (today's rollMu) and read the store
// after this read; a gate New makes, which may have read the day before
// a credit the gate it replaces read, is read again once served
// (backend/app has a new gate Reread at its first tick).
func (g *Gate) load(ctx context.Context, z *zone, at time.Time, read dayReads) (*day, error) {
	d := g.fresh(z, at)
	n := d.n
	spent, ok := read[n]
	if !ok {
		ids := g.ids
		if read == nil {
			ids = g.idsOf(z)
		}
		var err error
		if spent, err = g.spent.SpentAllOn(ctx, n, ids); err != nil {
			return nil, fmt.Errorf("budget: reading the spend of day %d: %w", n, err)
		}
		if read != nil {
			read[n] = spent
		}
	}
	var out []int
	for _, i := range z.ids {
		s := spent[g.ids[i]]
		d.spent[i].Store(s)
		if s < g.budgets[i].DailyMicros {
			continue
		}
		// Spent before a restart, or before this day's gate was made:
		// this replica raised its flag then.
		d.spentHere[i].Store(true)
		d.mine[i].Store(true)
		if g.budgets[i].Pacing != accounts.Even {
			out = append(out, i)
		}
	}
	d.out.Store(&out)
	return d, nil
}

// rollTimeout bounds the read of a new day's spend, which the request
// that finds the day over waits for.
var rollTimeout = time.Second

// today returns the spend of z's day at at, reading it from the store
// once at is past the day's end, z's next midnight. Should the store not
// answer within rollTimeout, the new day starts with nothing spent, as it
// nearly has at its midnight, and is read again in the background until
// the store answers (lateRead): the clicks that follow read their
// advertiser's spend again meanwhile, and the ledger bills no click over
// a budget either way. Keeping the day before would keep its spent
// budgets out of every answer, and have each request wait on the store
// again.
func (g *Gate) today(z *zone, at time.Time) *day {
	d := z.day.Load()
	if !at.Before(d.end) {
		z.rollMu.Lock()
		defer z.rollMu.Unlock()
		if d = z.day.Load(); !at.Before(d.end) {
			ctx, cancel := context.WithTimeout(context.Background(), rollTimeout)
			defer cancel()
			nd, err := g.load(ctx, z, at, nil)
			if err != nil {
				nd = g.fresh(z, at)
				go g.lateRead(z, nd, lateRetry, lateRetryMax)
			}
			z.day.Store(nd)
			d = nd
		}
	}
	return d
}

// lateRetry is the first wait of lateRead between its reads, which
// doubles up to lateRetryMax.
var lateRetry, lateRetryMax = 100 * time.Millisecond, 30 * time.Second

// lateRead reads the spend of d, z's day that started with nothing spent
// because the store did not answer at its midnight, until the store
// answers or d is no longer z's day or is over (a gate no request reads
// any more, one a reload replaced or the server closed, rolls to no next
// day), waiting wait before its first read and twice as long before each
// next one, up to most. Each try is one read of the day's spend of z's
// advertisers (Spender.SpentAllOn), as load's, not one per advertiser.
func (g *Gate) lateRead(z *zone, d *day, wait, most time.Duration) {
	ids := g.idsOf(z)
	for {
		time.Sleep(wait)
		wait = min(2*wait, most)
		if z.day.Load() != d || !g.now().Before(d.end) {
			return // the next midnight reads its own day
		}
		if g.readLate(z, d, ids) == nil {
			return
		}
	}
}

// readLate reads the spend of d of z's advertisers, ids, in one read
// and keeps each one's when it is larger than what d holds: a whole
// day's spend, as Clicked reads it, so nothing the clicks since stored
// is counted twice or lowered. It holds the advertisers' lowerMu shared
// from the read to the store, as raise holds one's, so that a spend read
// before a credit is not stored after Reread's. A read past rollTimeout
// fails.
func (g *Gate) readLate(z *zone, d *day, ids []string) error {
	for _, i := range z.ids {
		g.lowerMu[i].RLock()
	}
	defer func() {
		for _, i := range z.ids {
			g.lowerMu[i].RUnlock()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), rollTimeout)
	defer cancel()
	spent, err := g.spent.SpentAllOn(ctx, d.n, ids)
	if err != nil {
		return fmt.Errorf("budget: reading the spend of day %d: %w", d.n, err)
	}
	for _, i := range z.ids {
		g.raiseTo(i, d, spent[g.ids[i]])
	}
	return nil
}

// idsOf returns the ids of z's advertisers.
func (g *Gate) idsOf(z *zone) []string {
	ids := make([]string, len(z.ids))
	for k, i := range z.ids {
		ids[k] = g.ids[i]
	}
	return ids
}

// raiseTimeout bounds raise's read of the spend, which holds the
// advertiser's lowerMu: a click's read that the store leaves unanswered
// would otherwise hold back, for as long, the Reread and the Sync that
// wait on it, and the visitor.
var raiseTimeout = time.Second

// raise reads advertiser i's spend of d from the store and keeps it when
// it is larger than what d holds; once the spend reaches the budget it
// stops an asap advertiser, and raises its flag when flag is set and this
// read is the one that reached the budget here. The flag is raised before
// a Reread may take it down. A read past raiseTimeout fails: the next
// click reads the spend, and the ledger holds the budget meanwhile.
func (g *Gate) raise(ctx context.Context, i int, d *day, flag string) error {
	g.lowerMu[i].RLock()
	defer g.lowerMu[i].RUnlock()
	rctx, cancel := context.WithTimeout(ctx, raiseTimeout)
	s, err := g.spent.SpentOn(rctx, g.ids[i], d.n)
	cancel()
	if err != nil {
		return fmt.Errorf("budget: reading the spend of %s: %w", g.ids[i], err)
	}
	if g.raiseTo(i, d, s) && flag != "" && g.flags != nil {
		if err := g.flags.Raise(ctx, flag, d.n); err != nil {
			return fmt.Errorf("budget: raising the flag of %s: %w", g.ids[i], err)
		}
	}
	return nil
}

// raiseTo keeps s, advertiser i's spend of d as the store holds it, when
// it is larger than what d holds, and reports whether that reached the
// budget, stopping an asap advertiser.
func (g *Gate) raiseTo(i int, d *day, s int64) (crossed bool) {
	b := g.budgets[i]
	if s >= b.DailyMicros {
		d.spentHere[i].Store(true)
		d.mine[i].Store(true)
	}
	for {
		old := d.spent[i].Load()
		if s <= old {
			return false
		}
		if d.spent[i].CompareAndSwap(old, s) {
			if s < b.DailyMicros || old >= b.DailyMicros {
				return false
			}
			if b.Pacing != accounts.Even {
				d.stop(i)
			}
			return true
		}
	}
}

// Reread reads again today's spend of the given advertisers (every
// budgeted one when none is given) and keeps it even when it is lower
// than what the gate holds: a credit (clicks.Invalidator) took bids off
// it. An advertiser whose spend is then below its budget is shown again,
// and its flags of the day, which would stop it again at the next Sync,
// are taken down. A click recorded meanwhile is not lost: Reread's read
// and store exclude Clicked's. It returns the first error, a read of
// the flags that failed too (run it again: a flag it could not see may
// be one a Sync would stop the advertiser with once Redis answers); the
// advertisers it could not read keep what the gate held.
//
// Reading every advertiser, it first reads the spend of all of them in
// one read a day (Spender.SpentAllOn, of the gate's advertisers only),
// and reads again, one by one as above, only those a credit may have
// lowered: those whose spend there is below what the gate holds, and
// those flagged under their budget.
// The others keep what the gate holds; their clicks raise it.
func (g *Gate) Reread(ctx context.Context, advertisers ...string) error {
	if g == nil || len(g.ids) == 0 {
		return nil
	}
	all := len(advertisers) == 0
	idx := make([]int, 0, len(g.ids))
	if all {
		for i := range g.ids {
			idx = append(idx, i)
		}
	}
	for _, id := range advertisers {
		if i, ok := slices.BinarySearch(g.ids, id); ok {
			idx = append(idx, i)
		}
	}
	now := g.now()
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	flagged := map[clicks.BudgetDay]map[string]bool{}
	stored := map[clicks.BudgetDay]storedSpend{}
	for _, i := range idx {
		z := g.zone(i)
		d := g.today(z, now)
		if d.n != clicks.BudgetDayIn(now, z.loc) {
			continue // the clock went back past its midnight
		}
		if _, ok := flagged[d.n]; !ok {
			var err error
			flagged[d.n], err = g.flaggedOn(ctx, d.n)
			note(err)
			if all {
				// After the flags, as each advertiser's read below.
				s, err := g.spent.SpentAllOn(ctx, d.n, g.ids)
				if err != nil {
					err = fmt.Errorf("budget: reading the spend of day %d: %w", d.n, err)
				}
				note(err)
				stored[d.n] = storedSpend{s, err}
			}
		}
		id := g.ids[i]
		if all && !g.mayBeCredited(i, d, stored[d.n], flagged[d.n][id]) {
			continue
		}
		note(g.lower(ctx, i, d, flagged[d.n][id]))
	}
	return first
}

// storedSpend is the spend of every advertiser on a day as the store
// holds it, or the error that read it.
type storedSpend struct {
	spent map[string]int64
	err   error
}

// mayBeCredited reports whether Reread reads advertiser i's spend of d
// again on its own, given s, every advertiser's spend of the day read
// after the credit: when the store holds less than d (a credit took bids
// off what d holds), or less than the budget with a flag raised
// (flagged), which that read takes down. Where the store holds at least
// what d holds, d holds no bid that a credit before the read took off; a
// credit after it has Reread run again. What d holds is taken under i's
// lock, as lower's read: a click or Sync that read the spend before the
// credit and has not stored it yet stores it first, and is compared; one
// after reads past the credit. When the day's read failed, no
// advertiser of it is read: they keep what the gate holds, and Reread
// returns the error.
func (g *Gate) mayBeCredited(i int, d *day, s storedSpend, flagged bool) bool {
	if s.err != nil {
		return false
	}
	g.lowerMu[i].Lock()
	held := d.spent[i].Load()
	g.lowerMu[i].Unlock()
	spent := s.spent[g.ids[i]]
	return spent < held || (flagged && spent < g.budgets[i].DailyMicros)
}

// flaggedOn returns the advertisers whose flags are raised on day n, read
// before Reread reads their spend: a flag another replica raised lately,
// which this gate's Sync has not read yet, is taken down all the same,
// or the next Sync would stop the advertiser with it once more, for the
// rest of the day. While the flags cannot be read it returns none and
// the error, which Reread returns, so that it is run again: once Redis
// answers, Sync would read such a flag again.
func (g *Gate) flaggedOn(ctx context.Context, n clicks.BudgetDay) (map[string]bool, error) {
	if g.flags == nil {
		return nil, nil
	}
	raised, err := g.flags.Raised(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("budget: reading the flags: %w", err)
	}
	ids := make(map[string]bool, len(raised))
	for _, f := range raised {
		id, _ := parseFlag(f)
		ids[id] = true
	}
	return ids, nil
}

// lower is Reread of advertiser i on d; flagged tells that a flag of it
// was raised on d.
func (g *Gate) lower(ctx context.Context, i int, d *day, flagged bool) error {
	g.lowerMu[i].Lock()
	defer g.lowerMu[i].Unlock()
	id, b := g.ids[i], g.budgets[i]
	s, err := g.spent.SpentOn(ctx, id, d.n)
	if err != nil {
		return fmt.Errorf("budget: reading the spend of %s: %w", id, err)
	}
	if s >= b.DailyMicros {
		g.raiseTo(i, d, s) // still spent: the larger count, and the flags, stay
		return nil
	}
	// Without a shared store a flag this replica did not raise is
	// another's, whose own clicks spent the budget: it stays up, and
	// the next Sync stops i again with it.
	mine := g.shared || d.mine[i].Load()
	var err2 error
	if g.flags != nil && mine && (flagged || d.spent[i].Load() >= b.DailyMicros) {
		// Down before the spend, so that a Sync between them does not
		// stop the advertiser again.
		if err := g.flags.Clear(ctx, id, d.n); err != nil {
			err2 = fmt.Errorf("budget: clearing the flags of %s: %w", id, err)
		} else {
			d.mine[i].Store(false)
		}
		g.cleared.Add(1)
	}
	d.spent[i].Store(s)
	d.spentHere[i].Store(false)
	d.resume(i)
	return err2
}

// zone is advertiser i's.
func (g *Gate) zone(i int) *zone { return g.zones[g.zoneOf[i]] }

// Clicked takes note of clicks the ledger recorded: a click's own, as
// it lands, or a shipment's of spooled ones (clicks.Spooler), with the
// verdicts the ledger gave them. For each advertiser with a click of its
// day that billed, or was refused as over budget, it reads the
// advertiser's spend of the day again, once; a read that reaches the
// budget stops the advertiser and raises its flag. Reading the spend,
// rather than adding the bids, keeps the count exact when clicks and
// the day's first read cross. Several advertisers are read in one read
// of each date (Spender.SpentAllOn), within one raiseTimeout, as a
// day's late read is, not one read each: a shipment of many
// advertisers' clicks over a slow store would otherwise hold the next
// shipment up to a second for each. It returns the first error.
func (g *Gate) Clicked(ctx context.Context, cs ...*clicks.Click) error {
	if g == nil {
		return nil
	}
	var due []dueRead
	for _, c := range cs {
		if !c.Billable && c.Reason != clicks.ReasonOverBudget {
			continue
		}
		i, ok := slices.BinarySearch(g.ids, c.Advertiser)
		if !ok || slices.ContainsFunc(due, func(r dueRead) bool { return r.i == i }) {
			continue
		}
		z := g.zone(i)
		d := g.today(z, c.Time)
		if d.n != clicks.BudgetDayIn(c.Time, z.loc) {
			continue // not the day served
		}
		due = append(due, dueRead{i, d})
	}
	if len(due) == 1 {
		i := due[0].i
		return g.raise(ctx, i, due[0].d, g.raiseOf(i))
	}
	// By date, then advertiser: the order every reader of several
	// advertisers takes their lowerMu in (readLate's too).
	slices.SortFunc(due, func(a, b dueRead) int { return cmp.Or(cmp.Compare(a.d.n, b.d.n), cmp.Compare(a.i, b.i)) })
	var first error
	for len(due) > 0 {
		k := 1
		for k < len(due) && due[k].d.n == due[0].d.n {
			k++
		}
		if err := g.raiseAll(ctx, due[:k]); err != nil && first == nil {
			first = err
		}
		due = due[k:]
	}
	return first
}

// dueRead is an advertiser whose spend of d Clicked reads.
type dueRead struct {
	i int
	d *day
}

// raiseAll is raise of each of due, advertisers of one date in the order
// of their index, in one read of the spend of that date: it holds their
// lowerMu shared from the read to the stores and flags, as readLate
// does. A read past raiseTimeout fails.
func (g *Gate) raiseAll(ctx context.Context, due []dueRead) error {
	ids := make([]string, len(due))
	for k, r := range due {
		ids[k] = g.ids[r.i]
		g.lowerMu[r.i].RLock()
	}
	defer func() {
		for _, r := range due {
			g.lowerMu[r.i].RUnlock()
		}
	}()
	n := due[0].d.n
	rctx, cancel := context.WithTimeout(ctx, raiseTimeout)
	spent, err := g.spent.SpentAllOn(rctx, n, ids)
	cancel()
	if err != nil {
		return fmt.Errorf("budget: reading the spend of day %d: %w", n, err)
	}
	// After a flag Redis did not take, the others are not tried: each
	// would wait out its timeout while a credit waits for the locks. The
	// advertisers stop here all the same, and the ledger bills none over
	// its budget on any replica.
	var first error
	for _, r := range due {
		id := g.ids[r.i]
		if g.raiseTo(r.i, r.d, spent[id]) && g.flags != nil && first == nil {
			if err := g.flags.Raise(ctx, g.raiseOf(r.i), n); err != nil {
				first = fmt.Errorf("budget: raising the flag of %s: %w", id, err)
			}
		}
	}
	return first
}

// Sync reads the flags the other replicas raised on each advertiser's
// day and stops those advertisers as if their spend here had reached the
// budget (Spent then says the budget, at least). It reads the flags of
// each day current in the budgets' zones, at most three; a day whose read
// fails does not keep the others unread, and its error is returned. The
// server calls it every second.
func (g *Gate) Sync(ctx context.Context) error {
	if g == nil || g.flags == nil || len(g.ids) == 0 {
		return nil
	}
	now := g.now()
	var days []clicks.BudgetDay
	current := make([]*day, len(g.zones)) // each zone's day, nil if unread
	for zi, z := range g.zones {
		d := g.today(z, now)
		if d.n != clicks.BudgetDayIn(now, z.loc) {
			continue // the clock went back past its midnight
		}
		current[zi] = d
		if !slices.Contains(days, d.n) {
			days = append(days, d.n)
		}
	}
	// A day whose read fails does not keep the others unread: on a Redis
	// Cluster each day's set may live on a master of its own.
	var first error
	read := map[clicks.BudgetDay][]string{}
	var reads storeReads
	defer reads.end()
	for _, n := range days {
		gen := g.cleared.Load()
		raised, err := g.flags.Raised(ctx, n)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("budget: reading the flags: %w", err)
			}
			continue
		}
		read[n] = raised
		g.stopRaised(ctx, raised, n, current, gen, &reads)
		if !g.shared {
			if err := g.raiseAgain(ctx, raised, n, current); err != nil && first == nil {
				first = err
			}
			var err error
			if raised, err = g.takeDown(ctx, raised, n, current); err != nil && first == nil {
				first = err
			}
			if err := g.showAgain(ctx, raised, n, current); err != nil && first == nil {
				first = err
			}
		}
	}
	if g.shared {
		g.forget(ctx, days, read, current, &reads)
	}
	return first
}

// checkTimeout bounds a Sync's reads of the spend in the store
// (Options.Shared), all together; past it the flags left are trusted.
var checkTimeout = time.Second

// storeReads are one Sync's reads of the spend in the shared store, its
// checks of flags (stale) and its reads for the flags it trusted
// (restore). They share one checkTimeout from the first, so that a Sync
// of many new flags over a slow store does not read it for each in turn,
// a second each, while the flags after them wait; once one fails, the
// store down or the time up (down), the flags left are trusted, and
// stop their advertisers at once.
type storeReads struct {
	ctx    context.Context
	cancel context.CancelFunc
	down   bool
}

// in returns the context of a read: ctx, bounded by checkTimeout from the
// Sync's first read.
func (r *storeReads) in(ctx context.Context) context.Context {
	if r.ctx == nil {
		r.ctx, r.cancel = context.WithTimeout(ctx, checkTimeout)
	}
	return r.ctx
}

// end releases the reads' timer.
func (r *storeReads) end() {
	if r.cancel != nil {
		r.cancel()
	}
}

// stopRaised stops the advertisers of raised, flags of day n, whose
// zone's current day is n, unless Reread took down flags since gen (of
// cleared) was read before the flags: the next Sync reads them again.
// With a shared store, an advertiser this gate holds under its budget is
// stopped only when the store says its budget is spent, or does not
// answer (stale).
func (g *Gate) stopRaised(ctx context.Context, raised []string, n clicks.BudgetDay, current []*day, gen uint64, reads *storeReads) {
	for _, f := range raised {
		id, spentAt := parseFlag(f)
		i, ok := slices.BinarySearch(g.ids, id)
		if !ok {
			continue
		}
		d := current[g.zoneOf[i]]
		if d == nil || d.n != n {
			continue // another day of the advertiser's
		}
		b := g.budgets[i]
		if spentAt > 0 && spentAt < b.DailyMicros {
			continue // spent against a smaller budget than this gate's
		}
		g.lowerMu[i].RLock()
		if g.cleared.Load() != gen {
			g.lowerMu[i].RUnlock()
			return
		}
		if g.shared && d.spent[i].Load() < b.DailyMicros && g.stale(ctx, i, d, dayFlag{f, n}, reads) {
			g.lowerMu[i].RUnlock()
			continue
		}
		for {
			old := d.spent[i].Load()
			if old >= b.DailyMicros || d.spent[i].CompareAndSwap(old, b.DailyMicros) {
				break
			}
		}
		if b.Pacing != accounts.Even {
			d.stop(i)
		}
		g.lowerMu[i].RUnlock()
	}
}

// raiseAgain raises, without a shared store, the flags of day n missing
// from raised, the day's flags, of the advertisers whose budget this
// replica's own store holds spent: another replica's credit of its own
// clicks took every flag of the budget down. A flag of the same text
// (flagOf), whatever its nonce, counts as up. It returns the first error,
// after which it tries no more.
func (g *Gate) raiseAgain(ctx context.Context, raised []string, n clicks.BudgetDay, current []*day) error {
	var up map[string]bool
	for zi, z := range g.zones {
		d := current[zi]
		if d == nil || d.n != n {
			continue
		}
		for _, i := range z.ids {
			if !d.spentHere[i].Load() {
				continue
			}
			if up == nil {
				up = make(map[string]bool, len(raised))
				for _, f := range raised {
					up[flagOf(parseFlag(f))] = true
				}
			}
			if up[flagOf(g.ids[i], g.budgets[i].DailyMicros)] {
				continue
			}
			// Under i's lock, as raise: a Reread that lowers i orders
			// its take-down after this.
			g.lowerMu[i].RLock()
			var err error
			if d.spentHere[i].Load() {
				if err = g.flags.Raise(ctx, g.raiseOf(i), n); err == nil {
					d.mine[i].Store(true)
				}
			}
			g.lowerMu[i].RUnlock()
			if err != nil {
				return fmt.Errorf("budget: raising the flag of %s again: %w", g.ids[i], err)
			}
		}
	}
	return nil
}

// takeDown takes down, without a shared store, this replica's own flags
// (ownFlag) of day n of advertisers whose budget its own store holds
// unspent: a credit here gave the budget room again and Redis did not
// take its Clear, or the replica restarted since and forgot the flag was
// its own (mine). Nothing else would take such a flag down, and every
// replica would leave the advertiser out for the rest of its day. Only
// its own: another replica's flag tells that replica's own spend. It
// reads this replica's store only for a flag of an advertiser it does
// not hold spent here (spentHere), as Reread's lower does, under i's
// lowerMu; an own flag of a smaller budget than this gate's stops
// nobody here and is left up. It returns raised, the day's flags,
// without those it took down, and the first error, after which it tries
// no more.
func (g *Gate) takeDown(ctx context.Context, raised []string, n clicks.BudgetDay, current []*day) ([]string, error) {
	if g.replica == "" {
		return raised, nil
	}
	var down []string
	for _, f := range raised {
		if !ownFlag(f, g.replica) {
			continue
		}
		id, at := parseFlag(f)
		i, ok := slices.BinarySearch(g.ids, id)
		if !ok {
			continue
		}
		d := current[g.zoneOf[i]]
		if d == nil || d.n != n || at < g.budgets[i].DailyMicros {
			continue
		}
		if !d.spentHere[i].Load() {
			dropped, err := g.dropOwn(ctx, i, d, f)
			if dropped {
				down = append(down, f)
				continue
			}
			if err != nil {
				return without(raised, down), err
			}
		}
		d.mine[i].Store(true) // up: a credit here takes it down
	}
	return without(raised, down), nil
}

// without returns flags without those of down, a copy when down holds
// any.
func without(flags, down []string) []string {
	if len(down) == 0 {
		return flags
	}
	return slices.DeleteFunc(slices.Clone(flags), func(f string) bool { return slices.Contains(down, f) })
}

// dropOwn reads advertiser i's spend of d in this replica's own store
// and takes down f, a flag of i's of its own, when it is under the
// budget, reporting whether it did; a spend that reaches it is kept, and
// f stays up. Under i's lowerMu, as Reread's lower: a click that reads
// the spend after this read and reaches the budget raises a flag of its
// own nonce, which stays. A read past raiseTimeout fails.
func (g *Gate) dropOwn(ctx context.Context, i int, d *day, f string) (bool, error) {
	g.lowerMu[i].Lock()
	defer g.lowerMu[i].Unlock()
	if d.spentHere[i].Load() {
		return false, nil
	}
	rctx, cancel := context.WithTimeout(ctx, raiseTimeout)
	s, err := g.spent.SpentOn(rctx, g.ids[i], d.n)
	cancel()
	if err != nil {
		return false, fmt.Errorf("budget: reading the spend of %s: %w", g.ids[i], err)
	}
	if s >= g.budgets[i].DailyMicros {
		g.raiseTo(i, d, s)
		return false, nil
	}
	if err := g.flags.Remove(ctx, []string{f}, d.n); err != nil {
		return false, fmt.Errorf("budget: taking down the flag of %s: %w", g.ids[i], err)
	}
	// As lower's Clear: a Sync that read the flags before stops nobody
	// with them.
	g.cleared.Add(1)
	return true, nil
}

// showAgain shows again, without a shared store, the advertisers of day
// n that a flag stopped here (their spend held at the budget, though
// this replica's own store does not hold it spent: spentHere unset)
// when raised, the day's flags, holds none that stops them any more: the
// replica that raised it took it down, its own clicks credited. This
// replica hears of no credit but its own, and would otherwise keep the
// advertiser out for the rest of its day. Each is read in this replica's
// own store (unstop) and shown again when under its budget; a flag
// raised again stops it at the next Sync. It returns the first error,
// after which it tries no more.
func (g *Gate) showAgain(ctx context.Context, raised []string, n clicks.BudgetDay, current []*day) error {
	var up map[string][]int64
	for zi, z := range g.zones {
		d := current[zi]
		if d == nil || d.n != n {
			continue
		}
		for _, i := range z.ids {
			b := g.budgets[i]
			if d.spentHere[i].Load() || d.spent[i].Load() < b.DailyMicros {
				continue
			}
			if up == nil {
				up = make(map[string][]int64, len(raised))
				for _, f := range raised {
					id, at := parseFlag(f)
					up[id] = append(up[id], at)
				}
			}
			// As stopRaised: a flag of a smaller budget stops nobody.
			if slices.ContainsFunc(up[g.ids[i]], func(at int64) bool { return at <= 0 || at >= b.DailyMicros }) {
				continue
			}
			if err := g.unstop(ctx, i, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// unstop reads advertiser i's spend of d in this replica's own store and
// keeps it, lower than what d holds, when it is under the budget,
// showing i again: a flag stopped i here, and is down. Under i's
// lowerMu, as Reread's lower, so that a click's read is not lost under
// it; a click that spent the budget here meanwhile (spentHere) keeps it
// stopped. A read past raiseTimeout fails.
func (g *Gate) unstop(ctx context.Context, i int, d *day) error {
	g.lowerMu[i].Lock()
	defer g.lowerMu[i].Unlock()
	b := g.budgets[i]
	if d.spentHere[i].Load() || d.spent[i].Load() < b.DailyMicros {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, raiseTimeout)
	s, err := g.spent.SpentOn(rctx, g.ids[i], d.n)
	cancel()
	if err != nil {
		return fmt.Errorf("budget: reading the spend of %s: %w", g.ids[i], err)
	}
	if s >= b.DailyMicros {
		g.raiseTo(i, d, s)
		return nil
	}
	d.spent[i].Store(s)
	d.resume(i)
	return nil
}

// recheckStale is how long a flag the store found stale is taken as
// stale without reading the store again. A raise's nonce makes a real
// crossing of a budget a flag of its own, read at once; but a flag of a
// replica of an older version names only the advertiser and its budget,
// not the raise: one stale flag left up (its replica gone before its own
// read took it down) would otherwise hide such a replica's real crossing
// of the same budget later that day.
const recheckStale = 30 * time.Second

// stale reports whether flag k of advertiser i, whose spend d holds
// under its budget, is stale: the store says the budget is not spent (a
// flag raised from a spend read before a credit). It reads the store once
// for each flag every recheckStale: one found stale is kept in checked
// while it stays raised, and one that a read found spent stops the
// advertiser here, its spend the store's. While the store does not
// answer (reads.down, set by
// the first read of a Sync that fails, so that the others do not wait on
// it too, or once the Sync's reads took checkTimeout) the flag is
// trusted, and kept in trusted, unless a read found it stale before: it
// then stays stale until a Sync's read answers. Called under i's
// lowerMu, read, as a click's read: a Reread orders its read after it.
func (g *Gate) stale(ctx context.Context, i int, d *day, k dayFlag, reads *storeReads) bool {
	now := g.now()
	g.checkMu.Lock()
	at, seen := g.checked[k]
	g.checkMu.Unlock()
	if seen && now.Sub(at) < recheckStale && !now.Before(at) {
		return true
	}
	if !reads.down {
		s, err := g.spent.SpentOn(reads.in(ctx), g.ids[i], d.n)
		if err == nil {
			g.raiseTo(i, d, s)
			if s >= g.budgets[i].DailyMicros {
				return false
			}
			g.checkMu.Lock()
			g.checked[k] = now
			g.checkMu.Unlock()
			return true
		}
		reads.down = true
	}
	if seen {
		// Found stale before: a read missed tells nothing new, and
		// trusting it would hide the advertiser while the store is down
		// or, with many flags due at once, past the Sync's second.
		return true
	}
	g.checkMu.Lock()
	g.trusted[k] = i
	g.checkMu.Unlock()
	return false
}

// forget drops from checked the flags no longer raised: those of a day
// no longer current (days), and those missing from their day's flags as
// Sync read them (read; a day whose read failed keeps its own), so that
// a flag raised anew is read again. It reads the store again for each
// advertiser a trusted flag stopped (restore), once the store answers:
// the flag may be stale, and then one replica's stale flag would hide
// the advertiser here for the rest of its day, taken down or not.
func (g *Gate) forget(ctx context.Context, days []clicks.BudgetDay, read map[clicks.BudgetDay][]string, current []*day, reads *storeReads) {
	g.checkMu.Lock()
	none := len(g.checked) == 0 && len(g.trusted) == 0
	g.checkMu.Unlock()
	if none {
		return // as nearly always: no flag to index
	}
	up := make(map[dayFlag]bool)
	for n, raised := range read {
		for _, f := range raised {
			up[dayFlag{f, n}] = true
		}
	}
	gone := func(k dayFlag) bool {
		_, ok := read[k.day]
		return !slices.Contains(days, k.day) || (ok && !up[k])
	}
	type trust struct {
		k dayFlag
		i int
	}
	var again []trust
	g.checkMu.Lock()
	for k := range g.checked {
		if gone(k) {
			delete(g.checked, k)
		}
	}
	for k, i := range g.trusted {
		again = append(again, trust{k, i})
	}
	g.checkMu.Unlock()
	for _, r := range again {
		if d := current[g.zoneOf[r.i]]; d != nil && d.n == r.k.day {
			if reads.down {
				continue // trusted until a Sync's read answers
			}
			if err := g.restore(reads.in(ctx), r.i, d, r.k, !gone(r.k)); err != nil {
				reads.down = true
				continue
			}
		}
		g.checkMu.Lock()
		delete(g.trusted, r.k)
		g.checkMu.Unlock()
	}
}

// restore reads advertiser i's spend of d from the store and keeps it,
// even when lower than what d holds: flag k stopped i here while the
// store did not answer. When the store holds i under its budget, i is
// shown again, and k, if still raised (up), is kept in checked, stale.
// It takes down no flag: one raised since is read by the next Sync. ctx
// bounds the read (storeReads).
func (g *Gate) restore(ctx context.Context, i int, d *day, k dayFlag, up bool) error {
	g.lowerMu[i].Lock()
	defer g.lowerMu[i].Unlock()
	s, err := g.spent.SpentOn(ctx, g.ids[i], d.n)
	if err != nil {
		return err
	}
	if s >= g.budgets[i].DailyMicros {
		g.raiseTo(i, d, s)
		return nil
	}
	if up {
		g.checkMu.Lock()
		g.checked[k] = g.now()
		g.checkMu.Unlock()
	}
	d.spent[i].Store(s)
	d.resume(i)
	return nil
}

// Carry takes into g, a gate not served yet, what old, the gate it
// replaces, knows of today's spend: for each advertiser both budget, the
// larger of the two spends, when both gates are on the same day of its
// budget (a zone changed keeps the date's spend when the date is the
// same). g's spend was read when it was made, which may be a while before
// it is served; old saw the clicks since. It reads no store, so that a swap can call
// it under its lock; a nil g or old carries nothing.
func (g *Gate) Carry(old *Gate) {
	if g == nil || old == nil || len(g.ids) == 0 {
		return
	}
	for i, id := range g.ids {
		j, ok := slices.BinarySearch(old.ids, id)
		if !ok {
			continue
		}
		d, od := g.zone(i).day.Load(), old.zone(j).day.Load()
		if d.n != od.n {
			continue
		}
		if od.mine[j].Load() {
			d.mine[i].Store(true)
		}
		if od.spentHere[j].Load() && old.budgets[j].DailyMicros == g.budgets[i].DailyMicros {
			d.spentHere[i].Store(true)
		}
		s := od.spent[j].Load()
		for {
			cur := d.spent[i].Load()
			if s <= cur || d.spent[i].CompareAndSwap(cur, s) {
				break
			}
		}
		if b := g.budgets[i]; d.spent[i].Load() >= b.DailyMicros && b.Pacing != accounts.Even {
			d.stop(i)
		}
	}
}

// flagOf is the text of the flag of advertiser id once its daily budget
// of daily micros is spent. The budget rides with the id: a replica whose
// budget for it is larger (a reload raised it) keeps showing its ads.
func flagOf(id string, daily int64) string { return id + "@" + strconv.FormatInt(daily, 10) }

// raiseOf is the flag a raise of advertiser id's budget of daily micros
// adds: its text (flagOf) and "#" a random nonce, so that each raise is a
// flag of its own. A real crossing of a budget whose stale flag is still
// up, or was taken down and raised again between two Syncs, is then a
// flag a Sync has not checked, not one it found stale. With replica, a
// replica id, the nonce is the id and then the random part, each
// replicaLen long (ownFlag); without, the random part alone, unpadded, as
// older replicas raise it.
func raiseOf(id string, daily int64, replica string) string {
	if replica == "" {
		return flagOf(id, daily) + "#" + strconv.FormatUint(rand.Uint64(), 36)
	}
	return flagOf(id, daily) + "#" + replica + pad(rand.Uint64())
}

// raiseOf is the flag a raise of advertiser i's budget adds here.
func (g *Gate) raiseOf(i int) string { return raiseOf(g.ids[i], g.budgets[i].DailyMicros, g.replica) }

// ownFlag reports whether flag f was raised by the replica of id replica
// (raiseOf): its nonce is that id and a random part, and it names a
// budget. False for every flag when replica is empty.
func ownFlag(f, replica string) bool {
	i := strings.LastIndexByte(f, '#')
	if replica == "" || i < 0 || len(f)-i-1 != 2*replicaLen || !strings.HasPrefix(f[i+1:], replica) {
		return false
	}
	_, n := parseFlag(f)
	return n > 0
}

// parseFlag reads a flag: the advertiser, and the budget it spent, or 0
// for a flag that names none, which stops the advertiser whatever its
// budget. A raise's nonce (raiseOf) is left out; older replicas raise
// flags without one.
func parseFlag(f string) (id string, daily int64) {
	if i := strings.LastIndexByte(f, '#'); i >= 0 && isNonce(f[i+1:]) {
		if id, n := parseText(f[:i]); n > 0 {
			return id, n
		}
	}
	return parseText(f)
}

// parseText reads a flag's text, "id@budget" or a bare id (flagOf).
func parseText(f string) (id string, daily int64) {
	if i := strings.LastIndexByte(f, '@'); i >= 0 {
		if n, err := strconv.ParseInt(f[i+1:], 10, 64); err == nil && n > 0 {
			return f[:i], n
		}
	}
	return f, 0
}

// isNonce reports whether s is a raise's nonce: digits and lower-case
// letters (base 36), one at least.
func isNonce(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// Spent returns what the advertiser spent today as the gate knows it.
func (g *Gate) Spent(advertiser string) int64 {
	if g == nil {
		return 0
	}
	i, ok := slices.BinarySearch(g.ids, advertiser)
	if !ok {
		return 0
	}
	return g.today(g.zone(i), g.now()).spent[i].Load()
}

// Pace is the share of answers that show an advertiser with even pacing,
// given what it spent of its daily budget by at, in its day from start
// (its local midnight) to end (the next): all of them while its spend is
// on or below the straight line from nothing at start to the whole budget
// at end, none once it is an hour's budget above that line, and falling
// linearly in between. A day a clock change makes 23 or 25 hours long
// spreads the budget over those hours. An advertiser that fell behind (no
// readers in the night) is shown everywhere until it catches up.
func Pace(daily, spent int64, start, end, at time.Time) float64 {
	length := end.Sub(start)
	if daily <= 0 || length <= 0 {
		return 1
	}
	elapsed := float64(at.Sub(start)) / float64(length)
	hour := float64(daily) * float64(time.Hour) / float64(length)
	return min(max((float64(daily)*elapsed+hour-float64(spent))/hour, 0), 1)
}

// Paced is an advertiser group that a page shows with probability Show.
type Paced struct {
	Group uint32
	Show  float64
}

// Exclude returns the advertiser groups of ix that an answer made now
// leaves out (match.Query.Exclude): those whose budget is spent, and each
// paced one that loses its draw. It returns nil when none is.
func (g *Gate) Exclude(ix *match.Index) []uint32 {
	if g == nil || len(g.ids) == 0 {
		return nil
	}
	var out []uint32
	g.held(ix, func(group uint32, show float64) {
		if show <= 0 || g.rand() >= show {
			out = append(out, group)
		}
	})
	return out
}

// held calls fn with the group in ix of each advertiser an answer may not
// show now, and the share of answers that may (under 1).
func (g *Gate) held(ix *match.Index, fn func(group uint32, show float64)) {
	now := g.now()
	var groups []int32
	for _, z := range g.zones {
		d := g.today(z, now)
		for _, i := range z.candidates(d) {
			show := g.show(i, d, now)
			if show >= 1 {
				continue
			}
			if groups == nil {
				groups = g.groupsOf(ix)
			}
			if groups[i] >= 0 {
				fn(uint32(groups[i]), show)
			}
		}
	}
}

// Page returns what the shard manifest of ix tells a page: the groups it
// must leave out, and those it shows with a probability, drawn in the
// page.
func (g *Gate) Page(ix *match.Index) (exclude []uint32, paced []Paced) {
	if g == nil || len(g.ids) == 0 {
		return nil, nil
	}
	g.held(ix, func(group uint32, show float64) {
		if show <= 0 {
			exclude = append(exclude, group)
		} else {
			paced = append(paced, Paced{Group: group, Show: show})
		}
	})
	slices.Sort(exclude)
	slices.SortFunc(paced, func(a, b Paced) int { return cmp.Compare(a.Group, b.Group) })
	return exclude, paced
}

// candidates are the advertisers of z an answer may leave out: those
// whose budget is spent on d, and those paced even.
func (z *zone) candidates(d *day) []int {
	out := *d.out.Load()
	if len(z.even) == 0 {
		return out
	}
	if len(out) == 0 {
		return z.even
	}
	return append(slices.Clip(out), z.even...)
}

// show is the share of answers that may show advertiser i now: 0 once its
// budget is spent.
func (g *Gate) show(i int, d *day, now time.Time) float64 {
	b, s := &g.budgets[i], d.spent[i].Load()
	switch {
	case s >= b.DailyMicros:
		return 0
	case b.Pacing == accounts.Even:
		return Pace(b.DailyMicros, s, d.start, d.end, now)
	}
	return 1
}

// groupsOf returns each budgeted advertiser's group in ix, or -1.
func (g *Gate) groupsOf(ix *match.Index) []int32 {
	key := weak.Make(ix)
	if v, ok := g.groups.Load(key); ok {
		return v.([]int32)
	}
	all := ix.AdvertiserGroups()
	groups := make([]int32, len(g.ids))
	for i, id := range g.ids {
		groups[i] = -1
		if grp, ok := all[id]; ok {
			groups[i] = int32(grp)
		}
	}
	g.groups.Range(func(k, _ any) bool {
		if k.(weak.Pointer[match.Index]).Value() == nil {
			g.groups.Delete(k)
		}
		return true
	})
	g.groups.Store(key, groups)
	return groups
}

func randFloat() float64 { return rand.Float64() }
