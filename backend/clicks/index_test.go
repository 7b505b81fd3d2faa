package clicks_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
)

// indexT0 is the first day of the index tests' clicks.
var indexT0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// indexKeys and indexAds are accounts whose ids are the start of each
// other's, and an api_key that is also an advertiser's id.
var (
	indexKeys = []string{"shop", "shop.example", "s", "x"}
	indexAds  = []string{"shop", "shop.example", "shop.example.evil", ""}
)

// indexClick is the i-th click of the index tests: two days, clicks of
// one nanosecond among them.
func indexClick(i int) clicks.Click {
	return clicks.Click{ID: "c" + strconv.Itoa(1000+i), Time: indexT0.Add(time.Duration(i/3) * 17 * time.Minute), AdID: "ad",
		APIKey: indexKeys[i%len(indexKeys)], Advertiser: indexAds[(i/2)%len(indexAds)], Criterion: "x", Billable: i%5 != 0}
}

// openLog opens the bbolt file in dir and its click log.
func openLog(t *testing.T, dir string) (*bolt.DB, *clicks.Log) {
	t.Helper()
	db, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	log, err := clicks.New(db)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	return db, log
}

// indexQueries are the listings of every account of the index tests,
// oldest and newest first.
func indexQueries() []clicks.Query {
	var qs []clicks.Query
	for _, k := range indexKeys {
		qs = append(qs, clicks.Query{APIKey: k})
	}
	for _, a := range indexAds[:3] {
		qs = append(qs, clicks.Query{Advertiser: a})
	}
	for i := range qs {
		d := qs[i]
		d.Desc = true
		qs = append(qs, d)
	}
	return qs
}

// listAll follows q's pages of list, of limit clicks, and returns the ids.
func listAll(t *testing.T, list func(context.Context, clicks.Query) ([]clicks.Click, bool, error), q clicks.Query, limit int) []string {
	t.Helper()
	q.From, q.To, q.Limit = indexT0, indexT0.AddDate(0, 0, 3), limit
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("%+v: the pages do not end", q)
		}
		page, more, err := list(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page {
			ids = append(ids, c.ID)
		}
		if !more {
			return ids
		}
		last := page[len(page)-1]
		q.After = clicks.Position{Time: last.Time, ID: last.ID}
	}
}

// wantIDs are the ids of the clicks of 0..n-1 that q's account has, in
// q's order.
func wantIDs(q clicks.Query, n int) []string {
	var cs []clicks.Click
	for i := range n {
		c := indexClick(i)
		if (q.APIKey == "" || c.APIKey == q.APIKey) && (q.Advertiser == "" || c.Advertiser == q.Advertiser) {
			cs = append(cs, c)
		}
	}
	slices.SortStableFunc(cs, func(a, b clicks.Click) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return compareStrings(a.ID, b.ID)
	})
	if q.Desc {
		slices.Reverse(cs)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkListings fails t unless every account's listing on log, through
// List, gives exactly its own clicks of the first n, each once, in order.
func checkListings(t *testing.T, log *clicks.Log, n int, when string) {
	t.Helper()
	for _, q := range indexQueries() {
		want := wantIDs(q, n)
		if len(want) == 0 {
			t.Fatalf("%+v has no clicks: the test lists nothing", q)
		}
		for _, limit := range []int{1, 4, 1000} {
			if got := listAll(t, log.List, q, limit); !slices.Equal(got, want) {
				t.Errorf("%s: key %q advertiser %q desc %v limit %d: listed\n%q\nwant\n%q", when, q.APIKey, q.Advertiser, q.Desc, limit, got, want)
			}
		}
	}
}

// TestIndexKeepsAccountsApart: through the account index, an account
// lists its own clicks only, where its id is the start of another's
// (shop, shop.example) and where an api_key is an advertiser's id.
func TestIndexKeepsAccountsApart(t *testing.T) {
	db, log := openLog(t, t.TempDir())
	defer db.Close()
	const n = 200
	for i := range n {
		if err := log.Append(context.Background(), indexClick(i)); err != nil {
			t.Fatal(err)
		}
	}
	entries, built, err := clicks.IndexState(db)
	if err != nil || !built {
		t.Fatalf("a new file's index: %d entries, built %v, %v", entries, built, err)
	}
	checkListings(t, log, n, "new file")
}

// TestIndexBuiltForAnOlderFile: a file whose clicks were recorded before
// the log had an account index lists them all as before, while its index
// is built, after a build a crash cut short and after the build; the
// build indexes every click once, the clicks recorded meanwhile too.
func TestIndexBuiltForAnOlderFile(t *testing.T) {
	dir := t.TempDir()
	db, log := openLog(t, dir)
	const n = 150
	for i := range n {
		if err := log.Append(context.Background(), indexClick(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := clicks.DropIndex(db); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, log = openLog(t, dir)
	if entries, built, err := clicks.IndexState(db); err != nil || entries != 0 || built {
		t.Fatalf("an older file's index at start: %d entries, built %v, %v", entries, built, err)
	}
	checkListings(t, log, n, "before the build")
	// A click recorded before the build indexes itself.
	if err := log.Append(context.Background(), indexClick(n)); err != nil {
		t.Fatal(err)
	}
	if err := clicks.BuildIndexPart(context.Background(), log, 7, 60); err != nil {
		t.Fatal(err)
	}
	db.Close() // a crash after the build's last commit

	db, log = openLog(t, dir)
	defer func() { db.Close() }()
	entries, built, err := clicks.IndexState(db)
	if err != nil || built || entries == 0 {
		t.Fatalf("after a build cut short: %d entries, built %v, %v", entries, built, err)
	}
	checkListings(t, log, n+1, "after a build cut short")
	if err := log.Append(context.Background(), indexClick(n+1)); err != nil {
		t.Fatal(err)
	}
	// The build goes on where the last one stopped: the clicks it had not
	// reached are all it has to index.
	if err := clicks.BuildIndexPart(context.Background(), log, 7, n+2-60); err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range n + 2 {
		c := indexClick(i)
		want += 1 + min(len(c.Advertiser), 1)
	}
	if entries, built, err := clicks.IndexState(db); err != nil || !built || entries != want {
		t.Fatalf("after the build: %d entries, built %v, %v; want %d, built", entries, built, err, want)
	}
	checkListings(t, log, n+2, "after the build")
	// Built is built: another start's build changes nothing.
	if err := log.BuildIndex(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if entries, _, _ := clicks.IndexState(db); entries != want {
		t.Errorf("a second build: %d entries, want %d", entries, want)
	}
	// The index, not a scan, answers: a listing of the index's clicks
	// alone is the same.
	for _, q := range indexQueries() {
		got, want := listAll(t, log.List, q, 5), listAll(t, func(ctx context.Context, q clicks.Query) ([]clicks.Click, bool, error) {
			return clicks.ListScanning(ctx, log, q)
		}, q, 5)
		if !slices.Equal(got, want) {
			t.Errorf("%+v: the index lists %q, the scan %q", q, got, want)
		}
	}
}

// TestRetentionRemovesIndexEntries: a day the retention deletes takes
// its clicks' entries in the account index with it, and the other day's
// stay and list.
func TestRetentionRemovesIndexEntries(t *testing.T) {
	db, log := openLog(t, t.TempDir())
	defer db.Close()
	const n = 300 // 100 minutes of 17: over two days
	for i := range n {
		if err := log.Append(context.Background(), indexClick(i)); err != nil {
			t.Fatal(err)
		}
	}
	before, _, err := clicks.IndexState(db)
	if err != nil {
		t.Fatal(err)
	}
	r, err := clicks.NewRetainer(db)
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := r.DeleteDay(context.Background(), clicks.ClickLog, indexT0)
	if err != nil || deleted == 0 {
		t.Fatalf("DeleteDay: %d, %v", deleted, err)
	}
	gone := 0
	for i := range deleted {
		c := indexClick(i)
		if !c.Time.Before(indexT0.AddDate(0, 0, 1)) {
			t.Fatalf("click %d of the next day deleted", i)
		}
		gone += 1 + min(len(c.Advertiser), 1)
	}
	after, _, err := clicks.IndexState(db)
	if err != nil || after != before-gone {
		t.Fatalf("the index's entries: %d before, %d after deleting %d clicks; want %d", before, after, deleted, before-gone)
	}
	for _, q := range indexQueries() {
		var want []string
		for _, id := range wantIDs(q, n) {
			if i, _ := strconv.Atoi(id[1:]); i-1000 >= deleted {
				want = append(want, id)
			}
		}
		if got := listAll(t, log.List, q, 3); !slices.Equal(got, want) {
			t.Errorf("%+v after the day went: %q, want %q", q, got, want)
		}
	}
}

// TestIndexRebuiltAfterAnOlderRelease: clicks an older release recorded
// in a file whose index was built (a downgrade, then an upgrade again)
// have no entries; the next start sees it, lists them by the scan until
// the index holds them, and the build adds their entries alone, none
// twice.
func TestIndexRebuiltAfterAnOlderRelease(t *testing.T) {
	dir := t.TempDir()
	db, log := openLog(t, dir)
	const n, older = 150, 12
	for i := range n {
		if err := log.Append(context.Background(), indexClick(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, built, err := clicks.IndexState(db); err != nil || !built {
		t.Fatalf("a new file's index: built %v, %v", built, err)
	}
	db.Close()

	// The older release records clicks, one of them before the others in
	// time (its clock was behind).
	db, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cs []clicks.Click
	for i := n; i < n+older; i++ {
		cs = append(cs, indexClick(i))
	}
	cs[3].Time = indexT0.Add(time.Minute)
	if err := clicks.AppendUnindexed(db, cs); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, log = openLog(t, dir)
	defer db.Close()
	check := func(when string) {
		t.Helper()
		for _, q := range indexQueries() {
			got := listAll(t, log.List, q, 4)
			want := listAll(t, func(ctx context.Context, q clicks.Query) ([]clicks.Click, bool, error) {
				return clicks.ListScanning(ctx, log, q)
			}, q, 4)
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("%s: %+v: listed %q, the log holds %q", when, q, got, want)
			}
		}
	}
	check("at the start after the older release")
	if err := log.Append(context.Background(), indexClick(n+older)); err != nil {
		t.Fatal(err)
	}
	if err := log.BuildIndex(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range n + older + 1 {
		c := indexClick(i)
		want += 1 + min(len(c.Advertiser), 1)
	}
	if entries, built, err := clicks.IndexState(db); err != nil || !built || entries != want {
		t.Fatalf("after the build: %d entries, built %v, %v; want %d, built", entries, built, err, want)
	}
	check("after the build")
}

// TestIndexKeysIDsAsRecorded: a click whose api_key or advertiser is not
// valid UTF-8 is recorded with U+FFFD for each bad byte, as JSON writes
// it; its entries are of the ids as recorded, so the index lists it
// where the scan does, and retention takes them with it.
func TestIndexKeysIDsAsRecorded(t *testing.T) {
	db, log := openLog(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	c := clicks.Click{ID: "c1", Time: indexT0.Add(time.Hour), AdID: "ad", APIKey: "k\xff\xfe", Advertiser: "a\xc3.example", Billable: true}
	if err := log.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, q := range []clicks.Query{{APIKey: "k\ufffd\ufffd"}, {Advertiser: "a\ufffd.example"}} {
		q.From, q.To, q.Limit = indexT0, indexT0.AddDate(0, 0, 1), 10
		scan, _, err := clicks.ListScanning(ctx, log, q)
		if err != nil || len(scan) != 1 {
			t.Fatalf("%+v: the scan lists %d, %v; want the click", q, len(scan), err)
		}
		if got, _, err := log.List(ctx, q); err != nil || len(got) != 1 {
			t.Errorf("%+v: the index lists %d, %v; the scan lists the click", q, len(got), err)
		}
	}
	r, err := clicks.NewRetainer(db)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.DeleteDay(ctx, clicks.ClickLog, indexT0); err != nil || n != 1 {
		t.Fatalf("DeleteDay: %d, %v", n, err)
	}
	if entries, _, err := clicks.IndexState(db); err != nil || entries != 0 {
		t.Errorf("after the click's day went: %d entries in the index, %v; want none", entries, err)
	}
}

// TestIndexBuildWhileClicksArrive: clicks recorded while an older file's
// index is built, before and after the build's place in the log, are
// each indexed once, and the index then lists what the scan lists.
func TestIndexBuildWhileClicksArrive(t *testing.T) {
	dir := t.TempDir()
	db, log := openLog(t, dir)
	const n, during = 400, 200
	var cs []clicks.Click
	for i := range n {
		cs = append(cs, indexClick(i))
	}
	if err := clicks.AppendClicks(db, cs); err != nil {
		t.Fatal(err)
	}
	if err := clicks.DropIndex(db); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, log = openLog(t, dir)
	defer db.Close()
	done := make(chan error, 1)
	go func() {
		// Alternately among the clicks the build has passed and after them.
		for i := n; i < n+during; i++ {
			c := indexClick(i)
			if i%2 == 0 {
				c.Time = indexClick(i - n).Time
			}
			if err := log.Append(context.Background(), c); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	if err := clicks.BuildIndexPart(context.Background(), log, 3, -1); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range n + during {
		c := indexClick(i)
		want += 1 + min(len(c.Advertiser), 1)
	}
	if entries, built, err := clicks.IndexState(db); err != nil || !built || entries != want {
		t.Fatalf("after the build: %d entries, built %v, %v; want %d, built", entries, built, err, want)
	}
	for _, q := range indexQueries() {
		got := listAll(t, log.List, q, 7)
		scan := listAll(t, func(ctx context.Context, q clicks.Query) ([]clicks.Click, bool, error) {
			return clicks.ListScanning(ctx, log, q)
		}, q, 7)
		if len(scan) == 0 || !slices.Equal(got, scan) {
			t.Errorf("%+v: the index lists %d clicks, the scan %d", q, len(got), len(scan))
		}
	}
}
