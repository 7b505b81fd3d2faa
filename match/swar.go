package match

import "unsafe"

// Scanning eight bytes at a time. A byte loop costs the WebAssembly module
// several times what it costs native code (each byte a load, a bounds check
// and a branch), and a response is mostly runs of bytes that stand for
// themselves, so the JSON writer skips such runs a word at a time.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// load8 reads s[i:i+8] as one word, unaligned; i+8 <= len(s). The tests
// below ask whether any byte is such, so the byte order does not matter.
func load8(s string, i int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i))
}

// hasZero reports whether a byte of x is zero.
func hasZero(x uint64) bool { return (x-ones)&^x&highs != 0 }

// hasByte reports whether a byte of x is c.
func hasByte(x uint64, c byte) bool { return hasZero(x ^ (ones * uint64(c))) }

// jsonPlain8 reports whether the eight bytes of x all stand for themselves
// in a JSON string as appendJSONChars writes it: ASCII from 0x20, none of
// '"', '\\', '<', '>' and '&'. A false answer only sends the bytes to the
// byte loop.
func jsonPlain8(x uint64) bool {
	if x&highs != 0 || (x-ones*0x20)&^x&highs != 0 {
		return false // non-ASCII, or a control byte
	}
	return !hasByte(x, '"') && !hasByte(x, '\\') && !hasByte(x, '<') && !hasByte(x, '>') && !hasByte(x, '&')
}

// indexAmp is the index of the first '&' in b, or -1.
func indexAmp(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if hasByte(load8(unsafe.String(unsafe.SliceData(b), len(b)), i), '&') {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] == '&' {
			return i
		}
	}
	return -1
}
