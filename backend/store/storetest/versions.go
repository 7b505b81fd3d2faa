package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/catalog"
)

// Versions runs the contract of catalog.Versions. fresh returns a function
// that opens another handle on one new, empty backing each time it is
// called (as each replica opens its own); two calls of fresh on one test
// give two backings on the same server (two deployments sharing it). The
// backing outlives the handles; fresh's test closes them.
func Versions(t *testing.T, fresh func(t *testing.T) func() catalog.Versions) {
	t.Helper()
	a1 := catalog.Announcement{Version: "00000000000000a1", From: "replica-a"}
	a2 := catalog.Announcement{Version: "00000000000000a2", From: "replica-b"}
	a3 := catalog.Announcement{Version: "00000000000000a3", From: "replica-a"}

	t.Run("RecordsTheLast", func(t *testing.T) {
		open := fresh(t)
		v := open()
		ctx := within(t, 30*time.Second)
		if got, err := v.Recorded(ctx); err != nil || !got.IsZero() {
			t.Fatalf("Recorded on nothing announced = %+v, %v; want zero", got, err)
		}
		for _, a := range []catalog.Announcement{a1, a2} {
			if err := v.Announce(ctx, a); err != nil {
				t.Fatal(err)
			}
			if got, err := v.Recorded(ctx); err != nil || got != a {
				t.Fatalf("Recorded = %+v, %v; want %+v", got, err, a)
			}
		}
		// Another replica's handle reads the same record; another
		// deployment's, none.
		if got, err := open().Recorded(ctx); err != nil || got != a2 {
			t.Errorf("another handle's record = %+v, %v; want %+v", got, err, a2)
		}
		if got, err := fresh(t)().Recorded(ctx); err != nil || !got.IsZero() {
			t.Errorf("a new backing's record = %+v, %v; want zero", got, err)
		}
	})

	t.Run("RefusesBadAnnouncements", func(t *testing.T) {
		v := fresh(t)()
		ctx := within(t, 30*time.Second)
		if err := v.Announce(ctx, a1); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []catalog.Announcement{{}, {Version: "x", From: "r"}, {Version: a2.Version, From: "a b"}} {
			if err := v.Announce(ctx, bad); err == nil {
				t.Errorf("Announce(%+v) accepted", bad)
			}
		}
		if got, err := v.Recorded(ctx); err != nil || got != a1 {
			t.Errorf("after refused announcements Recorded = %+v, %v; want %+v", got, err, a1)
		}
	})

	t.Run("AnnouncesOverTheRecordItKnows", func(t *testing.T) {
		open := fresh(t)
		v, other := open(), open()
		ctx := within(t, 30*time.Second)
		heard, stop := listen(t, other)
		if got := next(t, heard); !got.IsZero() {
			t.Fatalf("first heard %+v, want zero", got)
		}
		for _, c := range []struct {
			a, prev catalog.Announcement
			done    bool
			record  catalog.Announcement
		}{
			{a1, a2, false, catalog.Announcement{}}, // nothing recorded, not a2
			{a1, catalog.Announcement{}, true, a1},
			{a2, catalog.Announcement{}, false, a1}, // a1 was announced meanwhile
			{a2, a3, false, a1},
			{a2, a1, true, a2},
		} {
			done, err := v.AnnounceOver(ctx, c.a, c.prev)
			if err != nil || done != c.done {
				t.Fatalf("AnnounceOver(%+v, over %+v) = %v, %v; want %v", c.a, c.prev, done, err, c.done)
			}
			if got, err := other.Recorded(ctx); err != nil || got != c.record {
				t.Fatalf("after AnnounceOver(%+v, over %+v) the record is %+v, %v; want %+v", c.a, c.prev, got, err, c.record)
			}
		}
		if _, err := v.AnnounceOver(ctx, catalog.Announcement{Version: "x", From: "r"}, a2); err == nil {
			t.Error("AnnounceOver of a bad announcement accepted")
		}
		// Only what was recorded was told.
		for _, want := range []catalog.Announcement{a1, a2} {
			if got := next(t, heard); got != want {
				t.Errorf("heard %+v, want %+v", got, want)
			}
		}
		if err := v.Announce(ctx, a3); err != nil {
			t.Fatal(err)
		}
		if got := next(t, heard); got != a3 {
			t.Errorf("heard %+v, want %+v: a refused announcement was told", got, a3)
		}
		stop()
	})

	t.Run("ListenersHearTheRecordThenEachInOrder", func(t *testing.T) {
		open := fresh(t)
		announcer, listener := open(), open()
		ctx := within(t, 60*time.Second)
		if err := announcer.Announce(ctx, a1); err != nil {
			t.Fatal(err)
		}
		heardA, stopA := listen(t, announcer)
		heardB, stopB := listen(t, listener)
		for name, heard := range map[string]<-chan catalog.Announcement{"the announcer": heardA, "another": heardB} {
			if got := next(t, heard); got != a1 {
				t.Fatalf("%s heard %+v first, want the record %+v", name, got, a1)
			}
		}
		for _, a := range []catalog.Announcement{a2, a3} {
			if err := announcer.Announce(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		for name, heard := range map[string]<-chan catalog.Announcement{"the announcer": heardA, "another": heardB} {
			for _, want := range []catalog.Announcement{a2, a3} {
				if got := next(t, heard); got != want {
					t.Errorf("%s heard %+v, want %+v", name, got, want)
				}
			}
		}
		stopA()
		stopB()
	})

	t.Run("NothingRecordedIsHeardAsZero", func(t *testing.T) {
		heard, stop := listen(t, fresh(t)())
		if got := next(t, heard); !got.IsZero() {
			t.Errorf("first heard %+v on an empty backing, want zero", got)
		}
		stop()
	})

	t.Run("DeploymentsDoNotHearEachOther", func(t *testing.T) {
		ours, theirs := fresh(t)(), fresh(t)()
		ctx := within(t, 60*time.Second)
		heard, stop := listen(t, ours)
		if got := next(t, heard); !got.IsZero() {
			t.Fatalf("first heard %+v, want zero", got)
		}
		if err := theirs.Announce(ctx, a1); err != nil {
			t.Fatal(err)
		}
		// Ours after theirs: what ours hears next is its own.
		if err := ours.Announce(ctx, a2); err != nil {
			t.Fatal(err)
		}
		if got := next(t, heard); got != a2 {
			t.Errorf("heard %+v, want %+v: another deployment's announcement reached this one", got, a2)
		}
		if got, err := ours.Recorded(ctx); err != nil || got != a2 {
			t.Errorf("Recorded = %+v, %v; want %+v", got, err, a2)
		}
		stop()
	})
}

// listen runs v.Listen until the returned stop, which waits for it to
// return, or the end of t.
func listen(t *testing.T, v catalog.Versions) (<-chan catalog.Announcement, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	heard := make(chan catalog.Announcement, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		first := true
		v.Listen(ctx, func(a catalog.Announcement, recorded bool) {
			if recorded != first {
				t.Errorf("heard %+v with recorded %v; want true for the first, false after", a, recorded)
			}
			first = false
			select {
			case heard <- a:
			case <-ctx.Done():
			}
		})
	}()
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Listen did not return once its context ended")
		}
	}
	t.Cleanup(func() { cancel(); <-done })
	return heard, stop
}

// next is the next announcement heard; the test fails when none comes.
func next(t *testing.T, heard <-chan catalog.Announcement) catalog.Announcement {
	t.Helper()
	select {
	case a := <-heard:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("no announcement heard")
		return catalog.Announcement{}
	}
}
