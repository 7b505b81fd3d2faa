//go:build !wasip1

package match

import (
	"maps"
	"testing"
)

// TestDistinctTypes: reading each distinct category once gives the types
// reading every ad's gives.
func TestDistinctTypes(t *testing.T) {
	cats := []string{"Shoes > Running shoes", "Shoes > Running shoes", "", "Computers > Notebooks", "Shoes > Running shoes",
		"Lamps", "", "Computers > Notebooks", "Toys & Games", "Lamps", "Lamps > Lamp"}
	for n := range len(cats) + 1 {
		want := categoryTypes(n, func(i int) string { return cats[i] })
		got := distinctTypes(n, func(i int) string { return cats[i] })
		if !maps.Equal(got, want) {
			t.Errorf("%d categories: %v, want %v", n, got, want)
		}
	}
}
