package siteshards

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/adlink/adlink/internal/atomicfile"
)

// ProfilesFile is the name the server gives Options.File in its data
// directory.
const ProfilesFile = "site-profiles.json"

// savedSite is a site's profile as the profiles file keeps it: its pages,
// oldest first, each with its features.
type savedSite struct {
	Site  string      `json:"site"`
	Pages []savedPage `json:"pages"`
}

type savedPage struct {
	URL      string   `json:"url"`
	Features []string `json:"features"`
}

// save writes the sites' profiles to path, the site seen least recently
// first: a crash leaves the old file or the new one. Once it is in place,
// the profiles as written are the saved ones.
func (s *Service) save(path string) error {
	s.mu.Lock()
	learnt := s.learnt
	var sites []savedSite
	for e := s.siteLRU.Back(); e != nil; e = e.Prev() {
		st := e.Value.(*site)
		ss := savedSite{Site: st.key}
		for _, u := range st.prof.order {
			ss.Pages = append(ss.Pages, savedPage{URL: u, Features: st.prof.pages[u]})
		}
		sites = append(sites, ss)
	}
	s.mu.Unlock()
	b, err := json.Marshal(sites)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, b); err != nil {
		return err
	}
	s.mu.Lock()
	s.saved = max(s.saved, learnt)
	s.mu.Unlock()
	return nil
}

// load reads the profiles save wrote; a missing file is no profile. The
// bounds of this Service apply to what it reads.
func (s *Service) load(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var sites []savedSite
	if err := json.Unmarshal(b, &sites); err != nil {
		return fmt.Errorf("site profiles %s: %w", path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range sites {
		st := s.siteLocked(ss.Site)
		for _, p := range ss.Pages {
			if len(p.Features) > maxPageFeatures {
				p.Features = p.Features[:maxPageFeatures]
			}
			st.prof.add(p.URL, p.Features, s.o.PagesPerSite)
		}
		s.retopLocked(st)
	}
	return nil
}
