package match

// synonymWeight scales a synonym's score below the word the query wrote.
const synonymWeight = 0.8

// synonymGroups are words shoppers use for the same product, across the
// languages of our markets. Full-text queries (ctx.dist=none) match each
// word of a group when the query has one of them.
var synonymGroups = [][]string{
	{"laptop", "notebook"},
	{"tv", "television", "fernseher"},
	{"handy", "smartphone", "mobiltelefon"},
	{"headphones", "headset", "earphones", "kopfhörer"},
	{"ps4", "playstation"},
	{"mouse", "maus"},
	{"battery", "akku", "batterie"},
	{"computer", "pc", "rechner"},
	{"monitor", "bildschirm"},
	{"printer", "drucker"},
	{"camera", "kamera"},
	{"fridge", "refrigerator", "kühlschrank"},
	{"fan", "cooler"},
	{"tablet", "tab"},
}

// synonyms maps a normalised term to its group's other terms. It is built
// at start, a few dozen words, rather than behind sync.OnceValue, which
// costs the module more code than the map costs time.
var synonyms = func() map[string][]string {
	m := map[string][]string{}
	for _, g := range synonymGroups {
		norm := make([]string, len(g))
		for i, w := range g {
			norm[i] = Normalize(w)
		}
		for i, w := range norm {
			for j, o := range norm {
				if i != j && o != w {
					m[w] = append(m[w], o)
				}
			}
		}
	}
	return m
}()

// withSynonyms returns term followed by its synonyms.
func withSynonyms(term string) []string {
	return append([]string{term}, synonyms[term]...)
}
