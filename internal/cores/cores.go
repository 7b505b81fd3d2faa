// Package cores runs independent pieces of work on every core.
package cores

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls f(0) to f(n-1) on every core (GOMAXPROCS goroutines, each
// taking the next index as it finishes one), and returns when all have.
func Each(n int, f func(i int)) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}
