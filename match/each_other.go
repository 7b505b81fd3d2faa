//go:build !wasip1

package match

import "github.com/adlink/adlink/internal/cores"

// eachOf calls f(0) to f(n-1) on every core, and returns when all have.
func eachOf(n int, f func(k int)) { cores.Each(n, f) }
