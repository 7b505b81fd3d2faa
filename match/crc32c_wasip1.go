//go:build wasip1

package match

// crc32c checksums a shard in the module by table, not with hash/crc32.
func crc32c(b []byte) uint32 { return crc32cSlicing(b) }
