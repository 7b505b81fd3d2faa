// Package market holds the catalog's indexes by market: the whole
// catalog's and one per market (country and language) its ads run in. The
// search handler answers from them and the shards the page loads are cut
// from the very same ones, so the page and the server give the same bytes.
package market

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"sync"

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
	// sums fingerprint each market's ads under seed, for the next
	// catalog's Rebuild; the seed is the process's own, so no feed can
	// aim at a collision.
	sums map[match.Market]uint64
	seed maphash.Seed
	// ads are the catalog's, and pos each market's ads' places in it:
	// what each index was made of, so that the next Rebuild knows an ad
	// read again unchanged by where its strings are.
	ads []match.Ad
	pos map[match.Market][]int32
	// adSums are each ad's sum (adSums), for the next Rebuild.
	adSums []uint64
}

var _ Indexes = (*Set)(nil)

// Build indexes ads as a whole, per market and per country whose ads run
// in several languages (match.Index.ShardMarkets); an ad that runs in
// several markets is in each of their indexes, once in its country's.
func Build(ads []match.Ad) (*Set, error) { return Rebuild(ads, nil) }

// Rebuild is Build beside prev, the catalog's indexes before a refresh
// (nil for none): a market whose ads are prev's, every field the same and
// in the same order, keeps prev's index, which is the one Build would
// make, rather than being indexed again; the whole catalog's index and a
// changed market's are made from prev's by match.Rebuild, which analyses
// only the ads that changed and gives the index Build would make. The
// indexes are built on every core.
func Rebuild(ads []match.Ad, prev *Set) (*Set, error) {
	s := &Set{markets: map[match.Market]*match.Index{},
		sums: map[match.Market]uint64{}, seed: maphash.MakeSeed(), ads: ads}
	if prev != nil {
		s.seed = prev.seed
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var allErr error
	// Which groups the ads fall in depends on the markets the catalog has
	// alone (match.ShardGroups): when they are the catalog before's, its
	// whole index groups them, and the new one is built beside the
	// markets' rather than before them.
	grouper := (*match.Index)(nil)
	if prev != nil && sameMarkets(prev.all, ads) {
		grouper = prev.all
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			s.all, allErr = rebuildIndex(prev.all, prev.adAt(nil), ads)
		})
	} else {
		var prevAll *match.Index
		var prevAd func(int) *match.Ad
		if prev != nil {
			prevAll, prevAd = prev.all, prev.adAt(nil)
		}
		if s.all, allErr = rebuildIndex(prevAll, prevAd, ads); allErr != nil {
			return nil, allErr
		}
		grouper = s.all
	}
	groups := match.ShardGroups(grouper, ads)
	s.pos = groups
	// Each ad is hashed once, though it is in the groups of its market
	// and of its country, and those of several markets.
	sums := adSumsBeside(prev, s.seed, ads)
	s.adSums = sums
	type job struct {
		m   match.Market
		pos []int32
		ix  *match.Index
		sum uint64
		err error
	}
	var jobs []*job
	for m, pos := range groups {
		jobs = append(jobs, &job{m: m, pos: pos})
	}
	for _, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			j.sum = fingerprint(s.seed, sums, j.pos)
			var before *match.Index
			var beforeAd func(int) *match.Ad
			if prev != nil {
				before = prev.markets[j.m]
				if pos, ok := prev.pos[j.m]; ok {
					beforeAd = prev.adAt(pos)
				}
			}
			if before != nil && prev.sums[j.m] == j.sum {
				j.ix = before
				return
			}
			// Only a market indexed again has its ads copied out.
			mine := make([]match.Ad, len(j.pos))
			for k, p := range j.pos {
				mine[k] = ads[p]
			}
			if j.ix, j.err = rebuildIndex(before, beforeAd, mine); j.err != nil {
				j.err = fmt.Errorf("market %s: %w", j.m, j.err)
			}
		})
	}
	wg.Wait()
	if allErr != nil {
		return nil, allErr
	}
	for _, j := range jobs {
		if j.err != nil {
			return nil, j.err
		}
		s.markets[j.m], s.sums[j.m] = j.ix, j.sum
	}
	return s, nil
}

// adAt returns the ad an index of s's made of the ads at pos (all of
// them for nil) has at its ordinal j; nil when there is none.
func (s *Set) adAt(pos []int32) func(j int) *match.Ad {
	if s.ads == nil {
		return nil
	}
	if pos == nil {
		return func(j int) *match.Ad { return &s.ads[j] }
	}
	return func(j int) *match.Ad { return &s.ads[pos[j]] }
}

// sameMarkets reports whether ads run in the very markets of all's
// catalog, no more and no fewer.
func sameMarkets(all *match.Index, ads []match.Ad) bool {
	ms := all.Markets()
	var seen uint64
	for i := range ads {
		for _, m := range ads[i].Markets {
			k := slices.Index(ms, m)
			if k < 0 {
				return false
			}
			seen |= 1 << k
		}
	}
	return seen == 1<<len(ms)-1 // all ones for 64 markets too
}

// adSums hashes every field of each ad under seed; each string and list
// is preceded by its length, so no two ads write the same bytes.
func adSums(seed maphash.Seed, ads []match.Ad) []uint64 {
	sums := make([]uint64, len(ads))
	var h maphash.Hash
	h.SetSeed(seed)
	var n [8]byte
	num := func(v int64) {
		binary.LittleEndian.PutUint64(n[:], uint64(v))
		h.Write(n[:])
	}
	str := func(v string) {
		num(int64(len(v)))
		h.WriteString(v)
	}
	for i := range ads {
		a := &ads[i]
		h.Reset()
		str(a.ID)
		num(int64(a.Kind))
		str(a.Title)
		num(int64(len(a.Keywords)))
		for _, k := range a.Keywords {
			str(k)
		}
		str(a.Manufacturer)
		str(a.Model)
		str(a.Category)
		str(a.Description)
		str(a.GTIN)
		num(a.PriceCents)
		str(a.Currency)
		str(a.Logo)
		str(a.Landing)
		str(a.Advertiser)
		num(int64(len(a.Markets)))
		for _, m := range a.Markets {
			str(m.Country)
			str(m.Lang)
		}
		num(a.BidMicros)
		sums[i] = h.Sum64()
	}
	return sums
}

// fingerprint hashes the ads at pos, in order, by their sums (adSums).
func fingerprint(seed maphash.Seed, sums []uint64, pos []int32) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(pos)))
	h.Write(n[:])
	for _, p := range pos {
		binary.LittleEndian.PutUint64(n[:], sums[p])
		h.Write(n[:])
	}
	return h.Sum64()
}

// All implements Indexes.
func (s *Set) All() *match.Index { return s.all }

// For implements Indexes.
func (s *Set) For(country, lang string) *match.Index {
	return s.markets[match.Market{Country: country, Lang: lang}]
}

// Bid implements Indexes.
// The whole catalog's index finds the ad: its ordinals are the ads'
// places.
func (s *Set) Bid(adID string) int64 {
	if i, ok := s.all.Lookup(adID); ok {
		return s.ads[i].BidMicros
	}
	return 0
}
