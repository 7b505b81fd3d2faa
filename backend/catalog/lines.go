package catalog

import (
	"hash/maphash"
	"slices"

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
	// at is each line's ad, by position in ads.
	at  map[lineKey]int32
	ads []match.Ad
}

type lineKey [2]uint64

// nextLines starts the lines of a read with opts, finding ads in prev's
// when it was made with the same options (prev may be nil).
func nextLines(prev *lines, opts Options) *lines {
	l := &lines{opts: opts, at: map[lineKey]int32{}}
	if prev != nil && sameOptions(prev.opts, opts) {
		l.seeds, l.prev = prev.seeds, prev
		l.at = make(map[lineKey]int32, len(prev.at))
	} else {
		l.seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	}
	return l
}

func sameOptions(a, b Options) bool {
	return a.BaseURL == b.BaseURL && a.Advertiser == b.Advertiser && a.Bid == b.Bid && slices.Equal(a.Markets, b.Markets)
}

func (l *lines) key(line []byte) lineKey {
	return lineKey{maphash.Bytes(l.seeds[0], line), maphash.Bytes(l.seeds[1], line)}
}

// known returns the ad the last read made of a line with key k.
func (l *lines) known(k lineKey) (match.Ad, bool) {
	if l.prev == nil {
		return match.Ad{}, false
	}
	i, ok := l.prev.at[k]
	if !ok {
		return match.Ad{}, false
	}
	return l.prev.ads[i], true
}

// note records that the line with key k made ad i of ads, the read's.
func (l *lines) note(k lineKey, i int) {
	if _, dup := l.at[k]; !dup {
		l.at[k] = int32(i)
	}
}

// done ends the read, whose ads are ads (nil when it failed), and drops
// the last read's lines.
func (l *lines) done(ads []match.Ad) {
	l.prev, l.ads = nil, ads
	if ads == nil {
		l.at = nil
	}
}
