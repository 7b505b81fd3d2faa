package match

// The matcher sorts with one routine over uint64 keys instead of
// slices.SortFunc: each SortFunc instantiation adds code to the WebAssembly
// module, and a comparison through a closure is a slow indirect call there.
// A caller packs what it sorts by, and the index of the element when it
// needs a stable order, into the key.

// sortKeys sorts keys in increasing order and returns them; tmp is scratch
// of any length, grown as needed. Short inputs are insertion-sorted; long
// ones radix-sorted a byte at a time, skipping the bytes all keys share.
func sortKeys(keys []uint64, tmp *[]uint64) []uint64 {
	if len(keys) <= 32 {
		insertionSort(keys)
		return keys
	}
	var and, or uint64 = ^uint64(0), 0
	for _, k := range keys {
		and &= k
		or |= k
	}
	differ := and ^ or
	if cap(*tmp) < len(keys) {
		*tmp = make([]uint64, len(keys))
	}
	src, dst := keys, (*tmp)[:len(keys)]
	var count [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		if (differ>>shift)&0xff == 0 {
			continue
		}
		count = [256]int{}
		for _, k := range src {
			count[byte(k>>shift)]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, k := range src {
			b := byte(k >> shift)
			dst[count[b]] = k
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
	return keys
}

// insertionSort sorts a short list in place: sortKeys's short inputs and a
// query's token places, where it costs the module less code than
// slices.Sort.
func insertionSort[T uint64 | int](a []T) {
	for i := 1; i < len(a); i++ {
		v := a[i]
		j := i
		for ; j > 0 && a[j-1] > v; j-- {
			a[j] = a[j-1]
		}
		a[j] = v
	}
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
