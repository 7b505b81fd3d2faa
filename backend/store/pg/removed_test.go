package pgstore

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/match"
)

// FuzzDecodeRemoved: whatever a removed_ads row holds, it reads without a
// panic, only into an ad of the row's id, and what removedRows writes of
// it reads back the same.
func FuzzDecodeRemoved(f *testing.F) {
	f.Add("SHOP.1.H7", []byte(`{"ID":"SHOP.1.H7","Kind":1,"Landing":"https://shop.example/p","Markets":[{"Country":"de","Lang":"de"}],"BidMicros":100000}`), int64(1795000000000000000))
	f.Add("SHOP.1.H7", []byte(`{"ID":"SHOP.1.H8"}`), int64(0))
	f.Add("", []byte(`{}`), int64(-1))
	f.Add("x", []byte(`null`), int64(1))
	f.Add("x", []byte(`{"ID":"x","Keywords":"lg"}`), int64(1))
	f.Add("x", []byte(`{"ID":"x","adlink_last_budget":{"daily_micros":500000,"currency":"EUR","pacing":"even"}}`), int64(1))
	f.Add("x", []byte(`{"ID":"x","adlink_last_budget":{"daily_micros":-1,"currency":""}}`), int64(1))
	f.Fuzz(func(t *testing.T, id string, doc []byte, until int64) {
		r, err := decodeRemoved(id, doc, until)
		if err != nil {
			if r.Ad.ID != "" || !r.Until.IsZero() {
				t.Errorf("an error (%v) and %+v", err, r)
			}
			return
		}
		if r.Ad.ID != id || r.Until.UnixNano() != until {
			t.Fatalf("row %q until %d read as %+v", id, until, r)
		}
		if id == "" {
			return // no row has one: removedRows refuses it
		}
		ids, docs, untils, err := removedRows([]catalog.RemovedAd{r})
		if err != nil || len(ids) != 1 {
			t.Fatalf("removedRows of %+v: %v", r, err)
		}
		again, err := decodeRemoved(ids[0], docs[0], untils[0])
		if err != nil || !sameAd(again.Ad, r.Ad) || !again.Until.Equal(r.Until) || again.Budget != r.Budget {
			t.Fatalf("%+v written and read again: %+v, %v", r, again, err)
		}
	})
}

// sameAd compares two ads by their JSON, as the row keeps them.
func sameAd(a, b match.Ad) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// TestRemovedRowsAreOneAnID: of ads given twice, the later Until's is
// written, and an ad without an id is refused.
func TestRemovedRowsAreOneAnID(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ads := []catalog.RemovedAd{
		{Ad: match.Ad{ID: "b", Landing: "https://b.example/early"}, Until: now},
		{Ad: match.Ad{ID: "a", Landing: "https://a.example/"}, Until: now},
		{Ad: match.Ad{ID: "b", Landing: "https://b.example/late"}, Until: now.Add(time.Hour)},
	}
	ids, docs, untils, err := removedRows(ads)
	if err != nil || len(ids) != 2 || ids[0] != "a" || ids[1] != "b" || untils[1] != now.Add(time.Hour).UnixNano() {
		t.Fatalf("removedRows = %v %v, %v", ids, untils, err)
	}
	if r, err := decodeRemoved("b", docs[1], untils[1]); err != nil || r.Ad.Landing != "https://b.example/late" {
		t.Errorf("b's row reads %+v, %v; want the later landing", r, err)
	}
	if _, _, _, err := removedRows([]catalog.RemovedAd{{Until: now}}); err == nil {
		t.Error("removedRows of an ad without an id: no error")
	}
}

// Migration 00016 numbers the rows there before it, and the rows that a
// replica of the version before writes after it, inserted or updated:
// a Removals reads them all once, and each again once it changed. It goes
// back cleanly.
func TestRemovedAdsSeqMigration(t *testing.T) {
	db, p := migrated(t)
	ctx := t.Context()
	if _, err := p.DownTo(ctx, 15); err != nil {
		t.Fatalf("down to 00015: %v", err)
	}
	now := time.Now().UTC()
	until := now.Add(time.Hour).UnixNano()
	// What the version before writes: shareSQL, which names no seq.
	write := func(id, landing string, until int64) {
		t.Helper()
		doc := fmt.Sprintf(`{"ID":%q,"Landing":%q}`, id, landing)
		if _, err := db.pool.Exec(ctx, shareSQL, []string{id}, [][]byte{[]byte(doc)}, []int64{until}); err != nil {
			t.Fatal(err)
		}
	}
	write("before", "https://shop.example/before", until)
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	r := db.Removals(nil)
	read := func() []string {
		t.Helper()
		got, err := r.Share(ctx, nil, now)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range got {
			out = append(out, a.Ad.ID+" "+a.Ad.Landing)
		}
		slices.Sort(out)
		return out
	}
	if got := read(); !slices.Equal(got, []string{"before https://shop.example/before"}) {
		t.Errorf("the first read = %v, want the row written before the migration", got)
	}
	write("after", "https://shop.example/after", until)
	write("before", "https://shop.example/before-later", until+1)
	if got := read(); !slices.Equal(got, []string{"after https://shop.example/after", "before https://shop.example/before-later"}) {
		t.Errorf("after an older replica's writes = %v, want its insert and its update", got)
	}
	if got := read(); len(got) != 0 {
		t.Errorf("read again = %v, want nothing", got)
	}
	if _, err := p.DownTo(ctx, 15); err != nil {
		t.Fatalf("down to 00015 again: %v", err)
	}
	write("down", "https://shop.example/down", until)
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
}

// A Removals reads every row again once the rows' numbering started over
// (the sequence of migration 00016 restarted, or made again by a
// migration down and up): the numbers drawn after are below the highest
// it read, and reading above that alone would miss every removal shared
// since, whose click links would get 404 on this replica.
func TestRemovedAdsReadAfterTheNumberingRestarts(t *testing.T) {
	db, p := migrated(t)
	ctx := t.Context()
	now := time.Now().UTC()
	ad := func(id string) catalog.RemovedAd {
		return catalog.RemovedAd{Ad: match.Ad{ID: id, Landing: "https://shop.example/" + id}, Until: now.Add(time.Hour)}
	}
	reader, writer := db.Removals(nil), db.Removals(nil)
	ids := func(got []catalog.RemovedAd) []string {
		var out []string
		for _, a := range got {
			out = append(out, a.Ad.ID)
		}
		slices.Sort(out)
		return out
	}
	share := func(r catalog.Removals, ads ...catalog.RemovedAd) []string {
		t.Helper()
		got, err := r.Share(ctx, ads, now)
		if err != nil {
			t.Fatal(err)
		}
		return ids(got)
	}
	for i := range 8 {
		share(writer, ad(fmt.Sprintf("SHOP.1.%d", i)))
	}
	if got := share(reader); len(got) != 8 {
		t.Fatalf("the reader's first share read %v, want the 8 ads", got)
	}
	for _, step := range []struct {
		name, sql string
	}{
		{"the table emptied, its numbering restarted", `TRUNCATE removed_ads RESTART IDENTITY`},
		{"the numbering restarted", `ALTER SEQUENCE removed_ads_seqs RESTART`},
		{"migrated down and up", ""},
	} {
		if step.sql != "" {
			if _, err := db.pool.Exec(ctx, step.sql); err != nil {
				t.Fatal(err)
			}
		} else {
			if _, err := p.DownTo(ctx, 15); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Up(ctx); err != nil {
				t.Fatal(err)
			}
		}
		id := "SHOP.2." + strings.ReplaceAll(step.name, " ", "-")
		share(writer, ad(id))
		if got := share(reader); !slices.Contains(got, id) {
			t.Errorf("%s, then %s shared: the reader read %v", step.name, id, got)
		}
	}
}
