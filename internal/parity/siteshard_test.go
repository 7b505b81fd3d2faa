package parity

import (
	"context"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/siteshards"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/internal/wasmhost"
	"github.com/adlink/adlink/match"
)

// TestParitySiteShard: a site shard, a market's head within a budget, cut
// in fragments, is an ordinary shard: the module answers from it byte for
// byte as the server's matcher does from the ads it holds.
func TestParitySiteShard(t *testing.T) {
	ads := testcatalog.Generate(3000, 7)
	mi, err := market.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	ix := mi.For("de", "de")
	svc := siteshards.New(siteshards.Options{Budget: 30_000, HeadWait: time.Hour})
	defer svc.Close()
	sh := svc.Pick(context.Background(), siteshards.Request{Version: "v", Index: ix, MarketBytes: 1 << 40, Site: "s", Country: "de", Lang: "de"})
	if sh == nil || len(sh.Fragments) == 0 || sh.Ads >= ix.Len() {
		t.Fatalf("no site shard in fragments: %+v", sh)
	}
	data := sh.Blob.Bytes(shards.Identity)
	var frags [][]byte
	for _, f := range sh.Fragments {
		frags = append(frags, f.Bytes(shards.Identity))
	}
	s := &shard{bytes: data, frags: frags, native: sh.Index, in: wasmhost.NewInstance(t, data, frags...)}
	c := &corpus{ads: ads, all: s, markets: map[match.Market]*shard{}}
	t.Run("search", func(t *testing.T) { checkParity(t, c, testcatalog.Requests(ads, 300, 4, false)) })
	t.Run("page", func(t *testing.T) { checkParity(t, c, testcatalog.Requests(ads, 60, 5, true)) })
}
