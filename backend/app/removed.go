package app

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/internal/atomicfile"
	"github.com/adlink/adlink/match"
)

// RemovedFile, in the data directory, keeps the ads that refreshes
// removed and whose click links still land (api.Catalog.Removed), so that
// the links a server gave before a restart land after it too.
const RemovedFile = "removed-ads.json"

// savedRemoved is a removed ad as RemovedFile keeps it.
type savedRemoved struct {
	Until time.Time `json:"until"`
	Ad    match.Ad  `json:"ad"`
}

// saveRemoved writes removed to path: a crash leaves the old file or the
// new one.
func saveRemoved(path string, removed map[string]api.Removed) error {
	saved := make([]savedRemoved, 0, len(removed))
	for _, r := range removed {
		saved = append(saved, savedRemoved{Until: r.Until, Ad: r.Ad})
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
		removed[s.Ad.ID] = api.Removed{Ad: s.Ad, Until: s.Until}
	}
	return removed, nil
}
