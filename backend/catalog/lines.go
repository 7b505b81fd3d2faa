package catalog

import (
	"hash/maphash"
	"runtime"
	"slices"
	"sync"

	"github.com/adlink/adlink/match"
)

// lines finds the ads of a JSON-lines feed's last read by the bytes of
// their lines, so that a read of the changed feed decodes and checks only
// the lines that changed: a line is read into the same ad whenever it is
// read with the same Options. It also notes this read's lines for the
// next one.
type lines struct {
	opts Options
	// seeds are the process's own, so that no feed can aim at a
	// collision; two of them make a 128-bit key.
	seeds [2]maphash.Seed
	prev  *lines
	// at is each line's ad, by position in ads, in lineShards maps by
	// the key's low bits, so that a read on several cores fills them
	// at once.
	at  [lineShards]map[lineKey]int32
	ads []match.Ad
}

type lineKey [2]uint64

// lineShards is how many maps hold a read's lines.
const lineShards = 16

func (k lineKey) shard() int { return int(k[0] % lineShards) }

// nextLines starts the lines of a read with opts, finding ads in prev's
// when it was made with the same options (prev may be nil).
func nextLines(prev *lines, opts Options) *lines {
	l := &lines{opts: opts}
	if prev != nil && sameOptions(prev.opts, opts) {
		l.seeds, l.prev = prev.seeds, prev
	} else {
		l.seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	}
	return l
}

func sameOptions(a, b Options) bool {
	return a.BaseURL == b.BaseURL && a.Advertiser == b.Advertiser && a.Bid == b.Bid && slices.Equal(a.Markets, b.Markets) &&
		slices.Equal(a.Advertisers, b.Advertisers)
}

func (l *lines) key(line []byte) lineKey {
	return lineKey{maphash.Bytes(l.seeds[0], line), maphash.Bytes(l.seeds[1], line)}
}

// known returns the ad the last read made of a line with key k.
func (l *lines) known(k lineKey) (match.Ad, bool) {
	if l.prev == nil {
		return match.Ad{}, false
	}
	i, ok := l.prev.at[k.shard()][k]
	if !ok {
		return match.Ad{}, false
	}
	return l.prev.ads[i], true
}

// note records that the line with key k made ad i of ads, the read's.
func (l *lines) note(k lineKey, i int) {
	m := l.at[k.shard()]
	if m == nil {
		m = l.room(k.shard())
	}
	if _, dup := m[k]; !dup {
		m[k] = int32(i)
	}
}

// room makes shard s's map, sized for about the last read's lines.
func (l *lines) room(s int) map[lineKey]int32 {
	n := 0
	if l.prev != nil {
		n = len(l.prev.at[s])
	}
	l.at[s] = make(map[lineKey]int32, n+n/16)
	return l.at[s]
}

// noteAll records that the line with the key keys[b][i] made the ad
// that many ads after those of keys[:b], for every b and i, on every
// core: the keys are distinct.
func (l *lines) noteAll(keys [][]lineKey) {
	workers := min(runtime.GOMAXPROCS(0), lineShards)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for s := w; s < lineShards; s += workers {
				l.room(s)
			}
			n := int32(0)
			for _, ks := range keys {
				for i, k := range ks {
					if s := k.shard(); s%workers == w {
						l.at[s][k] = n + int32(i)
					}
				}
				n += int32(len(ks))
			}
		})
	}
	wg.Wait()
}

// done ends the read, whose ads are ads (nil when it failed), and drops
// the last read's lines.
func (l *lines) done(ads []match.Ad) {
	l.prev, l.ads = nil, ads
	if ads == nil {
		l.at = [lineShards]map[lineKey]int32{}
	}
}
