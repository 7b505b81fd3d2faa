package clicks

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"time"
)

// ImpressionKeyTTL is how long after the start of its window an
// impression's Key is held at least: a window is at most a day long
// (config.ImpressionWindow), and impressions spooled on a replica while
// the shared record is away may reach it up to a day later and still
// find the Keys of the other replicas.
const ImpressionKeyTTL = 48 * time.Hour

// impressionKeySize is the bytes of a Key: the start of its window in
// Unix minutes, big-endian, then the first 12 bytes of a SHA-256 of what
// it names. The window comes first so that the keys of a store sort by
// age and the old ones are forgotten from one end.
const impressionKeySize = 4 + 12

// ImpressionKey is the Key of an impression of ad adID on a page of site
// siteID of partner apiKey, seen from network (Network of the client's
// IP), at: the same for every impression of those four in the window of
// length window that holds at, whatever page of the site it was seen on
// (a page's URL is the client's to vary). Windows are
// counted from the epoch, so that every replica cuts the same ones; window
// is a whole number of minutes, at least one.
func ImpressionKey(adID, apiKey, siteID, network string, at time.Time, window time.Duration) string {
	w := int64(max(window/time.Minute, 1)) * 60
	start := at.Unix() - at.Unix()%w // times before 1970 are no beacon's
	h := sha256.New()
	var n [8]byte
	for _, f := range []string{adID, apiKey, siteID, network} {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	binary.BigEndian.PutUint64(n[:], uint64(start))
	h.Write(n[:])
	var k [impressionKeySize]byte
	binary.BigEndian.PutUint32(k[:4], keyWindow(time.Unix(start, 0)))
	copy(k[4:], h.Sum(nil))
	return hex.EncodeToString(k[:])
}

// keyWindow is the first 4 bytes of the Key of a window starting at t.
func keyWindow(t time.Time) uint32 {
	m := t.Unix() / 60
	if m < 0 {
		return 0
	}
	return uint32(m)
}

// ImpressionKeyBytes returns the bytes of Key k for a store to keep, nil
// for none, or why k is no Key.
func ImpressionKeyBytes(k string) ([]byte, error) {
	if k == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(k)
	if err != nil || len(b) != impressionKeySize {
		return nil, errors.New("clicks: impression key is not one ImpressionKey made")
	}
	return b, nil
}

// ImpressionKeyCut is the smallest Key bytes that are not yet
// ImpressionKeyTTL old at now: a store forgets the keys below it.
func ImpressionKeyCut(now time.Time) []byte {
	return binary.BigEndian.AppendUint32(nil, keyWindow(now.Add(-ImpressionKeyTTL)))
}
