package shards

import (
	"crypto/sha256"
	"sync"
)

// modules keeps the last matcher.wasm blob Build compressed, with what it
// made of the zstd encoding given with it. A process serves one module,
// and each server it builds compressed the module's megabytes at the best
// levels again: the most of a cold start's time when the catalog is
// small, and a process that starts several (a deployment's replicas in
// one test) paid it for each. A blob is immutable once built, so the
// servers share it as a refresh shares its previous catalog's.
var modules struct {
	sync.Mutex
	sum    [sha256.Size]byte // of the module
	given  [sha256.Size]byte // of its zstd given with it
	blob   *Blob
	choice ZstdChoice
}

// keptModule is the module blob built before for the module whose SHA-256
// is sum, given the zstd encoding z, and what was made of z.
func keptModule(sum [sha256.Size]byte, z []byte) (*Blob, ZstdChoice, bool) {
	given := sha256.Sum256(z)
	modules.Lock()
	defer modules.Unlock()
	if modules.blob == nil || modules.sum != sum || modules.given != given {
		return nil, ZstdChoice{}, false
	}
	return modules.blob, modules.choice, true
}

// keepModule keeps b, the blob of the module whose SHA-256 is sum, built
// given the zstd encoding z, of which choice was made.
func keepModule(sum [sha256.Size]byte, z []byte, b *Blob, choice ZstdChoice) {
	given := sha256.Sum256(z)
	modules.Lock()
	defer modules.Unlock()
	modules.sum, modules.given, modules.blob, modules.choice = sum, given, b, choice
}

// ForgetModule drops the module blob kept from the last Build, so that the
// next one compresses the module as a process's first Build does: for a
// benchmark that times a cold start.
func ForgetModule() {
	modules.Lock()
	defer modules.Unlock()
	modules.blob = nil
}
