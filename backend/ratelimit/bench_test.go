package ratelimit_test

import (
	"strconv"
	"testing"

	"github.com/adlink/adlink/backend/ratelimit"
)

// BenchmarkSetShareCheck times the in-process limit check of a /v2
// request over 64 client networks in 4 prefixes: Both is the network's
// share and the key's, Three adds the prefix's share between them, as
// the server checks it.
func BenchmarkSetShareCheck(b *testing.B) {
	lim := ratelimit.Limit{Rate: 1e9, Burst: 1e9}
	networks := make([]ratelimit.Bucket, 64)
	prefixes := make([]ratelimit.Bucket, 64)
	for i := range networks {
		networks[i] = ratelimit.Bucket{Key: "demo\x00198.51." + strconv.Itoa(i%4) + "." + strconv.Itoa(i), Limit: lim.Share(0.2)}
		prefixes[i] = ratelimit.Bucket{Key: "demo\x00198.51." + strconv.Itoa(i%4) + ".0/24", Limit: lim.Share(0.4)}
	}
	key := ratelimit.Bucket{Key: "demo", Limit: lim}
	b.Run("Both", func(b *testing.B) {
		s := ratelimit.New(ratelimit.Options{})
		i := 0
		for b.Loop() {
			if n, d := s.AllowBoth(b.Context(), networks[i%64], key); !n.Allowed || !d.Allowed {
				b.Fatal("refused")
			}
			i++
		}
	})
	b.Run("Three", func(b *testing.B) {
		s := ratelimit.New(ratelimit.Options{})
		i := 0
		for b.Loop() {
			if n, p, d := s.AllowThree(b.Context(), networks[i%64], prefixes[i%64], key); !n.Allowed || !p.Allowed || !d.Allowed {
				b.Fatal("refused")
			}
			i++
		}
	})
}
