package clicks

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// AdWindow is how long a client network's billable click on an ad makes
// its later clicks on that ad repeats.
const AdWindow = 24 * time.Hour

// Windows keeps the fraud windows of billable clicks, by client network
// (Network): one billable click per network per ad per AdWindow, and at
// most a cap of billable clicks per network per UTC day. BoltWindows keeps
// them in the server's bbolt file; every implementation passes
// storetest.Windows and is safe for concurrent use.
type Windows interface {
	// Claim asks whether a click of network on adID at time at may bill,
	// and records it when it may. It returns "" and records the click when
	// network has no billable click on adID less than AdWindow before or
	// after at, and fewer than limit billable clicks on at's UTC day
	// (limit <= 0: no cap). Otherwise it returns ReasonRepeat (the ad's
	// window comes first) or ReasonNetworkCap and records nothing, so
	// clicks that do not bill never extend a window nor spend the cap.
	//
	// A claim that returned "" is durable: a crash after Claim returns
	// keeps it, and a restart judges later clicks by it. Concurrent claims
	// are judged one after another: of many claims of one network and ad,
	// exactly one returns "". A ctx already done refuses the claim with
	// its error; after any error nothing is recorded. Windows may forget
	// what no later claim can be judged by (clicks more than AdWindow and
	// a day old).
	Claim(ctx context.Context, network, adID string, at time.Time, limit int) (reason string, err error)
}

// BoltWindows are Windows in a bbolt file: one bucket per UTC day, holding
// each network and ad's billable click time and each network's count, so
// that forgetting old days is dropping their buckets. Claims share the
// commits of the file's other stores, the click log's appends among them.
type BoltWindows struct {
	db *bolt.DB
	gc *groupCommit
}

var _ Windows = (*BoltWindows)(nil)

var windowsBucket = []byte("click-windows")

// NewWindows returns the Windows kept in db, creating their bucket.
func NewWindows(db *bolt.DB) (*BoltWindows, error) {
	if err := createBucket(db, windowsBucket); err != nil {
		return nil, fmt.Errorf("clicks: windows: %w", err)
	}
	return &BoltWindows{db: db, gc: commitsOf(db)}, nil
}

// Claim implements Windows.
func (w *BoltWindows) Claim(ctx context.Context, network, adID string, at time.Time, limit int) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var reason string
	err := w.gc.commit(w.db, func(tx *bolt.Tx) error {
		var err error
		reason, err = claim(&w.gc.hot, tx, network, adID, at, limit)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("clicks: windows: %w", err)
	}
	return reason, nil
}

// dayOf is the UTC day of t, counted from the epoch.
func dayOf(t time.Time) int64 {
	return t.Unix() / 86400
}

// dayKey orders days by number: big-endian, offset so that days before
// the epoch sort first too.
func dayKey(day int64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(day)^(1<<63))
	return k[:]
}
