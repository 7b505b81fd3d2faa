package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/budget"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/match"
)

// Catalog is one version of the catalog as the handlers read it. A
// request reads the version it started with from its start to its end: a
// refresh swaps in a new one, and the requests in flight finish on theirs.
// A Catalog is never changed once served.
type Catalog struct {
	// Version is the catalog's content hash, sent in X-Adlink-Catalog;
	// empty sends no header.
	Version string
	// Indexes are the catalog's indexes by market.
	Indexes market.Indexes
	// Shards are what the page loads for this version; nil serves none.
	Shards *shards.Set
	// Retired are earlier versions' shards, still served by their address
	// until their time is up, for pages that hold an earlier manifest.
	Retired []Retired
	// Removed are the ads gone from the catalog whose click links may
	// still be followed, by id: they land until their time is up.
	Removed map[string]Removed
	// Partners, Accounts and Budget, when set, are the partners, report
	// readers and budgets served with this version in place of Deps',
	// so that a reload swaps them with the catalog and a request sees
	// one set from its start to its end.
	Partners partners.Registry
	Accounts *accounts.Book
	Budget   *budget.Gate
	// Before is what the catalogs served before this one had of the ads
	// whose criteria a refresh changed, one for each such refresh whose
	// time, and a click token's TTL after it, is not up, newest first: a
	// page that matched on their shards names those in the links it
	// makes, which count until that Before's time is up (criterionOf),
	// and whose clicks, on a token issued by then, record them after it.
	Before []Before
}

// Before is the ads of the catalog served before the last refresh whose
// criteria it changed, as they were, when that refresh was swapped in,
// and until when a page-made link may name a criterion of theirs.
type Before struct {
	Index *match.Index
	From  time.Time
	Until time.Time
}

// Retired is an earlier version's shards and until when they are served.
type Retired struct {
	Shards *shards.Set
	Until  time.Time
}

// Removed is an ad gone from the catalog and until when its click links
// land.
type Removed struct {
	Ad    match.Ad
	Until time.Time
	// Budget is the last daily budget its advertiser had (none when
	// DailyMicros is 0): a click on the ad's links is billed under it
	// once the advertiser has left the advertisers file, which would
	// otherwise leave its links billing without a limit.
	Budget accounts.Budget
}

// CatalogState is what /readyz says of the catalog and its refreshes.
type CatalogState struct {
	Version  string    `json:"version"`
	Ads      int       `json:"ads"`
	LoadedAt time.Time `json:"loaded_at"`
	// LastRefresh is the last refresh tried, if any.
	LastRefresh *RefreshState `json:"last_refresh,omitempty"`
	// Replicas, with -redis or -postgres, is the catalog the replicas
	// agreed on.
	Replicas *ReplicasState `json:"replicas,omitempty"`
}

// ReplicasState is the catalog a replica announced last, and whether this
// one serves another: its feeds could not be read, or gave another
// catalog. Its next refresh tries again.
type ReplicasState struct {
	Version string `json:"version"`
	Behind  bool   `json:"behind"`
}

// RefreshState is how a refresh ended: swapped, unchanged, refused or
// failed, and why when it was not served.
type RefreshState struct {
	At     time.Time `json:"at"`
	Result string    `json:"result"`
	Error  string    `json:"error,omitempty"`
	// Accounts, Partners, Advertisers and AccountsError are how the
	// partners and advertisers files fared, as Reload says.
	Accounts      string `json:"accounts,omitempty"`
	Partners      string `json:"partners,omitempty"`
	Advertisers   string `json:"advertisers,omitempty"`
	AccountsError string `json:"accounts_error,omitempty"`
}

// Failing tells whether the refresh left something older than its feeds
// or files served: the catalog, or either accounts file, refused or
// failed.
func (s *RefreshState) Failing() bool {
	for _, r := range []string{s.Result, s.Accounts, s.Partners, s.Advertisers} {
		if r == "refused" || r == "failed" {
			return true
		}
	}
	return false
}

// catalogKey is the context key of the request's Catalog.
type catalogKey struct{}

// withCatalog gives the request the catalog served now, and names its
// version in the answer.
func (s *server) withCatalog(w http.ResponseWriter, r *http.Request) *http.Request {
	if s.catalog == nil {
		return r
	}
	c := s.catalog()
	if c.Version != "" {
		w.Header().Set("X-Adlink-Catalog", c.Version)
	}
	return r.WithContext(context.WithValue(r.Context(), catalogKey{}, c))
}

// behindWait bounds how long a click on an ad the catalog lacks waits for
// the newer catalog the replica is reading (Deps.AwaitCatalog).
const behindWait = 10 * time.Second

// newerCatalog gives the request the catalog served now, when it is newer
// than the one the request started with, or becomes so within behindWait
// while the replica catches up with the others; ok is false, at once when
// the replica is not behind, when no newer one came.
func (s *server) newerCatalog(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if s.await == nil {
		return r, false
	}
	pinned := s.catalogOf(r)
	c := s.catalog()
	if c == pinned {
		ctx, cancel := context.WithTimeout(r.Context(), behindWait)
		defer cancel()
		if !s.await(ctx) {
			return r, false
		}
		if c = s.catalog(); c == pinned {
			return r, false
		}
	}
	// Its partners and budgets come with it: the request reads one set.
	w.Header().Del("X-Adlink-Catalog")
	if c.Version != "" {
		w.Header().Set("X-Adlink-Catalog", c.Version)
	}
	return r.WithContext(context.WithValue(r.Context(), catalogKey{}, c)), true
}

// catalogOf is the catalog the request started with.
func (s *server) catalogOf(r *http.Request) *Catalog {
	if c, ok := r.Context().Value(catalogKey{}).(*Catalog); ok {
		return c
	}
	return s.catalog()
}

// partnersIn, accountsIn and budgetIn are the partners, report readers
// and budgets of the catalog the request of ctx started with, else
// Deps'. A version served with neither is an internal error: falling
// back on an earlier set would let keys and tokens revoked since in.
func (s *server) partnersIn(ctx context.Context) (partners.Registry, error) {
	if c, ok := ctx.Value(catalogKey{}).(*Catalog); ok && c.Partners != nil {
		return c.Partners, nil
	}
	if s.partners == nil {
		return nil, internal(errors.New("the catalog served has no partners"))
	}
	return s.partners, nil
}

func (s *server) accountsIn(ctx context.Context) (*accounts.Book, error) {
	if c, ok := ctx.Value(catalogKey{}).(*Catalog); ok && c.Accounts != nil {
		return c.Accounts, nil
	}
	if s.accounts == nil {
		return nil, internal(errors.New("the catalog served has no advertiser accounts"))
	}
	return s.accounts, nil
}

// budgetIn is nil, which holds no budget, when neither the version nor
// Deps has a gate; the ledger bills no click over the budgets of
// accountsIn either way.
func (s *server) budgetIn(ctx context.Context) *budget.Gate {
	if c, ok := ctx.Value(catalogKey{}).(*Catalog); ok && c.Budget != nil {
		return c.Budget
	}
	return s.budget
}

// ad finds an ad by id: in the catalog, else among the ads removed whose
// click links still land. Its bid is the catalog's, exactly: what a click
// on it costs.
func (c *Catalog) ad(id string, now time.Time) (match.Ad, bool) {
	ix := c.Indexes.All()
	if i, ok := ix.Lookup(id); ok {
		a := ix.Ad(i)
		a.BidMicros = c.Indexes.Bid(id) // the index keeps it rounded
		return a, true
	}
	if r, ok := c.Removed[id]; ok && now.Before(r.Until) {
		return r.Ad, true
	}
	return match.Ad{}, false
}

// keptBudget is the last budget of the advertiser of id, an ad removed
// whose click links still land at now, when it had one.
func (c *Catalog) keptBudget(id string, now time.Time) (accounts.Budget, bool) {
	if _, live := c.Indexes.All().Lookup(id); live {
		return accounts.Budget{}, false
	}
	r, ok := c.Removed[id]
	return r.Budget, ok && now.Before(r.Until) && r.Budget.DailyMicros > 0
}

// criterionOf is criterion, when it is made of the criteria of the ad
// id, which is the ad at in ix, this catalog's, as the ad's criteria spell
// it (match.Index.CanonicalCriterion): as the catalog served at now had
// them (ix's, or a Before's from a refresh after now), or, when now is
// within a Before's time, as the catalog before that refresh had them. A
// page still on the shards of an earlier catalog names those. When it is
// no criterion of the ad but a looser match (ctx.dist=low or none, as a
// page's adlink.search may ask) can have named it, all its words in the
// ad's text (match.Index.HasWords) in one of those catalogs, it is "",
// no criterion, so that such links make one report row an ad; ok is
// false when it is neither. at is -1 for an ad ix does not have. A click
// passes the time its token was issued as now, and so records what its
// impression did, even when a refresh since changed which criterion that
// is.
func (c *Catalog) criterionOf(ix *match.Index, at int, id, criterion string, now time.Time) (string, bool) {
	for k := len(c.Before) - 1; k >= 0; k-- { // oldest first
		if b := c.Before[k]; now.Before(b.From) {
			if i, ok := b.Index.Lookup(id); ok {
				ix, at = b.Index, i
				break
			}
		}
	}
	if canon := ix.CanonicalCriterion(at, criterion); canon != "" {
		return canon, true
	}
	loose := ix.HasWords(at, criterion)
	for _, b := range c.Before {
		if !now.Before(b.Until) || now.Before(b.From) {
			continue
		}
		if i, ok := b.Index.Lookup(id); ok {
			if canon := b.Index.CanonicalCriterion(i, criterion); canon != "" {
				return canon, true
			}
			loose = loose || b.Index.HasWords(i, criterion)
		}
	}
	return "", loose
}

// pageCriterion is criterionOf for the ad id wherever this catalog
// indexes it, at now: "" for an ad it no longer has, whose criteria it
// cannot read.
func (c *Catalog) pageCriterion(id, criterion string, now time.Time) (string, bool) {
	ix := c.Indexes.All()
	at, ok := ix.Lookup(id)
	if !ok {
		at = -1
	}
	return c.criterionOf(ix, at, id, criterion, now)
}

// shard finds a shard by its address in this version, else in an earlier
// one still served, with the set that holds it.
func (c *Catalog) shard(sha string, now time.Time) (*shards.Blob, *shards.Set) {
	if c.Shards != nil {
		if b := c.Shards.Shard(sha); b != nil {
			return b, c.Shards
		}
	}
	for _, r := range c.Retired {
		if now.Before(r.Until) {
			if b := r.Shards.Shard(sha); b != nil {
				return b, r.Shards
			}
		}
	}
	return nil, nil
}
