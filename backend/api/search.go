package api

import (
	"net/http"

	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

// answerCache keeps every cache from storing an answer with click URLs:
// their decision ids bill once, so a cache that handed one answer to many
// readers would leave all but the first click on each ad unbilled.
const answerCache = "no-store"

// search answers GET /v2/search/link.
func (s *server) search(w http.ResponseWriter, r *http.Request) error {
	v, err := queryValues(r)
	if err != nil {
		return err
	}
	req, problems := contract.ParseSearch(v)
	if err := badRequest(problems); err != nil {
		return err
	}
	if _, err := s.authorize(r.Context(), req.Links.APIKey, req.Links.SiteID); err != nil {
		return err
	}
	q := &req.Query
	q.Country, q.Lang = s.market(w, r, q.Country, q.Lang)
	ix := s.index(s.catalogOf(r), q.Country, q.Lang)
	q.Exclude = s.budgetIn(r.Context()).Exclude(ix)
	hits := ix.Match(q)
	o := s.linkOptions(&req.Links)
	buf := getBuf()
	defer putBuf(buf)
	*buf = ix.AppendServerResponse((*buf)[:0], hits, &o)
	w.Header().Set("Cache-Control", answerCache)
	respond(w, http.StatusOK, *buf, req.Callback)
	return nil
}

// index picks the index a query is answered from: its market's when it
// names one (match.Index.ShardMarket: a country alone names its market when
// it has one language), so that the answer is byte-identical to the one the
// page computes from that market's shard; else the full index.
func (s *server) index(c *Catalog, country, lang string) *match.Index {
	all := c.Indexes.All()
	if m, ok := all.ShardMarket(country, lang); ok {
		if ix := c.Indexes.For(m.Country, m.Lang); ix != nil {
			return ix
		}
	}
	return all
}
