package match

// A model number names a product only beside its brand ("OnePlus 12"), and
// a phrase that ends or starts with a number is no mention of a product
// inside a longer number, a date, a time, a price or a version: "12" in
// "£12.6m", "2017-12-26", "12:46", "UTC+12" or "5.3".

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// bareNumber reports whether a term is digits alone.
func bareNumber(term string) bool {
	for i := 0; i < len(term); i++ {
		if !isDigit(term[i]) {
			return false
		}
	}
	return term != ""
}

// inNumber reports whether the tokens [from, to) of the input stand inside
// a longer number: a digit at the phrase's start with a digit, a sign or a
// currency just before it, or a digit at its end with a separator and a
// digit or a percent sign just after it.
func (in *input) inNumber(from, to int) bool {
	s := in.src[0]
	if from >= in.nTitle {
		s = in.src[1]
	}
	start, end := int(in.toks[from].start), int(in.toks[to-1].end)
	if isDigit(s[start]) && start > 0 {
		switch before := s[:start]; s[start-1] {
		case '+', '$', '#':
			return true
		case '.', ',', ':', '/', '-':
			if start > 1 && isDigit(s[start-2]) {
				return true
			}
		case 0xA3, 0xA5, 0xAC:
			// The last byte of "£" and "¥" (after 0xC2), of "€", "₣" and
			// "₥" (after 0x82); byte checks cost the page's module less
			// than string ones.
			return len(before) > 1 && (before[len(before)-2] == 0xC2 || before[len(before)-2] == 0x82)
		}
	}
	if isDigit(s[end-1]) && end < len(s) {
		switch s[end] {
		case '%':
			return true
		case '.', ',', ':', '/', '-':
			return end+1 < len(s) && isDigit(s[end+1])
		}
	}
	return false
}
