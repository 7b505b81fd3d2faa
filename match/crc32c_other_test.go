//go:build !wasip1

package match

import (
	"hash/crc32"
	"testing"
)

func TestCRC32CSlicingAgreesWithHashCRC32(t *testing.T) {
	fillCRCTables(&crcTables)
	b := make([]byte, 1000)
	for i := range b {
		b[i] = byte(i*7 + i>>3)
	}
	for n := range len(b) + 1 {
		if got, want := crc32cSlicing(b[:n]), crc32.Checksum(b[:n], castagnoli); got != want {
			t.Fatalf("%d bytes: %08x, hash/crc32 %08x", n, got, want)
		}
	}
}
