//go:build wasip1

package match

// mutex does nothing in the module: it runs no goroutines, one call at a
// time, and sync.Mutex would cost it code for nothing.
type mutex struct{}

func (mutex) Lock()   {}
func (mutex) Unlock() {}
