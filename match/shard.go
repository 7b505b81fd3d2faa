package match

import (
	"errors"
	"math"
	"slices"
	"unsafe"
)

// Shard format: a header, a section table and the sections, each aligned
// to 8 bytes, little-endian, laid out as the Index holds them in memory so
// that Open uses the bytes in place.
//
//	magic   [8]byte "ADLKSHRD"
//	version uint32
//	count   uint32  number of sections
//	crc     uint32  CRC-32C of everything after the header
//	_       uint32
//	table   count x {offset, length uint32}, offsets from the start
const (
	shardMagic   = "ADLKSHRD"
	ShardVersion = 2
	headerSize   = 24
	// MaxShardBytes bounds what Open accepts, so a hostile length cannot
	// make it allocate without limit.
	MaxShardBytes = 1 << 30
)

// Section numbers, in file order.
const (
	secMeta = iota
	secStrs
	secAds
	secByID
	secMarkets
	secTermOff
	secTermStr
	secPostOff
	secPostAd
	secPostTF
	secCritStart
	secCritOff
	secCritTerms
	secCritAdOff
	secCritAd
	secTermCritOff
	secTermCrit
	secFrags
	secRecs
	numSections
)

const (
	adRecWords  = int(unsafe.Sizeof(adRec{}) / 4)
	adStrsBytes = int(unsafe.Sizeof(adStrs{}))
)

// ErrShard is wrapped by every error Open returns.
var ErrShard = errors.New("match: bad shard")

// shardError is what Open returns: a string type that wraps ErrShard,
// because errors.Join inlined at each check grows the module.
type shardError string

func (e shardError) Error() string { return "match: bad shard\nmatch: shard: " + string(e) }
func (e shardError) Unwrap() error { return ErrShard }

// shardErr makes Open's errors in one place; noinline: module size, see
// docs/PERFORMANCE.md.
//
//go:noinline
func shardErr(msg string) error { return shardError(msg) }

// Encode writes the index as a shard.
func (ix *Index) Encode() []byte {
	avg := math.Float64bits(ix.avgLen)
	meta := []uint32{uint32(len(ix.ads)), uint32(len(ix.termOff) - 1), uint32(len(ix.critOff) - 1), uint32(avg), uint32(avg >> 32), ix.per}
	mk := make([]byte, 0, 4*len(ix.markets))
	for _, m := range ix.markets {
		mk = append(mk, m.Country...)
		mk = append(mk, m.Lang...)
	}
	secs := [numSections][]byte{
		secMeta:        u32Bytes(meta),
		secStrs:        []byte(ix.strs),
		secAds:         u32Bytes(unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(ix.ads))), len(ix.ads)*adRecWords)),
		secByID:        u32Bytes(ix.byID),
		secMarkets:     mk,
		secTermOff:     u32Bytes(ix.termOff),
		secTermStr:     []byte(ix.termStr),
		secPostOff:     u32Bytes(ix.postOff),
		secPostAd:      u32Bytes(ix.postAd),
		secPostTF:      ix.postTF,
		secCritStart:   u32Bytes(ix.critStart),
		secCritOff:     u32Bytes(ix.critOff),
		secCritTerms:   u32Bytes(ix.critTerms),
		secCritAdOff:   u32Bytes(ix.critAdOff),
		secCritAd:      u32Bytes(ix.critAd),
		secTermCritOff: u32Bytes(ix.termCritOff),
		secTermCrit:    u32Bytes(ix.termCrit),
		secFrags:       u32Bytes(ix.frags),
		secRecs:        adStrsBytesOf(ix.recs),
	}
	off := align8(headerSize + 8*numSections)
	total := off
	for _, s := range secs {
		total = align8(total + len(s))
	}
	out := make([]byte, total)
	copy(out, shardMagic)
	putU32(out[8:], ShardVersion)
	putU32(out[12:], numSections)
	for i, s := range secs {
		putU32(out[headerSize+8*i:], uint32(off))
		putU32(out[headerSize+8*i+4:], uint32(len(s)))
		copy(out[off:], s)
		off = align8(off + len(s))
	}
	putU32(out[16:], crc32c(out[headerSize:]))
	return out
}

// EncodePage writes the shard a publisher's page loads: Encode's format
// without what only the server reads. Landing URLs are for the redirect;
// models and keywords the index has already turned into terms and
// criteria; ids are looked up by the redirect alone (Lookup finds none).
// The Index that Open makes of it answers every query as ix does, byte for
// byte.
//
// With per > 0 the ads' strings stay out of the shard too, cut into
// fragments of per ads each (frags): a page loads those of the ads it
// shows (Missing, LoadFragment), not every ad's, so a large market costs a
// page its index and a few fragments rather than every title, logo and
// description (BenchmarkShardBytes).
func (ix *Index) EncodePage(per int) (shard []byte, frags [][]byte) {
	if ix.recs == nil && len(ix.ads) > 0 {
		panic("match: EncodePage of a page shard in fragments, which lacks its strings")
	}
	recs := make([]adStrs, len(ix.ads))
	page := &Index{
		ads: ix.ads, markets: ix.markets, avgLen: ix.avgLen,
		termOff: ix.termOff, termStr: ix.termStr, postOff: ix.postOff, postAd: ix.postAd, postTF: ix.postTF,
		critStart: ix.critStart, critOff: ix.critOff, critTerms: ix.critTerms, critAdOff: ix.critAdOff, critAd: ix.critAd,
		termCritOff: ix.termCritOff, termCrit: ix.termCrit,
	}
	if per <= 0 {
		// Sized once: grown ad by ad, the strings of a large catalog were
		// copied over and over (BenchmarkRefresh).
		arena := ix.appendPageStrs(make([]byte, 0, ix.PageStrings()), recs, 0)
		page.strs, page.recs = unsafe.String(unsafe.SliceData(arena), len(arena)), recs
		return page.Encode(), nil
	}
	// Fragment k: its ads' adStrs, then their strings, written in place;
	// an ad's strings are where they would be in the strings of all.
	page.per = uint32(per)
	n := (len(recs) + per - 1) / per
	frags, page.frags = make([][]byte, n), make([]uint32, 2*n)
	// Where each fragment's strings end in the strings of all, first;
	// then the fragments, each on its own.
	end := uint32(0)
	for k := range n {
		for i := k * per; i < min((k+1)*per, len(recs)); i++ {
			end += uint32(ix.recs[i].pageSize())
		}
		page.frags[2*k] = end
	}
	eachOf(n, func(k int) {
		lo, hi := k*per, min((k+1)*per, len(recs))
		start := uint32(0)
		if k > 0 {
			start = page.frags[2*k-2]
		}
		head := (hi - lo) * adStrsBytes
		f := ix.appendPageStrs(make([]byte, head, head+int(page.frags[2*k]-start)), recs[lo:hi], lo)
		for i := lo; i < hi; i++ {
			recs[i].str += start - uint32(head)
		}
		copy(f, adStrsBytesOf(recs[lo:hi]))
		frags[k] = f
		page.frags[2*k+1] = crc32c(f)
	})
	return page.Encode(), frags
}

// appendPageStrs appends the page's strings of ix's ads from lo on, one
// for each of recs, to b, and sets recs to them: each ad's string offset
// is where it starts in b. An ad's strings lie together, field after
// field, so the page's fields are copied a run at a time, not one by one.
func (ix *Index) appendPageStrs(b []byte, recs []adStrs, lo int) []byte {
	for k := range recs {
		r := &recs[k]
		*r = ix.recs[lo+k]
		src := ix.strs[r.str:]
		r.str = uint32(len(b))
		off, run, end := uint32(0), uint32(0), uint32(0)
		for f, l := range r.lens {
			switch {
			case !pageField(f):
				r.lens[f] = 0
			case off != end:
				b = append(b, src[run:end]...)
				run, end = off, off+l
			default:
				end += l
			}
			off += l
		}
		b = append(b, src[run:end]...)
	}
	return b
}

// pageSize is the bytes of the ad's strings in a page shard.
func (r *adStrs) pageSize() int {
	n := 0
	for f, l := range r.lens {
		if pageField(f) {
			n += int(l)
		}
	}
	return n
}

// pageField tells whether a page shard holds string f of its ads.
func pageField(f int) bool { return f != fModel && f != fLanding && f != fKeywords }

// PageStrings is the bytes of the ads' strings in a page shard of ix
// (EncodePage): what fragments would hold.
func (ix *Index) PageStrings() int {
	n := 0
	for i := range ix.recs {
		n += ix.recs[i].pageSize()
	}
	return n
}

// Fragments is the number of fragments the index's strings come in; 0 for
// an index that holds them all.
func (ix *Index) Fragments() int { return len(ix.fragStrs) }

// Missing returns the fragments that hold the hits' strings and are not
// loaded, each once: AppendLinks needs them all. Nil for an index that
// holds its strings.
func (ix *Index) Missing(hits []Hit) []int {
	if ix.per == 0 {
		return nil
	}
	var need []int
	for _, h := range hits {
		if k := int(uint32(h.Ad) / ix.per); ix.fragRecs[k] == nil && !slices.Contains(need, k) {
			need = append(need, k)
		}
	}
	return need
}

// LoadFragment makes fragment k, b, part of the index: its ads' adStrs
// and strings, after checking it against the shard's length and CRC-32C
// for it, and that each ad's strings lie within it. b must be 4-byte
// aligned, as Go allocates it. The index keeps b: the caller must not
// change it afterwards. It must not run while another call uses the index.
func (ix *Index) LoadFragment(k int, b []byte) error {
	bad := shardErr("not a fragment of this shard")
	if k < 0 || k >= len(ix.fragRecs) {
		return bad
	}
	// Its ads: per, or what is left for the last; k < ceil(nAds/per).
	lo := uint64(k) * uint64(ix.per)
	head := int(min(uint64(ix.per), uint64(len(ix.ads))-lo)) * adStrsBytes
	start, end := ix.fragStart(uint32(k)), ix.frags[2*k]
	if uint64(len(b)) != uint64(head)+uint64(end-start) || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 != 0 || crc32c(b) != ix.frags[2*k+1] {
		return bad
	}
	recs := unsafe.Slice((*adStrs)(unsafe.Pointer(unsafe.SliceData(b))), head/adStrsBytes)
	for i := range recs {
		if !recs[i].within(uint64(start), uint64(end)) {
			return bad
		}
	}
	ix.fragRecs[k] = recs
	ix.fragStrs[k] = unsafe.String(unsafe.SliceData(b[head:]), len(b)-head)
	return nil
}

// within reports whether r's strings lie in the arena's [start, end).
func (r *adStrs) within(start, end uint64) bool {
	last := uint64(r.str)
	for _, n := range r.lens {
		last += uint64(n)
	}
	return uint64(r.str) >= start && last <= end
}

// adStrsBytesOf returns recs as the shard holds them.
func adStrsBytesOf(recs []adStrs) []byte {
	return u32Bytes(unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(recs))), len(recs)*adStrsBytes/4))
}

func align8(n int) int { return (n + 7) &^ 7 }

// putU32 and getU32 write and read little-endian words; by hand, as
// encoding/binary brings reflect into the module.
func putU32(b []byte, v uint32) {
	_ = b[3]
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func getU32(b []byte) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// u32Bytes is v as a shard holds it, little-endian: v's own memory on a
// little-endian host, not a copy, so the caller must only read it.
func u32Bytes(v []uint32) []byte {
	if littleEndian() {
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		putU32(b[4*i:], x)
	}
	return b
}

// Open checks a shard and returns an Index that reads it in place. Every
// offset is checked once here, so no query can read out of bounds; a
// truncated, corrupt or oversized shard is an error, never a panic. The
// Index keeps b: the caller must not change it afterwards.
func Open(b []byte) (*Index, error) {
	if len(b) > MaxShardBytes {
		return nil, shardErr("too large")
	}
	if len(b) < headerSize || string(b[:8]) != shardMagic {
		return nil, shardErr("not a shard")
	}
	if v := getU32(b[8:]); v != ShardVersion {
		return nil, shardErr("version " + itoa(int(v)) + ", want " + itoa(ShardVersion))
	}
	if n := getU32(b[12:]); n != numSections {
		return nil, shardErr("wrong section count")
	}
	if len(b) < headerSize+8*numSections {
		return nil, shardErr("truncated")
	}
	if crc32c(b[headerSize:]) != getU32(b[16:]) {
		return nil, shardErr("checksum mismatch")
	}
	if !littleEndian() {
		return nil, shardErr("big-endian hosts are not supported")
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 != 0 {
		aligned := make([]uint64, (len(b)+7)/8)
		c := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(aligned))), len(b))
		copy(c, b)
		b = c
	}
	var secs [numSections][]byte
	for i := range secs {
		off := getU32(b[headerSize+8*i:])
		n := getU32(b[headerSize+8*i+4:])
		if off%8 != 0 || uint64(off)+uint64(n) > uint64(len(b)) || off < headerSize+8*numSections {
			return nil, shardErr("section out of bounds")
		}
		secs[i] = b[off : off+n]
	}
	words := func(s int) ([]uint32, error) {
		if len(secs[s])%4 != 0 {
			return nil, shardErr("misaligned section")
		}
		if len(secs[s]) == 0 {
			return nil, nil
		}
		return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(secs[s]))), len(secs[s])/4), nil
	}
	ix := &Index{}
	meta, err := words(secMeta)
	if err != nil || len(meta) != 6 {
		return nil, shardErr("bad meta")
	}
	nAds, nTerms, nCrit := int(meta[0]), int(meta[1]), int(meta[2])
	ix.per = meta[5]
	ix.avgLen = math.Float64frombits(uint64(meta[4])<<32 | uint64(meta[3]))
	if ix.avgLen < 0 || math.IsNaN(ix.avgLen) || math.IsInf(ix.avgLen, 0) || (nAds > 0 && ix.avgLen == 0) {
		return nil, shardErr("bad mean length")
	}
	ix.strs = unsafe.String(unsafe.SliceData(secs[secStrs]), len(secs[secStrs]))
	ix.termStr = unsafe.String(unsafe.SliceData(secs[secTermStr]), len(secs[secTermStr]))
	ix.postTF = secs[secPostTF]
	for _, p := range []struct {
		dst *[]uint32
		sec int
	}{
		{&ix.byID, secByID}, {&ix.termOff, secTermOff}, {&ix.postOff, secPostOff}, {&ix.postAd, secPostAd},
		{&ix.critStart, secCritStart}, {&ix.critOff, secCritOff}, {&ix.critTerms, secCritTerms},
		{&ix.critAdOff, secCritAdOff}, {&ix.critAd, secCritAd}, {&ix.termCritOff, secTermCritOff},
		{&ix.termCrit, secTermCrit}, {&ix.frags, secFrags},
	} {
		if *p.dst, err = words(p.sec); err != nil {
			return nil, err
		}
	}
	aw, err := words(secAds)
	if err != nil || len(aw) != nAds*adRecWords {
		return nil, shardErr("bad ad table")
	}
	if nAds > 0 {
		ix.ads = unsafe.Slice((*adRec)(unsafe.Pointer(unsafe.SliceData(aw))), nAds)
	}
	// The ads' adStrs, unless they come in fragments.
	rw, err := words(secRecs)
	want := nAds * adStrsBytes
	if ix.per != 0 {
		want = 0
	}
	if err != nil || 4*len(rw) != want {
		return nil, shardErr("bad string table")
	}
	if len(rw) > 0 {
		ix.recs = unsafe.Slice((*adStrs)(unsafe.Pointer(unsafe.SliceData(rw))), nAds)
	}
	mk := secs[secMarkets]
	if len(mk)%4 != 0 || len(mk)/4 > maxMarket {
		return nil, shardErr("bad market table")
	}
	for i := 0; i < len(mk); i += 4 {
		m := Market{Country: string(mk[i : i+2]), Lang: string(mk[i+2 : i+4])}
		if !isAlpha2(m.Country) || !isAlpha2(m.Lang) {
			return nil, shardErr("bad market")
		}
		ix.markets = append(ix.markets, m)
	}
	if err := ix.check(nAds, nTerms, nCrit); err != nil {
		return nil, err
	}
	return ix, nil
}

// check validates every offset and id of an opened index.
func (ix *Index) check(nAds, nTerms, nCrit int) error {
	// Fragments: ceil(nAds/per) of them, each ending after the last and
	// holding its ads' adStrs and strings; no strings in the shard itself.
	if ix.per != 0 {
		n := (uint64(nAds) + uint64(ix.per) - 1) / uint64(ix.per)
		if uint64(len(ix.frags)) != 2*n || len(ix.strs) != 0 {
			return shardErr("bad fragment table")
		}
		for k := uint32(0); k < uint32(n); k++ {
			if ix.frags[2*k] <= ix.fragStart(k) {
				return shardErr("bad fragment table")
			}
		}
		ix.fragRecs = make([][]adStrs, n)
		ix.fragStrs = make([]string, n)
	} else if len(ix.frags) != 0 {
		return shardErr("bad fragment table")
	}
	strs := uint64(len(ix.strs))
	marketMask := uint64(1)<<len(ix.markets) - 1
	if len(ix.markets) == 64 {
		marketMask = math.MaxUint64
	}
	if err := ix.checkAds(strs, nAds, marketMask); err != nil {
		return err
	}
	if len(ix.byID) != nAds && len(ix.byID) != 0 || !below(ix.byID, nAds) {
		return shardErr("bad id table")
	}
	if !offsets(ix.termOff, nTerms, len(ix.termStr)) ||
		!offsets(ix.postOff, nTerms, len(ix.postAd)) || len(ix.postTF) != len(ix.postAd) || !below(ix.postAd, nAds) ||
		!offsets(ix.critStart, nTerms, nCrit) ||
		!offsets(ix.critOff, nCrit, len(ix.critTerms)) || !below(ix.critTerms, nTerms) ||
		!offsets(ix.critAdOff, nCrit, len(ix.critAd)) ||
		!offsets(ix.termCritOff, nTerms, len(ix.termCrit)) || !below(ix.termCrit, nCrit) {
		return shardErr("bad offsets")
	}
	return ix.checkCriteria(nAds, nCrit)
}

// checkAds is check's of the ads' records. It and checkCriteria are
// functions of their own, as offsets and below are, so that their loops
// do not stand in check's.
//
//go:noinline
func (ix *Index) checkAds(strs uint64, nAds int, marketMask uint64) error {
	for i := range ix.recs {
		if !ix.recs[i].within(0, strs) {
			return shardErr("string out of bounds")
		}
	}
	for i := range ix.ads {
		a := &ix.ads[i]
		if a.kindv >= uint32(numKinds) || a.offer >= uint32(nAds) || a.adv >= uint32(nAds) || a.marketBits()&^marketMask != 0 {
			return shardErr("bad ad record")
		}
	}
	return nil
}

// checkCriteria is check's of the criteria, once their offsets are known
// to be good.
//
//go:noinline
func (ix *Index) checkCriteria(nAds, nCrit int) error {
	for _, e := range ix.critAd {
		if e>>2 >= uint32(nAds) {
			return shardErr("bad criterion ad")
		}
	}
	for c := range nCrit {
		if ix.critOff[c] == ix.critOff[c+1] {
			return shardErr("empty criterion")
		}
		// A criterion must sit in its first term's range, or lookups by
		// first term would read another term's criteria.
		t := ix.critTerms[ix.critOff[c]]
		if uint32(c) < ix.critStart[t] || uint32(c) >= ix.critStart[t+1] {
			return shardErr("criterion out of order")
		}
		// Lookups narrow a first term's criteria term by term and read
		// term k only of those longer than k (findOccs): that holds only
		// while the criteria are in lexicographic order, a prefix first.
		if c > 0 && !ordered(ix.critTerms[ix.critOff[c-1]:ix.critOff[c]], ix.critTerms[ix.critOff[c]:ix.critOff[c+1]]) {
			return shardErr("criterion out of order")
		}
	}
	return nil
}

// ordered reports whether term sequence a sorts no later than b.
func ordered(a, b []uint32) bool {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) <= len(b)
}

// offsets reports whether off is n+1 non-decreasing offsets from 0 ending at end.
//
// It and below are not inlined into check: V8 counts each turn of a loop
// in the module by the size of the whole function it stands in (Go's
// WebAssembly runs every loop through its function's one outer loop), so
// inlined, their loops had V8 optimise all of check while a page waited
// for its first ads.
//
//go:noinline
func offsets(off []uint32, n, end int) bool {
	if len(off) != n+1 || off[0] != 0 || int(off[n]) != end {
		return false
	}
	for i := 1; i < len(off); i++ {
		if off[i] < off[i-1] {
			return false
		}
	}
	return true
}

//go:noinline
func below(v []uint32, n int) bool {
	for _, x := range v {
		if x >= uint32(n) {
			return false
		}
	}
	return true
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// itoa is strconv.Itoa, once in the module: messages about bad input
// (shards, parameters) use it, where strconv.Itoa is inlined at each.
//
//go:noinline
func itoa(n int) string {
	u := uint(n)
	if n < 0 {
		u = -u
	}
	var b [21]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if n < 0 {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
