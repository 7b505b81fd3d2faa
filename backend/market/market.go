// Package market holds the catalog's indexes by market: the whole
// catalog's and one per market (country and language) its ads run in. The
// search handler answers from them and the shards the page loads are cut
// from the very same ones, so the page and the server give the same bytes.
package market

import (
	"fmt"

	"github.com/adlink/adlink/match"
)

// Indexes gives the index to answer from and to cut shards from.
type Indexes interface {
	// All is the index of the whole catalog; the redirect looks ads up in
	// it, and it answers requests that name no market with a shard of its
	// own.
	All() *match.Index
	// For is the index of one market (lower-case country and language), or
	// of a country whose ads run in several languages (lang ""), for each
	// of match.Index.ShardMarkets: the same one the page's WebAssembly
	// module loads as its shard; nil when there is none.
	For(country, lang string) *match.Index
	// Bid is the bid the catalog gives the ad id, in millionths, exactly:
	// what a billable click on it costs. (The indexes keep bids rounded,
	// for ranking.)
	Bid(adID string) int64
}

// Set is an Indexes built from a catalog in memory: the full index and one
// per market the catalog's ads run in.
type Set struct {
	all     *match.Index
	markets map[match.Market]*match.Index
	bids    map[string]int64
}

var _ Indexes = (*Set)(nil)

// Build indexes ads as a whole, per market and per country whose ads run
// in several languages (match.Index.ShardMarkets); an ad that runs in
// several markets is in each of their indexes, once in its country's.
func Build(ads []match.Ad) (*Set, error) {
	all, err := match.Build(ads)
	if err != nil {
		return nil, err
	}
	byMarket := match.ShardAds(all, ads)
	s := &Set{all: all, markets: make(map[match.Market]*match.Index, len(byMarket)), bids: make(map[string]int64, len(ads))}
	for i := range ads {
		s.bids[ads[i].ID] = ads[i].BidMicros
	}
	for m, ads := range byMarket {
		ix, err := match.Build(ads)
		if err != nil {
			return nil, fmt.Errorf("market %s: %w", m, err)
		}
		s.markets[m] = ix
	}
	return s, nil
}

// All implements Indexes.
func (s *Set) All() *match.Index { return s.all }

// For implements Indexes.
func (s *Set) For(country, lang string) *match.Index {
	return s.markets[match.Market{Country: country, Lang: lang}]
}

// Bid implements Indexes.
func (s *Set) Bid(adID string) int64 { return s.bids[adID] }
