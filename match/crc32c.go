package match

// crc32cSlicing is CRC-32C (Castagnoli), the shard's checksum, eight
// bytes at a time: the module's, where hash/crc32 would add more code
// than this (the server's uses the CPU's instruction).
//
// crcTables must be filled (fillCRCTables) before.
func crc32cSlicing(b []byte) uint32 {
	crc := ^uint32(0)
	for len(b) >= 8 {
		crc ^= uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		crc = crcTables[7][crc&0xff] ^ crcTables[6][crc>>8&0xff] ^ crcTables[5][crc>>16&0xff] ^ crcTables[4][crc>>24] ^
			crcTables[3][b[4]] ^ crcTables[2][b[5]] ^ crcTables[1][b[6]] ^ crcTables[0][b[7]]
		b = b[8:]
	}
	for _, c := range b {
		crc = crcTables[0][byte(crc)^c] ^ crc>>8
	}
	return ^crc
}

// crcTables[k][v] is the CRC of byte v followed by k zero bytes.
var crcTables [8][256]uint32

// fillCRCTables computes crcTables in a function of its own rather than
// in its caller: V8 counts each turn of a loop in the module by the size
// of the whole function it stands in (see offsets), and the thousands of
// turns here had it optimise a large function that runs once, while a
// page waited for its first ads.
//
//go:noinline
func fillCRCTables(t *[8][256]uint32) {
	const poly = 0x82F63B78 // Castagnoli, reversed
	for i := range 256 {
		c := uint32(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ poly
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	for i := range 256 {
		for k := 1; k < 8; k++ {
			t[k][i] = t[0][t[k-1][i]&0xff] ^ t[k-1][i]>>8
		}
	}
}
