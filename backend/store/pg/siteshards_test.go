package pgstore_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// TestSiteShardsKeepNamedOnes: a shard is kept once, by its name; named
// again it stays, and DropShards deletes those not named since its time,
// at most its limit, the oldest first.
func TestSiteShardsKeepNamedOnes(t *testing.T) {
	ctx := t.Context()
	db, err := pgstore.Open(ctx, testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := db.SiteShards()
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if ok, err := s.TouchShard(ctx, "a", day); ok || err != nil {
		t.Fatalf("touching a shard not kept: %v %v", ok, err)
	}
	for i, name := range []string{"a", "b", "c"} {
		if err := s.PutShard(ctx, name, []byte(name+" body"), day.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// Put again: the body kept is the first's.
	if err := s.PutShard(ctx, "a", []byte("other"), day); err != nil {
		t.Fatal(err)
	}
	if body, err := s.GetShard(ctx, "a"); err != nil || !bytes.Equal(body, []byte("a body")) {
		t.Fatalf("a: %q %v", body, err)
	}
	if body, err := s.GetShard(ctx, "z"); body != nil || err != nil {
		t.Fatalf("a shard never kept: %q %v", body, err)
	}
	// a named again later than the others: b goes first, then c.
	if ok, err := s.TouchShard(ctx, "a", day.Add(5*time.Hour)); !ok || err != nil {
		t.Fatalf("touching a: %v %v", ok, err)
	}
	names := func(since time.Time, limit int) string {
		t.Helper()
		named, err := s.ShardNames(ctx, since, limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range named {
			got = append(got, fmt.Sprintf("%s@%s", n.SHA256, n.At.Sub(day)))
		}
		return strings.Join(got, " ")
	}
	if got, want := names(day, 10), "b@1h0m0s c@2h0m0s a@5h0m0s"; got != want {
		t.Errorf("names named since the day began: %s; want %s", got, want)
	}
	if got, want := names(day.Add(2*time.Hour), 1), "c@2h0m0s"; got != want {
		t.Errorf("the first name named since 2h: %s; want %s", got, want)
	}
	if n, err := s.DropShards(ctx, day.Add(4*time.Hour), 1); n != 1 || err != nil {
		t.Fatalf("dropped %d, %v; want 1", n, err)
	}
	if body, _ := s.GetShard(ctx, "b"); body != nil {
		t.Error("b, named first, is kept")
	}
	if n, err := s.DropShards(ctx, day.Add(4*time.Hour), 10); n != 1 || err != nil {
		t.Fatalf("dropped %d, %v; want c", n, err)
	}
	if body, _ := s.GetShard(ctx, "a"); body == nil {
		t.Error("a, named since, was dropped")
	}
}
