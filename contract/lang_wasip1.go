package contract

// ParseLang reads lang: a two-letter code in either case (returned lower
// case), or UseLocale (returned as is). The module goes without the
// server's set of ISO 639-1 codes (lang_server.go): the page asks the
// server for the shard manifest of its lang before the module reads lang,
// so the server has refused one that names no language by then.
func ParseLang(s string) (string, string) {
	return parseCode(s, UseLocale, "lang must be a two-letter ISO 639-1 language code (de, en) or use_locale, not ")
}
