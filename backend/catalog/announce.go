package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Announcement is word that a replica swapped in a catalog by a refresh of
// its own: the catalog's Version (its content hash) and the replica it came
// From. The other replicas read their own feeds again on it, and serve
// that version even when their own checks would refuse it (the operator
// forced it on the first, or it lost more ads than their older catalog
// allows).
type Announcement struct {
	Version string
	From    string
}

// IsZero reports whether a is no announcement: none was recorded yet.
func (a Announcement) IsZero() bool { return a == Announcement{} }

// maxReplicaID bounds an announcing replica's name.
const maxReplicaID = 64

// String is the announcement as it travels between replicas:
// "v1 <version> <from>".
func (a Announcement) String() string { return "v1 " + a.Version + " " + a.From }

// ParseAnnouncement reads what String wrote. What another process wrote
// to a shared channel is not trusted: a version is 16 lowercase hex
// digits, a replica's name up to 64 letters, digits, '-' and '_'.
func ParseAnnouncement(s string) (Announcement, error) {
	f := strings.Split(s, " ")
	if len(f) != 3 || f[0] != "v1" {
		return Announcement{}, fmt.Errorf("catalog announcement %.80q: want \"v1 <version> <replica>\"", s)
	}
	a := Announcement{Version: f[1], From: f[2]}
	if err := a.Check(); err != nil {
		return Announcement{}, err
	}
	return a, nil
}

// Check reports what is wrong with a, if anything.
func (a Announcement) Check() error {
	if len(a.Version) != 16 || strings.Trim(a.Version, "0123456789abcdef") != "" {
		return fmt.Errorf("catalog announcement: version %.80q: want 16 lowercase hex digits", a.Version)
	}
	if a.From == "" || len(a.From) > maxReplicaID || strings.Trim(a.From,
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return fmt.Errorf("catalog announcement: replica %.80q: want 1 to %d letters, digits, '-' or '_'", a.From, maxReplicaID)
	}
	return nil
}

// Versions is how the replicas of one deployment agree on the catalog
// they serve: each one that swaps in a catalog by a refresh of its own
// announces it, and every one listens. Redis (pub/sub and a key) and
// Postgres (LISTEN/NOTIFY and a row) implement it; storetest.Versions is
// its contract.
type Versions interface {
	// Announce records a as the catalog the replicas serve, in place of
	// the one recorded, and tells every replica listening, the announcing
	// one included. It returns once both are done; an error leaves the
	// record as it was or as a, and maybe no replica told.
	Announce(ctx context.Context, a Announcement) error
	// AnnounceOver announces a as Announce does, only if the record is
	// still prev (zero: none), in one step, and reports whether it did. A
	// replica that finds the record older than its catalog announces so,
	// and not over an announcement made meanwhile.
	AnnounceOver(ctx context.Context, a, prev Announcement) (bool, error)
	// Recorded is the last announcement recorded, zero when there is none.
	Recorded(ctx context.Context) (Announcement, error)
	// Listen calls heard with each announcement in the order they were
	// made, one call at a time, until ctx ends; then it returns. Each time
	// it connects, and again after every lost connection, it first calls
	// heard with the recorded announcement (zero when there is none) and
	// recorded true, so that a listener that was away misses no catalog,
	// only the versions in between. It tries again while the store does
	// not answer, and a message that does not parse is dropped.
	Listen(ctx context.Context, heard func(a Announcement, recorded bool))
}

// ListenAgain is the loop of a Versions' Listen: it runs listen (one
// connection: the recorded announcement, then each message, until the
// connection fails or ctx ends) again and again, waiting retry between
// tries, until ctx ends. log hears of a lost connection once an outage,
// not once a try, and of the first recorded announcement after it.
func ListenAgain(ctx context.Context, log *slog.Logger, retry time.Duration,
	listen func(context.Context, func(Announcement, bool)) error, heard func(Announcement, bool)) {
	var down bool
	for {
		err := listen(ctx, func(a Announcement, recorded bool) {
			if recorded && down {
				down = false
				log.Info("catalog announcements: listening again")
			}
			heard(a, recorded)
		})
		if ctx.Err() != nil {
			return
		}
		level := slog.LevelWarn
		if down {
			level = slog.LevelDebug
		}
		down = true
		log.Log(ctx, level, "catalog announcements: not listening; trying again", "err", err, "retry_after", retry)
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
