package clicks

import (
	"errors"
	"runtime"
	"sync"
	"weak"

	bolt "go.etcd.io/bbolt"
)

// groupCommit runs the writes of concurrent callers in shared bbolt
// transactions: writes that arrive while a commit is running wait and go
// into the next one together, so a busy store costs one fsync per batch,
// not per write. The stores of one file share one (commitsOf).
type groupCommit struct {
	mu    sync.Mutex
	busy  bool // a commit is running or its successor is being woken
	queue []*pending
	// hot is the file's decisions and windows in memory, read and changed
	// only by the puts of a commit.
	hot hotIndex
}

// pending is one write waiting for its commit.
type pending struct {
	put  func(*bolt.Tx) error
	done chan error // its commit's result, or errLead
}

// fileCommits holds the groupCommit of each open bbolt file, so that the
// stores of one file (the click log, Windows, Decisions) share commits: a
// click's decision, window and log entry, and the concurrent clicks', cost
// one fsync per batch for the file rather than one per store. The keys are
// weak, and an entry goes with its file.
var fileCommits sync.Map // weak.Pointer[bolt.DB] -> *groupCommit

// commitsOf returns the groupCommit of db's stores.
func commitsOf(db *bolt.DB) *groupCommit {
	k := weak.Make(db)
	if g, ok := fileCommits.Load(k); ok {
		return g.(*groupCommit)
	}
	g, loaded := fileCommits.LoadOrStore(k, new(groupCommit))
	if !loaded {
		runtime.AddCleanup(db, func(k weak.Pointer[bolt.DB]) { fileCommits.Delete(k) }, k)
	}
	return g.(*groupCommit)
}

// errLead tells a waiting write that it is to run the next commit.
var errLead = errors.New("clicks: lead the next commit")

// errCommitAborted is the answer to the writes of a commit that panicked.
var errCommitAborted = errors.New("clicks: the commit was aborted")

// commit runs put in a transaction of db, the file g commits for, and returns once that is durable. The
// caller that finds no commit running runs one for everything queued, then
// wakes the first caller queued meanwhile to run the next: no goroutine of
// its own, and no write waits longer than the commit before its own. The
// puts of one batch run in order, each seeing the ones before; an error
// of one fails the whole batch, whichever of the file's stores it is
// from.
func (g *groupCommit) commit(db *bolt.DB, put func(*bolt.Tx) error) error {
	p := &pending{put: put, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, p)
	if g.busy {
		g.mu.Unlock()
		if err := <-p.done; err != errLead {
			return err
		}
		g.mu.Lock()
	}
	g.busy = true
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()

	// Deferred, so that even a panic inside the commit hands the store on
	// and answers every write of the batch instead of leaving them waiting.
	err := errCommitAborted
	defer func() {
		if err != nil {
			g.hot.reset() // the puts changed memory the file did not keep
		}
		g.mu.Lock()
		if len(g.queue) > 0 {
			g.queue[0].done <- errLead
		} else {
			g.busy = false
		}
		g.mu.Unlock()
		for _, b := range batch {
			if b != p {
				b.done <- err
			}
		}
	}()
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range batch {
			if err := b.put(tx); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}
