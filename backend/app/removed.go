package app

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/internal/atomicfile"
	"github.com/adlink/adlink/match"
)

// RemovedFile, in the data directory, keeps the ads that refreshes
// removed and whose click links still land (api.Catalog.Removed), so that
// the links a server gave before a restart land after it too.
const RemovedFile = "removed-ads.json"

// savedRemoved is a removed ad as RemovedFile keeps it, with its
// advertiser's last budget, which a restart must not forget once the
// advertiser has left the advertisers file.
type savedRemoved struct {
	Until  time.Time            `json:"until"`
	Ad     match.Ad             `json:"ad"`
	Budget *catalog.SavedBudget `json:"budget,omitempty"`
}

// lastBudgets is removed with each ad's budget brought to acc's: the one
// its advertiser has there, or none when the advertisers file lists it
// without one ("a budget removed no longer holds"); an advertiser the
// file no longer lists keeps its last. removed itself comes back when
// nothing changes, as a served catalog's map is never written.
func lastBudgets(removed map[string]api.Removed, acc *accountSet) map[string]api.Removed {
	if acc == nil || acc.book == nil {
		return removed
	}
	var out map[string]api.Removed
	for id, r := range removed {
		if !acc.lists(r.Ad.Advertiser) {
			continue
		}
		b, _ := acc.book.Budget(r.Ad.Advertiser)
		if b == r.Budget {
			continue
		}
		if out == nil {
			out = maps.Clone(removed)
		}
		r.Budget = b
		out[id] = r
	}
	if out == nil {
		return removed
	}
	return out
}

// lists reports whether the advertisers served include advertiser.
func (acc *accountSet) lists(advertiser string) bool {
	return slices.ContainsFunc(acc.ads, func(a accounts.AdvertiserAccount) bool { return strings.EqualFold(a.ID, advertiser) })
}

// saveRemoved writes removed to path: a crash leaves the old file or the
// new one.
func saveRemoved(path string, removed map[string]api.Removed) error {
	saved := make([]savedRemoved, 0, len(removed))
	for _, r := range removed {
		saved = append(saved, savedRemoved{Until: r.Until, Ad: r.Ad, Budget: catalog.SaveBudget(r.Budget)})
	}
	b, err := json.Marshal(saved)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b)
}

// loadRemoved reads the removed ads path keeps whose links still land at
// now and that all, the catalog served, does not have again; a missing
// file is none. An ad whose landing the catalog would not admit is left
// out: the redirect sends the browser there.
func loadRemoved(path string, now time.Time, all *match.Index) (map[string]api.Removed, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var saved []savedRemoved
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, err
	}
	removed := map[string]api.Removed{}
	for _, s := range saved {
		if _, back := all.Lookup(s.Ad.ID); back || !now.Before(s.Until) || s.Ad.ID == "" || !catalog.IsWebURL(s.Ad.Landing) {
			continue
		}
		removed[s.Ad.ID] = api.Removed{Ad: s.Ad, Until: s.Until, Budget: s.Budget.Budget()}
	}
	return removed, nil
}

// shareTimeout, and shareTimePerAd for each ad recorded, bound a
// refresh's wait for the removed ads the replicas share: a Postgres that
// does not answer holds no swap for longer.
const (
	shareTimeout   = 2 * time.Second
	shareTimePerAd = 100 * time.Microsecond
)

// shareRemoved has the ads l's refreshes remove shared with the other
// replicas through removals, and theirs merged into each version l
// swaps in, starting with the one served now: those its data directory
// kept are shared, and those the others removed before it started land
// its links too.
func (l *live) shareRemoved(ctx context.Context, removals catalog.Removals) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removals = removals
	l.unshared = maps.Clone(l.cur.Load().api.Removed)
	l.shareFailed = true
	l.shareAgain(ctx)
}

// noteRemoved keeps, for the next share, the ads next removed that prev
// did not, or until an earlier time, or with another budget: a replica
// that reads the removal bills its links under the budget recorded.
func (l *live) noteRemoved(prev, next *version) {
	if l.removals == nil {
		return
	}
	if l.unshared == nil {
		l.unshared = map[string]api.Removed{}
	}
	for id, r := range next.api.Removed {
		if p, ok := prev.api.Removed[id]; !ok || p.Until.Before(r.Until) || p.Budget != r.Budget {
			l.unshared[id] = r
		}
	}
}

// share records the ads l removed that the other replicas do not have
// yet and returns v with the ads they removed merged in. When the store
// does not answer, v is returned as it is, and the ads are shared by the
// retry timer (retryShare) or the next refresh, whichever comes first:
// the data directory's file keeps them meanwhile.
func (l *live) share(ctx context.Context, v *version) *version {
	if l.removals == nil {
		return v
	}
	now := l.now()
	ads := make([]catalog.RemovedAd, 0, len(l.unshared))
	for id, r := range l.unshared {
		if !now.Before(r.Until) {
			delete(l.unshared, id)
			continue
		}
		ads = append(ads, catalog.RemovedAd{Ad: r.Ad, Until: r.Until, Budget: r.Budget})
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shareTimeout+time.Duration(len(ads))*shareTimePerAd)
	defer cancel()
	shared, err := l.removals.Share(ctx, ads, now)
	if err != nil {
		l.shareFailed = true
		if !l.shareDown {
			l.shareDown = true
			l.log.Warn("removed ads: not shared with the other replicas; tried again until they are, kept in the data directory meanwhile",
				"unshared", len(ads), "err", err)
		}
		l.retryShare()
		return v
	}
	if l.shareDown {
		l.log.Info("removed ads: shared with the other replicas", "shared", len(ads), "removed", len(shared))
	}
	l.shareFailed, l.shareDown, l.shareWait = false, false, 0
	clear(l.unshared)
	merged, added := mergeRemoved(v.api.Removed, shared, v.api.Indexes.All(), now)
	if !added {
		return v
	}
	c := *v.api
	c.Removed = lastBudgets(merged, v.acc)
	return &version{api: &c, ads: v.ads, loadedAt: v.loadedAt, feeds: v.feeds, acc: v.acc}
}

// shareAgain shares, after a share failed or a budget changed, what a
// refresh that swapped nothing in left unshared, and serves the version
// served now with the other replicas' removed ads merged in.
func (l *live) shareAgain(ctx context.Context) {
	if l.removals == nil || !l.shareFailed && len(l.unshared) == 0 {
		return
	}
	cur := l.cur.Load()
	if v := l.share(ctx, cur); v != cur {
		l.serve(v)
		l.saveRemoved(cur, v)
	}
}

// shareRetryFirst is the wait before the first share again after one
// failed; each failure after doubles it, up to shareRetryMost.
const (
	shareRetryFirst = time.Second
	shareRetryMost  = time.Minute
)

// retryShare has shareAgain run after the next wait, unless a share runs
// before: without periodic refreshes (-catalog-refresh 0), a removal
// would otherwise wait for the next swap, and a replica started
// meanwhile would answer its links with 404. Called under mu.
func (l *live) retryShare() {
	l.shareWait = min(max(2*l.shareWait, shareRetryFirst), shareRetryMost)
	l.bgMu.Lock()
	defer l.bgMu.Unlock()
	if l.closed {
		return
	}
	if l.shareRetry != nil {
		l.shareRetry.Stop()
	}
	l.shareRetry = time.AfterFunc(l.shareWait, l.retriedShare)
}

// retriedShare is the retry timer's share: a share of a refresh that ran
// meanwhile leaves it nothing to do.
func (l *live) retriedShare() {
	l.bgMu.Lock()
	if l.closed {
		l.bgMu.Unlock()
		return
	}
	l.retrying.Add(1)
	l.bgMu.Unlock()
	defer l.retrying.Done()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shareFailed {
		l.shareAgain(context.Background())
	}
	if l.shareRetried != nil {
		var err error
		if l.shareFailed {
			err = errors.New("removed ads: not shared")
		}
		l.shareRetried(err)
	}
}

// mergeRemoved is own with the ads shared that all, the catalog served,
// does not have again and whose links still land at now on a web URL,
// and whether it added any. Of an ad in both, the one whose links land
// longer is kept. own is not changed.
func mergeRemoved(own map[string]api.Removed, shared []catalog.RemovedAd, all *match.Index, now time.Time) (merged map[string]api.Removed, added bool) {
	merged = maps.Clone(own)
	if merged == nil {
		merged = map[string]api.Removed{}
	}
	for _, s := range shared {
		id := s.Ad.ID
		if _, back := all.Lookup(id); back || !now.Before(s.Until) || id == "" || !catalog.IsWebURL(s.Ad.Landing) {
			continue
		}
		if r, ok := merged[id]; ok && !r.Until.Before(s.Until) {
			continue
		}
		merged[id] = api.Removed{Ad: s.Ad, Until: s.Until, Budget: s.Budget}
		added = true
	}
	return merged, added
}
