//go:build wasip1

package match

// crcFilled says crcTables is filled.
var crcFilled bool

// crc32c checksums a shard in the module by table, not with hash/crc32.
// It fills the tables on its first call, not in the package's init: the
// module is initialized when it is built (wasm/module.Preinit) and ships
// its memory as it stands after, where 8 KB of tables would cost as many
// bytes of every first view, for they hardly compress. The module runs
// on one thread, so a flag does what sync.Once would, without its code.
func crc32c(b []byte) uint32 {
	if !crcFilled {
		fillCRCTables(&crcTables)
		crcFilled = true
	}
	return crc32cSlicing(b)
}
