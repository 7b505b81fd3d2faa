package match

import "unicode/utf8"

// Quote shows a client's value in a message, in double quotes and cut to a
// readable length. Quotes and backslashes are escaped with a backslash,
// \n \t \r by name, other control bytes and bytes that are not UTF-8 as
// \xNN; other characters stand as they are (by hand: strconv.Quote's
// tables of printable characters would grow the module). The message is
// JSON-escaped where it is written.
func Quote(s string) string {
	const most = 40
	more := ""
	if len(s) > most {
		cut := most
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, more = s[:cut], "..."
	}
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+2+len(more))
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
		i++
	}
	b = append(b, '"')
	return string(b) + more
}

// Itoa is strconv.Itoa, for messages: one copy of it in the module.
func Itoa(n int) string { return itoa(n) }

// JoinStrings is strings.Join, which the module cannot import.
func JoinStrings(list []string, sep string) string { return joinStrings(list, sep) }

// IsHex reports whether c is a hexadecimal digit.
func IsHex(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f'
}

// Unhex returns the value of the hexadecimal digit c (IsHex(c)).
func Unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}
