package siteshards

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/adlink/adlink/backend/shards"
)

// Store keeps the site and head shards a replica built where every
// replica of its deployment finds them: a manifest one replica answers
// names a shard the page may fetch from another. A shard is kept by the
// SHA-256 its URL names, as the bytes encodeShard makes. Its methods are
// safe for concurrent use.
type Store interface {
	// PutShard keeps body under sha, named at; a shard kept already is
	// left as it is and named at, if later. It is durable once PutShard
	// returns nil, and idempotent.
	PutShard(ctx context.Context, sha string, body []byte, at time.Time) error
	// TouchShard names the shard kept under sha at, if later, so that
	// DropShards keeps it; it reports false when none is kept.
	TouchShard(ctx context.Context, sha string, at time.Time) (bool, error)
	// GetShard returns the body kept under sha; nil, nil when there is
	// none.
	GetShard(ctx context.Context, sha string) ([]byte, error)
	// ShardNames returns the shards kept named at since or later, with
	// when each was named last, the earliest first, at most limit; a
	// shard PutShard kept is listed once it returns.
	ShardNames(ctx context.Context, since time.Time, limit int) ([]Named, error)
	// DropShards deletes at most limit shards not named since before,
	// the oldest first, and returns how many it deleted.
	DropShards(ctx context.Context, before time.Time, limit int) (int, error)
}

// Named is a shard a Store keeps, by its SHA-256, and when it was named
// last.
type Named struct {
	SHA256 string
	At     time.Time
}

// How a Service shares its shards through a Store.
const (
	// shareTimeout bounds a write or read of the store: a build or a
	// request waits no longer for it.
	shareTimeout = 5 * time.Second
	// touchEvery is how often a shard a manifest names is named again in
	// the store; retryEvery how soon one the store did not keep is tried
	// again.
	touchEvery = time.Hour
	retryEvery = time.Minute
	// keepShared is how long the store keeps a shard no manifest named:
	// far longer than a manifest is cached (five minutes) and touchEvery.
	keepShared = 24 * time.Hour
	// dropBatch bounds the shards one tick of the saver deletes.
	dropBatch = 1000
	// maxLookups bounds the store reads running at once, so that requests
	// for shards no replica built cannot take every connection.
	maxLookups = 4
	// shardMagic starts a shard's body in the store.
	shardMagic = "adlink site shard 1\n"
)

// shardType is the Content-Type of site shards and their fragments.
const shardType = "application/octet-stream"

// encodeShard is the body a Store keeps for a shard: its blob and
// fragments, each in every encoding it is served in, then the SHA-256 of
// all that. Its readers are the other replicas, of the same build or of
// another: the format only grows by a new magic.
func encodeShard(sh *Shard) []byte {
	var b []byte
	b = append(b, shardMagic...)
	head := uint64(0)
	if sh.Head {
		head = 1
	}
	b = binary.AppendUvarint(b, head)
	b = binary.AppendUvarint(b, uint64(sh.Ads))
	b = binary.AppendUvarint(b, uint64(1+len(sh.Fragments)))
	for _, x := range append([]*shards.Blob{sh.Blob}, sh.Fragments...) {
		for _, e := range []shards.Encoding{shards.Identity, shards.Zstd, shards.Gzip} {
			c := x.Bytes(e)
			b = binary.AppendUvarint(b, uint64(len(c)))
			b = append(b, c...)
		}
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// decodeShard reads a body encodeShard made for the shard named sha. A
// body that is not whole, or whose shard is not sha, is an error: the
// shard is not served.
func decodeShard(sha string, body []byte) (*Shard, error) {
	if len(body) < len(shardMagic)+sha256.Size || !bytes.HasPrefix(body, []byte(shardMagic)) {
		return nil, errors.New("not a site shard")
	}
	payload, sum := body[:len(body)-sha256.Size], body[len(body)-sha256.Size:]
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return nil, errors.New("the shard's checksum does not match its bytes")
	}
	r := payload[len(shardMagic):]
	next := func() (uint64, error) {
		v, n := binary.Uvarint(r)
		if n <= 0 {
			return 0, errors.New("a shard's body cut short")
		}
		r = r[n:]
		return v, nil
	}
	head, err := next()
	if err != nil {
		return nil, err
	}
	ads, err := next()
	if err != nil {
		return nil, err
	}
	n, err := next()
	if err != nil || n == 0 || n > uint64(len(r)) {
		return nil, errors.New("a shard's body cut short")
	}
	sh := &Shard{Head: head == 1, Ads: int(ads)}
	for i := range n {
		var enc [3][]byte
		for k := range enc {
			l, err := next()
			if err != nil || l > uint64(len(r)) {
				return nil, errors.New("a shard's body cut short")
			}
			enc[k], r = r[:l:l], r[l:]
		}
		x, err := shards.Restore(enc[0], enc[1], enc[2], shardType)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			sh.Blob = x
		} else {
			sh.Fragments = append(sh.Fragments, x)
		}
		sh.Bytes += x.Size(shards.Zstd)
	}
	if len(r) != 0 {
		return nil, errors.New("a shard's body runs on")
	}
	if sh.Blob.SHA256 != sha {
		return nil, fmt.Errorf("the shard kept as %.12s is %.12s", sha, sh.Blob.SHA256)
	}
	return sh, nil
}

// share keeps a shard just built in the store, before any manifest names
// it, so that every replica serves it from the first. A store that does
// not answer is logged and counted; the shard is served from this
// replica's memory all the same and tried again when a manifest names it.
func (s *Service) share(sh *Shard) {
	if s.o.Store == nil {
		return
	}
	now := s.o.Now()
	err := s.put(sh, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	sh.tried = now
	if err != nil {
		s.stats.ShareFailed++
		// Once a minute at most: while Postgres is down, every shard a
		// manifest names is tried again each minute.
		if now := time.Now(); now.Sub(s.shareLogged) >= time.Minute {
			s.shareLogged = now
			s.o.Logger.Warn("a site shard not shared with the other replicas: a page that fetches it from another gets a 404; trying again (more such failures are counted, not logged, for a minute)",
				"sha256", sh.Blob.SHA256, "err", err, "failed_so_far", s.stats.ShareFailed)
		}
		return
	}
	sh.shared = now
	s.stats.Shared++
	s.listedLocked(sh.Blob.SHA256, now)
}

// put writes a shard to the store, or names it now when it has it.
func (s *Service) put(sh *Shard, now time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), shareTimeout)
	defer cancel()
	if ok, err := s.o.Store.TouchShard(ctx, sh.Blob.SHA256, now); err != nil || ok {
		return err
	}
	return s.o.Store.PutShard(ctx, sh.Blob.SHA256, encodeShard(sh), now)
}

// namedLocked notes that a manifest names sh: a shard the store has not
// had named for touchEvery, or did not keep, is shared again, when the
// sharer has room.
func (s *Service) namedLocked(sh *Shard, now time.Time) *Shard {
	if sh == nil || s.o.Store == nil {
		return sh
	}
	if now.Sub(sh.shared) < touchEvery || now.Sub(sh.tried) < retryEvery {
		return sh
	}
	select {
	case s.sharing <- sh:
		sh.tried = now
		s.inflight++
	default: // full: the next manifest tries
	}
	return sh
}

// sharer writes the shards namedLocked queues until ctx ends.
func (s *Service) sharer(ctx context.Context) {
	defer close(s.sharerDone)
	if s.o.Store == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case sh := <-s.sharing:
			s.share(sh)
			s.mu.Lock()
			s.doneLocked()
			s.mu.Unlock()
		}
	}
}

// fetch reads a shard another replica built from the store, checks it
// and keeps it in the cache; nil when the store has none by that name
// (none listed, or none read), or does not answer, or has one whose
// bytes are not that shard's, or ctx ends first. With site shards off no replica builds one: nothing is
// read.
func (s *Service) fetch(ctx context.Context, sha string) *Shard {
	if s.o.Store == nil || s.Budget() == 0 || !shards.ValidSHA256(sha) {
		return nil
	}
	// A name the store does not list is none it keeps: not read, so that
	// requests for shards no replica built cost the store nothing.
	if ok, err := s.known(ctx, sha); !ok {
		s.mu.Lock()
		defer s.mu.Unlock()
		if sh := s.cache.bySHA(sha); sh != nil { // built meanwhile
			return sh
		}
		if err != nil {
			s.stats.FetchFailed++
		} else {
			s.stats.FetchMissed++
		}
		return nil
	}
	// One read per shard at a time: the pages of a first view come at
	// once. The read is every waiting request's: not cut short by the
	// first's client going away, but given up, even before it has a
	// slot, once every one did, so that requests whose clients left at
	// once do not queue before the pages that wait.
	s.mu.Lock()
	if sh := s.cache.bySHA(sha); sh != nil {
		s.mu.Unlock()
		return sh
	}
	l := s.reading[sha]
	if l == nil && s.closed {
		s.mu.Unlock()
		return nil
	}
	if l == nil {
		rctx, cancel := context.WithTimeout(context.Background(), shareTimeout)
		l = &lookup{done: make(chan struct{}), cancel: cancel}
		s.reading[sha] = l
		s.readers.Add(1)
		go s.readShared(rctx, sha, l)
	}
	l.waiting++
	s.mu.Unlock()
	select {
	case <-l.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.cache.bySHA(sha)
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if l.waiting--; l.waiting == 0 {
			l.cancel()
			if s.reading[sha] == l {
				delete(s.reading, sha) // a request now reads afresh
			}
		}
		return nil
	}
}

// lookup is a read of the store that requests wait for; the Service's
// lock guards waiting.
type lookup struct {
	done    chan struct{} // closed once the shard read, if any, is cached
	cancel  context.CancelFunc
	waiting int
}

// readShared reads the shard sha from the store for the requests
// waiting on l, and caches it.
func (s *Service) readShared(ctx context.Context, sha string, l *lookup) {
	defer s.readers.Done()
	defer l.cancel()
	sh, err := s.read(ctx, sha)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reading[sha] == l {
		delete(s.reading, sha)
	}
	defer close(l.done)
	switch {
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		return // no request waits for it any more
	case err != nil:
		s.stats.FetchFailed++
		// Once a minute at most: while Postgres is down, every page of
		// every other replica's manifests would be a line.
		if now := time.Now(); now.Sub(s.fetchLogged) >= time.Minute {
			s.fetchLogged = now
			s.o.Logger.Warn("a shard another replica built not read: 404 (more such failures are counted, not logged, for a minute)",
				"sha256", sha, "err", err, "failed_so_far", s.stats.FetchFailed)
		}
		return
	case sh == nil:
		s.stats.FetchMissed++
		return
	}
	s.stats.Fetched++
	// The store has it: named by the replica that builds it, not by this
	// one, which names it in no manifest.
	sh.shared, sh.tried = s.o.Now(), s.o.Now()
	s.cache.put(fetchedKey+sha, sh)
}

// fetchedKey heads the cache keys of shards read from the store.
const fetchedKey = "\x00fetched\x00"

// read reads and decodes the shard kept under sha; nil, nil when none is.
func (s *Service) read(ctx context.Context, sha string) (*Shard, error) {
	ctx, cancel := context.WithTimeout(ctx, shareTimeout)
	defer cancel()
	select {
	case s.lookups <- struct{}{}:
		defer func() { <-s.lookups }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := ctx.Err(); err != nil { // a slot came as it ended
		return nil, err
	}
	s.mu.Lock()
	s.stats.Reads++
	s.mu.Unlock()
	body, err := s.o.Store.GetShard(ctx, sha)
	if err != nil || body == nil {
		return nil, err
	}
	sh, err := decodeShard(sha, body)
	if err != nil {
		return nil, fmt.Errorf("the shard kept is not served: %w", err)
	}
	return sh, nil
}

// drop deletes from the store the shards no manifest named for
// keepShared; a tick of the saver runs it.
func (s *Service) drop(ctx context.Context) {
	if s.o.Store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, shareTimeout)
	defer cancel()
	n, err := s.o.Store.DropShards(ctx, s.o.Now().Add(-keepShared), dropBatch)
	if err != nil {
		s.o.Logger.Warn("shared site shards not dropped; trying again", "err", err)
		return
	}
	if n > 0 {
		s.o.Logger.Info("shared site shards dropped", "shards", n, "unnamed_for", keepShared.String())
	}
}
