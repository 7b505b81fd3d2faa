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
	"testing"
	"time"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/siteshards"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }

// TestStoreReadsNoRequestWaitsForAreNotRun: requests for shards no
// replica built, whose clients went away while every read slot was
// taken, neither wait for a slot nor have the store read later, so that
// a flood of such requests cannot queue before a page's; a read whose
// first request left is still done for the one that waits.
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
	svc := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000, Store: db.SiteShards()})
	defer svc.Close()

	release := svc.HoldLookups()
	var once sync.Once
	defer once.Do(release)
	const gone = 20
	var left sync.WaitGroup
	cancels := make([]context.CancelFunc, 0, gone+1)
	for i := range gone {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		left.Go(func() {
			if sh := svc.Shard(ctx, fmt.Sprintf("%064x", i+1)); sh != nil {
				t.Errorf("a shard no replica built: %s", sh.Blob.SHA256)
			}
		})
	}
	// The first request for the shard kept goes away; a second waits.
	first, cancel := context.WithCancel(context.Background())
	cancels = append(cancels, cancel)
	left.Go(func() { svc.Shard(first, blob.SHA256) })
	for svc.Waiting() < gone+1 {
		time.Sleep(time.Millisecond)
	}
	got := make(chan *siteshards.Shard, 1)
	go func() { got <- svc.Shard(context.Background(), blob.SHA256) }()
	time.Sleep(100 * time.Millisecond)

	for _, cancel := range cancels {
		cancel()
	}
	returned := make(chan struct{})
	go func() {
		left.Wait()
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("requests whose clients went away still wait for a read slot")
	}
	once.Do(release)
	if sh := <-got; sh == nil || sh.Blob.SHA256 != blob.SHA256 {
		t.Fatalf("the request that waited: %v, want the shard kept", sh)
	}
	svc.WaitReads()
	if st := svc.Stats(); st.FetchMissed != 0 || st.Fetched != 1 || st.FetchFailed != 0 {
		t.Errorf("stats: %+v; want the shard kept read, and nothing else", st)
	}
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
