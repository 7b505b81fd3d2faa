//go:build wasip1

package match

// eachOf calls f(0) to f(n-1); the module has one thread.
func eachOf(n int, f func(k int)) {
	for k := range n {
		f(k)
	}
}
