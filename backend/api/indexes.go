package api

import (
	"fmt"

	"github.com/adlink/adlink/match"
)

// Indexes gives the search handler the index to answer from.
type Indexes interface {
	// All is the index of the whole catalog; the redirect looks ads up in it.
	All() *match.Index
	// For is the index of one market (lower-case country and language), or
	// of a country whose ads run in several languages (lang ""), the same
	// one the page's WebAssembly module loads as its shard; nil when there
	// is none.
	For(country, lang string) *match.Index
}

// MarketIndexes is an Indexes built from a catalog in memory: the full
// index and one per market the catalog's ads run in.
type MarketIndexes struct {
	all     *match.Index
	markets map[match.Market]*match.Index
}

var _ Indexes = (*MarketIndexes)(nil)

// BuildIndexes indexes ads as a whole, per market and per country whose
// ads run in several languages (match.Index.ShardMarkets); an ad that runs
// in several markets is in each of their indexes, once in its country's.
func BuildIndexes(ads []match.Ad) (*MarketIndexes, error) {
	all, err := match.Build(ads)
	if err != nil {
		return nil, err
	}
	byMarket := match.ShardAds(all, ads)
	mi := &MarketIndexes{all: all, markets: make(map[match.Market]*match.Index, len(byMarket))}
	for m, ads := range byMarket {
		ix, err := match.Build(ads)
		if err != nil {
			return nil, fmt.Errorf("market %s: %w", m, err)
		}
		mi.markets[m] = ix
	}
	return mi, nil
}

// All implements Indexes.
func (mi *MarketIndexes) All() *match.Index { return mi.all }

// For implements Indexes.
func (mi *MarketIndexes) For(country, lang string) *match.Index {
	return mi.markets[match.Market{Country: country, Lang: lang}]
}
