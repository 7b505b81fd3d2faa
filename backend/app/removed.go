package app

import (
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
	Until  time.Time    `json:"until"`
	Ad     match.Ad     `json:"ad"`
	Budget *savedBudget `json:"budget,omitempty"`
}

// savedBudget is a daily budget as RemovedFile keeps it.
type savedBudget struct {
	DailyMicros int64           `json:"daily_micros"`
	Currency    string          `json:"currency"`
	Pacing      accounts.Pacing `json:"pacing,omitempty"`
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
		s := savedRemoved{Until: r.Until, Ad: r.Ad}
		if b := r.Budget; b.DailyMicros > 0 {
			s.Budget = &savedBudget{DailyMicros: b.DailyMicros, Currency: b.Currency, Pacing: b.Pacing}
		}
		saved = append(saved, s)
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
		r := api.Removed{Ad: s.Ad, Until: s.Until}
		if b := s.Budget; b != nil && b.DailyMicros > 0 {
			r.Budget = accounts.Budget{DailyMicros: b.DailyMicros, Currency: b.Currency, Pacing: b.Pacing}
		}
		removed[s.Ad.ID] = r
	}
	return removed, nil
}
