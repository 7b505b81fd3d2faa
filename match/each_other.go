//go:build !wasip1

package match

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// eachOf calls f(0) to f(n-1) on every core, and returns when all have.
func eachOf(n int, f func(k int)) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for k := int(next.Add(1)) - 1; k < n; k = int(next.Add(1)) - 1 {
				f(k)
			}
		})
	}
	wg.Wait()
}
