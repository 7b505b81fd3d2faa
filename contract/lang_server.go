//go:build !wasip1

package contract

import "github.com/adlink/adlink/match"

// languages is the set of ISO 639-1 codes, and of those withdrawn that
// pages still write (iw, in, ji, jw, mo, sh, bh), as countries is;
// contract's tests check it against the readable lists.
const languages = "\x33\x34\x26\x47\xc7\x19\x10\x09\x64\x53\x04\x00\x88\x10\x68\x1c\x84\x0c\x09\x94\x80\x02\x43\x44\x90\xc6\x59\x65\x5c\x04\x04\x80\x11\xf4\x67\xd7\x50\x18\x0e\xc0\x6d\x0e\x6d\xa1\x89\x44\x20\x61\x40\x40\x02\x03\x00\x00\x10\x00\xc0\x41\xd1\xdd\xf7\x47\x74\x9b\x53\x40\x04\x02\x42\x04\x01\x10\x00\x04\x00\x20\x00\x00\x00\x41\x00\x04\x02\x40\x00"

// ParseLang reads lang: a two-letter ISO 639-1 code in either case
// (returned lower case), or UseLocale (returned as is). Two letters that
// name no language (ge, a slip for de) are refused, as loc refuses xx.
func ParseLang(s string) (string, string) {
	const msg = "lang must be a two-letter ISO 639-1 language code (de, en) or use_locale, not "
	v, m := parseCode(s, UseLocale, msg)
	if m == "" && v != UseLocale && !IsLanguage(v) {
		return "", msg + match.Quote(s)
	}
	return v, m
}

// IsLanguage reports whether s, two lower-case letters, is in languages.
func IsLanguage(s string) bool {
	if len(s) != 2 || s[0] < 'a' || s[0] > 'z' || s[1] < 'a' || s[1] > 'z' {
		return false
	}
	i := int(s[0]-'a')*26 + int(s[1]-'a')
	return languages[i>>3]&(1<<(i&7)) != 0
}
