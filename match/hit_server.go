//go:build !wasip1

package match

// criterion is a hit's criterion, its keywords joined by a space: when they
// are the query's words as it wrote them, one space apart ("gaming
// mouse"), that part of the query rather than a new string. The module
// joins them, as this code would cost it bytes.
func criterion(in *input, x *candExt, kw []string) string {
	if n := len(x.terms); len(x.occs) == 0 && n > 1 && x.terms[0] >= in.nTitle && x.terms[n-1] > x.terms[0] {
		if s := in.src[1][in.toks[x.terms[0]].start:in.toks[x.terms[n-1]].end]; joined(s, kw) {
			return s
		}
	}
	return joinStrings(kw, " ")
}

// joined reports whether s is the words of kw joined by a space.
func joined(s string, kw []string) bool {
	for i, k := range kw {
		if i > 0 {
			if s == "" || s[0] != ' ' {
				return false
			}
			s = s[1:]
		}
		if len(s) < len(k) || s[:len(k)] != k {
			return false
		}
		s = s[len(k):]
	}
	return s == ""
}
