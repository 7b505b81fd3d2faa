package clicks

import (
	"bytes"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"
)

// hotIndex holds in memory what the decisions and windows buckets of one
// file hold, so that a click's checks read memory and its writes append
// at the end of their hour's or day's bucket (sequential keys): a B-tree
// keyed by random decision ids and networks would have every commit
// rewrite pages all over the file. It is loaded from the buckets by the
// first write transaction that needs it and changed only inside write
// transactions, which the file's group commit runs one at a time. A
// commit that fails leaves memory ahead of the file, so it is loaded
// again (groupCommit.commit calls reset).
type hotIndex struct {
	loaded bool
	used   map[string]map[string]struct{} // hourKey -> decision ids
	days   map[int64]*dayIndex
}

// dayIndex is one UTC day of the windows: each network and ad's billable
// click time, each network's count of billable clicks, and each IPv6
// /48's or IPv4 /24's (Prefix), on all ads and on each.
type dayIndex struct {
	pairs     map[string]int64 // network "\x00" adID -> unix nanoseconds
	counts    map[string]uint64
	prefixes  map[string]uint64
	prefixAds map[string]uint64 // prefix "\x00" adID
}

// reset forgets what is in memory: the next use loads the file again.
func (h *hotIndex) reset() { *h = hotIndex{} }

// load reads the decisions and windows buckets of tx into memory, once.
// Both of their layouts are read: the records appended under sequence
// keys, and the keyed ones of files written before.
func (h *hotIndex) load(tx *bolt.Tx) {
	if h.loaded {
		return
	}
	h.used, h.days, h.loaded = map[string]map[string]struct{}{}, map[int64]*dayIndex{}, true
	if hours := tx.Bucket(decisionsBucket); hours != nil {
		hours.ForEachBucket(func(k []byte) error {
			set := map[string]struct{}{}
			hours.Bucket(k).ForEach(func(id, v []byte) error {
				if len(v) != 1 { // appended: the id is the value
					id = v
				}
				set[string(id)] = struct{}{}
				return nil
			})
			h.used[string(k)] = set
			return nil
		})
	}
	if days := tx.Bucket(windowsBucket); days != nil {
		days.ForEachBucket(func(k []byte) error {
			d := h.day(int64(binary.BigEndian.Uint64(k) ^ (1 << 63)))
			days.Bucket(k).ForEach(func(k, v []byte) error {
				switch {
				case len(k) > 0 && k[0] == 's' && bytes.IndexByte(v, 0) < 0: // appended: a prefix's count
					if prefix, ad, ok := readCount(v); ok && v[0] == 'p' {
						d.prefixes[prefix]++
					} else if ok && v[0] == 'q' {
						d.prefixAds[prefix+"\x00"+ad]++
					}
				case len(k) > 0 && k[0] == 's': // appended: network, ad, time
					network, rest, _ := bytes.Cut(v, []byte{0})
					ad, at, _ := bytes.Cut(rest, []byte{0})
					if len(at) == 8 {
						d.pairs[string(network)+"\x00"+string(ad)] = int64(binary.BigEndian.Uint64(at))
						d.counts[string(network)]++
					}
				case len(k) > 0 && k[0] == 'p': // appended before counts went under 's'
					d.prefixes[string(v)]++
				case len(k) > 0 && k[0] == 'q':
					d.prefixAds[string(v)]++
				case len(k) > 0 && k[0] == 'a' && len(v) == 8:
					d.pairs[string(k[1:])] = int64(binary.BigEndian.Uint64(v))
				case len(k) > 0 && k[0] == 'n' && len(v) == 8:
					d.counts[string(k[1:])] += binary.BigEndian.Uint64(v)
				}
				return nil
			})
			return nil
		})
	}
}

// day returns the day's index, making it.
func (h *hotIndex) day(day int64) *dayIndex {
	d := h.days[day]
	if d == nil {
		d = &dayIndex{pairs: map[string]int64{}, counts: map[string]uint64{}, prefixes: map[string]uint64{},
			prefixAds: map[string]uint64{}}
		h.days[day] = d
	}
	return d
}

// appendRecord puts v at the end of bucket b, under its next sequence.
// Its records come in the order of their keys, so the pages they fill
// are split full (bbolt's FillPercent): a page split half full, as by
// default, is never written to again, and a day's records would take
// twice the pages, and a commit more of them.
func appendRecord(b *bolt.Bucket, prefix byte, v []byte) error {
	b.FillPercent = 1
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	return b.Put(binary.BigEndian.AppendUint64([]byte{prefix}, seq), v)
}

// useDecision judges and records one use of id, in the hours bucket and
// in h.
func useDecision(h *hotIndex, tx *bolt.Tx, id string, at, expires time.Time) (bool, error) {
	h.load(tx)
	hours := tx.Bucket(decisionsBucket)
	// An id's expiry is signed with it, so every use of an id looks in
	// the same hour.
	hk := hourKey(expires)
	set := h.used[string(hk)]
	if _, used := set[id]; used {
		return false, nil
	}
	b, err := hours.CreateBucketIfNotExists(hk)
	if err != nil {
		return false, err
	}
	if err := appendRecord(b, 'd', []byte(id)); err != nil {
		return false, err
	}
	if set == nil {
		set = map[string]struct{}{}
		h.used[string(hk)] = set
	}
	set[id] = struct{}{}
	return true, forgetHours(h, hours, at)
}

// forgetMargin is how long after the hour of their expiry ids are kept:
// a click is timed when its request comes in and commits later, after a
// click timed after it may have committed. Were an hour forgotten as soon
// as a click timed after it commits, a click timed before an expiry in
// that hour that commits later would find no record of its id, and a used
// id would bill again.
const forgetMargin = time.Hour

// forgetHours drops the buckets, and the memory, of ids that all expired
// more than forgetMargin before at.
func forgetHours(h *hotIndex, hours *bolt.Bucket, at time.Time) error {
	now := hourKey(at.Add(-forgetMargin))
	var old [][]byte
	c := hours.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, now) < 0; k, _ = c.Next() {
		old = append(old, bytes.Clone(k))
	}
	for _, k := range old {
		if err := hours.DeleteBucket(k); err != nil {
			return err
		}
		delete(h.used, string(k))
	}
	return nil
}

// claim judges and records one claim in the days bucket and in h. A
// claim of a counted prefix (an IPv6 /48, an IPv4 /24) is a second
// record, the prefix's count (appendCount); its count on the ad is a
// third. All three are appended under 's' keys, so that a commit writes
// the one page at the end of the day's bucket, not one at the end of
// each kind's range.
func claim(h *hotIndex, tx *bolt.Tx, c Claim) (string, error) {
	h.load(tx)
	days := tx.Bucket(windowsBucket)
	day := dayOf(c.At)
	pair := c.Network + "\x00" + c.AdID
	at := c.At.UnixNano()
	// A window reaches into the day before and, for a clock that stepped
	// back, the day after.
	for d := day - 1; d <= day+1; d++ {
		if di := h.days[d]; di != nil {
			if prev, ok := di.pairs[pair]; ok {
				if gap := at - prev; gap < int64(AdWindow) && -gap < int64(AdWindow) {
					return ReasonRepeat, nil
				}
			}
		}
	}
	di := h.day(day)
	if c.Limit > 0 && di.counts[c.Network] >= uint64(c.Limit) {
		return ReasonNetworkCap, nil
	}
	prefixAd := c.Prefix + "\x00" + c.AdID
	if c.adCounted() && di.prefixAds[prefixAd] >= uint64(c.PrefixAdLimit) {
		return ReasonPrefixAdCap, nil
	}
	if c.counted() && di.prefixes[c.Prefix] >= uint64(c.PrefixLimit) {
		return ReasonPrefixCap, nil
	}
	b, err := days.CreateBucketIfNotExists(dayKey(day))
	if err != nil {
		return "", err
	}
	v := append(append([]byte(pair), 0), binary.BigEndian.AppendUint64(nil, uint64(at))...)
	if err := appendRecord(b, 's', v); err != nil {
		return "", err
	}
	if c.counted() {
		if err := appendCount(b, 'p', c.Prefix, ""); err != nil {
			return "", err
		}
		di.prefixes[c.Prefix]++
	}
	if c.adCounted() {
		if err := appendCount(b, 'q', c.Prefix, c.AdID); err != nil {
			return "", err
		}
		di.prefixAds[prefixAd]++
	}
	di.pairs[pair] = at
	di.counts[c.Network]++
	return "", forget(h, days, day)
}

// appendCount appends one billable click of prefix (kind 'p'), or of
// prefix on adID ('q'), to the day's bucket b: under an 's' key, after
// the click's window, with a value of no zero byte, which tells it from
// a window's (network, 0, ad, 0, time). A server of a version that reads
// counts only from 'p' and 'q' keys reads no window from it, and skips
// it. Values that would hold a zero byte (no Prefix and no catalog ad id
// does) go under their kind's own key, as all did before.
func appendCount(b *bolt.Bucket, kind byte, prefix, adID string) error {
	v := make([]byte, 0, 1+binary.MaxVarintLen64+len(prefix)+len(adID))
	v = append(v, kind)
	if kind == 'q' {
		v = binary.AppendUvarint(v, uint64(len(prefix)))
	}
	v = append(append(v, prefix...), adID...)
	if prefix == "" || bytes.IndexByte(v, 0) >= 0 {
		if kind == 'q' {
			return appendRecord(b, kind, []byte(prefix+"\x00"+adID))
		}
		return appendRecord(b, kind, []byte(prefix))
	}
	return appendRecord(b, 's', v)
}

// readCount reads a count appendCount put under an 's' key: its prefix,
// and its ad for kind 'q'.
func readCount(v []byte) (prefix, adID string, ok bool) {
	switch {
	case len(v) > 1 && v[0] == 'p':
		return string(v[1:]), "", true
	case len(v) > 1 && v[0] == 'q':
		n, w := binary.Uvarint(v[1:])
		if w <= 0 || n > uint64(len(v)-1-w) {
			return "", "", false
		}
		rest := v[1+w:]
		return string(rest[:n]), string(rest[n:]), true
	}
	return "", "", false
}

// forget drops the days, and their memory, no claim on day or later can
// be judged by.
func forget(h *hotIndex, days *bolt.Bucket, day int64) error {
	oldest := dayKey(day - 1)
	var old [][]byte
	c := days.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, oldest) < 0; k, _ = c.Next() {
		old = append(old, bytes.Clone(k))
	}
	for _, k := range old {
		if err := days.DeleteBucket(k); err != nil {
			return err
		}
		delete(h.days, int64(binary.BigEndian.Uint64(k)^(1<<63)))
	}
	return nil
}
