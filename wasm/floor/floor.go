// Package floor is work from Go's standard library that BenchmarkQuery
// runs both in wazero, compiled into a wasip1 module with the flags of
// matcher.wasm, and natively: the ratio Go's own code gets in that
// runtime, the baseline beside the matcher's. Each kernel does a fixed
// amount of work of the kinds a query does (sorting, escaping text into a
// quoted string, splitting and folding words and looking them up, a byte
// loop) and returns a number that depends on all of its output, so that
// the module and native can be checked to do the same work.
package floor

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
)

// Kernel is one piece of work, named by the standard library it runs.
type Kernel struct {
	Name string
	Run  func() int
}

// Kernels are the floor's work, in the order the benchmark prints them.
var Kernels = []Kernel{
	{"slices.Sort of 2,000 uint32", sortInts},
	{"strconv.AppendQuote of 3 KB", quote}, // escaping, as JSON strings need
	{"strings.Fields, ToLower and a map lookup per word", words},
	{"hash/fnv over 3 KB", hash},
}

// text is about 3 KB of German product prose, the matcher's usual input.
var text = strings.Repeat("Die neue Kamera von Sony macht schärfere Bilder als das alte Modell, sagt der Test: „sehr gut“. ", 32)

func sortInts() int {
	x := make([]uint32, 2000)
	s := uint32(1)
	for i := range x {
		s = s*1664525 + 1013904223
		x[i] = s
	}
	slices.Sort(x)
	n := 0
	for _, v := range x {
		n = n*31 + int(v)
	}
	return n
}

func quote() int {
	b := strconv.AppendQuote(nil, text)
	n := 0
	for _, c := range b {
		n = n*31 + int(c)
	}
	return n
}

// vocabulary maps the lower-cased words of text's first sentence to their
// position in it.
var vocabulary = func() map[string]int {
	m := map[string]int{}
	for i, w := range strings.Fields(text[:100]) {
		m[strings.ToLower(w)] = i + 1
	}
	return m
}()

func words() int {
	n := 0
	for _, w := range strings.Fields(text) {
		n = n*7 + vocabulary[strings.ToLower(w)]
	}
	return n
}

func hash() int {
	h := fnv.New32a()
	h.Write([]byte(text))
	return int(h.Sum32())
}

// Repeat runs kernel i n times and returns the sum of its results.
func Repeat(i, n int32) int {
	sum := 0
	for range n {
		sum += Kernels[i].Run()
	}
	return sum
}
