package match

// The few string functions match/ needs, by hand: importing package
// strings brings package unicode's tables and initialisation into the
// page's module, for functions this small.

// joinStrings is strings.Join. It runs once a request; noinline: module
// size, see docs/PERFORMANCE.md.
//
//go:noinline
func joinStrings(list []string, sep string) string {
	switch len(list) {
	case 0:
		return ""
	case 1:
		return list[0]
	}
	n := len(sep) * (len(list) - 1)
	for _, s := range list {
		n += len(s)
	}
	b := make([]byte, 0, n)
	for i, s := range list {
		if i > 0 {
			b = append(b, sep...)
		}
		b = append(b, s...)
	}
	return string(b)
}

// splitString is strings.Split for a non-empty separator.
func splitString(s, sep string) []string {
	var out []string
	for {
		i := indexString(s, sep)
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+len(sep):]
	}
}

// indexString is strings.Index for a non-empty separator.
func indexString(s, sep string) int {
	for i := 0; i+len(sep) <= len(s); i++ {
		if s[i] == sep[0] && s[i:i+len(sep)] == sep {
			return i
		}
	}
	return -1
}

// CutByte is strings.Cut around one byte.
func CutByte(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// TrimSpace is strings.TrimSpace: it removes the leading and trailing
// characters that Unicode calls white space.
func TrimSpace(s string) string {
	for s != "" {
		r, n := firstRune(s)
		if !isSpace(r) {
			break
		}
		s = s[n:]
	}
	for s != "" {
		r, n := lastRune(s)
		if !isSpace(r) {
			break
		}
		s = s[:len(s)-n]
	}
	return s
}

// isSpace is unicode.IsSpace, the White_Space property, written out.
func isSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}
