package siteshards_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/siteshards"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }

// TestStoreReadsNoRequestWaitsForAreNotRun: requests for shards no
// replica built are answered at once, without a read, even while every
// read slot is taken; a read whose first request left is still done for
// the one that waits.
func TestStoreReadsNoRequestWaitsForAreNotRun(t *testing.T) {
	db, err := pgstore.Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	blob, err := shards.NewBlob(bytes.Repeat([]byte("a shard another replica built "), 100), "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	built := &siteshards.Shard{Blob: blob, Ads: 9}
	if err := db.SiteShards().PutShard(t.Context(), blob.SHA256, siteshards.EncodeShard(built), time.Now()); err != nil {
		t.Fatal(err)
	}
	store := &countingStore{Store: db.SiteShards()}
	svc := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000, Store: store})
	defer svc.Close()

	release := svc.HoldLookups()
	var once sync.Once
	defer once.Do(release)
	const unknown = 20
	var answered sync.WaitGroup
	for i := range unknown {
		answered.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if sh := svc.Shard(ctx, fmt.Sprintf("%064x", i+1)); sh != nil {
				t.Errorf("a shard no replica built: %s", sh.Blob.SHA256)
			}
		})
	}
	returned := make(chan struct{})
	go func() {
		answered.Wait()
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("requests for shards no replica built wait for a read slot")
	}
	if reads := store.reads.Load(); reads != 0 {
		t.Fatalf("%d reads for shards no replica built; want none", reads)
	}

	// The first request for the shard kept goes away; a second waits.
	first, cancel := context.WithCancel(context.Background())
	var left sync.WaitGroup
	left.Go(func() { svc.Shard(first, blob.SHA256) })
	for svc.Waiting() < 1 {
		time.Sleep(time.Millisecond)
	}
	got := make(chan *siteshards.Shard, 1)
	go func() { got <- svc.Shard(context.Background(), blob.SHA256) }()
	for svc.Waiting() < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	left.Wait()
	once.Do(release)
	if sh := <-got; sh == nil || sh.Blob.SHA256 != blob.SHA256 {
		t.Fatalf("the request that waited: %v, want the shard kept", sh)
	}
	svc.WaitReads()
	if st := svc.Stats(); st.FetchMissed != unknown || st.Fetched != 1 || st.FetchFailed != 0 {
		t.Errorf("stats: %+v; want the %d unknown missing, the shard kept read, and nothing else", st, unknown)
	}
}

// TestUnknownShardFloodListsNamesOnly: a flood of requests for random
// names has the store's names listed once a second at most and no row
// read, while a shard another replica wrote after the names were first
// listed is read once and served within the flood.
func TestUnknownShardFloodListsNamesOnly(t *testing.T) {
	db, err := pgstore.Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store := &countingStore{Store: db.SiteShards()}
	svc := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000, Store: store})
	defer svc.Close()
	start := time.Now()
	// The names listed at start: a random name is then missing.
	if sh := svc.Shard(t.Context(), fmt.Sprintf("%064x", 1)); sh != nil {
		t.Fatalf("a shard no replica built: %s", sh.Blob.SHA256)
	}

	stop := make(chan struct{})
	var flood sync.WaitGroup
	var requests atomic.Int64
	for w := range 64 {
		flood.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				requests.Add(1)
				if sh := svc.Shard(t.Context(), fmt.Sprintf("%032x%032x", w+2, i)); sh != nil {
					t.Errorf("a shard no replica built: %s", sh.Blob.SHA256)
					return
				}
			}
		})
	}
	for requests.Load() < 128 {
		time.Sleep(time.Millisecond)
	}
	// Another replica writes a shard, then a page asks for it.
	blob, err := shards.NewBlob(bytes.Repeat([]byte("a shard another replica built later "), 100), "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SiteShards().PutShard(t.Context(), blob.SHA256, siteshards.EncodeShard(&siteshards.Shard{Blob: blob, Ads: 9}), time.Now()); err != nil {
		t.Fatal(err)
	}
	if sh := svc.Shard(t.Context(), blob.SHA256); sh == nil || sh.Blob.SHA256 != blob.SHA256 {
		t.Errorf("the shard written within the flood: %v", sh)
	}
	for n := requests.Load(); requests.Load() < n+128; {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	flood.Wait()
	took := time.Since(start)

	listings, reads := store.listings.Load(), store.reads.Load()
	if most := int64(took/time.Second) + 2; listings > most || listings < 2 {
		t.Errorf("%d listings for %d requests over %s; want 2 to %d", listings, requests.Load(), took, most)
	}
	if reads != 1 {
		t.Errorf("%d reads for %d requests; want the shard written read once", reads, requests.Load())
	}
	if st := svc.Stats(); st.Fetched != 1 || st.FetchFailed != 0 || int64(st.Listings) != listings || int64(st.Reads) != reads {
		t.Errorf("stats: %+v; want the shard written read, %d listings", st, listings)
	}
}

// TestShardNamedByAFastClockHidesNoOther: a replica whose clock runs an
// hour ahead names a shard; a shard a replica with the right time names
// afterwards is still listed, and served.
func TestShardNamedByAFastClockHidesNoOther(t *testing.T) {
	db, err := pgstore.Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000, Store: db.SiteShards()})
	defer svc.Close()
	put := func(text string, at time.Time) string {
		blob, err := shards.NewBlob(bytes.Repeat([]byte(text), 100), "application/octet-stream")
		if err != nil {
			t.Fatal(err)
		}
		if err := db.SiteShards().PutShard(t.Context(), blob.SHA256, siteshards.EncodeShard(&siteshards.Shard{Blob: blob, Ads: 3}), at); err != nil {
			t.Fatal(err)
		}
		return blob.SHA256
	}
	ahead := put("a shard a replica an hour ahead built ", time.Now().Add(time.Hour))
	if sh := svc.Shard(t.Context(), ahead); sh == nil {
		t.Fatal("the shard the replica ahead built not served")
	}
	right := put("a shard a replica on time built ", time.Now())
	if sh := svc.Shard(t.Context(), right); sh == nil || sh.Blob.SHA256 != right {
		t.Errorf("the shard the replica on time built after it: %v", sh)
	}
}

// countingStore counts the listings and reads of the store it wraps.
type countingStore struct {
	siteshards.Store
	listings, reads atomic.Int64
}

func (s *countingStore) ShardNames(ctx context.Context, since time.Time, limit int) ([]siteshards.Named, error) {
	s.listings.Add(1)
	return s.Store.ShardNames(ctx, since, limit)
}

func (s *countingStore) GetShard(ctx context.Context, sha string) ([]byte, error) {
	s.reads.Add(1)
	return s.Store.GetShard(ctx, sha)
}

// TestShareFailuresLoggedOnceAMinute: while Postgres is down, the shards
// that could not be shared are counted each, and logged once a minute,
// not a line each: every shard a manifest names is tried again each
// minute.
func TestShareFailuresLoggedOnceAMinute(t *testing.T) {
	pg := testpg.Start(t)
	db, err := pgstore.Open(t.Context(), pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logs bytes.Buffer
	var mu sync.Mutex
	svc := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000, Store: db.SiteShards(),
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	defer svc.Close()
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		blob, err := shards.NewBlob(bytes.Repeat([]byte(fmt.Sprintf("shard %d ", i)), 100), "application/octet-stream")
		if err != nil {
			t.Fatal(err)
		}
		svc.Share(&siteshards.Shard{Blob: blob, Ads: 9})
	}
	mu.Lock()
	lines := strings.Count(logs.String(), "not shared")
	mu.Unlock()
	if st := svc.Stats(); st.ShareFailed != 5 || lines != 1 {
		t.Errorf("%d failures counted, %d logged; want 5, 1:\n%s", st.ShareFailed, lines, logs.String())
	}
}

// lockedWriter is a writer for a logger of several goroutines.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
