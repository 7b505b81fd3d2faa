//go:build !wasip1

package match

import "sync"

// mutex guards an index's scratch memory on the server, where queries run
// at once.
type mutex = sync.Mutex
