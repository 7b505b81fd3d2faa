package api

import (
	"net/http"

	"github.com/adlink/adlink/match"
)

// search answers GET /v2/search/link.
func (s *server) search(w http.ResponseWriter, r *http.Request) error {
	v, err := queryValues(r)
	if err != nil {
		return err
	}
	p, err := parseSearch(v)
	if err != nil {
		return err
	}
	if _, err := s.authorize(r.Context(), p.APIKey, p.SiteID); err != nil {
		return err
	}
	q := match.Query{
		Text:               p.Q,
		Operator:           p.Operator,
		Dist:               p.Dist,
		Country:            p.Loc,
		Lang:               p.Lang,
		Kinds:              p.Kinds,
		Size:               p.Size,
		DistinctAdvertiser: p.DistinctAdvertiser,
	}
	// An answer that depends on a request header says so, for caches.
	if q.Country == locUseGeo {
		q.Country = s.geoCountry(r)
		w.Header().Add("Vary", s.cfg.CountryHeader)
	}
	if q.Lang == langUseLocale {
		q.Lang = localeLang(r)
		w.Header().Add("Vary", "Accept-Language")
	}
	ix := s.index(q.Country, q.Lang)
	hits := ix.Match(&q)
	buf := getBuf()
	defer putBuf(buf)
	*buf = ix.AppendResponse((*buf)[:0], hits, &match.LinkOptions{
		RedirectURL: s.cfg.RedirectURL,
		Context:     match.ContextSearch,
		APIKey:      p.APIKey,
		SiteID:      p.SiteID,
		YkTag:       p.YkTag,
		Fields:      p.Fields,
		LogoDim:     p.LogoDim,
		Sign:        s.signLinks(),
	})
	respond(w, http.StatusOK, *buf, p.Callback)
	return nil
}

// index picks the index a query is answered from: its market's when it
// names one (match.Index.ShardMarket: a country alone names its market when
// it has one language), so that the answer is byte-identical to the one the
// page computes from that market's shard; else the full index.
func (s *server) index(country, lang string) *match.Index {
	all := s.indexes.All()
	if m, ok := all.ShardMarket(country, lang); ok {
		if ix := s.indexes.For(m.Country, m.Lang); ix != nil {
			return ix
		}
	}
	return all
}
