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
// (Network): one billable click per network per ad per AdWindow, at most a
// cap of billable clicks per network per UTC day, and at most a cap per
// IPv6 /48 or IPv4 /24 (Prefix) on each ad and one on all ads per UTC
// day, whichever of its networks they come from.
// BoltWindows keeps them in the server's bbolt file; every implementation
// passes storetest.Windows and is safe for concurrent use.
type Windows interface {
	// Claim asks whether click c may bill, and records it when it may. It
	// returns "" and records the click when c.Network has no billable click
	// on c.AdID less than AdWindow before or after c.At, fewer than c.Limit
	// billable clicks on c.At's UTC day, c.Prefix fewer than
	// c.PrefixAdLimit on c.AdID and fewer than c.PrefixLimit on all ads.
	// Otherwise it returns ReasonRepeat (the ad's window comes first),
	// ReasonNetworkCap, ReasonPrefixAdCap or ReasonPrefixCap, in that
	// order (each network's, then each prefix's, narrowest first), and
	// records nothing, so clicks that do not bill never extend a window nor
	// spend a cap.
	//
	// A claim that returned "" is durable: a crash after Claim returns
	// keeps it, and a restart judges later clicks by it. Concurrent claims
	// are judged one after another: of many claims of one network and ad,
	// exactly one returns "". A ctx already done refuses the claim with
	// its error; after any error nothing is recorded. Windows may forget
	// what no later claim can be judged by (clicks more than AdWindow and
	// a day old).
	Claim(ctx context.Context, c Claim) (reason string, err error)
}

// Claim is what Windows judge of one click.
type Claim struct {
	// Network is the click's client network (Network), AdID its ad, At
	// its time.
	Network, AdID string
	At            time.Time
	// Limit caps the network's billable clicks per UTC day; <= 0 is none.
	Limit int
	// Prefix is the network's IPv6 /48 or IPv4 /24 (Prefix), "" for none;
	// PrefixLimit caps its billable clicks per UTC day. With PrefixLimit
	// <= 0 the prefix is neither checked nor counted.
	Prefix      string
	PrefixLimit int
	// PrefixAdLimit caps the billable clicks of Prefix on AdID per UTC
	// day. With PrefixAdLimit <= 0 (or no Prefix) the prefix's clicks on
	// the ad are neither checked nor counted.
	PrefixAdLimit int
}

// claimOf is the Claim of click c under u's caps.
func claimOf(c *Click, u Use) Claim {
	prefix, limit := u.PrefixOf(c)
	return Claim{Network: Network(c.IP), AdID: c.AdID, At: c.Time, Limit: u.Limit,
		Prefix: prefix, PrefixLimit: limit, PrefixAdLimit: u.PrefixAdLimit}
}

// counted reports whether c's prefix is checked and counted.
func (c Claim) counted() bool { return c.Prefix != "" && c.PrefixLimit > 0 }

// adCounted reports whether c's prefix's clicks on c.AdID are checked and
// counted.
func (c Claim) adCounted() bool { return c.Prefix != "" && c.PrefixAdLimit > 0 }

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
func (w *BoltWindows) Claim(ctx context.Context, c Claim) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var reason string
	err := w.gc.commit(w.db, func(tx *bolt.Tx) error {
		var err error
		reason, err = claim(&w.gc.hot, tx, c)
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
